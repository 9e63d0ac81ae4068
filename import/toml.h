/* A reader for the TOML subset kernel-builder's build.toml uses (import/toml.c). */
#ifndef KB_IMPORT_TOML_H
#define KB_IMPORT_TOML_H

#include "core/internal.h"

#include <stdint.h>

/* What it reads: comments, [table] and [dotted.table] headers, key = value with bare, quoted or
 * dotted keys, basic and literal strings (one line), decimal integers, booleans, and arrays of
 * those (over several lines, trailing comma allowed). Anything else (floats, dates, inline
 * tables, [[arrays of tables]], multi-line strings) is an error naming line:col, as are
 * duplicate keys and tables defined twice. */
typedef enum kb_toml_type {
    KB_TOML_TABLE = 0,
    KB_TOML_STRING = 1,
    KB_TOML_INT = 2,
    KB_TOML_BOOL = 3,
    KB_TOML_ARRAY = 4,
} kb_toml_type;

typedef struct kb_toml kb_toml;
struct kb_toml {
    kb_toml_type type;
    char *key;          /* NULL for array items and the root */
    unsigned line, col; /* where the key (or value) was written, 1-based */
    char *str;          /* KB_TOML_STRING */
    int64_t num;        /* KB_TOML_INT */
    bool flag;          /* KB_TOML_BOOL */
    kb_toml **items;    /* TABLE: members in file order; ARRAY: elements */
    size_t count, cap;
    bool defined; /* TABLE: given its own [header] (a second one is an error) */
};

/* Parse text (name: for messages). KB_ERR_PARSE "name:line:col: what" on anything outside the
 * subset; *out is NULL then. */
int kbi_toml_parse(kb_toml **out, kb_ctx *ctx, const char *name, const char *text, size_t len);
void kbi_toml_free(kb_toml *t);
/* A member of a table by key, or NULL (also when t is not a table). */
const kb_toml *kbi_toml_get(const kb_toml *t, const char *key);
/* The name of a type, for messages ("string", "array", ...). */
const char *kbi_toml_type_name(kb_toml_type type);

#endif
