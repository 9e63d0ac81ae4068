/* Internal: the CPU RMSNorm (also the test reference) and the shared argument rules. */
#ifndef KB_RMSNORM_CPU_H
#define KB_RMSNORM_CPU_H

/* Defaults for hand builds; the builder passes -DKBPKG_NAME/-DKBPKG_VERSION/-DKBPKG_TARGET.
 * Sources include this header before anything that includes kbpkg/kernel_abi.h. */
#ifndef KBPKG_NAME
#define KBPKG_NAME "kbpkg-community/rmsnorm"
#endif
#ifndef KBPKG_VERSION
#define KBPKG_VERSION "1.0.0"
#endif

#include <stddef.h>
#include <stdint.h>

#include "kb_rmsnorm.h"

#ifdef __cplusplus
extern "C" {
#endif

enum rms_dtype { RMS_F32 = 0, RMS_BF16 = 1, RMS_F16 = 2 };

int rmsnorm_cpu(enum rms_dtype dtype, void *out, const void *x, const void *weight, int64_t n,
                int64_t d, float eps);

static inline int rmsnorm_check_args(const void *out, const void *x, const void *weight, int64_t n,
                                     int64_t d, float eps)
{
    if (n < 0 || d < 0 || !(eps >= 0.0f))
        return KBPKG_KERNEL_EINVAL;
    if (n > 0 && d > 0 && (out == NULL || x == NULL || weight == NULL))
        return KBPKG_KERNEL_EINVAL;
    return KBPKG_KERNEL_OK;
}

#ifdef __cplusplus
}
#endif

#endif
