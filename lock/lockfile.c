/* kbpkg.lock: resolve packages to pinned digests, write them with stable bytes, read them back. */
#include "lock/lockfile.h"
#include "model/ref.h"
#include "install/install.h"
#include "kbpkg/registry.h"
#include "kbpkg/trust.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A lockfile is a few KiB per package; refuse to parse something absurd. */
#define KB_LOCKFILE_MAX (16 * 1024 * 1024)

static void pin_clear(kb_lock_pin *p)
{
    free(p->target);
    free(p->manifest_digest);
    free(p->layer_digest);
}

static void package_clear(kb_lock_package *p)
{
    free(p->name);
    free(p->constraint);
    free(p->version);
    free(p->index_digest);
    for (size_t i = 0; i < p->count; i++)
        pin_clear(&p->pins[i]);
    free(p->pins);
}

KB_EXTERN void kb_lockfile_free(kb_lockfile *lock)
{
    if (!lock)
        return;
    for (size_t i = 0; i < lock->count; i++)
        package_clear(&lock->packages[i]);
    free(lock->packages);
    free(lock->registry);
    free(lock);
}

static int cmp_pins(const void *a, const void *b)
{
    return strcmp(((const kb_lock_pin *)a)->target, ((const kb_lock_pin *)b)->target);
}

static int cmp_packages(const void *a, const void *b)
{
    return strcmp(((const kb_lock_package *)a)->name, ((const kb_lock_package *)b)->name);
}

static void sort_lock(kb_lockfile *lock)
{
    for (size_t i = 0; i < lock->count; i++)
        if (lock->packages[i].count > 1)
            qsort(lock->packages[i].pins, lock->packages[i].count, sizeof(kb_lock_pin), cmp_pins);
    if (lock->count > 1)
        qsort(lock->packages, lock->count, sizeof(kb_lock_package), cmp_packages);
}

static kb_lock_pin *pin_add(kb_lock_package *p)
{
    if (kbi_array_grow((void **)&p->pins, &p->cap, p->count + 1, sizeof(*p->pins)))
        return NULL;
    kb_lock_pin *n = p->pins;
    memset(&n[p->count], 0, sizeof(*n));
    return &n[p->count++];
}

static kb_lock_package *package_add(kb_lockfile *lock)
{
    if (kbi_array_grow((void **)&lock->packages, &lock->cap, lock->count + 1,
                       sizeof(*lock->packages)))
        return NULL;
    kb_lock_package *n = lock->packages;
    memset(&n[lock->count], 0, sizeof(*n));
    return &n[lock->count++];
}

const kb_lock_pin *kbi_lock_package_pin(const kb_lock_package *p, const char *target)
{
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->pins[i].target, target) == 0)
            return &p->pins[i];
    return NULL;
}

/* ---- resolve ---- */

/* A target id matches a filter when equal or when the filter is a '-'-bounded prefix. */
static bool target_wanted(const char *target, const kb_lock_options *o)
{
    if (o->target_count == 0 || strcmp(target, KB_SOURCE_TARGET) == 0)
        return true;
    for (size_t i = 0; i < o->target_count; i++) {
        size_t n = strlen(o->targets[i]);
        if (strncmp(target, o->targets[i], n) == 0 && (target[n] == '\0' || target[n] == '-'))
            return true;
    }
    return false;
}

static int pin_entries(kb_ctx *ctx, kb_lock_package *p, kb_registry *r, kb_pkg_index *idx,
                       const kb_lock_options *o)
{
    size_t artifacts = 0;
    for (size_t i = 0; i < idx->count; i++) {
        kb_pkg_entry *e = &idx->entries[i];
        if (!target_wanted(e->target, o))
            continue;
        int rc = kbi_pkg_entry_resolve(e, r, idx->name);
        if (rc)
            return rc;
        kb_lock_pin *pin = pin_add(p);
        if (!pin)
            return kbi_error_oom(ctx);
        pin->target = kbi_strdup(e->target);
        pin->manifest_digest = kbi_strdup(e->manifest_digest);
        pin->layer_digest = kbi_strdup(e->layer_digest);
        pin->size = e->layer_size;
        if (!pin->target || !pin->manifest_digest || !pin->layer_digest)
            return kbi_error_oom(ctx);
        artifacts += !e->is_source;
    }
    if (artifacts == 0) {
        kb_buf have = KB_BUF_INIT;
        for (size_t i = 0; i < idx->count; i++)
            if (!idx->entries[i].is_source)
                kbi_buf_printf(&have, "%s%s", have.len ? ", " : "", idx->entries[i].target);
        int rc = kbi_error_set(ctx, KB_ERR_NOT_FOUND,
                               "%s@%s has no artifact for the requested target(s); it has: %s",
                               idx->name, idx->version, have.data ? have.data : "none");
        kbi_buf_free(&have);
        return rc;
    }
    return 0;
}

static int lock_one(kb_ctx *ctx, kb_lockfile *lock, kb_registry *r, const char *text,
                    const kb_lock_options *o)
{
    kb_pkgref ref = {0};
    kb_pkg_index *idx = NULL;
    int rc = kbi_pkgref_parse(ctx, &ref, text);
    for (size_t i = 0; !rc && i < lock->count; i++)
        if (strcmp(lock->packages[i].name, ref.name) == 0)
            rc = kbi_error_set(ctx, KB_ERR_INVALID, "%s is named twice", ref.name);
    kb_lock_package *p = NULL;
    if (!rc && !(p = package_add(lock)))
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_pkg_pick_version(&p->version, r, ref.name, ref.constraint_text);
    if (!rc)
        rc = kbi_pkg_index_fetch(&idx, r, ref.name, p->version, NULL);
    /* A pin is a promise that sync keeps: never pin what the policy would refuse to install. */
    if (!rc)
        rc = kb_trust_check(ctx, r, ref.name, p->version, idx->digest, o->allow_unsigned != 0);
    if (!rc) {
        p->name = kbi_strdup(ref.name);
        p->constraint = kbi_strdup(ref.constraint_text);
        p->index_digest = kbi_strdup(idx->digest);
        rc = (!p->name || !p->constraint || !p->index_digest) ? kbi_error_oom(ctx) : 0;
    }
    if (!rc)
        rc = pin_entries(ctx, p, r, idx, o);
    kbi_pkg_index_free(idx);
    kbi_pkgref_clear(&ref);
    return rc;
}

KB_EXTERN int kb_lockfile_resolve(kb_lockfile **out, kb_ctx *ctx, const char *const *refs,
                                  size_t count, const kb_lock_options *options)
{
    kb_lock_options defaults = KB_LOCK_OPTIONS_INIT;
    const kb_lock_options *o = options ? options : &defaults;
    *out = NULL;
    if (o->version != KB_LOCK_OPTIONS_VERSION)
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "kb_lockfile_resolve: options version %u, "
                             "expected %u",
                             o->version, KB_LOCK_OPTIONS_VERSION);
    if (count == 0)
        return kbi_error_set(ctx, KB_ERR_INVALID, "no package to lock");
    kb_lockfile *lock = calloc(1, sizeof(*lock));
    if (!lock)
        return kbi_error_oom(ctx);
    lock->registry = kbi_strdup(o->registry ? o->registry : kbi_config_str(ctx, "registry"));
    kb_registry *r = NULL;
    int rc = lock->registry ? kb_trust_registry_open(&r, ctx, lock->registry) : kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < count; i++)
        rc = lock_one(ctx, lock, r, refs[i], o);
    kb_registry_free(r);
    if (rc) {
        kb_lockfile_free(lock);
        return rc;
    }
    sort_lock(lock);
    *out = lock;
    return 0;
}

/* ---- write ---- */

static json_t *pin_json(const kb_lock_pin *pin)
{
    return json_pack("{s:s,s:s,s:I}", "manifest_digest", pin->manifest_digest, "layer_digest",
                     pin->layer_digest, "size", (json_int_t)pin->size);
}

static json_t *package_json(const kb_lock_package *p)
{
    json_t *arts = json_object();
    json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "name", p->name, "constraint", p->constraint,
                          "version", p->version, "index_digest", p->index_digest);
    for (size_t i = 0; arts && o && i < p->count; i++) {
        if (strcmp(p->pins[i].target, KB_SOURCE_TARGET) == 0)
            json_object_set_new(o, "source", pin_json(&p->pins[i]));
        else
            json_object_set_new(arts, p->pins[i].target, pin_json(&p->pins[i]));
    }
    json_object_set_new(o, "artifacts", arts);
    return o;
}

KB_EXTERN int kb_lockfile_write(kb_ctx *ctx, const kb_lockfile *lock, const char *path)
{
    json_t *pkgs = json_array();
    for (size_t i = 0; pkgs && i < lock->count; i++)
        json_array_append_new(pkgs, package_json(&lock->packages[i]));
    json_t *root = json_pack("{s:i,s:s,s:o}", "lockfile", KB_LOCKFILE_FORMAT, "registry",
                             lock->registry, "packages", pkgs);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(root);
    kb_buf b = KB_BUF_INIT;
    int rc = (!text || kbi_buf_printf(&b, "%s\n", text)) ? kbi_error_oom(ctx) : 0;
    free(text);
    if (!rc)
        rc = kbi_write_file_atomic(ctx, path, b.data, b.len, 0644);
    kbi_buf_free(&b);
    return rc;
}

/* ---- load ---- */

static int field_error(kb_ctx *ctx, const char *path, const char *where, const char *what)
{
    return kbi_error_set_path(ctx, KB_ERR_PARSE, path, 0, 0, "%s: %s: %s", path, where, what);
}

static int read_digest(char **out, kb_ctx *ctx, const char *path, const char *where, json_t *obj,
                       const char *key)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v || !kbi_digest_valid(v)) {
        char what[128];
        snprintf(what, sizeof(what), "'%s' must be a sha256:<64 hex> digest", key);
        return field_error(ctx, path, where, what);
    }
    return (*out = kbi_strdup(v)) ? 0 : kbi_error_oom(ctx);
}

static int read_pin(kb_ctx *ctx, kb_lock_package *p, const char *path, const char *where,
                    const char *target, json_t *obj)
{
    if (!json_is_object(obj))
        return field_error(ctx, path, where, "must be an object");
    json_t *size = json_object_get(obj, "size");
    if (!json_is_integer(size) || json_integer_value(size) < 0)
        return field_error(ctx, path, where, "'size' must be a non-negative integer");
    kb_lock_pin *pin = pin_add(p);
    if (!pin || !(pin->target = kbi_strdup(target)))
        return kbi_error_oom(ctx);
    pin->size = (uint64_t)json_integer_value(size);
    int rc = read_digest(&pin->manifest_digest, ctx, path, where, obj, "manifest_digest");
    if (!rc)
        rc = read_digest(&pin->layer_digest, ctx, path, where, obj, "layer_digest");
    return rc;
}

static int read_string(char **out, kb_ctx *ctx, const char *path, const char *where, json_t *obj,
                       const char *key)
{
    const char *v = json_string_value(json_object_get(obj, key));
    if (!v || !*v) {
        char what[96];
        snprintf(what, sizeof(what), "missing or empty '%s'", key);
        return field_error(ctx, path, where, what);
    }
    return (*out = kbi_strdup(v)) ? 0 : kbi_error_oom(ctx);
}

static int read_package(kb_ctx *ctx, kb_lockfile *lock, const char *path, size_t index, json_t *obj)
{
    char where[64], pin_where[256];
    snprintf(where, sizeof(where), "packages[%zu]", index);
    if (!json_is_object(obj))
        return field_error(ctx, path, where, "must be an object");
    kb_lock_package *p = package_add(lock);
    if (!p)
        return kbi_error_oom(ctx);
    int rc = read_string(&p->name, ctx, path, where, obj, "name");
    if (!rc && !kbi_pkg_name_valid(p->name))
        rc = field_error(ctx, path, where, "'name' is not org/name");
    if (!rc)
        rc = read_string(&p->constraint, ctx, path, where, obj, "constraint");
    if (!rc)
        rc = read_string(&p->version, ctx, path, where, obj, "version");
    if (!rc)
        rc = read_digest(&p->index_digest, ctx, path, where, obj, "index_digest");
    json_t *arts = json_object_get(obj, "artifacts");
    if (!rc && (!json_is_object(arts) || json_object_size(arts) == 0))
        rc = field_error(ctx, path, where, "'artifacts' must be a non-empty object");
    const char *target;
    json_t *v;
    json_object_foreach(arts, target, v)
    {
        if (rc)
            break;
        snprintf(pin_where, sizeof(pin_where), "%s (%s) artifacts.%s", where, p->name, target);
        rc = strcmp(target, KB_SOURCE_TARGET) == 0
                 ? field_error(ctx, path, pin_where, "the source belongs under 'source'")
                 : read_pin(ctx, p, path, pin_where, target, v);
    }
    json_t *src = json_object_get(obj, "source");
    if (!rc && src) {
        snprintf(pin_where, sizeof(pin_where), "%s (%s) source", where, p->name);
        rc = read_pin(ctx, p, path, pin_where, KB_SOURCE_TARGET, src);
    }
    return rc;
}

static int parse_lock(kb_ctx *ctx, kb_lockfile *lock, const char *path, json_t *root)
{
    json_t *format = json_object_get(root, "lockfile");
    if (!json_is_integer(format))
        return field_error(ctx, path, "top level", "missing 'lockfile' format number");
    if (json_integer_value(format) != KB_LOCKFILE_FORMAT)
        return kbi_error_set_path(ctx, KB_ERR_UNSUPPORTED, path, 0, 0,
                                  "%s: lockfile format %lld, this kbpkg reads format %d", path,
                                  (long long)json_integer_value(format), KB_LOCKFILE_FORMAT);
    int rc = read_string(&lock->registry, ctx, path, "top level", root, "registry");
    json_t *pkgs = json_object_get(root, "packages");
    if (!rc && !json_is_array(pkgs))
        rc = field_error(ctx, path, "top level", "'packages' must be an array");
    size_t i;
    json_t *v;
    json_array_foreach(pkgs, i, v)
    {
        if (rc)
            break;
        rc = read_package(ctx, lock, path, i, v);
    }
    return rc;
}

KB_EXTERN int kb_lockfile_load(kb_lockfile **out, kb_ctx *ctx, const char *path)
{
    *out = NULL;
    kb_buf b = KB_BUF_INIT;
    int rc = kbi_read_file(ctx, path, &b);
    if (!rc && b.len > KB_LOCKFILE_MAX)
        rc = kbi_error_set_path(ctx, KB_ERR_LIMIT, path, 0, 0, "%s: %zu bytes, more than %d", path,
                                b.len, KB_LOCKFILE_MAX);
    json_error_t jerr;
    json_t *root = rc ? NULL : json_loadb(b.data, b.len, JSON_REJECT_DUPLICATES, &jerr);
    if (!rc && !root)
        rc = kbi_error_set_path(ctx, KB_ERR_PARSE, path, (unsigned)jerr.line, (unsigned)jerr.column,
                                "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
    kb_lockfile *lock = rc ? NULL : calloc(1, sizeof(*lock));
    if (!rc && !lock)
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = parse_lock(ctx, lock, path, root);
    json_decref(root);
    kbi_buf_free(&b);
    if (rc) {
        kb_lockfile_free(lock);
        return rc;
    }
    sort_lock(lock);
    *out = lock;
    return 0;
}

/* ---- accessors ---- */

KB_EXTERN const char *kb_lockfile_registry(const kb_lockfile *lock)
{
    return lock ? lock->registry : NULL;
}

KB_EXTERN size_t kb_lockfile_package_count(const kb_lockfile *lock)
{
    return lock ? lock->count : 0;
}

KB_EXTERN int kb_lockfile_package(const char **name, const char **constraint, const char **version,
                                  const char **index_digest, size_t *artifact_count,
                                  const kb_lockfile *lock, size_t index)
{
    if (!lock || index >= lock->count)
        return KB_ERR_NOT_FOUND;
    const kb_lock_package *p = &lock->packages[index];
    if (name)
        *name = p->name;
    if (constraint)
        *constraint = p->constraint;
    if (version)
        *version = p->version;
    if (index_digest)
        *index_digest = p->index_digest;
    if (artifact_count)
        *artifact_count = p->count;
    return 0;
}

KB_EXTERN int kb_lockfile_artifact(const char **target, const char **manifest_digest,
                                   const char **layer_digest, uint64_t *size,
                                   const kb_lockfile *lock, size_t package, size_t index)
{
    if (!lock || package >= lock->count || index >= lock->packages[package].count)
        return KB_ERR_NOT_FOUND;
    const kb_lock_pin *pin = &lock->packages[package].pins[index];
    if (target)
        *target = pin->target;
    if (manifest_digest)
        *manifest_digest = pin->manifest_digest;
    if (layer_digest)
        *layer_digest = pin->layer_digest;
    if (size)
        *size = pin->size;
    return 0;
}

int kbi_lockfile_pinned_blobs(kb_strv *out, const kb_lockfile *lock)
{
    for (size_t i = 0; lock && i < lock->count; i++)
        for (size_t j = 0; j < lock->packages[i].count; j++)
            if (!kbi_strv_contains(out, lock->packages[i].pins[j].layer_digest) &&
                kbi_strv_push(out, lock->packages[i].pins[j].layer_digest))
                return KB_ERR_NOMEM;
    return 0;
}
