/* Internal core API shared by every module: ctx internals, errors, logging, buffers. */
#ifndef KB_CORE_INTERNAL_H
#define KB_CORE_INTERNAL_H

#include "kbpkg/common.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

#define KB_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define KB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors: each returns code so callers can `return kbi_error_set(...)` ---- */
int kbi_error_set(kb_ctx *ctx, int code, const char *fmt, ...) KB_PRINTF(3, 4);
int kbi_error_set_path(kb_ctx *ctx, int code, const char *path, unsigned line, unsigned column,
                       const char *fmt, ...) KB_PRINTF(6, 7);
int kbi_error_set_url(kb_ctx *ctx, int code, const char *url, const char *fmt, ...) KB_PRINTF(4, 5);
/* Record an out-of-memory error (no allocation needed). */
int kbi_error_oom(kb_ctx *ctx);
/* Prefix the current message with "<context>: " (keeps code, path, url). */
void kbi_error_prefix(kb_ctx *ctx, const char *fmt, ...) KB_PRINTF(2, 3);

/* ---- callbacks ---- */
void kbi_log(kb_ctx *ctx, kb_log_level level, const char *fmt, ...) KB_PRINTF(3, 4);
void kbi_event_emit(kb_ctx *ctx, kb_event_type type, const char *subject, const char *fmt, ...)
    KB_PRINTF(4, 5);
/* Returns KB_ERR_CANCELLED (with the error set) when the callback asks to cancel. */
int kbi_progress_report(kb_ctx *ctx, const char *task, const char *item, uint64_t done,
                        uint64_t total, int finished);
/* A new job id for kb_progress.job (never 0). */
uint64_t kbi_progress_job_new(kb_ctx *ctx);
/* Report p as it is, filling label (item) and unit ("bytes") when NULL; cancels as above,
 * except on a finished report (always 0: the job's outcome stands). */
int kbi_progress_emit(kb_ctx *ctx, const kb_progress *p);

/* ---- config (core/config.c) ---- */
/* Never NULL for a declared key; the effective value. */
const char *kbi_config_str(const kb_ctx *ctx, const char *key);
bool kbi_config_bool(const kb_ctx *ctx, const char *key);
long kbi_config_long(const kb_ctx *ctx, const char *key);
/* Set a key at a layer, remembering where it came from. */
int kbi_config_set_layer(kb_ctx *ctx, const char *key, const char *value, kb_config_origin origin,
                         const char *origin_path);
int kbi_config_init(kb_ctx *ctx);
void kbi_config_free(kb_ctx *ctx);
/* Layer the system, user and project config files over ctx (core/config_file.c). */
int kbi_config_load_files(kb_ctx *ctx);

/* ---- growable byte buffer, always NUL-terminated ---- */
typedef struct kb_buf {
    char *data;
    size_t len;
    size_t cap;
} kb_buf;

#define KB_BUF_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }
int kbi_buf_grow(kb_buf *b, size_t extra);
int kbi_buf_append(kb_buf *b, const void *data, size_t len);
int kbi_buf_puts(kb_buf *b, const char *s);
int kbi_buf_printf(kb_buf *b, const char *fmt, ...) KB_PRINTF(2, 3);
int kbi_buf_vprintf(kb_buf *b, const char *fmt, va_list ap);
/* Hand over the data (caller frees); the buffer becomes empty. Never NULL on success. */
char *kbi_buf_detach(kb_buf *b);
void kbi_buf_reset(kb_buf *b);
void kbi_buf_free(kb_buf *b);

/* ---- growable arrays ----
 * Make room for need elements of elem_size bytes in *items, doubling *cap (from 8) so that n
 * pushes cost O(n). KB_ERR_NOMEM when need * elem_size overflows or realloc fails; then *items
 * and *cap are left as they were, so nothing already stored is lost. Call as
 * kbi_array_grow((void **)&list->items, &list->cap, list->len + 1, sizeof(*list->items)). */
int kbi_array_grow(void **items, size_t *cap, size_t need, size_t elem_size);

/* ---- strings ---- */
char *kbi_strdup(const char *s); /* NULL-safe */
char *kbi_strndup(const char *s, size_t n);
char *kbi_asprintf(const char *fmt, ...) KB_PRINTF(1, 2);
bool kbi_str_starts(const char *s, const char *prefix);
bool kbi_str_ends(const char *s, const char *suffix);
/* Parse a non-negative decimal integer with no sign, no junk; false on overflow. */
bool kbi_parse_u64(const char *s, uint64_t *out);

/* A list of owned strings. */
typedef struct kb_strv {
    char **items;
    size_t len;
    size_t cap;
} kb_strv;
#define KB_STRV_INIT                                                                               \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }
int kbi_strv_push(kb_strv *v, const char *s); /* copies s */
int kbi_strv_push_owned(kb_strv *v, char *s); /* takes s */
bool kbi_strv_contains(const kb_strv *v, const char *s);
void kbi_strv_sort(kb_strv *v);
void kbi_strv_free(kb_strv *v);

/* ---- report rows (core/report.c): the rows every publish, farm and sync report holds ---- */
typedef struct kb_report_rows {
    kb_report_row *items; /* strings owned */
    size_t len;
    size_t cap;
} kb_report_rows;
/* Append a copy of row (its strings copied); KB_ERR_NOMEM. */
int kbi_report_rows_add(kb_report_rows *rows, const kb_report_row *row);
/* Row index, borrowed; KB_ERR_NOT_FOUND past the end. */
int kbi_report_rows_get(const kb_report_row **out, const kb_report_rows *rows, size_t index);
size_t kbi_report_rows_count_status(const kb_report_rows *rows, kb_status status);
void kbi_report_rows_free(kb_report_rows *rows);

/* ---- files and paths (core/fs.c); errors name the path ---- */
/* The one errno -> kb_err mapping: a full disk or quota is KB_ERR_NOSPACE, a file size limit
 * KB_ERR_LIMIT, a missing file KB_ERR_NOT_FOUND, anything else KB_ERR_IO, on every path. */
int kbi_err_from_errno(int err);
/* Sets and returns that code with "cannot <what> <path>: <strerror>", naming the path. */
int kbi_error_errno(kb_ctx *ctx, int err, const char *what, const char *path);
/* write(2) until done, retrying EINTR; 0 or the errno. */
int kbi_write_all(int fd, const void *data, size_t len);
char *kbi_path_join(const char *a, const char *b);
int kbi_mkdir_p(kb_ctx *ctx, const char *path, unsigned mode);
int kbi_read_file(kb_ctx *ctx, const char *path, kb_buf *out);
/* Write to path.tmp.<pid>, fsync, rename over path, fsync the folder. */
int kbi_write_file_atomic(kb_ctx *ctx, const char *path, const void *data, size_t len,
                          unsigned mode);
/* Temp files of writers that died before their rename (SIGKILL, power loss) would stay in a
 * folder forever. Remove those in dir whose name is a writer's temp name (path.tmp.<pid> from
 * kbi_write_file_atomic, path.tmp-<pid>-XXXXXX from a blob writer) when no process <pid> lives
 * here and the file was not modified for KB_TMP_STALE_S (a writer on another host sharing the
 * folder has a pid that means nothing here, but a live one keeps its file fresh); an older
 * name without a pid only after a day. *removed (may be NULL) counts them. Best effort: what
 * cannot be read or removed is left, the caller holds the folder's writer lock. */
#define KB_TMP_STALE_S 600
void kbi_sweep_stale_tmp(kb_ctx *ctx, const char *dir, size_t *removed);
/* The writer pid in a temp name made by kbi_write_file_atomic or a blob writer: > 0, 0 for a
 * temp name without one, -1 when name is no temp name. */
long kbi_tmp_name_pid(const char *name);
/* Create path (it must not exist) and write data, without fsync: for a file inside a folder
 * that is synced (kbi_fsync_path) and renamed into place as a whole. */
int kbi_write_file_new(kb_ctx *ctx, const char *path, const void *data, size_t len, unsigned mode);
/* fsync a file or folder; errors (ENOSPC, EIO from writeback) name it. */
int kbi_fsync_path(kb_ctx *ctx, const char *path);
int kbi_rm_rf(kb_ctx *ctx, const char *path);
bool kbi_path_exists(const char *path);
bool kbi_is_dir(const char *path);
/* mkdtemp under parent with the given prefix; *out owned. */
int kbi_mkdtemp(kb_ctx *ctx, char **out, const char *parent, const char *prefix);
int kbi_fsync_dir(const char *path);

/* Advisory exclusive lock on a lock file (created): flock, waits. */
typedef struct kb_lock {
    int fd;
} kb_lock;
int kbi_lock_acquire(kb_ctx *ctx, kb_lock *lock, const char *path);
void kbi_lock_release(kb_lock *lock);

/* ---- sha256 (core/hash.c, OpenSSL EVP) ---- */
typedef struct kb_sha256 kb_sha256;
kb_sha256 *kbi_sha256_new(void);
void kbi_sha256_update(kb_sha256 *h, const void *data, size_t len);
/* Writes 64 lowercase hex chars + NUL into hex; frees h. */
void kbi_sha256_finish(kb_sha256 *h, char hex[65]);
void kbi_sha256_free(kb_sha256 *h);
void kbi_sha256_hex(const void *data, size_t len, char hex[65]);
/* Refuses anything but a regular file (FIFOs and devices are never read). */
int kbi_sha256_file(kb_ctx *ctx, const char *path, char hex[65], uint64_t *size_out);
/* The whole of an open file, read with pread from offset 0. */
int kbi_sha256_fd(kb_ctx *ctx, int fd, const char *path, char hex[65], uint64_t *size_out);
/* open(O_RDONLY | O_CLOEXEC | O_NONBLOCK | extra_flags) + fstat: the fd of a regular file, or a
 * negative kb_err naming path (a FIFO or device is refused without blocking or reading). */
int kbi_open_regular(kb_ctx *ctx, const char *path, int extra_flags);

/* ---- child processes (core/proc.c) ---- */
typedef struct kb_proc_result {
    int exit_code; /* -1 when killed by a signal or timed out */
    int signal;    /* the signal, when killed */
    int timed_out;
    kb_buf output; /* stdout and stderr together */
} kb_proc_result;
/* Run argv (argv[0] searched in PATH) with an optional cwd and timeout (0: none). */
int kbi_proc_run(kb_ctx *ctx, kb_proc_result *res, const char *const *argv, const char *cwd,
                 unsigned timeout_ms);
void kbi_proc_result_free(kb_proc_result *res);
/* Find an executable in PATH; *out owned; KB_ERR_NOT_FOUND when absent. */
int kbi_which(char **out, const char *name);

/* ---- context internals ---- */
struct kb_config_value;

struct kb_ctx {
    kb_ctx_options opts;
    kb_error err;
    char *err_message;
    char *err_path;
    char *err_url;
    struct kb_config_value *config; /* one per key of the config table */
    size_t config_len;
    /* The probe's result, kept for the ctx's life so a warm kb_kernel_open does not
     * re-initialise GPU drivers; owned by whoever set it, freed through the function. */
    void *probe_cache;
    void (*probe_cache_free)(void *);
    /* What kb_kernel_open resolved each ref to (runtime/loader.c), so that a warm open is a lookup
     * and one stat; dropped with any setting change. Owned, freed through the function. */
    void *open_memo;
    void (*open_memo_free)(void *);
    uint64_t progress_jobs; /* the last kb_progress.job handed out */
};

#endif
