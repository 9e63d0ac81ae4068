/* Typed export signatures (kernel.yaml `exports:` mappings): the type table, shape
 * expressions, kbpkg.json form and the one-line text form. */
#ifndef KB_MANIFESTS_SIGNATURE_H
#define KB_MANIFESTS_SIGNATURE_H

#include "core/internal.h"

typedef enum kb_arg_dir {
    KB_ARG_SCALAR = 0, /* a value: an integer, a float, or the stream */
    KB_ARG_IN = 1,     /* const T * */
    KB_ARG_OUT = 2,    /* T *, written */
    KB_ARG_INOUT = 3,  /* T *, read and written */
} kb_arg_dir;

typedef struct kb_export_arg {
    char *name;
    char *type;     /* a kb_sig_type name: "bf16", "i64", "stream" */
    kb_arg_dir dir; /* KB_ARG_SCALAR for values and the stream */
    kb_strv shape;  /* pointers: extent expressions over the integer args, as written */
} kb_export_arg;

/* One export. returns is NULL for a plain name (no signature declared). */
typedef struct kb_export_sig {
    char *name;
    char *returns; /* "status", "void", "i32", ... */
    kb_export_arg *args;
    size_t arg_count, args_cap;
} kb_export_sig;

/* One row of the type table: what a declared type is in C. */
typedef struct kb_sig_type {
    const char *name;   /* "bf16" */
    const char *c_type; /* "uint16_t": what the package header must use */
    bool integer;       /* may appear in shape expressions */
    bool scalar_ok;     /* may be passed by value (f16/bf16/fp8 have no C value type) */
} kb_sig_type;

/* The row for name, or NULL. "stream" and "status"/"void" (returns only) are in the table. */
const kb_sig_type *kbi_sig_type_find(const char *name);
/* "f16, bf16, f32, ..." for messages. */
const char *kbi_sig_type_names(void);
/* returns: "status" | "void" | an integer or float type. */
bool kbi_sig_returns_ok(const char *name);

/* Check a shape expression (names, integers, + - * / and parentheses) whose names must be
 * integer args of sig. Returns false with why (e.g. "'n' is not an integer argument"). */
bool kbi_sig_shape_ok(const kb_export_sig *sig, const char *expr, char *why, size_t why_size);

void kbi_export_sig_clear(kb_export_sig *sig);

/* {"returns": ..., "args": [{"name", "type", "dir"?, "shape"?}...]} (jansson json_t *). */
void *kbi_export_sig_json(const kb_export_sig *sig);

#endif
