/* radeonflow/gemm FP8 block-scaled GEMM on GPUs: wgmma e4m3 on sm_90a, mma.sync e4m3 on sm_89 and
 * sm_90 (gemm_fp8_mma.cu); elsewhere a portable SIMT kernel (every CUDA and ROCm target) that
 * dequantises e4m3 tiles into shared memory; all promote each 128-wide K block. */
#include "gemm_cpu.h"

#include <stdint.h>

#include "kb_gpu_compat.h"
#include <kbpkg/kernel_abi.h>
#include "gemm_fp8_mma.h"
#include "rf_gemm.h"
#include "sm90.cuh"

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

#if defined(KB_GPU_CUDA)
using namespace rf; /* the Hopper helpers of sm90.cuh */

/* ---- sm_90a: TMA + wgmma e4m3, warp-specialized, persistent ----
 * Block tile 128 x 128, one 128-wide scale block of K per stage (A 16 KB + B 16 KB), 6 stages.
 * Warpgroup 2 produces: one lane issues the bulk tensor copies of a stage and arms its "full"
 * barrier. Warpgroups 0 and 1 consume, rows [64 wg, 64 wg + 64) of the tile each: four wgmma
 * m64n128k32 per stage into a block partial, then the partial is scaled by
 * scale_a[row] * scale_b[tile's N block] and added to the fp32 accumulator. Promoting every
 * 128 of K is the contract's precision rule: the tensor core's own fp8 accumulation keeps
 * fewer bits than fp32. While one warpgroup promotes, the other's wgmma run. Both operands
 * are K-major, the only layout wgmma takes for fp8; TMA's 128-byte swizzle writes what the
 * descriptors read (16-byte chunk c of row r at c ^ (r & 7)). */
constexpr int H_BM = 128, H_BN = 128, H_BK = RF_FP8_BLOCK, H_STAGES = 6;
constexpr int H_CONSUMER_WARPS = 8, H_THREADS = 384, H_GROUP_M = 8;
constexpr int H_A_BYTES = H_BM * H_BK, H_STAGE_BYTES = H_A_BYTES + H_BN * H_BK;
constexpr int H_SMEM_BYTES = H_STAGES * H_STAGE_BYTES + 1024 + 2 * H_STAGES * 8;
static_assert(H_BN == RF_FP8_BLOCK, "one B scale per tile and K block");

struct h_args {
    int M, N, kblocks, tiles_m, tiles_n;
    const float *scale_a, *scale_b;
    uint16_t *C;
    bool c_pairs; /* C and N allow 4-byte stores of column pairs */
};

/* Tile u in groups of H_GROUP_M tile rows, so blocks running together share B in L2. */
__device__ __forceinline__ void h_tile(const h_args &a, int u, int *m0, int *n0)
{
    int per_group = H_GROUP_M * a.tiles_n, group = u / per_group, first_m = group * H_GROUP_M;
    int rows = a.tiles_m - first_m < H_GROUP_M ? a.tiles_m - first_m : H_GROUP_M;
    int in_group = u % per_group;
    *m0 = (first_m + in_group % rows) * H_BM;
    *n0 = (in_group / rows) * H_BN;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* d (+)= A x B^T for one 64 x 128 x 32 step: both e4m3 operands K-major in 128-byte swizzled
 * shared memory; accumulate selects d += (1) or d = (0). */
__device__ __forceinline__ void wgmma_fp8_m64n128k32(float *d, uint64_t da, uint64_t db,
                                                     int accumulate)
{
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "
        "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, "
        "%38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, "
        "%56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
          "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]),
          "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]),
          "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]),
          "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]),
          "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]),
          "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]),
          "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]),
          "+f"(d[63])
        : "l"(da), "l"(db), "r"(accumulate));
}

__device__ __forceinline__ void h_produce(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                          const h_args &a, const CUtensorMap *tma,
                                          const CUtensorMap *tmb)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tma) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tmb) : "memory");
    int s = 0;
    unsigned phase = 0;
    for (int u = blockIdx.x; u < a.tiles_m * a.tiles_n; u += gridDim.x) {
        int m0, n0;
        h_tile(a, u, &m0, &n0);
        for (int kb = 0; kb < a.kblocks; kb++) {
            mbar_wait(&empty[s], phase ^ 1);
            mbar_expect_tx(&full[s], H_STAGE_BYTES); /* out-of-bounds boxes count too */
            uint8_t *sa = smem + s * H_STAGE_BYTES;
            tma_load_2d(sa, tma, &full[s], kb * H_BK, m0);
            tma_load_2d(sa + H_A_BYTES, tmb, &full[s], kb * H_BK, n0);
            if (++s == H_STAGES) {
                s = 0;
                phase ^= 1;
            }
        }
    }
}

/* Columns (n, n + 1) of row m, as bf16. */
__device__ __forceinline__ void h_store_pair(const h_args &a, int m, int n, float v0, float v1)
{
    if (m >= a.M)
        return;
    uint16_t *p = a.C + (size_t)m * a.N + n;
    if (a.c_pairs && n + 1 < a.N) {
        *reinterpret_cast<uint32_t *>(p) =
            (uint32_t)kb_f32_to_bf16(v0) | ((uint32_t)kb_f32_to_bf16(v1) << 16);
        return;
    }
    if (n < a.N)
        p[0] = kb_f32_to_bf16(v0);
    if (n + 1 < a.N)
        p[1] = kb_f32_to_bf16(v1);
}

__device__ __forceinline__ void h_consume(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                          const h_args &a)
{
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    int g = lane >> 2, t = lane & 3;
    int s = 0;
    unsigned phase = 0;
    float part[64];
#pragma unroll
    for (int i = 0; i < 64; i++)
        part[i] = 0.0f;
    for (int u = blockIdx.x; u < a.tiles_m * a.tiles_n; u += gridDim.x) {
        int m0, n0;
        h_tile(a, u, &m0, &n0);
        /* this thread's two rows of the m64 accumulator layout: g and g + 8 of its warp's 16 */
        int r0 = m0 + wg * 64 + (warp & 3) * 16 + g, r1 = r0 + 8;
        /* rows past M read row M - 1's scales: their outputs are never stored */
        const float *pa0 = a.scale_a + (size_t)(r0 < a.M ? r0 : a.M - 1) * a.kblocks;
        const float *pa1 = a.scale_a + (size_t)(r1 < a.M ? r1 : a.M - 1) * a.kblocks;
        const float *pb = a.scale_b + (size_t)(n0 / RF_FP8_BLOCK) * a.kblocks;
        float acc[64];
#pragma unroll
        for (int i = 0; i < 64; i++)
            acc[i] = 0.0f;
        float na0 = __ldg(pa0), na1 = __ldg(pa1), nb = __ldg(pb);
        for (int kb = 0; kb < a.kblocks; kb++) {
            float s0 = na0 * nb, s1 = na1 * nb;
            if (kb + 1 < a.kblocks) { /* next block's scales load under this block's wgmma */
                na0 = __ldg(pa0 + kb + 1);
                na1 = __ldg(pa1 + kb + 1);
                nb = __ldg(pb + kb + 1);
            }
            mbar_wait(&full[s], phase);
            uint32_t sa = smem_addr(smem + s * H_STAGE_BYTES) + wg * 64 * 128;
            uint32_t sb = smem_addr(smem + s * H_STAGE_BYTES + H_A_BYTES);
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int j = 0; j < H_BK / 32; j++)
                wgmma_fp8_m64n128k32(part, wg_desc(sa + j * 32, 16, 1024),
                                     wg_desc(sb + j * 32, 16, 1024), j);
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
            /* the partial is final only now: keep the compiler from reading it earlier */
#pragma unroll
            for (int i = 0; i < 64; i++)
                asm volatile("" : "+f"(part[i])::"memory");
            if (lane == 0)
                mbar_arrive(&empty[s]);
            if (++s == H_STAGES) {
                s = 0;
                phase ^= 1;
            }
#pragma unroll
            for (int i = 0; i < 64; i++)
                acc[i] += part[i] * ((i & 2) ? s1 : s0);
        }
        /* accumulator layout of m64nN: per 8 columns nn, d[nn*4 + half*2 + {0,1}] is row
         * g + 8 half, columns nn*8 + 2t + {0,1} */
#pragma unroll
        for (int nn = 0; nn < H_BN / 8; nn++) {
            int n = n0 + nn * 8 + t * 2;
            h_store_pair(a, r0, n, acc[nn * 4], acc[nn * 4 + 1]);
            h_store_pair(a, r1, n, acc[nn * 4 + 2], acc[nn * 4 + 3]);
        }
    }
}
#endif

__global__ __launch_bounds__(H_THREADS,
                             1) void gemm_fp8_wgmma(const h_args a,
                                                    const __grid_constant__ CUtensorMap tma,
                                                    const __grid_constant__ CUtensorMap tmb)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) uint8_t h_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)h_smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + H_STAGES * H_STAGE_BYTES), *empty = full + H_STAGES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < H_STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], H_CONSUMER_WARPS);
        }
        /* make the initialised barriers visible to the copy engine */
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x >= H_CONSUMER_WARPS * 32) {
        /* the producer warpgroup needs few registers: give them to the consumers */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == H_CONSUMER_WARPS * 32)
            h_produce(smem, full, empty, a, &tma, &tmb);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        h_consume(smem, full, empty, a);
    }
#else
    __trap(); /* launch_wgmma is only called from sm_90a builds */
#endif
}

/* KBPKG_KERNEL_EUNSUPPORTED when this build or driver cannot run it, or the operands are not
 * 16-byte aligned (TMA's rule); the caller then takes the portable kernel. */
static int launch_wgmma(int M, int N, int K, const uint8_t *A, const float *sa, const uint8_t *B,
                        const float *sb, uint16_t *C, kb_stream_t stream)
{
    if (!rf::kTargetIsSm90a || ((uintptr_t)A & 15) || ((uintptr_t)B & 15))
        return KBPKG_KERNEL_EUNSUPPORTED;
    /* a fat binary's PTX JIT-compiled for another device holds only the trap */
    static const bool usable = [] {
        cudaFuncAttributes attr;
        if (cudaFuncGetAttributes(&attr, gemm_fp8_wgmma) != cudaSuccess) {
            (void)cudaGetLastError();
            return false;
        }
        return attr.ptxVersion >= 90;
    }();
    if (!usable)
        return KBPKG_KERNEL_EUNSUPPORTED;
    CUtensorMap ma, mb;
    if (!rf::make_tensor_map_128b(&ma, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, A, M, K, K, H_BM) ||
        !rf::make_tensor_map_128b(&mb, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, B, N, K, K, H_BN))
        return KBPKG_KERNEL_EUNSUPPORTED;
    h_args a;
    a.M = M;
    a.N = N;
    a.kblocks = K / RF_FP8_BLOCK;
    a.tiles_m = (M + H_BM - 1) / H_BM;
    a.tiles_n = (N + H_BN - 1) / H_BN;
    a.scale_a = sa;
    a.scale_b = sb;
    a.C = C;
    a.c_pairs = ((uintptr_t)C & 3) == 0 && (N & 1) == 0;
    long long tiles = (long long)a.tiles_m * a.tiles_n;
    if (tiles > 0x7fffffffLL)
        return KBPKG_KERNEL_EINVAL;
    if (kb_gpu_func_set_max_dyn_smem(gemm_fp8_wgmma, H_SMEM_BYTES) != kb_gpu_success)
        return KBPKG_KERNEL_ELAUNCH;
    int sms = rf::sm_count();
    unsigned grid = (unsigned)(sms > 0 && tiles > sms ? sms : tiles);
    gemm_fp8_wgmma<<<grid, H_THREADS, H_SMEM_BYTES, stream>>>(a, ma, mb);
    return kb_gpu_launch_status();
}
#endif

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
#if defined(KB_GPU_CUDA)
    rc = rf_fp8::launch_wgmma(M, N, K, A, scale_a, B, scale_b, C, s);
    if (rc != KBPKG_KERNEL_EUNSUPPORTED)
        return rc;
    rc = rf_fp8::launch_mma(M, N, K, A, scale_a, B, scale_b, C, s);
    if (rc != KBPKG_KERNEL_EUNSUPPORTED)
        return rc;
#endif
    return rf_fp8::launch_simt(M, N, K, A, scale_a, B, scale_b, C, s);
}
