/* Semantic versions (semver 2.0): parsing, precedence, and cargo-style constraints. */
#include "model/semver.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- versions ---- */

static bool is_ident_char(char c)
{
    return isalnum((unsigned char)c) || c == '-';
}

static bool all_digits(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isdigit((unsigned char)s[i]))
            return false;
    return n > 0;
}

/* Parse one numeric component (no sign, no leading zero) from *p; advances *p. */
static const char *parse_number(const char **p, uint64_t *out)
{
    const char *s = *p;
    size_t n = 0;
    while (isdigit((unsigned char)s[n]))
        n++;
    if (n == 0)
        return "expected a number";
    if (n > 1 && s[0] == '0')
        return "leading zero in a number";
    char digits[24];
    if (n >= sizeof(digits))
        return "number too large";
    memcpy(digits, s, n);
    digits[n] = '\0';
    if (!kbi_parse_u64(digits, out))
        return "number too large";
    *p = s + n;
    return NULL;
}

/* Dot-separated identifiers in [0-9A-Za-z-]; numeric ones without leading zeros when strict. */
static const char *check_identifiers(const char *s, size_t len, bool numeric_rules)
{
    if (len == 0)
        return "empty identifier";
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') {
            if (!is_ident_char(s[i]))
                return "identifiers may hold only [0-9A-Za-z-]";
            continue;
        }
        size_t n = i - start;
        if (n == 0)
            return "empty identifier";
        if (numeric_rules && n > 1 && all_digits(s + start, n) && s[start] == '0')
            return "leading zero in a numeric identifier";
        start = i + 1;
    }
    return NULL;
}

/* Parse text[0..len) as a full version; returns NULL or what is wrong. */
static const char *semver_parse_span(kb_semver *out, const char *text, size_t len)
{
    memset(out, 0, sizeof(*out));
    char tmp[256];
    if (len == 0)
        return "empty version";
    if (len >= sizeof(tmp))
        return "version too long";
    memcpy(tmp, text, len);
    tmp[len] = '\0';
    const char *p = tmp;
    uint64_t *parts[] = {&out->major, &out->minor, &out->patch};
    for (int i = 0; i < 3; i++) {
        const char *why = parse_number(&p, parts[i]);
        if (why)
            return why;
        if (i < 2 && *p++ != '.')
            return "expected MAJOR.MINOR.PATCH";
    }
    if (*p == '-') {
        p++;
        size_t n = strcspn(p, "+");
        const char *why = check_identifiers(p, n, true);
        if (why)
            return why;
        if (n >= sizeof(out->pre))
            return "pre-release too long";
        memcpy(out->pre, p, n);
        out->pre[n] = '\0';
        p += n;
    }
    if (*p == '+') {
        p++;
        size_t n = strlen(p);
        const char *why = check_identifiers(p, n, false);
        if (why)
            return why;
        if (n >= sizeof(out->build))
            return "build metadata too long";
        memcpy(out->build, p, n);
        out->build[n] = '\0';
        p += n;
    }
    if (*p)
        return "unexpected characters after MAJOR.MINOR.PATCH";
    return NULL;
}

int kbi_semver_parse(kb_ctx *ctx, kb_semver *out, const char *text)
{
    if (!out || !text)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kbi_semver_parse: NULL argument");
    const char *why = semver_parse_span(out, text, strlen(text));
    if (why)
        return kbi_error_set(ctx, KB_ERR_VERSION,
                             "'%s' is not a semantic version (MAJOR.MINOR.PATCH[-pre][+build]): %s",
                             text, why);
    return 0;
}

void kbi_semver_format(const kb_semver *v, char *buf, size_t size)
{
    snprintf(buf, size, "%llu.%llu.%llu%s%s%s%s", (unsigned long long)v->major,
             (unsigned long long)v->minor, (unsigned long long)v->patch, v->pre[0] ? "-" : "",
             v->pre, v->build[0] ? "+" : "", v->build);
}

/* The version as a tag and file-name part: build metadata dropped (OCI tags have no '+'). */
void kbi_pkg_version(const kb_semver *v, char *out, size_t size)
{
    snprintf(out, size, "%llu.%llu.%llu%s%s", (unsigned long long)v->major,
             (unsigned long long)v->minor, (unsigned long long)v->patch, v->pre[0] ? "-" : "",
             v->pre);
}

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : a > b;
}

/* Compare one pre-release identifier each (numeric < alphanumeric; numbers by value). */
static int cmp_identifier(const char *a, size_t an, const char *b, size_t bn)
{
    bool a_num = all_digits(a, an), b_num = all_digits(b, bn);
    if (a_num && b_num) {
        if (an != bn) /* no leading zeros: longer is larger */
            return an < bn ? -1 : 1;
        int c = memcmp(a, b, an);
        return c < 0 ? -1 : c > 0;
    }
    if (a_num != b_num)
        return a_num ? -1 : 1;
    size_t n = an < bn ? an : bn;
    int c = memcmp(a, b, n);
    if (c)
        return c < 0 ? -1 : 1;
    return cmp_u64(an, bn);
}

static int cmp_pre(const char *a, const char *b)
{
    if (!*a || !*b) /* a release outranks its pre-releases */
        return *a ? -1 : *b ? 1 : 0;
    while (*a && *b) {
        size_t an = strcspn(a, "."), bn = strcspn(b, ".");
        int c = cmp_identifier(a, an, b, bn);
        if (c)
            return c;
        a += an + (a[an] == '.');
        b += bn + (b[bn] == '.');
    }
    return *a ? 1 : *b ? -1 : 0; /* more identifiers rank higher */
}

int kbi_semver_cmp(const kb_semver *a, const kb_semver *b)
{
    int c = cmp_u64(a->major, b->major);
    if (!c)
        c = cmp_u64(a->minor, b->minor);
    if (!c)
        c = cmp_u64(a->patch, b->patch);
    if (!c)
        c = cmp_pre(a->pre, b->pre);
    return c;
}

/* ---- constraints ---- */

typedef enum { OP_EQ, OP_GT, OP_GE, OP_LT, OP_LE } cmp_op;

/* One bound: version op bound. A constraint is the AND of its bounds. */
typedef struct bound {
    cmp_op op;
    kb_semver v;
} bound;

struct kb_constraint {
    bound *bounds;
    size_t len, cap;
    kb_semver *pre_ok; /* x.y.z whose pre-releases the constraint names */
    size_t pre_len, pre_cap;
};

/* A comparator's version, possibly partial ("1", "1.2", "1.x"): parts holds how many. */
typedef struct partial {
    kb_semver v;
    int parts; /* 0 for "*", 1..3 */
} partial;

static int add_bound(kb_constraint *c, cmp_op op, const kb_semver *v)
{
    if (kbi_array_grow((void **)&c->bounds, &c->cap, c->len + 1, sizeof(*c->bounds)))
        return KB_ERR_NOMEM;
    c->bounds[c->len].op = op;
    c->bounds[c->len].v = *v;
    c->len++;
    return 0;
}

static bool is_wildcard(const char *s, size_t n)
{
    return n == 1 && (s[0] == 'x' || s[0] == 'X' || s[0] == '*');
}

/* "1", "1.2", "1.2.3-pre+b", "1.x", "1.2.*", "*". */
static const char *parse_partial(partial *out, const char *s, size_t n)
{
    memset(out, 0, sizeof(*out));
    if (is_wildcard(s, n))
        return NULL;
    size_t dots = 0, head = strcspn(s, "-+");
    if (head > n)
        head = n;
    for (size_t i = 0; i < head; i++)
        dots += s[i] == '.';
    if (dots == 2 && !memchr(s, '*', n) && !memchr(s, 'x', head) && !memchr(s, 'X', head)) {
        out->parts = 3;
        return semver_parse_span(&out->v, s, n);
    }
    if (head != n)
        return "a pre-release needs a full MAJOR.MINOR.PATCH";
    uint64_t *slots[] = {&out->v.major, &out->v.minor, &out->v.patch};
    const char *p = s, *end = s + n;
    bool wild = false;
    for (int i = 0; i < 3 && p < end; i++) {
        size_t len = 0;
        while (p + len < end && p[len] != '.')
            len++;
        if (is_wildcard(p, len))
            wild = true;
        else if (wild)
            return "a number cannot follow a wildcard";
        else {
            char num[24];
            if (len == 0 || len >= sizeof(num))
                return "expected a number";
            memcpy(num, p, len);
            num[len] = '\0';
            const char *q = num;
            const char *why = parse_number(&q, slots[i]);
            if (why)
                return why;
            if (*q)
                return "expected a number";
            out->parts = i + 1;
        }
        p += len;
        if (p < end && ++p == end)
            return "trailing '.'";
    }
    if (p < end)
        return "too many components";
    return NULL;
}

static kb_semver make_version(uint64_t major, uint64_t minor, uint64_t patch)
{
    kb_semver v;
    memset(&v, 0, sizeof(v));
    v.major = major;
    v.minor = minor;
    v.patch = patch;
    return v;
}

/* v with the number at place (0 major, 1 minor, 2 patch) plus one and the places below zeroed:
 * the smallest version above a range. A place already at UINT64_MAX carries into the one above
 * ("1.<max>" -> 2.0.0) instead of wrapping to 0; false when even the major would overflow, as
 * no version lies above the range then. */
static bool bump_version(kb_semver *out, const kb_semver *v, int place)
{
    uint64_t n[3] = {v->major, v->minor, v->patch};
    for (int i = place + 1; i < 3; i++)
        n[i] = 0;
    int i = place;
    while (i >= 0 && n[i] == UINT64_MAX)
        n[i--] = 0;
    if (i < 0)
        return false;
    n[i]++;
    *out = make_version(n[0], n[1], n[2]);
    return true;
}

/* The smallest version above every version the partial covers ("1.2" -> 1.3.0). */
static bool partial_next(kb_semver *out, const partial *p)
{
    return bump_version(out, &p->v, p->parts == 1 ? 0 : 1);
}

/* Half-open range [lo, hi): with_hi false means no upper bound. */
static int add_range(kb_constraint *c, const kb_semver *lo, const kb_semver *hi)
{
    int rc = add_bound(c, OP_GE, lo);
    if (!rc && hi)
        rc = add_bound(c, OP_LT, hi);
    return rc;
}

static bool caret_upper(kb_semver *out, const partial *p)
{
    const kb_semver *v = &p->v;
    if (v->major > 0 || p->parts == 1)
        return bump_version(out, v, 0);
    if (v->minor > 0 || p->parts == 2)
        return bump_version(out, v, 1);
    return bump_version(out, v, 2);
}

static int add_comparator(kb_constraint *c, const char *op, const partial *p)
{
    if (p->parts == 0) /* "*", ">=*": everything */
        return strcmp(op, "<") == 0 || strcmp(op, ">") == 0 ? KB_ERR_VERSION : 0;
    /* no next: the range reaches the largest version, so it has no upper bound */
    kb_semver next = p->v, hi;
    bool has_next = p->parts == 3 || partial_next(&next, p);
    if (strcmp(op, "^") == 0)
        return add_range(c, &p->v, caret_upper(&hi, p) ? &hi : NULL);
    if (strcmp(op, "~") == 0)
        return add_range(c, &p->v, bump_version(&hi, &p->v, p->parts == 1 ? 0 : 1) ? &hi : NULL);
    if (strcmp(op, "=") == 0 || !*op)
        return p->parts == 3 ? add_bound(c, OP_EQ, &p->v)
                             : add_range(c, &p->v, has_next ? &next : NULL);
    if (strcmp(op, ">=") == 0)
        return add_bound(c, OP_GE, &p->v);
    if (strcmp(op, "<") == 0)
        return add_bound(c, OP_LT, &p->v);
    if (strcmp(op, ">") == 0 && p->parts < 3 && !has_next) {
        kb_semver top = make_version(UINT64_MAX, UINT64_MAX, UINT64_MAX);
        return add_bound(c, OP_GT, &top); /* above the largest version: nothing */
    }
    if (strcmp(op, ">") == 0)
        return p->parts == 3 ? add_bound(c, OP_GT, &p->v) : add_bound(c, OP_GE, &next);
    if (strcmp(op, "<=") == 0 && p->parts < 3)
        return has_next ? add_bound(c, OP_LT, &next) : 0;
    if (strcmp(op, "<=") == 0)
        return add_bound(c, OP_LE, &p->v);
    return KB_ERR_VERSION;
}

static int remember_prerelease(kb_constraint *c, const kb_semver *v)
{
    if (kbi_array_grow((void **)&c->pre_ok, &c->pre_cap, c->pre_len + 1, sizeof(*c->pre_ok)))
        return KB_ERR_NOMEM;
    c->pre_ok[c->pre_len++] = make_version(v->major, v->minor, v->patch);
    return 0;
}

static size_t skip_spaces(const char *s, size_t i, size_t end)
{
    while (i < end && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* One comparator s[0..n): an operator, spaces, a (partial) version. */
static int parse_comparator(kb_ctx *ctx, kb_constraint *c, const char *text, const char *s,
                            size_t n)
{
    static const char *ops[] = {">=", "<=", "^", "~", "=", ">", "<"};
    const char *op = "";
    size_t i = skip_spaces(s, 0, n);
    for (size_t k = 0; k < KB_ARRAY_LEN(ops); k++)
        if (kbi_str_starts(s + i, ops[k]) && i + strlen(ops[k]) <= n) {
            op = ops[k];
            i += strlen(op);
            break;
        }
    i = skip_spaces(s, i, n);
    size_t end = n;
    while (end > i && (s[end - 1] == ' ' || s[end - 1] == '\t'))
        end--;
    if (end == i)
        return kbi_error_set(ctx, KB_ERR_VERSION, "'%s' is not a version constraint: %s", text,
                             *op ? "an operator needs a version" : "empty comparator");
    partial p;
    const char *why = parse_partial(&p, s + i, end - i);
    if (why)
        return kbi_error_set(ctx, KB_ERR_VERSION, "'%s' is not a version constraint: '%.*s': %s",
                             text, (int)(end - i), s + i, why);
    if ((*op == '^' || *op == '~') && p.parts == 0)
        return kbi_error_set(ctx, KB_ERR_VERSION,
                             "'%s' is not a version constraint: '%s' needs a version, not '*'",
                             text, op);
    int rc = add_comparator(c, op, &p);
    if (rc == KB_ERR_VERSION)
        return kbi_error_set(ctx, KB_ERR_VERSION,
                             "'%s' is not a version constraint: '%s*' "
                             "matches nothing",
                             text, op);
    if (!rc && p.v.pre[0])
        rc = remember_prerelease(c, &p.v);
    return rc == KB_ERR_NOMEM ? kbi_error_oom(ctx) : rc;
}

int kbi_constraint_parse(kb_ctx *ctx, kb_constraint **out, const char *text)
{
    if (!out || !text)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kbi_constraint_parse: NULL argument");
    *out = NULL;
    kb_constraint *c = calloc(1, sizeof(*c));
    if (!c)
        return kbi_error_oom(ctx);
    size_t start = 0, len = strlen(text);
    for (size_t i = 0; i <= len; i++) {
        if (i < len && text[i] != ',')
            continue;
        int rc = parse_comparator(ctx, c, text, text + start, i - start);
        if (rc) {
            kbi_constraint_free(c);
            return rc;
        }
        start = i + 1;
    }
    *out = c;
    return 0;
}

static bool bound_holds(const bound *b, const kb_semver *v)
{
    int c = kbi_semver_cmp(v, &b->v);
    switch (b->op) {
    case OP_EQ:
        return c == 0;
    case OP_GT:
        return c > 0;
    case OP_GE:
        return c >= 0;
    case OP_LT:
        return c < 0;
    case OP_LE:
        return c <= 0;
    }
    return false;
}

static bool prerelease_allowed(const kb_constraint *c, const kb_semver *v)
{
    for (size_t i = 0; i < c->pre_len; i++) {
        const kb_semver *p = &c->pre_ok[i];
        if (p->major == v->major && p->minor == v->minor && p->patch == v->patch)
            return true;
    }
    return false;
}

bool kbi_constraint_match(const kb_constraint *c, const kb_semver *v)
{
    if (!c || !v)
        return false;
    if (v->pre[0] && !prerelease_allowed(c, v))
        return false;
    for (size_t i = 0; i < c->len; i++)
        if (!bound_holds(&c->bounds[i], v))
            return false;
    return true;
}

void kbi_constraint_free(kb_constraint *c)
{
    if (!c)
        return;
    free(c->bounds);
    free(c->pre_ok);
    free(c);
}
