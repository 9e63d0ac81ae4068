/* kb_farm_plan: what a distributed farm would build (one item per target whose build key the
 * registry lacks, with the pool it needs) and merge, without building: the engine-neutral input
 * of a Slurm job array or a GitHub Actions matrix. */
#include "farm/farm.h"
#include "kbpkg/trust.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A class of workers: one backend, a platform, maybe a GPU, maybe a declared toolchain. */
typedef struct pool {
    char *name;
    kb_backend backend;
    char *os;
    char *arch;
    bool gpu;
    char *toolchain; /* "<name>-<version>-<12 hex>" as `kbpkg toolchains` shows it; may be NULL */
} pool;

typedef struct pools {
    pool *items;
    size_t count, cap;
} pools;

static void pools_free(pools *p)
{
    for (size_t i = 0; i < p->count; i++) {
        free(p->items[i].name);
        free(p->items[i].os);
        free(p->items[i].arch);
        free(p->items[i].toolchain);
    }
    free(p->items);
    memset(p, 0, sizeof(*p));
}

static int pools_add(kb_ctx *ctx, pools *p, const char *name, kb_backend b, const char *os,
                     const char *arch, bool gpu, const char *toolchain)
{
    if (kbi_array_grow((void **)&p->items, &p->cap, p->count + 1, sizeof(*p->items)))
        return kbi_error_oom(ctx);
    pool *n = &p->items[p->count++];
    *n = (pool){kbi_strdup(name), b, kbi_strdup(os), kbi_strdup(arch), gpu, kbi_strdup(toolchain)};
    return n->name && n->os && n->arch && (!toolchain || n->toolchain) ? 0 : kbi_error_oom(ctx);
}

static int backend_named(kb_backend *out, const char *name)
{
    for (unsigned b = KB_BACKEND_CUDA; name && b <= KB_BACKEND_CPU; b++)
        if (strcmp(kbi_backend_name((kb_backend)b), name) == 0) {
            *out = (kb_backend)b;
            return 0;
        }
    return -1;
}

/* One pool per backend on this machine's platform, with the toolchain found here (if any). */
static int default_pools(kb_ctx *ctx, pools *out, const kb_toolchains *tcs)
{
    char arch[16], os[16];
    kbi_host_platform(arch, sizeof(arch), os, sizeof(os));
    int rc = 0;
    for (unsigned b = KB_BACKEND_CUDA; !rc && b <= KB_BACKEND_CPU; b++) {
        const kb_toolchain *tc = &tcs->tc[b];
        bool metal = b == KB_BACKEND_METAL;
        rc = pools_add(ctx, out, kbi_backend_name((kb_backend)b), (kb_backend)b,
                       metal ? "darwin" : os, metal ? "arm64" : arch, b != KB_BACKEND_CPU,
                       tc->found ? tc->id : NULL);
    }
    return rc;
}

/* {"pools": [{"name", "backend", "os", "arch", "gpu", "toolchain"}]}: docs/farm.md. */
static int load_pools(kb_ctx *ctx, pools *out, const char *path)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    json_t *list = json_object_get(root, "pools");
    int rc = 0;
    if (!root)
        rc = kbi_error_set_path(ctx, KB_ERR_PARSE, path, (unsigned)jerr.line, (unsigned)jerr.column,
                                "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    else if (!json_is_array(list))
        rc = kbi_error_set_path(ctx, KB_ERR_PARSE, path, 0, 0, "%s: needs a \"pools\" array", path);
    char host_arch[16], host_os[16];
    kbi_host_platform(host_arch, sizeof(host_arch), host_os, sizeof(host_os));
    size_t i;
    json_t *p;
    json_array_foreach(list, i, p)
    {
        const char *name = json_string_value(json_object_get(p, "name"));
        const char *backend = json_string_value(json_object_get(p, "backend"));
        const char *os = json_string_value(json_object_get(p, "os"));
        const char *arch = json_string_value(json_object_get(p, "arch"));
        const char *tc = json_string_value(json_object_get(p, "toolchain"));
        json_t *gpu = json_object_get(p, "gpu");
        kb_backend b;
        if (rc)
            break;
        if (!name || backend_named(&b, backend) != 0 || (gpu && !json_is_boolean(gpu)))
            rc =
                kbi_error_set_path(ctx, KB_ERR_PARSE, path, 0, 0,
                                   "%s: pools[%zu] needs a \"name\" and a \"backend\" (cuda, rocm, "
                                   "metal or cpu); \"gpu\" is true or false",
                                   path, i);
        else
            rc = pools_add(ctx, out, name, b, os ? os : host_os, arch ? arch : host_arch,
                           gpu ? json_is_true(gpu) : b != KB_BACKEND_CPU, tc);
    }
    json_decref(root);
    return rc;
}

static const pool *pool_for(const pools *p, kb_backend b)
{
    for (size_t i = 0; i < p->count; i++)
        if (p->items[i].backend == b)
            return &p->items[i];
    return NULL;
}

/* "nvcc-13.0-0123456789ab" -> "13.0" */
static char *id_version(const char *id)
{
    const char *first = id ? strchr(id, '-') : NULL;
    const char *last = id ? strrchr(id, '-') : NULL;
    return first && last > first + 1 ? kbi_strndup(first + 1, (size_t)(last - first - 1)) : NULL;
}

/* Toolchains as the pools have them, able to build every arch the manifest declares (a pool
 * is chosen for its backend; which archs its nvcc builds is the worker's to say). */
static int pool_toolchains(kb_ctx *ctx, kb_toolchains *out, const pools *p, const kb_manifest *m)
{
    memset(out, 0, sizeof(*out));
    static const char *const names[] = {"", "nvcc", "hipcc", "metal", "cc"};
    char host_arch[16], host_os[16];
    kbi_host_platform(host_arch, sizeof(host_arch), host_os, sizeof(host_os));
    int rc = 0;
    for (unsigned b = KB_BACKEND_CUDA; !rc && b <= KB_BACKEND_CPU; b++) {
        kb_toolchain *tc = &out->tc[b];
        const pool *pl = pool_for(p, (kb_backend)b);
        tc->backend = (kb_backend)b;
        tc->name = names[b];
        if (!pl || !m->backends[b].present) {
            tc->note = kbi_asprintf("no pool of the farm has the %s backend",
                                    kbi_backend_name((kb_backend)b));
            continue;
        }
        tc->found = true;
        tc->id = kbi_strdup(pl->toolchain);
        tc->version = id_version(pl->toolchain);
        const kb_backend_spec *spec = &m->backends[b];
        for (size_t i = 0; !rc && i < spec->archs.len; i++)
            rc = kbi_strv_push(&tc->archs, spec->archs.items[i]);
        if (!rc && spec->ptx) {
            char ptx[48];
            snprintf(ptx, sizeof(ptx), "compute_%s",
                     kbi_str_starts(spec->ptx, "sm_") ? spec->ptx + 3 : spec->ptx + 8);
            rc = kbi_strv_push(&tc->archs, kbi_str_starts(spec->ptx, "compute_") ? spec->ptx : ptx);
        }
        if (!rc && b == KB_BACKEND_METAL)
            rc = kbi_strv_push(&tc->archs, "apple");
        if (!rc && b == KB_BACKEND_CPU)
            rc = kbi_cpu_levels(host_arch, &tc->archs) || kbi_strv_push(&tc->archs, host_arch);
    }
    if (rc) {
        kbi_toolchains_free(out);
        return kbi_error_oom(ctx);
    }
    return 0;
}

/* A word for a shell command line: single-quoted unless it is plainly safe. */
static void shell_word(kb_buf *b, const char *w)
{
    if (w[strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-:@+=,")] ==
        '\0') {
        kbi_buf_printf(b, " %s", w);
        return;
    }
    kbi_buf_printf(b, " '");
    for (const char *c = w; *c; c++)
        kbi_buf_printf(b, *c == '\'' ? "'\\''" : "%c", *c);
    kbi_buf_printf(b, "'");
}

static json_t *plan_item(const kb_farm_pkg *f, const kb_plan_item *it, const pool *pl,
                         const char *key, const char *registry)
{
    kb_buf cmd = KB_BUF_INIT;
    kbi_buf_printf(&cmd, "kbpkg farm build");
    shell_word(&cmd, f->m->dir);
    kbi_buf_printf(&cmd, " --target %s --stage --registry", it->target);
    shell_word(&cmd, registry);
    json_t *item =
        json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:{s:s,s:s,s:b,s:s},s:s?,s:s?}", "package",
                  f->m->name, "version", f->version, "dir", f->m->dir, "target", it->target,
                  "backend", kbi_backend_name(it->backend), "arch", it->arch, "pool", pl->name,
                  "labels", "backend", kbi_backend_name(it->backend), "arch", pl->arch, "gpu",
                  pl->gpu, "os", pl->os, "build_key", key, "command", cmd.data);
    kbi_buf_free(&cmd);
    return item;
}

static json_t *merge_item(const kb_farm_pkg *f, const char *registry)
{
    kb_buf cmd = KB_BUF_INIT;
    char *ref = kbi_asprintf("%s@%s", f->m->name, f->version);
    kbi_buf_printf(&cmd, "kbpkg farm merge %s --registry", ref ? ref : "");
    shell_word(&cmd, registry);
    json_t *item = json_pack("{s:s,s:s,s:s?,s:s?}", "package", f->m->name, "version", f->version,
                             "ref", ref, "command", cmd.data);
    free(ref);
    kbi_buf_free(&cmd);
    return item;
}

/* Items of one package: every planned target whose key the registry lacks. */
static int plan_one(kb_ctx *ctx, json_t *items, json_t *merges, const char *dir, kb_registry *r,
                    const pools *p, const char *registry, json_t *problems)
{
    kb_manifest *m = NULL;
    kb_toolchains tcs;
    kb_farm_pkg f;
    memset(&f, 0, sizeof(f));
    int rc = kbi_manifest_load(ctx, &m, dir, true);
    if (!rc)
        rc = pool_toolchains(ctx, &tcs, p, m);
    kb_manifest_free(m);
    if (rc && rc != KB_ERR_NOMEM) {
        json_array_append_new(problems, json_pack("{s:s,s:s}", "dir", dir, "message",
                                                  kb_ctx_last_error(ctx)->message));
        kb_ctx_clear_error(ctx);
        return 0;
    }
    if (rc)
        return rc;
    rc = kbi_farm_pkg_load(ctx, &f, dir, r, &tcs, NULL, 0);
    char *changed = rc ? NULL : kbi_farm_source_changed(&f);
    if (changed)
        rc = kbi_error_set(ctx, KB_ERR_EXISTS, "%s", changed);
    size_t added = 0;
    for (size_t i = 0; !rc && i < f.plan.count; i++) {
        const kb_plan_item *it = &f.plan.items[i];
        if (it->skip || kbi_farm_key_present(f.idx, it->target, f.keys[i]))
            continue;
        json_t *item = plan_item(&f, it, pool_for(p, it->backend), f.keys[i], registry);
        rc = item && json_array_append_new(items, item) == 0 ? 0 : kbi_error_oom(ctx);
        added++;
    }
    if (!rc && added)
        rc = json_array_append_new(merges, merge_item(&f, registry)) == 0 ? 0 : kbi_error_oom(ctx);
    free(changed);
    kbi_farm_pkg_free(&f);
    kbi_toolchains_free(&tcs);
    if (rc && rc != KB_ERR_NOMEM) { /* this package's problem: the others still plan */
        json_array_append_new(problems, json_pack("{s:s,s:s}", "dir", dir, "message",
                                                  kb_ctx_last_error(ctx)->message));
        kb_ctx_clear_error(ctx);
        rc = 0;
    }
    return rc;
}

/* The pools: the file's, or one per backend with the toolchains found here (discovered once,
 * only for the backends the packages declare). */
static int plan_pools(kb_ctx *ctx, pools *out, const kb_strv *pkgs, const kb_farm_options *o)
{
    memset(out, 0, sizeof(*out));
    if (o->version >= 2 && o->pools)
        return load_pools(ctx, out, o->pools);
    unsigned mask = 0;
    int rc = 0;
    for (size_t i = 0; !rc && i < pkgs->len; i++) {
        kb_manifest *m = NULL;
        rc = kbi_manifest_load(ctx, &m, pkgs->items[i], true);
        if (!rc)
            mask |= kbi_farm_backends(m);
        kb_manifest_free(m);
    }
    kb_toolchains tcs;
    if (!rc)
        rc = kbi_toolchains_discover_some(ctx, &tcs, mask);
    if (!rc) {
        rc = default_pools(ctx, out, &tcs);
        kbi_toolchains_free(&tcs);
    }
    return rc;
}

KB_EXTERN int kb_farm_plan(char **json_out, kb_ctx *ctx, const char *const *paths, size_t count,
                           const kb_farm_options *options)
{
    kb_farm_options defaults = KB_FARM_OPTIONS_INIT;
    const kb_farm_options *o = options ? options : &defaults;
    *json_out = NULL;
    int rc = kbi_farm_check_options(ctx, o, "kb_farm_plan");
    if (!rc && count == 0)
        rc = kbi_error_set(ctx, KB_ERR_INVALID, "kb_farm_plan: no folder given");
    kb_strv pkgs = KB_STRV_INIT;
    for (size_t i = 0; !rc && i < count; i++)
        rc = kbi_farm_find_packages(ctx, &pkgs, paths[i], 0);
    const char *registry = o->registry ? o->registry : kbi_config_str(ctx, "registry");
    pools p = {0};
    kb_registry *r = NULL;
    if (!rc)
        rc = plan_pools(ctx, &p, &pkgs, o);
    if (!rc)
        rc = kb_trust_registry_open(&r, ctx, registry);
    json_t *items = json_array(), *merges = json_array(), *problems = json_array();
    for (size_t i = 0; !rc && i < pkgs.len; i++)
        rc = plan_one(ctx, items, merges, pkgs.items[i], r, &p, registry, problems);
    json_t *doc = rc ? NULL
                     : json_pack("{s:s,s:O,s:O,s:O}", "registry", registry, "items", items,
                                 "merges", merges, "problems", problems);
    if (!rc && !(*json_out = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL))
        rc = kbi_error_oom(ctx);
    json_decref(doc);
    json_decref(items);
    json_decref(merges);
    json_decref(problems);
    kb_registry_free(r);
    pools_free(&p);
    kbi_strv_free(&pkgs);
    return rc;
}

KB_EXTERN void kb_farm_string_free(char *s)
{
    free(s);
}
