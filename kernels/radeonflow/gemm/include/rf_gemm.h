/* radeonflow/gemm: C = alpha*A*B + beta*C, row-major, bf16/fp16/fp32 inputs, fp32 accumulation. */
#ifndef RF_GEMM_H
#define RF_GEMM_H

#include <kbpkg/kernel_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Row-major: A is M x K (lda >= K), B is K x N (ldb >= N), C is M x N (ldc >= N).
 * C has the input type; products accumulate in fp32 and alpha/beta are fp32.
 * beta == 0: C is only written, never read (NaN in C does not propagate), as in BLAS.
 * Any M, N, K >= 0. Pointers are device pointers on GPU builds, host pointers on CPU
 * builds; stream is a cudaStream_t / hipStream_t (NULL = default stream), ignored on CPU.
 * Returns 0, KBPKG_KERNEL_EINVAL for bad sizes or pointers, KBPKG_KERNEL_ELAUNCH when the
 * runtime refuses the launch. GPU calls are asynchronous on the stream.
 */
KBPKG_EXPORT int rf_gemm_bf16(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                              const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc,
                              void *stream);
KBPKG_EXPORT int rf_gemm_f16(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                             const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc,
                             void *stream);
KBPKG_EXPORT int rf_gemm_f32(int M, int N, int K, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc, void *stream);

/*
 * FP8 block-scaled GEMM (the DeepSeek-V3 contract): C = (A * scale_a) x (B * scale_b)^T.
 * A is e4m3 [M, K] row-major with one fp32 scale per 1 x 128 block (scale_a [M, K/128],
 * row-major); B is e4m3 [N, K] row-major, i.e. K-major, with one fp32 scale per 128 x 128 block
 * (scale_b [ceil(N/128), K/128], row-major); C is bf16 [M, N] row-major, only written.
 * K must be a multiple of 128 (otherwise KBPKG_KERNEL_EINVAL); M and N are any size >= 0.
 * Products accumulate in fp32, each 128-wide block of K scaled once by scale_a * scale_b.
 * e4m3 is OCP's FN kind (max 448, S.1111.111 is NaN). Same pointer and stream rules as above.
 */
KBPKG_EXPORT int rf_gemm_fp8_blockscale(int M, int N, int K, const kbpkg_e4m3 *A,
                                        const float *scale_a, const kbpkg_e4m3 *B,
                                        const float *scale_b, kbpkg_bf16 *C, void *stream);

#ifdef __cplusplus
}
#endif

#endif
