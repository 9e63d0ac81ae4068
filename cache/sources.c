/* Records of fetched source artifacts (sources/<org>/<name>/<version>.json): what installs build
 * from offline, and what gc keeps. */
#include "cache/store.h"
#include "model/ref.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static char *record_dir(const kb_cache *cache, const char *name)
{
    return kbi_asprintf("%s/sources/%s", cache->root, name);
}

int kbi_sources_record(kb_cache *cache, const char *name, const char *version,
                       const char *source_digest, const char *index_digest, const char *registry)
{
    kb_ctx *ctx = cache->ctx;
    char *dir = record_dir(cache, name);
    char *path = dir ? kbi_asprintf("%s/%s.json", dir, version) : NULL;
    json_t *rec =
        json_pack("{s:s,s:s,s:s,s:s?,s:s?}", "name", name, "version", version, "source_digest",
                  source_digest, "index_digest", index_digest, "registry", registry);
    char *text = rec ? json_dumps(rec, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    int rc = path && text ? kbi_mkdir_p(ctx, dir, 0755) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, text, strlen(text), 0644);
    free(text);
    json_decref(rec);
    free(path);
    free(dir);
    return rc;
}

typedef void (*record_fn)(json_t *rec, void *arg);

/* Every record under sources/ (all packages, or one). */
static void each_record(kb_cache *cache, const char *name, record_fn fn, void *arg)
{
    char *base = kbi_asprintf("%s/sources", cache->root);
    DIR *orgs = base ? opendir(base) : NULL;
    struct dirent *o;
    while (orgs && (o = readdir(orgs))) {
        if (o->d_name[0] == '.')
            continue;
        char *orgdir = kbi_path_join(base, o->d_name);
        DIR *names = orgdir ? opendir(orgdir) : NULL;
        struct dirent *n;
        while (names && (n = readdir(names))) {
            if (n->d_name[0] == '.')
                continue;
            char *full = kbi_asprintf("%s/%s", o->d_name, n->d_name);
            if (full && (!name || strcmp(full, name) == 0)) {
                char *vdir = kbi_path_join(orgdir, n->d_name);
                DIR *vs = vdir ? opendir(vdir) : NULL;
                struct dirent *v;
                while (vs && (v = readdir(vs))) {
                    if (!kbi_str_ends(v->d_name, ".json"))
                        continue;
                    char *p = kbi_path_join(vdir, v->d_name);
                    json_error_t jerr;
                    json_t *rec = p ? json_load_file(p, 0, &jerr) : NULL;
                    if (rec)
                        fn(rec, arg);
                    json_decref(rec);
                    free(p);
                }
                if (vs)
                    closedir(vs);
                free(vdir);
            }
            free(full);
        }
        if (names)
            closedir(names);
        free(orgdir);
    }
    if (orgs)
        closedir(orgs);
    free(base);
}

static void collect_digest(json_t *rec, void *arg)
{
    const char *d = json_string_value(json_object_get(rec, "source_digest"));
    if (d)
        kbi_strv_push(arg, d);
}

int kbi_cache_kept_blobs(kb_strv *out, kb_cache *c)
{
    each_record(c, NULL, collect_digest, out);
    return 0;
}

typedef struct find_best {
    kb_constraint *constraint;
    kb_semver best;
    char *version;
    char *digest;
    kb_strv seen;
} find_best;

static void consider(json_t *rec, void *arg)
{
    find_best *f = arg;
    const char *v = json_string_value(json_object_get(rec, "version"));
    const char *d = json_string_value(json_object_get(rec, "source_digest"));
    kb_semver sv;
    if (!v || !d || kbi_semver_parse(NULL, &sv, v) != 0)
        return;
    kbi_strv_push(&f->seen, v);
    if (!kbi_constraint_match(f->constraint, &sv))
        return;
    if (f->version && kbi_semver_cmp(&sv, &f->best) <= 0)
        return;
    free(f->version);
    free(f->digest);
    f->version = kbi_strdup(v);
    f->digest = kbi_strdup(d);
    f->best = sv;
}

int kbi_sources_find(char **version_out, char **digest_out, kb_cache *cache, const char *name,
                     const char *constraint_text)
{
    *version_out = *digest_out = NULL;
    find_best f = {0};
    int rc = kbi_constraint_parse(cache->ctx, &f.constraint, constraint_text);
    if (rc)
        return rc;
    each_record(cache, name, consider, &f);
    kbi_constraint_free(f.constraint);
    if (!f.version) {
        kb_buf have = KB_BUF_INIT;
        kbi_strv_sort(&f.seen);
        for (size_t i = 0; i < f.seen.len; i++)
            kbi_buf_printf(&have, "%s%s", i ? ", " : "", f.seen.items[i]);
        rc = kbi_error_set(cache->ctx, KB_ERR_NOT_FOUND,
                           "offline: no fetched source of %s matches '%s' (%s); run 'kbpkg fetch "
                           "--source %s' while online",
                           name, constraint_text, f.seen.len ? have.data : "none fetched", name);
        kbi_buf_free(&have);
        kbi_strv_free(&f.seen);
        return rc;
    }
    kbi_strv_free(&f.seen);
    *version_out = f.version;
    *digest_out = f.digest;
    return 0;
}
