/* kb_bench_installed: the package benchmark run against installed artifacts, not a rebuild. */
#include "builder/builder.h"
#include "archive/extract.h"
#include "install/install.h"
#include "model/ref.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The highest installed version of ref (its targets filtered by the user's prefixes) into
 * *first..*end of list. KB_ERR_NOT_FOUND naming the package when nothing matches. */
static int pick_version(size_t *first, size_t *end, kb_ctx *ctx, const kb_installed *list,
                        size_t count, const kb_pkgref *ref)
{
    kb_semver best = {0}, v;
    const char *best_text = NULL;
    for (size_t i = 0; i < count; i++) {
        if (kbi_semver_parse(NULL, &v, list[i].version) != 0 ||
            !kbi_constraint_match(ref->constraint, &v))
            continue;
        if (!best_text || kbi_semver_cmp(&v, &best) > 0)
            best = v, best_text = list[i].version;
    }
    if (!best_text)
        return kbi_error_set(
            ctx, KB_ERR_NOT_FOUND,
            "%s%s%s is not installed (kbpkg install %s, or bench a package folder)", ref->name,
            strcmp(ref->constraint_text, "*") ? "@" : "",
            strcmp(ref->constraint_text, "*") ? ref->constraint_text : "", ref->name);
    *first = count, *end = 0;
    for (size_t i = 0; i < count; i++)
        if (strcmp(list[i].version, best_text) == 0) {
            *first = *first < i ? *first : i;
            *end = i + 1;
        }
    return 0;
}

static bool wanted(const char *target, const char *const *targets, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (kbi_str_starts(target, targets[i]))
            return true;
    return count == 0;
}

/* The source artifact of name@version in the cache, fetched when missing (as `kbpkg fetch
 * --source` does, trust policy included) from the registry the package was installed from, as
 * its install record names it; *blob_out owned. */
static int source_blob(char **blob_out, kb_ctx *ctx, kb_cache *cache, const kb_installed *p,
                       int allow_unsigned)
{
    char *version = NULL, *digest = NULL;
    int rc = kbi_sources_find(&version, &digest, cache, p->name, p->version);
    if (rc == KB_ERR_NOT_FOUND) {
        kb_ctx_clear_error(ctx);
        char *ref = kbi_asprintf("%s@%s", p->name, p->version), *fetched = NULL;
        rc = ref ? kb_fetch_source(&fetched, ctx, ref, p->registry, allow_unsigned)
                 : kbi_error_oom(ctx);
        if (rc)
            kbi_error_prefix(ctx, "the benchmark needs the source of %s@%s", p->name, p->version);
        else
            rc = kbi_sources_find(&version, &digest, cache, p->name, p->version);
        free(fetched);
        free(ref);
    }
    *blob_out = rc ? NULL : kbi_cache_blob_path(cache, digest);
    if (!rc && !*blob_out)
        rc = kbi_error_oom(ctx);
    free(version);
    free(digest);
    return rc;
}

static int bench_from_source(kb_bench_result **out, kb_ctx *ctx, kb_cache *cache,
                             const kb_installed *list, size_t first, size_t end,
                             const char *const *targets, size_t count, unsigned flags,
                             int allow_unsigned)
{
    const char **ids = calloc(end - first + 1, sizeof(*ids));
    const char **dirs = calloc(end - first + 1, sizeof(*dirs));
    size_t n = 0;
    int rc = ids && dirs ? 0 : kbi_error_oom(ctx);
    for (size_t i = first; !rc && i < end; i++)
        if (wanted(list[i].target, targets, count))
            ids[n] = list[i].target, dirs[n++] = list[i].dir;
    if (!rc && n == 0)
        rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND, "%s@%s has no installed target matching %s",
                           list[first].name, list[first].version, targets[0]);
    char *blob = NULL, *src = NULL, *builds = kbi_path_join(cache->root, "builds");
    if (!rc)
        rc = builds ? source_blob(&blob, ctx, cache, &list[first], allow_unsigned)
                    : kbi_error_oom(ctx);
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kbi_extract_source_layout;
    if (!rc)
        rc = kbi_extract_archive(&src, ctx, blob, builds, &opts);
    if (!rc)
        rc = kb_fetch_inputs(NULL, ctx, src);
    if (!rc)
        rc = kbi_package_bench_run(out, ctx, src, ids, n, flags, dirs);
    if (!rc) {
        (*out)->installed = 1;
        if (list[first].registry && !((*out)->registry = kbi_strdup(list[first].registry)))
            rc = kbi_error_oom(ctx);
    }
    if (src)
        kbi_rm_rf(NULL, src);
    free(src);
    free(blob);
    free(builds);
    free(ids);
    free(dirs);
    return rc;
}

KB_EXTERN int kb_bench_installed(kb_bench_result **out, kb_ctx *ctx, const char *ref_text,
                                 const char *const *targets, size_t target_count, unsigned flags,
                                 int allow_unsigned)
{
    *out = NULL;
    kb_pkgref ref = {0};
    kb_cache *cache = NULL;
    kb_installed *list = NULL;
    size_t count = 0, first = 0, end = 0;
    int rc = kbi_pkgref_parse(ctx, &ref, ref_text);
    if (!rc)
        rc = kbi_cache_open(&cache, ctx);
    if (!rc)
        rc = kbi_cache_list(&list, &count, cache, ref.name);
    if (!rc)
        rc = pick_version(&first, &end, ctx, list, count, &ref);
    if (!rc)
        rc = bench_from_source(out, ctx, cache, list, first, end, targets, target_count, flags,
                               allow_unsigned);
    if (rc && *out) {
        kb_bench_result_free(*out);
        *out = NULL;
    }
    kbi_installed_list_free(list, count);
    kbi_cache_close(cache);
    kbi_pkgref_clear(&ref);
    return rc;
}
