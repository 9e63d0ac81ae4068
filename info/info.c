/* Package information from a registry: versions, summary, targets; name search. */
#define _GNU_SOURCE
#include "registry/pkgindex.h"
#include "kbpkg/trust.h"
#include "model/ref.h"
#include "model/target.h"
#include "kbpkg/info.h"
#include "kbpkg/registry.h"
#include "registry/pkgindex.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A target id as parsed once, for kb_package_info_target_detail. */
typedef struct info_target {
    kb_target t;
    bool parsed;
} info_target;

struct kb_package_info {
    kb_pkg_index *index;
    kb_strv versions;
    info_target *targets; /* one per index entry */
    kb_strv exports;      /* from kbpkg.json, once read */
    long abi;             /* likewise; 0 when unknown */
};

static int parse_targets(kb_package_info *info, kb_ctx *ctx)
{
    size_t n = info->index->count;
    if (n && !(info->targets = calloc(n, sizeof(*info->targets))))
        return kbi_error_oom(ctx);
    for (size_t i = 0; i < n; i++) {
        const kb_pkg_entry *e = &info->index->entries[i];
        info->targets[i].parsed =
            !e->is_source && kbi_target_parse(NULL, &info->targets[i].t, e->target) == 0;
    }
    return 0;
}

static int open_registry(kb_registry **r, kb_ctx *ctx, const char *registry)
{
    return kb_trust_registry_open(r, ctx, registry);
}

KB_EXTERN int kb_package_info_get(kb_package_info **out, kb_ctx *ctx, const char *ref_text,
                                  const char *registry)
{
    if (!out || !ctx || !ref_text)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_package_info_get: NULL argument");
    *out = NULL;
    kb_pkgref ref;
    int rc = kbi_pkgref_parse(ctx, &ref, ref_text);
    if (rc)
        return rc;
    kb_package_info *info = calloc(1, sizeof(*info));
    kb_registry *r = NULL;
    char *version = NULL;
    rc = info ? open_registry(&r, ctx, registry) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_pkg_versions(&info->versions, r, ref.name);
    if (!rc)
        rc = kbi_pkg_pick_version(&version, r, ref.name, ref.constraint_text);
    if (!rc)
        rc = kbi_pkg_index_fetch(&info->index, r, ref.name, version, NULL);
    if (!rc)
        rc = parse_targets(info, ctx);
    free(version);
    kb_registry_free(r);
    kbi_pkgref_clear(&ref);
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
    kbi_pkg_index_free(info->index);
    kbi_strv_free(&info->versions);
    kbi_strv_free(&info->exports);
    free(info->targets);
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

KB_EXTERN const char *kb_package_info_signatures(const kb_package_info *info)
{
    return info ? info->index->signatures : NULL;
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

KB_EXTERN int kb_package_versions(char ***out, size_t *count, kb_registry *registry,
                                  const char *name)
{
    if (!out || !count || !registry || !name)
        return registry ? kbi_error_set(registry->ctx, KB_ERR_INVALID,
                                        "kb_package_versions: NULL argument")
                        : KB_ERR_INVALID;
    *out = NULL;
    *count = 0;
    kb_strv v = KB_STRV_INIT;
    int rc = kbi_pkg_versions(&v, registry, name);
    if (rc) {
        kbi_strv_free(&v);
        return rc;
    }
    *out = v.items;
    *count = v.len;
    return 0;
}

KB_EXTERN int kb_package_info_fetch(kb_package_info **out, kb_registry *registry, const char *name,
                                    const char *version)
{
    if (!out || !registry || !name || !version)
        return registry ? kbi_error_set(registry->ctx, KB_ERR_INVALID,
                                        "kb_package_info_fetch: NULL argument")
                        : KB_ERR_INVALID;
    *out = NULL;
    kb_package_info *info = calloc(1, sizeof(*info));
    int rc = info ? kbi_pkg_index_fetch(&info->index, registry, name, version, NULL)
                  : kbi_error_oom(registry->ctx);
    for (size_t i = 0; !rc && i < info->index->count; i++)
        rc = kbi_pkg_entry_resolve(&info->index->entries[i], registry, name);
    if (!rc)
        rc = kbi_strv_push(&info->versions, version) ? kbi_error_oom(registry->ctx) : 0;
    if (!rc)
        rc = parse_targets(info, registry->ctx);
    if (rc) {
        kb_package_info_free(info);
        return rc;
    }
    *out = info;
    return 0;
}

KB_EXTERN int kb_package_info_target_detail(const char **backend, const char **arch,
                                            uint64_t *artifact_size, const kb_package_info *info,
                                            size_t index)
{
    if (!info || index >= info->index->count)
        return KB_ERR_NOT_FOUND;
    const kb_pkg_entry *e = &info->index->entries[index];
    const info_target *t = &info->targets[index];
    if (backend)
        *backend = e->is_source ? "source" : t->parsed ? kbi_backend_name(t->t.backend) : NULL;
    if (arch)
        *arch = e->is_source ? "" : t->parsed ? t->t.arch : NULL;
    if (artifact_size)
        *artifact_size = e->layer_size;
    return 0;
}

/* exports and abi from a kbpkg.json; anything else in it is per target, not per version. */
static int parse_kbpkg_json(kb_package_info *info, kb_ctx *ctx, const kb_buf *json)
{
    json_t *root = json_loadb(json->data ? json->data : "", json->len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return kbi_error_set(ctx, KB_ERR_PARSE, "kbpkg.json is not a JSON object");
    }
    json_t *abi = json_object_get(root, "abi"), *x;
    if (json_is_integer(abi))
        info->abi = (long)json_integer_value(abi);
    size_t i;
    int rc = 0;
    json_array_foreach(json_object_get(root, "exports"), i, x)
    {
        if (!rc && json_is_string(x))
            rc = kbi_strv_push(&info->exports, json_string_value(x)) ? kbi_error_oom(ctx) : 0;
    }
    json_decref(root);
    return rc;
}

/* The source's config has no exports, so it is skipped; a version without artifacts (or read
 * by kb_package_info_get, which resolves no entry) has no kbpkg.json to read. */
static const kb_pkg_entry *kbpkg_json_entry(const kb_pkg_index *index)
{
    for (size_t i = 0; i < index->count; i++)
        if (!index->entries[i].is_source && index->entries[i].config_digest &&
            index->entries[i].config_size)
            return &index->entries[i];
    return NULL;
}

KB_EXTERN int kb_package_info_read_kbpkg_json(kb_package_info *info, kb_registry *registry)
{
    if (!info || !registry)
        return registry ? kbi_error_set(registry->ctx, KB_ERR_INVALID,
                                        "kb_package_info_read_kbpkg_json: NULL argument")
                        : KB_ERR_INVALID;
    kbi_strv_free(&info->exports);
    info->abi = 0;
    const kb_pkg_entry *e = kbpkg_json_entry(info->index);
    if (!e)
        return 0;
    kb_buf json = KB_BUF_INIT;
    /* at most 1 MiB, as kbi_pkg_entry_resolve already checked */
    int rc = kbi_registry_blob_get_mem(&json, registry, info->index->name, e->config_digest,
                                       KB_PKG_CONFIG_SIZE_MAX);
    if (!rc)
        rc = parse_kbpkg_json(info, registry->ctx, &json);
    kbi_buf_free(&json);
    if (!rc)
        return 0;
    kbi_strv_free(&info->exports); /* nothing rather than half of it */
    info->abi = 0;
    char *why = kbi_strdup(kb_ctx_last_error(registry->ctx)->message);
    rc = kbi_error_set(registry->ctx, rc, "kbpkg.json %s of %s: %s", e->config_digest, e->target,
                       why ? why : kb_strerror(rc));
    free(why);
    return rc;
}

KB_EXTERN size_t kb_package_info_export_count(const kb_package_info *info)
{
    return info ? info->exports.len : 0;
}

KB_EXTERN const char *kb_package_info_export_at(const kb_package_info *info, size_t index)
{
    return info && index < info->exports.len ? info->exports.items[index] : NULL;
}

KB_EXTERN long kb_package_info_abi(const kb_package_info *info)
{
    return info ? info->abi : 0;
}

KB_EXTERN int kb_package_search(char ***out, size_t *count, kb_ctx *ctx, const char *term,
                                const char *registry)
{
    if (!out || !count || !ctx)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_package_search: NULL argument");
    *out = NULL;
    *count = 0;
    kb_registry *r = NULL;
    kb_strv repos = KB_STRV_INIT, hits = KB_STRV_INIT;
    int rc = open_registry(&r, ctx, registry);
    if (!rc)
        rc = kbi_registry_catalog(&repos, r);
    if (rc == KB_ERR_NOT_FOUND) { /* an empty or not yet created hub */
        kb_ctx_clear_error(ctx);
        rc = 0;
    }
    for (size_t i = 0; !rc && i < repos.len; i++)
        if (!term || !*term || strcasestr(repos.items[i], term))
            rc = kbi_strv_push(&hits, repos.items[i]) ? kbi_error_oom(ctx) : 0;
    kbi_strv_free(&repos);
    kb_registry_free(r);
    if (rc) {
        kbi_strv_free(&hits);
        return rc;
    }
    kbi_strv_sort(&hits);
    *out = hits.items;
    *count = hits.len;
    return 0;
}
