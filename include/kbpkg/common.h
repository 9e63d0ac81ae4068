/* kbpkg public API: export macro, error codes, the context and its callbacks. */
#ifndef KBPKG_COMMON_H
#define KBPKG_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(KBPKG_BUILDING_LIBRARY)
#define KB_EXTERN __attribute__((visibility("default")))
#else
#define KB_EXTERN
#endif

#define KBPKG_VERSION_MAJOR 0
#define KBPKG_VERSION_MINOR 1
#define KBPKG_VERSION_PATCH 0
#define KBPKG_VERSION_STRING "0.1.0"

/*
 * Error codes. Explicit numbers, append-only: a released code never changes
 * meaning or value. Functions return 0 (KB_OK) or one of these.
 */
typedef enum kb_err {
    KB_OK = 0,
    KB_ERR_GENERIC = -1,       /* unexpected failure; the message says more */
    KB_ERR_NOMEM = -2,         /* out of memory */
    KB_ERR_INVALID = -3,       /* invalid argument from the caller */
    KB_ERR_IO = -4,            /* file system error (the message names the path) */
    KB_ERR_NOT_FOUND = -5,     /* package, file, version or symbol does not exist */
    KB_ERR_PARSE = -6,         /* syntax error in YAML/JSON (file:line:col) */
    KB_ERR_MANIFEST = -7,      /* kernel.yaml is well-formed but invalid */
    KB_ERR_VERSION = -8,       /* bad semantic version or constraint */
    KB_ERR_TARGET = -9,        /* bad target id or arch name */
    KB_ERR_INCOMPATIBLE = -10, /* nothing fits the device */
    KB_ERR_PROBE = -11,        /* hardware probe failed */
    KB_ERR_TOOLCHAIN = -12,    /* compiler missing or unusable */
    KB_ERR_BUILD = -13,        /* compilation or verification failed */
    KB_ERR_ARCHIVE = -14,      /* archive unreadable or malformed */
    KB_ERR_NETWORK = -15,      /* connection failed, timed out, reset */
    KB_ERR_HTTP = -16,         /* unexpected HTTP status (the message names the URL) */
    KB_ERR_REGISTRY = -17,     /* the registry answered with an OCI error code */
    KB_ERR_AUTH = -18,         /* authentication required or refused */
    KB_ERR_DIGEST = -19,       /* content does not match its digest */
    KB_ERR_SIGNATURE = -20,    /* signature missing, invalid or untrusted */
    KB_ERR_UNSAFE = -21,       /* archive entry refused by the extraction policy */
    KB_ERR_LOCKED = -22,       /* another process holds the lock */
    KB_ERR_EXISTS = -23,       /* refusing to overwrite existing content */
    KB_ERR_OFFLINE = -24,      /* needs the network but offline mode is on */
    KB_ERR_LOAD = -25,         /* dlopen/dlsym failed */
    KB_ERR_ABI = -26,          /* kernel ABI, name, version or exports mismatch */
    KB_ERR_CONFIG = -27,       /* bad configuration key or value */
    KB_ERR_UNSUPPORTED = -28,  /* not supported on this host */
    KB_ERR_CANCELLED = -29,    /* cancelled by a callback */
    KB_ERR_TIMEOUT = -30,      /* an operation ran out of time */
    KB_ERR_NOSPACE = -31,      /* disk full or quota exceeded */
    KB_ERR_LIMIT = -32,        /* a size or count limit was exceeded */
} kb_err;

/* A static, never-NULL description of an error code. */
KB_EXTERN const char *kb_strerror(int code);

/* The library version this binary was built from ("0.1.0"). */
KB_EXTERN const char *kb_version(void);

typedef enum kb_log_level {
    KB_LOG_ERROR = 0,
    KB_LOG_WARN = 1,
    KB_LOG_INFO = 2,
    KB_LOG_DEBUG = 3, /* HTTP requests, compiler command lines */
} kb_log_level;

typedef void (*kb_log_cb)(kb_log_level level, const char *message, void *payload);

/*
 * Progress of one long task (a download, a build). total is 0 when unknown.
 *
 * Each job (one blob downloaded, one target compiled) reports a first time when it starts
 * (done may be non-zero: a resumed download), then as it advances, then once with finished
 * set. Jobs of one ctx can be under way at the same time (`kbpkg build -j N` compiles
 * several targets at once): tell them apart by job, not by item. Reports of one ctx come
 * one at a time, never concurrently.
 */
typedef struct kb_progress {
    const char *task; /* "download", "build", "extract", "upload" */
    const char *item; /* what: a package@version target, a digest */
    uint64_t done;
    uint64_t total;
    int finished; /* 1 on the last report for this item */
    /* Appended without breaking older callbacks (they never read past finished). A callback
     * that reads these needs a library that fills them: this version or later. */
    uint64_t job;      /* non-zero, the same on every report of one job, unique in its ctx */
    const char *label; /* for people: "radeonflow/gemm cpu-x86_64_v3-x86_64-linux"; never NULL */
    const char *unit;  /* what done and total count: "bytes" or "targets"; never NULL */
    int status;        /* with finished: 0, or the kb_err the job failed with */
} kb_progress;

/* Return non-zero to cancel the task (it fails with KB_ERR_CANCELLED); ignored on a finished
 * report. */
typedef int (*kb_progress_cb)(const kb_progress *progress, void *payload);

typedef enum kb_event_type {
    KB_EVENT_NOTICE = 0,         /* a one-line fact the user should see */
    KB_EVENT_TARGET_CHOSEN = 1,  /* subject: package, detail: target + reason */
    KB_EVENT_TARGET_REFUSED = 2, /* subject: target, detail: reason */
    KB_EVENT_BUILD_START = 3,    /* subject: package, detail: target */
    KB_EVENT_BUILD_DONE = 4,
    KB_EVENT_BUILD_FAILED = 5,
    KB_EVENT_BUILD_SKIPPED = 6,
    KB_EVENT_DOWNLOAD = 7,
    KB_EVENT_INSTALLED = 8,
    KB_EVENT_PUBLISHED = 9,
    KB_EVENT_WARNING = 10,
} kb_event_type;

typedef struct kb_event {
    kb_event_type type;
    const char *subject;
    const char *detail;
} kb_event;

typedef void (*kb_event_cb)(const kb_event *event, void *payload);

/* Options for kb_ctx_new. Always start from KB_CTX_OPTIONS_INIT. */
#define KB_CTX_OPTIONS_VERSION 1
typedef struct kb_ctx_options {
    unsigned int version; /* KB_CTX_OPTIONS_VERSION */
    kb_log_cb log;
    kb_progress_cb progress;
    kb_event_cb event;
    void *payload;          /* handed to every callback */
    kb_log_level log_level; /* messages above this level are not reported */
    int no_config_files;    /* 1: hermetic: only built-in defaults, KBPKG_* and kb_ctx_set */
} kb_ctx_options;

#define KB_CTX_OPTIONS_INIT                                                                        \
    {                                                                                              \
        KB_CTX_OPTIONS_VERSION, NULL, NULL, NULL, NULL, KB_LOG_INFO, 0                             \
    }

/* The context: callbacks, settings and the last error. One per thread. */
typedef struct kb_ctx kb_ctx;

/* A new ctx in *out. KB_ERR_CONFIG when a config file is bad: *out is still set, its
 * kb_ctx_last_error names the file, line and key; free it with kb_ctx_free either way. On any
 * other error *out is NULL. */
/* The one way to free what the API returns as strings: a string, and a list of count strings
 * (search results, tags, repositories, ...). NULL is fine. */
KB_EXTERN void kb_string_free(char *s);
KB_EXTERN void kb_strings_free(char **list, size_t count);

KB_EXTERN int kb_ctx_new(kb_ctx **out, const kb_ctx_options *options);
KB_EXTERN void kb_ctx_free(kb_ctx *ctx);
/* Change which log messages reach the log callback. */
KB_EXTERN void kb_ctx_set_log_level(kb_ctx *ctx, kb_log_level level);

/* The error recorded by the last failing call on this ctx. */
typedef struct kb_error {
    int code;            /* a kb_err */
    const char *message; /* full sentence naming the thing involved */
    const char *path;    /* file involved, or NULL */
    const char *url;     /* URL involved, or NULL */
    unsigned int line;   /* 1-based line in path, 0 when none */
    unsigned int column; /* 1-based column in path, 0 when none */
} kb_error;

/* Borrowed from ctx; valid until the next call on ctx. Never NULL. */
KB_EXTERN const kb_error *kb_ctx_last_error(const kb_ctx *ctx);
KB_EXTERN void kb_ctx_clear_error(kb_ctx *ctx);

/*
 * Settings. Every key is declared once in the library's config table with its
 * type and default; values layer built-in < system < user < project < KBPKG_*
 * environment < kb_ctx_set (flags). Unknown keys give KB_ERR_CONFIG.
 */
typedef enum kb_config_origin {
    KB_CONFIG_BUILTIN = 0,
    KB_CONFIG_SYSTEM = 1,
    KB_CONFIG_USER = 2,
    KB_CONFIG_PROJECT = 3,
    KB_CONFIG_ENV = 4,
    KB_CONFIG_FLAG = 5,
} kb_config_origin;

KB_EXTERN int kb_ctx_set(kb_ctx *ctx, const char *key, const char *value);
/* *out is borrowed from ctx (valid until the key is set again). */
KB_EXTERN int kb_ctx_get(const char **out, const kb_ctx *ctx, const char *key);
/* Iterate over keys: index 0..n-1; returns KB_ERR_NOT_FOUND past the end. */
KB_EXTERN int kb_config_entry(const char **key_out, const char **value_out,
                              kb_config_origin *origin_out, const char **origin_path_out,
                              const kb_ctx *ctx, size_t index);
KB_EXTERN const char *kb_config_origin_name(kb_config_origin origin);

/*
 * What an operation did to one item (publish, farm, sync): one enum, never renumbered.
 * kb_status_name gives the words the CLI prints and --json carries (docs/json.md).
 */
typedef enum kb_status {
    KB_STATUS_PUBLISHED = 1,         /* "published": new in the registry */
    KB_STATUS_UNCHANGED = 2,         /* "unchanged": the registry already had these bytes */
    KB_STATUS_REPLACED = 3,          /* "replaced": different bytes replaced (force) */
    KB_STATUS_ALREADY_THERE = 4,     /* "already there": the registry holds this build key */
    KB_STATUS_STAGED = 5,            /* "staged": pushed under the staging tag only */
    KB_STATUS_MERGED = 6,            /* "merged": the version's index was rewritten */
    KB_STATUS_CONFLICT = 7,          /* "conflict": staged bytes differ from the index's */
    KB_STATUS_SKIPPED = 8,           /* "skipped": cannot be done here; message says why */
    KB_STATUS_FAILED = 9,            /* "failed": message holds the error */
    KB_STATUS_INSTALLED = 10,        /* "installed" */
    KB_STATUS_ALREADY_INSTALLED = 11 /* "already installed": the pinned bytes were there */
} kb_status;

/* Static words for a status; "unknown" for a value outside the enum. */
KB_EXTERN const char *kb_status_name(kb_status status);

/*
 * One row of a publish, farm or sync report. Strings are borrowed from the report; those that
 * do not apply are NULL.
 */
typedef struct kb_report_row {
    const char *package; /* org/name (farm: the manifest path when it could not be read) */
    const char *version; /* NULL for a farm row about a package whose manifest failed */
    const char *target;  /* target id; "source" (publish), "-" (a row about a whole package) */
    kb_status status;
    const char *digest;  /* publish: manifest digest; sync: artifact layer digest; farm: NULL */
    const char *message; /* the reason (skipped, failed, conflict), or farm's key or digest */
    const char *dir;     /* sync: where the artifact is installed */
} kb_report_row;

#ifdef __cplusplus
}
#endif
#endif
