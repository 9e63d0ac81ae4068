/* kb_publish: push a package folder's built artifacts and its source artifact to a registry. */
#include "archive/extract.h"
#include "publish/publish.h"
#include "registry/pkgindex.h"
#include "kbpkg/trust.h"
#include "kbpkg/registry.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* kbpkg.json is a few hundred bytes; anything near this is not ours. */
#define KB_KBPKG_JSON_MAX (1024 * 1024)

struct kb_publish_report {
    char *package;
    char *version;
    char *index_digest;
    char *registry;
    bool built;
    kb_report_rows rows;
};

void kbi_pub_artifact_clear(kb_pub_artifact *a)
{
    free(a->path);
    free(a->target);
    free(a->build_key);
    free(a->config_json);
    free(a->source_digest);
    memset(a, 0, sizeof(*a));
}

static char *json_field(json_t *root, const char *key)
{
    return kbi_strdup(json_string_value(json_object_get(root, key)));
}

int kbi_pub_artifact_load(kb_pub_artifact *a, kb_ctx *ctx, const char *path, const char *name,
                          const char *version, const char *target)
{
    memset(a, 0, sizeof(*a));
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_extract_read_member(&b, ctx, path, "kbpkg.json", KB_KBPKG_JSON_MAX);
    if (rc) {
        kbi_error_prefix(ctx, "%s", path);
        kbi_buf_free(&b);
        return rc;
    }
    json_error_t jerr;
    json_t *root = json_loadb(b.data, b.len, 0, &jerr);
    const char *jn = json_string_value(json_object_get(root, "name"));
    const char *jv = json_string_value(json_object_get(root, "version"));
    const char *jt = json_string_value(json_object_get(root, "target"));
    if (!root)
        rc = kbi_error_set_path(ctx, KB_ERR_PARSE, path, (unsigned)jerr.line, (unsigned)jerr.column,
                                "%s: kbpkg.json: %s", path, jerr.text);
    else if (!jn || !jv || !jt || strcmp(jn, name) || strcmp(jv, version) || strcmp(jt, target))
        rc = kbi_error_set_path(ctx, KB_ERR_ARCHIVE, path, 0, 0,
                                "%s: kbpkg.json says %s@%s %s, expected %s@%s %s", path,
                                jn ? jn : "?", jv ? jv : "?", jt ? jt : "?", name, version, target);
    if (!rc) {
        a->path = kbi_strdup(path);
        a->target = kbi_strdup(target);
        a->build_key = json_field(root, "build_key");
        a->source_digest = json_field(root, "source_digest");
        a->config_json = kbi_buf_detach(&b);
        if (!a->path || !a->target || !a->config_json)
            rc = kbi_error_oom(ctx);
    }
    json_decref(root);
    kbi_buf_free(&b);
    if (rc)
        kbi_pub_artifact_clear(a);
    return rc;
}

int kbi_pub_source_artifact(kb_pub_artifact *a, kb_ctx *ctx, const kb_manifest *m,
                            const char *version, const char *source_digest, const char *out_dir)
{
    memset(a, 0, sizeof(*a));
    char hex[65];
    uint64_t size = 0;
    int rc = kbi_mkdir_p(ctx, out_dir, 0755);
    if (!rc)
        rc = kbi_write_source_artifact(ctx, &a->path, hex, &size, m, out_dir, source_digest,
                                       (int64_t)kbi_config_long(ctx, "source_date_epoch"));
    if (rc)
        return rc;
    /* The source has no kbpkg.json; its config blob says what it is, so a registry browser
     * (and kb_fetch_source) can tell without downloading the layer. */
    char *declared = NULL;
    if (kbi_manifest_declared_targets(&declared, m) != 0)
        return kbi_error_oom(ctx);
    /* declared_targets: the index records them (dev.kbpkg.declared-targets) so the resolver
     * plans a local build only for a target the package declares (docs/targets.md). */
    json_t *cfg =
        json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", m->name, "version", version, "target",
                  KB_SOURCE_TARGET, "source_digest", source_digest, "declared_targets", declared);
    free(declared);
    a->config_json = cfg ? json_dumps(cfg, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(cfg);
    a->target = kbi_strdup(KB_SOURCE_TARGET);
    a->source_digest = kbi_strdup(source_digest);
    /* The source's key is its listing digest: the farm tells a changed source under a
     * published version from the index alone, before building anything. */
    a->build_key = kbi_strdup(source_digest);
    if (!a->config_json || !a->target || !a->source_digest || !a->build_key) {
        kbi_pub_artifact_clear(a);
        return kbi_error_oom(ctx);
    }
    return 0;
}

/* ---- the report ---- */

static int report_add(kb_publish_report *r, const kb_manifest *m, const char *version,
                      const char *target, kb_status status, const char *digest, const char *message)
{
    kb_report_row row = {.package = m->name,
                         .version = version,
                         .target = target,
                         .status = status,
                         .digest = digest,
                         .message = message};
    return kbi_report_rows_add(&r->rows, &row);
}

KB_EXTERN void kb_publish_report_free(kb_publish_report *r)
{
    if (!r)
        return;
    kbi_report_rows_free(&r->rows);
    free(r->package);
    free(r->version);
    free(r->index_digest);
    free(r->registry);
    free(r);
}

KB_EXTERN const char *kb_publish_report_package(const kb_publish_report *r)
{
    return r ? r->package : NULL;
}

KB_EXTERN const char *kb_publish_report_version(const kb_publish_report *r)
{
    return r ? r->version : NULL;
}

KB_EXTERN const char *kb_publish_report_index_digest(const kb_publish_report *r)
{
    return r ? r->index_digest : NULL;
}

KB_EXTERN const char *kb_publish_report_registry(const kb_publish_report *r)
{
    return r ? r->registry : NULL;
}

KB_EXTERN int kb_publish_report_built(const kb_publish_report *r)
{
    return r && r->built;
}

KB_EXTERN size_t kb_publish_report_count(const kb_publish_report *r)
{
    return r ? r->rows.len : 0;
}

KB_EXTERN int kb_publish_report_row(const kb_report_row **row, const kb_publish_report *r,
                                    size_t index)
{
    return kbi_report_rows_get(row, r ? &r->rows : NULL, index);
}

/* ---- finding or making the artifacts ---- */

/* Everything one publish works with. */
typedef struct pub_run {
    kb_manifest *m;
    char version[160];
    char source_digest[65];
    char *out_dir;
    kb_pub_artifact *arts; /* the targets, then the source last */
    size_t count, cap;
} pub_run;

static void pub_run_free(pub_run *p)
{
    for (size_t i = 0; i < p->count; i++)
        kbi_pub_artifact_clear(&p->arts[i]);
    free(p->arts);
    free(p->out_dir);
    kb_manifest_free(p->m);
}

static int arts_push(kb_ctx *ctx, pub_run *p, kb_pub_artifact *a)
{
    if (kbi_array_grow((void **)&p->arts, &p->cap, p->count + 1, sizeof(*p->arts))) {
        kbi_pub_artifact_clear(a);
        return kbi_error_oom(ctx);
    }
    p->arts[p->count++] = *a;
    return 0;
}

/* The declared targets matching the filters, without looking for toolchains (fast). */
static int declared_targets(kb_ctx *ctx, kb_strv *out, const kb_manifest *m,
                            const kb_publish_options *o)
{
    kb_toolchains none;
    int rc = kbi_toolchains_discover_some(ctx, &none, 0);
    char arch[16], os[16], level[16];
    kbi_host_platform(arch, sizeof(arch), os, sizeof(os));
    kbi_host_cpu_level(ctx, level, sizeof(level));
    kb_plan_host host = {arch, os, level};
    kb_plan plan = {0};
    if (!rc)
        rc = kbi_plan_make(ctx, &plan, m, &none, &host, o->targets, o->target_count);
    for (size_t i = 0; !rc && i < plan.count; i++)
        rc = kbi_strv_push(out, plan.items[i].target) ? kbi_error_oom(ctx) : 0;
    kbi_plan_free(&plan);
    kbi_toolchains_free(&none);
    return rc;
}

/* Artifacts of this version in out_dir that were built from the current sources. Stale ones
 * (sources changed since) are counted, not used: publishing them would publish old code. */
static int find_built(kb_ctx *ctx, pub_run *p, const kb_strv *targets, size_t *stale)
{
    *stale = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < targets->len; i++) {
        char *name = kbi_artifact_name(p->m, targets->items[i]);
        char *path = name ? kbi_path_join(p->out_dir, name) : NULL;
        free(name);
        if (!path)
            return kbi_error_oom(ctx);
        kb_pub_artifact a;
        if (kbi_path_exists(path)) {
            rc = kbi_pub_artifact_load(&a, ctx, path, p->m->name, p->version, targets->items[i]);
            if (!rc && (!a.source_digest || strcmp(a.source_digest, p->source_digest) != 0)) {
                (*stale)++;
                kbi_pub_artifact_clear(&a);
            } else if (!rc)
                rc = arts_push(ctx, p, &a);
        }
        free(path);
    }
    return rc;
}

static int build_failed(kb_ctx *ctx, const kb_build_result *res)
{
    for (size_t i = 0; i < res->count; i++) {
        const kb_build_target_result *t = &res->targets[i];
        if (t->status == KB_BUILD_FAILED)
            return kbi_error_set(ctx, KB_ERR_BUILD,
                                 "%s@%s %s failed to build, nothing published: %s", res->package,
                                 res->version, t->target, t->message ? t->message : "");
    }
    return 0;
}

static int build_now(kb_ctx *ctx, pub_run *p, kb_publish_report *rep, const char *dir,
                     const kb_publish_options *o)
{
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    bo.targets = o->targets;
    bo.target_count = o->target_count;
    bo.jobs = o->jobs;
    bo.out_dir = p->out_dir;
    bo.no_source_artifact = 1; /* publish writes it itself, built or not */
    kb_build_result *res = NULL;
    int rc = kb_build(&res, ctx, dir, &bo);
    if (!rc)
        rc = build_failed(ctx, res);
    for (size_t i = 0; !rc && i < res->count; i++) {
        const kb_build_target_result *t = &res->targets[i];
        kb_pub_artifact a;
        if (t->status == KB_BUILD_SKIPPED)
            rc = report_add(rep, p->m, p->version, t->target, KB_STATUS_SKIPPED, NULL, t->message)
                     ? kbi_error_oom(ctx)
                     : 0;
        else if (!(rc = kbi_pub_artifact_load(&a, ctx, t->artifact, p->m->name, p->version,
                                              t->target)))
            rc = arts_push(ctx, p, &a);
    }
    kb_build_result_free(res);
    return rc;
}

static int prepare(kb_ctx *ctx, pub_run *p, kb_publish_report *rep, const char *dir,
                   const kb_publish_options *o)
{
    memset(p, 0, sizeof(*p));
    kb_strv targets = KB_STRV_INIT;
    size_t stale = 0;
    int rc = kbi_manifest_load(ctx, &p->m, dir, true);
    if (!rc) {
        kbi_pkg_version(&p->m->version, p->version, sizeof(p->version));
        p->out_dir = o->out_dir ? kbi_strdup(o->out_dir) : kbi_path_join(p->m->dir, "dist");
        rc = p->out_dir ? 0 : kbi_error_oom(ctx);
    }
    if (!rc)
        rc = kbi_source_digest(ctx, p->source_digest, p->m);
    if (!rc)
        rc = declared_targets(ctx, &targets, p->m, o);
    if (!rc)
        rc = find_built(ctx, p, &targets, &stale);
    if (!rc && p->count)
        kbi_event_emit(ctx, KB_EVENT_NOTICE, p->m->name,
                       "publishing %zu artifact(s) of %s already built in %s", p->count, p->version,
                       p->out_dir);
    else if (!rc) {
        kbi_event_emit(ctx, KB_EVENT_NOTICE, p->m->name,
                       "no current artifacts of %s in %s%s; building", p->version, p->out_dir,
                       stale ? " (the sources changed since they were built)" : "");
        rep->built = true;
        rc = build_now(ctx, p, rep, dir, o);
    }
    if (!rc && p->count == 0)
        rc = kbi_error_set(ctx, KB_ERR_TOOLCHAIN,
                           "%s@%s: no target could be built on this machine, nothing published",
                           p->m->name, p->version);
    kb_pub_artifact src;
    if (!rc &&
        !(rc = kbi_pub_source_artifact(&src, ctx, p->m, p->version, p->source_digest, p->out_dir)))
        rc = arts_push(ctx, p, &src);
    kbi_strv_free(&targets);
    return rc;
}

static kb_status row_status(kb_publish_status s)
{
    switch (s) {
    case KB_PUBLISH_SAME:
        return KB_STATUS_UNCHANGED;
    case KB_PUBLISH_REPLACED:
        return KB_STATUS_REPLACED;
    default:
        return KB_STATUS_PUBLISHED;
    }
}

/* Same canonical manifest digest as kbi_pkg_publish computes: read back from the index. */
static int fill_rows(kb_ctx *ctx, kb_publish_report *rep, kb_registry *r, const pub_run *p,
                     const kb_publish_status *st)
{
    kb_pkg_index *idx = NULL;
    int rc = kbi_pkg_index_fetch(&idx, r, p->m->name, p->version, rep->index_digest);
    for (size_t i = 0; !rc && i < p->count; i++) {
        const kb_pkg_entry *e = kbi_pkg_index_find(idx, p->arts[i].target);
        rc = report_add(rep, p->m, p->version, p->arts[i].target, row_status(st[i]),
                        e ? e->manifest_digest : NULL, NULL)
                 ? kbi_error_oom(ctx)
                 : 0;
        if (!rc)
            kbi_event_emit(ctx, KB_EVENT_PUBLISHED, p->m->name, "%s %s %s", p->version,
                           p->arts[i].target, kb_status_name(row_status(st[i])));
    }
    kbi_pkg_index_free(idx);
    return rc;
}

static int push_all(kb_ctx *ctx, kb_publish_report *rep, const pub_run *p, const char *ref,
                    bool force)
{
    kb_registry *r = NULL;
    kb_publish_item *items = calloc(p->count + 1, sizeof(*items));
    kb_publish_status *st = calloc(p->count + 1, sizeof(*st));
    int rc = (!items || !st) ? kbi_error_oom(ctx) : kb_trust_registry_open(&r, ctx, ref);
    for (size_t i = 0; !rc && i < p->count; i++)
        items[i] = (kb_publish_item){p->arts[i].path, p->arts[i].target, p->arts[i].build_key,
                                     p->arts[i].config_json};
    if (!rc)
        rc = kbi_pkg_publish(r, p->m->name, p->version, p->m->summary, items, p->count, force, st,
                             &rep->index_digest);
    if (!rc)
        rc = kbi_publish_sign_index(ctx, r, p->m->name, p->version, rep->index_digest);
    if (!rc)
        rc = fill_rows(ctx, rep, r, p, st);
    kb_registry_free(r);
    free(items);
    free(st);
    return rc;
}

KB_EXTERN int kb_publish(kb_publish_report **out, kb_ctx *ctx, const char *dir,
                         const kb_publish_options *options)
{
    kb_publish_options defaults = KB_PUBLISH_OPTIONS_INIT;
    const kb_publish_options *o = options ? options : &defaults;
    *out = NULL;
    if (o->version != KB_PUBLISH_OPTIONS_VERSION)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_publish: options version %u, expected %u",
                             o->version, KB_PUBLISH_OPTIONS_VERSION);
    if (!dir)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_publish: no package folder");
    const char *ref = o->registry ? o->registry : kbi_config_str(ctx, "registry");
    kb_publish_report *rep = calloc(1, sizeof(*rep));
    if (!rep)
        return kbi_error_oom(ctx);
    pub_run p;
    int rc = prepare(ctx, &p, rep, dir, o);
    if (!rc) {
        rep->package = kbi_strdup(p.m->name);
        rep->version = kbi_strdup(p.version);
        rep->registry = kbi_strdup(ref);
        rc = (!rep->package || !rep->version || !rep->registry) ? kbi_error_oom(ctx) : 0;
    }
    if (!rc)
        rc = push_all(ctx, rep, &p, ref, o->force != 0);
    pub_run_free(&p);
    if (rc) {
        kb_publish_report_free(rep);
        return rc;
    }
    *out = rep;
    return 0;
}
