/* A deliberately wrong radeonflow/gemm CPU library: correct except the last element of C,
 * which is off by one. The kernels suite builds it to prove tests/check.c can fail. */
#include "gemm_cpu.h"

#include "kbpkg_half.h"

KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)

static void spoil_last(int M, int N, uint16_t *C, int ldc, int is_f16)
{
    if (M <= 0 || N <= 0)
        return;
    size_t i = (size_t)(M - 1) * ldc + (N - 1);
    float v = is_f16 ? kbpkg_f16_to_f32(C[i]) : kbpkg_bf16_to_f32(C[i]);
    C[i] = is_f16 ? kbpkg_f32_to_f16(v + 1.0f) : kbpkg_f32_to_bf16(v + 1.0f);
}

KBPKG_EXPORT int rf_gemm_bf16(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                              const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc,
                              void *stream)
{
    (void)stream;
    int rc = rf_gemm_bf16_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (rc == 0)
        spoil_last(M, N, C, ldc, 0);
    return rc;
}

KBPKG_EXPORT int rf_gemm_f16(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                             const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc,
                             void *stream)
{
    (void)stream;
    int rc = rf_gemm_f16_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
    if (rc == 0)
        spoil_last(M, N, C, ldc, 1);
    return rc;
}

KBPKG_EXPORT int rf_gemm_f32(int M, int N, int K, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc, void *stream)
{
    (void)stream;
    return rf_gemm_f32_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

KBPKG_EXPORT int rf_gemm_fp8_blockscale(int M, int N, int K, const kbpkg_e4m3 *A,
                                        const float *scale_a, const kbpkg_e4m3 *B,
                                        const float *scale_b, kbpkg_bf16 *C, void *stream)
{
    (void)stream;
    int rc = rf_gemm_fp8_blockscale_cpu(M, N, K, A, scale_a, B, scale_b, C);
    if (rc == 0)
        spoil_last(M, N, C, N, 1);
    return rc;
}
