// LayerNorm forward for one element type; built once per precision with -DLN_T/-DLN_SUFFIX.
#include "ln_common.cuh"
#include "rk_layernorm.h"
#include "rkmath/reduce.h"

#ifndef LN_T
#error "build with -DLN_T=float or -DLN_T=__half (kernel.yaml does)"
#endif

// One block per row; thread 0 reduces (small rows in tests; clarity over speed here).
__global__ void LN_NAME(ln_kernel_)(LN_T *out, const LN_T *x, const LN_T *w, const LN_T *b,
                                    int64_t c, float eps)
{
    const LN_T *row = x + blockIdx.x * c;
    __shared__ float mean, rstd;
    if (threadIdx.x == 0) {
        rkmath_welford acc = {0.0f, 0.0f, 0.0f};
        for (int64_t i = 0; i < c; i++)
            rkmath_welford_add(&acc, ln_load(row[i]));
        mean = acc.mean;
        rstd = rsqrtf(acc.m2 / (float)c + eps);
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < c; i += blockDim.x)
        ln_store(out + blockIdx.x * c + i,
                 (ln_load(row[i]) - mean) * rstd * ln_load(w[i]) + ln_load(b[i]));
}

#if defined(LN_HALF)
#define LN_ABI_T kbpkg_f16
#else
#define LN_ABI_T float
#endif

extern "C" int LN_NAME(rk_layernorm_)(LN_ABI_T *out, const LN_ABI_T *x, const LN_ABI_T *w,
                                      const LN_ABI_T *b, int64_t n, int64_t c, float eps,
                                      void *stream)
{
    if (n < 0 || c <= 0 || !(eps >= 0.0f))
        return KBPKG_KERNEL_EINVAL;
    if (n == 0)
        return KBPKG_KERNEL_OK;
    LN_NAME(ln_kernel_)<<<(unsigned)n, LN_BLOCK, 0, (cudaStream_t)stream>>>(
        (LN_T *)out, (const LN_T *)x, (const LN_T *)w, (const LN_T *)b, c, eps);
    return cudaGetLastError() == cudaSuccess ? KBPKG_KERNEL_OK : KBPKG_KERNEL_ELAUNCH;
}
