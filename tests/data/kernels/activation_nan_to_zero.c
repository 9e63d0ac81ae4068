/* A deliberately wrong kbpkg-community/activation CPU library: right on ordinary numbers, but
 * its bf16 exports write +0 where the result is NaN (what a conversion that drops NaN would
 * do). The kernels suite builds it to prove the check's special-value cases can fail. */
#include "activation_cpu.h"

KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)

static int nan_to_zero(int rc, kbpkg_bf16 *out, int64_t n, int64_t d)
{
    for (int64_t i = 0; rc == 0 && i < n * d; i++)
        if ((out[i] & 0x7fffu) > 0x7f80u)
            out[i] = 0;
    return rc;
}

#define EXPORTS(op, OP)                                                                            \
    KBPKG_EXPORT int act_##op##_f32(float *out, const float *in, int64_t n, int64_t d, void *s)    \
    {                                                                                              \
        (void)s;                                                                                   \
        return act_cpu(OP, ACT_F32, out, in, n, d);                                                \
    }                                                                                              \
    KBPKG_EXPORT int act_##op##_f16(kbpkg_f16 *out, const kbpkg_f16 *in, int64_t n, int64_t d,     \
                                    void *s)                                                       \
    {                                                                                              \
        (void)s;                                                                                   \
        return act_cpu(OP, ACT_F16, out, in, n, d);                                                \
    }                                                                                              \
    KBPKG_EXPORT int act_##op##_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *in, int64_t n, int64_t d,  \
                                     void *s)                                                      \
    {                                                                                              \
        (void)s;                                                                                   \
        return nan_to_zero(act_cpu(OP, ACT_BF16, out, in, n, d), out, n, d);                       \
    }

EXPORTS(silu_and_mul, ACT_SILU_AND_MUL)
EXPORTS(gelu_and_mul, ACT_GELU_AND_MUL)
EXPORTS(gelu_tanh, ACT_GELU_TANH)
