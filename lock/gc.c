/* kb_cache_collect_garbage: drop blobs that no install, lockfile pin or fetched source needs. */
#include "cache/store.h"
#include "lock/lockfile.h"
#include "kbpkg/cache.h"

#include <stdlib.h>
#include <string.h>

/* Append what the lockfile at path pins to keep. A path from the gc.keep_locks setting may be
 * missing (a project without a lockfile); one the caller named must exist. */
static int keep_lock_pins(kb_strv *keep, kb_ctx *ctx, const char *path, bool from_setting)
{
    if (from_setting && !kbi_path_exists(path)) {
        kbi_log(ctx, KB_LOG_DEBUG, "gc: no lockfile %s (gc.keep_locks), nothing pinned from it",
                path);
        return 0;
    }
    kb_lockfile *lock = NULL;
    int rc = kb_lockfile_load(&lock, ctx, path);
    if (rc) {
        kbi_error_prefix(ctx, "gc keeps what %s pins, and cannot read it (nothing removed)", path);
        return rc;
    }
    kb_strv pins = KB_STRV_INIT;
    rc = kbi_lockfile_pinned_blobs(&pins, lock) ? kbi_error_oom(ctx) : 0;
    for (size_t i = 0; !rc && i < pins.len; i++)
        if (!kbi_strv_contains(keep, pins.items[i]) && kbi_strv_push(keep, pins.items[i]))
            rc = kbi_error_oom(ctx);
    if (!rc)
        kbi_log(ctx, KB_LOG_INFO, "gc: keeping the %zu blob%s %s pins", pins.len,
                pins.len == 1 ? "" : "s", path);
    kbi_strv_free(&pins);
    kb_lockfile_free(lock);
    return rc;
}

/* Every lockfile of the gc.keep_locks setting (comma-separated; blanks around names ignored). */
static int keep_configured_locks(kb_strv *keep, kb_ctx *ctx)
{
    const char *list = kbi_config_str(ctx, "gc.keep_locks");
    int rc = 0;
    for (const char *p = list; !rc && *p;) {
        size_t len = strcspn(p, ",");
        const char *start = p, *end = p + len;
        while (start < end && (*start == ' ' || *start == '\t'))
            start++;
        while (end > start && (end[-1] == ' ' || end[-1] == '\t'))
            end--;
        if (end > start) {
            char *path = kbi_strndup(start, (size_t)(end - start));
            rc = path ? keep_lock_pins(keep, ctx, path, true) : kbi_error_oom(ctx);
            free(path);
        }
        p += len + (p[len] == ',');
    }
    return rc;
}

KB_EXTERN int kb_cache_collect_garbage(size_t *removed, uint64_t *bytes_freed, kb_ctx *ctx,
                                       const kb_gc_options *options)
{
    if (!removed || !bytes_freed || !ctx)
        return KB_ERR_INVALID;
    *removed = 0;
    *bytes_freed = 0;
    kb_gc_options defaults = KB_GC_OPTIONS_INIT;
    const kb_gc_options *o = options ? options : &defaults;
    if (o->version != KB_GC_OPTIONS_VERSION)
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "kb_cache_collect_garbage: options version %u, "
                             "expected %u",
                             o->version, KB_GC_OPTIONS_VERSION);
    if (o->keep_lock_count && !o->keep_locks)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_cache_collect_garbage: no keep_locks");
    /* Every lockfile is read before anything is removed: a bad one stops gc untouched. */
    kb_strv keep = KB_STRV_INIT;
    int rc = keep_configured_locks(&keep, ctx);
    for (size_t i = 0; !rc && i < o->keep_lock_count; i++)
        rc = keep_lock_pins(&keep, ctx, o->keep_locks[i], false);
    kb_cache *cache = NULL;
    if (!rc)
        rc = kbi_cache_open(&cache, ctx);
    if (!rc)
        rc = kbi_cache_kept_blobs(&keep, cache);
    if (!rc)
        rc = kbi_cache_gc(removed, bytes_freed, cache, &keep);
    kbi_strv_free(&keep);
    kbi_cache_close(cache);
    return rc;
}
