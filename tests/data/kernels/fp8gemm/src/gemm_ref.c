/* The f32 reference GEMM: the CPU build's export and the ROCm build's check path. */
#include "rk_fp8gemm.h"

int rk_gemm_f32(float *c, const float *a, const float *b, int64_t m, int64_t n, int64_t k,
                void *stream)
{
    (void)stream;
    if (m < 0 || n < 0 || k < 0)
        return KBPKG_KERNEL_EINVAL;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; p++)
                acc += a[i * k + p] * b[p * n + j];
            c[i * n + j] = acc;
        }
    return KBPKG_KERNEL_OK;
}

#if !defined(__HIP__) && !defined(KBPKG_REFERENCE_ONLY)
KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)
#endif
