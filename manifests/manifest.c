/* kernel.yaml: the table-driven schema, its handlers, and loading a manifest from a file. */
#include "manifests/manifest.h"
#include "manifests/manifest_check.h"
#include "manifests/signature.h"
#include "model/ref.h"
#include "core/yaml_tree.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The kernel ABI this kbpkg builds and loads (kbpkg_kernel_info). */
#define KB_KERNEL_ABI 1

#define NODE_ANY (-1)

typedef struct mparse {
    kb_ctx *ctx;
    const char *file; /* as named in messages */
    const char *dir;  /* package folder, for check_files */
    bool check_files;
    kb_manifest *m;
} mparse;

/* A key's handler: value is already of the declared node type; target is what the table's
 * mapping fills (the manifest, a backend spec, a source). */
typedef int (*key_handler)(mparse *p, const kb_ynode *value, const char *keypath, void *target);

typedef struct schema_key {
    const char *name;
    int type; /* a kb_ynode_type or NODE_ANY */
    bool required;
    key_handler handler;
} schema_key;

typedef struct schema {
    const schema_key *keys;
    size_t len;
    const char *expected; /* the keys, for "unknown key" messages */
} schema;

static int fail(mparse *p, const kb_ynode *n, const char *keypath, const char *fmt, ...)
    KB_PRINTF(4, 5);

static int fail(mparse *p, const kb_ynode *n, const char *keypath, const char *fmt, ...)
{
    kb_buf msg = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    kbi_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    kbi_error_set_path(p->ctx, KB_ERR_MANIFEST, p->file, n->line, n->column, "%s:%u:%u: %s%s%s",
                       p->file, n->line, n->column, keypath, *keypath ? ": " : "",
                       msg.data ? msg.data : "");
    kbi_buf_free(&msg);
    return KB_ERR_MANIFEST;
}

static int oom(mparse *p)
{
    return kbi_error_oom(p->ctx);
}

/* ---- generic pieces ---- */

static int apply_schema(mparse *p, const kb_ynode *map, const char *keypath, const schema *s,
                        void *target);

static const schema_key *find_key(const schema *s, const char *name)
{
    for (size_t i = 0; i < s->len; i++)
        if (strcmp(s->keys[i].name, name) == 0)
            return &s->keys[i];
    return NULL;
}

static char *join_key(const char *keypath, const char *key)
{
    return *keypath ? kbi_asprintf("%s.%s", keypath, key) : kbi_strdup(key);
}

static int check_required(mparse *p, const kb_ynode *map, const char *keypath, const schema *s)
{
    for (size_t i = 0; i < s->len; i++)
        if (s->keys[i].required && !kbi_ynode_get(map, s->keys[i].name))
            return fail(p, map, keypath, "missing required key '%s'", s->keys[i].name);
    return 0;
}

static int apply_key(mparse *p, const kb_ynode *key, const kb_ynode *value, const char *keypath,
                     const schema *s, void *target)
{
    const schema_key *k = find_key(s, key->value);
    if (!k)
        return fail(p, key, keypath, "unknown key '%s' (expected one of: %s)", key->value,
                    s->expected);
    char *path = join_key(keypath, k->name);
    if (!path)
        return oom(p);
    int rc;
    if (k->type != NODE_ANY && value->type != (kb_ynode_type)k->type)
        rc = fail(p, value, path, "expected %s, got %s", kbi_ynode_type_name(k->type),
                  kbi_ynode_type_name(value->type));
    else
        rc = k->handler(p, value, path, target);
    free(path);
    return rc;
}

static int apply_schema(mparse *p, const kb_ynode *map, const char *keypath, const schema *s,
                        void *target)
{
    for (size_t i = 0; i + 1 < map->len; i += 2) {
        int rc = apply_key(p, map->items[i], map->items[i + 1], keypath, s, target);
        if (rc)
            return rc;
    }
    return check_required(p, map, keypath, s);
}

static int need_scalar(mparse *p, const kb_ynode *n, const char *keypath)
{
    if (n->type != KB_YNODE_SCALAR)
        return fail(p, n, keypath, "expected a scalar, got %s", kbi_ynode_type_name(n->type));
    if (!*n->value)
        return fail(p, n, keypath, "must not be empty");
    return 0;
}

static int take_string(mparse *p, const kb_ynode *n, const char *keypath, char **dst)
{
    int rc = need_scalar(p, n, keypath);
    if (rc)
        return rc;
    char *s = kbi_strdup(n->value);
    if (!s)
        return oom(p);
    free(*dst);
    *dst = s;
    return 0;
}

/* A relative path inside the package; with check_files it must exist. */
static int take_package_path(mparse *p, const kb_ynode *n, const char *keypath, char **dst,
                             bool must_exist)
{
    int rc = take_string(p, n, keypath, dst);
    if (rc)
        return rc;
    if (!kbi_package_path_ok(n->value))
        return fail(p, n, keypath,
                    "'%s' must be a relative path inside the package (no leading '/', no '..')",
                    n->value);
    if (must_exist && p->check_files) {
        char *full = kbi_path_join(p->dir, n->value);
        bool exists = full && kbi_path_exists(full);
        free(full);
        if (!exists)
            return fail(p, n, keypath, "'%s' does not exist in %s", n->value, p->dir);
    }
    return 0;
}

/* Item i's key path: "exports[2]". */
static char *item_path(const char *keypath, size_t i)
{
    return kbi_asprintf("%s[%zu]", keypath, i);
}

typedef int (*item_handler)(mparse *p, const kb_ynode *item, const char *itempath, void *target);

static int each_item(mparse *p, const kb_ynode *seq, const char *keypath, bool non_empty,
                     item_handler fn, void *target)
{
    if (non_empty && seq->len == 0)
        return fail(p, seq, keypath, "must list at least one item");
    for (size_t i = 0; i < seq->len; i++) {
        char *path = item_path(keypath, i);
        if (!path)
            return oom(p);
        int rc = fn(p, seq->items[i], path, target);
        free(path);
        if (rc)
            return rc;
    }
    return 0;
}

/* Push a scalar item into a kb_strv, refusing duplicates. */
static int push_unique(mparse *p, const kb_ynode *item, const char *itempath, kb_strv *v)
{
    if (kbi_strv_contains(v, item->value))
        return fail(p, item, itempath, "'%s' is listed twice", item->value);
    return kbi_strv_push(v, item->value) ? oom(p) : 0;
}

/* ---- top-level handlers ---- */

static int on_name(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_manifest *m = target;
    int rc = take_string(p, v, keypath, &m->name);
    if (!rc && !kbi_pkg_name_valid(v->value))
        rc = fail(p, v, keypath, "'%s' is not a package name (%s)", v->value, KB_PKG_NAME_RULE);
    return rc;
}

static int on_version(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_manifest *m = target;
    int rc = take_string(p, v, keypath, &m->version_text);
    if (rc)
        return rc;
    if (kbi_semver_parse(p->ctx, &m->version, v->value)) {
        char *why = kbi_strdup(kb_ctx_last_error(p->ctx)->message);
        rc = fail(p, v, keypath, "%s", why ? why : "bad version");
        free(why);
    }
    return rc;
}

static int on_summary(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return take_string(p, v, keypath, &((kb_manifest *)target)->summary);
}

static int on_license(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return take_string(p, v, keypath, &((kb_manifest *)target)->license);
}

static int on_abi(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    uint64_t n;
    int rc = need_scalar(p, v, keypath);
    if (rc)
        return rc;
    if (!v->plain || !kbi_parse_u64(v->value, &n))
        return fail(p, v, keypath, "'%s' is not a non-negative integer", v->value);
    if (n != KB_KERNEL_ABI)
        return fail(p, v, keypath, "kernel ABI %s is not supported (this kbpkg knows ABI %d)",
                    v->value, KB_KERNEL_ABI);
    ((kb_manifest *)target)->abi = (unsigned)n;
    return 0;
}

static int on_header(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return take_package_path(p, v, keypath, &((kb_manifest *)target)->header, true);
}

static int on_test(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return take_package_path(p, v, keypath, &((kb_manifest *)target)->test, true);
}

static int on_bench(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return take_package_path(p, v, keypath, &((kb_manifest *)target)->bench, true);
}

/* ---- exports: plain names, or typed mappings {name, returns, args} ---- */

/* The signature slot for the export about to be pushed (kept parallel to m->exports). */
static kb_export_sig *next_export_sig(mparse *p)
{
    kb_manifest *m = p->m;
    if (kbi_array_grow((void **)&m->export_sigs, &m->export_sigs_cap, m->exports.len + 1,
                       sizeof(*m->export_sigs)))
        return NULL;
    kb_export_sig *sig = &m->export_sigs[m->exports.len];
    memset(sig, 0, sizeof(*sig));
    return sig;
}

/* Push an export's name (a C identifier, not listed before) with its signature slot. */
static int push_export(mparse *p, const kb_ynode *name, const char *keypath, kb_export_sig *sig)
{
    int rc = need_scalar(p, name, keypath);
    if (rc)
        return rc;
    if (!kbi_c_identifier_ok(name->value))
        return fail(p, name, keypath, "'%s' is not a C identifier", name->value);
    if (!(sig->name = kbi_strdup(name->value)))
        return oom(p);
    rc = push_unique(p, name, keypath, &p->m->exports);
    if (rc)
        kbi_export_sig_clear(sig);
    return rc;
}

static int on_arg_name(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_export_arg *a = target;
    int rc = take_string(p, v, keypath, &a->name);
    if (!rc && !kbi_c_identifier_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not a C identifier", v->value);
    return rc;
}

static int on_arg_type(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    int rc = take_string(p, v, keypath, &((kb_export_arg *)target)->type);
    if (!rc && !kbi_sig_type_find(v->value))
        rc = fail(p, v, keypath, "unknown type '%s' (expected one of: %s)", v->value,
                  kbi_sig_type_names());
    return rc;
}

static int on_arg_dir(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    static const struct {
        const char *name;
        kb_arg_dir dir;
    } dirs[] = {{"in", KB_ARG_IN}, {"out", KB_ARG_OUT}, {"inout", KB_ARG_INOUT}};
    int rc = need_scalar(p, v, keypath);
    for (size_t i = 0; !rc && i < KB_ARRAY_LEN(dirs); i++)
        if (strcmp(v->value, dirs[i].name) == 0) {
            ((kb_export_arg *)target)->dir = dirs[i].dir;
            return 0;
        }
    return rc ? rc : fail(p, v, keypath, "'%s' is not a direction (in, out, inout)", v->value);
}

static int on_shape_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    int rc = need_scalar(p, item, itempath);
    return rc ? rc : kbi_strv_push(target, item->value) ? oom(p) : 0;
}

static int on_arg_shape(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, true, on_shape_item, &((kb_export_arg *)target)->shape);
}

static const schema_key arg_keys[] = {
    {"name", KB_YNODE_SCALAR, true, on_arg_name},
    {"type", KB_YNODE_SCALAR, true, on_arg_type},
    {"dir", KB_YNODE_SCALAR, false, on_arg_dir},
    {"shape", KB_YNODE_SEQ, false, on_arg_shape},
};
static const schema arg_schema = {arg_keys, KB_ARRAY_LEN(arg_keys), "name, type, dir, shape"};

/* What one argument needs as a whole: pointers have a dir and a pointee type, values none. */
static int finish_arg(mparse *p, const kb_ynode *map, const char *itempath, const kb_export_arg *a)
{
    const kb_sig_type *t = kbi_sig_type_find(a->type);
    const kb_ynode *type = kbi_ynode_get(map, "type");
    if (strcmp(a->type, "stream") == 0 && (a->dir != KB_ARG_SCALAR || a->shape.len))
        return fail(p, type, itempath, "the stream argument takes no 'dir' or 'shape'");
    if (a->dir == KB_ARG_SCALAR && a->shape.len)
        return fail(p, kbi_ynode_get(map, "shape"), itempath,
                    "'shape' is for pointers: give '%s' a dir (in, out, inout)", a->name);
    if (a->dir == KB_ARG_SCALAR && !t->scalar_ok)
        return fail(p, type, itempath,
                    "a %s cannot be passed by value in C: pass it as f32, or give '%s' a dir "
                    "to make it a pointer",
                    a->type, a->name);
    return 0;
}

static int on_arg_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    kb_export_sig *sig = target;
    if (item->type != KB_YNODE_MAP)
        return fail(p, item, itempath, "expected a mapping {name, type, dir, shape}, got %s",
                    kbi_ynode_type_name(item->type));
    if (kbi_array_grow((void **)&sig->args, &sig->args_cap, sig->arg_count + 1, sizeof(*sig->args)))
        return oom(p);
    kb_export_arg *a = &sig->args[sig->arg_count++];
    memset(a, 0, sizeof(*a));
    int rc = apply_schema(p, item, itempath, &arg_schema, a);
    if (rc)
        return rc;
    for (size_t i = 0; i + 1 < sig->arg_count; i++)
        if (strcmp(sig->args[i].name, a->name) == 0)
            return fail(p, kbi_ynode_get(item, "name"), itempath, "argument '%s' is listed twice",
                        a->name);
    return finish_arg(p, item, itempath, a);
}

static int on_sig_returns(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    int rc = take_string(p, v, keypath, &((kb_export_sig *)target)->returns);
    if (!rc && !kbi_sig_returns_ok(v->value))
        rc =
            fail(p, v, keypath,
                 "'%s' is not a return type (status, void, or an integer or float type)", v->value);
    return rc;
}

static int on_sig_args(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_arg_item, target);
}

static int on_sig_name(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    (void)p, (void)v, (void)keypath, (void)target;
    return 0; /* pushed first by on_typed_export, so errors keep the export's order */
}

static const schema_key sig_keys[] = {
    {"name", KB_YNODE_SCALAR, true, on_sig_name},
    {"returns", KB_YNODE_SCALAR, false, on_sig_returns},
    {"args", KB_YNODE_SEQ, false, on_sig_args},
};
static const schema sig_schema = {sig_keys, KB_ARRAY_LEN(sig_keys), "name, returns, args"};

/* Every shape expression names integer arguments of its own export (checked once all the
 * arguments are known, so a shape may name a later one). */
static int check_shapes(mparse *p, const kb_ynode *map, const char *itempath,
                        const kb_export_sig *sig)
{
    const kb_ynode *args = kbi_ynode_get(map, "args");
    for (size_t i = 0; args && i < sig->arg_count; i++) {
        const kb_ynode *shape = kbi_ynode_get(args->items[i], "shape");
        for (size_t j = 0; shape && j < shape->len; j++) {
            char why[200];
            if (kbi_sig_shape_ok(sig, shape->items[j]->value, why, sizeof(why)))
                continue;
            char *path = kbi_asprintf("%s.args[%zu].shape[%zu]", itempath, i, j);
            int rc = path ? fail(p, shape->items[j], path, "%s", why) : oom(p);
            free(path);
            return rc;
        }
    }
    return 0;
}

static int on_typed_export(mparse *p, const kb_ynode *map, const char *itempath)
{
    const kb_ynode *name = kbi_ynode_get(map, "name");
    if (!name)
        return fail(p, map, itempath, "missing required key 'name'");
    kb_export_sig *sig = next_export_sig(p);
    if (!sig)
        return oom(p);
    char *namepath = join_key(itempath, "name");
    int rc = namepath ? push_export(p, name, namepath, sig) : oom(p);
    free(namepath);
    if (rc)
        return rc;
    rc = apply_schema(p, map, itempath, &sig_schema, sig);
    if (!rc && !sig->returns && !(sig->returns = kbi_strdup("status")))
        rc = oom(p);
    return rc ? rc : check_shapes(p, map, itempath, sig);
}

static int on_export_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    (void)target;
    if (item->type == KB_YNODE_MAP)
        return on_typed_export(p, item, itempath);
    kb_export_sig *sig = next_export_sig(p);
    return sig ? push_export(p, item, itempath, sig) : oom(p);
}

static int on_exports(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, true, on_export_item, target);
}

/* ---- backends ---- */

static int on_arch_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    kb_backend_spec *b = target;
    int rc = need_scalar(p, item, itempath);
    if (rc)
        return rc;
    char why[256] = "";
    if (!kbi_arch_valid(b->backend, item->value, why, sizeof(why)))
        return fail(p, item, itempath, "'%s' is not a %s arch (%s)", item->value,
                    kbi_backend_display_name(b->backend), why);
    return push_unique(p, item, itempath, &b->archs);
}

static int on_archs(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, true, on_arch_item, target);
}

static int on_ptx(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_backend_spec *b = target;
    int rc = need_scalar(p, v, keypath);
    if (rc)
        return rc;
    char canonical[32];
    if (!kbi_ptx_arch_canonical(v->value, canonical, sizeof(canonical)))
        return fail(p, v, keypath,
                    "'%s' is not a PTX arch (sm_XY or compute_XY, 75 or newer, e.g. sm_80)",
                    v->value);
    char *s = kbi_strdup(canonical);
    if (!s)
        return oom(p);
    free(b->ptx);
    b->ptx = s;
    snprintf(b->ptx_target, sizeof(b->ptx_target), "compute_%s", canonical + 3);
    return 0;
}

static int on_flag_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    kb_strv *flags = target;
    int rc = need_scalar(p, item, itempath);
    if (rc)
        return rc;
    const char *why =
        kbi_flag_unportable(flags->len ? flags->items[flags->len - 1] : NULL, item->value);
    if (why)
        return fail(p, item, itempath, "'%s': %s", item->value, why);
    return kbi_strv_push(flags, item->value) ? oom(p) : 0;
}

static int on_flags(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_flag_item, &((kb_backend_spec *)target)->flags);
}

/* ---- build inputs: include folders, defines, per-arch and per-source flags ---- */

static int on_include_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    char *path = NULL;
    int rc = take_package_path(p, item, itempath, &path, true);
    free(path);
    return rc ? rc : push_unique(p, item, itempath, target);
}

static int on_backend_includes(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_include_item, &((kb_backend_spec *)target)->includes);
}

/* NAME or NAME=VALUE, NAME a C identifier (a function-like macro needs flags:). */
static int on_define_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    int rc = need_scalar(p, item, itempath);
    if (rc)
        return rc;
    size_t n = strcspn(item->value, "=");
    char *name = kbi_strndup(item->value, n);
    bool ok = name && kbi_c_identifier_ok(name);
    free(name);
    if (!ok)
        return fail(p, item, itempath, "'%s' is not NAME or NAME=VALUE (NAME a C identifier)",
                    item->value);
    return push_unique(p, item, itempath, target);
}

static int on_backend_defines(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_define_item, &((kb_backend_spec *)target)->defines);
}

/* arch_flags: {"gfx9*": [-DKB_CDNA], gfx1100: [...]}: each pattern must match a declared arch,
 * so a typo is not a silent no-op. */
static int on_arch_flags(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_backend_spec *b = target;
    for (size_t i = 0; i + 1 < v->len; i += 2) {
        const kb_ynode *key = v->items[i], *val = v->items[i + 1];
        char *path = join_key(keypath, key->value);
        if (!path)
            return oom(p);
        int rc = val->type == KB_YNODE_SEQ ? 0
                                           : fail(p, val, path, "expected a list of flags, got %s",
                                                  kbi_ynode_type_name(val->type));
        if (!rc && kbi_array_grow((void **)&b->arch_flags, &b->arch_flags_cap,
                                  b->arch_flag_count + 1, sizeof(*b->arch_flags)))
            rc = oom(p);
        if (!rc) {
            kb_arch_flags *af = &b->arch_flags[b->arch_flag_count++];
            memset(af, 0, sizeof(*af));
            af->pattern = kbi_strdup(key->value);
            rc = af->pattern ? each_item(p, val, path, true, on_flag_item, &af->flags) : oom(p);
        }
        free(path);
        if (rc)
            return rc;
    }
    return 0;
}

static int on_export_pattern(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    int rc = need_scalar(p, item, itempath);
    return rc ? rc : push_unique(p, item, itempath, target);
}

static int on_backend_exports(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_backend_spec *b = target;
    b->exports_selected = true;
    return each_item(p, v, keypath, true, on_export_pattern, &b->export_patterns);
}

/* A source given as a mapping: {url, sha256, path}. */
static int on_source_url(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_source *s = target;
    int rc = take_string(p, v, keypath, &s->url);
    if (!rc && !kbi_source_url_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not an https://, http:// or file:// URL", v->value);
    return rc;
}

static int on_source_sha256(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_source *s = target;
    int rc = take_string(p, v, keypath, &s->sha256);
    if (!rc && !kbi_sha256_hex_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not a sha256 digest (64 lowercase hex digits)", v->value);
    return rc;
}

static int on_source_path(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return take_package_path(p, v, keypath, &((kb_source *)target)->path, false);
}

static int on_source_flags(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_flag_item, &((kb_source *)target)->flags);
}

/* A source's defines become -D flags of that source alone. */
static int on_source_define(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    kb_strv names = KB_STRV_INIT;
    int rc = on_define_item(p, item, itempath, &names);
    kbi_strv_free(&names);
    if (rc)
        return rc;
    char *flag = kbi_asprintf("-D%s", item->value);
    return flag ? (kbi_strv_push_owned(target, flag) ? oom(p) : 0) : oom(p);
}

static int on_source_defines(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_source_define, &((kb_source *)target)->flags);
}

static const schema_key source_keys[] = {
    {"url", KB_YNODE_SCALAR, false, on_source_url},
    {"sha256", KB_YNODE_SCALAR, false, on_source_sha256},
    {"path", KB_YNODE_SCALAR, false, on_source_path},
    {"flags", KB_YNODE_SEQ, false, on_source_flags},
    {"defines", KB_YNODE_SEQ, false, on_source_defines},
};
static const schema source_schema = {source_keys, KB_ARRAY_LEN(source_keys),
                                     "url, sha256, path, flags, defines"};

/* Fill in and check what a source mapping needs as a whole. */
static int finish_source(mparse *p, const kb_ynode *map, const char *itempath, kb_source *s)
{
    if (s->url && !s->sha256)
        return fail(p, map, itempath, "a url source needs 'sha256'");
    if (!s->url && s->sha256)
        return fail(p, map, itempath, "'sha256' needs a 'url'");
    if (!s->url && !s->path)
        return fail(p, map, itempath, "a source needs 'path' or 'url'");
    if (s->url && !s->path) {
        s->path = kbi_url_file_name(s->url);
        if (!s->path)
            return fail(p, map, itempath, "cannot name a file after '%s': add 'path'", s->url);
    }
    if (!s->url && p->check_files) {
        char *full = kbi_path_join(p->dir, s->path);
        bool exists = full && kbi_path_exists(full);
        free(full);
        if (!exists) {
            const kb_ynode *at = kbi_ynode_get(map, "path");
            return fail(p, at ? at : map, itempath, "'%s' does not exist in %s", s->path, p->dir);
        }
    }
    return 0;
}

static kb_source *new_source(kb_backend_spec *b)
{
    if (kbi_array_grow((void **)&b->sources, &b->sources_cap, b->source_count + 1,
                       sizeof(*b->sources)))
        return NULL;
    kb_source *s = &b->sources[b->source_count++];
    memset(s, 0, sizeof(*s));
    return s;
}

static int on_source_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    kb_source *s = new_source(target);
    if (!s)
        return oom(p);
    if (item->type == KB_YNODE_SCALAR)
        return take_package_path(p, item, itempath, &s->path, true);
    if (item->type != KB_YNODE_MAP)
        return fail(p, item, itempath, "expected a path or a mapping {url, sha256, path}, got %s",
                    kbi_ynode_type_name(item->type));
    int rc = apply_schema(p, item, itempath, &source_schema, s);
    return rc ? rc : finish_source(p, item, itempath, s);
}

static int on_sources(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, true, on_source_item, target);
}

/* The keys every backend shares besides archs/ptx. */
#define BUILD_INPUT_KEYS                                                                           \
    {"sources", KB_YNODE_SEQ, true, on_sources}, {"flags", KB_YNODE_SEQ, false, on_flags},         \
        {"includes", KB_YNODE_SEQ, false, on_backend_includes},                                    \
        {"defines", KB_YNODE_SEQ, false, on_backend_defines},                                      \
    {                                                                                              \
        "exports", KB_YNODE_SEQ, false, on_backend_exports                                         \
    }
#define BUILD_INPUT_NAMES "sources, flags, includes, defines, exports"

static const schema_key cuda_keys[] = {
    {"archs", KB_YNODE_SEQ, true, on_archs},
    {"ptx", KB_YNODE_SCALAR, false, on_ptx},
    {"arch_flags", KB_YNODE_MAP, false, on_arch_flags},
    BUILD_INPUT_KEYS,
};
static const schema_key rocm_keys[] = {
    {"archs", KB_YNODE_SEQ, true, on_archs},
    {"arch_flags", KB_YNODE_MAP, false, on_arch_flags},
    BUILD_INPUT_KEYS,
};
static const schema_key metal_keys[] = {
    BUILD_INPUT_KEYS,
};
static const schema_key cpu_keys[] = {
    {"archs", KB_YNODE_SEQ, false, on_archs},
    {"arch_flags", KB_YNODE_MAP, false, on_arch_flags},
    BUILD_INPUT_KEYS,
};

static const struct backend_schema {
    const char *name;
    kb_backend backend;
    schema keys;
} backend_schemas[] = {
    {"cuda",
     KB_BACKEND_CUDA,
     {cuda_keys, KB_ARRAY_LEN(cuda_keys), "archs, ptx, arch_flags, " BUILD_INPUT_NAMES}},
    {"rocm",
     KB_BACKEND_ROCM,
     {rocm_keys, KB_ARRAY_LEN(rocm_keys), "archs, arch_flags, " BUILD_INPUT_NAMES}},
    {"metal", KB_BACKEND_METAL, {metal_keys, KB_ARRAY_LEN(metal_keys), BUILD_INPUT_NAMES}},
    {"cpu",
     KB_BACKEND_CPU,
     {cpu_keys, KB_ARRAY_LEN(cpu_keys), "archs, arch_flags, " BUILD_INPUT_NAMES}},
};

static bool arch_declared(const kb_backend_spec *b, const char *pattern)
{
    for (size_t i = 0; i < b->archs.len; i++)
        if (fnmatch(pattern, b->archs.items[i], 0) == 0)
            return true;
    return b->ptx_target[0] && fnmatch(pattern, b->ptx_target, 0) == 0;
}

/* An arch_flags pattern that matches no declared arch is a typo, not a no-op (a CPU backend
 * without archs builds the host's level: any pattern may apply there). */
static int check_arch_patterns(mparse *p, const kb_ynode *map, const char *keypath,
                               const kb_backend_spec *b)
{
    const kb_ynode *at = kbi_ynode_get(map, "arch_flags");
    for (size_t i = 0; at && i < b->arch_flag_count; i++)
        if ((b->archs.len || b->ptx_target[0]) && !arch_declared(b, b->arch_flags[i].pattern))
            return fail(p, at->items[2 * i], keypath,
                        "arch_flags: '%s' matches none of the declared archs",
                        b->arch_flags[i].pattern);
    return 0;
}

static int on_backend(mparse *p, const kb_ynode *key, const kb_ynode *v, const char *keypath)
{
    const struct backend_schema *bs = NULL;
    for (size_t i = 0; i < KB_ARRAY_LEN(backend_schemas); i++)
        if (strcmp(backend_schemas[i].name, key->value) == 0)
            bs = &backend_schemas[i];
    if (!bs)
        return fail(p, key, keypath,
                    "unknown backend '%s' (expected one of: cuda, rocm, metal, "
                    "cpu)",
                    key->value);
    char *path = join_key(keypath, bs->name);
    if (!path)
        return oom(p);
    kb_backend_spec *spec = &p->m->backends[bs->backend];
    spec->backend = bs->backend;
    spec->present = true;
    int rc = v->type == KB_YNODE_MAP
                 ? apply_schema(p, v, path, &bs->keys, spec)
                 : fail(p, v, path, "expected a mapping, got %s", kbi_ynode_type_name(v->type));
    if (!rc)
        rc = check_arch_patterns(p, v, path, spec);
    free(path);
    return rc;
}

static int on_backends(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    if (v->len == 0)
        return fail(p, v, keypath, "declare at least one backend (cuda, rocm, metal, cpu)");
    for (size_t i = 0; i + 1 < v->len; i += 2) {
        int rc = on_backend(p, v->items[i], v->items[i + 1], keypath);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- top-level build inputs: includes, defines, files, dependencies, requires ---- */

static int on_includes(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_include_item, &((kb_manifest *)target)->includes);
}

static int on_defines(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_define_item, &((kb_manifest *)target)->defines);
}

/* A file or a glob (fnmatch over package-relative paths, '*' stops at '/', "dir/" takes a
 * folder): checked against the folder when files are checked, so a pattern that takes
 * nothing is an error rather than a silently thinner source artifact. */
static int on_file_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    int rc = need_scalar(p, item, itempath);
    if (rc)
        return rc;
    if (!kbi_package_path_ok(item->value))
        return fail(p, item, itempath,
                    "'%s' must be a relative path inside the package (no leading '/', no '..')",
                    item->value);
    return push_unique(p, item, itempath, target);
}

static int on_files(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_file_item, &((kb_manifest *)target)->files);
}

static int on_dep_name(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_dependency *d = target;
    int rc = take_string(p, v, keypath, &d->name);
    if (!rc && !kbi_c_identifier_ok(v->value) && !kbi_package_path_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not a plain name", v->value);
    if (!rc && strchr(v->value, '/'))
        rc = fail(p, v, keypath, "'%s' must not contain '/'", v->value);
    return rc;
}

static int on_dep_url(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_dependency *d = target;
    int rc = take_string(p, v, keypath, &d->url);
    if (!rc && !kbi_source_url_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not an https://, http:// or file:// URL", v->value);
    return rc;
}

static int on_dep_sha256(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_dependency *d = target;
    int rc = take_string(p, v, keypath, &d->sha256);
    if (!rc && !kbi_sha256_hex_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not a sha256 digest (64 lowercase hex digits)", v->value);
    return rc;
}

static int on_dep_include_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    int rc = need_scalar(p, item, itempath);
    if (!rc && strcmp(item->value, ".") != 0 && !kbi_package_path_ok(item->value))
        rc = fail(p, item, itempath, "'%s' must be a relative folder of the dependency",
                  item->value);
    return rc ? rc : push_unique(p, item, itempath, target);
}

static int on_dep_include(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, true, on_dep_include_item, &((kb_dependency *)target)->include);
}

static int on_dep_archive(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    int rc = need_scalar(p, v, keypath);
    if (rc)
        return rc;
    if (strcmp(v->value, "true") != 0 && strcmp(v->value, "false") != 0)
        return fail(p, v, keypath, "expected true or false, got '%s'", v->value);
    ((kb_dependency *)target)->archive = strcmp(v->value, "true") == 0;
    return 0;
}

static const schema_key dep_keys[] = {
    {"name", KB_YNODE_SCALAR, true, on_dep_name},
    {"url", KB_YNODE_SCALAR, true, on_dep_url},
    {"sha256", KB_YNODE_SCALAR, true, on_dep_sha256},
    {"include", KB_YNODE_SEQ, false, on_dep_include},
    {"archive", KB_YNODE_SCALAR, false, on_dep_archive},
};
static const schema dep_schema = {dep_keys, KB_ARRAY_LEN(dep_keys),
                                  "name, url, sha256, include, archive"};

static bool url_is_archive(const char *url)
{
    static const char *const exts[] = {".tar.gz",  ".tgz", ".tar.zst", ".tar.xz",
                                       ".tar.bz2", ".tar", ".zip"};
    char *file = kbi_url_file_name(url);
    bool yes = false;
    for (size_t i = 0; file && i < KB_ARRAY_LEN(exts) && !yes; i++)
        yes = kbi_str_ends(file, exts[i]);
    free(file);
    return yes;
}

static int on_dep_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    kb_manifest *m = target;
    if (item->type != KB_YNODE_MAP)
        return fail(p, item, itempath, "expected a mapping {name, url, sha256}, got %s",
                    kbi_ynode_type_name(item->type));
    if (kbi_array_grow((void **)&m->deps, &m->deps_cap, m->dep_count + 1, sizeof(*m->deps)))
        return oom(p);
    kb_dependency *d = &m->deps[m->dep_count++];
    memset(d, 0, sizeof(*d));
    const kb_ynode *url = kbi_ynode_get(item, "url");
    d->archive = url && url->type == KB_YNODE_SCALAR && url_is_archive(url->value);
    int rc = apply_schema(p, item, itempath, &dep_schema, d);
    for (size_t i = 0; !rc && i + 1 < m->dep_count; i++)
        if (strcmp(m->deps[i].name, d->name) == 0)
            rc = fail(p, item, itempath, "dependency '%s' is listed twice", d->name);
    if (!rc && !d->include.len && kbi_strv_push(&d->include, "."))
        rc = oom(p);
    if (!rc && !d->archive && !(d->file = kbi_url_file_name(d->url)))
        rc = fail(p, item, itempath, "cannot name a file after '%s'", d->url);
    return rc;
}

static int on_dependencies(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_dep_item, target);
}

/* "12.4", "6.0", "13": dotted numbers only, so the comparison has one meaning. */
static bool dotted_version_ok(const char *s)
{
    bool digit = false;
    for (; *s; s++) {
        if (*s >= '0' && *s <= '9')
            digit = true;
        else if (*s == '.' && digit)
            digit = false;
        else
            return false;
    }
    return digit;
}

static int on_require_min(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_requirement *r = target;
    int rc = take_string(p, v, keypath, &r->min);
    if (!rc && !dotted_version_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not a version such as \"12.4\"", v->value);
    return rc;
}

static const schema_key require_keys[] = {{"min", KB_YNODE_SCALAR, true, on_require_min}};
static const schema require_schema = {require_keys, KB_ARRAY_LEN(require_keys), "min"};

static int on_requires(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_manifest *m = target;
    for (size_t i = 0; i + 1 < v->len; i += 2) {
        const kb_ynode *key = v->items[i], *val = v->items[i + 1];
        kb_backend b = KB_BACKEND_CPU;
        bool known = false;
        for (unsigned k = KB_BACKEND_CUDA; k <= KB_BACKEND_CPU && !known; k++)
            if (strcmp(kbi_backend_name((kb_backend)k), key->value) == 0) {
                b = (kb_backend)k;
                known = true;
            }
        if (!known)
            return fail(p, key, keypath,
                        "unknown backend '%s' (expected one of: cuda, rocm, "
                        "metal, cpu)",
                        key->value);
        char *path = join_key(keypath, key->value);
        if (!path)
            return oom(p);
        int rc = val->type == KB_YNODE_MAP
                     ? apply_schema(p, val, path, &require_schema, &m->requires[b])
                     : fail(p, val, path, "expected a mapping {min: \"12.4\"}, got %s",
                            kbi_ynode_type_name(val->type));
        free(path);
        if (rc)
            return rc;
    }
    return 0;
}

static const schema_key top_keys[] = {
    {"name", KB_YNODE_SCALAR, true, on_name},
    {"version", KB_YNODE_SCALAR, true, on_version},
    {"summary", KB_YNODE_SCALAR, false, on_summary},
    {"license", KB_YNODE_SCALAR, false, on_license},
    {"abi", KB_YNODE_SCALAR, true, on_abi},
    {"header", KB_YNODE_SCALAR, true, on_header},
    {"exports", KB_YNODE_SEQ, true, on_exports},
    {"backends", KB_YNODE_MAP, true, on_backends},
    {"test", KB_YNODE_SCALAR, false, on_test},
    {"bench", KB_YNODE_SCALAR, false, on_bench},
    {"includes", KB_YNODE_SEQ, false, on_includes},
    {"defines", KB_YNODE_SEQ, false, on_defines},
    {"files", KB_YNODE_SEQ, false, on_files},
    {"dependencies", KB_YNODE_SEQ, false, on_dependencies},
    {"requires", KB_YNODE_MAP, false, on_requires},
};
static const schema top_schema = {top_keys, KB_ARRAY_LEN(top_keys),
                                  "name, version, summary, license, abi, header, exports, "
                                  "backends, test, bench, includes, defines, files, dependencies, "
                                  "requires"};

/* ---- the manifest as a whole ---- */

KB_EXTERN void kb_manifest_free(kb_manifest *m)
{
    if (!m)
        return;
    free(m->path);
    free(m->dir);
    free(m->name);
    free(m->version_text);
    free(m->summary);
    free(m->license);
    free(m->header);
    for (size_t i = 0; m->export_sigs && i < m->exports.len; i++)
        kbi_export_sig_clear(&m->export_sigs[i]);
    free(m->export_sigs);
    kbi_strv_free(&m->exports);
    for (size_t b = 0; b < KB_ARRAY_LEN(m->backends); b++) {
        kb_backend_spec *s = &m->backends[b];
        kbi_strv_free(&s->archs);
        kbi_strv_free(&s->flags);
        kbi_strv_free(&s->includes);
        kbi_strv_free(&s->defines);
        kbi_strv_free(&s->export_patterns);
        for (size_t i = 0; i < s->arch_flag_count; i++) {
            free(s->arch_flags[i].pattern);
            kbi_strv_free(&s->arch_flags[i].flags);
        }
        free(s->arch_flags);
        free(s->ptx);
        for (size_t i = 0; i < s->source_count; i++) {
            free(s->sources[i].path);
            free(s->sources[i].url);
            free(s->sources[i].sha256);
            kbi_strv_free(&s->sources[i].flags);
        }
        free(s->sources);
    }
    kbi_strv_free(&m->includes);
    kbi_strv_free(&m->defines);
    kbi_strv_free(&m->files);
    for (size_t i = 0; i < m->dep_count; i++) {
        free(m->deps[i].name);
        free(m->deps[i].url);
        free(m->deps[i].sha256);
        free(m->deps[i].file);
        kbi_strv_free(&m->deps[i].include);
    }
    free(m->deps);
    for (size_t i = 0; i < KB_ARRAY_LEN(m->requires); i++)
        free(m->requires[i].min);
    free(m->test);
    free(m->bench);
    free(m->license_file);
    free(m);
}

/* ---- per-backend export selection ---- */

static bool export_selected(const kb_backend_spec *b, const char *name)
{
    if (!b->exports_selected)
        return true;
    for (size_t i = 0; i < b->export_patterns.len; i++)
        if (fnmatch(b->export_patterns.items[i], name, 0) == 0)
            return true;
    return false;
}

int kbi_manifest_backend_exports(const kb_manifest *m, kb_backend b, kb_strv *out)
{
    for (size_t i = 0; i < m->exports.len; i++)
        if (export_selected(&m->backends[b], m->exports.items[i]) &&
            kbi_strv_push(out, m->exports.items[i]))
            return KB_ERR_NOMEM;
    return 0;
}

/* Each backend's selection names only top-level exports: a pattern matching none is a typo. */
static int check_export_selections(mparse *p, const kb_ynode *root)
{
    const kb_ynode *backends = kbi_ynode_get(root, "backends");
    for (size_t b = 0; backends && b < KB_ARRAY_LEN(p->m->backends); b++) {
        const kb_backend_spec *spec = &p->m->backends[b];
        for (size_t i = 0; spec->present && i < spec->export_patterns.len; i++) {
            const char *pat = spec->export_patterns.items[i];
            bool hit = false;
            for (size_t j = 0; j < p->m->exports.len && !hit; j++)
                hit = fnmatch(pat, p->m->exports.items[j], 0) == 0;
            if (hit)
                continue;
            const kb_ynode *bnode = kbi_ynode_get(backends, kbi_backend_name((kb_backend)b));
            const kb_ynode *at = bnode ? kbi_ynode_get(bnode, "exports") : NULL;
            char *path = kbi_asprintf("backends.%s.exports", kbi_backend_name((kb_backend)b));
            int rc = path ? fail(p, at ? at : backends, path,
                                 "'%s' matches none of the top-level exports", pat)
                          : oom(p);
            free(path);
            return rc;
        }
    }
    return 0;
}

bool kbi_source_is_cxx(const char *path)
{
    static const char *const exts[] = {".cpp", ".cc", ".cxx", ".C", ".c++"};
    for (size_t i = 0; i < KB_ARRAY_LEN(exts); i++)
        if (kbi_str_ends(path, exts[i]))
            return true;
    return false;
}

const char *kbi_flag_unportable(const char *prev, const char *flag)
{
    static const char *const path_flags[] = {"-I",         "-L",       "-isystem", "-iquote",
                                             "-idirafter", "-include", "-B"};
    for (size_t i = 0; i < KB_ARRAY_LEN(path_flags); i++) {
        size_t n = strlen(path_flags[i]);
        const char *path = NULL;
        if (prev && strcmp(prev, path_flags[i]) == 0)
            path = flag; /* "-I" "/x" */
        else if (strncmp(flag, path_flags[i], n) == 0 && flag[n])
            path = flag + n;
        if (!path)
            continue;
        if (path[0] == '/' || path[0] == '~')
            return "an absolute path is not reproducible on another machine (use a "
                   "package-relative folder, includes:, or a dependency)";
        if (strcmp(path, "..") == 0 || kbi_str_starts(path, "../") || strstr(path, "/../"))
            return "a path outside the package is not carried by the source artifact";
    }
    return NULL;
}

static int parse_tree(mparse *p, const kb_ynode *root)
{
    if (!root) {
        kb_ynode empty = {KB_YNODE_SCALAR, 1, 1, NULL, true, NULL, 0, 0};
        return fail(p, &empty, "",
                    "the file is empty; expected a mapping with name, version, "
                    "abi, header, exports, backends");
    }
    if (root->type != KB_YNODE_MAP)
        return fail(p, root, "", "expected a mapping at the top level, got %s",
                    kbi_ynode_type_name(root->type));
    int rc = apply_schema(p, root, "", &top_schema, p->m);
    return rc ? rc : check_export_selections(p, root);
}

static void find_license_file(kb_manifest *m)
{
    static const char *names[] = {"LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"};
    for (size_t i = 0; i < KB_ARRAY_LEN(names) && !m->license_file; i++) {
        char *full = kbi_path_join(m->dir, names[i]);
        if (full && kbi_path_exists(full) && !kbi_is_dir(full))
            m->license_file = kbi_strdup(names[i]);
        free(full);
    }
}

static char *dir_of(const char *file)
{
    const char *slash = strrchr(file, '/');
    if (!slash)
        return kbi_strdup(".");
    if (slash == file)
        return kbi_strdup("/");
    return kbi_strndup(file, (size_t)(slash - file));
}

static int parse_common(kb_ctx *ctx, kb_manifest **out, const char *file, const char *text,
                        size_t len, bool check_files)
{
    *out = NULL;
    kb_manifest *m = calloc(1, sizeof(*m));
    if (!m)
        return kbi_error_oom(ctx);
    m->path = kbi_strdup(file);
    m->dir = dir_of(file);
    if (!m->path || !m->dir) {
        kb_manifest_free(m);
        return kbi_error_oom(ctx);
    }
    mparse p = {ctx, file, m->dir, check_files, m};
    kb_ynode *root = NULL;
    int rc = kbi_yaml_load(ctx, &root, file, text, len, KB_ERR_MANIFEST);
    if (!rc)
        rc = parse_tree(&p, root);
    kbi_ynode_free(root);
    if (rc) {
        kb_manifest_free(m);
        return rc;
    }
    find_license_file(m);
    *out = m;
    return 0;
}

int kbi_manifest_parse(kb_ctx *ctx, kb_manifest **out, const char *name, const char *text,
                       size_t len)
{
    if (!out || !name || !text)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kbi_manifest_parse: NULL argument");
    return parse_common(ctx, out, name, text, len, false);
}

int kbi_manifest_load(kb_ctx *ctx, kb_manifest **out, const char *path, bool check_files)
{
    if (!out || !path)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kbi_manifest_load: NULL argument");
    *out = NULL;
    char *file = kbi_is_dir(path) ? kbi_path_join(path, "kernel.yaml") : kbi_strdup(path);
    if (!file)
        return kbi_error_oom(ctx);
    kb_buf text = KB_BUF_INIT;
    int rc = kbi_read_file(ctx, file, &text);
    if (!rc)
        rc = parse_common(ctx, out, file, text.data, text.len, check_files);
    kbi_buf_free(&text);
    free(file);
    return rc;
}
