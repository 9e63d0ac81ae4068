/* A strict YAML reader for kbpkg's files: a small node tree with 1-based positions. */
#ifndef KB_CORE_YAML_TREE_H
#define KB_CORE_YAML_TREE_H

#include "core/internal.h"

typedef enum kb_ynode_type {
    KB_YNODE_SCALAR = 0,
    KB_YNODE_SEQ = 1,
    KB_YNODE_MAP = 2,
} kb_ynode_type;

typedef struct kb_ynode {
    kb_ynode_type type;
    unsigned line, column;   /* 1-based position of the node's first character */
    char *value;             /* scalars: the text ("" for an empty value) */
    bool plain;              /* scalars: written without quotes */
    struct kb_ynode **items; /* seq: the items; map: key, value, key, value, ... */
    size_t len, cap;
} kb_ynode;

/* Parse text into a tree. Refuses (with file:line:col in the message): syntax errors
 * (KB_ERR_PARSE), and with error_code: aliases, anchors, tags, merge keys, non-scalar
 * keys, duplicate keys, several documents. *out is NULL for an empty stream. */
int kbi_yaml_load(kb_ctx *ctx, kb_ynode **out, const char *file, const char *text, size_t len,
                  int error_code);
void kbi_ynode_free(kb_ynode *n);
/* "a scalar", "a sequence", "a mapping". */
const char *kbi_ynode_type_name(kb_ynode_type type);
/* Map lookup: the value node for key, or NULL. */
const kb_ynode *kbi_ynode_get(const kb_ynode *map, const char *key);

#endif
