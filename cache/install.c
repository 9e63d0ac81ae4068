/* kb_install_package / kb_resolve_package: version, index, best target, fetch, verify, install. */
#include "cache/install.h"
#include "cache/host.h"
#include "cache/ref.h"
#include "kbpkg/registry.h"
#include "kbpkg/trust.h"
#include "registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *kb_fit_name(kb_fit fit)
{
    switch (fit) {
    case KB_FIT_EXACT:
        return "exact";
    case KB_FIT_FAMILY:
        return "family";
    case KB_FIT_GENERIC:
        return "generic";
    case KB_FIT_ALIAS:
        return "alias";
    case KB_FIT_PTX:
        return "ptx-jit";
    case KB_FIT_LOCAL_BUILD:
        return "local-build";
    case KB_FIT_CPU:
        return "cpu";
    default:
        return "refused";
    }
}

static int candidates_push(kb_install_result *res, const char *target, const kb_compat *c,
                           bool local_build)
{
    kb_candidate *n =
        realloc(res->candidates, (res->candidate_count + 1) * sizeof(*res->candidates));
    if (!n)
        return KB_ERR_NOMEM;
    res->candidates = n;
    kb_candidate *slot = &n[res->candidate_count++];
    memset(slot, 0, sizeof(*slot));
    slot->target = kb_strdup(target);
    slot->compat = *c;
    slot->local_build = local_build;
    return slot->target ? 0 : KB_ERR_NOMEM;
}

static int cmp_candidates(const void *a, const void *b)
{
    const kb_candidate *x = a, *y = b;
    if (x->compat.score != y->compat.score)
        return y->compat.score > x->compat.score ? 1 : -1;
    return strcmp(x->target, y->target);
}

/* Weigh every artifact of the index, plus a local build when a source exists. */
static int weigh_candidates(kb_install_result *res, kb_ctx *ctx, const kb_pkg_index *idx,
                            const kb_host *host, const kb_install_opts *o)
{
    kb_compat_opts copts;
    kb_host_compat_opts(&copts, ctx);
    const kb_pkg_entry *source = NULL;
    for (size_t i = 0; i < idx->count; i++) {
        const kb_pkg_entry *e = &idx->entries[i];
        if (e->is_source) {
            source = e;
            continue;
        }
        kb_compat c = {0};
        kb_target t;
        if (kb_target_parse(NULL, &t, e->target) != 0)
            snprintf(c.reason, sizeof(c.reason), "unknown target id '%s'", e->target);
        else if (o->target && strcmp(o->target, e->target) != 0)
            snprintf(c.reason, sizeof(c.reason), "not the requested target %s", o->target);
        else if (o->target) {
            c.fit = KB_FIT_EXACT;
            c.score = KB_FIT_EXACT * 100;
            snprintf(c.reason, sizeof(c.reason), "requested with --target");
        } else
            kb_compat_check_host(&c, &t, host, &copts);
        if (candidates_push(res, e->target, &c, false))
            return kb_error_oom(ctx);
    }
    int best_score = 0;
    for (size_t i = 0; i < res->candidate_count; i++)
        if (res->candidates[i].compat.score > best_score)
            best_score = res->candidates[i].compat.score;
    if (source && !o->target) {
        kb_compat c = {0};
        char *target = NULL;
        char why[200] = "";
        /* Not weighed further when a build cannot win: discovering toolchains runs nvcc --version,
         * hipcc (perl), rocm_agent_enumerator (python) ..., about 0.3-0.4 s, which was half of a
         * cold install of a 50 MiB CPU artifact (docs/perf.md). */
        if (best_score > KB_FIT_LOCAL_BUILD * 100)
            snprintf(c.reason, sizeof(c.reason), "not needed: a prebuilt artifact fits");
        else if (host->device_count == 0 && best_score >= KB_FIT_CPU * 100)
            /* With no GPU a local build is a CPU build, ranked under any fitting CPU artifact. */
            snprintf(c.reason, sizeof(c.reason),
                     "not needed: a CPU artifact fits and there is no GPU to build for");
        else if (!o->allow_build || !kb_config_bool(ctx, "build.allow"))
            snprintf(c.reason, sizeof(c.reason), "building from source is turned off");
        else if (kb_local_build_target(&target, why, sizeof(why), ctx, host) != 0)
            snprintf(c.reason, sizeof(c.reason), "cannot build here: %s", why);
        else {
            kb_target t;
            kb_target_parse(NULL, &t, target);
            c.fit = t.backend == KB_BACKEND_CPU ? KB_FIT_CPU : KB_FIT_LOCAL_BUILD;
            /* A CPU build from source still ranks under a CPU artifact. */
            c.score = c.fit * 100 - (t.backend == KB_BACKEND_CPU ? 50 : 0);
            snprintf(c.reason, sizeof(c.reason), "build %s from source on this machine", target);
        }
        int rc = candidates_push(res, target ? target : "source", &c, true);
        free(target);
        if (rc)
            return kb_error_oom(ctx);
    }
    if (res->candidate_count > 1)
        qsort(res->candidates, res->candidate_count, sizeof(*res->candidates), cmp_candidates);
    return 0;
}

static int no_fit_error(kb_ctx *ctx, const kb_install_result *res, const kb_host *host)
{
    kb_buf b = KB_BUF_INIT;
    kb_buf_printf(&b, "nothing in %s@%s fits this machine (", res->name, res->version);
    if (host->device_count == 0)
        kb_buf_printf(&b, "no GPU, CPU %s", host->cpu_level);
    for (size_t i = 0; i < host->device_count; i++)
        kb_buf_printf(&b, "%s%s", i ? ", " : "", host->devices[i].arch);
    kb_buf_puts(&b, "); the registry has:");
    for (size_t i = 0; i < res->candidate_count; i++)
        kb_buf_printf(&b, "\n  %s: %s", res->candidates[i].target,
                      res->candidates[i].compat.reason);
    if (res->candidate_count == 0)
        kb_buf_puts(&b, " no artifacts");
    int rc = kb_error_set(ctx, KB_ERR_INCOMPATIBLE, "%s", b.data ? b.data : "no fit");
    kb_buf_free(&b);
    return rc;
}

/* A process killed after the last byte but before the rename leaves a .part as long as the
 * blob: resuming it would ask for a Range past the end (416). Check it here instead: adopt it
 * when its digest matches, else drop it. Returns true when the blob is now in place. */
static bool settle_full_part(kb_ctx *ctx, const char *part, const char *path, const kb_pkg_entry *e)
{
    struct stat st;
    if (!e->layer_size || stat(part, &st) != 0 || (uint64_t)st.st_size < e->layer_size)
        return false;
    char hex[65];
    const char *want = kb_digest_hex(e->layer_digest);
    bool whole = (uint64_t)st.st_size == e->layer_size &&
                 kb_sha256_file(NULL, part, hex, NULL) == 0 && want && strcmp(hex, want) == 0;
    if (whole && rename(part, path) == 0) {
        char *dir = kb_path_join(path, "..");
        if (dir)
            kb_fsync_dir(dir);
        free(dir);
        return true;
    }
    kb_log(ctx, KB_LOG_WARN, "discarded %s: a partial download that does not match %s", part,
           e->layer_digest);
    unlink(part);
    return false;
}

/* A .part left by a killed or cut download is resumed by the registry client, which also
 * fetches the whole blob again when a resumed one fails its digest. */
static int fetch_blob(kb_ctx *ctx, kb_registry *r, const char *name, const kb_pkg_entry *e,
                      const char *path)
{
    char *part = kb_asprintf("%s.part", path);
    if (!part)
        return kb_error_oom(ctx);
    bool settled = settle_full_part(ctx, part, path, e);
    free(part);
    if (settled)
        return 0;
    kb_event_emit(ctx, KB_EVENT_DOWNLOAD, name, "%s %s (%llu bytes)", e->target, e->layer_digest,
                  (unsigned long long)e->layer_size);
    kb_cache_test_pause("download");
    return kb_registry_blob_get_file_for(r, name, e->layer_digest, path, e->layer_size, e->target);
}

int kb_install_fetch_layer(char **path_out, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                           const char *name, kb_pkg_entry *e)
{
    *path_out = NULL;
    int rc = kb_pkg_entry_resolve(e, r, name);
    if (rc)
        return rc;
    *path_out = kb_cache_blob_path(cache, e->layer_digest);
    if (!*path_out)
        return kb_error_oom(ctx);
    kb_lock hold = {-1}, lock = {-1};
    rc = kb_cache_hold(cache, &hold);
    if (!rc)
        rc = kb_cache_lock(cache, &lock, "blob", e->layer_digest);
    /* Another process may have fetched it while we waited for the lock. Blobs only ever appear
     * under their name after their digest was verified, so presence is enough. */
    if (!rc && !kb_path_exists(*path_out))
        rc = fetch_blob(ctx, r, name, e, *path_out);
    kb_lock_release(&lock);
    kb_lock_release(&hold);
    return rc;
}

static bool already_installed(kb_cache *cache, const char *name, const char *version,
                              const char *target, const char *layer_digest)
{
    char *dir = kb_cache_pkg_dir(cache, name, version, target);
    kb_installed p;
    bool same = false;
    if (dir && kb_cache_read_install(&p, cache, dir) == 0) {
        same = p.artifact_digest && layer_digest && strcmp(p.artifact_digest, layer_digest) == 0;
        kb_installed_clear(&p);
    }
    kb_ctx_clear_error(cache->ctx);
    free(dir);
    return same;
}

int kb_install_entry(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                     const kb_pkg_index *idx, kb_pkg_entry *entry, const char *reason,
                     const char *expect_layer_digest)
{
    int rc = kb_pkg_entry_resolve(entry, r, idx->name);
    if (rc)
        return rc;
    if (expect_layer_digest && strcmp(expect_layer_digest, entry->layer_digest) != 0)
        return kb_error_set(
            ctx, KB_ERR_DIGEST, "%s@%s %s: the lockfile pins %s but the registry now serves %s",
            idx->name, idx->version, entry->target, expect_layer_digest, entry->layer_digest);
    res->artifact_digest = kb_strdup(entry->layer_digest);
    res->dir = kb_cache_pkg_dir(cache, idx->name, idx->version, entry->target);
    if (already_installed(cache, idx->name, idx->version, entry->target, entry->layer_digest)) {
        res->was_installed = true;
        return 0;
    }
    char *blob = NULL;
    /* Held from download to install: gc would otherwise see an unreferenced blob in between. */
    kb_lock hold = {-1};
    rc = kb_cache_hold(cache, &hold);
    if (!rc)
        rc = kb_install_fetch_layer(&blob, ctx, r, cache, idx->name, entry);
    if (!rc) {
        kb_lock lock;
        char *key = kb_asprintf("%s@%s/%s", idx->name, idx->version, entry->target);
        rc = key ? kb_cache_lock(cache, &lock, "install", key) : kb_error_oom(ctx);
        if (!rc) {
            if (already_installed(cache, idx->name, idx->version, entry->target,
                                  entry->layer_digest))
                res->was_installed = true;
            else {
                kb_install_info info = {
                    idx->name,   idx->version,        entry->target, entry->layer_digest,
                    idx->digest, kb_registry_base(r), reason,        false};
                rc = kb_cache_install_artifact(NULL, cache, blob, &info);
            }
            kb_lock_release(&lock);
        }
        free(key);
    }
    kb_lock_release(&hold);
    free(blob);
    if (!rc && !res->was_installed)
        kb_event_emit(ctx, KB_EVENT_INSTALLED, idx->name, "%s %s", idx->version, entry->target);
    return rc;
}

static int open_registry(kb_registry **r, kb_ctx *ctx, const kb_install_opts *o)
{
    return kb_trust_registry_open(r, ctx, o->registry);
}

/* Offline with a remote registry: build from a source fetched earlier, no socket opened. */
static int run_offline(kb_install_result *res, kb_ctx *ctx, const kb_pkgref *ref,
                       const kb_host *host, const kb_install_opts *o, bool install)
{
    kb_cache *cache = NULL;
    char *digest = NULL, *blob = NULL;
    char why[200] = "";
    int rc = kb_cache_open(&cache, ctx);
    if (!rc)
        rc = kb_sources_find(&res->version, &digest, cache, ref->name, ref->constraint_text);
    if (!rc && !o->allow_build)
        rc = kb_error_set(ctx, KB_ERR_OFFLINE,
                          "offline and --no-build: %s@%s can only be built from source here",
                          ref->name, res->version);
    if (!rc) {
        res->name = kb_strdup(ref->name);
        if (o->target)
            res->target = kb_strdup(o->target);
        else if (kb_local_build_target(&res->target, why, sizeof(why), ctx, host) != 0)
            rc = kb_error_set(ctx, KB_ERR_TOOLCHAIN, "offline: cannot build %s@%s here: %s",
                              ref->name, res->version, why);
    }
    if (!rc) {
        kb_compat c = {KB_FIT_LOCAL_BUILD, KB_FIT_LOCAL_BUILD * 100, ""};
        snprintf(c.reason, sizeof(c.reason), "offline: build %s from the fetched source",
                 res->target);
        res->reason = kb_strdup(c.reason);
        res->local_build = true;
        rc = candidates_push(res, res->target, &c, true) ? kb_error_oom(ctx) : 0;
        if (!rc)
            res->candidates[0].taken = true;
        kb_event_emit(ctx, KB_EVENT_TARGET_CHOSEN, res->name, "%s %s: %s", res->version,
                      res->target, res->reason);
    }
    if (!rc && install) {
        blob = kb_cache_blob_path(cache, digest);
        rc = blob ? kb_local_build_from_blob(res, ctx, cache, ref->name, res->version, blob,
                                             res->target, res->reason, NULL)
                  : kb_error_oom(ctx);
    }
    free(blob);
    free(digest);
    kb_cache_close(cache);
    return rc;
}

static int run(kb_install_result **out, kb_ctx *ctx, const char *ref_text,
               const kb_install_opts *opts, bool install)
{
    kb_install_opts defaults = KB_INSTALL_OPTS_INIT;
    const kb_install_opts *o = opts ? opts : &defaults;
    *out = NULL;
    if (o->version != KB_INSTALL_OPTS_VERSION)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_install_opts version %u, expected %u",
                            o->version, KB_INSTALL_OPTS_VERSION);
    kb_install_result *res = calloc(1, sizeof(*res));
    if (!res)
        return kb_error_oom(ctx);
    kb_pkgref ref = {0};
    kb_registry *r = NULL;
    kb_cache *cache = NULL;
    kb_pkg_index *idx = NULL;
    const kb_probe_report *probe = NULL;
    int rc = kb_pkgref_parse(ctx, &ref, ref_text);
    if (!rc)
        rc = kb_host_get(&probe, ctx);
    if (!rc)
        rc = open_registry(&r, ctx, o);
    if (rc == KB_ERR_OFFLINE) {
        kb_ctx_clear_error(ctx);
        rc = run_offline(res, ctx, &ref, &probe->host, o, install);
        kb_pkgref_clear(&ref);
        if (rc) {
            kb_install_result_free(res);
            return rc;
        }
        *out = res;
        return 0;
    }
    if (!rc)
        rc = kb_pkg_pick_version(&res->version, r, ref.name, ref.constraint_text);
    if (!rc)
        rc = kb_pkg_index_fetch(&idx, r, ref.name, res->version, NULL);
    /* The signature covers the index: check it before anything it names is downloaded. */
    if (!rc)
        rc = kb_trust_check(ctx, r, ref.name, res->version, idx->digest, o->allow_unsigned);
    if (!rc) {
        res->name = kb_strdup(ref.name);
        res->index_digest = kb_strdup(idx->digest);
        rc = weigh_candidates(res, ctx, idx, &probe->host, o);
    }
    kb_candidate *best = NULL;
    if (!rc) {
        best = res->candidate_count && res->candidates[0].compat.fit != KB_FIT_NONE
                   ? &res->candidates[0]
                   : NULL;
        if (!best)
            rc = no_fit_error(ctx, res, &probe->host);
    }
    if (!rc) {
        best->taken = true;
        res->target = kb_strdup(best->target);
        res->reason = kb_strdup(best->compat.reason);
        res->local_build = best->local_build;
        kb_event_emit(ctx, KB_EVENT_TARGET_CHOSEN, res->name, "%s %s: %s", res->version,
                      res->target, res->reason);
    }
    if (!rc && install)
        rc = kb_cache_open(&cache, ctx);
    if (!rc && install && best->local_build) {
        kb_pkg_entry *source = (kb_pkg_entry *)kb_pkg_index_find(idx, KB_SOURCE_TARGET);
        rc = kb_local_build_install(res, ctx, r, cache, idx, source, res->target, res->reason);
    } else if (!rc && install) {
        kb_pkg_entry *entry = (kb_pkg_entry *)kb_pkg_index_find(idx, res->target);
        rc = kb_install_entry(res, ctx, r, cache, idx, entry, res->reason, NULL);
    }
    kb_cache_close(cache);
    kb_pkg_index_free(idx);
    kb_registry_free(r);
    kb_pkgref_clear(&ref);
    if (rc) {
        kb_install_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

KB_EXTERN int kb_install_package(kb_install_result **out, kb_ctx *ctx, const char *ref,
                                 const kb_install_opts *opts)
{
    if (!out || !ctx || !ref)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_install_package: NULL argument");
    return run(out, ctx, ref, opts, !(opts && opts->resolve_only));
}

KB_EXTERN int kb_resolve_package(kb_install_result **out, kb_ctx *ctx, const char *ref,
                                 const kb_install_opts *opts)
{
    if (!out || !ctx || !ref)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_resolve_package: NULL argument");
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
                                                               : kb_fit_name(c->compat.fit);
    if (reason)
        *reason = c->compat.reason;
    return 0;
}
