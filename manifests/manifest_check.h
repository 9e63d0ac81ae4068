/* Pure checks on kernel.yaml values: names, paths, URLs, digests, PTX archs. */
#ifndef KB_MANIFESTS_MANIFEST_CHECK_H
#define KB_MANIFESTS_MANIFEST_CHECK_H

#include "core/internal.h"
#include "model/target.h"

/* org/name: lowercase [a-z0-9._-] on both sides of exactly one '/'. */
/* Relative, non-empty, no '..' component, no empty component. */
bool kbi_package_path_ok(const char *path);
bool kbi_c_identifier_ok(const char *s);
bool kbi_source_url_ok(const char *url);
/* 64 lowercase hex digits. */
bool kbi_sha256_hex_ok(const char *s);
/* "sm_80" or "compute_80" (75 or newer, no arch-specific suffix) -> "sm_80" in out. */
bool kbi_ptx_arch_canonical(const char *arch, char *out, size_t size);
/* The last path segment of a URL (no query or fragment), owned; NULL when there is none. */
char *kbi_url_file_name(const char *url);
/* "CUDA", "ROCm", "Metal", "CPU". */
const char *kbi_backend_display_name(kb_backend b);

#endif
