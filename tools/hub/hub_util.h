/* The hub tool's own text buffer and file writing: libkbpkg keeps its helpers internal. */
#ifndef KB_HUB_HUB_UTIL_H
#define KB_HUB_HUB_UTIL_H

#include <stddef.h>

/* A growing NUL-terminated string; data is NULL until something is appended. */
typedef struct hub_buf {
    char *data;
    size_t len, cap;
} hub_buf;

#define HUB_BUF_INIT                                                                               \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Each returns 0, or KB_ERR_NOMEM with the buffer as it was. */
int hub_buf_append(hub_buf *b, const char *data, size_t len);
int hub_buf_puts(hub_buf *b, const char *s);
int hub_buf_printf(hub_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hub_buf_free(hub_buf *b);

/* Create path and its parents (mode 0755); 0, or a kb_err with *why ("cannot create ...: ...",
 * malloc'd, NULL when out of memory). */
int hub_mkdir_p(char **why, const char *path);
/* Write data to path through a temporary file renamed over it, mode 0644; errors as above. */
int hub_write_file_atomic(char **why, const char *path, const char *data, size_t len);

#endif
