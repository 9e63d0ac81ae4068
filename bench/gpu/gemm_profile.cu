/* A few warm launches of radeonflow/gemm's rf_gemm_bf16 for Nsight Compute: for each
 * "M N K plan" (plan: RF_GEMM_TMA_PLAN's "tile,splits", "-" for the table's choice, or "cublas"
 * for cublasGemmEx on the same operands, fp32 compute, as gemm_shapes times it) it fills
 * fresh random operands, calls the export twice (warm-up, module load), then once between
 * cudaProfilerStart/Stop, so `ncu --profile-from-start off` sees only that call's kernels
 * (the main kernel, and the reduce of a split plan). Never a timing loop.
 * Usage: gemm_profile LIBGEMM.so M N K plan [M N K plan ...] */
#include <cublas_v2.h>
#include <cuda_profiler_api.h>

#include <cstdlib>
#include <cstring>

#include "bench_common.h"

typedef int (*gemm_export)(int, int, int, float, const void *, int, const void *, int, float,
                           void *, int, void *);

int main(int argc, char **argv)
{
    if (argc < 6 || (argc - 2) % 4 != 0) {
        fprintf(stderr, "usage: %s LIBGEMM.so M N K plan [M N K plan ...]\n", argv[0]);
        return 2;
    }
    gemm_export gemm = (gemm_export)bench_lib_symbol(argv[1], "rf_gemm_bf16");
    if (!gemm)
        return 1;
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    for (int i = 2; i + 3 < argc; i += 4) {
        int M = (int)strtol(argv[i], nullptr, 10), N = (int)strtol(argv[i + 1], nullptr, 10),
            K = (int)strtol(argv[i + 2], nullptr, 10);
        const char *plan = argv[i + 3];
        const bool cublas = strcmp(plan, "cublas") == 0;
        if (strcmp(plan, "-") == 0 || cublas)
            unsetenv("RF_GEMM_TMA_PLAN");
        else
            setenv("RF_GEMM_TMA_PLAN", plan, 1);
        auto run = [&](uint16_t *A, uint16_t *B, uint16_t *C) {
            if (!cublas)
                return gemm(M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, nullptr);
            float one = 1.0f, zero = 0.0f;
            return (int)cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B, CUDA_R_16BF, N,
                                     A, CUDA_R_16BF, K, &zero, C, CUDA_R_16BF, N,
                                     CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        };
        uint16_t *A, *B, *C;
        CK(cudaMalloc(&A, (size_t)M * K * 2));
        CK(cudaMalloc(&B, (size_t)K * N * 2));
        CK(cudaMalloc(&C, (size_t)M * N * 2));
        bench_fill_random(A, (size_t)M * K, B_BF16);
        bench_fill_random(B, (size_t)K * N, B_BF16);
        for (int w = 0; w < 2; w++)
            if (run(A, B, C) != 0) {
                fprintf(stderr, "%dx%dx%d plan %s: launch failed\n", M, N, K, plan);
                return 1;
            }
        CK(cudaDeviceSynchronize());
        CK(cudaProfilerStart());
        int rc = run(A, B, C);
        CK(cudaDeviceSynchronize());
        CK(cudaProfilerStop());
        CK(cudaGetLastError());
        printf("profiled %dx%dx%d plan %s rc %d\n", M, N, K, plan, rc);
        CK(cudaFree(A));
        CK(cudaFree(B));
        CK(cudaFree(C));
    }
    unsetenv("RF_GEMM_TMA_PLAN");
    CKB(cublasDestroy(h));
    return 0;
}
