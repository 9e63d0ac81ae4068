/* Reproducible .tar.zst writer: the same inputs give the same bytes, whatever the disk says. */
#include "archive/archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

/* One entry to write: a folder, a file on disk, or bytes in memory. */
typedef struct wentry {
    char *path; /* archive path, no trailing slash */
    bool dir;
    bool exec;
    char *file; /* on-disk source, or NULL */
    const void *data;
    size_t len;
} wentry;

typedef struct wlist {
    wentry *items;
    size_t len;
    size_t cap;
} wlist;

/* Where the archive bytes go, hashed and counted on the way. */
typedef struct wsink {
    kb_ctx *ctx;
    int fd;      /* a file, or -1 */
    kb_buf *buf; /* memory, or NULL */
    const char *name;
    kb_sha256 *hash;
    uint64_t size;
    int err; /* a kb_err recorded by the write callback */
} wsink;

static void wlist_free(wlist *l)
{
    for (size_t i = 0; i < l->len; i++) {
        free(l->items[i].path);
        free(l->items[i].file);
    }
    free(l->items);
    l->items = NULL;
    l->len = l->cap = 0;
}

static int wlist_push(kb_ctx *ctx, wlist *l, const wentry *e)
{
    if (kbi_array_grow((void **)&l->items, &l->cap, l->len + 1, sizeof(*l->items)))
        return kbi_error_oom(ctx);
    wentry copy = *e;
    copy.path = kbi_strdup(e->path);
    copy.file = e->file ? kbi_strdup(e->file) : NULL;
    if (!copy.path || (e->file && !copy.file)) {
        free(copy.path);
        free(copy.file);
        return kbi_error_oom(ctx);
    }
    l->items[l->len++] = copy;
    return 0;
}

/* Shared libraries are executable whatever their mode on disk (the loader maps them). */
static bool looks_like_shared_object(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    return kbi_str_ends(base, ".so") || strstr(base, ".so.") != NULL;
}

/* Relative, '/'-separated, no empty, "." or ".." components. */
static bool archive_path_valid(const char *path)
{
    if (!*path || path[0] == '/')
        return false;
    const char *p = path;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t n = slash ? (size_t)(slash - p) : strlen(p);
        if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
            return false;
        for (size_t i = 0; i < n; i++)
            if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
                return false;
        if (!slash)
            break;
        p = slash + 1;
        if (!*p)
            return false;
    }
    return true;
}

static const char *file_kind(mode_t mode)
{
    if (S_ISLNK(mode))
        return "a symlink";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISFIFO(mode))
        return "a fifo";
    if (S_ISSOCK(mode))
        return "a socket";
    return "not a regular file";
}

static int collect_dir(kb_ctx *ctx, wlist *l, const char *root, const char *rel)
{
    char *dir_path = rel ? kbi_path_join(root, rel) : kbi_strdup(root);
    if (!dir_path)
        return kbi_error_oom(ctx);
    DIR *d = opendir(dir_path);
    if (!d) {
        int rc = kbi_error_set_path(ctx, errno == ENOENT ? KB_ERR_NOT_FOUND : KB_ERR_IO, dir_path,
                                    0, 0, "cannot open folder %s: %s", dir_path, strerror(errno));
        free(dir_path);
        return rc;
    }
    int rc = 0;
    struct dirent *de;
    while (!rc && (de = readdir(d))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *child_rel = rel ? kbi_asprintf("%s/%s", rel, de->d_name) : kbi_strdup(de->d_name);
        char *child = child_rel ? kbi_path_join(root, child_rel) : NULL;
        struct stat st;
        if (!child)
            rc = kbi_error_oom(ctx);
        else if (lstat(child, &st) != 0)
            rc = kbi_error_set_path(ctx, KB_ERR_IO, child, 0, 0, "cannot stat %s: %s", child,
                                    strerror(errno));
        else if (!archive_path_valid(child_rel))
            rc = kbi_error_set_path(ctx, KB_ERR_UNSAFE, child, 0, 0,
                                    "cannot archive %s: the name has control characters", child);
        else if (S_ISDIR(st.st_mode)) {
            wentry e = {child_rel, true, true, NULL, NULL, 0};
            rc = wlist_push(ctx, l, &e);
            if (!rc)
                rc = collect_dir(ctx, l, root, child_rel);
        } else if (S_ISREG(st.st_mode)) {
            bool exec = (st.st_mode & 0111) || looks_like_shared_object(child_rel);
            wentry e = {child_rel, false, exec, child, NULL, 0};
            rc = wlist_push(ctx, l, &e);
        } else
            rc = kbi_error_set_path(ctx, KB_ERR_UNSAFE, child, 0, 0,
                                    "cannot archive %s: it is %s; artifacts hold only regular "
                                    "files and folders",
                                    child, file_kind(st.st_mode));
        free(child_rel);
        free(child);
    }
    closedir(d);
    free(dir_path);
    return rc;
}

/* Add a folder entry for every parent of path ("a/b/c" adds "a" and "a/b"). */
static int add_parents(kb_ctx *ctx, wlist *l, const char *path)
{
    char *copy = kbi_strdup(path);
    if (!copy)
        return kbi_error_oom(ctx);
    int rc = 0;
    for (char *s = strchr(copy, '/'); !rc && s; s = strchr(s + 1, '/')) {
        *s = '\0';
        wentry e = {copy, true, true, NULL, NULL, 0};
        rc = wlist_push(ctx, l, &e);
        *s = '/';
    }
    free(copy);
    return rc;
}

static int compare_entries(const void *a, const void *b)
{
    return strcmp(((const wentry *)a)->path, ((const wentry *)b)->path);
}

/* Sort by path; merge repeated folders, refuse a path given twice otherwise. */
static int sort_and_merge(kb_ctx *ctx, wlist *l)
{
    if (l->len)
        qsort(l->items, l->len, sizeof(*l->items), compare_entries);
    size_t out = 0;
    for (size_t i = 0; i < l->len; i++) {
        if (out && strcmp(l->items[out - 1].path, l->items[i].path) == 0) {
            if (l->items[out - 1].dir && l->items[i].dir) {
                free(l->items[i].path);
                free(l->items[i].file);
                continue;
            }
            int rc = kbi_error_set(ctx, KB_ERR_INVALID,
                                   "archive path '%s' is given twice (or as a file and a folder)",
                                   l->items[i].path);
            for (size_t j = i; j < l->len; j++) {
                free(l->items[j].path);
                free(l->items[j].file);
            }
            l->len = out;
            return rc;
        }
        l->items[out++] = l->items[i];
    }
    l->len = out;
    return 0;
}

/* Hand compressed bytes to the file or buffer, hashing and counting them. */
static int sink_put(wsink *s, const void *data, size_t len)
{
    if (s->buf) {
        if (kbi_buf_append(s->buf, data, len))
            return s->err = kbi_error_oom(s->ctx);
    } else {
        const char *p = data;
        size_t left = len;
        while (left) {
            ssize_t n = write(s->fd, p, left);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0)
                return s->err = kbi_error_errno(s->ctx, errno, "write", s->name);
            p += n;
            left -= (size_t)n;
        }
    }
    kbi_sha256_update(s->hash, data, len);
    s->size += len;
    return 0;
}

/* The zstd stream between libarchive's tar bytes and the sink. */
typedef struct zstream {
    wsink *s;
    ZSTD_CCtx *z;
    void *buf;
    size_t cap;
} zstream;

static int zstd_failure(wsink *s, size_t code)
{
    if (ZSTD_getErrorCode(code) == ZSTD_error_srcSize_wrong)
        return s->err = kbi_error_set_path(s->ctx, KB_ERR_IO, s->name, 0, 0,
                                           "cannot write %s: a file changed size while it was "
                                           "archived",
                                           s->name);
    if (ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation)
        return s->err = kbi_error_oom(s->ctx);
    return s->err =
               kbi_error_set_path(s->ctx, KB_ERR_ARCHIVE, s->name, 0, 0,
                                  "cannot write %s: zstd: %s", s->name, ZSTD_getErrorName(code));
}

/* Compress in until it is consumed (or, with ZSTD_e_end, until the frame is complete). */
static int zstream_push(zstream *zs, ZSTD_inBuffer *in, ZSTD_EndDirective end)
{
    for (;;) {
        ZSTD_outBuffer out = {zs->buf, zs->cap, 0};
        size_t left = ZSTD_compressStream2(zs->z, &out, in, end);
        if (ZSTD_isError(left))
            return zstd_failure(zs->s, left);
        int rc = out.pos ? sink_put(zs->s, zs->buf, out.pos) : 0;
        if (rc)
            return rc;
        if (end == ZSTD_e_end ? left == 0 : in->pos == in->size)
            return 0;
    }
}

/* Level and window follow the pledged size: a small archive gets a small context. */
static int zstream_open(zstream *zs, wsink *s, uint64_t tar_size)
{
    memset(zs, 0, sizeof(*zs));
    zs->s = s;
    zs->cap = ZSTD_CStreamOutSize();
    zs->z = ZSTD_createCCtx();
    zs->buf = malloc(zs->cap);
    if (!zs->z || !zs->buf)
        return s->err = kbi_error_oom(s->ctx);
    int level =
        tar_size <= KB_ARCHIVE_ZSTD_SMALL ? KB_ARCHIVE_ZSTD_LEVEL : KB_ARCHIVE_ZSTD_LEVEL_LARGE;
    size_t code = ZSTD_CCtx_setParameter(zs->z, ZSTD_c_compressionLevel, level);
    if (!ZSTD_isError(code))
        code = ZSTD_CCtx_setPledgedSrcSize(zs->z, tar_size);
    return ZSTD_isError(code) ? zstd_failure(s, code) : 0;
}

static void zstream_close(zstream *zs)
{
    ZSTD_freeCCtx(zs->z);
    free(zs->buf);
}

static la_ssize_t zstream_write(struct archive *a, void *payload, const void *data, size_t len)
{
    zstream *zs = payload;
    ZSTD_inBuffer in = {data, len, 0};
    if (zstream_push(zs, &in, ZSTD_e_continue)) {
        archive_set_error(a, EIO, "%s", kb_ctx_last_error(zs->s->ctx)->message);
        return -1;
    }
    return (la_ssize_t)len;
}

/* The measuring pass: only the size of the tar stream. */
static la_ssize_t count_write(struct archive *a, void *payload, const void *data, size_t len)
{
    (void)a;
    (void)data;
    *(uint64_t *)payload += len;
    return (la_ssize_t)len;
}

static int archive_failure(wsink *s, struct archive *a, const char *what)
{
    if (s->err)
        return s->err;
    return kbi_error_set_path(s->ctx, KB_ERR_ARCHIVE, s->name, 0, 0, "cannot write %s: %s: %s",
                              s->name, what, archive_error_string(a));
}

static int write_file_data(wsink *s, struct archive *a, const wentry *e, uint64_t size)
{
    int fd = open(e->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return kbi_error_set_path(s->ctx, KB_ERR_IO, e->file, 0, 0, "cannot open %s: %s", e->file,
                                  strerror(errno));
    char chunk[65536];
    uint64_t done = 0;
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = kbi_error_set_path(s->ctx, KB_ERR_IO, e->file, 0, 0, "cannot read %s: %s", e->file,
                                    strerror(errno));
            break;
        }
        if (n == 0 || done + (uint64_t)n > size) {
            if (n || done != size)
                rc = kbi_error_set_path(s->ctx, KB_ERR_IO, e->file, 0, 0,
                                        "%s changed size while it was archived", e->file);
            break;
        }
        if (archive_write_data(a, chunk, (size_t)n) != n) {
            rc = archive_failure(s, a, e->path);
            break;
        }
        done += (uint64_t)n;
    }
    close(fd);
    return rc;
}

static int entry_size(kb_ctx *ctx, const wentry *e, uint64_t *size)
{
    *size = 0;
    if (e->dir)
        return 0;
    if (!e->file) {
        *size = e->len;
        return 0;
    }
    struct stat st;
    if (lstat(e->file, &st) != 0)
        return kbi_error_set_path(ctx, errno == ENOENT ? KB_ERR_NOT_FOUND : KB_ERR_IO, e->file, 0,
                                  0, "cannot stat %s: %s", e->file, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return kbi_error_set_path(ctx, KB_ERR_UNSAFE, e->file, 0, 0,
                                  "cannot archive %s: it is %s; artifacts hold only regular "
                                  "files and folders",
                                  e->file, file_kind(st.st_mode));
    *size = (uint64_t)st.st_size;
    return 0;
}

/* The header fields that may vary are all fixed here; nothing comes from stat. Without data
 * (the measuring pass) libarchive pads the entry with zeros: the same length. */
static int write_entry(wsink *s, struct archive *a, struct archive_entry *ae, const wentry *e,
                       int64_t epoch, bool with_data)
{
    uint64_t size;
    int rc = entry_size(s->ctx, e, &size);
    if (rc)
        return rc;
    archive_entry_clear(ae);
    archive_entry_set_pathname(ae, e->path);
    archive_entry_set_filetype(ae, e->dir ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(ae, e->dir || e->exec ? 0755 : 0644);
    archive_entry_set_mtime(ae, (time_t)epoch, 0);
    archive_entry_set_uid(ae, 0);
    archive_entry_set_gid(ae, 0);
    archive_entry_set_size(ae, (la_int64_t)size);
    if (archive_write_header(a, ae) != ARCHIVE_OK)
        return archive_failure(s, a, e->path);
    if (e->dir || size == 0 || !with_data)
        return 0;
    if (e->file)
        return write_file_data(s, a, e, size);
    if (archive_write_data(a, e->data, e->len) != (la_ssize_t)e->len)
        return archive_failure(s, a, e->path);
    return 0;
}

/* One pass of the tar stream (pax restricted, uncompressed) into write_cb. */
static int tar_pass(wsink *s, const wlist *l, int64_t epoch, archive_write_callback *write_cb,
                    void *payload, bool with_data)
{
    struct archive *a = archive_write_new();
    struct archive_entry *ae = archive_entry_new();
    if (!a || !ae) {
        archive_write_free(a);
        archive_entry_free(ae);
        return kbi_error_oom(s->ctx);
    }
    int rc = 0;
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        /* no zero padding after the end of the tar: in the frame it would only cost bytes */
        archive_write_set_bytes_in_last_block(a, 1) != ARCHIVE_OK ||
        archive_write_open(a, payload, NULL, write_cb, NULL) != ARCHIVE_OK)
        rc = archive_failure(s, a, "setting up pax");
    for (size_t i = 0; !rc && i < l->len; i++)
        rc = write_entry(s, a, ae, &l->items[i], epoch, with_data);
    if (!rc && archive_write_close(a) != ARCHIVE_OK)
        rc = archive_failure(s, a, "finishing");
    archive_entry_free(ae);
    archive_write_free(a);
    return rc;
}

/* Measure the tar stream first (headers only, cheap), then compress it with that size pledged:
 * libarchive's zstd filter cannot pledge one, and without it level 19 takes 89.5 MiB for any
 * input. The size also goes into the frame header. */
static int write_entries(wsink *s, const wlist *l, int64_t epoch)
{
    uint64_t tar_size = 0;
    int rc = tar_pass(s, l, epoch, count_write, &tar_size, false);
    zstream zs = {0};
    if (!rc)
        rc = zstream_open(&zs, s, tar_size);
    if (!rc)
        rc = tar_pass(s, l, epoch, zstream_write, &zs, true);
    ZSTD_inBuffer none = {NULL, 0, 0};
    if (!rc)
        rc = zstream_push(&zs, &none, ZSTD_e_end);
    zstream_close(&zs);
    return rc;
}

static int write_to_file(kb_archive_result *out, kb_ctx *ctx, const char *out_path, const wlist *l,
                         int64_t epoch)
{
    char *tmp = kbi_asprintf("%s.tmp.%ld", out_path, (long)getpid());
    if (!tmp)
        return kbi_error_oom(ctx);
    wsink s = {ctx, -1, NULL, tmp, kbi_sha256_new(), 0, 0};
    int rc = 0;
    if (!s.hash)
        rc = kbi_error_oom(ctx);
    else if ((s.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, tmp, 0, 0, "cannot create %s: %s", tmp,
                                strerror(errno));
    if (!rc)
        rc = write_entries(&s, l, epoch);
    if (!rc && fsync(s.fd) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, tmp, 0, 0, "cannot sync %s: %s", tmp,
                                strerror(errno));
    if (s.fd >= 0)
        close(s.fd);
    if (!rc && rename(tmp, out_path) != 0)
        rc = kbi_error_set_path(ctx, KB_ERR_IO, out_path, 0, 0, "cannot rename %s to %s: %s", tmp,
                                out_path, strerror(errno));
    if (rc) {
        unlink(tmp);
        kbi_sha256_free(s.hash);
    } else {
        char *slash = strrchr(out_path, '/');
        char *dir = slash ? kbi_strndup(out_path, (size_t)(slash - out_path) + 1) : kbi_strdup(".");
        if (dir)
            kbi_fsync_dir(dir);
        free(dir);
        kbi_sha256_finish(s.hash, out->sha256);
        out->size = s.size;
    }
    free(tmp);
    return rc;
}

static int check_epoch(kb_ctx *ctx, int64_t epoch)
{
    if (epoch < 0 || epoch > 077777777777LL) /* what a ustar mtime field holds */
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "SOURCE_DATE_EPOCH %lld is out of range (0..8589934591)",
                             (long long)epoch);
    return 0;
}

int kbi_archive_write_dir(kb_archive_result *out, kb_ctx *ctx, const char *out_path,
                          const char *staging_dir, int64_t source_date_epoch)
{
    memset(out, 0, sizeof(*out));
    int rc = check_epoch(ctx, source_date_epoch);
    if (rc)
        return rc;
    wlist l = {0};
    rc = collect_dir(ctx, &l, staging_dir, NULL);
    if (!rc)
        rc = sort_and_merge(ctx, &l);
    if (!rc)
        rc = write_to_file(out, ctx, out_path, &l, source_date_epoch);
    wlist_free(&l);
    return rc;
}

static int invalid_member_path(kb_ctx *ctx, const char *path)
{
    return kbi_error_set(ctx, KB_ERR_INVALID,
                         "archive path '%s' is not relative and clean (no leading '/', no '.', "
                         "'..' or empty components, no control characters)",
                         path);
}

int kbi_archive_write_members(kb_archive_result *out, kb_ctx *ctx, const char *out_path,
                              const kb_archive_member *members, size_t count,
                              int64_t source_date_epoch)
{
    memset(out, 0, sizeof(*out));
    int rc = check_epoch(ctx, source_date_epoch);
    wlist l = {0};
    for (size_t i = 0; !rc && i < count; i++) {
        const kb_archive_member *m = &members[i];
        if (!archive_path_valid(m->archive_path)) {
            rc = invalid_member_path(ctx, m->archive_path);
            break;
        }
        struct stat st;
        bool is_dir = lstat(m->file_path, &st) == 0 && S_ISDIR(st.st_mode);
        wentry e = {
            (char *)m->archive_path, is_dir, true, is_dir ? NULL : (char *)m->file_path, NULL, 0};
        if (!is_dir) {
            uint64_t size;
            rc = entry_size(ctx, &e, &size);
            e.exec = !rc && (lstat(m->file_path, &st) == 0 && (st.st_mode & 0111));
            e.exec = e.exec || looks_like_shared_object(m->archive_path);
        }
        if (!rc)
            rc = add_parents(ctx, &l, m->archive_path);
        if (!rc)
            rc = wlist_push(ctx, &l, &e);
    }
    if (!rc)
        rc = sort_and_merge(ctx, &l);
    if (!rc)
        rc = write_to_file(out, ctx, out_path, &l, source_date_epoch);
    wlist_free(&l);
    return rc;
}

int kbi_archive_write_memory(kb_buf *out, kb_archive_result *result, kb_ctx *ctx,
                             const kb_archive_blob *blobs, size_t count, int64_t source_date_epoch)
{
    int rc = check_epoch(ctx, source_date_epoch);
    wlist l = {0};
    for (size_t i = 0; !rc && i < count; i++) {
        if (!archive_path_valid(blobs[i].archive_path)) {
            rc = invalid_member_path(ctx, blobs[i].archive_path);
            break;
        }
        wentry e = {(char *)blobs[i].archive_path,
                    false,
                    blobs[i].executable,
                    NULL,
                    blobs[i].data,
                    blobs[i].len};
        rc = add_parents(ctx, &l, blobs[i].archive_path);
        if (!rc)
            rc = wlist_push(ctx, &l, &e);
    }
    if (!rc)
        rc = sort_and_merge(ctx, &l);
    wsink s = {ctx, -1, out, "in-memory archive", NULL, 0, 0};
    if (!rc && !(s.hash = kbi_sha256_new()))
        rc = kbi_error_oom(ctx);
    size_t start = out->len;
    if (!rc)
        rc = write_entries(&s, &l, source_date_epoch);
    if (rc) {
        kbi_sha256_free(s.hash);
        out->len = start;
        if (out->data)
            out->data[start] = '\0';
    } else {
        char hex[65];
        kbi_sha256_finish(s.hash, hex);
        if (result) {
            memcpy(result->sha256, hex, sizeof(hex));
            result->size = s.size;
        }
    }
    wlist_free(&l);
    return rc;
}
