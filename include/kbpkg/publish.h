/* kbpkg public API: publishing a package's artifacts to a registry, and the build farm. */
#ifndef KBPKG_PUBLISH_H
#define KBPKG_PUBLISH_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- publish one package folder ---- */

#define KB_PUBLISH_OPTIONS_VERSION 1
typedef struct kb_publish_options {
    unsigned int version;       /* KB_PUBLISH_OPTIONS_VERSION */
    const char *registry;       /* NULL: the ctx's "registry" setting */
    const char *out_dir;        /* where built artifacts are (and go); NULL: <dir>/dist */
    const char *const *targets; /* filters: full ids or prefixes; NULL: every declared target */
    size_t target_count;
    int force;         /* replace a target published with different bytes */
    unsigned int jobs; /* parallel builds when publish has to build; 0: as kb_build */
} kb_publish_options;

#define KB_PUBLISH_OPTIONS_INIT                                                                    \
    {                                                                                              \
        KB_PUBLISH_OPTIONS_VERSION, NULL, NULL, NULL, 0, 0, 0                                      \
    }

/* What one publish did: per target (and "source") a status, plus the index digest. */
typedef struct kb_publish_report kb_publish_report;

/*
 * Publish the package in dir (a folder with kernel.yaml) as name@version of its manifest.
 * Uses the artifacts of that version already in out_dir when they were built from the current
 * sources; otherwise builds first (kb_build). Always writes and pushes the source artifact.
 * Everything goes to the registry in one merge of the version's index. A target already
 * published with different bytes is refused (KB_ERR_EXISTS naming the target and both digests,
 * nothing changed) unless force.
 */
KB_EXTERN int kb_publish(kb_publish_report **out, kb_ctx *ctx, const char *dir,
                         const kb_publish_options *options);
KB_EXTERN void kb_publish_report_free(kb_publish_report *report);

KB_EXTERN const char *kb_publish_report_package(const kb_publish_report *report);
KB_EXTERN const char *kb_publish_report_version(const kb_publish_report *report);
KB_EXTERN const char *kb_publish_report_index_digest(const kb_publish_report *report);
KB_EXTERN const char *kb_publish_report_registry(const kb_publish_report *report);
/* 1 when publish had to build (no current artifacts in out_dir), 0 when it used them. */
KB_EXTERN int kb_publish_report_built(const kb_publish_report *report);
KB_EXTERN size_t kb_publish_report_count(const kb_publish_report *report);
/*
 * Row index (kb_report_row, borrowed from report): target id (or "source"); status
 * KB_STATUS_PUBLISHED (new), _UNCHANGED (the registry already had these bytes), _REPLACED
 * (force), or _SKIPPED (could not be built here; message says why); digest: the per-target
 * manifest digest (NULL when skipped). KB_ERR_NOT_FOUND past the end.
 */
KB_EXTERN int kb_publish_report_row(const kb_report_row **row, const kb_publish_report *report,
                                    size_t index);

/* ---- the build farm ---- */

#define KB_FARM_OPTIONS_VERSION 2
typedef struct kb_farm_options {
    unsigned int version; /* KB_FARM_OPTIONS_VERSION (1 is read without the fields below it) */
    const char *registry; /* NULL: the ctx's "registry" setting */
    unsigned int jobs;    /* parallel target builds per package; 0: as kb_build */
    const char *out_dir;  /* where builds go; NULL: <cache.dir>/farm */
    /* version 2: */
    int stage_only;    /* kb_farm_build: push and tag the staging tag only, no merge */
    const char *pools; /* kb_farm_plan: a pools file (docs/farm.md); NULL: one pool per backend
                          with this machine's toolchains */
} kb_farm_options;

#define KB_FARM_OPTIONS_INIT                                                                       \
    {                                                                                              \
        KB_FARM_OPTIONS_VERSION, NULL, 0, NULL, 0, NULL                                            \
    }

typedef struct kb_farm_report kb_farm_report;

/*
 * For each path (a package folder, or a folder searched recursively for kernel.yaml, skipping
 * hidden folders and build*, dist), and each declared target a local toolchain builds: compute
 * the build key without building; when the registry's index of that version already holds it,
 * the target is KB_STATUS_ALREADY_THERE; else build and publish. Returns 0 when the farm ran, even
 * when rows failed (see kb_farm_report_count_status); a negative kb_err when nothing could run (no
 * registry, a path that does not exist).
 */
KB_EXTERN int kb_farm(kb_farm_report **out, kb_ctx *ctx, const char *const *paths, size_t count,
                      const kb_farm_options *options);
KB_EXTERN void kb_farm_report_free(kb_farm_report *report);
KB_EXTERN size_t kb_farm_report_count(const kb_farm_report *report);
/* Row index (borrowed from report), sorted by package then target. status: KB_STATUS_PUBLISHED,
 * _ALREADY_THERE (message: the build key), _SKIPPED, _FAILED (and for kb_farm_build /
 * kb_farm_merge the statuses below); package is the manifest path when the manifest could not be
 * read; target "-" for a row about the whole package; version NULL then. message: reason or
 * error, may be NULL. KB_ERR_NOT_FOUND past the end. */
KB_EXTERN int kb_farm_report_row(const kb_report_row **row, const kb_farm_report *report,
                                 size_t index);
/*
 * A distributed farm in three steps that any engine can run (docs/farm.md):
 *
 * kb_farm_plan: without building, what the farm would do: a JSON document (owned, free with
 * kb_farm_string_free) {"registry", "items": [one per (package, version, target) whose build
 * key the registry lacks: package, version, dir, target, backend, arch, pool, labels {backend,
 * arch, gpu, os}, build_key (null when the pool declares no toolchain id), command], "merges":
 * [one per package version with items: package, version, ref, command], "problems": [a package
 * that cannot be planned: dir, message (a bad manifest, sources changed under a published
 * version)]}.
 *
 * kb_farm_build: on a worker, one target of the package in dir: recheck its key ("already
 * there"), build it, push artifact and source by digest and, with stage_only, point the
 * target's staging tag at them and stop (never the version tag or latest); without, merge too.
 * Rows: KB_STATUS_STAGED, _PUBLISHED, _ALREADY_THERE, _SKIPPED, _FAILED.
 *
 * kb_farm_merge: ref is "org/name@version": the union of the version's index and its staged
 * targets, written only when it changed, signed, latest recomputed, reread until whole. Rows:
 * KB_STATUS_MERGED or _UNCHANGED (message: the index digest), and one KB_STATUS_CONFLICT per
 * staged target whose bytes differ from the index's (skipped; also a KB_EVENT_WARNING).
 */
KB_EXTERN int kb_farm_plan(char **json_out, kb_ctx *ctx, const char *const *paths, size_t count,
                           const kb_farm_options *options);
KB_EXTERN void kb_farm_string_free(char *s);
KB_EXTERN int kb_farm_build(kb_farm_report **out, kb_ctx *ctx, const char *dir, const char *target,
                            const kb_farm_options *options);
KB_EXTERN int kb_farm_merge(kb_farm_report **out, kb_ctx *ctx, const char *ref,
                            const kb_farm_options *options);

/* How many rows have this status (kb_farm_report_count_status(r, KB_STATUS_FAILED) > 0: a row
 * failed). */
KB_EXTERN size_t kb_farm_report_count_status(const kb_farm_report *report, kb_status status);

#ifdef __cplusplus
}
#endif
#endif
