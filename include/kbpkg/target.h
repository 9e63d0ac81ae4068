/* kbpkg public API: the targets kbpkg builds and whether a target runs on a device. */
#ifndef KBPKG_TARGET_H
#define KBPKG_TARGET_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The targets kbpkg builds, index 0..n-1 (KB_ERR_NOT_FOUND past the end).
 * *id is a canonical target id ("cuda13-sm_86-x86_64-linux"); *runs_on says in words which
 * devices take it ("sm_86..sm_89 (SASS, same major)"). Both are static strings.
 */
KB_EXTERN int kb_target_known(const char **id, const char **runs_on, size_t index);

/*
 * Does target_id run on device_spec ("sm_86", "gfx1031@rocm5.2,x86_64_v3", "none")?
 * device_spec NULL uses the setting probe.devices. The host platform is this machine's;
 * its CPU level comes from a CPU in device_spec, else the setting probe.cpu. The setting
 * rocm.aliases applies. *fits is 1 or 0 and reason gets the one-line why (as
 * `kbpkg resolve --explain` prints it). Errors: KB_ERR_TARGET for a bad id or device list,
 * KB_ERR_CONFIG for a bad rocm.aliases, each naming the item.
 */
KB_EXTERN int kb_target_check(int *fits, char *reason, size_t reason_size, kb_ctx *ctx,
                              const char *target_id, const char *device_spec);

/* Write the canonical spelling of target_id into buf ("rocm6-gfx90a:xnack-:sramecc+-x86_64-linux"
 * becomes "rocm6-gfx90a:sramecc+:xnack--x86_64-linux"). KB_ERR_TARGET names what is wrong. */
KB_EXTERN int kb_target_canonical(char *buf, size_t size, kb_ctx *ctx, const char *target_id);

#ifdef __cplusplus
}
#endif
#endif
