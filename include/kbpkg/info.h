/* What a registry holds about a package: versions, summary, targets of a version. */
#ifndef KBPKG_INFO_H
#define KBPKG_INFO_H

#include "kbpkg/common.h"
#include "kbpkg/registry.h"

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

/* Versions of name in an open registry (kb_trust_registry_open): the tags that parse as semantic
 * versions, highest first. Free with kb_strings_free. */
KB_EXTERN int kb_package_versions(char ***out, size_t *count, kb_registry *registry,
                                  const char *name);
/* name@version exactly, through an open registry: its index, with each target's artifact size
 * resolved (one GET of its manifest per target). The versions accessors list that version
 * alone (kb_package_versions lists them all). */
KB_EXTERN int kb_package_info_fetch(kb_package_info **out, kb_registry *registry, const char *name,
                                    const char *version);
/* More of entry index: backend ("cuda", "rocm", "metal", "cpu"; "source" for the source) and
 * arch as the target id names them (both NULL for an id this kbpkg cannot parse; arch "" for
 * the source), and the artifact's size in bytes (0 unless the info came from
 * kb_package_info_fetch). Any out-param may be NULL. */
KB_EXTERN int kb_package_info_target_detail(const char **backend, const char **arch,
                                            uint64_t *artifact_size, const kb_package_info *info,
                                            size_t index);
/* What the published kbpkg.json says of the version (exports, kernel ABI): read from one
 * artifact's config blob (at most 1 MiB; the source's carries neither), for an info from
 * kb_package_info_fetch. 0 with nothing read when no artifact has one. On failure the error
 * names the config digest and target, and the info keeps no exports. */
KB_EXTERN int kb_package_info_read_kbpkg_json(kb_package_info *info, kb_registry *registry);
/* The exports kb_package_info_read_kbpkg_json found, in kbpkg.json's order. */
KB_EXTERN size_t kb_package_info_export_count(const kb_package_info *info);
KB_EXTERN const char *kb_package_info_export_at(const kb_package_info *info, size_t index);
/* The kernel ABI kbpkg.json declares; 0 when none was read. */
KB_EXTERN long kb_package_info_abi(const kb_package_info *info);

/* The benchmark results published for name@version (kb_bench_publish) whose subject is
 * index_digest, as a JSON array (text, owned: kb_string_free), sorted by target, newest first:
 * each {"digest", "target", "device": {...}, "cases": [...], "created", "kbpkg_version",
 * "source", ...} (docs/bench.md). Found through the referrers tag schema and each result's own
 * tag; "[]" when there are none. A result that does not read is skipped with a warning. */
KB_EXTERN int kb_package_bench_results(char **json_out, kb_registry *registry, const char *name,
                                       const char *version, const char *index_digest);

/* Package names in the registry containing term (case-insensitive; "" for all), sorted; free
 * with kb_strings_free. */
KB_EXTERN int kb_package_search(char ***out, size_t *count, kb_ctx *ctx, const char *term,
                                const char *registry);

#ifdef __cplusplus
}
#endif
#endif
