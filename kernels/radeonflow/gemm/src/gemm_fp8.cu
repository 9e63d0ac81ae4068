/* radeonflow/gemm FP8 block-scaled GEMM on GPUs: a portable SIMT kernel (every CUDA and ROCm
 * target) that dequantises e4m3 tiles into shared memory and promotes each 128-wide K block. */
#include "gemm_cpu.h"

#include <stdint.h>

#include "kb_gpu_compat.h"
#include <kbpkg/kernel_abi.h>
#include "rf_gemm.h"

namespace rf_fp8
{

/* 64 x 64 output tile, K read 32 at a time inside each 128-wide scale block; 256 threads, each
 * 4 x 4 outputs strided by 16 so a warp reads shared memory without bank conflicts. */
constexpr int BM = 64, BN = 64, BK = 32, THREADS = 256;
static_assert(RF_FP8_BLOCK % BK == 0 && RF_FP8_BLOCK % BN == 0, "a tile is inside one N block");

/* Dequantised (unscaled: exact) tiles, k-major, so both operands are read as rows. */
__device__ __forceinline__ void load_tile(float (*dst)[BM + 4], const uint8_t *src, int rows,
                                          int row0, int K, int k0, int tid)
{
    int r = tid / 4, c = (tid % 4) * 8; /* 64 rows x 32 bytes: 8 bytes per thread */
    bool in = row0 + r < rows;
    const uint8_t *p = src + (size_t)(row0 + r) * K + k0 + c;
#pragma unroll
    for (int i = 0; i < 8; i++)
        dst[c + i][r] = in ? rf_e4m3_to_f32(p[i]) : 0.0f;
}

__global__ __launch_bounds__(THREADS) void gemm_fp8_simt(int M, int N, int K, const uint8_t *A,
                                                         const float *scale_a, const uint8_t *B,
                                                         const float *scale_b, uint16_t *C)
{
    __shared__ float As[BK][BM + 4];
    __shared__ float Bs[BK][BN + 4];
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
    int kblocks = K / RF_FP8_BLOCK;
    const float *sb = scale_b + (size_t)(n0 / RF_FP8_BLOCK) * kblocks;
    float acc[4][4], part[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;
    for (int kb = 0; kb < kblocks; kb++) {
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                part[i][j] = 0.0f;
        for (int k0 = kb * RF_FP8_BLOCK; k0 < (kb + 1) * RF_FP8_BLOCK; k0 += BK) {
            load_tile(As, A, M, m0, K, k0, tid);
            load_tile(Bs, B, N, n0, K, k0, tid);
            __syncthreads();
#pragma unroll 8
            for (int k = 0; k < BK; k++) {
                float a[4], b[4];
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    a[i] = As[k][ty + 16 * i];
                    b[i] = Bs[k][tx + 16 * i];
                }
#pragma unroll
                for (int i = 0; i < 4; i++)
#pragma unroll
                    for (int j = 0; j < 4; j++)
                        part[i][j] += a[i] * b[j];
            }
            __syncthreads();
        }
        /* promotion: the block's exact-input fp32 sum, scaled once (the CPU reference's order) */
        float s_b = sb[kb];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int m = m0 + ty + 16 * i;
            float s = m < M ? scale_a[(size_t)m * kblocks + kb] * s_b : 0.0f;
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][j] += part[i][j] * s;
        }
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty + 16 * i;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int n = n0 + tx + 16 * j;
            if (m < M && n < N)
                C[(size_t)m * N + n] = kb_f32_to_bf16(acc[i][j]);
        }
    }
}

static int launch_simt(int M, int N, int K, const uint8_t *A, const float *sa, const uint8_t *B,
                       const float *sb, uint16_t *C, kb_stream_t stream)
{
    unsigned gx = (unsigned)((N + BN - 1) / BN), gy = (unsigned)((M + BM - 1) / BM);
    if (gy > 65535u)
        return KBPKG_KERNEL_EINVAL;
    gemm_fp8_simt<<<dim3(gx, gy), THREADS, 0, stream>>>(M, N, K, A, sa, B, sb, C);
    return kb_gpu_launch_status();
}

/* K == 0: C is zeros (the sum of nothing), as on the CPU. */
__global__ void fill_zero(uint16_t *C, size_t count)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        C[i] = 0;
}

} // namespace rf_fp8

extern "C" KBPKG_EXPORT int rf_gemm_fp8_blockscale(int M, int N, int K, const kbpkg_e4m3 *A,
                                                   const float *scale_a, const kbpkg_e4m3 *B,
                                                   const float *scale_b, kbpkg_bf16 *C,
                                                   void *stream)
{
    int rc = rf_gemm_fp8_check_args(M, N, K, A, scale_a, B, scale_b, C);
    if (rc != 0 || M == 0 || N == 0)
        return rc;
    kb_stream_t s = (kb_stream_t)stream;
    if (K == 0) {
        rf_fp8::fill_zero<<<256, 256, 0, s>>>(C, (size_t)M * N);
        return kb_gpu_launch_status();
    }
    return rf_fp8::launch_simt(M, N, K, A, scale_a, B, scale_b, C, s);
}
