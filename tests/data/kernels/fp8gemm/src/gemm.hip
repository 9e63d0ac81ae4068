// FP8 block-scaled GEMM; the arch family picks the FP8 flavour (kernel.yaml arch_flags).
#include <hip/hip_runtime.h>

#include "rk_fp8gemm.h"

#if defined(RK_CDNA3)
#define RK_FNUZ 1 // MI300 computes in the fnuz encodings
#elif defined(RK_RDNA3)
#define RK_FNUZ 0
#else
#error "build through kbpkg: arch_flags defines RK_CDNA3 or RK_RDNA3"
#endif

// Decode e4m3 (bias 7) or e4m3fnuz (bias 8, 0x80 = NaN) bits to float.
__device__ static float rk_e4m3_to_f32(uint8_t v, int fnuz)
{
    if (fnuz && v == 0x80)
        return __builtin_nanf("");
    int sign = v >> 7, exp = (v >> 3) & 15, man = v & 7;
    float f = exp ? ldexpf(1.0f + man / 8.0f, exp - (fnuz ? 8 : 7))
                  : ldexpf(man / 8.0f, 1 - (fnuz ? 8 : 7));
    return sign ? -f : f;
}

__global__ static void rk_gemm_kernel(float *c, const uint8_t *a, const uint8_t *b,
                                      const float *sa, const float *sb, int64_t m, int64_t n,
                                      int64_t k, int fnuz)
{
    int64_t i = blockIdx.y, j = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= m || j >= n)
        return;
    float acc = 0.0f;
    for (int64_t p = 0; p < k; p++)
        acc += rk_e4m3_to_f32(a[i * k + p], fnuz) * sa[i * (k / 128) + p / 128] *
               rk_e4m3_to_f32(b[p * n + j], fnuz) * sb[(p / 128) * n + j];
    c[i * n + j] = acc;
}

static int rk_launch(float *c, const uint8_t *a, const uint8_t *b, const float *sa,
                     const float *sb, int64_t m, int64_t n, int64_t k, void *stream, int fnuz)
{
    if (m < 0 || n < 0 || k < 0 || k % 128)
        return KBPKG_KERNEL_EINVAL;
    if (fnuz != RK_FNUZ)
        return KBPKG_KERNEL_EUNSUPPORTED;
    if (!m || !n)
        return KBPKG_KERNEL_OK;
    dim3 grid((unsigned)((n + 127) / 128), (unsigned)m);
    hipLaunchKernelGGL(rk_gemm_kernel, grid, dim3(128), 0, (hipStream_t)stream, c, a, b, sa, sb,
                       m, n, k, fnuz);
    return hipGetLastError() == hipSuccess ? KBPKG_KERNEL_OK : KBPKG_KERNEL_ELAUNCH;
}

extern "C" int rk_gemm_e4m3fnuz(float *c, const kbpkg_e4m3fnuz *a, const kbpkg_e4m3fnuz *b,
                                const float *sa, const float *sb, int64_t m, int64_t n, int64_t k,
                                void *stream)
{
    return rk_launch(c, a, b, sa, sb, m, n, k, stream, 1);
}

extern "C" int rk_gemm_e4m3(float *c, const kbpkg_e4m3 *a, const kbpkg_e4m3 *b, const float *sa,
                            const float *sb, int64_t m, int64_t n, int64_t k, void *stream)
{
    return rk_launch(c, a, b, sa, sb, m, n, k, stream, 0);
}

extern "C" {
KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_ROCM)
}
