/* Builds a kb_ynode tree from libyaml events, refusing the YAML features kbpkg files forbid. */
#include "core/yaml_tree.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* Deeper nesting than this is never a kbpkg file; it bounds memory on hostile input. */
#define KB_YAML_MAX_DEPTH 32

typedef struct builder {
    kb_ctx *ctx;
    const char *file;
    int code;
    kb_ynode *root;
    kb_ynode *stack[KB_YAML_MAX_DEPTH];
    size_t depth;
    int documents;
} builder;

const char *kbi_ynode_type_name(kb_ynode_type type)
{
    switch (type) {
    case KB_YNODE_SCALAR:
        return "a scalar";
    case KB_YNODE_SEQ:
        return "a sequence";
    case KB_YNODE_MAP:
        return "a mapping";
    }
    return "a node";
}

void kbi_ynode_free(kb_ynode *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->len; i++)
        kbi_ynode_free(n->items[i]);
    free(n->items);
    free(n->value);
    free(n);
}

const kb_ynode *kbi_ynode_get(const kb_ynode *map, const char *key)
{
    if (!map || map->type != KB_YNODE_MAP)
        return NULL;
    for (size_t i = 0; i + 1 < map->len; i += 2)
        if (strcmp(map->items[i]->value, key) == 0)
            return map->items[i + 1];
    return NULL;
}

static int push_child(kb_ynode *parent, kb_ynode *child)
{
    if (kbi_array_grow((void **)&parent->items, &parent->cap, parent->len + 1,
                       sizeof(*parent->items)))
        return KB_ERR_NOMEM;
    parent->items[parent->len++] = child;
    return 0;
}

/* The dotted key path of the node on top of the stack ("backends.cuda.archs[2]"). */
static void stack_path(const builder *b, kb_buf *out)
{
    for (size_t i = 1; i < b->depth; i++) {
        const kb_ynode *parent = b->stack[i - 1];
        if (parent->type == KB_YNODE_SEQ)
            kbi_buf_printf(out, "[%zu]", parent->len - 1);
        else if (parent->len >= 2)
            kbi_buf_printf(out, "%s%s", out->len ? "." : "", parent->items[parent->len - 2]->value);
    }
    /* the position being filled: a map value after its key, or the next sequence item */
    const kb_ynode *top = b->depth ? b->stack[b->depth - 1] : NULL;
    if (top && top->type == KB_YNODE_MAP && top->len % 2 == 1)
        kbi_buf_printf(out, "%s%s", out->len ? "." : "", top->items[top->len - 1]->value);
    else if (top && top->type == KB_YNODE_SEQ)
        kbi_buf_printf(out, "[%zu]", top->len);
}

static int fail_at(builder *b, const yaml_mark_t *mark, const char *fmt, ...) KB_PRINTF(3, 4);

static int fail_at(builder *b, const yaml_mark_t *mark, const char *fmt, ...)
{
    kb_buf path = KB_BUF_INIT, msg = KB_BUF_INIT;
    stack_path(b, &path);
    va_list ap;
    va_start(ap, fmt);
    kbi_buf_vprintf(&msg, fmt, ap);
    va_end(ap);
    unsigned line = (unsigned)mark->line + 1, col = (unsigned)mark->column + 1;
    kbi_error_set_path(b->ctx, b->code, b->file, line, col, "%s:%u:%u: %s%s%s", b->file, line, col,
                       path.len ? path.data : "", path.len ? ": " : "", msg.data ? msg.data : "");
    kbi_buf_free(&path);
    kbi_buf_free(&msg);
    return b->code;
}

/* The key a new map key would duplicate, or NULL. */
static const kb_ynode *find_duplicate(const kb_ynode *map, const char *key)
{
    for (size_t i = 0; i + 1 < map->len; i += 2)
        if (strcmp(map->items[i]->value, key) == 0)
            return map->items[i];
    return NULL;
}

static int check_key(builder *b, const kb_ynode *map, const yaml_event_t *ev, bool is_scalar)
{
    if (!is_scalar)
        return fail_at(b, &ev->start_mark, "mapping keys must be plain strings");
    const char *key = (const char *)ev->data.scalar.value;
    if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && strcmp(key, "<<") == 0)
        return fail_at(b, &ev->start_mark, "merge keys (<<) are not allowed");
    const kb_ynode *first = find_duplicate(map, key);
    if (first)
        return fail_at(b, &ev->start_mark, "duplicate key '%s' (first at line %u)", key,
                       first->line);
    return 0;
}

static int refuse_anchor_or_tag(builder *b, const yaml_event_t *ev, const yaml_char_t *anchor,
                                const yaml_char_t *tag, int implicit)
{
    if (anchor)
        return fail_at(b, &ev->start_mark, "anchors (&%s) are not allowed", (const char *)anchor);
    if (tag && !implicit)
        return fail_at(b, &ev->start_mark, "tags (%s) are not allowed", (const char *)tag);
    return 0;
}

/* Attach a new node at the current position (root, seq item, map key or value). */
static int attach(builder *b, const yaml_event_t *ev, kb_ynode_type type, bool is_scalar)
{
    kb_ynode *parent = b->depth ? b->stack[b->depth - 1] : NULL;
    if (parent && parent->type == KB_YNODE_MAP && parent->len % 2 == 0) {
        int rc = check_key(b, parent, ev, is_scalar);
        if (rc)
            return rc;
    }
    kb_ynode *n = calloc(1, sizeof(*n));
    if (!n)
        return kbi_error_oom(b->ctx);
    n->type = type;
    n->line = (unsigned)ev->start_mark.line + 1;
    n->column = (unsigned)ev->start_mark.column + 1;
    if (is_scalar) {
        n->value = kbi_strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        if (!n->value) {
            free(n);
            return kbi_error_oom(b->ctx);
        }
        if (memchr(ev->data.scalar.value, '\0', ev->data.scalar.length)) {
            kbi_ynode_free(n);
            return fail_at(b, &ev->start_mark, "NUL characters are not allowed");
        }
    }
    if (!parent)
        b->root = n;
    else if (push_child(parent, n)) {
        kbi_ynode_free(n);
        return kbi_error_oom(b->ctx);
    }
    if (!is_scalar) {
        if (b->depth == KB_YAML_MAX_DEPTH)
            return fail_at(b, &ev->start_mark, "nesting too deep");
        b->stack[b->depth++] = n;
    }
    return 0;
}

static int on_event(builder *b, const yaml_event_t *ev)
{
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->documents > 1)
            return fail_at(b, &ev->start_mark, "only one YAML document is allowed");
        return 0;
    case YAML_ALIAS_EVENT:
        return fail_at(b, &ev->start_mark, "aliases (*%s) are not allowed",
                       (const char *)ev->data.alias.anchor);
    case YAML_SCALAR_EVENT: {
        int rc =
            refuse_anchor_or_tag(b, ev, ev->data.scalar.anchor, ev->data.scalar.tag,
                                 ev->data.scalar.plain_implicit || ev->data.scalar.quoted_implicit);
        return rc ? rc : attach(b, ev, KB_YNODE_SCALAR, true);
    }
    case YAML_SEQUENCE_START_EVENT: {
        int rc =
            refuse_anchor_or_tag(b, ev, ev->data.sequence_start.anchor, ev->data.sequence_start.tag,
                                 ev->data.sequence_start.implicit);
        return rc ? rc : attach(b, ev, KB_YNODE_SEQ, false);
    }
    case YAML_MAPPING_START_EVENT: {
        int rc = refuse_anchor_or_tag(b, ev, ev->data.mapping_start.anchor,
                                      ev->data.mapping_start.tag, ev->data.mapping_start.implicit);
        return rc ? rc : attach(b, ev, KB_YNODE_MAP, false);
    }
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        if (b->depth)
            b->depth--;
        return 0;
    default:
        return 0;
    }
}

static int syntax_error(builder *b, const yaml_parser_t *p)
{
    unsigned line = (unsigned)p->problem_mark.line + 1, col = (unsigned)p->problem_mark.column + 1;
    const char *problem = p->problem ? p->problem : "malformed YAML";
    return kbi_error_set_path(b->ctx, KB_ERR_PARSE, b->file, line, col,
                              "%s:%u:%u: YAML syntax error: %s%s%s", b->file, line, col, problem,
                              p->context ? " " : "", p->context ? p->context : "");
}

int kbi_yaml_load(kb_ctx *ctx, kb_ynode **out, const char *file, const char *text, size_t len,
                  int error_code)
{
    *out = NULL;
    builder b = {ctx, file, error_code, NULL, {0}, 0, 0};
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return kbi_error_oom(ctx);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = 0;
    for (bool done = false; !done && !rc;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = syntax_error(&b, &parser);
            break;
        }
        done = ev.type == YAML_STREAM_END_EVENT;
        rc = on_event(&b, &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    if (rc) {
        kbi_ynode_free(b.root);
        return rc;
    }
    *out = b.root;
    return 0;
}
