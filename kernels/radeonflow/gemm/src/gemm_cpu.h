/* Internal: the CPU GEMM (also the test reference) and the argument rules every backend shares. */
#ifndef RF_GEMM_CPU_H
#define RF_GEMM_CPU_H

/* Defaults for hand builds; the builder passes -DKBPKG_NAME/-DKBPKG_VERSION/-DKBPKG_TARGET.
 * Sources include this header before anything that includes kbpkg/kernel_abi.h. */
#ifndef KBPKG_NAME
#define KBPKG_NAME "radeonflow/gemm"
#endif
#ifndef KBPKG_VERSION
#define KBPKG_VERSION "1.0.0"
#endif

#include <stddef.h>
#include <stdint.h>

#include "rf_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same contract as the exports in rf_gemm.h; always computed on the host. */
int rf_gemm_bf16_cpu(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                     const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc);
int rf_gemm_f16_cpu(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                    const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc);
int rf_gemm_f32_cpu(int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc);

/* The FP8 block-scaled contract on the host (rf_gemm.h). */
int rf_gemm_fp8_blockscale_cpu(int M, int N, int K, const kbpkg_e4m3 *A, const float *scale_a,
                               const kbpkg_e4m3 *B, const float *scale_b, kbpkg_bf16 *C);

#if defined(__CUDACC__) || defined(__HIPCC__)
#define RF_HOST_DEVICE __host__ __device__
#else
#define RF_HOST_DEVICE
#endif

/* e4m3 (OCP FN: sign, 4 exponent bits of bias 7, 3 mantissa bits, no infinities, S.1111.111
 * NaN) to fp32, exactly: every e4m3 value is a float. One rule for the host and the device. */
static inline RF_HOST_DEVICE float rf_e4m3_to_f32(uint8_t v)
{
    uint32_t sign = (uint32_t)(v & 0x80u) << 24, e = (v >> 3) & 15u, m = v & 7u, bits;
    if (e == 15u && m == 7u) {
        bits = sign | 0x7fc00000u;
    } else if (e == 0u) { /* subnormal: m * 2^-9, exact in fp32 */
        float f = (float)m * 0.001953125f;
        return sign ? -f : f;
    } else {
        bits = sign | ((e + 120u) << 23) | (m << 20);
    }
    union { /* not memcpy: hipcc has no device memcpy; nvcc and clang define this pun */
        uint32_t u;
        float f;
    } pun;
    pun.u = bits;
    return pun.f;
}

/* The FP8 scale block: 1 x RF_FP8_BLOCK of A, RF_FP8_BLOCK x RF_FP8_BLOCK of B. */
#define RF_FP8_BLOCK 128

/* 0 when the FP8 call is valid: K a multiple of the block, pointers set for a non-empty
 * problem (A, B and the scales only when K > 0). */
static inline int rf_gemm_fp8_check_args(int M, int N, int K, const void *A, const void *sa,
                                         const void *B, const void *sb, const void *C)
{
    if (M < 0 || N < 0 || K < 0 || K % RF_FP8_BLOCK != 0)
        return KBPKG_KERNEL_EINVAL;
    if (M > 0 && N > 0 && C == NULL)
        return KBPKG_KERNEL_EINVAL;
    if (M > 0 && N > 0 && K > 0 && (A == NULL || B == NULL || sa == NULL || sb == NULL))
        return KBPKG_KERNEL_EINVAL;
    return KBPKG_KERNEL_OK;
}

/* 0 when the sizes and pointers describe a valid call, KBPKG_KERNEL_EINVAL otherwise. */
static inline int rf_gemm_check_args(int M, int N, int K, const void *A, int lda, const void *B,
                                     int ldb, const void *C, int ldc)
{
    if (M < 0 || N < 0 || K < 0)
        return KBPKG_KERNEL_EINVAL;
    if (lda < (K > 1 ? K : 1) || ldb < (N > 1 ? N : 1) || ldc < (N > 1 ? N : 1))
        return KBPKG_KERNEL_EINVAL;
    if (M > 0 && N > 0 && C == NULL)
        return KBPKG_KERNEL_EINVAL;
    if (M > 0 && N > 0 && K > 0 && (A == NULL || B == NULL))
        return KBPKG_KERNEL_EINVAL;
    return KBPKG_KERNEL_OK;
}

#ifdef __cplusplus
}
#endif

#endif
