/* Reproducible artifact archives: sorted, normalized pax/ustar entries in a zstd stream. */
#ifndef KB_ARCHIVE_ARCHIVE_H
#define KB_ARCHIVE_ARCHIVE_H

#include "core/internal.h"

/* zstd level by the size of the tar stream (docs/artifact-format.md). Up to
 * KB_ARCHIVE_ZSTD_SMALL bytes, level 19: ~10% smaller .so artifacts than level 10, and with the
 * size pledged its context fits the input (0.3 MiB for a few KB, 35 MiB at 2 MiB). Above it,
 * level 9: level 19's 89.5 MiB context and ~3 MB/s would make a 50 MiB artifact take 17 s and
 * `farm -j N` hold N of them, for ~8% smaller output. Both depend only on the input, so equal
 * inputs still give equal bytes. */
#define KB_ARCHIVE_ZSTD_LEVEL 19
#define KB_ARCHIVE_ZSTD_LEVEL_LARGE 9
#define KB_ARCHIVE_ZSTD_SMALL (2u << 20)

/* What a finished archive is: its sha256 (lowercase hex) and size in bytes. */
typedef struct kb_archive_result {
    char sha256[65];
    uint64_t size;
} kb_archive_result;

/* One file taken from disk: stored as archive_path (relative, '/'-separated). */
typedef struct kb_archive_member {
    const char *archive_path;
    const char *file_path;
} kb_archive_member;

/* One file given as bytes (the in-memory writer). executable: mode 0755 instead of 0644. */
typedef struct kb_archive_blob {
    const char *archive_path;
    const void *data;
    size_t len;
    bool executable;
} kb_archive_blob;

/*
 * Write every file and folder under staging_dir into out_path (a .tar.zst), entries sorted by
 * path, mtime = source_date_epoch, owners 0 with empty names, modes 0755 (folders, executables,
 * .so) or 0644, nothing else recorded. Symlinks, devices, fifos and sockets in staging_dir are
 * refused (KB_ERR_UNSAFE naming the file). Written to a temp file, fsynced and renamed.
 */
int kbi_archive_write_dir(kb_archive_result *out, kb_ctx *ctx, const char *out_path,
                          const char *staging_dir, int64_t source_date_epoch);

/* The same from an explicit list; parent folders of each archive_path are added. Duplicate or
 * unsafe archive paths (absolute, "..", ".", empty components) give KB_ERR_INVALID. */
int kbi_archive_write_members(kb_archive_result *out, kb_ctx *ctx, const char *out_path,
                              const kb_archive_member *members, size_t count,
                              int64_t source_date_epoch);

/* The same rules, into memory (small archives such as source artifacts): out receives the
 * .tar.zst bytes; result (may be NULL) their digest and size. */
int kbi_archive_write_memory(kb_buf *out, kb_archive_result *result, kb_ctx *ctx,
                             const kb_archive_blob *blobs, size_t count, int64_t source_date_epoch);

#endif
