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

static __global__ __launch_bounds__(THREADS) void gemm_fp8_simt(int M, int N, int K,
                                                                const uint8_t *A,
                                                                const float *scale_a,
                                                                const uint8_t *B,
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
#ifndef RF_FP8_STAGES
#define RF_FP8_STAGES 6 /* bench/gpu/fp8_run.sh can time others side by side */
#endif
#ifndef RF_FP8_GROUP_M
#define RF_FP8_GROUP_M 8
#endif
constexpr int H_BM = 128, H_BN = 128, H_BK = RF_FP8_BLOCK, H_STAGES = RF_FP8_STAGES;
constexpr int H_CONSUMER_WARPS = 8, H_THREADS = 384, H_GROUP_M = RF_FP8_GROUP_M;
constexpr int H_A_BYTES = H_BM * H_BK, H_STAGE_BYTES = H_A_BYTES + H_BN * H_BK;
/* + the epilogue's staging of C: 64 rows x 128 bf16 per consumer warpgroup, as two 128-byte
 * swizzled boxes of 64 columns (what the TMA store reads) */
constexpr int H_C_BYTES = H_BM * H_BN * 2;
constexpr int H_SMEM_BYTES = H_STAGES * H_STAGE_BYTES + H_C_BYTES + 1024 + 2 * H_STAGES * 8;
static_assert(H_BN == RF_FP8_BLOCK, "one B scale per tile and K block");

struct h_args {
    int M, N, kblocks, tiles_m, tiles_n;
    int units_n; /* tiles_n / CL rounded up: a cluster of CL blocks takes CL adjacent N tiles */
    const float *scale_a, *scale_b;
    uint16_t *C;
    bool c_pairs;   /* C and N allow 4-byte stores of column pairs */
    bool tma_store; /* C leaves through shared memory and TMA stores (16-byte rows) */
};

/* Unit u (one cluster's CL adjacent tiles) in groups of H_GROUP_M tile rows, so the clusters
 * running together share B in L2; rank picks the block's tile of the unit. */
template <int CL>
__device__ __forceinline__ void h_tile(const h_args &a, int u, int rank, int *m0, int *n0)
{
    int per_group = H_GROUP_M * a.units_n, group = u / per_group, first_m = group * H_GROUP_M;
    int rows = a.tiles_m - first_m < H_GROUP_M ? a.tiles_m - first_m : H_GROUP_M;
    int in_group = u % per_group;
    *m0 = (first_m + in_group % rows) * H_BM;
    *n0 = ((in_group / rows) * CL + rank) * H_BN;
}

/* 2: a steady pipeline of two partials (the default: +2-16% over 1 on the H200); 1: pairs of
 * blocks, nothing in flight across the loop's back edge; 0: one partial */
#ifndef RF_FP8_PINGPONG
#define RF_FP8_PINGPONG 2
#endif

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* d += A x B^T for one 64 x 128 x 32 step: both e4m3 operands K-major in 128-byte swizzled
 * shared memory (the first step of a block is wgmma_fp8_m64n128k32_first). */
__device__ __forceinline__ void wgmma_fp8_m64n128k32(float *d, uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " RF_WG_D64
                 ", %64, %65, p, 1, 1;\n}\n"
                 : RF_WG_ACC64("+f", d)
                 : "l"(da), "l"(db));
}

/* d = A x B^T for one 64 x 128 x 32 step, d only written: the first step of a block. Declaring
 * d as outputs (not read) ends the life of the previous partial here, so the compiler never
 * moves a partial that a wgmma still writes (which it answers by serialising the wgmma). */
__device__ __forceinline__ void wgmma_fp8_m64n128k32_first(float *d, uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 " RF_WG_D64
                 ", %64, %65, p, 1, 1;\n}\n"
                 : RF_WG_ACC64("=f", d)
                 : "l"(da), "l"(db));
}

/* The ring of stages as the producer and each consumer walk it. */
struct h_cursor {
    int s;
    unsigned phase;
    __device__ __forceinline__ void next()
    {
        if (++s == H_STAGES) {
            s = 0;
            phase ^= 1;
        }
    }
};

/* The A tile of a unit is the same for the CL blocks of its cluster: each loads 128 / CL of
 * its rows once and the copy engine writes them into every block of the cluster (multicast),
 * which halves the L2 -> SM traffic of A for CL = 2. B is each block's own. */
template <int CL>
__device__ __forceinline__ void h_produce(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                          const h_args &a, const CUtensorMap *tma,
                                          const CUtensorMap *tmb)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tma) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tmb) : "memory");
    const int rank = (int)(blockIdx.x % CL), slice = H_BM / CL;
    h_cursor c = {0, 0};
    for (int u = blockIdx.x / CL; u < a.tiles_m * a.units_n; u += gridDim.x / CL) {
        int m0, n0;
        h_tile<CL>(a, u, rank, &m0, &n0);
        for (int kb = 0; kb < a.kblocks; kb++, c.next()) {
            /* with CL > 1 the stage is free only when every block of the cluster released it */
            mbar_wait(&empty[c.s], c.phase ^ 1);
            mbar_expect_tx(&full[c.s], H_STAGE_BYTES); /* out-of-bounds boxes count too */
            uint8_t *sa = smem + c.s * H_STAGE_BYTES;
            if (CL > 1)
                tma_load_2d_multicast(sa + rank * slice * H_BK, tma, &full[c.s], kb * H_BK,
                                      m0 + rank * slice, (uint16_t)((1u << CL) - 1));
            else
                tma_load_2d(sa, tma, &full[c.s], kb * H_BK, m0);
            tma_load_2d(sa + H_A_BYTES, tmb, &full[c.s], kb * H_BK, n0);
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

/* Accumulator layout of m64nN: per 8 columns nn, acc[nn*4 + half*2 + {0,1}] is row g + 8 half,
 * columns nn*8 + 2t + {0,1} of the warp's 16 rows. */
__device__ __forceinline__ void h_epilogue_direct(const float *acc, const h_args &a, int r0, int r1,
                                                  int n0, int t)
{
#pragma unroll
    for (int nn = 0; nn < H_BN / 8; nn++) {
        int n = n0 + nn * 8 + t * 2;
        h_store_pair(a, r0, n, acc[nn * 4], acc[nn * 4 + 1]);
        h_store_pair(a, r1, n, acc[nn * 4 + 2], acc[nn * 4 + 3]);
    }
}

/* Waits for stage c.s and issues its four wgmma into part (one commit group). */
__device__ __forceinline__ void h_issue(float *part, uint8_t *smem, uint64_t *full,
                                        const h_cursor &c, int wg)
{
    mbar_wait(&full[c.s], c.phase);
    uint32_t sa = smem_addr(smem + c.s * H_STAGE_BYTES) + wg * 64 * 128;
    uint32_t sb = smem_addr(smem + c.s * H_STAGE_BYTES + H_A_BYTES);
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    wgmma_fp8_m64n128k32_first(part, wg_desc(sa, 16, 1024), wg_desc(sb, 16, 1024));
#pragma unroll
    for (int j = 1; j < H_BK / 32; j++)
        wgmma_fp8_m64n128k32(part, wg_desc(sa + j * 32, 16, 1024), wg_desc(sb + j * 32, 16, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* After the wait that completed part's group: the partial is final only now (keep the compiler
 * from reading it earlier), its stage is released in every block of the cluster, and it is
 * added to acc, scaled (s0 for row g, s1 for row g + 8). */
template <int CL>
__device__ __forceinline__ void h_retire(float *acc, float *part, uint64_t *empty, int s, int lane,
                                         float s0, float s1)
{
#pragma unroll
    for (int i = 0; i < 64; i++)
        asm volatile("" : "+f"(part[i])::"memory");
    if (lane == 0) {
#pragma unroll
        for (int r = 0; r < CL; r++)
            if (CL > 1)
                mbar_arrive_cluster(&empty[s], (unsigned)r);
            else
                mbar_arrive(&empty[s]);
    }
#pragma unroll
    for (int i = 0; i < 64; i++)
        acc[i] += part[i] * ((i & 2) ? s1 : s0);
}

template <int N> __device__ __forceinline__ void h_wait_group()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Scale rows of this thread and the tile's B scale row. */
struct h_scales {
    const float *a0, *a1, *b;
    __device__ __forceinline__ void at(int kb, float *s0, float *s1) const
    {
        float sb = __ldg(b + kb);
        *s0 = __ldg(a0 + kb) * sb;
        *s1 = __ldg(a1 + kb) * sb;
    }
};

/* PP (ping-pong, RF_FP8_PINGPONG): 2, a steady pipeline of two partials; 1, two partials in
 * pairs of blocks; both let a block's wgmma run while the one before is promoted. 0: one
 * partial, waited for each block (the other warpgroup's wgmma fill the gap). */
template <int CL, int PP>
__device__ __forceinline__ void h_consume(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                          const h_args &a, const CUtensorMap *tmc)
{
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    int g = lane >> 2, t = lane & 3;
    h_cursor c = {0, 0};
    float pa[64], pb[64]; /* written whole by each block's first wgmma */
    const int rank = (int)(blockIdx.x % CL);
    for (int u = blockIdx.x / CL; u < a.tiles_m * a.units_n; u += gridDim.x / CL) {
        int m0, n0;
        h_tile<CL>(a, u, rank, &m0, &n0);
        /* this thread's two rows of the m64 accumulator layout: g and g + 8 of its warp's 16 */
        int r0 = m0 + wg * 64 + (warp & 3) * 16 + g, r1 = r0 + 8;
        /* rows past M read row M - 1's scales: their outputs are never stored; a cluster's
         * last tile may lie past N (odd tiles_n): it runs on zeros and stores nothing */
        int nb = n0 / RF_FP8_BLOCK, last_nb = (a.N - 1) / RF_FP8_BLOCK;
        h_scales sc = {a.scale_a + (size_t)(r0 < a.M ? r0 : a.M - 1) * a.kblocks,
                       a.scale_a + (size_t)(r1 < a.M ? r1 : a.M - 1) * a.kblocks,
                       a.scale_b + (size_t)(nb < last_nb ? nb : last_nb) * a.kblocks};
        float acc[64];
#pragma unroll
        for (int i = 0; i < 64; i++)
            acc[i] = 0.0f;
        if (PP == 2) {
            /* a steady pipeline: block kb + 1's wgmma are issued before block kb is promoted,
             * so one of this warpgroup's groups is always in flight; pa carries a block in
             * flight across the loop's back edge */
            float pa0, pa1;
            sc.at(0, &pa0, &pa1);
            int sa_stage = c.s;
            h_issue(pa, smem, full, c, wg);
            c.next();
            int kb = 1;
            for (; kb + 1 < a.kblocks; kb += 2) {
                float b0, b1, n0, n1;
                sc.at(kb, &b0, &b1);
                int sb_stage = c.s;
                h_issue(pb, smem, full, c, wg);
                c.next();
                h_wait_group<1>();
                h_retire<CL>(acc, pa, empty, sa_stage, lane, pa0, pa1);
                sc.at(kb + 1, &n0, &n1);
                sa_stage = c.s;
                h_issue(pa, smem, full, c, wg);
                c.next();
                h_wait_group<1>();
                h_retire<CL>(acc, pb, empty, sb_stage, lane, b0, b1);
                pa0 = n0;
                pa1 = n1;
            }
            if (kb < a.kblocks) {
                float b0, b1;
                sc.at(kb, &b0, &b1);
                int sb_stage = c.s;
                h_issue(pb, smem, full, c, wg);
                c.next();
                h_wait_group<1>();
                h_retire<CL>(acc, pa, empty, sa_stage, lane, pa0, pa1);
                h_wait_group<0>();
                h_retire<CL>(acc, pb, empty, sb_stage, lane, b0, b1);
            } else {
                h_wait_group<0>();
                h_retire<CL>(acc, pa, empty, sa_stage, lane, pa0, pa1);
            }
        } else if (PP == 1) {
            /* pairs of blocks: the second block's wgmma run while the first is promoted. No
             * partial is in flight across a branch or the loop's back edge, so the compiler
             * has no reason to move one while a wgmma writes it (it would serialise them). */
            for (int kb = 0; kb < a.kblocks; kb += 2) {
                float a0, a1;
                sc.at(kb, &a0, &a1); /* loads under the wgmma */
                int first = c.s;
                h_issue(pa, smem, full, c, wg);
                c.next();
                if (kb + 1 < a.kblocks) {
                    float b0, b1;
                    sc.at(kb + 1, &b0, &b1);
                    int second = c.s;
                    h_issue(pb, smem, full, c, wg);
                    c.next();
                    h_wait_group<1>();
                    h_retire<CL>(acc, pa, empty, first, lane, a0, a1);
                    h_wait_group<0>();
                    h_retire<CL>(acc, pb, empty, second, lane, b0, b1);
                } else {
                    h_wait_group<0>();
                    h_retire<CL>(acc, pa, empty, first, lane, a0, a1);
                }
            }
        } else {
            for (int kb = 0; kb < a.kblocks; kb++) {
                float s0, s1;
                sc.at(kb, &s0, &s1); /* loads under the wgmma */
                int stage = c.s;
                h_issue(pa, smem, full, c, wg);
                c.next();
                h_wait_group<0>();
                h_retire<CL>(acc, pa, empty, stage, lane, s0, s1);
            }
        }
        if (a.tma_store)
            wg_store_tile_tma<kb_bf16_tag, H_BN>(
                acc, 1.0f, smem + H_STAGES * H_STAGE_BYTES + wg * (H_C_BYTES / 2), tmc,
                m0 + wg * 64, n0, 1 + wg);
        else
            h_epilogue_direct(acc, a, r0, r1, n0, t);
    }
    if (a.tma_store)
        wg_store_drain();
}
#endif

template <int CL>
__global__ __launch_bounds__(H_THREADS,
                             1) void gemm_fp8_wgmma(const h_args a,
                                                    const __grid_constant__ CUtensorMap tma,
                                                    const __grid_constant__ CUtensorMap tmb,
                                                    const __grid_constant__ CUtensorMap tmc)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) uint8_t h_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)h_smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + H_STAGES * H_STAGE_BYTES + H_C_BYTES);
    uint64_t *empty = full + H_STAGES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < H_STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], H_CONSUMER_WARPS * CL);
        }
        /* make the initialised barriers visible to the copy engine and the cluster */
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    /* no block may multicast into, or arrive on, a peer's barriers before the peer set them */
    if (CL > 1)
        cluster_sync();
    else
        __syncthreads();
    if (threadIdx.x >= H_CONSUMER_WARPS * 32) {
        /* the producer warpgroup needs few registers: give them to the consumers */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == H_CONSUMER_WARPS * 32)
            h_produce<CL>(smem, full, empty, a, &tma, &tmb);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
        h_consume<CL, RF_FP8_PINGPONG>(smem, full, empty, a, &tmc);
    }
    /* a block leaves only when its peers no longer write into it (multicast, remote arrives) */
    if (CL > 1)
        cluster_sync();
#else
    __trap(); /* launch_wgmma is only called from sm_90a builds */
#endif
}

#ifndef RF_FP8_TMA_STORE
#define RF_FP8_TMA_STORE 1 /* bench/gpu/fp8_run.sh times 0 and 1 side by side */
#endif
#ifndef RF_FP8_CLUSTER_CAP
#define RF_FP8_CLUSTER_CAP 1 /* cap the grid at cudaOccupancyMaxActiveClusters */
#endif
#ifndef RF_FP8_CLUSTER
#define RF_FP8_CLUSTER 1 /* bench/gpu/fp8_run.sh times 1 and 2 side by side */
#endif

template <int CL>
static int launch_wgmma_cl(const h_args &a, const CUtensorMap &ma, const CUtensorMap &mb,
                           const CUtensorMap &mc, kb_stream_t stream)
{
    auto kernel = gemm_fp8_wgmma<CL>;
    if (kb_gpu_func_set_max_dyn_smem(kernel, H_SMEM_BYTES) != kb_gpu_success)
        return KBPKG_KERNEL_ELAUNCH;
    long long blocks = (long long)a.tiles_m * a.units_n * CL;
    int resident = rf::sm_count() / CL * CL; /* one block per SM, whole clusters */
    cluster_launch l;
    cluster_launch_init(&l, CL, (unsigned)resident, H_THREADS, H_SMEM_BYTES, stream);
    cudaLaunchConfig_t &cfg = l.cfg;
    if (CL > 1 && RF_FP8_CLUSTER_CAP) { /* a GPC may not fit whole clusters: ask how many fit */
        int clusters = 0;
        if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg) == cudaSuccess &&
            clusters > 0 && clusters * CL < resident)
            resident = clusters * CL;
        (void)cudaGetLastError();
    }
    cfg.gridDim = dim3((unsigned)(resident > 0 && blocks > resident ? resident : blocks));
    if (cudaLaunchKernelEx(&cfg, kernel, a, ma, mb, mc) != cudaSuccess) {
        (void)cudaGetLastError();
        return KBPKG_KERNEL_ELAUNCH;
    }
    return kb_gpu_launch_status();
}

/* KBPKG_KERNEL_EUNSUPPORTED when this build or driver cannot run it, or the operands are not
 * 16-byte aligned (TMA's rule); the caller then takes the portable kernel. */
static int launch_wgmma(int M, int N, int K, const uint8_t *A, const float *sa, const uint8_t *B,
                        const float *sb, uint16_t *C, kb_stream_t stream)
{
    if (!rf::kTargetIsSm90a || ((uintptr_t)A & 15) || ((uintptr_t)B & 15))
        return KBPKG_KERNEL_EUNSUPPORTED;
    static const bool usable = rf::kernel_code_at_least(gemm_fp8_wgmma<1>, 90);
    if (!usable)
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
    if ((long long)a.tiles_m * a.tiles_n > 0x3fffffffLL)
        return KBPKG_KERNEL_EINVAL;
    /* pairs of blocks share A when there are two N tiles to pair */
    const int cl = RF_FP8_CLUSTER > 1 && a.tiles_n > 1 ? 2 : 1;
    a.units_n = (a.tiles_n + cl - 1) / cl;
    CUtensorMap ma, mb;
    if (!rf::make_tensor_map_128b(&ma, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, A, M, K, K, H_BM / cl) ||
        !rf::make_tensor_map_128b(&mb, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, B, N, K, K, H_BN))
        return KBPKG_KERNEL_EUNSUPPORTED;
    /* TMA stores need 16-byte aligned rows of C; otherwise plain stores from registers */
    CUtensorMap mc = ma; /* unused unless tma_store */
    a.tma_store = RF_FP8_TMA_STORE && ((uintptr_t)C & 15) == 0 && N % 8 == 0 &&
                  rf::make_tensor_map_128b(&mc, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, C, M, N, N, 64);
    return cl == 2 ? launch_wgmma_cl<2>(a, ma, mb, mc, stream)
                   : launch_wgmma_cl<1>(a, ma, mb, mc, stream);
}
#endif

/* K == 0: C is zeros (the sum of nothing), as on the CPU. */
static __global__ void fill_zero(uint16_t *C, size_t count)
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
