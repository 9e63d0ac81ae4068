/* kernel.yaml: the table-driven schema, its handlers, and loading a manifest from a file. */
#include "manifests/manifest.h"
#include "manifests/manifest_check.h"
#include "model/ref.h"
#include "core/yaml_tree.h"

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
    kb_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    kb_error_set_path(p->ctx, KB_ERR_MANIFEST, p->file, n->line, n->column, "%s:%u:%u: %s%s%s",
                      p->file, n->line, n->column, keypath, *keypath ? ": " : "",
                      msg.data ? msg.data : "");
    kb_buf_free(&msg);
    return KB_ERR_MANIFEST;
}

static int oom(mparse *p)
{
    return kb_error_oom(p->ctx);
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
    return *keypath ? kb_asprintf("%s.%s", keypath, key) : kb_strdup(key);
}

static int check_required(mparse *p, const kb_ynode *map, const char *keypath, const schema *s)
{
    for (size_t i = 0; i < s->len; i++)
        if (s->keys[i].required && !kb_ynode_get(map, s->keys[i].name))
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
        rc = fail(p, value, path, "expected %s, got %s", kb_ynode_type_name(k->type),
                  kb_ynode_type_name(value->type));
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
        return fail(p, n, keypath, "expected a scalar, got %s", kb_ynode_type_name(n->type));
    if (!*n->value)
        return fail(p, n, keypath, "must not be empty");
    return 0;
}

static int take_string(mparse *p, const kb_ynode *n, const char *keypath, char **dst)
{
    int rc = need_scalar(p, n, keypath);
    if (rc)
        return rc;
    char *s = kb_strdup(n->value);
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
    if (!kb_package_path_ok(n->value))
        return fail(p, n, keypath,
                    "'%s' must be a relative path inside the package (no leading '/', no '..')",
                    n->value);
    if (must_exist && p->check_files) {
        char *full = kb_path_join(p->dir, n->value);
        bool exists = full && kb_path_exists(full);
        free(full);
        if (!exists)
            return fail(p, n, keypath, "'%s' does not exist in %s", n->value, p->dir);
    }
    return 0;
}

/* Item i's key path: "exports[2]". */
static char *item_path(const char *keypath, size_t i)
{
    return kb_asprintf("%s[%zu]", keypath, i);
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
    if (kb_strv_contains(v, item->value))
        return fail(p, item, itempath, "'%s' is listed twice", item->value);
    return kb_strv_push(v, item->value) ? oom(p) : 0;
}

/* ---- top-level handlers ---- */

static int on_name(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_manifest *m = target;
    int rc = take_string(p, v, keypath, &m->name);
    if (!rc && !kb_pkg_name_valid(v->value))
        rc = fail(p, v, keypath, "'%s' is not a package name (%s)", v->value, KB_PKG_NAME_RULE);
    return rc;
}

static int on_version(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_manifest *m = target;
    int rc = take_string(p, v, keypath, &m->version_text);
    if (rc)
        return rc;
    if (kb_semver_parse(p->ctx, &m->version, v->value)) {
        char *why = kb_strdup(kb_ctx_last_error(p->ctx)->message);
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
    if (!v->plain || !kb_parse_u64(v->value, &n))
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

static int on_export_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    int rc = need_scalar(p, item, itempath);
    if (rc)
        return rc;
    if (!kb_c_identifier_ok(item->value))
        return fail(p, item, itempath, "'%s' is not a C identifier", item->value);
    return push_unique(p, item, itempath, target);
}

static int on_exports(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, true, on_export_item, &((kb_manifest *)target)->exports);
}

/* ---- backends ---- */

static int on_arch_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    kb_backend_spec *b = target;
    int rc = need_scalar(p, item, itempath);
    if (rc)
        return rc;
    char why[256] = "";
    if (!kb_arch_valid(b->backend, item->value, why, sizeof(why)))
        return fail(p, item, itempath, "'%s' is not a %s arch (%s)", item->value,
                    kb_backend_display_name(b->backend), why);
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
    if (!kb_ptx_arch_canonical(v->value, canonical, sizeof(canonical)))
        return fail(p, v, keypath,
                    "'%s' is not a PTX arch (sm_XY or compute_XY, 75 or newer, e.g. sm_80)",
                    v->value);
    char *s = kb_strdup(canonical);
    if (!s)
        return oom(p);
    free(b->ptx);
    b->ptx = s;
    snprintf(b->ptx_target, sizeof(b->ptx_target), "compute_%s", canonical + 3);
    return 0;
}

static int on_flag_item(mparse *p, const kb_ynode *item, const char *itempath, void *target)
{
    int rc = need_scalar(p, item, itempath);
    return rc ? rc : kb_strv_push(target, item->value) ? oom(p) : 0;
}

static int on_flags(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, false, on_flag_item, &((kb_backend_spec *)target)->flags);
}

/* A source given as a mapping: {url, sha256, path}. */
static int on_source_url(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_source *s = target;
    int rc = take_string(p, v, keypath, &s->url);
    if (!rc && !kb_source_url_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not an https://, http:// or file:// URL", v->value);
    return rc;
}

static int on_source_sha256(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    kb_source *s = target;
    int rc = take_string(p, v, keypath, &s->sha256);
    if (!rc && !kb_sha256_hex_ok(v->value))
        rc = fail(p, v, keypath, "'%s' is not a sha256 digest (64 lowercase hex digits)", v->value);
    return rc;
}

static int on_source_path(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return take_package_path(p, v, keypath, &((kb_source *)target)->path, false);
}

static const schema_key source_keys[] = {
    {"url", KB_YNODE_SCALAR, false, on_source_url},
    {"sha256", KB_YNODE_SCALAR, false, on_source_sha256},
    {"path", KB_YNODE_SCALAR, false, on_source_path},
};
static const schema source_schema = {source_keys, KB_ARRAY_LEN(source_keys), "url, sha256, path"};

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
        s->path = kb_url_file_name(s->url);
        if (!s->path)
            return fail(p, map, itempath, "cannot name a file after '%s': add 'path'", s->url);
    }
    if (!s->url && p->check_files) {
        char *full = kb_path_join(p->dir, s->path);
        bool exists = full && kb_path_exists(full);
        free(full);
        if (!exists) {
            const kb_ynode *at = kb_ynode_get(map, "path");
            return fail(p, at ? at : map, itempath, "'%s' does not exist in %s", s->path, p->dir);
        }
    }
    return 0;
}

static kb_source *new_source(kb_backend_spec *b)
{
    kb_source *grown = realloc(b->sources, (b->source_count + 1) * sizeof(*grown));
    if (!grown)
        return NULL;
    b->sources = grown;
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
                    kb_ynode_type_name(item->type));
    int rc = apply_schema(p, item, itempath, &source_schema, s);
    return rc ? rc : finish_source(p, item, itempath, s);
}

static int on_sources(mparse *p, const kb_ynode *v, const char *keypath, void *target)
{
    return each_item(p, v, keypath, true, on_source_item, target);
}

static const schema_key cuda_keys[] = {
    {"archs", KB_YNODE_SEQ, true, on_archs},
    {"ptx", KB_YNODE_SCALAR, false, on_ptx},
    {"sources", KB_YNODE_SEQ, true, on_sources},
    {"flags", KB_YNODE_SEQ, false, on_flags},
};
static const schema_key rocm_keys[] = {
    {"archs", KB_YNODE_SEQ, true, on_archs},
    {"sources", KB_YNODE_SEQ, true, on_sources},
    {"flags", KB_YNODE_SEQ, false, on_flags},
};
static const schema_key metal_keys[] = {
    {"sources", KB_YNODE_SEQ, true, on_sources},
    {"flags", KB_YNODE_SEQ, false, on_flags},
};
static const schema_key cpu_keys[] = {
    {"archs", KB_YNODE_SEQ, false, on_archs},
    {"sources", KB_YNODE_SEQ, true, on_sources},
    {"flags", KB_YNODE_SEQ, false, on_flags},
};

static const struct backend_schema {
    const char *name;
    kb_backend backend;
    schema keys;
} backend_schemas[] = {
    {"cuda", KB_BACKEND_CUDA, {cuda_keys, KB_ARRAY_LEN(cuda_keys), "archs, ptx, sources, flags"}},
    {"rocm", KB_BACKEND_ROCM, {rocm_keys, KB_ARRAY_LEN(rocm_keys), "archs, sources, flags"}},
    {"metal", KB_BACKEND_METAL, {metal_keys, KB_ARRAY_LEN(metal_keys), "sources, flags"}},
    {"cpu", KB_BACKEND_CPU, {cpu_keys, KB_ARRAY_LEN(cpu_keys), "archs, sources, flags"}},
};

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
                 : fail(p, v, path, "expected a mapping, got %s", kb_ynode_type_name(v->type));
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
};
static const schema top_schema = {
    top_keys, KB_ARRAY_LEN(top_keys),
    "name, version, summary, license, abi, header, exports, backends, test"};

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
    kb_strv_free(&m->exports);
    for (size_t b = 0; b < KB_ARRAY_LEN(m->backends); b++) {
        kb_backend_spec *s = &m->backends[b];
        kb_strv_free(&s->archs);
        kb_strv_free(&s->flags);
        free(s->ptx);
        for (size_t i = 0; i < s->source_count; i++) {
            free(s->sources[i].path);
            free(s->sources[i].url);
            free(s->sources[i].sha256);
        }
        free(s->sources);
    }
    free(m->test);
    free(m->license_file);
    free(m);
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
                    kb_ynode_type_name(root->type));
    return apply_schema(p, root, "", &top_schema, p->m);
}

static void find_license_file(kb_manifest *m)
{
    static const char *names[] = {"LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"};
    for (size_t i = 0; i < KB_ARRAY_LEN(names) && !m->license_file; i++) {
        char *full = kb_path_join(m->dir, names[i]);
        if (full && kb_path_exists(full) && !kb_is_dir(full))
            m->license_file = kb_strdup(names[i]);
        free(full);
    }
}

static char *dir_of(const char *file)
{
    const char *slash = strrchr(file, '/');
    if (!slash)
        return kb_strdup(".");
    if (slash == file)
        return kb_strdup("/");
    return kb_strndup(file, (size_t)(slash - file));
}

static int parse_common(kb_ctx *ctx, kb_manifest **out, const char *file, const char *text,
                        size_t len, bool check_files)
{
    *out = NULL;
    kb_manifest *m = calloc(1, sizeof(*m));
    if (!m)
        return kb_error_oom(ctx);
    m->path = kb_strdup(file);
    m->dir = dir_of(file);
    if (!m->path || !m->dir) {
        kb_manifest_free(m);
        return kb_error_oom(ctx);
    }
    mparse p = {ctx, file, m->dir, check_files, m};
    kb_ynode *root = NULL;
    int rc = kb_yaml_load(ctx, &root, file, text, len, KB_ERR_MANIFEST);
    if (!rc)
        rc = parse_tree(&p, root);
    kb_ynode_free(root);
    if (rc) {
        kb_manifest_free(m);
        return rc;
    }
    find_license_file(m);
    *out = m;
    return 0;
}

int kb_manifest_parse(kb_ctx *ctx, kb_manifest **out, const char *name, const char *text,
                      size_t len)
{
    if (!out || !name || !text)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_manifest_parse: NULL argument");
    return parse_common(ctx, out, name, text, len, false);
}

int kb_manifest_load(kb_ctx *ctx, kb_manifest **out, const char *path, bool check_files)
{
    if (!out || !path)
        return kb_error_set(ctx, KB_ERR_INVALID, "kb_manifest_load: NULL argument");
    *out = NULL;
    char *file = kb_is_dir(path) ? kb_path_join(path, "kernel.yaml") : kb_strdup(path);
    if (!file)
        return kb_error_oom(ctx);
    kb_buf text = KB_BUF_INIT;
    int rc = kb_read_file(ctx, file, &text);
    if (!rc)
        rc = parse_common(ctx, out, file, text.data, text.len, check_files);
    kb_buf_free(&text);
    free(file);
    return rc;
}
