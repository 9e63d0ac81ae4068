/* A strict reader for the TOML subset of kernel-builder's build.toml: tables, strings, integers,
 * booleans and arrays of them; everything else is an error with line:col. */
#include "import/toml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOML_DEPTH_MAX 32 /* nested arrays and dotted keys; a fuzzer's [[[[... stays bounded */

typedef struct reader {
    kb_ctx *ctx;
    const char *name;
    const char *s;
    size_t len, pos;
    unsigned line;
    size_t line_start;
} reader;

static unsigned col_at(const reader *r, size_t pos)
{
    return (unsigned)(pos - r->line_start) + 1;
}

static int fail_at(reader *r, size_t pos, const char *fmt, ...) KB_PRINTF(3, 4);
static int fail_at(reader *r, size_t pos, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    unsigned col = col_at(r, pos);
    return kbi_error_set_path(r->ctx, KB_ERR_PARSE, r->name, r->line, col, "%s:%u:%u: %s", r->name,
                              r->line, col, what);
}

static int peek(const reader *r)
{
    return r->pos < r->len ? (unsigned char)r->s[r->pos] : -1;
}

static void skip_blank(reader *r)
{
    while (peek(r) == ' ' || peek(r) == '\t')
        r->pos++;
}

static void skip_comment(reader *r)
{
    if (peek(r) == '#')
        while (peek(r) != -1 && peek(r) != '\n')
            r->pos++;
}

/* Past a line break ("\n" or "\r\n") when one is here; true when it was. */
static bool take_newline(reader *r)
{
    if (peek(r) == '\r' && r->pos + 1 < r->len && r->s[r->pos + 1] == '\n')
        r->pos++;
    if (peek(r) != '\n')
        return false;
    r->pos++;
    r->line++;
    r->line_start = r->pos;
    return true;
}

/* The rest of a line after a header or a value: blanks, a comment, then the end of the line. */
static int end_of_line(reader *r)
{
    skip_blank(r);
    skip_comment(r);
    if (peek(r) == -1 || take_newline(r))
        return 0;
    return fail_at(r, r->pos, "expected the end of the line, found '%c'", peek(r));
}

/* ---- nodes ---- */

static kb_toml *node_new(kb_toml_type type, unsigned line, unsigned col)
{
    kb_toml *n = calloc(1, sizeof(*n));
    if (n) {
        n->type = type;
        n->line = line;
        n->col = col;
    }
    return n;
}

void kbi_toml_free(kb_toml *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->count; i++)
        kbi_toml_free(t->items[i]);
    free(t->items);
    free(t->key);
    free(t->str);
    free(t);
}

static int node_append(kb_toml *parent, kb_toml *child)
{
    if (kbi_array_grow((void **)&parent->items, &parent->cap, parent->count + 1,
                       sizeof(*parent->items)))
        return KB_ERR_NOMEM;
    parent->items[parent->count++] = child;
    return 0;
}

const kb_toml *kbi_toml_get(const kb_toml *t, const char *key)
{
    for (size_t i = 0; t && t->type == KB_TOML_TABLE && i < t->count; i++)
        if (strcmp(t->items[i]->key, key) == 0)
            return t->items[i];
    return NULL;
}

const char *kbi_toml_type_name(kb_toml_type type)
{
    static const char *names[] = {"table", "string", "integer", "boolean", "array"};
    return (size_t)type < KB_ARRAY_LEN(names) ? names[type] : "?";
}

/* ---- strings ---- */

static bool utf8_put(kb_buf *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return kbi_buf_append(b, u, n) == 0;
}

/* \uXXXX or \UXXXXXXXX after the backslash and letter; a Unicode scalar value. */
static int unicode_escape(reader *r, kb_buf *b, unsigned digits, size_t at)
{
    uint32_t cp = 0;
    for (unsigned i = 0; i < digits; i++) {
        int c = peek(r);
        int v = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (v < 0)
            return fail_at(r, at, "\\%c needs %u hex digits", digits == 4 ? 'u' : 'U', digits);
        cp = cp * 16 + (uint32_t)v;
        r->pos++;
    }
    if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return fail_at(r, at, "\\u escape U+%X is not a Unicode scalar value", (unsigned)cp);
    return utf8_put(b, cp) ? 0 : KB_ERR_NOMEM;
}

static int escape(reader *r, kb_buf *b)
{
    size_t at = r->pos++;
    int c = peek(r);
    r->pos++;
    const char *from = "btnfr\"\\", *to = "\b\t\n\f\r\"\\";
    const char *hit = c > 0 ? strchr(from, c) : NULL;
    if (hit && c)
        return kbi_buf_append(b, &to[hit - from], 1) ? KB_ERR_NOMEM : 0;
    if (c == 'u' || c == 'U')
        return unicode_escape(r, b, c == 'u' ? 4 : 8, at);
    return fail_at(r, at, "unknown escape in a string");
}

/* A one-line string: "basic" (with escapes) or 'literal'. */
static int read_string(reader *r, char **out)
{
    *out = NULL;
    size_t start = r->pos;
    char quote = r->s[r->pos++];
    if (r->pos + 1 < r->len && r->s[r->pos] == quote && r->s[r->pos + 1] == quote)
        return fail_at(r, start, "multi-line strings are not supported");
    kb_buf b = KB_BUF_INIT;
    int rc = 0;
    for (;;) {
        int c = peek(r);
        if (c == -1 || c == '\n' || c == '\r') {
            rc = fail_at(r, start, "unterminated string");
            break;
        }
        if (c == quote) {
            r->pos++;
            break;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7F) {
            rc = fail_at(r, r->pos, "control character 0x%02x in a string", (unsigned)c);
            break;
        }
        if (c == '\\' && quote == '"')
            rc = escape(r, &b);
        else
            rc = kbi_buf_append(&b, &r->s[r->pos++], 1) ? KB_ERR_NOMEM : 0;
        if (rc)
            break;
    }
    if (!rc && memchr(b.data ? b.data : "", '\0', b.len))
        rc = fail_at(r, start, "a string may not hold a NUL character");
    if (!rc)
        *out = b.len ? kbi_buf_detach(&b) : kbi_strdup("");
    kbi_buf_free(&b);
    if (rc == KB_ERR_NOMEM)
        return kbi_error_oom(r->ctx);
    return rc ? rc : (*out ? 0 : kbi_error_oom(r->ctx));
}

/* ---- keys ---- */

static bool bare_char(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

typedef struct key_path {
    char *parts[TOML_DEPTH_MAX];
    size_t pos[TOML_DEPTH_MAX];
    size_t count;
} key_path;

static void key_path_clear(key_path *k)
{
    for (size_t i = 0; i < k->count; i++)
        free(k->parts[i]);
    k->count = 0;
}

/* a, "a b", 'a', a.b."c": the parts, each with where it starts. */
static int read_key(reader *r, key_path *k)
{
    k->count = 0;
    for (;;) {
        skip_blank(r);
        if (k->count == TOML_DEPTH_MAX)
            return fail_at(r, r->pos, "key nested deeper than %d", TOML_DEPTH_MAX);
        size_t at = r->pos;
        char *part = NULL;
        int rc = 0;
        if (peek(r) == '"' || peek(r) == '\'')
            rc = read_string(r, &part);
        else {
            while (bare_char(peek(r)))
                r->pos++;
            if (r->pos == at)
                return fail_at(r, at, "expected a key");
            part = kbi_strndup(r->s + at, r->pos - at);
            if (!part)
                rc = kbi_error_oom(r->ctx);
        }
        if (rc)
            return rc;
        k->parts[k->count] = part;
        k->pos[k->count++] = at;
        skip_blank(r);
        if (peek(r) != '.')
            return 0;
        r->pos++;
    }
}

/* The table key names under t, created (implicitly) when missing. */
static int descend(reader *r, kb_toml **t, const char *key, size_t at)
{
    kb_toml *child = (kb_toml *)kbi_toml_get(*t, key);
    if (child && child->type != KB_TOML_TABLE)
        return fail_at(r, at, "'%s' is already a %s (line %u), not a table", key,
                       kbi_toml_type_name(child->type), child->line);
    if (!child) {
        child = node_new(KB_TOML_TABLE, r->line, col_at(r, at));
        if (!child || !(child->key = kbi_strdup(key)) || node_append(*t, child)) {
            kbi_toml_free(child);
            return kbi_error_oom(r->ctx);
        }
    }
    *t = child;
    return 0;
}

/* ---- values ---- */

static int read_value(reader *r, kb_toml **out, unsigned depth);

static bool delimiter(int c)
{
    return c == -1 || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ',' || c == ']' ||
           c == '#';
}

static int read_integer(reader *r, kb_toml *v)
{
    size_t at = r->pos;
    bool neg = peek(r) == '-';
    if (peek(r) == '+' || peek(r) == '-')
        r->pos++;
    size_t digits_at = r->pos;
    uint64_t mag = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    bool prev_digit = false;
    while (r->pos < r->len) {
        int c = peek(r);
        if (c == '_' && prev_digit && r->pos + 1 < r->len && r->s[r->pos + 1] >= '0' &&
            r->s[r->pos + 1] <= '9') {
            r->pos++;
            prev_digit = false;
            continue;
        }
        if (c < '0' || c > '9')
            break;
        if (mag > (limit - (uint64_t)(c - '0')) / 10)
            return fail_at(r, at, "integer out of range (64-bit signed)");
        mag = mag * 10 + (uint64_t)(c - '0');
        prev_digit = true;
        r->pos++;
    }
    int c = peek(r);
    if (c == '.' || c == 'e' || c == 'E' || c == ':' || (c == '-' && r->pos > digits_at) ||
        c == 'x' || c == 'o' || c == 'b' || c == 'n' || c == 'i')
        return fail_at(r, at, "only decimal integers are supported (no floats, dates, hex)");
    if (r->pos == digits_at || !delimiter(c))
        return fail_at(r, at, "not a value");
    if (r->s[digits_at] == '0' && r->pos - digits_at > 1)
        return fail_at(r, at, "leading zeros are not allowed");
    v->type = KB_TOML_INT;
    v->num = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return 0;
}

/* Blanks, comments and line breaks between array elements. */
static void skip_array_space(reader *r)
{
    for (;;) {
        skip_blank(r);
        skip_comment(r);
        if (!take_newline(r))
            return;
    }
}

/* An error at the '[' that opened an array, lines above where the reader is now. */
static int fail_unterminated(reader *r, size_t at, unsigned line, size_t line_start)
{
    r->line = line;
    r->line_start = line_start;
    return fail_at(r, at, "unterminated array");
}

static int read_array(reader *r, kb_toml *v, unsigned depth)
{
    size_t at = r->pos++, line_start = r->line_start;
    unsigned line = r->line;
    v->type = KB_TOML_ARRAY;
    for (;;) {
        skip_array_space(r);
        if (peek(r) == ']') {
            r->pos++;
            return 0;
        }
        if (peek(r) == -1)
            return fail_unterminated(r, at, line, line_start);
        kb_toml *item = NULL;
        int rc = read_value(r, &item, depth + 1);
        if (!rc && node_append(v, item)) {
            kbi_toml_free(item);
            rc = kbi_error_oom(r->ctx);
        }
        if (rc)
            return rc;
        skip_array_space(r);
        if (peek(r) == ',')
            r->pos++;
        else if (peek(r) != ']')
            return peek(r) == -1 ? fail_unterminated(r, at, line, line_start)
                                 : fail_at(r, r->pos, "expected ',' or ']' in an array");
    }
}

static bool take_word(reader *r, const char *word)
{
    size_t n = strlen(word);
    if (r->len - r->pos < n || memcmp(r->s + r->pos, word, n) != 0)
        return false;
    int after = r->pos + n < r->len ? (unsigned char)r->s[r->pos + n] : -1;
    if (!delimiter(after))
        return false;
    r->pos += n;
    return true;
}

static int read_value(reader *r, kb_toml **out, unsigned depth)
{
    *out = NULL;
    skip_blank(r);
    if (depth > TOML_DEPTH_MAX)
        return fail_at(r, r->pos, "arrays nested deeper than %d", TOML_DEPTH_MAX);
    kb_toml *v = node_new(KB_TOML_STRING, r->line, col_at(r, r->pos));
    if (!v)
        return kbi_error_oom(r->ctx);
    int c = peek(r), rc = 0;
    if (c == '"' || c == '\'')
        rc = read_string(r, &v->str);
    else if (c == '[')
        rc = read_array(r, v, depth);
    else if (c == '{')
        rc = fail_at(r, r->pos, "inline tables are not supported (use a [table])");
    else if (take_word(r, "true") || take_word(r, "false")) {
        v->type = KB_TOML_BOOL;
        v->flag = r->s[r->pos - 1] == 'e' && r->s[r->pos - 2] == 'u';
    } else if ((c >= '0' && c <= '9') || c == '+' || c == '-')
        rc = read_integer(r, v);
    else if (c == -1 || c == '\n' || c == '\r' || c == '#')
        rc = fail_at(r, r->pos, "expected a value");
    else
        rc = fail_at(r, r->pos,
                     "not a value this reader supports (strings, integers, "
                     "booleans, arrays)");
    if (rc) {
        kbi_toml_free(v);
        return rc;
    }
    *out = v;
    return 0;
}

/* ---- lines ---- */

/* [a.b]: the table key/value lines below go into. */
static int read_header(reader *r, kb_toml *root, kb_toml **current)
{
    size_t at = r->pos++;
    if (peek(r) == '[')
        return fail_at(r, at, "arrays of tables ([[...]]) are not supported");
    key_path k;
    int rc = read_key(r, &k);
    if (!rc && peek(r) != ']')
        rc = fail_at(r, r->pos, "expected ']' to close the table header");
    kb_toml *t = root;
    for (size_t i = 0; !rc && i < k.count; i++)
        rc = descend(r, &t, k.parts[i], k.pos[i]);
    if (!rc && t->defined)
        rc = fail_at(r, at, "table [%s] is defined twice (first at line %u)", t->key, t->line);
    if (!rc) {
        t->defined = true;
        t->line = r->line;
        t->col = col_at(r, at);
        r->pos++;
        *current = t;
        rc = end_of_line(r);
    }
    key_path_clear(&k);
    return rc;
}

static int read_pair(reader *r, kb_toml *table)
{
    key_path k;
    int rc = read_key(r, &k);
    if (!rc && peek(r) != '=')
        rc = fail_at(r, r->pos, "expected '=' after the key");
    kb_toml *t = table;
    for (size_t i = 0; !rc && i + 1 < k.count; i++)
        rc = descend(r, &t, k.parts[i], k.pos[i]);
    const char *last = k.count ? k.parts[k.count - 1] : "";
    const kb_toml *dup = rc ? NULL : kbi_toml_get(t, last);
    if (dup)
        rc = fail_at(r, k.pos[k.count - 1], "duplicate key '%s' (first at line %u)", last,
                     dup->line);
    kb_toml *v = NULL;
    unsigned line = r->line, col = k.count ? col_at(r, k.pos[0]) : 0;
    if (!rc) {
        r->pos++;
        rc = read_value(r, &v, 0);
    }
    if (!rc) {
        v->line = line;
        v->col = col;
        v->key = kbi_strdup(last);
        if (!v->key || node_append(t, v)) {
            kbi_toml_free(v);
            rc = kbi_error_oom(r->ctx);
        }
    }
    if (!rc)
        rc = end_of_line(r);
    key_path_clear(&k);
    return rc;
}

int kbi_toml_parse(kb_toml **out, kb_ctx *ctx, const char *name, const char *text, size_t len)
{
    *out = NULL;
    reader r = {ctx, name, text, len, 0, 1, 0};
    kb_toml *root = node_new(KB_TOML_TABLE, 1, 1);
    if (!root)
        return kbi_error_oom(ctx);
    kb_toml *current = root;
    int rc = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0) /* a BOM some editors write */
        r.pos = r.line_start = 3;
    while (!rc && r.pos < r.len) {
        skip_blank(&r);
        int c = peek(&r);
        if (c == '#' || c == '\n' || c == '\r' || c == -1)
            rc = end_of_line(&r);
        else if (c == '[')
            rc = read_header(&r, root, &current);
        else
            rc = read_pair(&r, current);
    }
    if (rc) {
        kbi_toml_free(root);
        return rc;
    }
    *out = root;
    return 0;
}
