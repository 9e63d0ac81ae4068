/* The public cache API over the internal store: list, verify, remove, gc. */
#include "model/ref.h"
#include "cache/store.h"
#include "kbpkg/cache.h"

#include <stdlib.h>
#include <string.h>

struct kb_package_list {
    kb_installed *items;
    kb_installed_pkg *views;
    kb_strv *issues;
    size_t count;
};

static int make_list(kb_package_list **out, kb_ctx *ctx, const char *name)
{
    *out = NULL;
    if (name && !kbi_pkg_name_valid(name))
        return kbi_error_set(ctx, KB_ERR_INVALID, "'%s' is not a package name (org/name)", name);
    kb_cache *cache = NULL;
    int rc = kbi_cache_open(&cache, ctx);
    if (rc)
        return rc;
    kb_package_list *l = calloc(1, sizeof(*l));
    rc = l ? kbi_cache_list(&l->items, &l->count, cache, name) : kbi_error_oom(ctx);
    kbi_cache_close(cache);
    if (!rc) {
        l->views = calloc(l->count + 1, sizeof(*l->views));
        l->issues = calloc(l->count + 1, sizeof(*l->issues));
        if (!l->views || !l->issues)
            rc = kbi_error_oom(ctx);
    }
    if (rc) {
        kb_package_list_free(l);
        return rc;
    }
    for (size_t i = 0; i < l->count; i++) {
        const kb_installed *p = &l->items[i];
        l->views[i] = (kb_installed_pkg){
            p->name,         p->version,  p->target, p->dir,         p->library, p->artifact_digest,
            p->index_digest, p->registry, p->reason, p->local_build, p->bytes};
    }
    *out = l;
    return 0;
}

KB_EXTERN int kb_cache_list_installed(kb_package_list **out, kb_ctx *ctx, const char *name)
{
    if (!out || !ctx)
        return KB_ERR_INVALID;
    return make_list(out, ctx, name);
}

KB_EXTERN size_t kb_package_list_count(const kb_package_list *list)
{
    return list ? list->count : 0;
}

KB_EXTERN const kb_installed_pkg *kb_package_list_at(const kb_package_list *list, size_t index)
{
    return list && index < list->count ? &list->views[index] : NULL;
}

KB_EXTERN size_t kb_package_list_issue_count(const kb_package_list *list, size_t index)
{
    return list && index < list->count ? list->issues[index].len : 0;
}

KB_EXTERN const char *kb_package_list_issue(const kb_package_list *list, size_t index, size_t issue)
{
    if (!list || index >= list->count || issue >= list->issues[index].len)
        return NULL;
    return list->issues[index].items[issue];
}

KB_EXTERN void kb_package_list_free(kb_package_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; list->issues && i < list->count; i++)
        kbi_strv_free(&list->issues[i]);
    kbi_installed_list_free(list->items, list->count);
    free(list->views);
    free(list->issues);
    free(list);
}

/* (The public kb_cache_verify is install/verify.c: it adds the admission check.) */
int kbi_cache_verify_with(kb_package_list **out, kb_ctx *ctx, const char *name,
                          kb_cache_verify_extra extra)
{
    if (!out || !ctx)
        return KB_ERR_INVALID;
    int rc = make_list(out, ctx, name);
    if (rc)
        return rc;
    kb_cache *cache = NULL;
    rc = kbi_cache_open(&cache, ctx);
    size_t bad = 0;
    for (size_t i = 0; !rc && i < (*out)->count; i++) {
        rc = kbi_cache_verify_one(&(*out)->issues[i], cache, &(*out)->items[i]);
        if (!rc && extra)
            rc = extra(&(*out)->issues[i], ctx, &(*out)->items[i]);
        bad += (*out)->issues[i].len ? 1 : 0;
    }
    kbi_cache_close(cache);
    if (!rc && bad)
        rc = kbi_error_set(ctx, KB_ERR_DIGEST, "%zu installed package%s failed verification", bad,
                           bad == 1 ? "" : "s");
    return rc;
}

KB_EXTERN int kb_cache_remove(size_t *removed, kb_ctx *ctx, const char *ref_text,
                              const char *target)
{
    if (!removed || !ctx || !ref_text)
        return KB_ERR_INVALID;
    *removed = 0;
    const char *at = strchr(ref_text, '@');
    char *name = at ? kbi_strndup(ref_text, (size_t)(at - ref_text)) : kbi_strdup(ref_text);
    if (!name)
        return kbi_error_oom(ctx);
    int rc = 0;
    if (!kbi_pkg_name_valid(name))
        rc = kbi_error_set(ctx, KB_ERR_INVALID, "'%s' is not a package name (org/name)", name);
    kb_cache *cache = NULL;
    if (!rc)
        rc = kbi_cache_open(&cache, ctx);
    if (!rc)
        rc = kbi_cache_uninstall(removed, cache, name, at ? at + 1 : NULL, target);
    kbi_cache_close(cache);
    free(name);
    return rc;
}

KB_EXTERN const char *kb_cache_dir(const kb_ctx *ctx)
{
    return ctx ? kbi_config_str(ctx, "cache.dir") : NULL;
}
