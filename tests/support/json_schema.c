/* A small JSON Schema validator for the --json schemas under docs/json/ (see json_schema.h). */
#define _GNU_SOURCE
#include "json_schema.h"
#include "core/internal.h"

#include <regex.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct vstate {
    const char *dir;
    json_t *files; /* file name -> its loaded schema (the roots "file.json#..." refs use) */
    kb_buf errors; /* one line per problem */
    size_t count;
} vstate;

static const char *const known_keywords[] = {"$schema",
                                             "$id",
                                             "$defs",
                                             "$comment",
                                             "title",
                                             "description",
                                             "examples",
                                             "$ref",
                                             "type",
                                             "const",
                                             "enum",
                                             "pattern",
                                             "minimum",
                                             "minItems",
                                             "properties",
                                             "required",
                                             "additionalProperties",
                                             "unevaluatedProperties",
                                             "items",
                                             "allOf",
                                             "anyOf",
                                             "oneOf"};

static void problem(vstate *v, const char *path, const char *fmt, ...) KB_PRINTF(3, 4);

static void problem(vstate *v, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    kbi_buf_printf(&v->errors, "%s: ", path);
    kbi_buf_vprintf(&v->errors, fmt, ap);
    kbi_buf_puts(&v->errors, "\n");
    va_end(ap);
    v->count++;
}

static const char *type_name(const json_t *d)
{
    switch (json_typeof(d)) {
    case JSON_OBJECT:
        return "object";
    case JSON_ARRAY:
        return "array";
    case JSON_STRING:
        return "string";
    case JSON_INTEGER:
        return "integer";
    case JSON_REAL:
        return "number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "boolean";
    default:
        return "null";
    }
}

/* 1 when d has type t, 0 when not, -1 when t names no JSON type. */
static int has_type(const char *t, const json_t *d)
{
    if (strcmp(t, "number") == 0)
        return json_is_number(d);
    static const char *const names[] = {"object", "array", "string", "integer", "boolean", "null"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (strcmp(t, names[i]) == 0)
            return strcmp(type_name(d), t) == 0;
    return -1;
}

/* The schema a "$ref" names, and the root its own "#/..." refs resolve in; NULL if none. */
static const json_t *resolve(vstate *v, const json_t *root, const char *ref,
                             const json_t **new_root)
{
    const char *hash = strchr(ref, '#');
    size_t file_len = hash ? (size_t)(hash - ref) : strlen(ref);
    const json_t *base = root;
    if (file_len) {
        char *file = strndup(ref, file_len);
        json_t *loaded = json_object_get(v->files, file);
        if (!loaded) {
            char *path = kbi_asprintf("%s/%s", v->dir, file);
            json_error_t jerr;
            loaded = json_load_file(path, 0, &jerr);
            if (loaded)
                json_object_set_new(v->files, file, loaded);
            else
                problem(v, "schema", "%s: %s (line %d)", path, jerr.text, jerr.line);
            free(path);
        }
        free(file);
        if (!loaded)
            return NULL;
        base = loaded;
    }
    *new_root = base;
    const json_t *at = base;
    /* a JSON pointer: "/$defs/name" (no ~ escapes in our names) */
    const char *p = hash ? hash + 1 : "";
    while (at && *p == '/') {
        const char *end = strchr(p + 1, '/');
        size_t n = end ? (size_t)(end - p - 1) : strlen(p + 1);
        char *seg = strndup(p + 1, n);
        at = json_object_get(at, seg);
        free(seg);
        p += n + 1;
    }
    return at && !*p ? at : NULL;
}

static void validate(vstate *v, const json_t *root, const json_t *schema, const json_t *doc,
                     const char *path, json_t *evaluated);

/* Validate one alternative on the side: its problems are counted and returned as text
 * (owned, NULL when none) instead of being reported. */
static size_t try_branch(vstate *v, const json_t *root, const json_t *schema, const json_t *doc,
                         const char *path, json_t *evaluated, char **text)
{
    size_t len0 = v->errors.len, count0 = v->count;
    validate(v, root, schema, doc, path, evaluated);
    size_t n = v->count - count0;
    *text = n ? kbi_strdup(v->errors.data + len0) : NULL;
    if (v->errors.data) {
        v->errors.len = len0;
        v->errors.data[len0] = '\0';
    }
    v->count = count0;
    return n;
}

static void check_alternatives(vstate *v, const json_t *root, const json_t *alts, bool one_of,
                               const json_t *doc, const char *path, json_t *evaluated)
{
    const char *word = one_of ? "oneOf" : "anyOf";
    if (!json_is_array(alts) || json_array_size(alts) == 0) {
        problem(v, path, "schema: %s needs a non-empty array", word);
        return;
    }
    size_t matches = 0, best_n = (size_t)-1, i;
    char *best = NULL;
    json_t *alt, *merged = json_object();
    json_array_foreach(alts, i, alt)
    {
        json_t *eval = json_object();
        char *text = NULL;
        size_t n = try_branch(v, root, alt, doc, path, eval, &text);
        if (n == 0) {
            matches++;
            json_object_update(merged, eval);
        } else if (n < best_n) {
            best_n = n;
            free(best);
            best = text;
            text = NULL;
        }
        free(text);
        json_decref(eval);
    }
    if (matches == 0)
        problem(v, path, "matches none of the %zu %s alternatives; the closest says:\n  %s",
                json_array_size(alts), word, best ? best : "");
    else if (one_of && matches > 1)
        problem(v, path, "matches %zu oneOf alternatives, not exactly one", matches);
    else if (evaluated)
        json_object_update(evaluated, merged);
    free(best);
    json_decref(merged);
}

static void check_object(vstate *v, const json_t *root, const json_t *schema, const json_t *doc,
                         const char *path, json_t *evaluated)
{
    const json_t *props = json_object_get(schema, "properties");
    const json_t *required = json_object_get(schema, "required");
    const json_t *additional = json_object_get(schema, "additionalProperties");
    const char *key;
    json_t *sub;
    if (props && !json_is_object(props))
        problem(v, path, "schema: properties must be an object");
    json_object_foreach((json_t *)doc, key, sub)
    {
        const json_t *ps = props ? json_object_get(props, key) : NULL;
        if (!ps && !additional)
            continue;
        char *child = kbi_asprintf("%s.%s", path, key);
        if (ps)
            validate(v, root, ps, sub, child, NULL);
        else if (json_is_false(additional))
            problem(v, child, "key '%s' is not documented", key);
        else
            validate(v, root, additional, sub, child, NULL);
        json_object_set_new(evaluated, key, json_true());
        free(child);
    }
    size_t i;
    json_t *name;
    if (required && !json_is_array(required))
        problem(v, path, "schema: required must be an array");
    json_array_foreach((json_t *)required, i, name)
    {
        const char *k = json_string_value(name);
        if (!k)
            problem(v, path, "schema: required holds a non-string");
        else if (!props || !json_object_get(props, k))
            problem(v, path, "schema: required key '%s' is not in properties", k);
        else if (!json_object_get(doc, k))
            problem(v, path, "missing required key '%s'", k);
    }
}

static void check_array(vstate *v, const json_t *root, const json_t *schema, const json_t *doc,
                        const char *path)
{
    const json_t *min = json_object_get(schema, "minItems");
    if (min && json_array_size(doc) < (size_t)json_integer_value(min))
        problem(v, path, "%zu items, at least %lld expected", json_array_size(doc),
                (long long)json_integer_value(min));
    const json_t *items = json_object_get(schema, "items");
    if (!items)
        return;
    size_t i;
    json_t *el;
    json_array_foreach((json_t *)doc, i, el)
    {
        char *child = kbi_asprintf("%s[%zu]", path, i);
        validate(v, root, items, el, child, NULL);
        free(child);
    }
}

static void check_type(vstate *v, const json_t *type, const json_t *doc, const char *path)
{
    kb_buf want = KB_BUF_INIT;
    bool ok = false;
    size_t i, n = json_is_array(type) ? json_array_size(type) : 1;
    for (i = 0; i < n; i++) {
        const json_t *t = json_is_array(type) ? json_array_get(type, i) : type;
        int r = json_is_string(t) ? has_type(json_string_value(t), doc) : -1;
        if (r < 0) {
            problem(v, path, "schema: bad type");
            ok = true; /* reported once, as a schema problem */
            break;
        }
        ok = ok || r;
        kbi_buf_printf(&want, "%s%s", i ? "|" : "", json_string_value(t));
    }
    if (!ok)
        problem(v, path, "expected %s, got %s", want.data, type_name(doc));
    kbi_buf_free(&want);
}

static void check_scalar(vstate *v, const json_t *schema, const json_t *doc, const char *path)
{
    const json_t *c = json_object_get(schema, "const");
    if (c && !json_equal((json_t *)c, (json_t *)doc)) {
        char *want = json_dumps(c, JSON_ENCODE_ANY), *got = json_dumps(doc, JSON_ENCODE_ANY);
        problem(v, path, "expected %s, got %s", want, got);
        free(want);
        free(got);
    }
    const json_t *en = json_object_get(schema, "enum");
    if (en) {
        bool found = false;
        size_t i;
        json_t *e;
        json_array_foreach((json_t *)en, i, e)
        {
            found = found || json_equal(e, (json_t *)doc);
        }
        if (!found) {
            char *got = json_dumps(doc, JSON_ENCODE_ANY), *all = json_dumps(en, JSON_COMPACT);
            problem(v, path, "%s is not one of %s", got, all);
            free(got);
            free(all);
        }
    }
    const json_t *pat = json_object_get(schema, "pattern");
    if (pat && json_is_string(doc)) {
        regex_t re;
        if (regcomp(&re, json_string_value(pat), REG_EXTENDED | REG_NOSUB) != 0)
            problem(v, path, "schema: bad pattern '%s'", json_string_value(pat));
        else {
            if (regexec(&re, json_string_value(doc), 0, NULL, 0) != 0)
                problem(v, path, "\"%s\" does not match %s", json_string_value(doc),
                        json_string_value(pat));
            regfree(&re);
        }
    }
    const json_t *min = json_object_get(schema, "minimum");
    if (min && json_is_number(doc) && json_number_value(doc) < json_number_value(min))
        problem(v, path, "%g is below the minimum %g", json_number_value(doc),
                json_number_value(min));
}

static void validate(vstate *v, const json_t *root, const json_t *schema, const json_t *doc,
                     const char *path, json_t *evaluated)
{
    if (json_is_true(schema))
        return;
    if (json_is_false(schema) || !json_is_object(schema)) {
        problem(v, path, json_is_false(schema) ? "not allowed here" : "schema: not an object");
        return;
    }
    const char *key;
    json_t *sub;
    json_object_foreach((json_t *)schema, key, sub)
    {
        bool known = false;
        for (size_t i = 0; i < sizeof(known_keywords) / sizeof(known_keywords[0]); i++)
            known = known || strcmp(key, known_keywords[i]) == 0;
        if (!known)
            problem(v, path, "schema: unknown keyword '%s'", key);
    }
    json_t *own = json_is_object(doc) && !evaluated ? json_object() : NULL;
    json_t *eval = own ? own : evaluated;
    const json_t *ref = json_object_get(schema, "$ref");
    if (ref) {
        const json_t *ref_root = root;
        const json_t *target =
            json_is_string(ref) ? resolve(v, root, json_string_value(ref), &ref_root) : NULL;
        if (target)
            validate(v, ref_root, target, doc, path, eval);
        else
            problem(v, path, "schema: cannot resolve $ref %s",
                    json_is_string(ref) ? json_string_value(ref) : "(not a string)");
    }
    const json_t *type = json_object_get(schema, "type");
    if (type)
        check_type(v, type, doc, path);
    check_scalar(v, schema, doc, path);
    if (json_is_object(doc))
        check_object(v, root, schema, doc, path, eval);
    if (json_is_array(doc))
        check_array(v, root, schema, doc, path);
    size_t i;
    json_array_foreach(json_object_get(schema, "allOf"), i, sub)
        validate(v, root, sub, doc, path, eval);
    const json_t *alts = json_object_get(schema, "anyOf");
    if (alts)
        check_alternatives(v, root, alts, false, doc, path, eval);
    if ((alts = json_object_get(schema, "oneOf")))
        check_alternatives(v, root, alts, true, doc, path, eval);
    const json_t *unevaluated = json_object_get(schema, "unevaluatedProperties");
    if (unevaluated && !json_is_false(unevaluated))
        problem(v, path, "schema: only unevaluatedProperties: false is supported");
    else if (unevaluated && json_is_object(doc)) {
        json_object_foreach((json_t *)doc, key, sub)
        {
            if (json_object_get(eval, key))
                continue;
            char *child = kbi_asprintf("%s.%s", path, key);
            problem(v, child, "key '%s' is not documented", key);
            free(child);
        }
    }
    json_decref(own);
}

char *kbt_json_check(const json_t *root, const json_t *schema, const json_t *doc,
                     const char *schema_dir)
{
    vstate v = {schema_dir, json_object(), KB_BUF_INIT, 0};
    validate(&v, root, schema, doc, "$", NULL);
    json_decref(v.files);
    if (!v.count) {
        kbi_buf_free(&v.errors);
        return NULL;
    }
    return kbi_buf_detach(&v.errors);
}

char *kbt_json_check_ref(const char *schema_dir, const char *ref, const json_t *doc)
{
    vstate v = {schema_dir, json_object(), KB_BUF_INIT, 0};
    const json_t *root = NULL;
    const json_t *schema = resolve(&v, NULL, ref, &root);
    if (schema)
        validate(&v, root, schema, doc, "$", NULL);
    else
        problem(&v, "schema", "cannot resolve %s in %s", ref, schema_dir);
    json_decref(v.files);
    if (!v.count) {
        kbi_buf_free(&v.errors);
        return NULL;
    }
    return kbi_buf_detach(&v.errors);
}
