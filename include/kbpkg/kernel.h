/* Runtime loading of kernel packages by the device this process runs on. */
#ifndef KBPKG_KERNEL_API_H
#define KBPKG_KERNEL_API_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A loaded kernel package: its library stays loaded until kb_kernel_close. */
typedef struct kb_kernel kb_kernel;

typedef enum kb_open_flags {
    KB_OPEN_DEFAULT = 0, /* installed packages only: no network, no build */
    KB_OPEN_INSTALL = 1, /* on a miss, resolve and install from the registry */
    KB_OPEN_BUILD = 2,   /* with INSTALL: build from source when no artifact fits */
    KB_OPEN_ALLOW_UNSIGNED = 4,
} kb_open_flags;

/*
 * Open "org/name[@constraint]" for this host: the highest installed version that satisfies the
 * constraint, with the target that fits the probed device best. Checks the library's
 * kbpkg_kernel_info() (ABI, name, version, target) and that every declared export resolves.
 * A warm open (already installed) does no network I/O and no build.
 * Out-param first, as everywhere in the API (before 1.0 it followed DESIGN.md's example).
 */
KB_EXTERN int kb_kernel_open(kb_kernel **out, kb_ctx *ctx, const char *ref, unsigned flags);
/* An exported symbol, or NULL when the package does not declare it in its exports. */
KB_EXTERN void *kb_kernel_sym(const kb_kernel *k, const char *symbol);
/* Borrowed strings, valid until kb_kernel_close. */
KB_EXTERN const char *kb_kernel_target(const kb_kernel *k);
KB_EXTERN const char *kb_kernel_name(const kb_kernel *k);
KB_EXTERN const char *kb_kernel_version(const kb_kernel *k);
KB_EXTERN const char *kb_kernel_path(const kb_kernel *k);   /* the installed folder */
KB_EXTERN const char *kb_kernel_reason(const kb_kernel *k); /* why this target */
KB_EXTERN void kb_kernel_close(kb_kernel *k);

#ifdef __cplusplus
}
#endif
#endif
