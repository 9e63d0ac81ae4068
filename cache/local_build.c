/* Building a package from its source artifact when no prebuilt artifact fits the device. */
#include "builder/builder.h"
#include "cache/extract.h"
#include "cache/install.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static unsigned version_major(const char *version)
{
    uint64_t major = 0;
    char buf[16];
    snprintf(buf, sizeof(buf), "%s", version ? version : "");
    char *dot = strchr(buf, '.');
    if (dot)
        *dot = '\0';
    kb_parse_u64(buf, &major);
    return (unsigned)major;
}

/* The HIP toolchain for a ROCm device: the one linking against the device's runtime major
 * (hipcc 5.2: libamdhip64.so.5, hip-clang: .so.6); with the runtime unknown, whichever builds
 * the arch, hipcc first. */
static const kb_toolchain *rocm_toolchain(const kb_device *d, const kb_toolchains *tcs)
{
    const kb_toolchain *hipcc = &tcs->tc[KB_BACKEND_ROCM], *clang = &tcs->hip_clang;
    if (d->runtime_major)
        return d->runtime_major == clang->hip_major ? clang : hipcc;
    return kb_toolchain_can_build(hipcc, d->arch) || !kb_toolchain_can_build(clang, d->arch)
               ? hipcc
               : clang;
}

/* The target a device would be built for with the toolchain found here, or why not. */
static bool device_target(char *out, size_t size, char *why, size_t why_size, const kb_device *d,
                          const kb_toolchains *tcs, const char *host_arch, const char *os)
{
    const kb_toolchain *tc =
        d->backend == KB_BACKEND_ROCM ? rocm_toolchain(d, tcs) : &tcs->tc[d->backend];
    if (d->backend != KB_BACKEND_CUDA && d->backend != KB_BACKEND_ROCM) {
        snprintf(why, why_size, "no local builds for %s devices", kb_backend_name(d->backend));
        return false;
    }
    if (!tc->found) {
        snprintf(why, why_size, "%s is not installed (%s)", tc->name,
                 tc->note ? tc->note : "not found in PATH");
        return false;
    }
    if (!kb_toolchain_can_build(tc, d->arch)) {
        char *reason = kb_toolchain_cannot_build(tc, d->arch);
        snprintf(why, why_size, "%s", reason ? reason : "cannot build it");
        free(reason);
        return false;
    }
    unsigned major = d->backend == KB_BACKEND_ROCM ? tc->hip_major : version_major(tc->version);
    snprintf(out, size, "%s%u-%s-%s-%s", kb_backend_name(d->backend), major, d->arch, host_arch,
             os);
    return true;
}

int kb_local_build_target(char **target_out, char *why, size_t why_size, kb_ctx *ctx,
                          const kb_host *host)
{
    *target_out = NULL;
    kb_toolchains tcs;
    int rc = kb_toolchains_discover(ctx, &tcs);
    if (rc) {
        snprintf(why, why_size, "%s", kb_ctx_last_error(ctx)->message);
        return KB_ERR_TOOLCHAIN;
    }
    char arch[16], os[16], target[128];
    kb_host_platform(arch, sizeof(arch), os, sizeof(os));
    bool ok = false;
    for (size_t i = 0; !ok && i < host->device_count; i++)
        ok =
            device_target(target, sizeof(target), why, why_size, &host->devices[i], &tcs, arch, os);
    if (!ok && host->device_count == 0) {
        const kb_toolchain *cc = &tcs.tc[KB_BACKEND_CPU];
        if (cc->found && host->cpu_level[0]) {
            snprintf(target, sizeof(target), "cpu-%s-%s-%s", host->cpu_level, arch, os);
            ok = true;
        } else
            snprintf(why, why_size, "no C compiler found for a CPU build");
    }
    kb_toolchains_free(&tcs);
    if (!ok)
        return KB_ERR_TOOLCHAIN;
    *target_out = kb_strdup(target);
    return *target_out ? 0 : KB_ERR_NOMEM;
}

static int move_into_blobs(char **blob_out, char hex[65], kb_ctx *ctx, kb_cache *cache,
                           const char *artifact)
{
    int rc = kb_sha256_file(ctx, artifact, hex, NULL);
    if (rc)
        return rc;
    *blob_out = kb_cache_blob_path(cache, hex);
    if (!*blob_out)
        return kb_error_oom(ctx);
    if (rename(artifact, *blob_out) != 0)
        return kb_error_set_path(ctx, KB_ERR_IO, *blob_out, 0, 0, "cannot move %s into the cache",
                                 artifact);
    return 0;
}

int kb_local_build_from_blob(kb_install_result *res, kb_ctx *ctx, kb_cache *cache, const char *name,
                             const char *version, const char *source_blob, const char *target_id,
                             const char *reason, const char *registry)
{
    char *builds = kb_path_join(cache->root, "builds");
    char *src_dir = NULL, *out_dir = NULL, *artifact = NULL, *blob = NULL;
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kb_extract_source_layout;
    int rc =
        builds ? kb_extract_archive(&src_dir, ctx, source_blob, builds, &opts) : kb_error_oom(ctx);
    if (!rc)
        rc = kb_mkdtemp(ctx, &out_dir, builds, ".kbpkg-out-");
    if (!rc) {
        kb_event_emit(ctx, KB_EVENT_BUILD_START, name, "%s %s from source", version, target_id);
        rc = kb_build_target(ctx, &artifact, src_dir, target_id, out_dir);
        if (rc)
            kb_error_prefix(ctx, "building %s@%s for %s from source", name, version, target_id);
    }
    char hex[65] = "";
    if (!rc)
        rc = move_into_blobs(&blob, hex, ctx, cache, artifact);
    if (!rc) {
        char digest[80];
        snprintf(digest, sizeof(digest), "sha256:%s", hex);
        kb_install_info info = {name,     version, target_id, digest, res->index_digest,
                                registry, reason,  true};
        kb_lock lock;
        char *key = kb_asprintf("%s@%s/%s", name, version, target_id);
        rc = key ? kb_cache_lock(cache, &lock, "install", key) : kb_error_oom(ctx);
        if (!rc) {
            rc = kb_cache_install_artifact(&res->dir, cache, blob, &info);
            kb_lock_release(&lock);
        }
        free(key);
        if (!rc) {
            res->artifact_digest = kb_strdup(digest);
            res->local_build = true;
            kb_event_emit(ctx, KB_EVENT_INSTALLED, name, "%s %s (built from source)", version,
                          target_id);
        }
    }
    if (src_dir)
        kb_rm_rf(NULL, src_dir);
    if (out_dir)
        kb_rm_rf(NULL, out_dir);
    free(src_dir);
    free(out_dir);
    free(artifact);
    free(blob);
    free(builds);
    return rc;
}

int kb_local_build_install(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                           const kb_pkg_index *idx, kb_pkg_entry *source, const char *target_id,
                           const char *reason)
{
    if (!source)
        return kb_error_set(ctx, KB_ERR_NOT_FOUND, "%s@%s has no source artifact to build from",
                            idx->name, idx->version);
    char *blob = NULL;
    int rc = kb_install_fetch_layer(&blob, ctx, r, cache, idx->name, source);
    if (!rc)
        rc = kb_sources_record(cache, idx->name, idx->version, source->layer_digest, idx->digest,
                               kb_registry_base(r));
    if (!rc)
        rc = kb_local_build_from_blob(res, ctx, cache, idx->name, idx->version, blob, target_id,
                                      reason, kb_registry_base(r));
    free(blob);
    return rc;
}
