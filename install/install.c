/* kb_install_package / kb_resolve_package: version, index, best target, fetch, verify, install. */
#include "install/install.h"
#include "resolve/host.h"
#include "model/ref.h"
#include "kbpkg/registry.h"
#include "kbpkg/trust.h"
#include "trust/admission.h"
#include "registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Installed from this artifact, and its library still the one install checked (what the loader
 * would refuse is not "up to date": it is installed again). */
bool kbi_install_is_current(kb_cache *cache, const char *name, const char *version,
                            const char *target, const char *layer_digest)
{
    char *dir = kbi_cache_pkg_dir(cache, name, version, target);
    kb_installed p;
    bool same = false;
    if (dir && kbi_cache_read_install(&p, cache, dir) == 0) {
        same = p.artifact_digest && layer_digest && strcmp(p.artifact_digest, layer_digest) == 0;
        int fd = same ? kbi_cache_open_library(&p, cache->ctx) : -1;
        if (fd >= 0)
            close(fd);
        else if (same) {
            kbi_log(cache->ctx, KB_LOG_WARN, "%s: %s; installing it again", dir,
                    kb_ctx_last_error(cache->ctx)->message);
            same = false;
        }
        kbi_installed_clear(&p);
    }
    kb_ctx_clear_error(cache->ctx);
    free(dir);
    return same;
}

int kbi_install_entry(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                      const kb_pkg_index *idx, kb_pkg_entry *entry, const char *reason,
                      const char *expect_layer_digest)
{
    int rc = kbi_pkg_entry_resolve(entry, r, idx->name);
    if (rc)
        return rc;
    if (expect_layer_digest && strcmp(expect_layer_digest, entry->layer_digest) != 0)
        return kbi_error_set(
            ctx, KB_ERR_DIGEST, "%s@%s %s: the lockfile pins %s but the registry now serves %s",
            idx->name, idx->version, entry->target, expect_layer_digest, entry->layer_digest);
    res->artifact_digest = kbi_strdup(entry->layer_digest);
    res->dir = kbi_cache_pkg_dir(cache, idx->name, idx->version, entry->target);
    if (kbi_install_is_current(cache, idx->name, idx->version, entry->target,
                               entry->layer_digest)) {
        res->was_installed = true;
        return 0;
    }
    char *blob = NULL;
    /* Held from download to install: gc would otherwise see an unreferenced blob in between. */
    kb_lock hold = {-1};
    rc = kbi_cache_hold(cache, &hold);
    if (!rc)
        rc = kbi_install_fetch_layer(&blob, ctx, r, cache, idx->name, entry);
    if (!rc) {
        kb_lock lock;
        char *key = kbi_asprintf("%s@%s/%s", idx->name, idx->version, entry->target);
        rc = key ? kbi_cache_lock(cache, &lock, "install", key) : kbi_error_oom(ctx);
        if (!rc) {
            if (kbi_install_is_current(cache, idx->name, idx->version, entry->target,
                                       entry->layer_digest))
                res->was_installed = true;
            else {
                kb_install_info info = {
                    idx->name,      idx->version,        entry->target, entry->layer_digest,
                    idx->digest,    kbi_registry_ref(r), reason,        false,
                    &res->admission};
                rc = kbi_cache_install_artifact(NULL, cache, blob, &info);
            }
            kbi_lock_release(&lock);
        }
        free(key);
    }
    kbi_lock_release(&hold);
    free(blob);
    if (!rc && !res->was_installed)
        kbi_event_emit(ctx, KB_EVENT_INSTALLED, idx->name, "%s %s", idx->version, entry->target);
    return rc;
}

static int open_registry(kb_registry **r, kb_ctx *ctx, const kb_install_options *o)
{
    return kb_trust_registry_open(r, ctx, o->registry);
}

/* Offline with a remote registry: build from a source fetched earlier, no socket opened. */
static int run_offline(kb_install_result *res, kb_ctx *ctx, const kb_pkgref *ref,
                       const kb_host *host, const kb_install_options *o, bool install)
{
    kb_cache *cache = NULL;
    char *digest = NULL, *blob = NULL;
    char why[200] = "";
    int rc = kbi_cache_open(&cache, ctx);
    if (!rc)
        rc = kbi_sources_find(&res->version, &digest, cache, ref->name, ref->constraint_text);
    if (!rc && !o->allow_build)
        rc = kbi_error_set(ctx, KB_ERR_OFFLINE,
                           "offline and --no-build: %s@%s can only be built from source here",
                           ref->name, res->version);
    if (!rc) {
        res->name = kbi_strdup(ref->name);
        if (o->target)
            res->target = kbi_strdup(o->target);
        else if (kbi_local_build_target(&res->target, why, sizeof(why), ctx, host, NULL) != 0)
            rc = kbi_error_set(ctx, KB_ERR_TOOLCHAIN, "offline: cannot build %s@%s here: %s",
                               ref->name, res->version, why);
    }
    if (!rc) {
        kb_compat c = {KB_FIT_LOCAL_BUILD, KB_FIT_LOCAL_BUILD * 100, ""};
        snprintf(c.reason, sizeof(c.reason), "offline: build %s from the fetched source",
                 res->target);
        res->reason = kbi_strdup(c.reason);
        res->local_build = true;
        rc = kbi_resolve_candidate_push(res, res->target, &c, true) ? kbi_error_oom(ctx) : 0;
        if (!rc)
            res->candidates[0].taken = true;
        kbi_event_emit(ctx, KB_EVENT_TARGET_CHOSEN, res->name, "%s %s: %s", res->version,
                       res->target, res->reason);
    }
    if (!rc && install) {
        blob = kbi_cache_blob_path(cache, digest);
        rc = blob ? kbi_local_build_from_blob(res, ctx, cache, ref->name, res->version, blob,
                                              res->target, res->reason, NULL)
                  : kbi_error_oom(ctx);
    }
    free(blob);
    free(digest);
    kbi_cache_close(cache);
    return rc;
}

static int run(kb_install_result **out, kb_ctx *ctx, const char *ref_text,
               const kb_install_options *opts, bool install)
{
    kb_install_options defaults = KB_INSTALL_OPTIONS_INIT;
    const kb_install_options *o = opts ? opts : &defaults;
    *out = NULL;
    if (o->version != KB_INSTALL_OPTIONS_VERSION)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_install_options version %u, expected %u",
                             o->version, KB_INSTALL_OPTIONS_VERSION);
    kb_install_result *res = calloc(1, sizeof(*res));
    if (!res)
        return kbi_error_oom(ctx);
    kb_pkgref ref = {0};
    kb_registry *r = NULL;
    kb_cache *cache = NULL;
    kb_pkg_index *idx = NULL;
    const kb_probe_report *probe = NULL;
    int rc = kbi_pkgref_parse(ctx, &ref, ref_text);
    if (!rc)
        rc = kbi_host_get(&probe, ctx);
    if (!rc)
        rc = open_registry(&r, ctx, o);
    if (rc == KB_ERR_OFFLINE) {
        kb_ctx_clear_error(ctx);
        rc = run_offline(res, ctx, &ref, &probe->host, o, install);
        kbi_pkgref_clear(&ref);
        if (rc) {
            kb_install_result_free(res);
            return rc;
        }
        *out = res;
        return 0;
    }
    if (!rc)
        rc = kbi_pkg_pick_version(&res->version, r, ref.name, ref.constraint_text);
    if (!rc)
        rc = kbi_pkg_index_fetch(&idx, r, ref.name, res->version, NULL);
    /* The signature covers the index: check it before anything it names is downloaded. */
    if (!rc)
        rc = kbi_trust_admit(&res->admission, ctx, r, ref.name, res->version, idx->digest,
                             o->allow_unsigned);
    if (!rc) {
        res->name = kbi_strdup(ref.name);
        res->index_digest = kbi_strdup(idx->digest);
        rc = kbi_resolve_weigh(res, ctx, idx, &probe->host, o);
    }
    kb_candidate *best = NULL;
    if (!rc) {
        best = res->candidate_count && res->candidates[0].compat.fit != KB_FIT_NONE
                   ? &res->candidates[0]
                   : NULL;
        if (!best)
            rc = kbi_resolve_no_fit_error(ctx, res, &probe->host);
    }
    if (!rc) {
        best->taken = true;
        res->target = kbi_strdup(best->target);
        res->reason = kbi_strdup(best->compat.reason);
        res->local_build = best->local_build;
        kbi_event_emit(ctx, KB_EVENT_TARGET_CHOSEN, res->name, "%s %s: %s", res->version,
                       res->target, res->reason);
    }
    if (!rc && install)
        rc = kbi_cache_open(&cache, ctx);
    if (!rc && install && best->local_build) {
        kb_pkg_entry *source = (kb_pkg_entry *)kbi_pkg_index_find(idx, KB_SOURCE_TARGET);
        rc = kbi_local_build_install(res, ctx, r, cache, idx, source, res->target, res->reason);
    } else if (!rc && install) {
        kb_pkg_entry *entry = (kb_pkg_entry *)kbi_pkg_index_find(idx, res->target);
        rc = kbi_install_entry(res, ctx, r, cache, idx, entry, res->reason, NULL);
    }
    kbi_cache_close(cache);
    kbi_pkg_index_free(idx);
    kb_registry_free(r);
    kbi_pkgref_clear(&ref);
    if (rc) {
        kb_install_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

KB_EXTERN int kb_install_package(kb_install_result **out, kb_ctx *ctx, const char *ref,
                                 const kb_install_options *opts)
{
    if (!out || !ctx || !ref)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_install_package: NULL argument");
    return run(out, ctx, ref, opts, !(opts && opts->resolve_only));
}

KB_EXTERN int kb_resolve_package(kb_install_result **out, kb_ctx *ctx, const char *ref,
                                 const kb_install_options *opts)
{
    if (!out || !ctx || !ref)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_resolve_package: NULL argument");
    return run(out, ctx, ref, opts, false);
}

KB_EXTERN void kb_install_result_free(kb_install_result *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->candidate_count; i++)
        free(r->candidates[i].target);
    free(r->candidates);
    free(r->name);
    free(r->version);
    free(r->target);
    free(r->reason);
    free(r->dir);
    free(r->index_digest);
    free(r->artifact_digest);
    kbi_trust_admission_clear(&r->admission);
    free(r);
}

#define RESULT_GETTER(field)                                                                       \
    KB_EXTERN const char *kb_install_result_##field(const kb_install_result *r)                    \
    {                                                                                              \
        return r ? r->field : NULL;                                                                \
    }
RESULT_GETTER(name)
RESULT_GETTER(version)
RESULT_GETTER(target)
RESULT_GETTER(reason)
RESULT_GETTER(dir)
RESULT_GETTER(index_digest)
RESULT_GETTER(artifact_digest)

KB_EXTERN int kb_install_result_local_build(const kb_install_result *r)
{
    return r && r->local_build;
}

KB_EXTERN int kb_install_result_was_installed(const kb_install_result *r)
{
    return r && r->was_installed;
}

KB_EXTERN size_t kb_install_result_candidate_count(const kb_install_result *r)
{
    return r ? r->candidate_count : 0;
}

KB_EXTERN int kb_install_result_candidate(const char **target, int *taken, const char **rank,
                                          const char **reason, const kb_install_result *r,
                                          size_t index)
{
    if (!r || index >= r->candidate_count)
        return KB_ERR_NOT_FOUND;
    const kb_candidate *c = &r->candidates[index];
    if (target)
        *target = c->target;
    if (taken)
        *taken = c->taken;
    if (rank)
        *rank = c->local_build && c->compat.fit != KB_FIT_NONE ? "local-build"
                                                               : kbi_fit_name(c->compat.fit);
    if (reason)
        *reason = c->compat.reason;
    return 0;
}
