/* Package information from a registry: versions, summary, targets; name search. */
#define _GNU_SOURCE
#include "registry/pkgindex.h"
#include "kbpkg/trust.h"
#include "model/ref.h"
#include "kbpkg/info.h"
#include "kbpkg/registry.h"
#include "registry/pkgindex.h"

#include <stdlib.h>
#include <string.h>

struct kb_package_info {
    kb_pkg_index *index;
    kb_strv versions;
};

static int open_registry(kb_registry **r, kb_ctx *ctx, const char *registry)
{
    return kb_trust_registry_open(r, ctx, registry);
}

KB_EXTERN int kb_package_info_get(kb_package_info **out, kb_ctx *ctx, const char *ref_text,
                                  const char *registry)
{
    if (!out || !ctx || !ref_text)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_package_info_get: NULL argument");
    *out = NULL;
    kb_pkgref ref;
    int rc = kb_pkgref_parse(ctx, &ref, ref_text);
    if (rc)
        return rc;
    kb_package_info *info = calloc(1, sizeof(*info));
    kb_registry *r = NULL;
    char *version = NULL;
    rc = info ? open_registry(&r, ctx, registry) : kb_error_oom(ctx);
    if (!rc)
        rc = kb_pkg_versions(&info->versions, r, ref.name);
    if (!rc)
        rc = kb_pkg_pick_version(&version, r, ref.name, ref.constraint_text);
    if (!rc)
        rc = kb_pkg_index_fetch(&info->index, r, ref.name, version, NULL);
    free(version);
    kb_registry_free(r);
    kb_pkgref_clear(&ref);
    if (rc) {
        kb_package_info_free(info);
        return rc;
    }
    *out = info;
    return 0;
}

KB_EXTERN void kb_package_info_free(kb_package_info *info)
{
    if (!info)
        return;
    kb_pkg_index_free(info->index);
    kb_strv_free(&info->versions);
    free(info);
}

KB_EXTERN const char *kb_package_info_name(const kb_package_info *info)
{
    return info ? info->index->name : NULL;
}

KB_EXTERN const char *kb_package_info_version(const kb_package_info *info)
{
    return info ? info->index->version : NULL;
}

KB_EXTERN const char *kb_package_info_summary(const kb_package_info *info)
{
    return info && info->index->summary ? info->index->summary : "";
}

KB_EXTERN const char *kb_package_info_index_digest(const kb_package_info *info)
{
    return info ? info->index->digest : NULL;
}

KB_EXTERN size_t kb_package_info_version_count(const kb_package_info *info)
{
    return info ? info->versions.len : 0;
}

KB_EXTERN const char *kb_package_info_version_at(const kb_package_info *info, size_t index)
{
    return info && index < info->versions.len ? info->versions.items[index] : NULL;
}

KB_EXTERN size_t kb_package_info_target_count(const kb_package_info *info)
{
    return info ? info->index->count : 0;
}

KB_EXTERN int kb_package_info_target(const char **target, const char **build_key,
                                     const char **manifest_digest, const kb_package_info *info,
                                     size_t index)
{
    if (!info || index >= info->index->count)
        return KB_ERR_NOT_FOUND;
    const kb_pkg_entry *e = &info->index->entries[index];
    if (target)
        *target = e->target;
    if (build_key)
        *build_key = e->build_key;
    if (manifest_digest)
        *manifest_digest = e->manifest_digest;
    return 0;
}

KB_EXTERN int kb_package_search(char ***out, size_t *count, kb_ctx *ctx, const char *term,
                                const char *registry)
{
    if (!out || !count || !ctx)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_package_search: NULL argument");
    *out = NULL;
    *count = 0;
    kb_registry *r = NULL;
    kb_strv repos = KB_STRV_INIT, hits = KB_STRV_INIT;
    int rc = open_registry(&r, ctx, registry);
    if (!rc)
        rc = kb_registry_catalog(&repos, r);
    if (rc == KB_ERR_NOT_FOUND) { /* an empty or not yet created hub */
        kb_ctx_clear_error(ctx);
        rc = 0;
    }
    for (size_t i = 0; !rc && i < repos.len; i++)
        if (!term || !*term || strcasestr(repos.items[i], term))
            rc = kb_strv_push(&hits, repos.items[i]) ? kb_error_oom(ctx) : 0;
    kb_strv_free(&repos);
    kb_registry_free(r);
    if (rc) {
        kb_strv_free(&hits);
        return rc;
    }
    kb_strv_sort(&hits);
    *out = hits.items;
    *count = hits.len;
    return 0;
}

KB_EXTERN void kb_package_search_free(char **names, size_t count)
{
    for (size_t i = 0; names && i < count; i++)
        free(names[i]);
    free(names);
}
