/* kb_farm: build and publish every target of many packages that the registry does not hold yet,
 * deciding by build key before building anything; and its engine-neutral parts for a
 * distributed farm: plan (farm/farm_plan.c), build --stage and merge. */
#include "farm/farm.h"
#include "registry/pkgindex.h"
#include "kbpkg/trust.h"
#include "kbpkg/registry.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

struct kb_farm_report {
    kb_report_rows rows;
};

static int row_add(kb_farm_report *r, const char *package, const char *version, const char *target,
                   kb_status status, const char *message)
{
    kb_report_row row = {.package = package,
                         .version = version,
                         .target = target,
                         .status = status,
                         .message = message};
    return kbi_report_rows_add(&r->rows, &row);
}

/* ---- finding packages ---- */

static bool skipped_folder(const char *name)
{
    return name[0] == '.' || kbi_str_starts(name, "build") || strcmp(name, "dist") == 0;
}

/* A folder holding kernel.yaml is a package (not searched further); others are searched. */
int kbi_farm_find_packages(kb_ctx *ctx, kb_strv *out, const char *path, unsigned depth)
{
    char *yaml = kbi_path_join(path, "kernel.yaml");
    if (!yaml)
        return kbi_error_oom(ctx);
    bool is_pkg = kbi_path_exists(yaml);
    free(yaml);
    if (is_pkg)
        return kbi_strv_push(out, path) ? kbi_error_oom(ctx) : 0;
    if (depth > 16)
        return 0; /* a symlink loop or an absurd tree: nothing sensible below */
    DIR *d = opendir(path);
    if (!d)
        return depth == 0 ? kbi_error_set_path(ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                               "%s: not a package or a folder of packages", path)
                          : 0;
    kb_strv subs = KB_STRV_INIT;
    int rc = 0;
    struct dirent *ent;
    while (!rc && (ent = readdir(d)) != NULL) {
        if (skipped_folder(ent->d_name))
            continue;
        char *sub = kbi_path_join(path, ent->d_name);
        if (!sub)
            rc = kbi_error_oom(ctx);
        else if (kbi_is_dir(sub))
            rc = kbi_strv_push_owned(&subs, sub) ? kbi_error_oom(ctx) : 0;
        else
            free(sub);
    }
    closedir(d);
    kbi_strv_sort(&subs); /* readdir order differs between file systems */
    for (size_t i = 0; !rc && i < subs.len; i++)
        rc = kbi_farm_find_packages(ctx, out, subs.items[i], depth + 1);
    kbi_strv_free(&subs);
    return rc;
}

/* ---- one package ---- */

void kbi_farm_pkg_free(kb_farm_pkg *f)
{
    for (size_t i = 0; f->keys && i < f->plan.count; i++)
        free(f->keys[i]);
    free(f->keys);
    kbi_pkg_index_free(f->idx);
    kbi_plan_free(&f->plan);
    kb_manifest_free(f->m);
    memset(f, 0, sizeof(*f));
}

unsigned kbi_farm_backends(const kb_manifest *m)
{
    unsigned mask = 0;
    for (unsigned b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++)
        if (m->backends[b].present)
            mask |= 1u << b;
    return mask;
}

/* The build key of every buildable target, computed as the builder does, without building. A
 * toolchain without an id (a pool that did not declare one) leaves the key NULL. */
static int compute_keys(kb_ctx *ctx, kb_farm_pkg *f)
{
    f->keys = calloc(f->plan.count + 1, sizeof(*f->keys));
    if (!f->keys)
        return kbi_error_oom(ctx);
    for (size_t i = 0; i < f->plan.count; i++) {
        const kb_plan_item *it = &f->plan.items[i];
        if (it->skip || !it->tc->id)
            continue;
        char hex[65];
        if (kbi_target_build_key(hex, NULL, f->m, it, f->inputs_digest) ||
            !(f->keys[i] = kbi_strdup(hex)))
            return kbi_error_oom(ctx);
    }
    return 0;
}

/* Make sure the toolchains of the backends in mask are in tcs, discovering only those not
 * looked for yet: a farm probes nvcc and hipcc once, not once per package. */
int kbi_farm_toolchains(kb_ctx *ctx, kb_toolchains *tcs, unsigned *have, unsigned mask)
{
    unsigned missing = mask & ~*have;
    if (!missing)
        return 0;
    kb_toolchains more;
    int rc = kbi_toolchains_discover_some(ctx, &more, missing);
    if (rc)
        return rc;
    for (unsigned b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++) {
        if (!(missing & (1u << b)))
            continue;
        tcs->tc[b] = more.tc[b]; /* moved: more no longer owns it */
        memset(&more.tc[b], 0, sizeof(more.tc[b]));
    }
    kbi_toolchains_free(&more);
    *have |= missing;
    return 0;
}

int kbi_farm_pkg_load(kb_ctx *ctx, kb_farm_pkg *f, const char *dir, kb_registry *r,
                      const kb_toolchains *tcs, const char *const *filters, size_t filter_count)
{
    memset(f, 0, sizeof(*f));
    int rc = kbi_manifest_load(ctx, &f->m, dir, true);
    if (rc)
        return rc;
    kbi_pkg_version(&f->m->version, f->version, sizeof(f->version));
    char arch[16], os[16], level[16];
    kbi_host_platform(arch, sizeof(arch), os, sizeof(os));
    kbi_host_cpu_level(ctx, level, sizeof(level));
    kb_plan_host host = {arch, os, level};
    rc = kbi_plan_make(ctx, &f->plan, f->m, tcs, &host, filters, filter_count);
    if (!rc)
        rc = kbi_source_digest(ctx, f->source_digest, f->m);
    if (!rc)
        rc = kbi_build_inputs_digest(ctx, f->inputs_digest, f->m);
    if (!rc)
        rc = compute_keys(ctx, f);
    if (!rc && r) {
        rc = kbi_pkg_index_fetch(&f->idx, r, f->m->name, f->version, NULL);
        if (rc == KB_ERR_NOT_FOUND) { /* never published: everything is new */
            kb_ctx_clear_error(ctx);
            rc = 0;
        }
    }
    return rc;
}

/* The published source of this version differs from the folder's: one clear reason, or NULL. */
char *kbi_farm_source_changed(const kb_farm_pkg *f)
{
    const kb_pkg_entry *src = kbi_pkg_index_find(f->idx, KB_SOURCE_TARGET);
    if (!src || !src->build_key || strcmp(src->build_key, f->source_digest) == 0)
        return NULL;
    return kbi_asprintf("the sources of %s@%s changed since %s was published (published source "
                        "%.12s, this folder %.12s): bump the version to publish them; "
                        "nothing of this package was built",
                        f->m->name, f->version, f->version, src->build_key, f->source_digest);
}

bool kbi_farm_key_present(const kb_pkg_index *idx, const char *target, const char *key)
{
    const kb_pkg_entry *e = kbi_pkg_index_find(idx, target);
    return key && e && e->build_key && strcmp(e->build_key, key) == 0;
}

char *kbi_farm_out_dir(kb_ctx *ctx, const char *out_root, const kb_farm_pkg *f)
{
    char *pkg = kbi_strdup(f->m->name);
    char *slash = pkg ? strchr(pkg, '/') : NULL;
    if (slash)
        *slash = '-';
    char *dir = NULL;
    if (pkg && out_root)
        dir = kbi_asprintf("%s/%s-%s", out_root, pkg, f->version);
    else if (pkg)
        dir = kbi_asprintf("%s/farm/%s-%s", kbi_config_str(ctx, "cache.dir"), pkg, f->version);
    free(pkg);
    return dir;
}

/* Rows "failed" for every target in want, with the ctx's last error. */
static int fail_all(kb_ctx *ctx, kb_farm_report *rep, const kb_farm_pkg *f, const kb_strv *want)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < want->len; i++)
        rc = row_add(rep, f->m->name, f->version, want->items[i], KB_STATUS_FAILED,
                     kb_ctx_last_error(ctx)->message)
                 ? kbi_error_oom(ctx)
                 : 0;
    return rc;
}

/* Build the targets in want (exact ids) into arts, then the source artifact after them; *built
 * counts the targets that built (a failure is a row). Returns non-zero only for OOM and such. */
static int build_targets(kb_ctx *ctx, kb_farm_report *rep, kb_farm_pkg *f, const kb_strv *want,
                         const kb_farm_run *run, kb_pub_artifact *arts, size_t *built)
{
    *built = 0;
    char *out_dir = kbi_farm_out_dir(ctx, run->out_dir, f);
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    bo.targets = (const char *const *)want->items;
    bo.target_count = want->len;
    bo.jobs = run->jobs;
    bo.out_dir = out_dir;
    bo.no_source_artifact = 1;
    kb_build_result *res = NULL;
    int rc = out_dir ? 0 : kbi_error_oom(ctx);
    if (!rc && kbi_build_with(ctx, &res, f->m->dir, &bo, &run->tcs) != 0)
        rc = fail_all(ctx, rep, f, want); /* the plan could not run at all */
    size_t n = 0;
    for (size_t i = 0; !rc && res && i < res->count; i++) {
        const kb_build_target_result *t = &res->targets[i];
        if (t->status == KB_BUILD_BUILT &&
            kbi_pub_artifact_load(&arts[n], ctx, t->artifact, f->m->name, f->version, t->target) ==
                0)
            n++;
        else
            rc = row_add(rep, f->m->name, f->version, t->target, KB_STATUS_FAILED,
                         t->status == KB_BUILD_BUILT ? kb_ctx_last_error(ctx)->message : t->message)
                     ? kbi_error_oom(ctx)
                     : 0;
    }
    *built = n;
    if (!rc && n &&
        (rc = kbi_pub_source_artifact(&arts[n], ctx, f->m, f->version, f->source_digest, out_dir)))
        *built = 0; /* arts[0..n) stay for the caller to clear */
    for (size_t i = n; rc && i-- > 0;)
        kbi_pub_artifact_clear(&arts[i]);
    free(out_dir);
    kb_build_result_free(res);
    return rc;
}

/* Publish (stage, merge, sign) or only stage what build_targets made: one row per target. */
static int ship(kb_ctx *ctx, kb_farm_report *rep, kb_farm_pkg *f, kb_registry *r,
                kb_pub_artifact *arts, size_t built, bool stage_only)
{
    kb_publish_item *items = calloc(built + 2, sizeof(*items));
    kb_publish_status *st = calloc(built + 2, sizeof(*st));
    if (!items || !st) {
        free(items);
        free(st);
        return kbi_error_oom(ctx);
    }
    for (size_t i = 0; i <= built; i++)
        items[i] =
            (kb_publish_item){arts[i].path, arts[i].target, arts[i].build_key, arts[i].config_json};
    char *digest = NULL;
    int prc;
    if (stage_only) {
        prc = kbi_pkg_stage(r, f->m->name, f->version, f->m->summary, items, built + 1, st);
        for (unsigned again = 0; kbi_farm_transient(prc) && again < 3; again++)
            prc = kbi_pkg_stage(r, f->m->name, f->version, f->m->summary, items, built + 1, st);
    } else {
        prc = kbi_pkg_publish(r, f->m->name, f->version, f->m->summary, items, built + 1, false, st,
                              &digest);
        if (!prc)
            prc = kbi_publish_sign_index(ctx, r, f->m->name, f->version, digest);
    }
    /* A refused publish fails every target of this package with the registry's reason; the
     * next package still runs. */
    int rc = 0;
    for (size_t i = 0; !rc && i < built; i++) {
        kb_status status = prc          ? KB_STATUS_FAILED
                           : stage_only ? KB_STATUS_STAGED
                                        : KB_STATUS_PUBLISHED;
        rc = row_add(rep, f->m->name, f->version, arts[i].target, status,
                     prc          ? kb_ctx_last_error(ctx)->message
                     : stage_only ? arts[i].build_key
                                  : digest)
                 ? kbi_error_oom(ctx)
                 : 0;
    }
    free(digest);
    free(items);
    free(st);
    return rc;
}

static int build_and_ship(kb_ctx *ctx, kb_farm_report *rep, kb_farm_pkg *f, kb_registry *r,
                          const kb_strv *want, const kb_farm_run *run)
{
    kb_pub_artifact *arts = calloc(want->len + 2, sizeof(*arts));
    size_t built = 0;
    int rc = arts ? build_targets(ctx, rep, f, want, run, arts, &built) : kbi_error_oom(ctx);
    if (!rc && built)
        rc = ship(ctx, rep, f, r, arts, built, run->stage_only);
    for (size_t i = 0; built && i <= built; i++)
        kbi_pub_artifact_clear(&arts[i]);
    free(arts);
    return rc;
}

/* One row about the whole package (target "-"). */
static int package_row(kb_ctx *ctx, kb_farm_report *rep, const kb_farm_pkg *f, const char *dir,
                       kb_status status, const char *message)
{
    return row_add(rep, f->m ? f->m->name : dir, f->m ? f->version : NULL, "-", status, message)
               ? kbi_error_oom(ctx)
               : 0;
}

/* Rows for one package; only out-of-memory and the like return non-zero. filter: one target
 * (farm build) or NULL (every declared one). */
static int farm_one(kb_ctx *ctx, kb_farm_report *rep, const char *dir, kb_farm_run *run,
                    const char *filter)
{
    kb_farm_pkg f;
    kb_manifest *peek = NULL;
    int rc = kbi_manifest_load(ctx, &peek, dir, true);
    if (!rc)
        rc = kbi_farm_toolchains(ctx, &run->tcs, &run->have, kbi_farm_backends(peek));
    kb_manifest_free(peek);
    if (!rc)
        rc = kbi_farm_pkg_load(ctx, &f, dir, run->r, &run->tcs, filter ? &filter : NULL,
                               filter ? 1 : 0);
    else
        memset(&f, 0, sizeof(f));
    if (rc) {
        rc = package_row(ctx, rep, &f, dir, KB_STATUS_FAILED, kb_ctx_last_error(ctx)->message);
        kbi_farm_pkg_free(&f);
        return rc;
    }
    char *changed = kbi_farm_source_changed(&f);
    if (changed) {
        rc = package_row(ctx, rep, &f, dir, KB_STATUS_FAILED, changed);
        free(changed);
        kbi_farm_pkg_free(&f);
        return rc;
    }
    kb_strv want = KB_STRV_INIT;
    for (size_t i = 0; !rc && i < f.plan.count; i++) {
        const kb_plan_item *it = &f.plan.items[i];
        if (it->skip)
            rc = row_add(rep, f.m->name, f.version, it->target, KB_STATUS_SKIPPED, it->skip);
        else if (kbi_farm_key_present(f.idx, it->target, f.keys[i]))
            rc = row_add(rep, f.m->name, f.version, it->target, KB_STATUS_ALREADY_THERE, f.keys[i]);
        else
            rc = kbi_strv_push(&want, it->target);
        rc = rc ? kbi_error_oom(ctx) : 0;
    }
    if (!rc && want.len)
        rc = build_and_ship(ctx, rep, &f, run->r, &want, run);
    kbi_strv_free(&want);
    kbi_farm_pkg_free(&f);
    return rc;
}

bool kbi_farm_transient(int rc)
{
    return rc == KB_ERR_REGISTRY || rc == KB_ERR_NETWORK || rc == KB_ERR_DIGEST;
}

static int cmp_rows(const void *a, const void *b)
{
    const kb_report_row *x = a, *y = b;
    int c = strcmp(x->package, y->package);
    return c ? c : strcmp(x->target, y->target);
}

int kbi_farm_check_options(kb_ctx *ctx, const kb_farm_options *o, const char *fn)
{
    if (o->version != KB_FARM_OPTIONS_VERSION && o->version != 1)
        return kbi_error_set(ctx, KB_ERR_INVALID, "%s: options version %u, expected %u", fn,
                             o->version, KB_FARM_OPTIONS_VERSION);
    return 0;
}

static void run_init(kb_farm_run *run, const kb_farm_options *o)
{
    memset(run, 0, sizeof(*run));
    run->jobs = o->jobs;
    run->out_dir = o->out_dir;
    run->stage_only = o->version >= 2 && o->stage_only;
}

static void run_free(kb_farm_run *run)
{
    kb_registry_free(run->r);
    kbi_toolchains_free(&run->tcs);
}

static int finish_report(kb_ctx *ctx, kb_farm_report **out, kb_farm_report *rep, int rc)
{
    if (rc) {
        kb_farm_report_free(rep);
        return rc;
    }
    if (rep->rows.len > 1)
        qsort(rep->rows.items, rep->rows.len, sizeof(*rep->rows.items), cmp_rows);
    kb_ctx_clear_error(ctx); /* failures live in the rows */
    *out = rep;
    return 0;
}

KB_EXTERN int kb_farm(kb_farm_report **out, kb_ctx *ctx, const char *const *paths, size_t count,
                      const kb_farm_options *options)
{
    kb_farm_options defaults = KB_FARM_OPTIONS_INIT;
    const kb_farm_options *o = options ? options : &defaults;
    *out = NULL;
    int rc = kbi_farm_check_options(ctx, o, "kb_farm");
    if (rc)
        return rc;
    if (count == 0)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_farm: no folder given");
    kb_strv pkgs = KB_STRV_INIT;
    for (size_t i = 0; !rc && i < count; i++)
        rc = kbi_farm_find_packages(ctx, &pkgs, paths[i], 0);
    kb_farm_run run;
    run_init(&run, o);
    if (!rc)
        rc = kb_trust_registry_open(&run.r, ctx, o->registry);
    kb_farm_report *rep = rc ? NULL : calloc(1, sizeof(*rep));
    if (!rc && !rep)
        rc = kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < pkgs.len; i++)
        rc = farm_one(ctx, rep, pkgs.items[i], &run, NULL);
    run_free(&run);
    kbi_strv_free(&pkgs);
    return finish_report(ctx, out, rep, rc);
}

KB_EXTERN int kb_farm_build(kb_farm_report **out, kb_ctx *ctx, const char *dir, const char *target,
                            const kb_farm_options *options)
{
    kb_farm_options defaults = KB_FARM_OPTIONS_INIT;
    const kb_farm_options *o = options ? options : &defaults;
    *out = NULL;
    int rc = kbi_farm_check_options(ctx, o, "kb_farm_build");
    if (rc)
        return rc;
    if (!dir || !target || !*target)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_farm_build: a package folder and a target");
    kb_farm_run run;
    run_init(&run, o);
    rc = kb_trust_registry_open(&run.r, ctx, o->registry);
    kb_farm_report *rep = rc ? NULL : calloc(1, sizeof(*rep));
    if (!rc && !rep)
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = farm_one(ctx, rep, dir, &run, target);
    run_free(&run);
    return finish_report(ctx, out, rep, rc);
}

/* "org/name@version" into its parts (exact version: a merge is of one version). */
static int split_ref(kb_ctx *ctx, const char *ref, char **name, char **version)
{
    const char *at = ref ? strchr(ref, '@') : NULL;
    kb_semver v;
    if (!at || at == ref || kbi_semver_parse(NULL, &v, at + 1) != 0)
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "'%s': farm merge takes org/name@version (an exact version)",
                             ref ? ref : "");
    *name = kbi_strndup(ref, (size_t)(at - ref));
    *version = kbi_strdup(at + 1);
    return *name && *version ? 0 : kbi_error_oom(ctx);
}

static int merge_rows(kb_ctx *ctx, kb_farm_report *rep, const char *name, const char *version,
                      const kb_pkg_merge_result *m)
{
    int rc = 0;
    for (size_t i = 0; !rc && i < m->conflicts.len; i++) {
        kbi_event_emit(ctx, KB_EVENT_WARNING, name, "%s", m->conflicts.items[i]);
        rc = row_add(rep, name, version, "-", KB_STATUS_CONFLICT, m->conflicts.items[i]);
    }
    if (!rc)
        rc = row_add(rep, name, version, "-", m->written ? KB_STATUS_MERGED : KB_STATUS_UNCHANGED,
                     m->index_digest);
    return rc ? kbi_error_oom(ctx) : 0;
}

KB_EXTERN int kb_farm_merge(kb_farm_report **out, kb_ctx *ctx, const char *ref,
                            const kb_farm_options *options)
{
    kb_farm_options defaults = KB_FARM_OPTIONS_INIT;
    const kb_farm_options *o = options ? options : &defaults;
    *out = NULL;
    char *name = NULL, *version = NULL;
    kb_registry *r = NULL;
    kb_pkg_merge_result m = {0};
    int rc = kbi_farm_check_options(ctx, o, "kb_farm_merge");
    if (!rc)
        rc = split_ref(ctx, ref, &name, &version);
    if (!rc)
        rc = kb_trust_registry_open(&r, ctx, o->registry);
    if (!rc)
        rc = kbi_pkg_merge(&m, r, name, version);
    if (!rc && m.written)
        rc = kbi_publish_sign_index(ctx, r, name, version, m.index_digest);
    kb_farm_report *rep = rc ? NULL : calloc(1, sizeof(*rep));
    if (!rc && !rep)
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = merge_rows(ctx, rep, name, version, &m);
    kbi_pkg_merge_result_free(&m);
    kb_registry_free(r);
    free(name);
    free(version);
    return finish_report(ctx, out, rep, rc);
}

KB_EXTERN void kb_farm_report_free(kb_farm_report *r)
{
    if (!r)
        return;
    kbi_report_rows_free(&r->rows);
    free(r);
}

KB_EXTERN size_t kb_farm_report_count(const kb_farm_report *r)
{
    return r ? r->rows.len : 0;
}

KB_EXTERN int kb_farm_report_row(const kb_report_row **row, const kb_farm_report *r, size_t index)
{
    return kbi_report_rows_get(row, r ? &r->rows : NULL, index);
}

KB_EXTERN size_t kb_farm_report_count_status(const kb_farm_report *r, kb_status status)
{
    return r ? kbi_report_rows_count_status(&r->rows, status) : 0;
}
