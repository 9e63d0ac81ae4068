/* Typed export signatures: the type table, shape expression checks, the kbpkg.json form
 * (the one-line text form is model/signature_text.c, which the hub renderer may use too). */
#include "manifests/signature.h"

#include <ctype.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* The element and scalar types kernel.yaml may name, and the C type a header must use for
 * each: kbpkg_bf16/kbpkg_f16 are uint16_t and the fp8 kinds uint8_t (the kernel ABI header),
 * so the header check cannot tell bf16 from f16 or one fp8 kind from another. */
static const kb_sig_type sig_types[] = {
    {"f16", "uint16_t", false, false},     {"bf16", "uint16_t", false, false},
    {"f32", "float", false, true},         {"f64", "double", false, true},
    {"e4m3", "uint8_t", false, false},     {"e5m2", "uint8_t", false, false},
    {"e4m3fnuz", "uint8_t", false, false}, {"e5m2fnuz", "uint8_t", false, false},
    {"i8", "int8_t", true, true},          {"u8", "uint8_t", true, true},
    {"i16", "int16_t", true, true},        {"i32", "int32_t", true, true},
    {"i64", "int64_t", true, true},        {"u32", "uint32_t", true, true},
    {"u64", "uint64_t", true, true},       {"stream", "void *", false, true},
};

const kb_sig_type *kbi_sig_type_find(const char *name)
{
    for (size_t i = 0; name && i < KB_ARRAY_LEN(sig_types); i++)
        if (strcmp(sig_types[i].name, name) == 0)
            return &sig_types[i];
    return NULL;
}

const char *kbi_sig_type_names(void)
{
    return "f16, bf16, f32, f64, e4m3, e5m2, e4m3fnuz, e5m2fnuz, i8, u8, i16, i32, i64, u32, "
           "u64, stream";
}

bool kbi_sig_returns_ok(const char *name)
{
    if (strcmp(name, "status") == 0 || strcmp(name, "void") == 0)
        return true;
    const kb_sig_type *t = kbi_sig_type_find(name);
    return t && t->scalar_ok && strcmp(name, "stream") != 0;
}

/* ---- shape expressions: expr := term (('+'|'-') term)*, term := factor (('*'|'/') factor)*,
 * factor := integer | name | '(' expr ')' ---- */

typedef struct shape_scan {
    const kb_export_sig *sig;
    const char *s;
    char *why;
    size_t why_size;
    int depth;
} shape_scan;

static void skip_space(shape_scan *p)
{
    while (*p->s == ' ' || *p->s == '\t')
        p->s++;
}

static bool scan_expr(shape_scan *p);

static bool integer_arg(const kb_export_sig *sig, const char *name, size_t len)
{
    for (size_t i = 0; i < sig->arg_count; i++) {
        const kb_export_arg *a = &sig->args[i];
        const kb_sig_type *t = kbi_sig_type_find(a->type);
        if (strlen(a->name) == len && memcmp(a->name, name, len) == 0)
            return a->dir == KB_ARG_SCALAR && t && t->integer;
    }
    return false;
}

static bool scan_factor(shape_scan *p)
{
    skip_space(p);
    const char *start = p->s;
    if (*p->s == '(') {
        if (++p->depth > 32) {
            snprintf(p->why, p->why_size, "parentheses nested too deep");
            return false;
        }
        p->s++;
        if (!scan_expr(p))
            return false;
        skip_space(p);
        if (*p->s != ')') {
            snprintf(p->why, p->why_size, "missing ')' at offset %zu", (size_t)(p->s - start));
            return false;
        }
        p->s++;
        p->depth--;
        return true;
    }
    if (isdigit((unsigned char)*p->s)) {
        while (isdigit((unsigned char)*p->s))
            p->s++;
        return true;
    }
    if (isalpha((unsigned char)*p->s) || *p->s == '_') {
        while (isalnum((unsigned char)*p->s) || *p->s == '_')
            p->s++;
        size_t len = (size_t)(p->s - start);
        if (!integer_arg(p->sig, start, len)) {
            snprintf(p->why, p->why_size, "'%.*s' is not an integer argument of this export",
                     (int)len, start);
            return false;
        }
        return true;
    }
    snprintf(p->why, p->why_size, "expected a name, an integer or '(' at '%s'",
             *p->s ? p->s : "the end");
    return false;
}

static bool scan_chain(shape_scan *p, bool (*operand)(shape_scan *), const char *ops)
{
    if (!operand(p))
        return false;
    for (;;) {
        skip_space(p);
        if (!*p->s || !strchr(ops, *p->s))
            return true;
        p->s++;
        if (!operand(p))
            return false;
    }
}

static bool scan_term(shape_scan *p)
{
    return scan_chain(p, scan_factor, "*/");
}

static bool scan_expr(shape_scan *p)
{
    return scan_chain(p, scan_term, "+-");
}

bool kbi_sig_shape_ok(const kb_export_sig *sig, const char *expr, char *why, size_t why_size)
{
    shape_scan p = {sig, expr, why, why_size, 0};
    if (!scan_expr(&p))
        return false;
    skip_space(&p);
    if (*p.s) {
        snprintf(why, why_size,
                 "unexpected '%s' (expressions use names, integers, + - * / and "
                 "parentheses)",
                 p.s);
        return false;
    }
    return true;
}

void kbi_export_sig_clear(kb_export_sig *sig)
{
    for (size_t i = 0; i < sig->arg_count; i++) {
        free(sig->args[i].name);
        free(sig->args[i].type);
        kbi_strv_free(&sig->args[i].shape);
    }
    free(sig->args);
    free(sig->name);
    free(sig->returns);
    memset(sig, 0, sizeof(*sig));
}

/* ---- JSON and text ---- */

static const char *const dir_names[] = {NULL, "in", "out", "inout"};

void *kbi_export_sig_json(const kb_export_sig *sig)
{
    json_t *args = json_array();
    for (size_t i = 0; args && i < sig->arg_count; i++) {
        const kb_export_arg *a = &sig->args[i];
        json_t *arg = json_pack("{s:s, s:s}", "name", a->name, "type", a->type);
        if (arg && a->dir != KB_ARG_SCALAR)
            json_object_set_new(arg, "dir", json_string(dir_names[a->dir]));
        if (arg && a->shape.len) {
            json_t *shape = json_array();
            for (size_t j = 0; shape && j < a->shape.len; j++)
                json_array_append_new(shape, json_string(a->shape.items[j]));
            json_object_set_new(arg, "shape", shape);
        }
        json_array_append_new(args, arg);
    }
    return json_pack("{s:s, s:o}", "returns", sig->returns, "args", args);
}
