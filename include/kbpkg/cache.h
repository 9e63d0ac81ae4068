/* The local cache: installed packages, verification, removal, garbage collection. */
#ifndef KBPKG_CACHE_H
#define KBPKG_CACHE_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One installed package; every string is borrowed from its list. */
typedef struct kb_installed_pkg {
    const char *name;
    const char *version;
    const char *target;
    const char *dir;
    const char *library;
    const char *artifact_digest;
    const char *index_digest;
    const char *registry;
    const char *reason;
    int local_build;
    uint64_t bytes;
} kb_installed_pkg;

typedef struct kb_package_list kb_package_list;

/* Installed packages, optionally only name ("org/name"), sorted. */
KB_EXTERN int kb_cache_list_installed(kb_package_list **out, kb_ctx *ctx, const char *name);
KB_EXTERN size_t kb_package_list_count(const kb_package_list *list);
KB_EXTERN const kb_installed_pkg *kb_package_list_at(const kb_package_list *list, size_t index);
/* Problems found by kb_cache_verify for entry index ("path: sha256 ..., expected ..."). */
KB_EXTERN size_t kb_package_list_issue_count(const kb_package_list *list, size_t index);
KB_EXTERN const char *kb_package_list_issue(const kb_package_list *list, size_t index,
                                            size_t issue);
KB_EXTERN void kb_package_list_free(kb_package_list *list);

/* Re-hash every installed file (name: NULL for all). Returns 0 and fills *out with the
 * packages and their issues; KB_ERR_DIGEST when any file differs (with *out still set). */
KB_EXTERN int kb_cache_verify(kb_package_list **out, kb_ctx *ctx, const char *name);

/* Remove "org/name[@version]" (every target, or only target). *removed: folders removed. */
KB_EXTERN int kb_cache_remove(size_t *removed, kb_ctx *ctx, const char *ref, const char *target);

#define KB_GC_OPTIONS_VERSION 1
typedef struct kb_gc_options {
    unsigned int version;          /* KB_GC_OPTIONS_VERSION */
    const char *const *keep_locks; /* more lockfiles to honour; each must load (a missing one
                                      is KB_ERR_NOT_FOUND and nothing is removed) */
    size_t keep_lock_count;
} kb_gc_options;

#define KB_GC_OPTIONS_INIT                                                                         \
    {                                                                                              \
        KB_GC_OPTIONS_VERSION, NULL, 0                                                             \
    }

/* Remove blobs no install references. Kept besides: fetched source blobs, every blob pinned by
 * a lockfile of the ctx's "gc.keep_locks" setting (comma-separated paths, default "kbpkg.lock"
 * in the working folder; those that do not exist are skipped) and what options->keep_locks pin
 * (options may be NULL). A listed lockfile that exists but does not load is an error, and
 * nothing is removed. */
KB_EXTERN int kb_cache_collect_garbage(size_t *removed, uint64_t *bytes_freed, kb_ctx *ctx,
                                       const kb_gc_options *options);

/* The cache folder in use (borrowed from ctx). */
KB_EXTERN const char *kb_cache_dir(const kb_ctx *ctx);

#ifdef __cplusplus
}
#endif
#endif
