/* kb_farm: build and publish every target of many packages that the registry does not hold yet,
 * deciding by build key before building anything. */
#include "publish/publish.h"
#include "registry/pkgindex.h"
#include "kbpkg/trust.h"
#include "kbpkg/registry.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

typedef struct farm_row {
    char *package;
    char *version;
    char *target;
    const char *status; /* static */
    char *message;
} farm_row;

struct kb_farm_report {
    farm_row *rows;
    size_t count;
};

#define FARM_PUBLISHED "published"
#define FARM_PRESENT "already there"
#define FARM_SKIPPED "skipped"
#define FARM_FAILED "failed"

static int row_add(kb_farm_report *r, const char *package, const char *version, const char *target,
                   const char *status, const char *message)
{
    farm_row *n = realloc(r->rows, (r->count + 1) * sizeof(*r->rows));
    if (!n)
        return KB_ERR_NOMEM;
    r->rows = n;
    farm_row *row = &n[r->count++];
    row->package = kb_strdup(package);
    row->version = kb_strdup(version);
    row->target = kb_strdup(target);
    row->status = status;
    row->message = kb_strdup(message);
    return row->package && row->target ? 0 : KB_ERR_NOMEM;
}

/* ---- finding packages ---- */

static bool skipped_folder(const char *name)
{
    return name[0] == '.' || kb_str_starts(name, "build") || strcmp(name, "dist") == 0;
}

/* A folder holding kernel.yaml is a package (not searched further); others are searched. */
static int find_packages(kb_ctx *ctx, kb_strv *out, const char *path, unsigned depth)
{
    char *yaml = kb_path_join(path, "kernel.yaml");
    if (!yaml)
        return kb_error_oom(ctx);
    bool is_pkg = kb_path_exists(yaml);
    free(yaml);
    if (is_pkg)
        return kb_strv_push(out, path) ? kb_error_oom(ctx) : 0;
    if (depth > 16)
        return 0; /* a symlink loop or an absurd tree: nothing sensible below */
    DIR *d = opendir(path);
    if (!d)
        return depth == 0 ? kb_error_set_path(ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                              "%s: not a package or a folder of packages", path)
                          : 0;
    kb_strv subs = KB_STRV_INIT;
    int rc = 0;
    struct dirent *ent;
    while (!rc && (ent = readdir(d)) != NULL) {
        if (skipped_folder(ent->d_name))
            continue;
        char *sub = kb_path_join(path, ent->d_name);
        if (!sub)
            rc = kb_error_oom(ctx);
        else if (kb_is_dir(sub))
            rc = kb_strv_push_owned(&subs, sub) ? kb_error_oom(ctx) : 0;
        else
            free(sub);
    }
    closedir(d);
    kb_strv_sort(&subs); /* readdir order differs between file systems */
    for (size_t i = 0; !rc && i < subs.len; i++)
        rc = find_packages(ctx, out, subs.items[i], depth + 1);
    kb_strv_free(&subs);
    return rc;
}

/* ---- one package ---- */

typedef struct farm_pkg {
    kb_manifest *m;
    char version[160];
    char source_digest[65];
    kb_toolchains tcs;
    kb_plan plan;
    char **keys;       /* build key per plan item, NULL when skipped */
    kb_pkg_index *idx; /* the registry's index of this version, NULL when none */
} farm_pkg;

static void farm_pkg_free(farm_pkg *f)
{
    for (size_t i = 0; f->keys && i < f->plan.count; i++)
        free(f->keys[i]);
    free(f->keys);
    kb_pkg_index_free(f->idx);
    kb_plan_free(&f->plan);
    kb_toolchains_free(&f->tcs);
    kb_manifest_free(f->m);
}

static unsigned declared_backends(const kb_manifest *m)
{
    unsigned mask = 0;
    for (unsigned b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++)
        if (m->backends[b].present)
            mask |= 1u << b;
    return mask;
}

/* The build key of every buildable target, computed as the builder does, without building. */
static int compute_keys(kb_ctx *ctx, farm_pkg *f)
{
    f->keys = calloc(f->plan.count + 1, sizeof(*f->keys));
    if (!f->keys)
        return kb_error_oom(ctx);
    for (size_t i = 0; i < f->plan.count; i++) {
        const kb_plan_item *it = &f->plan.items[i];
        if (it->skip)
            continue;
        char hex[65];
        if (kb_target_build_key(hex, NULL, f->m, it, f->source_digest) ||
            !(f->keys[i] = kb_strdup(hex)))
            return kb_error_oom(ctx);
    }
    return 0;
}

static int load_pkg(kb_ctx *ctx, farm_pkg *f, const char *dir, kb_registry *r)
{
    memset(f, 0, sizeof(*f));
    int rc = kb_manifest_load(ctx, &f->m, dir, true);
    if (rc)
        return rc;
    kb_pkg_version(&f->m->version, f->version, sizeof(f->version));
    char arch[16], os[16], level[16];
    kb_host_platform(arch, sizeof(arch), os, sizeof(os));
    kb_host_cpu_level(ctx, level, sizeof(level));
    kb_plan_host host = {arch, os, level};
    rc = kb_toolchains_discover_some(ctx, &f->tcs, declared_backends(f->m));
    if (!rc)
        rc = kb_plan_make(ctx, &f->plan, f->m, &f->tcs, &host, NULL, 0);
    if (!rc)
        rc = kb_source_digest(ctx, f->source_digest, f->m);
    if (!rc)
        rc = compute_keys(ctx, f);
    if (!rc) {
        rc = kb_pkg_index_fetch(&f->idx, r, f->m->name, f->version, NULL);
        if (rc == KB_ERR_NOT_FOUND) { /* never published: everything is new */
            kb_ctx_clear_error(ctx);
            rc = 0;
        }
    }
    return rc;
}

static bool key_present(const kb_pkg_index *idx, const char *target, const char *key)
{
    const kb_pkg_entry *e = kb_pkg_index_find(idx, target);
    return e && e->build_key && strcmp(e->build_key, key) == 0;
}

static char *farm_out_dir(kb_ctx *ctx, const kb_farm_options *o, const farm_pkg *f)
{
    char *pkg = kb_strdup(f->m->name);
    char *slash = pkg ? strchr(pkg, '/') : NULL;
    if (slash)
        *slash = '-';
    char *dir = NULL;
    if (pkg && o->out_dir)
        dir = kb_asprintf("%s/%s-%s", o->out_dir, pkg, f->version);
    else if (pkg)
        dir = kb_asprintf("%s/farm/%s-%s", kb_config_str(ctx, "cache.dir"), pkg, f->version);
    free(pkg);
    return dir;
}

/* Build the targets in want (exact ids) and publish them with the source, in one index merge. */
static int build_and_publish(kb_ctx *ctx, kb_farm_report *rep, farm_pkg *f, kb_registry *r,
                             const kb_strv *want, const kb_farm_options *o)
{
    char *out_dir = farm_out_dir(ctx, o, f);
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    bo.targets = (const char *const *)want->items;
    bo.target_count = want->len;
    bo.jobs = o->jobs;
    bo.out_dir = out_dir;
    bo.no_source_artifact = 1;
    kb_build_result *res = NULL;
    kb_pub_artifact *arts = calloc(want->len + 2, sizeof(*arts));
    kb_publish_item *items = calloc(want->len + 2, sizeof(*items));
    kb_publish_status *st = calloc(want->len + 2, sizeof(*st));
    size_t n = 0;
    int rc = (!out_dir || !arts || !items || !st) ? kb_error_oom(ctx) : 0;
    if (!rc && kb_build(ctx, &res, f->m->dir, &bo) != 0) {
        /* The plan could not run at all: every wanted target fails with that reason. */
        for (size_t i = 0; !rc && i < want->len; i++)
            rc = row_add(rep, f->m->name, f->version, want->items[i], FARM_FAILED,
                         kb_ctx_last_error(ctx)->message)
                     ? kb_error_oom(ctx)
                     : 0;
    }
    for (size_t i = 0; !rc && res && i < res->count; i++) {
        const kb_build_target_result *t = &res->targets[i];
        if (t->status == KB_BUILD_BUILT &&
            kb_pub_artifact_load(&arts[n], ctx, t->artifact, f->m->name, f->version, t->target) ==
                0)
            n++;
        else
            rc = row_add(rep, f->m->name, f->version, t->target, FARM_FAILED,
                         t->status == KB_BUILD_BUILT ? kb_ctx_last_error(ctx)->message : t->message)
                     ? kb_error_oom(ctx)
                     : 0;
    }
    size_t built = n;
    if (!rc && built &&
        !(rc = kb_pub_source_artifact(&arts[n], ctx, f->m, f->version, f->source_digest, out_dir)))
        n++;
    for (size_t i = 0; !rc && i < n; i++)
        items[i] =
            (kb_publish_item){arts[i].path, arts[i].target, arts[i].build_key, arts[i].config_json};
    char *digest = NULL;
    int prc = (!rc && built) ? kb_pkg_publish(r, f->m->name, f->version, f->m->summary, items, n,
                                              false, st, &digest)
                             : 0;
    if (!rc && !prc && built)
        prc = kb_publish_sign_index(ctx, r, f->m->name, f->version, digest);
    /* A refused publish (a target or the source changed without a new version) fails every
     * target of this package with the registry's reason; the next package still runs. */
    for (size_t i = 0; !rc && i < built; i++)
        rc =
            row_add(rep, f->m->name, f->version, arts[i].target, prc ? FARM_FAILED : FARM_PUBLISHED,
                    prc ? kb_ctx_last_error(ctx)->message : digest)
                ? kb_error_oom(ctx)
                : 0;
    for (size_t i = 0; i < n; i++)
        kb_pub_artifact_clear(&arts[i]);
    free(digest);
    free(arts);
    free(items);
    free(st);
    free(out_dir);
    kb_build_result_free(res);
    return rc;
}

/* Rows for one package; only out-of-memory and the like return non-zero. */
static int farm_one(kb_ctx *ctx, kb_farm_report *rep, const char *dir, kb_registry *r,
                    const kb_farm_options *o)
{
    farm_pkg f;
    int rc = load_pkg(ctx, &f, dir, r);
    if (rc) {
        const char *who = f.m ? f.m->name : dir;
        rc = row_add(rep, who, f.m ? f.version : NULL, "-", FARM_FAILED,
                     kb_ctx_last_error(ctx)->message)
                 ? kb_error_oom(ctx)
                 : 0;
        farm_pkg_free(&f);
        return rc;
    }
    kb_strv want = KB_STRV_INIT;
    for (size_t i = 0; !rc && i < f.plan.count; i++) {
        const kb_plan_item *it = &f.plan.items[i];
        if (it->skip)
            rc = row_add(rep, f.m->name, f.version, it->target, FARM_SKIPPED, it->skip);
        else if (key_present(f.idx, it->target, f.keys[i]))
            rc = row_add(rep, f.m->name, f.version, it->target, FARM_PRESENT, f.keys[i]);
        else
            rc = kb_strv_push(&want, it->target);
        rc = rc ? kb_error_oom(ctx) : 0;
    }
    if (!rc && want.len)
        rc = build_and_publish(ctx, rep, &f, r, &want, o);
    kb_strv_free(&want);
    farm_pkg_free(&f);
    return rc;
}

static int cmp_rows(const void *a, const void *b)
{
    const farm_row *x = a, *y = b;
    int c = strcmp(x->package, y->package);
    return c ? c : strcmp(x->target, y->target);
}

KB_EXTERN int kb_farm(kb_ctx *ctx, kb_farm_report **out, const char *const *paths, size_t count,
                      const kb_farm_options *options)
{
    kb_farm_options defaults = KB_FARM_OPTIONS_INIT;
    const kb_farm_options *o = options ? options : &defaults;
    *out = NULL;
    if (o->version != KB_FARM_OPTIONS_VERSION)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_farm: options version %u, expected %u",
                            o->version, KB_FARM_OPTIONS_VERSION);
    if (count == 0)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_farm: no folder given");
    kb_strv pkgs = KB_STRV_INIT;
    int rc = 0;
    for (size_t i = 0; !rc && i < count; i++)
        rc = find_packages(ctx, &pkgs, paths[i], 0);
    kb_registry *r = NULL;
    if (!rc)
        rc = kb_trust_registry_open(&r, ctx, o->registry);
    kb_farm_report *rep = rc ? NULL : calloc(1, sizeof(*rep));
    if (!rc && !rep)
        rc = kb_error_oom(ctx);
    for (size_t i = 0; !rc && i < pkgs.len; i++)
        rc = farm_one(ctx, rep, pkgs.items[i], r, o);
    kb_registry_free(r);
    kb_strv_free(&pkgs);
    if (rc) {
        kb_farm_report_free(rep);
        return rc;
    }
    if (rep->count > 1)
        qsort(rep->rows, rep->count, sizeof(*rep->rows), cmp_rows);
    kb_ctx_clear_error(ctx); /* failures live in the rows */
    *out = rep;
    return 0;
}

KB_EXTERN void kb_farm_report_free(kb_farm_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->count; i++) {
        free(r->rows[i].package);
        free(r->rows[i].version);
        free(r->rows[i].target);
        free(r->rows[i].message);
    }
    free(r->rows);
    free(r);
}

KB_EXTERN size_t kb_farm_report_count(const kb_farm_report *r)
{
    return r ? r->count : 0;
}

KB_EXTERN int kb_farm_report_row(const char **package, const char **version, const char **target,
                                 const char **status, const char **message, const kb_farm_report *r,
                                 size_t index)
{
    if (!r || index >= r->count)
        return KB_ERR_NOT_FOUND;
    const farm_row *row = &r->rows[index];
    if (package)
        *package = row->package;
    if (version)
        *version = row->version;
    if (target)
        *target = row->target;
    if (status)
        *status = row->status;
    if (message)
        *message = row->message;
    return 0;
}

static size_t count_status(const kb_farm_report *r, const char *status)
{
    size_t n = 0;
    for (size_t i = 0; r && i < r->count; i++)
        n += strcmp(r->rows[i].status, status) == 0;
    return n;
}

KB_EXTERN size_t kb_farm_report_published(const kb_farm_report *r)
{
    return count_status(r, FARM_PUBLISHED);
}

KB_EXTERN size_t kb_farm_report_present(const kb_farm_report *r)
{
    return count_status(r, FARM_PRESENT);
}

KB_EXTERN size_t kb_farm_report_skipped(const kb_farm_report *r)
{
    return count_status(r, FARM_SKIPPED);
}

KB_EXTERN size_t kb_farm_report_failed(const kb_farm_report *r)
{
    return count_status(r, FARM_FAILED);
}
