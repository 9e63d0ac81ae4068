/* kbpkg public API: kernel.yaml manifests, version constraints and config files. */
#ifndef KBPKG_MANIFEST_H
#define KBPKG_MANIFEST_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed and validated kernel.yaml. */
typedef struct kb_manifest kb_manifest;

/*
 * Parse and validate path: a kernel.yaml file, or a folder holding one. Sources, header
 * and test must exist. Errors (KB_ERR_PARSE for YAML syntax, KB_ERR_MANIFEST for the
 * schema) carry the file, 1-based line and column, and a message that starts with
 * "file:line:col: key.path: ".
 */
KB_EXTERN int kb_manifest_open(kb_manifest **out, kb_ctx *ctx, const char *path);
KB_EXTERN void kb_manifest_free(kb_manifest *m);

/* Borrowed from m. */
KB_EXTERN const char *kb_manifest_name(const kb_manifest *m);    /* "radeonflow/gemm" */
KB_EXTERN const char *kb_manifest_version(const kb_manifest *m); /* "1.0.0" */
KB_EXTERN const char *kb_manifest_summary(const kb_manifest *m); /* "" when none */
KB_EXTERN const char *kb_manifest_path(const kb_manifest *m);    /* the kernel.yaml file */

KB_EXTERN size_t kb_manifest_export_count(const kb_manifest *m);
KB_EXTERN const char *kb_manifest_export(const kb_manifest *m, size_t index);

/*
 * The declared targets, index 0..n-1: backend ("cuda", "rocm", "metal", "cpu") and arch
 * ("sm_90", "compute_80" for the PTX target, "gfx1030", "apple" for metal, "x86_64_v3";
 * "" for a cpu backend that lists no archs: the host's level). KB_ERR_NOT_FOUND past the end.
 */
KB_EXTERN int kb_manifest_target(const char **backend_out, const char **arch_out,
                                 const kb_manifest *m, size_t index);

/*
 * An export's declared signature as one line, from a "signatures" JSON object (kbpkg.json's
 * member, the package index's dev.kbpkg.signatures annotation, kb_package_info_signatures):
 * "rmsnorm_bf16(out: out bf16[rows, cols], x: in bf16[rows, cols], rows: i64, stream) -> status".
 * *out owned by the caller. KB_ERR_NOT_FOUND when export_name declares none.
 */
KB_EXTERN int kb_signature_text(char **out, kb_ctx *ctx, const char *signatures_json,
                                const char *export_name);

/* *out = 1 when version (semver 2.0) satisfies constraint ("^1.2", ">=1.0,<2", "*"),
 * else 0. KB_ERR_VERSION names the bad version or constraint. */
KB_EXTERN int kb_version_satisfies(int *out, kb_ctx *ctx, const char *version,
                                   const char *constraint);

/*
 * Write key: value into the config file of layer (KB_CONFIG_SYSTEM, KB_CONFIG_USER or
 * KB_CONFIG_PROJECT), atomically, keeping the file's other keys. The key and value are
 * checked against the config table first (KB_ERR_CONFIG).
 */
KB_EXTERN int kb_config_write(kb_ctx *ctx, kb_config_origin layer, const char *key,
                              const char *value);
/* The config file of a layer (*out owned by the caller; it may not exist yet). */
KB_EXTERN int kb_config_file_path(char **out, const kb_ctx *ctx, kb_config_origin layer);

#ifdef __cplusplus
}
#endif
#endif
