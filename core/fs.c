/* File system helpers: path joins, mkdir -p, whole-file reads, atomic writes, locks. */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

char *kb_path_join(const char *a, const char *b)
{
    size_t n = strlen(a);
    if (n && a[n - 1] == '/')
        return kb_asprintf("%s%s", a, b);
    return kb_asprintf("%s/%s", a, b);
}

int kb_err_from_errno(int err)
{
    /* EFBIG: the process's file size limit (RLIMIT_FSIZE) or the file system's. */
    return err == ENOSPC || err == EDQUOT ? KB_ERR_NOSPACE
           : err == EFBIG                 ? KB_ERR_LIMIT
           : err == ENOENT                ? KB_ERR_NOT_FOUND
           : err == ENOMEM                ? KB_ERR_NOMEM
                                          : KB_ERR_IO;
}

int kb_error_errno(kb_ctx *ctx, int err, const char *what, const char *path)
{
    return kb_error_set_path(ctx, kb_err_from_errno(err), path, 0, 0, "cannot %s %s: %s%s", what,
                             path, strerror(err), err == EFBIG ? " (file size limit reached)" : "");
}

static int io_error(kb_ctx *ctx, const char *what, const char *path, int err)
{
    return kb_error_errno(ctx, err, what, path);
}

int kb_mkdir_p(kb_ctx *ctx, const char *path, unsigned mode)
{
    char *p = kb_strdup(path);
    if (!p)
        return kb_error_oom(ctx);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, mode) != 0 && errno != EEXIST) {
                int rc = io_error(ctx, "create folder", p, errno);
                free(p);
                return rc;
            }
            if (c == '\0')
                break;
            *s = c;
        }
    }
    free(p);
    if (!kb_is_dir(path))
        return kb_error_set_path(ctx, KB_ERR_IO, path, 0, 0, "%s exists and is not a folder", path);
    return 0;
}

int kb_read_file(kb_ctx *ctx, const char *path, kb_buf *out)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return io_error(ctx, "open", path, errno);
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int rc = io_error(ctx, "read", path, errno);
            close(fd);
            return rc;
        }
        if (n == 0)
            break;
        if (kb_buf_append(out, chunk, (size_t)n)) {
            close(fd);
            return kb_error_oom(ctx);
        }
    }
    close(fd);
    if (!out->data && kb_buf_grow(out, 0))
        return kb_error_oom(ctx);
    return 0;
}

int kb_fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return kb_strdup(".");
    if (slash == path)
        return kb_strdup("/");
    return kb_strndup(path, (size_t)(slash - path));
}

int kb_write_all(int fd, const void *data, size_t len)
{
    const char *p = data;
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int kb_write_file_new(kb_ctx *ctx, const char *path, const void *data, size_t len, unsigned mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return io_error(ctx, "create", path, errno);
    int err = kb_write_all(fd, data, len);
    if (close(fd) != 0 && !err)
        err = errno;
    if (err) {
        unlink(path);
        return io_error(ctx, "write", path, err);
    }
    return 0;
}

int kb_fsync_path(kb_ctx *ctx, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return io_error(ctx, "open", path, errno);
    /* Delayed allocation can fail only now: ENOSPC and EIO surface here, naming the file. */
    int rc = fsync(fd) == 0 ? 0 : io_error(ctx, "sync", path, errno);
    close(fd);
    return rc;
}

int kb_write_file_atomic(kb_ctx *ctx, const char *path, const void *data, size_t len, unsigned mode)
{
    char *tmp = kb_asprintf("%s.tmp.%ld", path, (long)getpid());
    if (!tmp)
        return kb_error_oom(ctx);
    int rc = 0;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        rc = io_error(ctx, "create", tmp, errno);
        goto out;
    }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = io_error(ctx, "write", tmp, errno);
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    if (!rc && fsync(fd) != 0)
        rc = io_error(ctx, "sync", tmp, errno);
    close(fd);
    if (!rc && rename(tmp, path) != 0)
        rc = io_error(ctx, "rename into", path, errno);
    if (rc)
        unlink(tmp);
    else {
        char *dir = parent_of(path);
        if (dir)
            kb_fsync_dir(dir);
        free(dir);
    }
out:
    free(tmp);
    return rc;
}

bool kb_path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

bool kb_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int kb_rm_rf(kb_ctx *ctx, const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : io_error(ctx, "stat", path, errno);
    if (!S_ISDIR(st.st_mode)) {
        if (unlink(path) != 0 && errno != ENOENT)
            return io_error(ctx, "remove", path, errno);
        return 0;
    }
    DIR *d = opendir(path);
    if (!d)
        return io_error(ctx, "open folder", path, errno);
    int rc = 0;
    struct dirent *e;
    while (!rc && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char *child = kb_path_join(path, e->d_name);
        rc = child ? kb_rm_rf(ctx, child) : kb_error_oom(ctx);
        free(child);
    }
    closedir(d);
    if (!rc && rmdir(path) != 0 && errno != ENOENT)
        rc = io_error(ctx, "remove folder", path, errno);
    return rc;
}

int kb_mkdtemp(kb_ctx *ctx, char **out, const char *parent, const char *prefix)
{
    *out = NULL;
    char *tmpl = kb_asprintf("%s/%sXXXXXX", parent, prefix);
    if (!tmpl)
        return kb_error_oom(ctx);
    if (!mkdtemp(tmpl)) {
        int rc = io_error(ctx, "create temporary folder in", parent, errno);
        free(tmpl);
        return rc;
    }
    *out = tmpl;
    return 0;
}

int kb_lock_acquire(kb_ctx *ctx, kb_lock *lock, const char *path)
{
    lock->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (lock->fd < 0)
        return io_error(ctx, "open lock", path, errno);
    while (flock(lock->fd, LOCK_EX) != 0) {
        if (errno == EINTR)
            continue;
        int rc = io_error(ctx, "lock", path, errno);
        close(lock->fd);
        lock->fd = -1;
        return rc;
    }
    return 0;
}

void kb_lock_release(kb_lock *lock)
{
    if (lock->fd >= 0) {
        flock(lock->fd, LOCK_UN);
        close(lock->fd);
        lock->fd = -1;
    }
}
