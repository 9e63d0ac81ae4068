/* radeonflow/gemm on the CPU: a blocked, cache-friendly GEMM; also the reference in tests. */
#include "gemm_cpu.h"

#include <stdlib.h>

#include "kbpkg_half.h"

/* Blocks sized so one panel of B (KC x NC floats) stays in L2 and a row of C in L1. */
enum { KC = 256, NC = 512 };

typedef float (*load_fn)(const void *base, size_t idx);
typedef void (*store_fn)(void *base, size_t idx, float v);

static float load_f32(const void *p, size_t i)
{
    return ((const float *)p)[i];
}
static float load_bf16(const void *p, size_t i)
{
    return kbpkg_bf16_to_f32(((const uint16_t *)p)[i]);
}
static float load_f16(const void *p, size_t i)
{
    return kbpkg_f16_to_f32(((const uint16_t *)p)[i]);
}
static void store_f32(void *p, size_t i, float v)
{
    ((float *)p)[i] = v;
}
static void store_bf16(void *p, size_t i, float v)
{
    ((uint16_t *)p)[i] = kbpkg_f32_to_bf16(v);
}
static void store_f16(void *p, size_t i, float v)
{
    ((uint16_t *)p)[i] = kbpkg_f32_to_f16(v);
}

/* Converts a KC x NC panel of B to fp32 once, so the inner loop streams contiguous floats. */
static void pack_b_panel(float *panel, const void *B, int ldb, int k0, int kc, int n0, int nc,
                         load_fn load)
{
    for (int k = 0; k < kc; k++)
        for (int n = 0; n < nc; n++)
            panel[(size_t)k * nc + n] = load(B, (size_t)(k0 + k) * ldb + (n0 + n));
}

static int gemm_blocked(int M, int N, int K, float alpha, const void *A, int lda, const void *B,
                        int ldb, float beta, void *C, int ldc, load_fn load, store_fn store,
                        load_fn load_c)
{
    int rc = rf_gemm_check_args(M, N, K, A, lda, B, ldb, C, ldc);
    if (rc != 0 || M == 0 || N == 0)
        return rc;
    float *acc = malloc(sizeof(float) * (size_t)M * NC);
    float *panel = malloc(sizeof(float) * (size_t)KC * NC);
    if (acc == NULL || panel == NULL) {
        free(acc);
        free(panel);
        return KBPKG_KERNEL_EUNSUPPORTED;
    }
    for (int n0 = 0; n0 < N; n0 += NC) {
        int nc = N - n0 < NC ? N - n0 : NC;
        for (size_t i = 0; i < (size_t)M * nc; i++)
            acc[i] = 0.0f;
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = K - k0 < KC ? K - k0 : KC;
            pack_b_panel(panel, B, ldb, k0, kc, n0, nc, load);
            for (int m = 0; m < M; m++) {
                float *crow = acc + (size_t)m * nc;
                for (int k = 0; k < kc; k++) {
                    float a = load(A, (size_t)m * lda + (k0 + k));
                    const float *brow = panel + (size_t)k * nc;
                    for (int n = 0; n < nc; n++)
                        crow[n] += a * brow[n];
                }
            }
        }
        for (int m = 0; m < M; m++) {
            for (int n = 0; n < nc; n++) {
                size_t ci = (size_t)m * ldc + (n0 + n);
                float v = alpha * acc[(size_t)m * nc + n];
                if (beta != 0.0f) /* beta == 0 never reads C, as BLAS */
                    v += beta * load_c(C, ci);
                store(C, ci, v);
            }
        }
    }
    free(acc);
    free(panel);
    return KBPKG_KERNEL_OK;
}

int rf_gemm_bf16_cpu(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                     const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc)
{
    return gemm_blocked(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, load_bf16, store_bf16,
                        load_bf16);
}

int rf_gemm_f16_cpu(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                    const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc)
{
    return gemm_blocked(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, load_f16, store_f16,
                        load_f16);
}

int rf_gemm_f32_cpu(int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc)
{
    return gemm_blocked(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, load_f32, store_f32,
                        load_f32);
}

/* fp32 dot product of one 128-wide block; the compiler vectorises the four partial sums. */
static float dot_block(const float *a, const float *b)
{
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (int k = 0; k < RF_FP8_BLOCK; k += 4) {
        s0 += a[k] * b[k];
        s1 += a[k + 1] * b[k + 1];
        s2 += a[k + 2] * b[k + 2];
        s3 += a[k + 3] * b[k + 3];
    }
    return (s0 + s1) + (s2 + s3);
}

static void decode_rows(float *out, const kbpkg_e4m3 *in, size_t count, const float *lut)
{
    for (size_t i = 0; i < count; i++)
        out[i] = lut[in[i]];
}

/* One 128-row block of B decoded once, then every row of A against it; each K block's raw
 * dot product is scaled by scale_a * scale_b, as the GPU kernels promote their accumulators. */
int rf_gemm_fp8_blockscale_cpu(int M, int N, int K, const kbpkg_e4m3 *A, const float *scale_a,
                               const kbpkg_e4m3 *B, const float *scale_b, kbpkg_bf16 *C)
{
    int rc = rf_gemm_fp8_check_args(M, N, K, A, scale_a, B, scale_b, C);
    if (rc != 0 || M == 0 || N == 0)
        return rc;
    int kblocks = K / RF_FP8_BLOCK;
    float lut[256];
    for (int v = 0; v < 256; v++)
        lut[v] = rf_e4m3_to_f32((uint8_t)v);
    float *bpanel = malloc(sizeof(float) * (size_t)RF_FP8_BLOCK * (K ? K : 1));
    float *arow = malloc(sizeof(float) * (size_t)(K ? K : 1));
    if (bpanel == NULL || arow == NULL) {
        free(bpanel);
        free(arow);
        return KBPKG_KERNEL_EUNSUPPORTED;
    }
    for (int n0 = 0; n0 < N; n0 += RF_FP8_BLOCK) {
        int nc = N - n0 < RF_FP8_BLOCK ? N - n0 : RF_FP8_BLOCK;
        const float *sb = scale_b + (size_t)(n0 / RF_FP8_BLOCK) * kblocks;
        decode_rows(bpanel, B + (size_t)n0 * K, (size_t)nc * K, lut);
        for (int m = 0; m < M; m++) {
            const float *sa = scale_a + (size_t)m * kblocks;
            decode_rows(arow, A + (size_t)m * K, (size_t)K, lut);
            for (int n = 0; n < nc; n++) {
                float acc = 0.0f;
                for (int kb = 0; kb < kblocks; kb++)
                    acc += dot_block(arow + (size_t)kb * RF_FP8_BLOCK,
                                     bpanel + (size_t)n * K + (size_t)kb * RF_FP8_BLOCK) *
                           (sa[kb] * sb[kb]);
                C[(size_t)m * N + n0 + n] = kbpkg_f32_to_bf16(acc);
            }
        }
    }
    free(bpanel);
    free(arow);
    return KBPKG_KERNEL_OK;
}

/* The CPU build's exports; the GPU checks compile this file with KBPKG_REFERENCE_ONLY. */
#ifndef KBPKG_REFERENCE_ONLY
KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)

KBPKG_EXPORT int rf_gemm_bf16(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                              const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc,
                              void *stream)
{
    (void)stream;
    return rf_gemm_bf16_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

KBPKG_EXPORT int rf_gemm_f16(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                             const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc,
                             void *stream)
{
    (void)stream;
    return rf_gemm_f16_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
    return rf_gemm_fp8_blockscale_cpu(M, N, K, A, scale_a, B, scale_b, C);
}
#endif
