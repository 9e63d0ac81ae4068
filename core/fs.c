/* File system helpers: path joins, mkdir -p, whole-file reads, atomic writes, locks. */
#define _GNU_SOURCE
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

char *kbi_path_join(const char *a, const char *b)
{
    size_t n = strlen(a);
    if (n && a[n - 1] == '/')
        return kbi_asprintf("%s%s", a, b);
    return kbi_asprintf("%s/%s", a, b);
}

int kbi_err_from_errno(int err)
{
    /* EFBIG: the process's file size limit (RLIMIT_FSIZE) or the file system's. */
    return err == ENOSPC || err == EDQUOT ? KB_ERR_NOSPACE
           : err == EFBIG                 ? KB_ERR_LIMIT
           : err == ENOENT                ? KB_ERR_NOT_FOUND
           : err == ENOMEM                ? KB_ERR_NOMEM
                                          : KB_ERR_IO;
}

int kbi_error_errno(kb_ctx *ctx, int err, const char *what, const char *path)
{
    return kbi_error_set_path(ctx, kbi_err_from_errno(err), path, 0, 0, "cannot %s %s: %s%s", what,
                              path, strerror(err),
                              err == EFBIG ? " (file size limit reached)" : "");
}

static int io_error(kb_ctx *ctx, const char *what, const char *path, int err)
{
    return kbi_error_errno(ctx, err, what, path);
}

/* A folder of path (or path itself) that is a symlink to nothing: mkdir says EEXIST for it and
 * ENOENT below it, and "not found" would send the user looking for a package. KB_ERR_IO naming
 * the link and its target (exit 1, the operation failed), or 0 when there is none. */
static int dangling_link_error(kb_ctx *ctx, const char *path)
{
    char *p = kbi_strdup(path);
    if (!p)
        return kbi_error_oom(ctx);
    int rc = 0;
    for (char *s = p + 1; !rc; s++) {
        if (*s != '/' && *s != '\0')
            continue;
        char c = *s;
        *s = '\0';
        struct stat st;
        char target[4096];
        ssize_t n;
        if (lstat(p, &st) == 0 && S_ISLNK(st.st_mode) && stat(p, &st) != 0 && errno == ENOENT &&
            (n = readlink(p, target, sizeof(target) - 1)) >= 0) {
            target[n] = '\0';
            rc = kbi_error_set_path(ctx, KB_ERR_IO, p, 0, 0,
                                    "cannot create folder %s: %s is a symlink to %s, which does "
                                    "not exist (create %s, or remove the link)",
                                    path, p, target, target);
        }
        if (c == '\0')
            break;
        *s = c;
    }
    free(p);
    return rc;
}

int kbi_mkdir_p(kb_ctx *ctx, const char *path, unsigned mode)
{
    char *p = kbi_strdup(path);
    if (!p)
        return kbi_error_oom(ctx);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, mode) != 0 && errno != EEXIST) {
                int err = errno;
                int rc = err == ENOENT ? dangling_link_error(ctx, p) : 0;
                if (!rc)
                    rc = io_error(ctx, "create folder", p, err);
                free(p);
                return rc;
            }
            if (c == '\0')
                break;
            *s = c;
        }
    }
    free(p);
    if (!kbi_is_dir(path)) {
        int rc = dangling_link_error(ctx, path);
        return rc ? rc
                  : kbi_error_set_path(ctx, KB_ERR_IO, path, 0, 0, "%s exists and is not a folder",
                                       path);
    }
    return 0;
}

int kbi_read_file(kb_ctx *ctx, const char *path, kb_buf *out)
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
        if (kbi_buf_append(out, chunk, (size_t)n)) {
            close(fd);
            return kbi_error_oom(ctx);
        }
    }
    close(fd);
    if (!out->data && kbi_buf_grow(out, 0))
        return kbi_error_oom(ctx);
    return 0;
}

int kbi_fsync_dir(const char *path)
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
        return kbi_strdup(".");
    if (slash == path)
        return kbi_strdup("/");
    return kbi_strndup(path, (size_t)(slash - path));
}

int kbi_write_all(int fd, const void *data, size_t len)
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

int kbi_write_file_new(kb_ctx *ctx, const char *path, const void *data, size_t len, unsigned mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return io_error(ctx, "create", path, errno);
    int err = kbi_write_all(fd, data, len);
    if (close(fd) != 0 && !err)
        err = errno;
    if (err) {
        unlink(path);
        return io_error(ctx, "write", path, err);
    }
    return 0;
}

int kbi_fsync_path(kb_ctx *ctx, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return io_error(ctx, "open", path, errno);
    /* Delayed allocation can fail only now: ENOSPC and EIO surface here, naming the file. */
    int rc = fsync(fd) == 0 ? 0 : io_error(ctx, "sync", path, errno);
    close(fd);
    return rc;
}

int kbi_write_file_atomic(kb_ctx *ctx, const char *path, const void *data, size_t len,
                          unsigned mode)
{
    char *tmp = kbi_asprintf("%s.tmp.%ld", path, (long)getpid());
    if (!tmp)
        return kbi_error_oom(ctx);
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
            kbi_fsync_dir(dir);
        free(dir);
    }
out:
    free(tmp);
    return rc;
}

/* The digits at s up to end (end NULL: the string's end); -1 unless all digits and > 0. */
static long pid_digits(const char *s, const char *end)
{
    long pid = 0;
    if (s == end || !*s)
        return -1;
    for (; end ? s < end : *s != '\0'; s++) {
        if (*s < '0' || *s > '9' || pid > 4194304) /* pid_max's ceiling */
            return -1;
        pid = pid * 10 + (*s - '0');
    }
    return pid > 0 ? pid : -1;
}

long kbi_tmp_name_pid(const char *name)
{
    const char *t = strstr(name, ".tmp");
    if (!t || t == name)
        return -1;
    t += 4;
    if (*t == '.') /* kbi_write_file_atomic: path.tmp.<pid> */
        return pid_digits(t + 1, NULL);
    if (*t != '-')
        return -1;
    const char *dash = strchr(t + 1, '-'); /* blob writer: path.tmp-<pid>-XXXXXX */
    if (dash && strlen(dash + 1) == 6)
        return pid_digits(t + 1, dash);
    return strlen(t + 1) == 6 ? 0 : -1; /* before the pid was in the name: path.tmp-XXXXXX */
}

static bool tmp_is_stale(long pid, const struct stat *st, time_t now)
{
    time_t age = now - st->st_mtime;
    if (pid == 0)
        return age >= 24 * 3600;
    return age >= KB_TMP_STALE_S && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

void kbi_sweep_stale_tmp(kb_ctx *ctx, const char *dir, size_t *removed)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    time_t now = time(NULL);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = kbi_tmp_name_pid(e->d_name);
        struct stat st;
        if (pid < 0 || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || !tmp_is_stale(pid, &st, now))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0) {
            kbi_log(ctx, KB_LOG_DEBUG, "removed %s/%s: a temp file left by a writer that died", dir,
                    e->d_name);
            if (removed)
                (*removed)++;
        }
    }
    closedir(d);
}

bool kbi_path_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

bool kbi_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int kbi_rm_rf(kb_ctx *ctx, const char *path)
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
        char *child = kbi_path_join(path, e->d_name);
        rc = child ? kbi_rm_rf(ctx, child) : kbi_error_oom(ctx);
        free(child);
    }
    closedir(d);
    if (!rc && rmdir(path) != 0 && errno != ENOENT)
        rc = io_error(ctx, "remove folder", path, errno);
    return rc;
}

int kbi_mkdtemp(kb_ctx *ctx, char **out, const char *parent, const char *prefix)
{
    *out = NULL;
    char *tmpl = kbi_asprintf("%s/%sXXXXXX", parent, prefix);
    if (!tmpl)
        return kbi_error_oom(ctx);
    if (!mkdtemp(tmpl)) {
        int rc = io_error(ctx, "create temporary folder in", parent, errno);
        free(tmpl);
        return rc;
    }
    *out = tmpl;
    return 0;
}

int kbi_lock_acquire(kb_ctx *ctx, kb_lock *lock, const char *path)
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

void kbi_lock_release(kb_lock *lock)
{
    if (lock->fd >= 0) {
        flock(lock->fd, LOCK_UN);
        close(lock->fd);
        lock->fd = -1;
    }
}
