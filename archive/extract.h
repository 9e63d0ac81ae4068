/* Safe extraction of artifact archives: a new folder or nothing, every entry checked. */
#ifndef KB_ARCHIVE_EXTRACT_H
#define KB_ARCHIVE_EXTRACT_H

#include "core/internal.h"

/* Limits; 0 means "no limit" for that one. Exceeding one gives KB_ERR_LIMIT naming it. */
typedef struct kb_extract_limits {
    uint64_t max_total_bytes; /* sum of all file sizes */
    uint64_t max_entries;     /* files + folders */
    uint64_t max_file_bytes;  /* one file */
    uint64_t max_ratio;       /* extracted bytes / archive bytes, checked past 1 MiB out */
    size_t max_path_len;      /* whole entry name, bytes */
} kb_extract_limits;

/* Defaults for binary artifacts: 4 GiB total, 100000 entries, 2 GiB per file, ratio 200,
 * names up to 1024 bytes. */
#define KB_EXTRACT_LIMITS_DEFAULT                                                                  \
    {                                                                                              \
        4ULL << 30, 100000, 2ULL << 30, 200, 1024                                                  \
    }

/* Top-level names an artifact may hold: "name/" allows a folder and anything below it,
 * "name" allows one regular file. */
extern const char *const kbi_extract_artifact_layout[];
extern const char *const kbi_extract_source_layout[];
/* A file at this package-relative path passes the layout (the extractor's own check). */
bool kbi_extract_layout_allows(const char *const *allowed, const char *path);

/* One regular file written by an extraction: its name below the new folder, the bytes written
 * and their sha256. sha256 is "" when the data did not arrive as one contiguous stream (a sparse
 * entry): the caller hashes the file on disk instead. */
typedef struct kb_extract_file {
    char *path;
    uint64_t size;
    char sha256[65];
} kb_extract_file;

typedef struct kb_extract_files {
    kb_extract_file *items;
    size_t len, cap;
} kb_extract_files;

#define KB_EXTRACT_FILES_INIT                                                                      \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }
void kbi_extract_files_free(kb_extract_files *files);

#define KB_EXTRACT_OPTS_VERSION 1
typedef struct kb_extract_opts {
    unsigned version;               /* KB_EXTRACT_OPTS_VERSION */
    const char *const *allowed_top; /* NULL-terminated; NULL allows any top-level name */
    kb_extract_limits limits;
    /* When set, filled with every regular file written and its sha256, hashed from the bytes as
     * they are written (one pass: the installer's record needs no second read). Emptied first. */
    kb_extract_files *files;
    /* Start writing each file's data to disk while extracting (sync_file_range, a hint: every
     * 8 MiB and at its end): the caller's fsync pass then mostly waits for I/O under way. */
    bool start_writeback;
    /* Also read zip (header-only dependencies come as zips); artifacts are tar only. */
    bool zip;
} kb_extract_opts;

#define KB_EXTRACT_OPTS_INIT                                                                       \
    {                                                                                              \
        KB_EXTRACT_OPTS_VERSION, NULL, KB_EXTRACT_LIMITS_DEFAULT, NULL, false, false               \
    }

/*
 * Extract archive_path (.tar.zst, or any format/filter libarchive reads) into a new folder
 * created under parent as ".kbpkg-extract-XXXXXX"; *out_dir (owned) names it, and the caller
 * renames it into place. Refused entries give KB_ERR_UNSAFE naming the entry: absolute paths,
 * "..", ".", empty or control-character components, symlinks, hard links, devices, fifos,
 * sockets, setuid/setgid/sticky bits, duplicates, names outside allowed_top. Limits give
 * KB_ERR_LIMIT. On any failure nothing is left under parent. Owners are never restored;
 * modes become 0755 (folders, files with an exec bit) or 0644.
 */
int kbi_extract_archive(char **out_dir, kb_ctx *ctx, const char *archive_path, const char *parent,
                        const kb_extract_opts *opts);

/* Read one regular-file member (exact name, e.g. "kbpkg.json") into out. KB_ERR_NOT_FOUND when
 * absent, KB_ERR_LIMIT when larger than max_bytes. */
int kbi_extract_read_member(kb_buf *out, kb_ctx *ctx, const char *archive_path, const char *member,
                            uint64_t max_bytes);

/* Member names in archive order (folders end with '/'), and file sizes (sizes may be NULL). */
int kbi_extract_list(kb_strv *names, uint64_t **sizes, kb_ctx *ctx, const char *archive_path);

/* Every regular-file member's name (leading "./" dropped), size and sha256, read from the
 * archive without writing anything: what an extraction of it installs. */
int kbi_extract_hash_members(kb_extract_files *out, kb_ctx *ctx, const char *archive_path);

#endif
