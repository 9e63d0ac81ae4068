/* Building a package from its source artifact when no prebuilt artifact fits the device. */
#include "builder/builder.h"
#include "archive/extract.h"
#include "install/install.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int move_into_blobs(char **blob_out, char hex[65], kb_ctx *ctx, kb_cache *cache,
                           const char *artifact)
{
    int rc = kbi_sha256_file(ctx, artifact, hex, NULL);
    if (rc)
        return rc;
    *blob_out = kbi_cache_blob_path(cache, hex);
    if (!*blob_out)
        return kbi_error_oom(ctx);
    if (rename(artifact, *blob_out) != 0)
        return kbi_error_set_path(ctx, KB_ERR_IO, *blob_out, 0, 0, "cannot move %s into the cache",
                                  artifact);
    return 0;
}

int kbi_local_build_from_blob(kb_install_result *res, kb_ctx *ctx, kb_cache *cache,
                              const char *name, const char *version, const char *source_blob,
                              const char *target_id, const char *reason, const char *registry)
{
    char *builds = kbi_path_join(cache->root, "builds");
    char *src_dir = NULL, *out_dir = NULL, *artifact = NULL, *blob = NULL;
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kbi_extract_source_layout;
    int rc = builds ? kbi_extract_archive(&src_dir, ctx, source_blob, builds, &opts)
                    : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_mkdtemp(ctx, &out_dir, builds, ".kbpkg-out-");
    /* Dependencies travel by url + digest: fetched once into the cache, offline after. */
    if (!rc)
        rc = kb_fetch_inputs(NULL, ctx, src_dir);
    if (!rc) {
        kbi_event_emit(ctx, KB_EVENT_BUILD_START, name, "%s %s from source", version, target_id);
        rc = kbi_build_target(ctx, &artifact, src_dir, target_id, out_dir);
        if (rc)
            kbi_error_prefix(ctx, "building %s@%s for %s from source", name, version, target_id);
    }
    char hex[65] = "";
    if (!rc)
        rc = move_into_blobs(&blob, hex, ctx, cache, artifact);
    if (!rc) {
        char digest[80];
        snprintf(digest, sizeof(digest), "sha256:%s", hex);
        kb_install_info info = {name,     version, target_id, digest,         res->index_digest,
                                registry, reason,  true,      &res->admission};
        kb_lock lock;
        char *key = kbi_asprintf("%s@%s/%s", name, version, target_id);
        rc = key ? kbi_cache_lock(cache, &lock, "install", key) : kbi_error_oom(ctx);
        if (!rc) {
            rc = kbi_cache_install_artifact(&res->dir, cache, blob, &info);
            kbi_lock_release(&lock);
        }
        free(key);
        if (!rc) {
            res->artifact_digest = kbi_strdup(digest);
            res->local_build = true;
            kbi_event_emit(ctx, KB_EVENT_INSTALLED, name, "%s %s (built from source)", version,
                           target_id);
        }
    }
    if (src_dir)
        kbi_rm_rf(NULL, src_dir);
    if (out_dir)
        kbi_rm_rf(NULL, out_dir);
    free(src_dir);
    free(out_dir);
    free(artifact);
    free(blob);
    free(builds);
    return rc;
}

int kbi_local_build_install(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                            const kb_pkg_index *idx, kb_pkg_entry *source, const char *target_id,
                            const char *reason)
{
    if (!source)
        return kbi_error_set(ctx, KB_ERR_NOT_FOUND, "%s@%s has no source artifact to build from",
                             idx->name, idx->version);
    char *blob = NULL;
    int rc = kbi_install_fetch_layer(&blob, ctx, r, cache, idx->name, source);
    if (!rc)
        rc = kbi_sources_record(cache, idx->name, idx->version, source->layer_digest, idx->digest,
                                kbi_registry_ref(r));
    if (!rc)
        rc = kbi_local_build_from_blob(res, ctx, cache, idx->name, idx->version, blob, target_id,
                                       reason, kbi_registry_ref(r));
    free(blob);
    return rc;
}
