/* A download target that hashes while it writes, resumes a partial file, and renames on match. */
#define _GNU_SOURCE /* sync_file_range */
#include "registry/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int io_fail(kb_ctx *ctx, const char *what, const char *path, int err)
{
    return kbi_error_errno(ctx, err, what, path);
}

/* Hash the bytes already in the part so the digest covers the resumed prefix. */
static int hash_existing(kb_blob_writer *w)
{
    char chunk[65536];
    ssize_t n;
    if (lseek(w->fd, 0, SEEK_SET) < 0)
        return io_fail(w->ctx, "seek", w->part, errno);
    while ((n = read(w->fd, chunk, sizeof(chunk))) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return io_fail(w->ctx, "read", w->part, errno);
        kbi_sha256_update(w->hash, chunk, (size_t)n);
        w->written += (uint64_t)n;
    }
    return 0;
}

int kbi_blob_writer_open(kb_blob_writer *w, kb_ctx *ctx, const char *dest, uint64_t max_size,
                         bool resume)
{
    memset(w, 0, sizeof(*w));
    w->ctx = ctx;
    w->fd = -1;
    w->max_size = max_size;
    w->dest = kbi_strdup(dest);
    /* a resumable download keeps a stable name; a one-shot write gets a private one */
    /* the pid lets a later writer remove it if this process dies (kbi_sweep_stale_tmp) */
    w->part = resume ? kbi_asprintf("%s.part", dest)
                     : kbi_asprintf("%s.tmp-%ld-XXXXXX", dest, (long)getpid());
    w->hash = kbi_sha256_new();
    if (!w->dest || !w->part || !w->hash) {
        kbi_blob_writer_close(w, true);
        return kbi_error_oom(ctx);
    }
    if (resume) {
        w->fd = open(w->part, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    } else {
        w->fd = mkstemp(w->part);
        if (w->fd >= 0)
            fchmod(w->fd, 0644);
    }
    if (w->fd < 0) {
        int rc = io_fail(ctx, "create", w->part, errno);
        kbi_blob_writer_close(w, true);
        return rc;
    }
    int rc = resume ? hash_existing(w) : 0;
    if (!rc && w->max_size && w->written > w->max_size)
        rc = kbi_blob_writer_truncate(w); /* bigger than allowed: not a prefix we can use */
    if (rc)
        kbi_blob_writer_close(w, false);
    return rc;
}

int kbi_blob_writer_open_mem(kb_blob_writer *w, kb_ctx *ctx, kb_buf *mem, uint64_t max_size)
{
    memset(w, 0, sizeof(*w));
    w->ctx = ctx;
    w->fd = -1;
    w->max_size = max_size;
    w->mem = mem;
    w->hash = kbi_sha256_new();
    return w->hash ? 0 : kbi_error_oom(ctx);
}

int kbi_blob_writer_track(kb_blob_writer *w, const char *label, uint64_t expected)
{
    w->label = label;
    w->job = kbi_progress_job_new(w->ctx);
    w->expected = expected;
    return kbi_blob_writer_report(w, false, 0);
}

int kbi_blob_writer_report(kb_blob_writer *w, bool finished, int status)
{
    if (!w->job)
        return 0;
    kb_progress p = {"download", w->item,  w->written, w->expected, finished ? 1 : 0,
                     w->job,     w->label, "bytes",    status};
    return kbi_progress_emit(w->ctx, &p);
}

int kbi_blob_writer_truncate(kb_blob_writer *w)
{
    if (w->mem)
        w->mem->len = 0;
    else if (ftruncate(w->fd, 0) != 0 || lseek(w->fd, 0, SEEK_SET) < 0)
        return io_fail(w->ctx, "truncate", w->part, errno);
    kbi_sha256_free(w->hash);
    w->hash = kbi_sha256_new();
    w->written = 0;
    w->writeback_off = 0;
    w->over_limit = false;
    return w->hash ? 0 : kbi_error_oom(w->ctx);
}

/* Every this many bytes the data written so far is handed to the disk, so that the fsync in
 * kbi_blob_writer_commit waits for little more than the tail: writeback overlaps the download. */
#define WRITEBACK_STEP ((uint64_t)8 << 20)

static void start_writeback(kb_blob_writer *w)
{
#ifdef SYNC_FILE_RANGE_WRITE
    if (w->written < w->writeback_off + WRITEBACK_STEP)
        return;
    /* a hint only: errors show up at fsync */
    sync_file_range(w->fd, (off_t)w->writeback_off, (off_t)(w->written - w->writeback_off),
                    SYNC_FILE_RANGE_WRITE);
    w->writeback_off = w->written;
#else
    (void)w;
#endif
}

int kbi_blob_writer_write(kb_blob_writer *w, const void *data, size_t len)
{
    if (w->max_size && w->written + len > w->max_size) {
        /* keep exactly the allowed prefix: a later call with a larger cap resumes */
        size_t room = (size_t)(w->max_size - w->written);
        if (room)
            kbi_blob_writer_write(w, data, room);
        w->over_limit = true;
        return kbi_error_set(w->ctx, KB_ERR_LIMIT, "blob %s is larger than the allowed %llu bytes",
                             w->item ? w->item : "", (unsigned long long)w->max_size);
    }
    int err =
        w->mem ? (kbi_buf_append(w->mem, data, len) ? ENOMEM : 0) : kbi_write_all(w->fd, data, len);
    if (err == ENOMEM && w->mem)
        return w->error = kbi_error_oom(w->ctx);
    if (err)
        return w->error = io_fail(w->ctx, "write", w->part, err);
    kbi_sha256_update(w->hash, data, len);
    w->written += len;
    if (!w->mem)
        start_writeback(w);
    return kbi_blob_writer_report(w, false, 0);
}

int kbi_blob_writer_commit(kb_blob_writer *w, const char *digest, const char *what)
{
    char hex[65];
    kbi_sha256_finish(w->hash, hex);
    w->hash = NULL;
    const char *want = kbi_digest_hex(digest);
    if (!want || strcmp(want, hex) != 0) {
        int rc = kbi_error_set_path(w->ctx, KB_ERR_DIGEST, w->dest, 0, 0,
                                    "digest mismatch for %s: expected %s, got sha256:%s", what,
                                    digest, hex);
        if (w->mem)
            w->mem->len = 0;
        kbi_blob_writer_close(w, false);
        return rc;
    }
    if (w->mem) {
        kbi_blob_writer_close(w, true);
        return 0;
    }
    if (fsync(w->fd) != 0) {
        int rc = io_fail(w->ctx, "sync", w->part, errno);
        kbi_blob_writer_close(w, false);
        return rc;
    }
    close(w->fd);
    w->fd = -1;
    if (rename(w->part, w->dest) != 0) {
        int rc = io_fail(w->ctx, "rename into", w->dest, errno);
        kbi_blob_writer_close(w, false);
        return rc;
    }
    char *dir = kbi_strdup(w->dest);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash) {
        *slash = '\0';
        kbi_fsync_dir(*dir ? dir : "/");
    } else {
        kbi_fsync_dir(".");
    }
    free(dir);
    free(w->part);
    w->part = NULL; /* nothing left to delete */
    kbi_blob_writer_close(w, true);
    return 0;
}

void kbi_blob_writer_close(kb_blob_writer *w, bool keep_part)
{
    if (w->fd >= 0)
        close(w->fd);
    w->fd = -1;
    if (!keep_part && w->part)
        unlink(w->part);
    kbi_sha256_free(w->hash);
    w->hash = NULL;
    free(w->part);
    free(w->dest);
    w->part = w->dest = NULL;
}
