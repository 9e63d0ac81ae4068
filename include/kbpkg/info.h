/* What a registry holds about a package: versions, summary, targets of a version. */
#ifndef KBPKG_INFO_H
#define KBPKG_INFO_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kb_package_info kb_package_info;

/* "org/name[@constraint]": the highest matching version's index, and every version.
 * registry NULL: the ctx's setting. */
KB_EXTERN int kb_package_info_get(kb_package_info **out, kb_ctx *ctx, const char *ref,
                                  const char *registry);
KB_EXTERN void kb_package_info_free(kb_package_info *info);
KB_EXTERN const char *kb_package_info_name(const kb_package_info *info);
KB_EXTERN const char *kb_package_info_version(const kb_package_info *info);
KB_EXTERN const char *kb_package_info_summary(const kb_package_info *info); /* may be "" */
/* The typed exports' signatures of the chosen version, {"export": {"returns", "args"}} as
 * JSON (the index's dev.kbpkg.signatures), or NULL when it declares none; kb_signature_text
 * renders one. */
KB_EXTERN const char *kb_package_info_signatures(const kb_package_info *info);
KB_EXTERN const char *kb_package_info_index_digest(const kb_package_info *info);
/* Versions, highest first. */
KB_EXTERN size_t kb_package_info_version_count(const kb_package_info *info);
KB_EXTERN const char *kb_package_info_version_at(const kb_package_info *info, size_t index);
/* Entries of the chosen version's index: target id ("source" for the source artifact). */
KB_EXTERN size_t kb_package_info_target_count(const kb_package_info *info);
KB_EXTERN int kb_package_info_target(const char **target, const char **build_key,
                                     const char **manifest_digest, const kb_package_info *info,
                                     size_t index);

/* Package names in the registry containing term (case-insensitive; "" for all), sorted. */
KB_EXTERN int kb_package_search(char ***out, size_t *count, kb_ctx *ctx, const char *term,
                                const char *registry);
KB_EXTERN void kb_package_search_free(char **names, size_t count);

#ifdef __cplusplus
}
#endif
#endif
