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
