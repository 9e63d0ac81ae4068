/* Fetching blobs into the cache: a layer (verified while streaming, locked per digest) and
 * `kbpkg fetch --source`. */
#include "install/install.h"
#include "resolve/host.h"
#include "model/ref.h"
#include "kbpkg/registry.h"
#include "kbpkg/trust.h"
#include "registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A process killed after the last byte but before the rename leaves a .part as long as the
 * blob: resuming it would ask for a Range past the end (416). Check it here instead: adopt it
 * when its digest matches, else drop it. Returns true when the blob is now in place. */
static bool settle_full_part(kb_ctx *ctx, const char *part, const char *path, const kb_pkg_entry *e)
{
    struct stat st;
    if (!e->layer_size || stat(part, &st) != 0 || (uint64_t)st.st_size < e->layer_size)
        return false;
    char hex[65];
    const char *want = kbi_digest_hex(e->layer_digest);
    bool whole = (uint64_t)st.st_size == e->layer_size &&
                 kbi_sha256_file(NULL, part, hex, NULL) == 0 && want && strcmp(hex, want) == 0;
    if (whole && rename(part, path) == 0) {
        char *dir = kbi_path_join(path, "..");
        if (dir)
            kbi_fsync_dir(dir);
        free(dir);
        return true;
    }
    kbi_log(ctx, KB_LOG_WARN, "discarded %s: a partial download that does not match %s", part,
            e->layer_digest);
    unlink(part);
    return false;
}

/* A .part left by a killed or cut download is resumed by the registry client, which also
 * fetches the whole blob again when a resumed one fails its digest. */
static int fetch_blob(kb_ctx *ctx, kb_registry *r, const char *name, const kb_pkg_entry *e,
                      const char *path)
{
    char *part = kbi_asprintf("%s.part", path);
    if (!part)
        return kbi_error_oom(ctx);
    bool settled = settle_full_part(ctx, part, path, e);
    free(part);
    if (settled)
        return 0;
    kbi_event_emit(ctx, KB_EVENT_DOWNLOAD, name, "%s %s (%llu bytes)", e->target, e->layer_digest,
                   (unsigned long long)e->layer_size);
    kbi_cache_test_pause("download");
    return kbi_registry_blob_get_file_for(r, name, e->layer_digest, path, e->layer_size, e->target);
}

int kbi_install_fetch_layer(char **path_out, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                            const char *name, kb_pkg_entry *e)
{
    *path_out = NULL;
    int rc = kbi_pkg_entry_resolve(e, r, name);
    if (rc)
        return rc;
    *path_out = kbi_cache_blob_path(cache, e->layer_digest);
    if (!*path_out)
        return kbi_error_oom(ctx);
    kb_lock hold = {-1}, lock = {-1};
    rc = kbi_cache_hold(cache, &hold);
    if (!rc)
        rc = kbi_cache_lock(cache, &lock, "blob", e->layer_digest);
    /* Another process may have fetched it while we waited for the lock. Blobs only appear under
     * their name once their digest was verified, but a file in the cache can be altered later:
     * one that is present is hashed again (a tampered one is removed and fetched again). */
    if (!rc) {
        rc = kbi_cache_blob_check(cache, *path_out, e->layer_digest);
        if (rc == KB_ERR_NOT_FOUND || rc == KB_ERR_DIGEST) {
            kb_ctx_clear_error(ctx);
            rc = fetch_blob(ctx, r, name, e, *path_out);
        }
    }
    kbi_lock_release(&lock);
    kbi_lock_release(&hold);
    return rc;
}

KB_EXTERN int kb_fetch_source(char **version_out, kb_ctx *ctx, const char *ref_text,
                              const char *registry, int allow_unsigned)
{
    if (!version_out || !ctx || !ref_text)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_fetch_source: NULL argument");
    *version_out = NULL;
    kb_pkgref ref;
    int rc = kbi_pkgref_parse(ctx, &ref, ref_text);
    if (rc)
        return rc;
    kb_registry *r = NULL;
    kb_cache *cache = NULL;
    kb_pkg_index *idx = NULL;
    char *version = NULL, *blob = NULL;
    rc = kb_trust_registry_open(&r, ctx, registry);
    if (!rc)
        rc = kbi_cache_open(&cache, ctx);
    if (!rc)
        rc = kbi_pkg_pick_version(&version, r, ref.name, ref.constraint_text);
    if (!rc)
        rc = kbi_pkg_index_fetch(&idx, r, ref.name, version, NULL);
    if (!rc) /* sources are code too: the same signature policy as artifacts */
        rc = kb_trust_check(ctx, r, ref.name, version, idx->digest, allow_unsigned);
    kb_pkg_entry *src = rc ? NULL : (kb_pkg_entry *)kbi_pkg_index_find(idx, KB_SOURCE_TARGET);
    if (!rc && !src)
        rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND, "%s@%s was published without a source artifact",
                           ref.name, version);
    if (!rc)
        rc = kbi_install_fetch_layer(&blob, ctx, r, cache, ref.name, src);
    if (!rc)
        rc = kbi_sources_record(cache, ref.name, version, src->layer_digest, idx->digest,
                                kbi_registry_ref(r));
    if (!rc) {
        *version_out = version;
        version = NULL;
    }
    free(blob);
    free(version);
    kbi_pkg_index_free(idx);
    kbi_cache_close(cache);
    kb_registry_free(r);
    kbi_pkgref_clear(&ref);
    return rc;
}
