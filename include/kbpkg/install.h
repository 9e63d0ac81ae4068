/* Resolving, installing and managing packages in the local cache. */
#ifndef KBPKG_INSTALL_H
#define KBPKG_INSTALL_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KB_INSTALL_OPTIONS_VERSION 1
typedef struct kb_install_options {
    unsigned int version; /* KB_INSTALL_OPTIONS_VERSION */
    const char *registry; /* NULL: the ctx's "registry" setting */
    const char *target;   /* force this target id (cross installs); NULL: best for the host */
    int allow_build;      /* build from source when no artifact fits (default 1) */
    int allow_unsigned;   /* accept packages without a trusted signature */
    int resolve_only;     /* decide and explain, download nothing */
} kb_install_options;

#define KB_INSTALL_OPTIONS_INIT                                                                    \
    {                                                                                              \
        KB_INSTALL_OPTIONS_VERSION, NULL, NULL, 1, 0, 0                                            \
    }

/* What an install or resolve decided, and every candidate it weighed. */
typedef struct kb_install_result kb_install_result;

KB_EXTERN int kb_install_package(kb_install_result **out, kb_ctx *ctx, const char *ref,
                                 const kb_install_options *opts);
/* Same decision as install, nothing downloaded (for `kbpkg resolve --explain`). */
KB_EXTERN int kb_resolve_package(kb_install_result **out, kb_ctx *ctx, const char *ref,
                                 const kb_install_options *opts);
KB_EXTERN void kb_install_result_free(kb_install_result *r);

KB_EXTERN const char *kb_install_result_name(const kb_install_result *r);
KB_EXTERN const char *kb_install_result_version(const kb_install_result *r);
KB_EXTERN const char *kb_install_result_target(const kb_install_result *r); /* chosen */
KB_EXTERN const char *kb_install_result_reason(const kb_install_result *r);
KB_EXTERN const char *kb_install_result_dir(const kb_install_result *r); /* NULL on resolve */
KB_EXTERN const char *kb_install_result_index_digest(const kb_install_result *r);
KB_EXTERN const char *kb_install_result_artifact_digest(const kb_install_result *r);
KB_EXTERN int kb_install_result_local_build(const kb_install_result *r);
KB_EXTERN int kb_install_result_was_installed(const kb_install_result *r); /* no-op install */

/* Store the source artifact of "org/name[@constraint]" in the cache so that a later
 * install can build it with no network (offline). *version_out (owned, free()) is the
 * version fetched. registry NULL: the ctx's setting. */
KB_EXTERN int kb_fetch_source(char **version_out, kb_ctx *ctx, const char *ref,
                              const char *registry, int allow_unsigned);

/* Candidates, best first: target, whether it was taken, fit rank name, reason. */
KB_EXTERN size_t kb_install_result_candidate_count(const kb_install_result *r);
KB_EXTERN int kb_install_result_candidate(const char **target, int *taken, const char **rank,
                                          const char **reason, const kb_install_result *r,
                                          size_t index);

#ifdef __cplusplus
}
#endif
#endif
