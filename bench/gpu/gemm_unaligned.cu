/* GEMMs whose rows the copy engine cannot read (K or N not a multiple of 8, leading dimensions
 * K and N): the export as the package ships it (the unaligned operands copied into 128-byte rows
 * first, then the TMA kernels; at M <= 64 with such a B, the skinny kernel reading B in place),
 * the copies with the skinny kernel off (RF_GEMM_SKINNY=0: the way decode went before it read
 * unaligned rows), the export with the copies off too (RF_GEMM_STAGE=0: the mma.sync kernel fed
 * by scalar loads), and the export on operands already in 128-byte rows (copied before timing:
 * what the copies themselves cost is the difference), against cuBLAS
 * (cublasGemmEx, fp32 compute), bf16, on rotating operand sets in interleaved rounds (CUDA
 * events, medians). Each way is checked against cuBLAS first (C poisoned with NaN).
 * GEMM_UNALIGNED_SHAPES=MxNxK,... times those shapes instead of the built-in set.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90a,code=sm_90a
 *   -Ikernels/radeonflow/gemm/include -Iinclude -DKBPKG_TARGET='"cuda13-sm_90a-x86_64-linux"'
 *   bench/gpu/gemm_unaligned.cu -o gemm_unaligned -lcublas */
#include <cublas_v2.h>

#include <cstring>

#include "../../kernels/radeonflow/gemm/src/gemm.cu"
#include "bench_common.h"

static const char *const kWays[] = {"cuBLAS", "export", "copied", "no copy", "aligned"};
enum { WAYS = 5, COPIED = 2, NO_COPY = 3, ALIGNED = 4 };

/* the library reads both settings per call */
static void set_env(int way)
{
    if (way == NO_COPY)
        setenv("RF_GEMM_STAGE", "0", 1);
    else
        unsetenv("RF_GEMM_STAGE");
    if (way == COPIED || way == NO_COPY)
        setenv("RF_GEMM_SKINNY", "0", 1);
    else
        unsetenv("RF_GEMM_SKINNY");
}

static void run_shape(cublasHandle_t h, int M, int N, int K)
{
    const int reps = 30, ways = WAYS;
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    bench_gemm_sets g = bench_gemm_sets_alloc(na, nb, nc, B_BF16);
    /* the same operands in rows of a multiple of 64 elements */
    int lda2 = (K + 63) / 64 * 64, ldb2 = (N + 63) / 64 * 64;
    std::vector<uint16_t *> A2(g.count), B2(g.count);
    for (int i = 0; i < g.count; i++) {
        CK(cudaMalloc(&A2[i], (size_t)M * lda2 * 2));
        CK(cudaMalloc(&B2[i], (size_t)K * ldb2 * 2));
        CK(cudaMemcpy2D(A2[i], lda2 * 2, g.A[i], K * 2, K * 2, M, cudaMemcpyDeviceToDevice));
        CK(cudaMemcpy2D(B2[i], ldb2 * 2, g.B[i], N * 2, N * 2, K, cudaMemcpyDeviceToDevice));
    }
    uint16_t *ref;
    CK(cudaMalloc(&ref, nc * 2));
    float alpha = 1.0f, beta = 0.0f;
    auto call = [&](int way, int set) {
        if (way == 0) {
            CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, g.B[set], CUDA_R_16BF, N,
                             g.A[set], CUDA_R_16BF, K, &beta, g.C[set], CUDA_R_16BF, N,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            return;
        }
        set_env(way);
        int rc = way == ALIGNED ? rf_gemm_bf16(M, N, K, alpha, A2[set], lda2, B2[set], ldb2, beta,
                                               g.C[set], N, nullptr)
                                : rf_gemm_bf16(M, N, K, alpha, g.A[set], K, g.B[set], N, beta,
                                               g.C[set], N, nullptr);
        if (rc != 0) {
            fprintf(stderr, "%dx%dx%d %s: returned %d\n", M, N, K, kWays[way], rc);
            exit(1);
        }
    };
    call(0, 0);
    CK(cudaMemcpy(ref, g.C[0], nc * 2, cudaMemcpyDeviceToDevice));
    double err[ways] = {0};
    for (int w = 1; w < ways; w++) {
        CK(cudaMemset(g.C[0], 0xff, nc * 2));
        call(w, 0);
        CK(cudaDeviceSynchronize());
        err[w] = bench_rel_err(g.C[0], ref, M, N, N, B_BF16);
    }
    std::vector<double> med = bench_interleaved_median_ms(
        ways, reps, [&](size_t w, int i) { call((int)w, i % g.count); });
    set_env(0);
    double flop = 2.0 * M * N * K;
    printf("%dx%dx%d bf16: cuBLAS %.4f ms %.1f TF/s | export %.3f | copied %.3f | no copy %.3f | "
           "aligned %.3f |",
           M, N, K, med[0], flop / med[0] / 1e9, med[0] / med[1], med[0] / med[COPIED],
           med[0] / med[NO_COPY], med[0] / med[ALIGNED]);
    for (int w = 1; w < ways; w++)
        if (!(err[w] < 1e-2))
            printf(" %s WRONG (%.1e)", kWays[w], err[w]);
    printf("\n");
    for (int i = 0; i < g.count; i++) {
        CK(cudaFree(A2[i]));
        CK(cudaFree(B2[i]));
    }
    CK(cudaFree(ref));
    bench_gemm_sets_free(g);
}

int main()
{
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    printf("unaligned rows: cuBLAS time / ours (export, copied with the skinny kernel off, no "
           "copy, on aligned rows), %d SMs\n",
           rf::sm_count());
    /* K % 8 != 0 (A copied), N % 8 != 0 (B copied), both; LM heads over GPT-2's 50257-token
     * vocabulary at growing M (B's copy against the product; at M <= 64 read in place), a ResNet
     * stem as im2col (K 147), the one such shape in docs/perf.md's table (4095x4097x1000), then
     * decode over B in 2-, 4- and 8-byte rows (N = 50257, 50258, 50260) and 32001 columns */
    const int shapes[][3] = {
        {777, 1000, 1500},  {777, 900, 3000},   {500, 1500, 3000},  {1000, 999, 1001},
        {4096, 4095, 4096}, {4096, 1000, 1500}, {128, 1000, 1500},  {4096, 64, 1500},
        {4096, 256, 1500},  {16, 50257, 768},   {64, 50257, 768},   {128, 50257, 768},
        {256, 50257, 768},  {512, 50257, 768},  {2048, 50257, 768}, {12544, 64, 147},
        {50176, 64, 147},   {12544, 64, 300},   {12544, 64, 600},   {50176, 256, 147},
        {32, 50257, 768},   {96, 50257, 768},   {192, 50257, 768},  {16, 32001, 4096},
        {128, 32001, 4096}, {4095, 4097, 1000}, {1, 50257, 768},    {8, 50257, 768},
        {16, 50258, 768},   {16, 50260, 768},   {64, 50260, 768},   {1, 32001, 4096},
        {64, 32001, 4096}};
    return bench_each_shape("GEMM_UNALIGNED_SHAPES", shapes, sizeof shapes / sizeof shapes[0],
                            [&](int M, int N, int K) { run_shape(h, M, N, K); });
}
