/* kbpkg public API: the lockfile (kbpkg.lock) and installing exactly what it pins (sync). */
#ifndef KBPKG_LOCK_H
#define KBPKG_LOCK_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of the lockfile format this library reads and writes ("lockfile": 1). */
#define KB_LOCKFILE_FORMAT 1
#define KB_LOCKFILE_NAME "kbpkg.lock"

/* A lockfile in memory: registry, and per package its version, index digest and the digests
 * of every pinned artifact (docs/publishing.md). */
typedef struct kb_lockfile kb_lockfile;

#define KB_LOCK_OPTIONS_VERSION 1
typedef struct kb_lock_options {
    unsigned int version;       /* KB_LOCK_OPTIONS_VERSION */
    const char *registry;       /* NULL: the ctx's "registry" setting */
    const char *const *targets; /* pin only these targets (ids or prefixes); NULL: every one */
    size_t target_count;
    int allow_unsigned; /* pin an index with no signature where the policy requires one */
} kb_lock_options;

#define KB_LOCK_OPTIONS_INIT                                                                       \
    {                                                                                              \
        KB_LOCK_OPTIONS_VERSION, NULL, NULL, 0, 0                                                  \
    }

/* Resolve each "org/name[@constraint]" to its highest matching version and pin its index and
 * artifacts (the source artifact too). Nothing is downloaded but manifests and signatures: each
 * index must pass the signature policy before it is pinned (kb_trust_check: KB_ERR_SIGNATURE),
 * as install and sync require of it. */
KB_EXTERN int kb_lockfile_resolve(kb_lockfile **out, kb_ctx *ctx, const char *const *refs,
                                  size_t count, const kb_lock_options *options);
/* Write atomically (temp file, fsync, rename): sorted keys and packages, stable bytes. */
KB_EXTERN int kb_lockfile_write(kb_ctx *ctx, const kb_lockfile *lock, const char *path);
/* Read and check a lockfile; errors name the file and the field. */
KB_EXTERN int kb_lockfile_load(kb_lockfile **out, kb_ctx *ctx, const char *path);
KB_EXTERN void kb_lockfile_free(kb_lockfile *lock);

KB_EXTERN const char *kb_lockfile_registry(const kb_lockfile *lock);
KB_EXTERN size_t kb_lockfile_package_count(const kb_lockfile *lock);
/* Package i (sorted by name); strings borrowed from lock. */
KB_EXTERN int kb_lockfile_package(const char **name, const char **constraint, const char **version,
                                  const char **index_digest, size_t *artifact_count,
                                  const kb_lockfile *lock, size_t index);
/* Artifact j of package i (sorted by target; the source artifact has target "source"). */
KB_EXTERN int kb_lockfile_artifact(const char **target, const char **manifest_digest,
                                   const char **layer_digest, uint64_t *size,
                                   const kb_lockfile *lock, size_t package, size_t index);

/* ---- sync ---- */

#define KB_SYNC_OPTIONS_VERSION 1
typedef struct kb_sync_options {
    unsigned int version; /* KB_SYNC_OPTIONS_VERSION */
    const char *registry; /* NULL: the registry the lockfile names */
    int allow_unsigned;   /* accept an index with no trusted signature (trust.require_signatures) */
} kb_sync_options;

#define KB_SYNC_OPTIONS_INIT                                                                       \
    {                                                                                              \
        KB_SYNC_OPTIONS_VERSION, NULL, 0                                                           \
    }

typedef struct kb_sync_report kb_sync_report;

/*
 * For each locked package, take the best pinned target for this host and install exactly the
 * pinned bytes: the index is fetched by its pinned digest and the artifact must have its pinned
 * layer digest (else KB_ERR_DIGEST naming package, target, expected and received), and the
 * index must pass the signature policy (kb_trust_check: KB_ERR_SIGNATURE). A package
 * whose pinned artifact is already installed is left alone without touching the registry, so
 * sync works offline once it ran; offline with something missing is KB_ERR_OFFLINE naming it.
 */
KB_EXTERN int kb_sync(kb_sync_report **out, kb_ctx *ctx, const kb_lockfile *lock,
                      const kb_sync_options *options);
KB_EXTERN void kb_sync_report_free(kb_sync_report *report);
KB_EXTERN size_t kb_sync_report_count(const kb_sync_report *report);
/* Row index (borrowed from report): package, version, target, status KB_STATUS_INSTALLED or
 * KB_STATUS_ALREADY_INSTALLED, digest (the artifact's layer digest), dir (where it is
 * installed). KB_ERR_NOT_FOUND past the end. */
KB_EXTERN int kb_sync_report_row(const kb_report_row **row, const kb_sync_report *report,
                                 size_t index);

#ifdef __cplusplus
}
#endif
#endif
