/* The hub tool's text buffer and atomic page writes, over libc alone. */
#include "hub_util.h"

#include <kbpkg/common.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int grow(hub_buf *b, size_t extra)
{
    if (extra > SIZE_MAX - b->len - 1)
        return KB_ERR_NOMEM;
    size_t need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *p = realloc(b->data, cap);
    if (!p)
        return KB_ERR_NOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int hub_buf_append(hub_buf *b, const char *data, size_t len)
{
    if (grow(b, len))
        return KB_ERR_NOMEM;
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = '\0';
    return 0;
}

int hub_buf_puts(hub_buf *b, const char *s)
{
    return hub_buf_append(b, s, strlen(s));
}

int hub_buf_printf(hub_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || grow(b, (size_t)n))
        return KB_ERR_NOMEM;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

void hub_buf_free(hub_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* "cannot <what> <path>: <strerror>" in *why; a full disk is KB_ERR_NOSPACE, as in libkbpkg. */
static int io_error(char **why, const char *what, const char *path, int err)
{
    hub_buf b = HUB_BUF_INIT;
    *why = hub_buf_printf(&b, "cannot %s %s: %s", what, path, strerror(err)) ? NULL : b.data;
    return err == ENOSPC || err == EDQUOT ? KB_ERR_NOSPACE : KB_ERR_IO;
}

int hub_mkdir_p(char **why, const char *path)
{
    char *p = strdup(path);
    if (!p)
        return KB_ERR_NOMEM;
    int rc = 0;
    for (char *s = p + 1; !rc; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        struct stat st;
        if (mkdir(p, 0755) != 0 && errno != EEXIST)
            rc = io_error(why, "create folder", p, errno);
        else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
            rc = io_error(why, "create folder", p, ENOTDIR);
        *s = c;
        if (!c)
            break;
    }
    free(p);
    return rc;
}

static int write_all(int fd, const char *data, size_t len)
{
    while (len) {
        ssize_t n = write(fd, data, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

int hub_write_file_atomic(char **why, const char *path, const char *data, size_t len)
{
    hub_buf tmp = HUB_BUF_INIT;
    if (hub_buf_printf(&tmp, "%s.tmp.XXXXXX", path))
        return KB_ERR_NOMEM;
    int fd = mkstemp(tmp.data), err = fd < 0 ? errno : 0;
    if (!err)
        err = write_all(fd, data ? data : "", len);
    if (!err && fchmod(fd, 0644) != 0)
        err = errno;
    if (fd >= 0 && close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp.data, path) != 0)
        err = errno;
    if (err && fd >= 0)
        unlink(tmp.data);
    hub_buf_free(&tmp);
    return err ? io_error(why, "write", path, err) : 0;
}
