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
 * Block tile BM x BN (BM = 128, 192 or 256 rows by h_row_slices; BN = 128 or 192 columns, a build
 * switch), one 128-wide scale block of K per stage (A BM x 128 bytes + B BN x 128), as many
 * stages as shared memory holds beside C's staging (6 at 128 x 128, 4 at 192 rows or columns and
 * at 256 rows). The last warpgroup produces: one lane issues the bulk tensor copies of a stage
 * and arms its "full" barrier. The others (2 or 3) consume, 64-row slices of the tile (one each;
 * at 256 rows two each, one after the other): per
 * stage, wgmma m64nWk32 over the block's K into block partials of W
 * columns (W = BN at 128 columns; pieces of 96 columns on the wider tile, whose full partial
 * and accumulator would not both fit in registers twice), then each
 * partial is scaled by scale_a[row] * scale_b[the column's N block] and added to the fp32
 * accumulator. Promoting every 128 of K is the contract's precision rule: the tensor core's
 * own fp8 accumulation keeps fewer bits than fp32. A tile wider than 128 columns spans two B
 * scale blocks; tiles start at multiples of 64 columns, so each 64-column chunk of the tile
 * takes one B scale (the chunk's block, per tile). Both operands are K-major, the only layout
 * wgmma takes for fp8; TMA's 128-byte swizzle writes what the descriptors read (16-byte
 * chunk c of row r at c ^ (r & 7)). */
#ifndef RF_FP8_STAGES
#define RF_FP8_STAGES 6 /* stages of the 128-column tile; bench/gpu/fp8_run.sh can time others */
#endif
#ifndef RF_FP8_GROUP_M
#define RF_FP8_GROUP_M 8
#endif
/* RF_FP8_BN: 128 (the default) or 192, a build switch: on the H200 the 192-column tiles lost
 * at every shape (0.64-0.94 of 128, docs/perf.md "FP8, third pass"); the fourth pass's profile
 * says why (the consumers' issue, not L2, co-limits the 128-column kernel). 256 columns (four
 * 64-column pieces: spills), one 192-column partial (no steady pipeline: 0.70-0.97) and a
 * per-shape pick between 128 and 192 were removed as dead ends. */
#ifndef RF_FP8_BN
#define RF_FP8_BN 128
#endif
static_assert(RF_FP8_BN == 128 || RF_FP8_BN == 192, "RF_FP8_BN: 128 or 192");
/* RF_FP8_WGS: 64-row slices of the tile, forced: 2 (128-row tiles, a consumer warpgroup per
 * slice, two partials in a steady pipeline), 3 (192-row tiles, a consumer warpgroup per slice,
 * one partial each: two would not fit 160 registers) or 4 (256-row tiles, two consumer
 * warpgroups of two slices each, one partial that each slice's block reuses); 0, the rule of
 * h_row_slices per shape. */
#ifndef RF_FP8_WGS
#define RF_FP8_WGS 0
#endif
static_assert(RF_FP8_WGS == 0 || (RF_FP8_WGS >= 2 && RF_FP8_WGS <= 4), "RF_FP8_WGS: 0, 2, 3 or 4");
constexpr int H_BK = RF_FP8_BLOCK, H_GROUP_M = RF_FP8_GROUP_M;
constexpr int H_SMEM_LIMIT = 227 * 1024; /* an sm_90 block's dynamic shared memory */

/* 2: a steady pipeline of two partials (the default: +2-16% over 1 on the H200); 1: pairs of
 * blocks, nothing in flight across the loop's back edge; 0: one partial. Tiles cut into pieces
 * (W < BN) always run the steady pipeline over the pieces. */
#ifndef RF_FP8_PINGPONG
#define RF_FP8_PINGPONG 2
#endif

/* Sizes of the BM x BN tile (BM = 64 x WGS, WGS slices of 64 rows): the consumer warpgroups
 * (CWG, SLICES slices each), the partial width W, the stage, the epilogue's staging of C (64
 * rows x BN bf16 per consumer warpgroup, one slice at a time, as BN / 64 128-byte swizzled boxes
 * of 64 columns: what the TMA store reads), the stage count, the block's shared memory. */
template <int BN, int WGS> struct h_cfg {
    static constexpr int BM = 64 * WGS, A_BYTES = BM * H_BK;
    static constexpr int SLICES = WGS == 4 ? 2 : 1, CWG = WGS / SLICES;
    static constexpr int CONSUMER_WARPS = 4 * CWG, THREADS = 128 * (CWG + 1);
    /* registers per thread after setmaxnreg: the producer's go to the consumers (65536 in all);
     * two partials (PP 2), or two slices' accumulators, only fit beside two consumer warpgroups */
    static constexpr int PRODUCER_REGS = CWG == 2 ? 40 : 24, CONSUMER_REGS = CWG == 2 ? 232 : 160;
    static constexpr int PP = WGS == 2 ? RF_FP8_PINGPONG : 0;
    static_assert(WGS >= 2 && WGS <= 4, "two, three or four 64-row slices");
    static_assert(128 * PRODUCER_REGS + 128 * CWG * CONSUMER_REGS <= 65536, "register file");
    static constexpr int W = BN == 128 ? 128 : 96;
    static constexpr int PIECES = BN / W;
    static constexpr int STAGE_BYTES = A_BYTES + BN * H_BK;
    static constexpr int C_BYTES = 64 * CWG * BN * 2, C_WG = C_BYTES / CWG;
    static constexpr int FIT = (H_SMEM_LIMIT - C_BYTES - 1024 - 2 * 8 * 8) / STAGE_BYTES;
    static constexpr int WANT = BN == 128 ? RF_FP8_STAGES : 8;
    static constexpr int STAGES = FIT < WANT ? FIT : WANT;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + C_BYTES + 1024 + 2 * STAGES * 8;
    /* B scales per tile and K block: one per 64-column chunk (one when BN is 128: aligned) */
    static constexpr int SB = BN == 128 ? 1 : BN / 64;
    static_assert(BN % 64 == 0 && BN % W == 0 && W % 32 == 0, "64-column chunks, whole pieces");
    static_assert(PIECES == 1 || PIECES % 2 == 0, "pieces alternate between two partials");
    static_assert(SMEM_BYTES <= H_SMEM_LIMIT, "fits one block per SM");
};

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
template <int CL, int BN, int WGS>
__device__ __forceinline__ void h_tile(const h_args &a, int u, int rank, int *m0, int *n0)
{
    int per_group = H_GROUP_M * a.units_n, group = u / per_group, first_m = group * H_GROUP_M;
    int rows = a.tiles_m - first_m < H_GROUP_M ? a.tiles_m - first_m : H_GROUP_M;
    int in_group = u % per_group;
    *m0 = (first_m + in_group % rows) * h_cfg<BN, WGS>::BM;
    *n0 = ((in_group / rows) * CL + rank) * BN;
}

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
/* The accumulator operand list of m64n96 (48 fp32 per thread); m64n128's is sm90.cuh's
 * RF_WG_D64. */
#define F8_D48                                                                                     \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "            \
    "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, "             \
    "%34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}"
#define F8_ACC48(C, d)                                                                             \
    RF_WG_ACC8(C, d, 0), RF_WG_ACC8(C, d, 8), RF_WG_ACC8(C, d, 16), RF_WG_ACC8(C, d, 24),          \
        RF_WG_ACC8(C, d, 32), RF_WG_ACC8(C, d, 40)
/* One m64nWk32 step, d += A x B^T (ACC true) or d = A x B^T (the first step of a block: d as
 * outputs only ends the previous partial's life here, so the compiler never moves a partial
 * that a wgmma still writes, which it answers by serialising the wgmma); both e4m3 operands
 * K-major in 128-byte swizzled shared memory. */
#define F8_WGMMA(NAME, NN, DLIST, ACCLIST, NREG)                                                   \
    template <bool ACC> __device__ __forceinline__ void NAME(float *d, uint64_t da, uint64_t db)   \
    {                                                                                              \
        if (ACC)                                                                                   \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                \
                         "wgmma.mma_async.sync.aligned.m64n" #NN "k32.f32.e4m3.e4m3 " DLIST        \
                         ", %" #NREG ", %" NREG1_##NREG ", p, 1, 1;\n}\n"                          \
                         : ACCLIST("+f", d)                                                        \
                         : "l"(da), "l"(db));                                                      \
        else                                                                                       \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 0, 0;\n"                                \
                         "wgmma.mma_async.sync.aligned.m64n" #NN "k32.f32.e4m3.e4m3 " DLIST        \
                         ", %" #NREG ", %" NREG1_##NREG ", p, 1, 1;\n}\n"                          \
                         : ACCLIST("=f", d)                                                        \
                         : "l"(da), "l"(db));                                                      \
    }
#define NREG1_48 "49"
#define NREG1_64 "65"
F8_WGMMA(wgmma_fp8_n96, 96, F8_D48, F8_ACC48, 48)
F8_WGMMA(wgmma_fp8_n128, 128, RF_WG_D64, RF_WG_ACC64, 64)

template <int W, bool ACC>
__device__ __forceinline__ void h_wgmma(float *d, uint64_t da, uint64_t db)
{
    static_assert(W == 96 || W == 128, "m64n96 pieces or m64n128 blocks");
    if (W == 96)
        wgmma_fp8_n96<ACC>(d, da, db);
    else
        wgmma_fp8_n128<ACC>(d, da, db);
}

/* RF_FP8_DIAG (diagnostic builds only: their results are WRONG; bench/gpu/fp8_run.sh times
 * them to find the limiter and never checks them): 1, no loads after the first fill of the
 * ring (the producer completes each later stage's full barrier with a plain arrive, the
 * consumers run on stale stages): the kernel without L2 -> shared memory traffic; 2, no
 * promotion: ptxas then drops the wgmma as well (their partials are unused: 0 QGMMA in the
 * SASS), so this build times the load pipeline alone (TMA, stage barriers, epilogue), no math;
 * 3, both: the barriers and the epilogue alone; 4, the promotion skipped at run time (a branch
 * ptxas cannot decide keeps the wgmma): loads and math without the promotion. 0: the package. */
#ifndef RF_FP8_DIAG
#define RF_FP8_DIAG 0
#endif

/* The ring of stages as the producer and each consumer walk it. */
template <int STAGES> struct h_cursor {
    int s;
    unsigned phase;
    __device__ __forceinline__ void next()
    {
        if (++s == STAGES) {
            s = 0;
            phase ^= 1;
        }
    }
};

/* The A tile of a unit is the same for the CL blocks of its cluster: each loads BM / CL of
 * its rows once and the copy engine writes them into every block of the cluster (multicast),
 * which halves the L2 -> SM traffic of A for CL = 2. B is each block's own. */
template <int CL, int BN, int WGS>
__device__ __forceinline__ void h_produce(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                          const h_args &a, const CUtensorMap *tma,
                                          const CUtensorMap *tmb)
{
    typedef h_cfg<BN, WGS> G;
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tma) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tmb) : "memory");
    const int rank = (int)(blockIdx.x % CL), slice = G::BM / CL;
    h_cursor<G::STAGES> c = {0, 0};
    for (int u = blockIdx.x / CL; u < a.tiles_m * a.units_n; u += gridDim.x / CL) {
        int m0, n0;
        h_tile<CL, BN, WGS>(a, u, rank, &m0, &n0);
        for (int kb = 0; kb < a.kblocks; kb++, c.next()) {
            /* with CL > 1 the stage is free only when every block of the cluster released it */
            mbar_wait(&empty[c.s], c.phase ^ 1);
            if ((RF_FP8_DIAG & 1) && (c.phase || u != (int)(blockIdx.x / CL) || kb >= G::STAGES)) {
                mbar_arrive(&full[c.s]); /* diagnostic: the stage keeps its earlier bytes */
                continue;
            }
            mbar_expect_tx(&full[c.s], G::STAGE_BYTES); /* out-of-bounds boxes count too */
            uint8_t *sa = smem + c.s * G::STAGE_BYTES;
            if (CL > 1)
                tma_load_2d_multicast(sa + rank * slice * H_BK, tma, &full[c.s], kb * H_BK,
                                      m0 + rank * slice, (uint16_t)((1u << CL) - 1));
            else
                tma_load_2d(sa, tma, &full[c.s], kb * H_BK, m0);
            tma_load_2d(sa + G::A_BYTES, tmb, &full[c.s], kb * H_BK, n0);
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
        *reinterpret_cast<uint32_t *>(p) = kb_f32x2_to_bf16x2(v0, v1);
        return;
    }
    if (n < a.N)
        p[0] = kb_f32_to_bf16(v0);
    if (n + 1 < a.N)
        p[1] = kb_f32_to_bf16(v1);
}

/* Accumulator layout of m64nN: per 8 columns nn, acc[nn*4 + half*2 + {0,1}] is row g + 8 half,
 * columns nn*8 + 2t + {0,1} of the warp's 16 rows. */
template <int BN>
__device__ __forceinline__ void h_epilogue_direct(const float *acc, const h_args &a, int r0, int r1,
                                                  int n0, int t)
{
#pragma unroll
    for (int nn = 0; nn < BN / 8; nn++) {
        int n = n0 + nn * 8 + t * 2;
        h_store_pair(a, r0, n, acc[nn * 4], acc[nn * 4 + 1]);
        h_store_pair(a, r1, n, acc[nn * 4 + 2], acc[nn * 4 + 3]);
    }
}

/* Issues piece p (columns [p W, p W + W) of the tile) of stage c.s's block into part: four
 * wgmma, one commit group; WAIT: first waits for the stage to be full. */
template <int BN, int WGS, int W, bool WAIT, typename Cursor>
__device__ __forceinline__ void h_issue(float *part, uint8_t *smem, uint64_t *full, const Cursor &c,
                                        int wg, int p)
{
    typedef h_cfg<BN, WGS> G;
    if (WAIT)
        mbar_wait(&full[c.s], c.phase);
    uint32_t sa = smem_addr(smem + c.s * G::STAGE_BYTES) + wg * 64 * 128;
    uint32_t sb = smem_addr(smem + c.s * G::STAGE_BYTES + G::A_BYTES) + p * W * 128;
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    h_wgmma<W, false>(part, wg_desc(sa, 16, 1024), wg_desc(sb, 16, 1024));
#pragma unroll
    for (int j = 1; j < H_BK / 32; j++)
        h_wgmma<W, true>(part, wg_desc(sa + j * 32, 16, 1024), wg_desc(sb + j * 32, 16, 1024));
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

/* After the wait that completed part's group: the partial is final only now (keep the compiler
 * from reading it earlier); RELEASE: its stage is released in every block of the cluster (the
 * block's last piece); it is added to acc (the piece's columns of the accumulator), scaled: s0
 * for row g, s1 for row g + 8, per 64-column chunk of the tile (col0: the piece's first). */
template <int CL, int W, int SB, bool RELEASE>
__device__ __forceinline__ void h_retire(float *acc, float *part, uint64_t *empty, int s, int lane,
                                         const float *s0, const float *s1, int col0)
{
#pragma unroll
    for (int i = 0; i < W / 2; i++)
        asm volatile("" : "+f"(part[i])::"memory");
    if (RELEASE && lane == 0) {
#pragma unroll
        for (int r = 0; r < CL; r++)
            if (CL > 1)
                mbar_arrive_cluster(&empty[s], (unsigned)r);
            else
                mbar_arrive(&empty[s]);
    }
#pragma unroll
    for (int i = 0; i < W / 2; i++) {
        int q = SB == 1 ? 0 : (col0 + (i / 4) * 8) / 64;
        if (!(RF_FP8_DIAG & 2))                         /* diagnostic 2: the partial is dropped */
            if (RF_FP8_DIAG != 4 || s0[0] == -1.5e-38f) /* 4: skipped at run time */
                acc[i] += part[i] * ((i & 2) ? s1[q] : s0[q]);
    }
}

template <int N> __device__ __forceinline__ void h_wait_group()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

/* Row r's A scales; rows past M read row M - 1's (their outputs are never stored). */
__device__ __forceinline__ const float *h_scale_a_row(const h_args &a, int r)
{
    return a.scale_a + (size_t)(r < a.M ? r : a.M - 1) * a.kblocks;
}
/* The B scale row of column n's 128-column block; columns past N read the last block's. */
__device__ __forceinline__ const float *h_scale_b_row(const h_args &a, int n)
{
    int nb = n / RF_FP8_BLOCK, last_nb = (a.N - 1) / RF_FP8_BLOCK;
    return a.scale_b + (size_t)(nb < last_nb ? nb : last_nb) * a.kblocks;
}

/* Scale rows of this thread and the tile's B scale rows (one per 64-column chunk: SB). */
template <int SB> struct h_scales {
    const float *a0, *a1, *b[SB];
    /* the raw scales of block kb: x[0], x[1] the rows', x[2 + q] chunk q's */
    __device__ __forceinline__ void raw(int kb, float *x) const
    {
        x[0] = __ldg(a0 + kb);
        x[1] = __ldg(a1 + kb);
#pragma unroll
        for (int q = 0; q < SB; q++)
            x[2 + q] = __ldg(b[q] + kb);
    }
    /* their products: s0 for row g, s1 for row g + 8, per chunk */
    static __device__ __forceinline__ void mul(const float *x, float *s0, float *s1)
    {
#pragma unroll
        for (int q = 0; q < SB; q++) {
            s0[q] = x[0] * x[2 + q];
            s1[q] = x[1] * x[2 + q];
        }
    }
    /* both at once: the product right behind the loads */
    __device__ __forceinline__ void at(int kb, float *s0, float *s1) const
    {
        float x[2 + SB];
        raw(kb, x);
        mul(x, s0, s1);
    }
};

/* One block of the pieced tile (PIECES even, alternating pa / pb; piece 0 of this block is in
 * flight in pa on entry): pieces 1.. of the block are issued before the piece ahead of them is
 * promoted, and piece 0 of the next block (NEXT) before the block's last piece is. Inside the
 * block the wait is for every group (RF_FP8_PIECE_WAIT 0): waiting for all but one there, ptxas
 * serialised every wgmma of the kernel (C7514), on m64n96 and m64n64 pieces alike; across
 * blocks one group stays in flight. */
#ifndef RF_FP8_PIECE_WAIT
#define RF_FP8_PIECE_WAIT 0
#endif
template <int CL, int BN, int WGS, bool NEXT, typename Cursor>
__device__ __forceinline__ void h_block_pieces(float *acc, float *pa, float *pb, uint8_t *smem,
                                               uint64_t *full, uint64_t *empty, Cursor &c, int wg,
                                               int lane, const float *s0, const float *s1)
{
    typedef h_cfg<BN, WGS> G;
    constexpr int W = G::W;
    int stage = c.s;
#pragma unroll
    for (int p = 0; p + 1 < G::PIECES; p++) {
        h_issue<BN, WGS, W, false>((p + 1) & 1 ? pb : pa, smem, full, c, wg, p + 1);
        h_wait_group<RF_FP8_PIECE_WAIT>();
        h_retire<CL, W, G::SB, false>(acc + p * W / 2, p & 1 ? pb : pa, empty, stage, lane, s0, s1,
                                      p * W);
    }
    c.next();
    if (NEXT) {
        h_issue<BN, WGS, W, true>(pa, smem, full, c, wg, 0);
        h_wait_group<1>();
    } else {
        h_wait_group<0>();
    }
    constexpr int LAST = G::PIECES - 1;
    h_retire<CL, W, G::SB, true>(acc + LAST * W / 2, pb, empty, stage, lane, s0, s1, LAST * W);
}

/* One block of the one-partial pipeline: issue it; LOAD, load block `ahead`'s raw scales into
 * nxt while it runs; wait for it; promote it with cur's (loaded while the block before ran). */
template <int CL, int BN, int WGS, bool LOAD, typename Cursor, typename Scales>
__device__ __forceinline__ void
h_block_one(float *acc, float *part, uint8_t *smem, uint64_t *full, uint64_t *empty, Cursor &c,
            int wg, int lane, const Scales &sc, const float *cur, float *nxt, int ahead)
{
    constexpr int W = h_cfg<BN, WGS>::W, SB = h_cfg<BN, WGS>::SB;
    int stage = c.s;
    h_issue<BN, WGS, W, true>(part, smem, full, c, wg, 0);
    c.next();
    if (LOAD)
        sc.raw(ahead, nxt);
    h_wait_group<0>();
    float s0[SB], s1[SB];
    Scales::mul(cur, s0, s1);
    h_retire<CL, W, SB, true>(acc, part, empty, stage, lane, s0, s1, 0);
}

/* The scales of the 256-row tile's thread: its four rows (g and g + 8 of each slice, from r0)
 * and the tile's B scale row (BN 128: one per block). Addresses are made at each load from the
 * kernel's arguments rather than kept: the two slices' accumulators and the partial leave few
 * registers. */
struct h_scales_slices {
    const h_args *a;
    int r0, n0;
    /* the raw scales of block kb: x[0..3] the rows', x[4] B's */
    __device__ __forceinline__ void raw(int kb, float *x) const
    {
#pragma unroll
        for (int i = 0; i < 4; i++)
            x[i] = __ldg(h_scale_a_row(*a, r0 + (i & 1) * 8 + (i >> 1) * 64) + kb);
        x[4] = __ldg(h_scale_b_row(*a, n0) + kb);
    }
};

/* One block of the 256-row tile (two slices per warpgroup): slice, then slice + 1, through the
 * one partial (two slices' accumulators and a second partial would not fit 232 registers); the
 * other warpgroup's wgmma run while a slice is promoted. x holds this block's raw scales on
 * entry; LOAD: block `ahead`'s are loaded into it while the second slice runs. */
template <int CL, int BN, int WGS, bool LOAD, typename Cursor>
__device__ __forceinline__ void h_block_slices(float *acc0, float *acc1, float *part, uint8_t *smem,
                                               uint64_t *full, uint64_t *empty, Cursor &c,
                                               int slice, int lane, const h_scales_slices &sc,
                                               float *x, int ahead)
{
    constexpr int W = h_cfg<BN, WGS>::W;
    static_assert(h_cfg<BN, WGS>::SB == 1, "one B scale per block");
    int stage = c.s;
    h_issue<BN, WGS, W, true>(part, smem, full, c, slice, 0);
    h_wait_group<0>();
    float s0 = x[0] * x[4], s1 = x[1] * x[4];
    /* each promotion in a branch of its own (kblocks > 0 always holds here; ptxas cannot know):
     * in straight-line code ptxas interleaves the two slices' promotions with the wgmma around
     * them and spills (192 bytes) */
    if (sc.a->kblocks > 0)
        h_retire<CL, W, 1, false>(acc0, part, empty, stage, lane, &s0, &s1, 0);
    float t0 = x[2] * x[4], t1 = x[3] * x[4];
    h_issue<BN, WGS, W, false>(part, smem, full, c, slice + 1, 0);
    c.next();
    if (LOAD)
        sc.raw(ahead, x);
    h_wait_group<0>();
    if (sc.a->kblocks > 0)
        h_retire<CL, W, 1, true>(acc1, part, empty, stage, lane, &t0, &t1, 0);
}

/* PP (h_cfg: RF_FP8_PINGPONG with two consumer warpgroups, 0 with three) for tiles of one
 * piece: 2, a steady pipeline of two partials; 1, two partials in pairs of blocks; both let a
 * block's wgmma run while the one before is promoted. 0: one partial, waited for each block
 * (the other warpgroups' wgmma fill the gap). Tiles of several pieces run their steady pipeline
 * over the pieces. */
template <int CL, int BN, int WGS>
__device__ __forceinline__ void h_consume(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                          const h_args &a, const CUtensorMap *tmc)
{
    typedef h_cfg<BN, WGS> G;
    constexpr int W = G::W, SB = G::SB, PP = G::PP;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    int g = lane >> 2, t = lane & 3;
    h_cursor<G::STAGES> c = {0, 0};
    float pa[W / 2], pb[W / 2]; /* written whole by each block's first wgmma */
    const int rank = (int)(blockIdx.x % CL);
    for (int u = blockIdx.x / CL; u < a.tiles_m * a.units_n; u += gridDim.x / CL) {
        int m0, n0;
        h_tile<CL, BN, WGS>(a, u, rank, &m0, &n0);
        /* this thread's two rows of the m64 accumulator layout: g and g + 8 of its warp's 16,
         * in the warpgroup's first slice (the second's are 64 rows further) */
        int slice = wg * G::SLICES;
        int r0 = m0 + slice * 64 + (warp & 3) * 16 + g, r1 = r0 + 8;
        /* rows past M read row M - 1's scales: their outputs are never stored; a cluster's
         * last tile may lie past N (odd tiles_n), and a wide tile's last chunks too: they run
         * on zeros (the last block's scales) and store nothing */
        h_scales<SB> sc;
        sc.a0 = h_scale_a_row(a, r0);
        sc.a1 = h_scale_a_row(a, r1);
#pragma unroll
        for (int q = 0; q < SB; q++)
            sc.b[q] = h_scale_b_row(a, n0 + q * 64);
        float acc[BN / 2], acc1[G::SLICES == 2 ? BN / 2 : 1];
#pragma unroll
        for (int i = 0; i < BN / 2; i++)
            acc[i] = 0.0f;
        if constexpr (G::SLICES == 2) {
            h_scales_slices ss = {&a, r0, n0};
#pragma unroll
            for (int i = 0; i < BN / 2; i++)
                acc1[i] = 0.0f;
            float x[5];
            ss.raw(0, x);
            int kb = 0;
            for (; kb + 1 < a.kblocks; kb++)
                h_block_slices<CL, BN, WGS, true>(acc, acc1, pa, smem, full, empty, c, slice, lane,
                                                  ss, x, kb + 1);
            h_block_slices<CL, BN, WGS, false>(acc, acc1, pa, smem, full, empty, c, slice, lane, ss,
                                               x, kb);
        } else if (G::PIECES > 1) {
            float s0[SB], s1[SB];
            h_issue<BN, WGS, W, true>(pa, smem, full, c, wg, 0);
            int kb = 0;
            for (; kb + 1 < a.kblocks; kb++) {
                sc.at(kb, s0, s1);
                h_block_pieces<CL, BN, WGS, true>(acc, pa, pb, smem, full, empty, c, wg, lane, s0,
                                                  s1);
            }
            sc.at(kb, s0, s1);
            h_block_pieces<CL, BN, WGS, false>(acc, pa, pb, smem, full, empty, c, wg, lane, s0, s1);
        } else if (PP == 2) {
            /* a steady pipeline: block kb + 1's wgmma are issued before block kb is promoted,
             * so one of this warpgroup's groups is always in flight; pa carries a block in
             * flight across the loop's back edge */
            float pa0[SB], pa1[SB];
            sc.at(0, pa0, pa1);
            int sa_stage = c.s;
            h_issue<BN, WGS, W, true>(pa, smem, full, c, wg, 0);
            c.next();
            int kb = 1;
            for (; kb + 1 < a.kblocks; kb += 2) {
                float b0[SB], b1[SB];
                sc.at(kb, b0, b1);
                int sb_stage = c.s;
                h_issue<BN, WGS, W, true>(pb, smem, full, c, wg, 0);
                c.next();
                h_wait_group<1>();
                h_retire<CL, W, SB, true>(acc, pa, empty, sa_stage, lane, pa0, pa1, 0);
                sc.at(kb + 1, pa0, pa1);
                sa_stage = c.s;
                h_issue<BN, WGS, W, true>(pa, smem, full, c, wg, 0);
                c.next();
                h_wait_group<1>();
                h_retire<CL, W, SB, true>(acc, pb, empty, sb_stage, lane, b0, b1, 0);
            }
            if (kb < a.kblocks) {
                float b0[SB], b1[SB];
                sc.at(kb, b0, b1);
                int sb_stage = c.s;
                h_issue<BN, WGS, W, true>(pb, smem, full, c, wg, 0);
                c.next();
                h_wait_group<1>();
                h_retire<CL, W, SB, true>(acc, pa, empty, sa_stage, lane, pa0, pa1, 0);
                h_wait_group<0>();
                h_retire<CL, W, SB, true>(acc, pb, empty, sb_stage, lane, b0, b1, 0);
            } else {
                h_wait_group<0>();
                h_retire<CL, W, SB, true>(acc, pa, empty, sa_stage, lane, pa0, pa1, 0);
            }
        } else if (PP == 1) {
            /* pairs of blocks: the second block's wgmma run while the first is promoted. No
             * partial is in flight across a branch or the loop's back edge, so the compiler
             * has no reason to move one while a wgmma writes it (it would serialise them). */
            for (int kb = 0; kb < a.kblocks; kb += 2) {
                float a0[SB], a1[SB];
                sc.at(kb, a0, a1); /* loads under the wgmma */
                int first = c.s;
                h_issue<BN, WGS, W, true>(pa, smem, full, c, wg, 0);
                c.next();
                if (kb + 1 < a.kblocks) {
                    float b0[SB], b1[SB];
                    sc.at(kb + 1, b0, b1);
                    int second = c.s;
                    h_issue<BN, WGS, W, true>(pb, smem, full, c, wg, 0);
                    c.next();
                    h_wait_group<1>();
                    h_retire<CL, W, SB, true>(acc, pa, empty, first, lane, a0, a1, 0);
                    h_wait_group<0>();
                    h_retire<CL, W, SB, true>(acc, pb, empty, second, lane, b0, b1, 0);
                } else {
                    h_wait_group<0>();
                    h_retire<CL, W, SB, true>(acc, pa, empty, first, lane, a0, a1, 0);
                }
            }
        } else {
            /* a block's scales are loaded while the block before it runs and multiplied at its
             * promotion (loaded in front of its wgmma, their latency stalled every issue); two
             * blocks per trip, so they change registers without a copy, which waited for the
             * loads (ncu: 39% of the stall samples on that IMAD; 0.90 -> 1.02 at 8192^3) */
            float x[2 + SB], y[2 + SB];
            sc.raw(0, x);
            int kb = 0;
            for (; kb + 1 < a.kblocks; kb += 2) {
                h_block_one<CL, BN, WGS, true>(acc, pa, smem, full, empty, c, wg, lane, sc, x, y,
                                               kb + 1);
                h_block_one<CL, BN, WGS, true>(acc, pa, smem, full, empty, c, wg, lane, sc, y, x,
                                               kb + 2 < a.kblocks ? kb + 2 : kb + 1);
            }
            if (kb < a.kblocks)
                h_block_one<CL, BN, WGS, false>(acc, pa, smem, full, empty, c, wg, lane, sc, x, y,
                                                kb);
        }
        uint8_t *c_stage = smem + G::STAGES * G::STAGE_BYTES + wg * G::C_WG;
        if (a.tma_store)
            wg_store_tile_tma<kb_bf16_tag, BN>(acc, 1.0f, c_stage, tmc, m0 + slice * 64, n0,
                                               1 + wg);
        else
            h_epilogue_direct<BN>(acc, a, r0, r1, n0, t);
        /* the second slice through the same staging, once the copy engine has read the first */
        if constexpr (G::SLICES == 2) {
            if (a.tma_store)
                wg_store_tile_tma<kb_bf16_tag, BN>(acc1, 1.0f, c_stage, tmc, m0 + slice * 64 + 64,
                                                   n0, 1 + wg);
            else
                h_epilogue_direct<BN>(acc1, a, r0 + 64, r1 + 64, n0, t);
        }
    }
    if (a.tma_store)
        wg_store_drain();
}
#endif

template <int CL, int BN, int WGS>
__global__ __launch_bounds__(h_cfg<BN, WGS>::THREADS,
                             1) void gemm_fp8_wgmma(const h_args a,
                                                    const __grid_constant__ CUtensorMap tma,
                                                    const __grid_constant__ CUtensorMap tmb,
                                                    const __grid_constant__ CUtensorMap tmc)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef h_cfg<BN, WGS> G;
    extern __shared__ __align__(1024) uint8_t h_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)h_smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + G::STAGES * G::STAGE_BYTES + G::C_BYTES);
    uint64_t *empty = full + G::STAGES;
    if (threadIdx.x == 0) {
        for (int s = 0; s < G::STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], G::CONSUMER_WARPS * CL);
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
    if (threadIdx.x >= G::CONSUMER_WARPS * 32) {
        /* the producer warpgroup needs few registers: give them to the consumers */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(G::PRODUCER_REGS) : "memory");
        if (threadIdx.x == G::CONSUMER_WARPS * 32)
            h_produce<CL, BN, WGS>(smem, full, empty, a, &tma, &tmb);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(G::CONSUMER_REGS) : "memory");
        h_consume<CL, BN, WGS>(smem, full, empty, a, &tmc);
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

template <int CL, int BN, int WGS>
static int launch_wgmma_cl(const h_args &a, const CUtensorMap &ma, const CUtensorMap &mb,
                           const CUtensorMap &mc, kb_stream_t stream)
{
    typedef h_cfg<BN, WGS> G;
    auto kernel = gemm_fp8_wgmma<CL, BN, WGS>;
    if (kb_gpu_func_set_max_dyn_smem(kernel, G::SMEM_BYTES) != kb_gpu_success)
        return KBPKG_KERNEL_ELAUNCH;
    long long blocks = (long long)a.tiles_m * a.units_n * CL;
    int resident = rf::sm_count() / CL * CL; /* one block per SM, whole clusters */
    cluster_launch l;
    cluster_launch_init(&l, CL, (unsigned)resident, G::THREADS, G::SMEM_BYTES, stream);
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

template <int BN, int WGS>
static int launch_wgmma_bn(h_args a, const uint8_t *A, const uint8_t *B, int M, int N, int K,
                           kb_stream_t stream)
{
    static_assert(WGS == 2 || BN == 128, "three warpgroups keep one 128-column partial");
    constexpr int BM = h_cfg<BN, WGS>::BM;
    a.tiles_m = (M + BM - 1) / BM;
    a.tiles_n = (N + BN - 1) / BN;
    if ((long long)a.tiles_m * a.tiles_n > 0x3fffffffLL)
        return KBPKG_KERNEL_EINVAL;
    /* pairs of blocks share A when there are two N tiles to pair */
    const int cl = RF_FP8_CLUSTER > 1 && a.tiles_n > 1 ? 2 : 1;
    a.units_n = (a.tiles_n + cl - 1) / cl;
    CUtensorMap ma, mb;
    if (!rf::make_tensor_map_128b(&ma, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, A, M, K, K, BM / cl) ||
        !rf::make_tensor_map_128b(&mb, CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, B, N, K, K, BN))
        return KBPKG_KERNEL_EUNSUPPORTED;
    /* TMA stores need 16-byte aligned rows of C; otherwise plain stores from registers */
    CUtensorMap mc = ma; /* unused unless tma_store */
    a.tma_store =
        RF_FP8_TMA_STORE && ((uintptr_t)a.C & 15) == 0 && N % 8 == 0 &&
        rf::make_tensor_map_128b(&mc, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, a.C, M, N, N, 64);
    return cl == 2 ? launch_wgmma_cl<2, BN, WGS>(a, ma, mb, mc, stream)
                   : launch_wgmma_cl<1, BN, WGS>(a, ma, mb, mc, stream);
}

/* The tile height, as 64-row slices (2, 3 or 4: 128, 192 or 256 rows), by the rounds of tiles
 * the persistent grid runs, in rows, each height's weighted by what a row of it is worth. 192-row
 * tiles (three consumer warpgroups) stream 0.83x the operand bytes per flop of 128-row ones and
 * promote each block with one partial while the other two warpgroups' wgmma run; on an H100
 * (docs/perf.md "FP8, fifth pass") they ran 1.02-1.12x faster than 128-row tiles where the
 * rounds in rows come out about the same (8192^3, 6144x6144x4096, 16384x7168x2048,
 * 2048x2112x7168, 4096x24576x1536), 0.99-1.05x at 1.07x the rows (4096x7168x2048,
 * 2048x7168x2048), 0.94x at 1.125x (4096^3) and 0.70-0.90x with one tile row (64 and 128 rows):
 * weight 1.08. 256-row tiles (two warpgroups of two slices, one partial each: 0.90x the bytes
 * per flop of 192 rows) ran 0.94-1.02x of 192-row tiles at equal rounds in rows and 1.04-1.07x
 * of 128-row tiles at 4096^3 (two H100 runs, "FP8, seventh pass"): weight 1.04. Ties go to 192,
 * then 128 rows. With 256 rows the rule ran 1.01-1.12x faster at the 10 of 20 timed shapes
 * where it takes them, 0.97-1.02x elsewhere (the same kernels). */
constexpr int H_ROW_WEIGHT[3] = {100, 108, 104}; /* 128, 192, 256 rows, in hundredths */
[[maybe_unused]] static int h_row_slices(int M, int N, int sms)
{
    long long tiles_n = (N + 127) / 128;
    /* the rounds of bm-row tiles the persistent grid runs, in rows */
    auto rows_in_rounds = [&](long long bm) {
        return ((M + bm - 1) / bm * tiles_n + sms - 1) / sms * bm;
    };
    /* whether s slices cost no more (strictly less: less) than t slices */
    auto cheaper = [&](int s, int t, bool strictly) {
        long long cs = rows_in_rounds(64 * s) * H_ROW_WEIGHT[t - 2];
        long long ct = rows_in_rounds(64 * t) * H_ROW_WEIGHT[s - 2];
        return strictly ? cs < ct : cs <= ct;
    };
    int best = cheaper(3, 2, false) ? 3 : 2;
    return cheaper(4, best, true) ? 4 : best;
}

/* KBPKG_KERNEL_EUNSUPPORTED when this build or driver cannot run it, or the operands are not
 * 16-byte aligned (TMA's rule); the caller then takes the portable kernel. */
static int launch_wgmma(int M, int N, int K, const uint8_t *A, const float *sa, const uint8_t *B,
                        const float *sb, uint16_t *C, kb_stream_t stream)
{
    if (!rf::kTargetIsSm90a || ((uintptr_t)A & 15) || ((uintptr_t)B & 15))
        return KBPKG_KERNEL_EUNSUPPORTED;
    static const bool usable = rf::kernel_code_at_least(gemm_fp8_wgmma<1, 128, 2>, 90);
    if (!usable)
        return KBPKG_KERNEL_EUNSUPPORTED;
    h_args a;
    a.M = M;
    a.N = N;
    a.kblocks = K / RF_FP8_BLOCK;
    a.scale_a = sa;
    a.scale_b = sb;
    a.C = C;
    a.c_pairs = ((uintptr_t)C & 3) == 0 && (N & 1) == 0;
#if RF_FP8_BN == 192
    return launch_wgmma_bn<192, 2>(a, A, B, M, N, K, stream);
#else
    int slices = RF_FP8_WGS ? RF_FP8_WGS : h_row_slices(M, N, rf::sm_count());
    return slices == 4   ? launch_wgmma_bn<128, 4>(a, A, B, M, N, K, stream)
           : slices == 3 ? launch_wgmma_bn<128, 3>(a, A, B, M, N, K, stream)
                         : launch_wgmma_bn<128, 2>(a, A, B, M, N, K, stream);
#endif
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
