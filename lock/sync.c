/* kb_sync: install exactly what a lockfile pins, choosing among the pinned targets for this host.
 */
#include "resolve/host.h"
#include "install/install.h"
#include "lock/lockfile.h"
#include "kbpkg/registry.h"
#include "kbpkg/trust.h"
#include "trust/admission.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kb_sync_report {
    kb_report_rows rows;
};

static int row_add(kb_sync_report *r, const kb_lock_package *p, const kb_lock_pin *pin,
                   kb_status status, const char *dir)
{
    kb_report_row row = {.package = p->name,
                         .version = p->version,
                         .target = pin->target,
                         .status = status,
                         .digest = pin->layer_digest,
                         .dir = dir};
    return kbi_report_rows_add(&r->rows, &row);
}

/* The best pinned target for this host, by the resolver's compatibility rules. */
static int choose_pin(const kb_lock_pin **out, kb_compat *why, kb_ctx *ctx,
                      const kb_lock_package *p, const kb_host *host)
{
    kb_compat_opts copts;
    kbi_host_compat_opts(&copts, ctx);
    *out = NULL;
    kb_buf refused = KB_BUF_INIT;
    for (size_t i = 0; i < p->count; i++) {
        const kb_lock_pin *pin = &p->pins[i];
        kb_target t;
        kb_compat c = {0};
        if (strcmp(pin->target, KB_SOURCE_TARGET) == 0)
            continue;
        if (kbi_target_parse(NULL, &t, pin->target) != 0)
            snprintf(c.reason, sizeof(c.reason), "unknown target id");
        else
            kbi_compat_check_host(&c, &t, host, &copts);
        if (c.fit != KB_FIT_NONE &&
            (!*out || kbi_target_rank_cmp(pin->target, &c, (*out)->target, why) < 0)) {
            *out = pin;
            *why = c;
        }
        kbi_buf_printf(&refused, "\n  %s: %s", pin->target, c.reason);
    }
    int rc = 0;
    if (!*out)
        rc = kbi_error_set(ctx, KB_ERR_INCOMPATIBLE,
                           "%s@%s: no target pinned in the lockfile fits this machine:%s", p->name,
                           p->version, refused.data ? refused.data : " none pinned");
    kbi_buf_free(&refused);
    return rc;
}

static bool pin_installed(kb_cache *cache, const kb_lock_package *p, const kb_lock_pin *pin,
                          char **dir_out)
{
    *dir_out = kbi_cache_pkg_dir(cache, p->name, p->version, pin->target);
    return kbi_install_is_current(cache, p->name, p->version, pin->target, pin->layer_digest);
}

/* The pinned index by digest. A registry that lost it (garbage-collected after a forced
 * republish) gets one more chance through the tag: the layer pin still decides what installs. */
static int fetch_pinned_index(kb_pkg_index **idx, kb_ctx *ctx, kb_registry *r,
                              const kb_lock_package *p)
{
    int rc = kbi_pkg_index_fetch(idx, r, p->name, p->version, p->index_digest);
    if (rc != KB_ERR_NOT_FOUND)
        return rc;
    kbi_event_emit(ctx, KB_EVENT_WARNING, p->name,
                   "%s: the registry no longer has the pinned index %s; checking the pinned "
                   "digests against its current index",
                   p->version, p->index_digest);
    kb_ctx_clear_error(ctx);
    return kbi_pkg_index_fetch(idx, r, p->name, p->version, NULL);
}

static int install_pin(kb_ctx *ctx, kb_registry *r, kb_cache *cache, const kb_lock_package *p,
                       const kb_lock_pin *pin, const char *reason, bool allow_unsigned)
{
    kb_pkg_index *idx = NULL;
    kb_install_result res = {0};
    int rc = fetch_pinned_index(&idx, ctx, r, p);
    /* A pinned digest says which bytes, not who made them: the signature policy still holds. */
    if (!rc)
        rc = kbi_trust_admit(&res.admission, ctx, r, p->name, p->version, idx->digest,
                             allow_unsigned);
    kb_pkg_entry *e = rc ? NULL : (kb_pkg_entry *)kbi_pkg_index_find(idx, pin->target);
    if (!rc && !e)
        rc = kbi_error_set(ctx, KB_ERR_DIGEST,
                           "%s@%s %s: the lockfile pins %s but the registry's index %s has no "
                           "such target",
                           p->name, p->version, pin->target, pin->layer_digest, idx->digest);
    if (!rc) {
        rc = kbi_install_entry(&res, ctx, r, cache, idx, e, reason, pin->layer_digest);
        if (rc == KB_ERR_DIGEST && !kbi_str_starts(kb_ctx_last_error(ctx)->message, p->name))
            kbi_error_prefix(ctx, "%s@%s %s (pinned %s)", p->name, p->version, pin->target,
                             pin->layer_digest);
    }
    free(res.artifact_digest);
    free(res.dir);
    kbi_trust_admission_clear(&res.admission);
    kbi_pkg_index_free(idx);
    return rc;
}

/* Open the lockfile's registry once, on the first package that needs it. */
static int need_registry(kb_registry **r, kb_ctx *ctx, const char *ref, const kb_lock_package *p,
                         const kb_lock_pin *pin)
{
    if (*r)
        return 0;
    int rc = kb_trust_registry_open(r, ctx, ref);
    if (rc == KB_ERR_OFFLINE)
        rc = kbi_error_set(ctx, KB_ERR_OFFLINE,
                           "offline: %s@%s %s (%s) is not installed and %s is not reachable "
                           "offline; run kbpkg sync once online",
                           p->name, p->version, pin->target, pin->layer_digest, ref);
    return rc;
}

static int sync_one(kb_ctx *ctx, kb_sync_report *rep, kb_registry **r, kb_cache *cache,
                    const kb_sync_options *o, const char *ref, const kb_lock_package *p,
                    const kb_host *host)
{
    const kb_lock_pin *pin = NULL;
    kb_compat why = {0};
    char *dir = NULL;
    int rc = choose_pin(&pin, &why, ctx, p, host);
    if (!rc && pin_installed(cache, p, pin, &dir)) {
        /* The pinned bytes are there: nothing to ask the registry, so this works offline. */
        rc = row_add(rep, p, pin, KB_STATUS_ALREADY_INSTALLED, dir) ? kbi_error_oom(ctx) : 0;
        free(dir);
        return rc;
    }
    char *reason = rc ? NULL : kbi_asprintf("pinned by the lockfile: %s", why.reason);
    if (!rc && !reason)
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = need_registry(r, ctx, ref, p, pin);
    if (!rc)
        rc = install_pin(ctx, *r, cache, p, pin, reason, o->allow_unsigned != 0);
    if (!rc)
        rc = row_add(rep, p, pin, KB_STATUS_INSTALLED, dir) ? kbi_error_oom(ctx) : 0;
    free(reason);
    free(dir);
    return rc;
}

KB_EXTERN int kb_sync(kb_sync_report **out, kb_ctx *ctx, const kb_lockfile *lock,
                      const kb_sync_options *options)
{
    kb_sync_options defaults = KB_SYNC_OPTIONS_INIT;
    const kb_sync_options *o = options ? options : &defaults;
    *out = NULL;
    if (o->version != KB_SYNC_OPTIONS_VERSION)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_sync: options version %u, expected %u",
                             o->version, KB_SYNC_OPTIONS_VERSION);
    if (!lock)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_sync: no lockfile");
    const char *ref = o->registry ? o->registry : lock->registry;
    const kb_probe_report *probe = NULL;
    kb_cache *cache = NULL;
    kb_registry *r = NULL;
    kb_sync_report *rep = calloc(1, sizeof(*rep));
    int rc = rep ? kbi_host_get(&probe, ctx) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_cache_open(&cache, ctx);
    for (size_t i = 0; !rc && i < lock->count; i++)
        rc = sync_one(ctx, rep, &r, cache, o, ref, &lock->packages[i], &probe->host);
    kb_registry_free(r);
    kbi_cache_close(cache);
    if (rc) {
        kb_sync_report_free(rep);
        return rc;
    }
    *out = rep;
    return 0;
}

KB_EXTERN void kb_sync_report_free(kb_sync_report *r)
{
    if (!r)
        return;
    kbi_report_rows_free(&r->rows);
    free(r);
}

KB_EXTERN size_t kb_sync_report_count(const kb_sync_report *r)
{
    return r ? r->rows.len : 0;
}

KB_EXTERN int kb_sync_report_row(const kb_report_row **row, const kb_sync_report *r, size_t index)
{
    return kbi_report_rows_get(row, r ? &r->rows : NULL, index);
}
