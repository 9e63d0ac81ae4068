/* Config files: layering system, user and project YAML files, and writing one key back. */
#include "kbpkg/manifest.h"
#include "core/yaml_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#define KB_SYSTEM_CONFIG "/etc/kbpkg/config.yaml"

/* Called for each leaf "a.b.c: value" of a (possibly nested) config mapping. */
typedef int (*leaf_fn)(void *data, const char *key, const kb_ynode *key_node,
                       const kb_ynode *value);

typedef struct file_reader {
    kb_ctx *ctx;
    kb_ctx *scratch; /* checks keys and values whatever the layers of ctx hold */
    const char *path;
    kb_config_origin origin;
} file_reader;

static int fail_at(kb_ctx *ctx, const char *path, const kb_ynode *n, const char *what)
{
    return kbi_error_set_path(ctx, KB_ERR_CONFIG, path, n->line, n->column, "%s:%u:%u: %s", path,
                              n->line, n->column, what);
}

static int walk_leaves(kb_ctx *ctx, const char *path, const kb_ynode *map, const char *prefix,
                       leaf_fn fn, void *data)
{
    for (size_t i = 0; i + 1 < map->len; i += 2) {
        const kb_ynode *k = map->items[i], *v = map->items[i + 1];
        char *key = *prefix ? kbi_asprintf("%s.%s", prefix, k->value) : kbi_strdup(k->value);
        if (!key)
            return kbi_error_oom(ctx);
        int rc;
        if (v->type == KB_YNODE_MAP)
            rc = walk_leaves(ctx, path, v, key, fn, data);
        else if (v->type == KB_YNODE_SEQ) {
            char *msg = kbi_asprintf("%s: expected a scalar value, got a sequence", key);
            rc = fail_at(ctx, path, v, msg ? msg : "expected a scalar value");
            free(msg);
        } else
            rc = fn(data, key, k, v);
        free(key);
        if (rc)
            return rc;
    }
    return 0;
}

/* Parse a config file into its tree; *root NULL for an empty file. */
static int read_tree(kb_ctx *ctx, kb_ynode **root, const char *path)
{
    kb_buf text = KB_BUF_INIT;
    int rc = kbi_read_file(ctx, path, &text);
    if (!rc)
        rc = kbi_yaml_load(ctx, root, path, text.data, text.len, KB_ERR_CONFIG);
    kbi_buf_free(&text);
    if (!rc && *root && (*root)->type != KB_YNODE_MAP) {
        char *msg = kbi_asprintf("expected a mapping of settings, got %s",
                                 kbi_ynode_type_name((*root)->type));
        rc = fail_at(ctx, path, *root, msg ? msg : "expected a mapping");
        free(msg);
        kbi_ynode_free(*root);
        *root = NULL;
    }
    return rc;
}

static kb_ctx *new_scratch_ctx(void)
{
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    kb_ctx *scratch = NULL;
    return kb_ctx_new(&scratch, &o) ? NULL : scratch;
}

/* Check key and value on the scratch ctx; on failure the error points into the file. */
static int check_setting(kb_ctx *ctx, kb_ctx *scratch, const char *path, const char *key,
                         const kb_ynode *key_node, const kb_ynode *value)
{
    const char *unused;
    if (kb_ctx_get(&unused, scratch, key)) {
        char *msg = kbi_asprintf("unknown configuration key '%s'", key);
        int rc = fail_at(ctx, path, key_node, msg ? msg : "unknown configuration key");
        free(msg);
        return rc;
    }
    if (kbi_config_set_layer(scratch, key, value->value, KB_CONFIG_FLAG, NULL)) {
        char *msg = kbi_strdup(kb_ctx_last_error(scratch)->message);
        int rc = fail_at(ctx, path, value, msg ? msg : "bad value");
        free(msg);
        return rc;
    }
    return 0;
}

static int apply_leaf(void *data, const char *key, const kb_ynode *key_node, const kb_ynode *value)
{
    file_reader *r = data;
    int rc = check_setting(r->ctx, r->scratch, r->path, key, key_node, value);
    return rc ? rc : kbi_config_set_layer(r->ctx, key, value->value, r->origin, r->path);
}

static int load_file(kb_ctx *ctx, const char *path, kb_config_origin origin)
{
    if (!kbi_path_exists(path))
        return 0;
    kb_ynode *root = NULL;
    int rc = read_tree(ctx, &root, path);
    if (rc || !root)
        return rc;
    file_reader r = {ctx, new_scratch_ctx(), path, origin};
    rc = r.scratch ? walk_leaves(ctx, path, root, "", apply_leaf, &r) : kbi_error_oom(ctx);
    kb_ctx_free(r.scratch);
    kbi_ynode_free(root);
    return rc;
}

KB_EXTERN int kb_config_file_path(char **out, const kb_ctx *ctx, kb_config_origin layer)
{
    if (!out || !ctx)
        return KB_ERR_INVALID;
    *out = NULL;
    if (layer == KB_CONFIG_SYSTEM) {
        const char *env = getenv("KBPKG_SYSTEM_CONFIG");
        *out = kbi_strdup(env && *env ? env : KB_SYSTEM_CONFIG);
    } else if (layer == KB_CONFIG_USER) {
        *out = kbi_path_join(kbi_config_str(ctx, "config.dir"), "config.yaml");
    } else if (layer == KB_CONFIG_PROJECT) {
        char cwd[4096];
        if (!getcwd(cwd, sizeof(cwd)))
            return KB_ERR_IO;
        *out = kbi_path_join(cwd, "kbpkg.yaml");
    } else
        return KB_ERR_INVALID;
    return *out ? 0 : KB_ERR_NOMEM;
}

int kbi_config_load_files(kb_ctx *ctx)
{
    /* In order: the user file's location (config.dir) may come from the system file. */
    static const kb_config_origin layers[] = {KB_CONFIG_SYSTEM, KB_CONFIG_USER, KB_CONFIG_PROJECT};
    for (size_t i = 0; i < KB_ARRAY_LEN(layers); i++) {
        char *path = NULL;
        int rc = kb_config_file_path(&path, ctx, layers[i]);
        if (rc)
            return rc == KB_ERR_NOMEM ? kbi_error_oom(ctx)
                                      : kbi_error_set(ctx, rc, "cannot find the current folder");
        rc = load_file(ctx, path, layers[i]);
        free(path);
        if (rc)
            return rc;
    }
    return 0;
}

/* ---- writing ---- */

typedef struct setting_list {
    kb_strv keys;
    kb_strv values;
} setting_list;

static int collect_leaf(void *data, const char *key, const kb_ynode *key_node,
                        const kb_ynode *value)
{
    setting_list *l = data;
    if (kbi_strv_contains(&l->keys, key))
        return 0;
    return kbi_strv_push(&l->keys, key) || kbi_strv_push(&l->values, value->value) ? KB_ERR_NOMEM
                                                                                   : 0;
}

static int set_in_list(setting_list *l, const char *key, const char *value)
{
    for (size_t i = 0; i < l->keys.len; i++)
        if (strcmp(l->keys.items[i], key) == 0) {
            char *v = kbi_strdup(value);
            if (!v)
                return KB_ERR_NOMEM;
            free(l->values.items[i]);
            l->values.items[i] = v;
            return 0;
        }
    return kbi_strv_push(&l->keys, key) || kbi_strv_push(&l->values, value) ? KB_ERR_NOMEM : 0;
}

static int emitter_write(void *data, unsigned char *buffer, size_t size)
{
    return kbi_buf_append(data, buffer, size) == 0;
}

static int emit_scalar(yaml_emitter_t *e, const char *s)
{
    yaml_event_t ev;
    yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1,
                                 YAML_ANY_SCALAR_STYLE);
    return yaml_emitter_emit(e, &ev);
}

/* Render the settings as one flat block mapping; libyaml quotes what needs quoting. */
static int render_yaml(const setting_list *l, kb_buf *out)
{
    yaml_emitter_t e;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&e))
        return KB_ERR_NOMEM;
    yaml_emitter_set_output(&e, emitter_write, out);
    yaml_emitter_set_unicode(&e, 1);
    int ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
             yaml_emitter_emit(&e, &ev) &&
             yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
             yaml_emitter_emit(&e, &ev) &&
             yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE) &&
             yaml_emitter_emit(&e, &ev);
    for (size_t i = 0; ok && i < l->keys.len; i++)
        ok = emit_scalar(&e, l->keys.items[i]) && emit_scalar(&e, l->values.items[i]);
    ok = ok && yaml_mapping_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev) &&
         yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&e, &ev) &&
         yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&e, &ev);
    yaml_emitter_delete(&e);
    return ok ? 0 : KB_ERR_NOMEM;
}

static int read_settings(kb_ctx *ctx, const char *path, setting_list *l)
{
    if (!kbi_path_exists(path))
        return 0;
    kb_ynode *root = NULL;
    int rc = read_tree(ctx, &root, path);
    if (!rc && root)
        rc = walk_leaves(ctx, path, root, "", collect_leaf, l);
    kbi_ynode_free(root);
    return rc == KB_ERR_NOMEM ? kbi_error_oom(ctx) : rc;
}

static int write_settings(kb_ctx *ctx, const char *path, const setting_list *l)
{
    kb_buf yaml = KB_BUF_INIT;
    int rc = render_yaml(l, &yaml);
    if (rc) {
        kbi_buf_free(&yaml);
        return kbi_error_oom(ctx);
    }
    char *dir = kbi_strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash && slash != dir) {
        *slash = '\0';
        rc = kbi_mkdir_p(ctx, dir, 0755);
    }
    free(dir);
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, yaml.data, yaml.len, 0644);
    kbi_buf_free(&yaml);
    return rc;
}

KB_EXTERN int kb_config_write(kb_ctx *ctx, kb_config_origin layer, const char *key,
                              const char *value)
{
    if (!ctx || !key || !value)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_config_write: NULL argument");
    if (layer != KB_CONFIG_SYSTEM && layer != KB_CONFIG_USER && layer != KB_CONFIG_PROJECT)
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "cannot write the %s layer: only system, user "
                             "and project have files",
                             kb_config_origin_name(layer));
    kb_ctx *scratch = new_scratch_ctx();
    if (!scratch)
        return kbi_error_oom(ctx);
    int rc = kb_ctx_set(scratch, key, value);
    if (rc)
        kbi_error_set(ctx, rc, "%s", kb_ctx_last_error(scratch)->message);
    kb_ctx_free(scratch);
    if (rc)
        return rc;
    char *path = NULL;
    if ((rc = kb_config_file_path(&path, ctx, layer)))
        return kbi_error_set(ctx, rc, "cannot name the %s config file",
                             kb_config_origin_name(layer));
    setting_list l = {KB_STRV_INIT, KB_STRV_INIT};
    rc = read_settings(ctx, path, &l);
    if (!rc && set_in_list(&l, key, value))
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = write_settings(ctx, path, &l);
    if (!rc)
        rc = kbi_config_set_layer(ctx, key, value, layer, path);
    kbi_strv_free(&l.keys);
    kbi_strv_free(&l.values);
    free(path);
    return rc;
}
