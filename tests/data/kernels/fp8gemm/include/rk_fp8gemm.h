/* rk/fp8gemm: C[m,n] = (A[m,k] * scale_a) (B[k,n] * scale_b), one scale per 128-wide k block. */
#ifndef RK_FP8GEMM_H
#define RK_FP8GEMM_H

#include <stdint.h>

#include <kbpkg/kernel_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* scale_a: [m, k/128], scale_b: [k/128, n]; k a multiple of 128. 0 or KBPKG_KERNEL_*. */
KBPKG_EXPORT int rk_gemm_e4m3fnuz(float *c, const kbpkg_e4m3fnuz *a, const kbpkg_e4m3fnuz *b,
                                  const float *scale_a, const float *scale_b, int64_t m,
                                  int64_t n, int64_t k, void *stream);
KBPKG_EXPORT int rk_gemm_e4m3(float *c, const kbpkg_e4m3 *a, const kbpkg_e4m3 *b,
                              const float *scale_a, const float *scale_b, int64_t m, int64_t n,
                              int64_t k, void *stream);
/* The reference: plain f32 inputs. */
KBPKG_EXPORT int rk_gemm_f32(float *c, const float *a, const float *b, int64_t m, int64_t n,
                             int64_t k, void *stream);

#ifdef __cplusplus
}
#endif
#endif
