/* Internal: the CPU activations (also the test reference), one per op and type. */
#ifndef KB_ACTIVATION_CPU_H
#define KB_ACTIVATION_CPU_H

/* Defaults for hand builds; the builder passes -DKBPKG_NAME/-DKBPKG_VERSION/-DKBPKG_TARGET.
 * Sources include this header before anything that includes kbpkg/kernel_abi.h. */
#ifndef KBPKG_NAME
#define KBPKG_NAME "kbpkg-community/activation"
#endif
#ifndef KBPKG_VERSION
#define KBPKG_VERSION "1.0.0"
#endif

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kb_activation.h"

#ifdef __cplusplus
extern "C" {
#endif

enum act_op { ACT_SILU_AND_MUL = 0, ACT_GELU_AND_MUL = 1, ACT_GELU_TANH = 2 };
enum act_dtype { ACT_F32 = 0, ACT_BF16 = 1, ACT_F16 = 2 };

/* out/in follow the shapes in kb_activation.h for op; dtype names both buffers' type. */
int act_cpu(enum act_op op, enum act_dtype dtype, void *out, const void *in, int64_t n, int64_t d);

static inline int act_check_args(const void *out, const void *in, int64_t n, int64_t d)
{
    if (n < 0 || d < 0)
        return KBPKG_KERNEL_EINVAL;
    if (n > 0 && d > 0 && (out == NULL || in == NULL))
        return KBPKG_KERNEL_EINVAL;
    return KBPKG_KERNEL_OK;
}

#ifdef __cplusplus
}
#endif

#endif
