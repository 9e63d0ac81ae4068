/* Growable buffers, owned string helpers and string vectors. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int kbi_buf_grow(kb_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return KB_ERR_NOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return KB_ERR_NOMEM;
    p[b->len] = '\0'; /* a fresh buffer is "" too, so detaching an empty one is safe */
    b->data = p;
    b->cap = cap;
    return 0;
}

int kbi_array_grow(void **items, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap)
        return 0;
    if (elem_size && need > SIZE_MAX / elem_size)
        return KB_ERR_NOMEM;
    size_t n = *cap ? *cap : 8;
    while (n < need)
        n = n > SIZE_MAX / 2 ? need : n * 2;
    /* Doubling may pass what fits in size_t bytes even when need does not. */
    if (elem_size && n > SIZE_MAX / elem_size)
        n = need;
    void *p = realloc(*items, n * elem_size);
    if (!p)
        return KB_ERR_NOMEM; /* *items and *cap untouched: nothing pushed so far is lost */
    *items = p;
    *cap = n;
    return 0;
}

int kbi_buf_append(kb_buf *b, const void *data, size_t len)
{
    if (kbi_buf_grow(b, len))
        return KB_ERR_NOMEM;
    if (len)
        memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int kbi_buf_puts(kb_buf *b, const char *s)
{
    return kbi_buf_append(b, s, strlen(s));
}

int kbi_buf_vprintf(kb_buf *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return KB_ERR_INVALID;
    if (kbi_buf_grow(b, (size_t)n))
        return KB_ERR_NOMEM;
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int kbi_buf_printf(kb_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = kbi_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

char *kbi_buf_detach(kb_buf *b)
{
    if (!b->data && kbi_buf_grow(b, 0))
        return NULL;
    char *p = b->data;
    b->data = NULL;
    b->len = b->cap = 0;
    return p;
}

void kbi_buf_reset(kb_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

void kbi_buf_free(kb_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *kbi_strdup(const char *s)
{
    return s ? strdup(s) : NULL;
}

char *kbi_strndup(const char *s, size_t n)
{
    return s ? strndup(s, n) : NULL;
}

char *kbi_asprintf(const char *fmt, ...)
{
    kb_buf b = KB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    int rc = kbi_buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (rc) {
        kbi_buf_free(&b);
        return NULL;
    }
    return kbi_buf_detach(&b);
}

bool kbi_str_starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool kbi_str_ends(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && memcmp(s + n - m, suffix, m) == 0;
}

bool kbi_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s)
        return false;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return false;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = v;
    return true;
}

int kbi_strv_push_owned(kb_strv *v, char *s)
{
    if (!s)
        return KB_ERR_NOMEM;
    /* One slot more than len keeps the list NULL-terminated. */
    if (v->len + 1 == SIZE_MAX ||
        kbi_array_grow((void **)&v->items, &v->cap, v->len + 2, sizeof(*v->items))) {
        free(s);
        return KB_ERR_NOMEM;
    }
    v->items[v->len++] = s;
    v->items[v->len] = NULL;
    return 0;
}

int kbi_strv_push(kb_strv *v, const char *s)
{
    return kbi_strv_push_owned(v, kbi_strdup(s));
}

bool kbi_strv_contains(const kb_strv *v, const char *s)
{
    for (size_t i = 0; i < v->len; i++)
        if (strcmp(v->items[i], s) == 0)
            return true;
    return false;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void kbi_strv_sort(kb_strv *v)
{
    if (v->len > 1)
        qsort(v->items, v->len, sizeof(char *), cmp_str);
}

void kbi_strv_free(kb_strv *v)
{
    for (size_t i = 0; i < v->len; i++)
        free(v->items[i]);
    free(v->items);
    v->items = NULL;
    v->len = v->cap = 0;
}

KB_EXTERN void kb_string_free(char *s)
{
    free(s);
}

KB_EXTERN void kb_strings_free(char **list, size_t count)
{
    for (size_t i = 0; list && i < count; i++)
        free(list[i]);
    free(list);
}
