/* radeonflow/gemm on GPUs: mma.sync tensor-core kernel (CUDA sm_80+), SIMT tiled kernel (fp32,
 * AMD). */
#include "gemm_cpu.h"

#include <stdint.h>
#include <stdlib.h>

#include <atomic>
#include <mutex>

#include "kb_gpu_compat.h"
#if defined(KB_GPU_CUDA)
#include <cuda.h> /* CUtensorMap and its enums; the driver itself is reached through cudart */
#endif
#include <kbpkg/kernel_abi.h>
#include "rf_gemm.h"
#include "mma_common.cuh"
#include "sm90.cuh"

namespace rf
{

/* ---- SIMT tiled kernel: 128x128 tile, BK 8, 256 threads, 8x8 outputs per thread ---- */
constexpr int SIMT_BM = 128, SIMT_BN = 128, SIMT_BK = 8, SIMT_THREADS = 256;

/* Raster tiles in groups of GROUP_M tile rows so neighbouring blocks share A and B in L2. */
constexpr int GROUP_M = 8;

__device__ __forceinline__ void tile_coords(int tiles_m, int tiles_n, int *tm, int *tn)
{
    int pid = blockIdx.x;
    int per_group = GROUP_M * tiles_n;
    int group = pid / per_group;
    int first_m = group * GROUP_M;
    int rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
    int in_group = pid % per_group;
    *tm = first_m + in_group % rows;
    *tn = in_group / rows;
}

template <typename T>
__global__
__launch_bounds__(SIMT_THREADS) void gemm_simt(int M, int N, int K, float alpha,
                                               const typename kb_type<T>::storage *A, int lda,
                                               const typename kb_type<T>::storage *B, int ldb,
                                               float beta, typename kb_type<T>::storage *C, int ldc)
{
    /* A is stored transposed (k-major) so both operands are read as rows of the tile. */
    __shared__ float As[SIMT_BK][SIMT_BM + 4];
    __shared__ float Bs[SIMT_BK][SIMT_BN + 4];
    int tiles_m = (M + SIMT_BM - 1) / SIMT_BM, tiles_n = (N + SIMT_BN - 1) / SIMT_BN;
    int tm, tn;
    tile_coords(tiles_m, tiles_n, &tm, &tn);
    int m0 = tm * SIMT_BM, n0 = tn * SIMT_BN;
    int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;

    float acc[8][8];
#pragma unroll
    for (int i = 0; i < 8; i++)
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc[i][j] = 0.0f;

    float ra[4], rb[4];
    auto fetch = [&](int k0) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int idx = tid + i * SIMT_THREADS;
            int r = idx / SIMT_BK, c = idx % SIMT_BK;
            int gm = m0 + r, gk = k0 + c;
            ra[i] = (gm < M && gk < K) ? kb_type<T>::load(A[(size_t)gm * lda + gk]) : 0.0f;
            int br = idx / SIMT_BN, bc = idx % SIMT_BN;
            int bk = k0 + br, bn = n0 + bc;
            rb[i] = (bk < K && bn < N) ? kb_type<T>::load(B[(size_t)bk * ldb + bn]) : 0.0f;
        }
    };
    auto stash = [&]() {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int idx = tid + i * SIMT_THREADS;
            As[idx % SIMT_BK][idx / SIMT_BK] = ra[i];
            Bs[idx / SIMT_BN][idx % SIMT_BN] = rb[i];
        }
    };

    fetch(0);
    for (int k0 = 0; k0 < K; k0 += SIMT_BK) {
        __syncthreads();
        stash();
        __syncthreads();
        if (k0 + SIMT_BK < K) /* the next tile's loads overlap this tile's math */
            fetch(k0 + SIMT_BK);
#pragma unroll
        for (int k = 0; k < SIMT_BK; k++) {
            float a[8], b[8];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                a[i] = As[k][ty * 4 + i];
                a[i + 4] = As[k][64 + ty * 4 + i];
                b[i] = Bs[k][tx * 4 + i];
                b[i + 4] = Bs[k][64 + tx * 4 + i];
            }
#pragma unroll
            for (int i = 0; i < 8; i++)
#pragma unroll
                for (int j = 0; j < 8; j++)
                    acc[i][j] += a[i] * b[j];
        }
    }

#pragma unroll
    for (int i = 0; i < 8; i++) {
        int gm = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
        if (gm >= M)
            continue;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int gn = n0 + (j < 4 ? tx * 4 + j : 64 + tx * 4 + j - 4);
            if (gn >= N)
                continue;
            size_t ci = (size_t)gm * ldc + gn;
            float v = alpha * acc[i][j];
            if (beta != 0.0f)
                v += beta * kb_type<T>::load(C[ci]);
            C[ci] = kb_type<T>::store(v);
        }
    }
}

template <typename T>
static int launch_simt(int M, int N, int K, float alpha, const typename kb_type<T>::storage *A,
                       int lda, const typename kb_type<T>::storage *B, int ldb, float beta,
                       typename kb_type<T>::storage *C, int ldc, kb_stream_t stream)
{
    long long tiles = (long long)((M + SIMT_BM - 1) / SIMT_BM) * ((N + SIMT_BN - 1) / SIMT_BN);
    if (tiles > 0x7fffffffLL)
        return KBPKG_KERNEL_EINVAL;
    gemm_simt<T><<<(unsigned)tiles, SIMT_THREADS, 0, stream>>>(M, N, K, alpha, A, lda, B, ldb, beta,
                                                               C, ldc);
    return kb_gpu_launch_status();
}

#if defined(KB_GPU_CUDA)
/* The widest load, in elements (8, 4, 2 or 1), that starts every 8-element chunk of a 16-bit
 * operand's rows (chunks at multiples of 8 columns): the alignment its base and its leading
 * dimension leave every row. */
static inline int row_load_width(const uint16_t *p, int ld)
{
    for (int w = 8; w > 1; w /= 2)
        if (((uintptr_t)p & (2 * w - 1)) == 0 && (ld & (w - 1)) == 0)
            return w;
    return 1;
}

/* A 16-bit operand's rows all start on 16 bytes (its base and its leading dimension): what
 * 16-byte cp.async, the copy engine's tensor maps and the vector loads below need. */
static inline bool rows_aligned16(const uint16_t *p, int ld)
{
    return row_load_width(p, ld) == 8;
}

/* Elements [0, 8) at s in loads of W elements (row_load_width's, narrower than 8: aligned rows
 * take their callers' own 16-byte loads), through the read-only path: the narrow loads of one
 * chunk share its lines in L1. */
template <int W> __device__ __forceinline__ uint4 load_chunk_w(const uint16_t *s)
{
    static_assert(W == 4 || W == 2 || W == 1, "16-byte loads are the callers' own");
    union {
        uint4 v;
        uint2 d[2];
        uint32_t w[4];
        uint16_t h[8];
    } u;
    if (W == 4) {
#pragma unroll
        for (int k = 0; k < 2; k++)
            u.d[k] = __ldg(reinterpret_cast<const uint2 *>(s) + k);
    } else if (W == 2) {
#pragma unroll
        for (int k = 0; k < 4; k++)
            u.w[k] = __ldg(reinterpret_cast<const unsigned int *>(s) + k);
    } else {
#pragma unroll
        for (int k = 0; k < 8; k++)
            u.h[k] = __ldg(reinterpret_cast<const unsigned short *>(s) + k);
    }
    return u.v;
}

/* ---- tensor-core kernel: mma.sync m16n8k16 + cp.async + ldmatrix, BK 32 or 64, 8 warps (2 x 4)
 * ---- */
constexpr int MMA_THREADS = 256;

/*
 * Shared memory per stage: A as BM rows x BK halves (BK/8 chunks of 16 bytes; chunk swizzled
 * by (row>>1)&3 for BK 32, by row&7 for BK 64) and B as BK rows x BN halves (BN/8 chunks,
 * swizzled by row&7). The swizzles make the 8 row addresses of every ldmatrix phase hit 8
 * distinct 16-byte bank groups.
 */
template <int BK> __device__ __forceinline__ int a_off(int row, int chunk)
{
    return BK == 32 ? row * BK + ((chunk ^ ((row >> 1) & 3)) << 3)
                    : row * BK + ((chunk ^ (row & 7)) << 3);
}
template <int BN> __device__ __forceinline__ int b_off(int row, int chunk)
{
    return row * BN + ((chunk ^ (row & 7)) << 3);
}

/* Reads 8 consecutive halves [col, col+8) of a row with bounds checks (unaligned operands). */
__device__ __forceinline__ uint4 load_chunk_scalar(const uint16_t *row, int col, int limit)
{
    uint16_t h[8];
#pragma unroll
    for (int i = 0; i < 8; i++)
        h[i] = (col + i < limit) ? row[col + i] : (uint16_t)0;
    uint4 v;
    v.x = h[0] | ((uint32_t)h[1] << 16);
    v.y = h[2] | ((uint32_t)h[3] << 16);
    v.z = h[4] | ((uint32_t)h[5] << 16);
    v.w = h[6] | ((uint32_t)h[7] << 16);
    return v;
}

template <int BM, int BN, int BK, bool AVEC, bool BVEC>
__device__ __forceinline__ void load_stage(uint16_t *sa, uint16_t *sb, const uint16_t *A, int lda,
                                           const uint16_t *B, int ldb, int M, int N, int K, int m0,
                                           int n0, int k0)
{
    int tid = threadIdx.x;
    constexpr int A_ROW_CHUNKS = BK / 8, A_CHUNKS = BM * A_ROW_CHUNKS;
#pragma unroll
    for (int c = tid; c < A_CHUNKS; c += MMA_THREADS) {
        int row = c / A_ROW_CHUNKS, ch = c % A_ROW_CHUNKS;
        int gm = m0 + row, gk = k0 + ch * 8;
        uint16_t *dst = sa + a_off<BK>(row, ch);
        if (AVEC) {
            int left = K - gk;
            int bytes = (gm < M && left > 0) ? (left >= 8 ? 16 : left * 2) : 0;
            const uint16_t *src = bytes ? A + (size_t)gm * lda + gk : A;
            cp_async_16(smem_addr(dst), src, bytes);
        } else {
            uint4 v = make_uint4(0, 0, 0, 0);
            if (gm < M)
                v = load_chunk_scalar(A + (size_t)gm * lda, gk, K);
            *reinterpret_cast<uint4 *>(dst) = v;
        }
    }
    constexpr int B_ROW_CHUNKS = BN / 8, B_CHUNKS = BK * B_ROW_CHUNKS;
#pragma unroll
    for (int c = tid; c < B_CHUNKS; c += MMA_THREADS) {
        int row = c / B_ROW_CHUNKS, ch = c % B_ROW_CHUNKS;
        int gk = k0 + row, gn = n0 + ch * 8;
        uint16_t *dst = sb + b_off<BN>(row, ch);
        if (BVEC) {
            int left = N - gn;
            int bytes = (gk < K && left > 0) ? (left >= 8 ? 16 : left * 2) : 0;
            const uint16_t *src = bytes ? B + (size_t)gk * ldb + gn : B;
            cp_async_16(smem_addr(dst), src, bytes);
        } else {
            uint4 v = make_uint4(0, 0, 0, 0);
            if (gk < K)
                v = load_chunk_scalar(B + (size_t)gk * ldb, gn, N);
            *reinterpret_cast<uint4 *>(dst) = v;
        }
    }
}

/* Stores the pair (v0, v1) at columns gn, gn + 1 of row crow (alpha/beta applied). */
template <typename T>
__device__ __forceinline__ void store_pair(uint16_t *crow, int gn, int N, float v0, float v1,
                                           float beta, bool c_pairs)
{
    if (c_pairs && gn + 1 < N) {
        uint32_t *p = reinterpret_cast<uint32_t *>(crow + gn);
        if (beta != 0.0f) {
            uint32_t old = *p;
            v0 += beta * kb_type<T>::load((uint16_t)(old & 0xffff));
            v1 += beta * kb_type<T>::load((uint16_t)(old >> 16));
        }
        *p = kb_type<T>::store2(v0, v1);
        return;
    }
    if (gn < N) {
        if (beta != 0.0f)
            v0 += beta * kb_type<T>::load(crow[gn]);
        crow[gn] = kb_type<T>::store(v0);
    }
    if (gn + 1 < N) {
        if (beta != 0.0f)
            v1 += beta * kb_type<T>::load(crow[gn + 1]);
        crow[gn + 1] = kb_type<T>::store(v1);
    }
}

template <int BM, int BN, int BK, int STAGES> struct mma_cfg {
    static constexpr int WTM = BM / 2, WTN = BN / 4; /* warps: 2 along M, 4 along N */
    static constexpr int MF = WTM / 16, NF = WTN / 8;
    static constexpr int STAGE_HALVES = BM * BK + BK * BN;
    static constexpr int SMEM_BYTES = STAGES * STAGE_HALVES * 2;
    /* two blocks per SM when their shared memory fits (227 KB) and registers allow */
    static constexpr int MIN_BLOCKS =
        (BM * BN <= 128 * 128 && 2 * SMEM_BYTES <= 227 * 1024) ? 2 : 1;
};

template <typename T, int BM, int BN, int BK, int STAGES, bool AVEC, bool BVEC>
__global__ __launch_bounds__(MMA_THREADS, (mma_cfg<BM, BN, BK, STAGES>::MIN_BLOCKS)) void gemm_mma(
    int M, int N, int K, float alpha, const uint16_t *__restrict__ A, int lda,
    const uint16_t *__restrict__ B, int ldb, float beta, uint16_t *C, int ldc, bool c_pairs)
{
    typedef mma_cfg<BM, BN, BK, STAGES> cfg;
    extern __shared__ __align__(128) uint16_t smem[];
    int tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;
    int tm, tn;
    tile_coords(tiles_m, tiles_n, &tm, &tn);
    int m0 = tm * BM, n0 = tn * BN;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int wm = warp >> 2, wn = warp & 3;

    float acc[cfg::MF][cfg::NF][4];
    zero_frags(acc);

    int ktiles = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles) {
            uint16_t *sa = smem + s * cfg::STAGE_HALVES;
            load_stage<BM, BN, BK, AVEC, BVEC>(sa, sa + BM * BK, A, lda, B, ldb, M, N, K, m0, n0,
                                               s * BK);
        }
        cp_async_commit();
    }

    for (int kt = 0; kt < ktiles; kt++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads(); /* stage kt is in; every warp is done with stage kt-1 */
        int next = kt + STAGES - 1;
        if (next < ktiles) {
            uint16_t *sa = smem + (next % STAGES) * cfg::STAGE_HALVES;
            load_stage<BM, BN, BK, AVEC, BVEC>(sa, sa + BM * BK, A, lda, B, ldb, M, N, K, m0, n0,
                                               next * BK);
        }
        cp_async_commit();

        const uint16_t *sa = smem + (kt % STAGES) * cfg::STAGE_HALVES;
        const uint16_t *sb = sa + BM * BK;
#pragma unroll
        for (int kk = 0; kk < BK; kk += 16) {
            uint32_t af[cfg::MF][4], bfr[cfg::NF][2];
#pragma unroll
            for (int i = 0; i < cfg::MF; i++) {
                int row = wm * cfg::WTM + i * 16 + (lane & 15);
                int ch = (kk >> 3) + (lane >> 4);
                ldmatrix_x4(af[i], smem_addr(sa + a_off<BK>(row, ch)));
            }
#pragma unroll
            for (int j = 0; j < cfg::NF; j += 2) {
                int krow = kk + (lane & 15);
                int ch = (wn * cfg::WTN + j * 8) / 8 + (lane >> 4);
                uint32_t r[4];
                ldmatrix_x4_trans(r, smem_addr(sb + b_off<BN>(krow, ch)));
                bfr[j][0] = r[0];
                bfr[j][1] = r[1];
                bfr[j + 1][0] = r[2];
                bfr[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < cfg::MF; i++)
#pragma unroll
                for (int j = 0; j < cfg::NF; j++)
                    mma_16816<T>(acc[i][j], af[i], bfr[j]);
        }
    }
    cp_async_wait<0>();

    /* Epilogue: the accumulator of lane (g = lane/4, t = lane%4) holds rows g, g+8 and
     * columns 2t, 2t+1 of each 16x8 fragment. */
    int g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int i = 0; i < cfg::MF; i++) {
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int gm = m0 + wm * cfg::WTM + i * 16 + g + half * 8;
            if (gm >= M)
                continue;
            uint16_t *crow = C + (size_t)gm * ldc;
#pragma unroll
            for (int j = 0; j < cfg::NF; j++) {
                int gn = n0 + wn * cfg::WTN + j * 8 + t * 2;
                store_pair<T>(crow, gn, N, alpha * acc[i][j][half * 2],
                              alpha * acc[i][j][half * 2 + 1], beta, c_pairs);
            }
        }
    }
}

template <typename T, int BM, int BN, int BK, int STAGES, bool AVEC, bool BVEC>
static int launch_mma_variant(int M, int N, int K, float alpha, const uint16_t *A, int lda,
                              const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                              kb_stream_t stream)
{
    typedef mma_cfg<BM, BN, BK, STAGES> cfg;
    auto kernel = gemm_mma<T, BM, BN, BK, STAGES, AVEC, BVEC>;
    if (kb_gpu_func_set_max_dyn_smem(kernel, cfg::SMEM_BYTES) != kb_gpu_success)
        return KBPKG_KERNEL_ELAUNCH;
    long long tiles = (long long)((M + BM - 1) / BM) * ((N + BN - 1) / BN);
    if (tiles > 0x7fffffffLL)
        return KBPKG_KERNEL_EINVAL;
    bool c_pairs = ((uintptr_t)C & 3) == 0 && (ldc & 1) == 0;
    kernel<<<(unsigned)tiles, MMA_THREADS, cfg::SMEM_BYTES, stream>>>(M, N, K, alpha, A, lda, B,
                                                                      ldb, beta, C, ldc, c_pairs);
    return kb_gpu_launch_status();
}

/* ---- sm_90a: wgmma (m64nBNk16) from 128B-swizzled shared memory, cp.async multistage ----
 * Block 128xBNx64, two warpgroups (each 64 rows x BN columns), 4 stages. A is K-major
 * (row-major A); B is MN-major (row-major B), read with the transpose-B flag. PIPE keeps one
 * wgmma group in flight while the next tile's is issued (loads then run 2 tiles ahead, not 3,
 * so a stage is never overwritten while a wgmma may still read it). Used by the exports in
 * builds for the sm_90a target (KBPKG_TARGET names sm_90a) when rows are 16-byte aligned. */
constexpr int WG_BM = 128, WG_BK = 64, WG_STAGES = 4;
template <int BN> struct wg_cfg {
    static constexpr int STAGE_BYTES = (WG_BM * WG_BK + WG_BK * BN) * 2;
    static constexpr int SMEM_BYTES = WG_STAGES * STAGE_BYTES + 1024; /* + room to align */
};

template <typename T, int BN>
__device__ __forceinline__ void wgmma_op(float *d, uint64_t da, uint64_t db);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
template <>
__device__ __forceinline__ void wgmma_op<kb_bf16_tag, 128>(float *d, uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " RF_WG_D64
                 ", %64, %65, p, 1, 1, 0, 1;\n}\n"
                 : RF_WG_ACC64("+f", d)
                 : "l"(da), "l"(db));
}
template <>
__device__ __forceinline__ void wgmma_op<kb_f16_tag, 128>(float *d, uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 " RF_WG_D64
                 ", %64, %65, p, 1, 1, 0, 1;\n}\n"
                 : RF_WG_ACC64("+f", d)
                 : "l"(da), "l"(db));
}
template <>
__device__ __forceinline__ void wgmma_op<kb_bf16_tag, 256>(float *d, uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " RF_WG_D128
                 ", %128, %129, p, 1, 1, 0, 1;\n}\n"
                 : RF_WG_ACC128("+f", d)
                 : "l"(da), "l"(db));
}
template <>
__device__ __forceinline__ void wgmma_op<kb_f16_tag, 256>(float *d, uint64_t da, uint64_t db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 " RF_WG_D128
                 ", %128, %129, p, 1, 1, 0, 1;\n}\n"
                 : RF_WG_ACC128("+f", d)
                 : "l"(da), "l"(db));
}
#else
template <typename T, int BN>
__device__ __forceinline__ void wgmma_op(float *d, uint64_t da, uint64_t db)
{
}
#endif

template <typename T, int BN, bool PIPE>
__global__ __launch_bounds__(256, 1) void gemm_wgmma(int M, int N, int K, float alpha,
                                                     const uint16_t *__restrict__ A, int lda,
                                                     const uint16_t *__restrict__ B, int ldb,
                                                     float beta, uint16_t *C, int ldc)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    typedef wg_cfg<BN> cfg;
    constexpr int AHEAD = PIPE ? WG_STAGES - 2 : WG_STAGES - 1; /* tiles loaded ahead */
    extern __shared__ __align__(128) uint8_t wg_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)wg_smem_raw + 1023) & ~(uintptr_t)1023);
    int tiles_m = (M + WG_BM - 1) / WG_BM, tiles_n = (N + BN - 1) / BN;
    int tm, tn;
    tile_coords(tiles_m, tiles_n, &tm, &tn);
    int m0 = tm * WG_BM, n0 = tn * BN;
    int tid = threadIdx.x, wg = tid >> 7, wtid = tid & 127;
    float d[BN / 2];
#pragma unroll
    for (int i = 0; i < BN / 2; i++)
        d[i] = 0.0f;

    /* A stage: 128 rows x 128 bytes, chunk ^= row&7. B stage: BN/64 blocks of 64 columns,
     * each 64 k-rows x 128 bytes, chunk ^= k&7. Each 8-row group is one 1024-byte atom. */
    auto load = [&](int stage, int k0) {
        uint8_t *sa = smem + stage * cfg::STAGE_BYTES, *sb = sa + WG_BM * WG_BK * 2;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int c = tid + i * 256;
            int row = c >> 3, ch = c & 7;
            int gm = m0 + row, gk = k0 + ch * 8, left = K - gk;
            int bytes = (gm < M && left > 0) ? (left >= 8 ? 16 : left * 2) : 0;
            cp_async_16(smem_addr(sa + row * 128 + ((ch ^ (row & 7)) << 4)),
                        bytes ? A + (size_t)gm * lda + gk : A, bytes);
        }
        constexpr int ROW_CHUNKS = BN / 8;
#pragma unroll
        for (int i = 0; i < WG_BK * ROW_CHUNKS / 256; i++) {
            int c = tid + i * 256;
            int k = c / ROW_CHUNKS, nch = c % ROW_CHUNKS, nb = nch >> 3, bch = nch & 7;
            int gkk = k0 + k, gn = n0 + nch * 8, nleft = N - gn;
            int bbytes = (gkk < K && nleft > 0) ? (nleft >= 8 ? 16 : nleft * 2) : 0;
            cp_async_16(smem_addr(sb + nb * 8192 + k * 128 + ((bch ^ (k & 7)) << 4)),
                        bbytes ? B + (size_t)gkk * ldb + gn : B, bbytes);
        }
    };

    int ktiles = (K + WG_BK - 1) / WG_BK;
#pragma unroll
    for (int s = 0; s < AHEAD; s++) {
        if (s < ktiles)
            load(s, s * WG_BK);
        cp_async_commit();
    }
    for (int kt = 0; kt < ktiles; kt++) {
        cp_async_wait<AHEAD - 1>();
        /* cp.async wrote through the generic proxy; wgmma reads through the async proxy */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        int next = kt + AHEAD;
        if (next < ktiles)
            load(next % WG_STAGES, next * WG_BK);
        cp_async_commit();
        uint32_t sa = smem_addr(smem + (kt % WG_STAGES) * cfg::STAGE_BYTES);
        uint32_t sb = sa + WG_BM * WG_BK * 2;
        asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
        for (int j = 0; j < WG_BK / 16; j++) {
            uint64_t da = wg_desc(sa + wg * 64 * 128 + j * 32, 16, 1024);
            uint64_t db = wg_desc(sb + j * 2048, 8192, 1024);
            wgmma_op<T, BN>(d, da, db);
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        if (PIPE)
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
        else
            asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    cp_async_wait<0>();

    /* The accumulator of m64nN: per 8 columns nn, lane (g, t) of warp w holds rows
     * 16w + g and 16w + g + 8, columns 2t and 2t + 1, as mma.sync's 16x8 fragment. */
    int warp = wtid >> 5, lane = wtid & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int nn = 0; nn < BN / 8; nn++) {
#pragma unroll
        for (int half = 0; half < 2; half++) {
            int gm = m0 + wg * 64 + warp * 16 + g + half * 8;
            int gn = n0 + nn * 8 + t * 2;
            if (gm >= M)
                continue;
            uint16_t *crow = C + (size_t)gm * ldc;
#pragma unroll
            for (int e = 0; e < 2; e++) {
                if (gn + e < N) {
                    float v = alpha * d[nn * 4 + half * 2 + e];
                    if (beta != 0.0f)
                        v += beta * kb_type<T>::load(crow[gn + e]);
                    crow[gn + e] = kb_type<T>::store(v);
                }
            }
        }
    }
#else
    __trap(); /* not an sm_90a build: launch_wgmma is only called from sm_90a builds */
#endif
}

/* Needs 16-byte aligned rows; returns KBPKG_KERNEL_EUNSUPPORTED otherwise. */
template <typename T, int BN, bool PIPE>
static int launch_wgmma(int M, int N, int K, float alpha, const uint16_t *A, int lda,
                        const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                        kb_stream_t stream)
{
    if (!rows_aligned16(A, lda) || !rows_aligned16(B, ldb))
        return KBPKG_KERNEL_EUNSUPPORTED;
    auto kernel = gemm_wgmma<T, BN, PIPE>;
    if (kb_gpu_func_set_max_dyn_smem(kernel, wg_cfg<BN>::SMEM_BYTES) != kb_gpu_success)
        return KBPKG_KERNEL_ELAUNCH;
    long long tiles = (long long)((M + WG_BM - 1) / WG_BM) * ((N + BN - 1) / BN);
    if (tiles > 0x7fffffffLL)
        return KBPKG_KERNEL_EINVAL;
    kernel<<<(unsigned)tiles, 256, wg_cfg<BN>::SMEM_BYTES, stream>>>(M, N, K, alpha, A, lda, B, ldb,
                                                                     beta, C, ldc);
    return kb_gpu_launch_status();
}

/* ---- sm_90 / sm_90a: TMA producer warp + mbarrier ring + persistent grid ----
 * Block tile BM x BN x 64 (ts_cfg: BM 64 or 128, BN 128 or 256), as many 128B-swizzled stages
 * as fit in shared memory, CTAS blocks per SM. The last warp is the producer: one lane issues
 * the bulk tensor copies (cp.async.bulk.tensor, plain sm_90) for each stage and arms its "full"
 * barrier with the byte count. The BM/16 warps before it consume: on sm_90a BM/64 warpgroups
 * of wgmma m64nBNk16 (64 rows each), on plain sm_90 mma.sync warps (64 x BN/4 each) fed by
 * ldmatrix. Each consumer warp releases a stage on its "empty" barrier once nothing reads it
 * any more. The grid is persistent (CTAS blocks per SM walk the tiles), so the producer loads
 * the next tile while the consumers run the epilogue; with two blocks per SM one block's
 * epilogue also overlaps the other's math. Shared layout is what the TMA 128-byte swizzle
 * writes: A as BM rows x 128 bytes, B as BN/64 blocks of 64 columns, each 64 k-rows x 128
 * bytes; the 16-byte chunk c of row r sits at chunk c ^ (r & 7). That is the layout the
 * cp.async wgmma kernel above builds by hand, so the wgmma descriptors are the same.
 * Epilogue: with EPI > 0 (wgmma consumers), when beta == 0, unsplit and C has 16-byte rows,
 * each warpgroup stages its 64 x BN outputs in shared memory, EPI columns at a time, and the
 * copy engine stores them (wg_store_tile_tma) while the next tile's main loop runs; whole
 * 32-byte sectors instead of 4-byte stores that fill half of each. Otherwise, and with EPI 0,
 * every thread stores its pairs from registers (ts_emit).
 * Clusters (ts_cfg CLM x CLN, wgmma only): CLM blocks stacked along M and CLN side by side
 * along N take one unit of CLM x CLN tiles. Blocks of one column share B: each loads 1 / CLM of
 * the B boxes, multicast into the column; blocks of one row share A: each loads 1 / CLN of the A
 * box's rows, multicast into the row. So B crosses L2 -> SM once per column of the cluster and A
 * once per row; a stage is refilled only when every block of the cluster released it. */
constexpr int TS_BK = 64;
/* Columns each warpgroup stages per round on sm_90a: 256 stages a whole 128 x 256 tile (64 KB,
 * one stage fewer), 128 half of it at a time, 0 turns the staging off (bench/gpu/gemm_shapes.cu
 * times the three side by side). */
#ifndef RF_GEMM_EPI_COLS
#define RF_GEMM_EPI_COLS 256
#endif
template <int BM_, int BN_, int CTAS_, int EPI_, int CLM_ = 1, int CLN_ = 1> struct ts_cfg {
    static constexpr int BM = BM_, BN = BN_, CTAS = CTAS_;
    /* a cluster: CLM blocks along M sharing B (each loads BN / 64 / CLM of the B boxes into
     * every block of its column), CLN along N sharing A (each loads BM / CLN of the A rows into
     * every block of its row); CL blocks in all, rank r at (r % CLM, r / CLM) */
    static constexpr int CLM = CLM_, CLN = CLN_, CL = CLM * CLN;
    static_assert((CLM == 1 || CLM == 2) && (CLN == 1 || CLN == 2), "clusters of up to 2 x 2");
    static_assert((BN / 64) % CLM == 0, "whole B boxes per block");
    static_assert((BM / CLN) % 8 == 0, "A slices of whole 1024-byte swizzle atoms");
    static constexpr int CONSUMER_WARPS = BM / 16, THREADS = CONSUMER_WARPS * 32 + 32;
    static constexpr int A_BYTES = BM * TS_BK * 2, B_BYTES = TS_BK * BN * 2;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    /* columns staged per round (0: no staging) and the staging of all warpgroups */
    static constexpr int EPI = EPI_ < BN ? EPI_ : BN; /* callers clamp already */
    static constexpr int C_BYTES = BM * EPI * 2;
    /* as many stages as fit in the SM's 227 KB shared among CTAS blocks (each keeps 1 KB to
     * align to the swizzle atom and 1 KB the system reserves) next to the staging, at most 8 */
    static constexpr int FIT = (227 * 1024 / CTAS - 2048 - 256 - C_BYTES) / STAGE_BYTES;
    static constexpr int STAGES = FIT < 8 ? FIT : 8;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + C_BYTES + 1024 + 2 * STAGES * 8;
    static_assert(EPI % 64 == 0 && BN % (EPI ? EPI : 1) == 0, "whole boxes, whole rounds");
};

/* What one launch of gemm_tma computes. With splits > 1 the K range of every tile is cut into
 * `splits` parts ("split-K", for shapes with fewer tiles than SMs); part s writes its fp32
 * partial sums, alpha applied, to ws[s][M][ldw] and gemm_tma_reduce adds them into C.
 * With stream_per > 0 ("stream-K") the k-tiles of the first stream_units units, one unit
 * after the other, are dealt out to the blocks (clusters) in runs of stream_per, so every
 * block has the same work whatever the number of tiles: a run may start and end inside units;
 * the units after them run whole, a wave at a time (ts_stream_deal). A unit covered by
 * several runs is finished in the kernel (no reduce): every run but the one with the unit's
 * last k-tiles writes its fp32 partial into ws[slot] (slot: its place among the unit's runs,
 * below splits - 1) and counts it on the unit's flag; the run with the last k-tiles, the
 * highest block of the unit, waits for the lower ones, adds their partials to its
 * accumulators and stores C. Blocks walk their run from its end (ts_cursor), so a block's
 * partial is done first and the unit it finishes comes last: the waits are short, and only
 * ever on lower blocks, which the GPU started first (no deadlock whatever else runs). */
struct ts_args {
    int M, N, K;
    float alpha, beta;
    uint16_t *C;
    int ldc;
    bool c_pairs;
    bool tma_store; /* C leaves through the staging and TMA stores (the tmc map) */
    int splits, ldw;
    float *ws;
    int stream_per;   /* k-tiles per block (cluster) in stream-K, 0 otherwise */
    int stream_units; /* stream-K: units dealt in runs; those after them run whole (ts_cursor) */
    int *flags;       /* partials added in the kernel: done per unit, block of the cluster and
                       * warpgroup (stream-K) or per column group (swap-AB split); null otherwise */
};

/* This block's place in its cluster (0 without clusters), its row and column there, and the
 * first unit it takes and the stride between its units: a cluster walks the units as one block
 * does without clusters. */
template <typename C> __device__ __forceinline__ int ts_rank()
{
    return C::CL > 1 ? (int)(blockIdx.x % C::CL) : 0;
}
template <typename C> __device__ __forceinline__ int ts_rank_m()
{
    return ts_rank<C>() % C::CLM;
}
template <typename C> __device__ __forceinline__ int ts_rank_n()
{
    return ts_rank<C>() / C::CLM;
}
template <typename C> __device__ __forceinline__ int ts_first_unit()
{
    return (int)(blockIdx.x / C::CL);
}
template <typename C> __device__ __forceinline__ int ts_unit_stride()
{
    return (int)(gridDim.x / C::CL);
}

/* A consumer warp's lane 0 releases stage s: in every block of the cluster, since each block's
 * producer writes the stage of all of them. The arrive's default .release.cta semantics
 * suffice (src/sm90.cuh: a .cluster release per arrive was measured at 0.4x on FP8). */
template <typename C> __device__ __forceinline__ void ts_release(uint64_t *empty, int s)
{
    if constexpr (C::CL == 1) {
        mbar_arrive(&empty[s]);
    } else {
#pragma unroll
        for (int r = 0; r < C::CL; r++)
            mbar_arrive_cluster(&empty[s], (unsigned)r);
    }
}

/* Work unit u: its output tile, which part of K it covers (k-tiles [kbeg, kend)), and which
 * split. Units of one tile are adjacent so they run at the same time and share A in L2. */
struct ts_unit {
    int m0, n0, kbeg, kend, split;
    int tile;  /* stream-K: the unit's index (its flags) */
    int lower; /* stream-K: -1 if this run writes a partial, else the partials it adds first */
};
/* Tiles are walked in groups of GROUP_M unit rows, column by column within a group, so the
 * units running at once share rows of A and columns of B in L2; ts_unit_place puts walk index
 * `tile` in place, with this block's tile inside the cluster's. */
template <typename C>
__device__ __forceinline__ void ts_unit_place(ts_unit *w, int tile, int tiles_m, int tiles_n)
{
    constexpr int UM = C::CLM * C::BM, UN = C::CLN * C::BN; /* a unit: the cluster's tiles */
    int per_group = GROUP_M * tiles_n, group = tile / per_group, first_m = group * GROUP_M;
    int rows = tiles_m - first_m < GROUP_M ? tiles_m - first_m : GROUP_M;
    int in_group = tile % per_group;
    w->m0 = (first_m + in_group % rows) * UM + ts_rank_m<C>() * C::BM;
    w->n0 = (in_group / rows) * UN + ts_rank_n<C>() * C::BN;
}
template <typename C, bool SPLIT>
__device__ __forceinline__ ts_unit ts_unit_of(int u, const ts_args &a)
{
    const int splits = SPLIT ? a.splits : 1; /* a constant 1 keeps unsplit kernels lean */
    constexpr int UM = C::CLM * C::BM, UN = C::CLN * C::BN;
    int tiles_m = (a.M + UM - 1) / UM, tiles_n = (a.N + UN - 1) / UN;
    int ktiles = (a.K + TS_BK - 1) / TS_BK, per = (ktiles + splits - 1) / splits;
    ts_unit w;
    w.tile = 0;
    w.lower = 0;
    w.split = u % splits;
    ts_unit_place<C>(&w, u / splits, tiles_m, tiles_n);
    w.kbeg = w.split * per;
    w.kend = w.kbeg + per < ktiles ? w.kbeg + per : ktiles;
    return w;
}
template <typename C, bool SPLIT> __device__ __forceinline__ int ts_units(const ts_args &a)
{
    constexpr int UM = C::CLM * C::BM, UN = C::CLN * C::BN;
    return ((a.M + UM - 1) / UM) * ((a.N + UN - 1) / UN) * (SPLIT ? a.splits : 1);
}

/* The units of this block (its cluster), in order: grid-stride over the units; or with
 * stream-K first the pieces of the units its run of k-tiles covers, from the run's end back to
 * its start (ts_args: the partial it writes comes first, the unit it finishes last), then, grid
 * stride, the units after the dealt ones, whole. The producer and the consumers walk the same
 * cursor, so they agree on every stage. */
template <typename C, bool SPLIT, bool STREAM> struct ts_cursor {
    int u, end, whole;
    __device__ __forceinline__ explicit ts_cursor(const ts_args &a)
    {
        if (STREAM) {
            int total = a.stream_units * ((a.K + TS_BK - 1) / TS_BK);
            u = ts_first_unit<C>() * a.stream_per;
            u = u < total ? u : total;
            end = total - u < a.stream_per ? total : u + a.stream_per;
            whole = a.stream_units + ts_first_unit<C>();
        } else {
            u = ts_first_unit<C>();
            end = ts_units<C, SPLIT>(a);
        }
    }
    __device__ __forceinline__ bool next(const ts_args &a, ts_unit *w)
    {
        if (STREAM && u >= end) { /* the run is done: the whole units, grid stride */
            if (whole >= ts_units<C, false>(a))
                return false;
            *w = ts_unit_of<C, false>(whole, a);
            whole += ts_unit_stride<C>();
            return true;
        }
        if (u >= end)
            return false;
        if (STREAM) {
            constexpr int UM = C::CLM * C::BM, UN = C::CLN * C::BN;
            int ktiles = (a.K + TS_BK - 1) / TS_BK, tile = (end - 1) / ktiles;
            int first = tile * ktiles, beg = u > first ? u : first;
            ts_unit_place<C>(w, tile, (a.M + UM - 1) / UM, (a.N + UN - 1) / UN);
            w->tile = tile;
            w->kbeg = beg - first;
            w->kend = end - first;
            /* the blocks whose runs hold the unit's first and last k-tiles */
            int lo = first / a.stream_per, hi = (first + ktiles - 1) / a.stream_per;
            int b = ts_first_unit<C>();
            w->split = b - lo;
            w->lower = b == hi ? hi - lo : -1;
            end = beg;
        } else {
            *w = ts_unit_of<C, SPLIT>(u, a);
            u += ts_unit_stride<C>();
        }
        return true;
    }
};

/* Split s's fp32 partial of output (gm, gn) in the workspace: parts of M x ldw, one after
 * another. */
__device__ __forceinline__ float *ts_slot(const ts_args &a, int s, int gm, int gn)
{
    return a.ws + ((size_t)s * a.M + gm) * a.ldw + gn;
}

/* Emits outputs (gm, gn) and (gm, gn + 1), alpha already applied: into C, or into the split's
 * fp32 slice of the workspace. */
template <typename T, bool SPLIT>
__device__ __forceinline__ void ts_emit(const ts_args &a, int split, int gm, int gn, float v0,
                                        float v1)
{
    if (gm >= a.M)
        return;
    if (!SPLIT) {
        store_pair<T>(a.C + (size_t)gm * a.ldc, gn, a.N, v0, v1, a.beta, a.c_pairs);
        return;
    }
    float *w = ts_slot(a, split, gm, gn);
    if (gn + 1 < a.N) /* ldw and gn are even: 8-byte aligned */
        *reinterpret_cast<float2 *>(w) = make_float2(v0, v1);
    else if (gn < a.N)
        w[0] = v0;
}

/* Stream-K's flags and partials. In both consumers warpgroup wg (warps 4 wg .. 4 wg + 3) holds
 * rows [64 wg, +64) of the tile, so each warpgroup has its own flag per unit and block of the
 * cluster: it counts its partial once all 128 threads issued their stores (bar.sync, then a
 * release by its first thread), and the finishing warpgroup's first thread waits (acquire)
 * until the lower runs counted theirs. */
template <typename C> __device__ __forceinline__ int *ts_flag(const ts_args &a, int tile, int wg)
{
    return a.flags + ((size_t)tile * C::CL + ts_rank<C>()) * (C::BM / 64) + wg;
}
__device__ __forceinline__ void ts_partial_signal(int *flag, int wg)
{
    named_barrier_sync(1 + wg, 128);
    if ((threadIdx.x & 127) == 0)
        asm volatile("fence.acq_rel.gpu;\n"
                     "red.relaxed.gpu.global.add.s32 [%0], 1;\n" ::"l"(flag)
                     : "memory");
}
__device__ __forceinline__ void ts_partials_wait(const int *flag, int want, int wg)
{
    if ((threadIdx.x & 127) == 0) {
        int got;
        do
            asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n"
                         : "=r"(got)
                         : "l"(flag)
                         : "memory");
        while (got < want);
    }
    named_barrier_sync(1 + wg, 128);
}
/* Slot s's partial of output (gm, gn): kept opaque to the compiler, so each slot's address is
 * computed in the slot loop (hoisting every output's address out of it spilled 128x256). */
__device__ __forceinline__ const float *ts_slot_at(const ts_args &a, int s, int gm, int gn)
{
    const float *p = ts_slot(a, s, gm, gn);
    asm volatile("" : "+l"(p));
    return p;
}
/* Adds the partial at p of outputs (gm, gn) and (gm, gn + 1), read through L2 (another SM
 * wrote it in this grid). Callers walk the slots outermost and their outputs innermost,
 * unrolled, so each slot's loads are in flight together. */
__device__ __forceinline__ void ts_add_partial(const ts_args &a, const float *p, int gm, int gn,
                                               float &v0, float &v1)
{
    if (gm >= a.M || gn >= a.N)
        return;
    float2 q = __ldcg(reinterpret_cast<const float2 *>(p)); /* ldw, gn even: 8-byte aligned */
    v0 += q.x;
    v1 += q.y;
}

/* wgmma consumer: warpgroup wg computes rows [64 wg, 64 wg + 64) of every tile. A split whose
 * K range is empty (more splits than k-tiles) still writes its zero partials. cstage: the
 * epilogue's staging (C::C_BYTES, 64 x C::EPI outputs per warpgroup). */
template <typename T, typename C, bool SPLIT, bool STREAM>
__device__ __forceinline__ void ts_consume_wgmma(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                                 uint8_t *cstage, const ts_args &a,
                                                 const CUtensorMap *tmc)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2, g = lane >> 2,
        t = lane & 3;
    int s = 0;
    unsigned phase = 0;
    ts_cursor<C, SPLIT, STREAM> cur(a);
    for (ts_unit w; cur.next(a, &w);) {
        float d[C::BN / 2];
#pragma unroll
        for (int i = 0; i < C::BN / 2; i++)
            d[i] = 0.0f;
        int prev = -1;
        for (int kt = w.kbeg; kt < w.kend; kt++) {
            mbar_wait(&full[s], phase);
            uint32_t sa = smem_addr(smem + s * C::STAGE_BYTES), sb = sa + C::A_BYTES;
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int j = 0; j < TS_BK / 16; j++)
                wgmma_op<T, C::BN>(d, wg_desc(sa + wg * 64 * 128 + j * 32, 16, 1024),
                                   wg_desc(sb + j * 2048, 8192, 1024));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            /* one group stays in flight; the one before it is done with its stage */
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            if (prev >= 0 && lane == 0)
                ts_release<C>(empty, prev);
            prev = s;
            if (++s == C::STAGES) {
                s = 0;
                phase ^= 1;
            }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (prev >= 0 && lane == 0)
            ts_release<C>(empty, prev);
        /* a cluster's tile past the edge: it loaded for its peers, stores nothing */
        if (C::CL > 1 && (w.m0 >= a.M || w.n0 >= a.N))
            continue;
            /* the accumulators are final only now: keep the compiler from reading them earlier */
#pragma unroll
        for (int i = 0; i < C::BN / 2; i++)
            asm volatile("" : "+f"(d[i])::"memory");
        float alpha = a.alpha;
        if constexpr (STREAM) {
            const int row0 = w.m0 + wg * 64 + (warp & 3) * 16 + g, col0 = w.n0 + t * 2;
            if (w.lower < 0) { /* a partial, for the block that finishes the unit */
#pragma unroll
                for (int nn = 0; nn < C::BN / 8; nn++)
#pragma unroll
                    for (int half = 0; half < 2; half++)
                        ts_emit<T, true>(a, w.split, row0 + half * 8, col0 + nn * 8,
                                         alpha * d[nn * 4 + half * 2],
                                         alpha * d[nn * 4 + half * 2 + 1]);
                ts_partial_signal(ts_flag<C>(a, w.tile, wg), wg);
                continue;
            }
            if (w.lower > 0) { /* this run has the unit's last k-tiles: add the others' */
                ts_partials_wait(ts_flag<C>(a, w.tile, wg), w.lower, wg);
#pragma unroll
                for (int i = 0; i < C::BN / 2; i++)
                    d[i] *= alpha;
                for (int s = 0; s < w.lower; s++) {
                    const float *p = ts_slot_at(a, s, row0, col0);
#pragma unroll
                    for (int nn = 0; nn < C::BN / 8; nn++)
#pragma unroll
                        for (int half = 0; half < 2; half++)
                            ts_add_partial(a, p + (size_t)half * 8 * a.ldw + nn * 8,
                                           row0 + half * 8, col0 + nn * 8, d[nn * 4 + half * 2],
                                           d[nn * 4 + half * 2 + 1]);
                }
                alpha = 1.0f;
            }
        }
        /* stream-K stores finished units as an unsplit kernel does; split-K's partials go to
         * the workspace */
        constexpr bool TO_WS = SPLIT && !STREAM;
        if constexpr (C::EPI > 0 && !TO_WS) {
            if (a.tma_store) {
#pragma unroll
                for (int r = 0; r < C::BN / C::EPI; r++)
                    wg_store_tile_tma<T, C::EPI>(d + r * (C::EPI / 2), alpha,
                                                 cstage + wg * (64 * C::EPI * 2), tmc,
                                                 w.m0 + wg * 64, w.n0 + r * C::EPI, 1 + wg);
                continue;
            }
        }
#pragma unroll
        for (int nn = 0; nn < C::BN / 8; nn++)
#pragma unroll
            for (int half = 0; half < 2; half++)
                ts_emit<T, TO_WS>(a, w.split, w.m0 + wg * 64 + (warp & 3) * 16 + g + half * 8,
                                  w.n0 + nn * 8 + t * 2, alpha * d[nn * 4 + half * 2],
                                  alpha * d[nn * 4 + half * 2 + 1]);
    }
    if (C::EPI > 0 && a.tma_store)
        wg_store_drain();
#endif
}

/* f(i, half, j) for each row half of each of a warp's MF x NF mma.sync fragments
 * (acc[i][j][2 half], acc[i][j][2 half + 1]: rows 16 i + 8 half + g, columns 8 j + 2t, +1),
 * in the order the epilogues write them. */
template <int MF, int NF, typename F> __device__ __forceinline__ void ts_each_frag(F f)
{
#pragma unroll
    for (int i = 0; i < MF; i++)
#pragma unroll
        for (int half = 0; half < 2; half++)
#pragma unroll
            for (int j = 0; j < NF; j++)
                f(i, half, j);
}

/* mma.sync consumer: warp (wm, wn) computes rows [64 wm, +64) x columns [WN wn, +WN), WN =
 * BN / 4; its B columns lie in the 64-column block (WN wn) / 64 of the stage. */
template <typename T, typename C, bool SPLIT, bool STREAM>
__device__ __forceinline__ void ts_consume_mma(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                               const ts_args &a)
{
    constexpr int WN = C::BN / 4, MF = 4, NF = WN / 8;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wm = warp >> 2, wn = warp & 3;
    const int bblock = wn * WN / 64, ch0 = (wn * WN % 64) / 8;
    int s = 0;
    unsigned phase = 0;
    ts_cursor<C, SPLIT, STREAM> cur(a);
    for (ts_unit w; cur.next(a, &w);) {
        float acc[MF][NF][4];
        /* zero_frags(acc) would do; written out, this kernel's PTX stays as measured */
#pragma unroll
        for (int i = 0; i < MF; i++)
#pragma unroll
            for (int j = 0; j < NF; j++)
#pragma unroll
                for (int r = 0; r < 4; r++)
                    acc[i][j][r] = 0.0f;
        for (int kt = w.kbeg; kt < w.kend; kt++) {
            mbar_wait(&full[s], phase);
            uint32_t sa = smem_addr(smem + s * C::STAGE_BYTES);
            uint32_t sb = sa + C::A_BYTES + bblock * 8192;
#pragma unroll
            for (int kk = 0; kk < TS_BK; kk += 16) {
                uint32_t af[MF][4], bfr[NF][2];
#pragma unroll
                for (int i = 0; i < MF; i++) {
                    int row = wm * 64 + i * 16 + (lane & 15), ch = (kk >> 3) + (lane >> 4);
                    ldmatrix_x4(af[i], sa + row * 128 + ((ch ^ (row & 7)) << 4));
                }
#pragma unroll
                for (int j = 0; j < NF; j += 2) {
                    int krow = kk + (lane & 15), ch = ch0 + j + (lane >> 4);
                    uint32_t r[4];
                    ldmatrix_x4_trans(r, sb + krow * 128 + ((ch ^ (krow & 7)) << 4));
                    bfr[j][0] = r[0];
                    bfr[j][1] = r[1];
                    bfr[j + 1][0] = r[2];
                    bfr[j + 1][1] = r[3];
                }
#pragma unroll
                for (int i = 0; i < MF; i++)
#pragma unroll
                    for (int j = 0; j < NF; j++)
                        mma_16816<T>(acc[i][j], af[i], bfr[j]);
            }
            __syncwarp();
            if (lane == 0) /* release orders this warp's ldmatrix reads before the refill */
                ts_release<C>(empty, s);
            if (++s == C::STAGES) {
                s = 0;
                phase ^= 1;
            }
        }
        int g = lane >> 2, t = lane & 3;
        float alpha = a.alpha;
        if constexpr (STREAM) { /* as in ts_consume_wgmma; warpgroup wm */
            const int row0 = w.m0 + wm * 64 + g, col0 = w.n0 + wn * WN + t * 2;
            if (w.lower < 0) {
                ts_each_frag<MF, NF>([&](int i, int half, int j) {
                    ts_emit<T, true>(a, w.split, row0 + i * 16 + half * 8, col0 + j * 8,
                                     alpha * acc[i][j][half * 2], alpha * acc[i][j][half * 2 + 1]);
                });
                ts_partial_signal(ts_flag<C>(a, w.tile, wm), wm);
                continue;
            }
            if (w.lower > 0) {
                ts_partials_wait(ts_flag<C>(a, w.tile, wm), w.lower, wm);
#pragma unroll
                for (int i = 0; i < MF; i++)
#pragma unroll
                    for (int j = 0; j < NF; j++)
#pragma unroll
                        for (int e = 0; e < 4; e++)
                            acc[i][j][e] *= alpha;
                for (int s = 0; s < w.lower; s++) {
                    const float *p = ts_slot_at(a, s, row0, col0);
                    ts_each_frag<MF, NF>([&](int i, int half, int j) {
                        ts_add_partial(a, p + (size_t)(i * 16 + half * 8) * a.ldw + j * 8,
                                       row0 + i * 16 + half * 8, col0 + j * 8, acc[i][j][half * 2],
                                       acc[i][j][half * 2 + 1]);
                    });
                }
                alpha = 1.0f;
            }
        }
        ts_each_frag<MF, NF>([&](int i, int half, int j) {
            ts_emit<T, SPLIT && !STREAM>(
                a, w.split, w.m0 + wm * 64 + i * 16 + g + half * 8, w.n0 + wn * WN + j * 8 + t * 2,
                alpha * acc[i][j][half * 2], alpha * acc[i][j][half * 2 + 1]);
        });
    }
}

/* Multicast masks: the blocks of the cluster whose tiles have this block's rows (they share
 * its A box) and those whose tiles have its columns (they share its B boxes). */
template <typename C> __device__ __forceinline__ uint16_t ts_a_mask()
{
    unsigned m = 0;
#pragma unroll
    for (int i = 0; i < C::CLN; i++)
        m |= 1u << (ts_rank_m<C>() + i * C::CLM);
    return (uint16_t)m;
}
template <typename C> __device__ __forceinline__ uint16_t ts_b_mask()
{
    return (uint16_t)(((1u << C::CLM) - 1) << (ts_rank_n<C>() * C::CLM));
}

/* The producer (one lane): for every unit of this block, each k-tile's A box and B boxes into
 * the next free stage. With clusters the stage is free once every block of the cluster
 * released it (the empty barriers count all their consumer warps), and this block's share of
 * the boxes goes to every block that needs them (multicast, completing on each one's full
 * barrier at the same offset): its slice of A's rows to the blocks with its rows, its B boxes
 * to the blocks with its columns. The tensor map of A has boxes of BM / CLN rows. */
template <typename C, bool SPLIT, bool STREAM>
__device__ __forceinline__ void ts_produce(uint8_t *smem, uint64_t *full, uint64_t *empty,
                                           const ts_args &a, const CUtensorMap *tma,
                                           const CUtensorMap *tmb)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tma) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)tmb) : "memory");
    const int rank_m = ts_rank_m<C>(), rank_n = ts_rank_n<C>();
    const uint16_t a_mask = ts_a_mask<C>(), b_mask = ts_b_mask<C>();
    constexpr int SLICE = C::BM / C::CLN; /* rows of A this block loads */
    int s = 0;
    unsigned phase = 0;
    ts_cursor<C, SPLIT, STREAM> cur(a);
    for (ts_unit w; cur.next(a, &w);) {
        for (int kt = w.kbeg; kt < w.kend; kt++) {
            mbar_wait(&empty[s], phase ^ 1);
            mbar_expect_tx(&full[s], C::STAGE_BYTES); /* out-of-bounds boxes count too */
            uint8_t *sa = smem + s * C::STAGE_BYTES, *sb = sa + C::A_BYTES;
            if (C::CLN == 1)
                tma_load_2d(sa, tma, &full[s], kt * TS_BK, w.m0);
            else
                tma_load_2d_multicast(sa + rank_n * SLICE * 128, tma, &full[s], kt * TS_BK,
                                      w.m0 + rank_n * SLICE, a_mask);
#pragma unroll
            for (int j = 0; j < C::BN / 64; j++) {
                if (C::CLM == 1)
                    tma_load_2d(sb + j * 8192, tmb, &full[s], w.n0 + j * 64, kt * TS_BK);
                else if (j % C::CLM == rank_m)
                    tma_load_2d_multicast(sb + j * 8192, tmb, &full[s], w.n0 + j * 64, kt * TS_BK,
                                          b_mask);
            }
            if (++s == C::STAGES) {
                s = 0;
                phase ^= 1;
            }
        }
    }
}

template <typename T, typename C, bool WGMMA, bool SPLIT, bool STREAM>
__global__ __launch_bounds__(C::THREADS,
                             C::CTAS) void gemm_tma(const ts_args a,
                                                    const __grid_constant__ CUtensorMap tma,
                                                    const __grid_constant__ CUtensorMap tmb,
                                                    const __grid_constant__ CUtensorMap tmc)
{
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(1024) uint8_t ts_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)ts_smem_raw + 1023) & ~(uintptr_t)1023);
    uint8_t *cstage = smem + C::STAGES * C::STAGE_BYTES; /* 1024-aligned, as the swizzle wants */
    uint64_t *full = (uint64_t *)(cstage + C::C_BYTES), *empty = full + C::STAGES;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], C::CONSUMER_WARPS * C::CL);
        }
        /* make the initialised barriers visible to the copy engine (and the cluster) */
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    /* no block may multicast into, or arrive on, a peer's barriers before the peer set them */
    if (C::CL > 1)
        cluster_sync();
    else
        __syncthreads();
    if (warp == C::CONSUMER_WARPS) { /* producer */
        if (lane == 0) {
            ts_produce<C, SPLIT, STREAM>(smem, full, empty, a, &tma, &tmb);
            /* every load of this block is issued: the reduce's blocks may start to launch
             * (they wait in griddepcontrol.wait until this grid is done) */
            if (SPLIT && !STREAM)
                asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
        }
        if (C::CL == 1)
            return;
    } else if (WGMMA) {
        ts_consume_wgmma<T, C, SPLIT, STREAM>(smem, full, empty, cstage, a, &tmc);
    } else {
        ts_consume_mma<T, C, SPLIT, STREAM>(smem, full, empty, a);
    }
    /* a block leaves only when its peers no longer write into it (multicast, remote arrives) */
    if (C::CL > 1)
        cluster_sync();
#else
    __trap(); /* launch_tma is only called from sm_90 and sm_90a builds */
#endif
}

/* C = sum of the split partials (alpha applied) + beta C; one thread per output pair, rows
 * along y so no thread divides. */
template <typename T> __global__ void gemm_tma_reduce(const ts_args a)
{
#if __CUDA_ARCH__ >= 900
    /* launched early (programmatic dependent launch, ts_split_finish): the partials are
     * complete and visible only once the split kernel's grid has finished; without the launch
     * attribute this returns at once */
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
    size_t slice = (size_t)a.M * a.ldw;
    for (int m = blockIdx.y; m < a.M; m += gridDim.y)
        for (int n = 2 * (blockIdx.x * blockDim.x + threadIdx.x); n < a.N;
             n += 2 * gridDim.x * blockDim.x) {
            const float *w = a.ws + (size_t)m * a.ldw + n;
            float v0 = 0.0f, v1 = 0.0f;
            for (int s = 0; s < a.splits; s++) { /* ldw and n are even: 8-byte aligned */
                float2 p = *reinterpret_cast<const float2 *>(w + s * slice);
                v0 += p.x;
                v1 += p.y;
            }
            store_pair<T>(a.C + (size_t)m * a.ldc, n, a.N, v0, v1, a.beta, a.c_pairs);
        }
}

/* A row-major rows x cols 16-bit matrix read in boxes of box_rows x 64 columns. */
static bool make_tensor_map(CUtensorMap *map, const uint16_t *base, int rows, int cols, int ld,
                            int box_rows)
{
    return make_tensor_map_128b(map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, base, rows, cols, ld,
                                box_rows);
}

/* ---- the tile table: which ts_cfg and how many K splits for a problem ----
 * One row per tile the TMA kernels are built with; `rate` is the fraction of the 128x256
 * tile's main-loop speed that tile reaches on large problems (H200, wgmma). Calibrated with
 * bench/gpu/gemm_shapes.cu over 40 LLM shapes (docs/perf.md); two blocks per SM of 64-row
 * tiles were measured too and won no shape clearly, so they are not in the table. */
struct ts_tile {
    int bm, bn, ctas;
    double rate;
    int cl;  /* blocks per cluster along M sharing B (ts_cfg::CLM); wgmma only */
    int cln; /* blocks per cluster along N sharing A (ts_cfg::CLN) */
};
static const ts_tile kTsTiles[] = {
    {128, 256, 1, 1.00, 1, 1}, {128, 128, 1, 0.88, 1, 1}, {64, 256, 1, 0.75, 1, 1},
    {64, 128, 1, 0.65, 1, 1},  {128, 256, 1, 1.00, 2, 1}, {128, 128, 1, 0.88, 2, 1},
    {64, 256, 1, 0.75, 2, 1},  {64, 128, 1, 0.65, 2, 1},  {128, 128, 1, 0.88, 2, 2},
    {64, 128, 1, 0.65, 2, 2},
};
/* rows [0, TS_PLAIN) have no clusters; row r + TS_PLAIN is row r in clusters of 2 along M (the
 * cost model weighs only the plain rows; ts_cluster_pick moves a plan to its cluster row);
 * rows TS_2X2 and TS_2X2 + 1 are rows 1 and 3 in clusters of 2 x 2 (sharing A and B) */
constexpr int TS_PLAIN = 4, TS_2X2 = 8;
constexpr int TS_NTILES = (int)(sizeof kTsTiles / sizeof kTsTiles[0]);

/* The plain row of a cluster row's tile, the one with its tile and no clusters (mma.sync
 * builds run cluster plans on it). */
static int ts_plain_row(int tile)
{
    if (tile < 0 || tile >= TS_NTILES) /* not a row of the table: left to the caller's default */
        return tile;
    const ts_tile &t = kTsTiles[tile];
    for (int r = 0; r < TS_PLAIN; r++)
        if (kTsTiles[r].bm == t.bm && kTsTiles[r].bn == t.bn && kTsTiles[r].ctas == t.ctas)
            return r;
    return tile;
}

/* Units of an M x N product in units of um x un outputs (a cluster's tiles; the kernels'
 * ts_units counts the same on the device). */
static long long ts_unit_count(int M, int N, long long um, long long un)
{
    return (M + um - 1) / um * ((N + un - 1) / un);
}

/* Blocks a plan's tile launches per split: whole clusters. */
static long long ts_tiles(const ts_tile &t, int M, int N)
{
    return ts_unit_count(M, N, (long long)t.cl * t.bm, (long long)t.cln * t.bn) * t.cl * t.cln;
}
/* RF_GEMM_MAX_SPLITS: a build with more K parts allowed (bench/gpu/gemm_splits.cu probes them) */
#ifndef RF_GEMM_MAX_SPLITS
#define RF_GEMM_MAX_SPLITS 16
#endif
constexpr int TS_MAX_SPLITS = RF_GEMM_MAX_SPLITS;

/* Fitted to the H200 measurements (leads for other Hopper parts: the ratios carry over). */
constexpr double TS_TILE_RATE = 5.6e12; /* flop/s of one SM in the 128x256 main loop */
/* one tile's epilogue, in k-tiles of main loop: fitted to the epilogue from registers; with the
 * staged one, a weight of 2 chose plans that timed the same within noise (+0.2% geomean over
 * the 80 shape/type pairs of docs/perf.md), so the fitted value stays */
constexpr double TS_EPI_KTILES = 8.0;
constexpr double TS_DRAM_BW = 3.0e12;  /* bytes/s the operand streams reach together */
constexpr double TS_SM_BW = 6.0e10;    /* bytes/s one SM's TMA stream reaches on its own */
constexpr double TS_SPLIT_COST = 8e-6; /* workspace, the reduce launch */
constexpr double TS_SPLIT_BYTES = 8.0; /* partial bytes per output and split, write + read */

/* splits: K parts per tile, or TS_STREAM for stream-K (ts_args::stream_per: the parts follow
 * from the blocks resident at once) */
struct ts_plan {
    int tile, splits;
};
constexpr int TS_STREAM = 0;

/* Rows of A or B that do not start on 128-byte lines (leading dimension not a multiple of 64
 * elements): the plan rules below treat them apart. */
static bool ts_unaligned(int lda, int ldb)
{
    return lda % 64 != 0 || ldb % 64 != 0;
}

/* Modelled seconds for one plan: the slower of the tensor cores (waves of units, each its
 * k-tiles plus an epilogue) and memory (the operands over the SMs that have work, each
 * stream limited, and over DRAM), plus what a split adds. `unaligned`: A's or B's rows are
 * off 128-byte lines (sm_90a), where the loads of each block are the limit while the units do
 * not fill the SMs: each block's own A rows and B columns over one SM's stream. That term
 * makes 1000x1000x8000 split (1.13x in three runs on an H100), 200x1000x3000 split in 4
 * (1.25x) and 777x1000x8000 take 128 x 256 pairs in 4 (1.10x); docs/perf.md "Sixteenth
 * pass". Aligned plans, and plans that fill the SMs, are modelled as before. */
static double ts_cost(const ts_tile &t, int splits, int M, int N, int K, int sms,
                      double epi = TS_EPI_KTILES, bool unaligned = false)
{
    long long tiles = ts_tiles(t, M, N);
    int ktiles = (K + TS_BK - 1) / TS_BK, per = (ktiles + splits - 1) / splits;
    long long units = tiles * splits, waves = (units + sms - 1) / sms;
    double compute =
        (double)waves * (per + epi) * 2.0 * t.bm * t.bn * TS_BK / (t.rate * TS_TILE_RATE);
    double operands = 2.0 * ((double)N * K + (double)M * K), mn = (double)M * N;
    double active = (double)(units < sms ? units : sms);
    double memory = operands / (active * TS_SM_BW);
    if ((operands + 2.0 * mn) / TS_DRAM_BW > memory)
        memory = (operands + 2.0 * mn) / TS_DRAM_BW;
    double stream = (double)waves * (t.bm + t.bn) * 2.0 * per * TS_BK / TS_SM_BW;
    if (unaligned && units < sms && stream > memory)
        memory = stream;
    double split = splits > 1 ? TS_SPLIT_COST + TS_SPLIT_BYTES * mn * splits / TS_DRAM_BW : 0.0;
    return (compute > memory ? compute : memory) + split;
}

/* Splits for one tile. Decode-sized M (<= 32): the partials are tiny, so split until about
 * one unit per SM. Otherwise split only when fewer than half the SMs have a tile, as far as
 * the model says it pays. Each split keeps at least 4 k-tiles. */
static int ts_best_splits(int tile, int M, int N, int K, int sms, double epi = TS_EPI_KTILES,
                          bool unaligned = false)
{
    const ts_tile &t = kTsTiles[tile];
    long long tiles = ts_tiles(t, M, N);
    int ktiles = (K + TS_BK - 1) / TS_BK, cap = ktiles / 4;
    cap = cap < TS_MAX_SPLITS ? cap : TS_MAX_SPLITS;
    if (M <= 32) {
        long long s = sms / tiles;
        return (int)(s < 1 ? 1 : s > cap ? (cap < 1 ? 1 : cap) : s);
    }
    int best = 1;
    if (2 * tiles > sms)
        return best;
    double best_cost = ts_cost(t, 1, M, N, K, sms, epi, unaligned);
    for (int s = 2; s <= cap; s++) {
        double c = ts_cost(t, s, M, N, K, sms, epi, unaligned);
        if (c < best_cost) {
            best = s;
            best_cost = c;
        }
    }
    return best;
}

/* M <= 64: 64-row tiles, 128 columns (measured best or within 2% on every such shape), with
 * decode splits; deep K (> 8192) may split at M <= 64 too. Otherwise the cheapest modelled
 * row of the table. */
static ts_plan ts_choose(int M, int N, int K, int sms, double epi = TS_EPI_KTILES,
                         bool unaligned = false)
{
    if (M <= 64) {
        ts_plan p = {3, ts_best_splits(3, M, N, K, sms, epi)};
        if (M > 32 && K <= 8192)
            p.splits = 1;
        /* decode with more 64x128 tiles than SMs: 64x256 tiles stream the same B in one wave
         * fewer (H200, 16x28672x8192: 121 us against 124, docs/perf.md "Sixth pass"; gemm19's
         * forced-tile figures had promised more) */
        if (M <= 32 && ts_tiles(kTsTiles[3], M, N) > sms)
            p = {2, ts_best_splits(2, M, N, K, sms, epi)};
        return p;
    }
    ts_plan p = {0, 1};
    double best = 0;
    for (int t = 0; t < TS_PLAIN; t++) {
        int s = ts_best_splits(t, M, N, K, sms, epi, unaligned);
        double c = ts_cost(kTsTiles[t], s, M, N, K, sms, epi, unaligned);
        if (t == 0 || c < best) {
            best = c;
            p.tile = t;
            p.splits = s;
        }
    }
    return p;
}

/* The table's plan in clusters of 2 (wgmma builds) where that was measured to pay (H200,
 * docs/perf.md "Fifth pass"): rows of A or B that do not start on 128-byte lines (lda or ldb
 * not a multiple of 64 elements), where Nsight Compute showed the plain kernel waiting on its
 * stages (long-scoreboard stalls half to two thirds of its cycles, SM throughput 18-53%) and
 * sharing B's loads made 777x1000x3000, 1000^3 and 3000x5000x2000 1.17-1.27x faster; and split
 * plans (128x4096x14336, 256x256x65536: 1.08-1.10x; 1024x1024x32768: the same). Aligned unsplit
 * plans timed from 3% faster to 10% slower in clusters (slower: 8192x8192x256, 256x14336x4096,
 * 256x5120x5120), so they keep the plain tile. A cluster needs two tiles along M: with one, its
 * second block has no rows.
 * Unaligned unsplit 64x128 plans with at least 32 k-tiles, more than one tile along N and
 * at most 120 blocks per 132 SMs in clusters of 2 x 2 go to those clusters, which share A too:
 * 1.03-1.16x faster than pairs at 32-120 blocks (777x1000x2000..8000, 200x1000x3000,
 * 600x1000x3000, 840x1000x3000, 640x1536x3000 on an H100; 777x1000x3000 1.11x on the H200),
 * 0.74-0.88x at 128-144 blocks (1000x1000x1000..8000, 900x1000x3000, 400x2000x4000,
 * 700x1400x2800), as if clusters of 4 did not all fit at once. 300x3000x3000 (144 blocks,
 * 1.14x in 2 x 2) is the exception, kept in pairs; other SM counts scale, untimed (docs/perf.md
 * "Twelfth pass").
 * Those with more blocks, at least TS_2X2_WIDE_KTILES k-tiles and two 128-row tiles go to
 * 128x128 tiles in clusters of 2 x 2 instead of 64x128 pairs: 1.09-1.12x at 1000x1000x3000,
 * 900x1000x3000 and 300x3000x3000, 1.04-1.07x at 700x1400x2800, 1.03x at 400x2000x4000, the same
 * at 1000x1000x8000, in three runs on an H100 (docs/perf.md "Fifteenth pass"); at 32 k-tiles
 * (1000x1000x2048) pairs stay 1.03-1.06x ahead, and 33..39 k-tiles were not timed.
 * Unaligned unsplit 128x128 plans with more blocks than SMs (two waves or more) go to clusters
 * of 2 x 2 as well: 1.29-1.32x in three runs at 3000x3000x1000, 1.11-1.46x at 2000x3000x1000,
 * 1500x3000x2000, 1800x2400x1500 and 3000x3000x3000 in one, 0.96x at 3000x2000x1500 (where
 * cuBLAS is at half our speed), on an H100 (docs/perf.md "Sixteenth pass"); with one wave or
 * less (555x2000x3000, 520x1800x4000) pairs and 2 x 2 timed the same. 128x256 plans keep
 * their pairs (2 x 2 of 128x128 0.87-1.14x of them). */
constexpr int TS_2X2_WIDE_KTILES = 40;
static ts_plan ts_cluster_pick(ts_plan p, int M, int N, int K, int lda, int ldb, int sms)
{
    const ts_tile &t = kTsTiles[p.tile];
    if (t.cl > 1 || (M + t.bm - 1) / t.bm < 2)
        return p;
    bool unaligned = ts_unaligned(lda, ldb);
    bool blocks_fit = ts_tiles(kTsTiles[TS_2X2 + 1], M, N) * 132 <= 120LL * sms;
    bool deep_64x128 = unaligned && p.splits == 1 && p.tile == 3 && N > t.bn;
    if (deep_64x128 && K > 31 * TS_BK && blocks_fit)
        p.tile = TS_2X2 + 1;
    else if (deep_64x128 && K >= TS_2X2_WIDE_KTILES * TS_BK && M > 128)
        p.tile = TS_2X2;
    else if (unaligned && p.splits == 1 && p.tile == 1 && (N + t.bn - 1) / t.bn >= 2 &&
             ts_tiles(t, M, N) > sms)
        p.tile = TS_2X2;
    else if (unaligned || p.splits > 1)
        p.tile += TS_PLAIN;
    return p;
}

/* RF_GEMM_TMA_PLAN="tile,splits" (a row of kTsTiles, 0..9; 1..16, or 0 for stream-K) forces a
 * plan: the package check and the benchmarks use it to reach every row on any shape. Row 10
 * forces the swap-AB decode tile (gemm_swap: M <= 64, sm_90a builds; splits 1..16); where it
 * does not apply, the table's choice runs. */
static bool ts_plan_from_env(ts_plan *p)
{
    const char *s = getenv("RF_GEMM_TMA_PLAN");
    if (!s || !*s)
        return false;
    char *end;
    long tile = strtol(s, &end, 10);
    if (*end != ',' || tile < 0 || tile > TS_NTILES) /* + the swap-AB row 10 */
        return false;
    long splits = strtol(end + 1, &end, 10);
    bool stream_ok = splits == TS_STREAM && tile < TS_NTILES;
    if (*end != '\0' || ((splits < 1 || splits > TS_MAX_SPLITS) && !stream_ok))
        return false;
    p->tile = (int)tile;
    p->splits = (int)splits;
    return true;
}

/* The split-K workspace's pool: one per device, the package's own (cudaMemPoolCreate), created
 * on first use (std::call_once: threads may race to it) and never trimmed (release threshold
 * UINT64_MAX), so a caller that synchronises between calls (a decode loop) reuses the memory
 * instead of paying a real allocation per call, as the device's default pool (threshold 0)
 * would. Allocations stay stream-ordered, so two streams never share a live workspace. Null
 * when the device cannot have one. The pool lives as long as the process and holds the
 * largest workspace used at once. */
static cudaMemPool_t ts_ws_pool(int dev)
{
    constexpr int kMaxDevices = 64;
    static std::once_flag once[kMaxDevices];
    static cudaMemPool_t pools[kMaxDevices];
    if (dev < 0 || dev >= kMaxDevices)
        return nullptr;
    std::call_once(once[dev], [dev] {
        cudaMemPoolProps props = {};
        props.allocType = cudaMemAllocationTypePinned;
        props.location.type = cudaMemLocationTypeDevice;
        props.location.id = dev;
        cudaMemPool_t pool;
        uint64_t keep = UINT64_MAX;
        if (cudaMemPoolCreate(&pool, &props) != cudaSuccess) {
            (void)cudaGetLastError();
            return;
        }
        if (cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) {
            (void)cudaGetLastError();
            (void)cudaMemPoolDestroy(pool);
            return;
        }
        pools[dev] = pool;
    });
    return pools[dev];
}

/* bytes of stream-ordered workspace: from the package's pool, or from the default pool while
 * the stream is being captured into a graph (graphs own their allocations) or when there is no
 * pool. False (error state cleared) when neither can give it. */
static bool ts_ws_alloc(void **p, size_t bytes, kb_stream_t stream)
{
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    int dev = -1;
    if (cudaStreamIsCapturing(stream, &cap) != cudaSuccess || cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    cudaMemPool_t pool = cap == cudaStreamCaptureStatusNone ? ts_ws_pool(dev) : nullptr;
    cudaError_t rc =
        pool ? cudaMallocFromPoolAsync(p, bytes, pool, stream) : cudaMallocAsync(p, bytes, stream);
    if (rc == cudaSuccess)
        return true;
    (void)cudaGetLastError();
    return false;
}

/* The arguments of one launch of C = alpha A B + beta C, unsplit, with a workspace for
 * `splits` K parts when splits > 1: the partials go through stream-ordered memory
 * (ts_ws_alloc); if there is none to be had, a.splits stays 1 and the launch runs unsplit.
 * ts_split_finish ends what this begins. */
static ts_args ts_args_begin(int splits, int M, int N, int K, float alpha, float beta, uint16_t *C,
                             int ldc, kb_stream_t stream)
{
    ts_args a = {M,
                 N,
                 K,
                 alpha,
                 beta,
                 C,
                 ldc,
                 ((uintptr_t)C & 3) == 0 && (ldc & 1) == 0,
                 false,
                 1,
                 (N + 1) & ~1,
                 nullptr,
                 0,
                 0,
                 nullptr};
    if (splits > 1) {
        size_t bytes = (size_t)splits * M * a.ldw * sizeof(float);
        if (ts_ws_alloc((void **)&a.ws, bytes, stream))
            a.splits = splits;
    }
    return a;
}

/* RF_GEMM_PDL=0 launches the split reduce plainly (the benchmarks time both ways in one
 * process); read per call, as RF_GEMM_TMA_PLAN is. */
static bool ts_pdl_enabled()
{
    const char *s = getenv("RF_GEMM_PDL");
    return !(s && s[0] == '0' && s[1] == '\0');
}

/* After a split launch (rc its status): the reduce of a.splits > 1 partials into C (unless the
 * kernel added them itself: a.flags, ts_partials_begin), then the workspace back to its pool.
 * A no-op for unsplit launches. */
template <typename T>
static int ts_split_finish(const ts_args &a, int sms, int rc, kb_stream_t stream)
{
    if (a.splits <= 1)
        return rc;
    if (rc == 0 && a.flags == nullptr) {
        int gx = (a.N + 511) / 512, gy = a.M < 65535 ? a.M : 65535;
        int want = sms > 0 ? 8 * sms : 1024; /* enough blocks to fill the GPU, not more */
        while (gx > 1 && (long long)gx * gy > want)
            gx = (gx + 1) / 2;
        if (kTargetIsSm90 && ts_pdl_enabled()) {
            /* programmatic dependent launch: the reduce's launch overlaps the split kernel's
             * tail instead of following its completion (RF_GEMM_PDL=0: a plain launch) */
            cudaLaunchAttribute attr = {};
            attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
            attr.val.programmaticStreamSerializationAllowed = 1;
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(gx, gy);
            cfg.blockDim = dim3(256);
            cfg.stream = (cudaStream_t)stream;
            cfg.attrs = &attr;
            cfg.numAttrs = 1;
            if (cudaLaunchKernelEx(&cfg, gemm_tma_reduce<T>, a) != cudaSuccess) {
                (void)cudaGetLastError();
                rc = KBPKG_KERNEL_ELAUNCH;
            } else {
                rc = kb_gpu_launch_status();
            }
        } else {
            gemm_tma_reduce<T><<<dim3(gx, gy), 256, 0, stream>>>(a);
            rc = kb_gpu_launch_status();
        }
    }
    if (cudaFreeAsync(a.ws, stream) != cudaSuccess && rc == 0)
        rc = KBPKG_KERNEL_ELAUNCH;
    return rc;
}

/* Clusters of C::CL blocks that can be resident at once, at most `want`: a GPC may not fit
 * whole clusters on all of its SMs (cudaOccupancyMaxActiveClusters; asked once per kernel). */
template <typename C, typename Kernel>
static long long ts_cluster_slots(Kernel kernel, long long want)
{
    /* per configuration (T and SPLIT share it: same threads and shared memory) */
    static const long long fit = [&] {
        cluster_launch l;
        cluster_launch_init(&l, C::CL, (unsigned)(want * C::CL), C::THREADS, C::SMEM_BYTES,
                            nullptr);
        int clusters = 0;
        if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &l.cfg) != cudaSuccess)
            clusters = 0;
        (void)cudaGetLastError();
        return (long long)clusters;
    }();
    return fit > 0 && fit < want ? fit : want;
}

/* The kernel's dynamic shared-memory limit, raised once per device (done: a bit per device
 * id below 64, set after the call succeeded) instead of a runtime call per GEMM. */
template <typename Kernel>
static bool ts_smem_limit_once(std::atomic<unsigned long long> &done, Kernel kernel, int bytes)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0;
    if (bit && (done.load(std::memory_order_acquire) & bit))
        return true;
    if (kb_gpu_func_set_max_dyn_smem(kernel, bytes) != kb_gpu_success)
        return false;
    done.fetch_or(bit, std::memory_order_release);
    return true;
}

/* Stream-K's deal of `units` units of `ktiles` k-tiles over at most `slots` blocks
 * (clusters): the first *dealt units of the walk are cut into runs of *per k-tiles, one per
 * block (at least TS_STREAM_MIN, so a run amortises its epilogue), at most *parts runs per
 * unit; the units after them run whole, a wave of `slots` at a time. With more units than slots
 * only the partial last wave and one whole wave are dealt (each block runs one to two units'
 * k-tiles there): dealing them all would make the blocks running at once far apart in the walk, and
 * the operands they read would no longer share L2 (4096^3, 128x128: 0.42 of the unsplit speed
 * with every unit dealt; docs/perf.md "Sixteenth pass"). *per 0 when every run would be whole
 * units anyway (the unsplit kernel does that without the workspace). */
constexpr int TS_STREAM_MIN = 4;
static void ts_stream_deal(long long units, int ktiles, long long slots, int *per, int *parts,
                           long long *dealt)
{
    *dealt = slots > 0 && units > slots ? units % slots + slots : units;
    long long total = *dealt * ktiles;
    long long p = slots > 0 ? (total + slots - 1) / slots : total;
    p = p < TS_STREAM_MIN ? TS_STREAM_MIN : p;
    *per = p % ktiles != 0 && p < total ? (int)p : 0;
    *parts = *per ? (ktiles + *per - 2) / *per + 1 : 1;
}

/* RF_GEMM_STREAM_SLOTS=n deals stream-K out to at most n blocks (clusters) instead of those
 * resident at once: the package check reaches runs longer than a unit on small shapes. */
static long long ts_stream_slots(long long slots)
{
    const char *s = getenv("RF_GEMM_STREAM_SLOTS");
    long long n = s ? strtoll(s, nullptr, 10) : 0;
    return n > 0 && n < slots ? n : slots;
}

/* Workspace for partials added in the kernel (stream-K, the swap-AB decode tile split): parts - 1
 * fp32 slices of M x ldw (the run that finishes a unit keeps its own in registers), then
 * `flags` zeroed counters. Without it, a stays unsplit; with it, ts_split_finish launches no
 * reduce (a->flags set). */
static bool ts_partials_begin(ts_args *a, int parts, long long flags, kb_stream_t stream)
{
    size_t slices = (size_t)(parts - 1) * a->M * a->ldw * sizeof(float);
    size_t bytes = slices + (size_t)flags * sizeof(int);
    if (!ts_ws_alloc((void **)&a->ws, bytes, stream))
        return false;
    int *f = (int *)((char *)a->ws + slices);
    if (cudaMemsetAsync(f, 0, (size_t)flags * sizeof(int), (cudaStream_t)stream) != cudaSuccess) {
        (void)cudaGetLastError();
        (void)cudaFreeAsync(a->ws, stream);
        a->ws = nullptr;
        return false;
    }
    a->splits = parts;
    a->flags = f;
    return true;
}

/* Stream-K's workspace (ts_partials_begin): a flag per unit, block of the cluster and
 * warpgroup. */
static void ts_stream_begin(ts_args *a, int per, int parts, long long dealt, long long flags,
                            kb_stream_t stream)
{
    if (!ts_partials_begin(a, parts, flags, stream))
        return;
    a->stream_per = per;
    a->stream_units = (int)dealt;
}

/* One launch of tile configuration C: `splits` K parts per tile, or TS_STREAM. */
template <typename T, typename C, bool WGMMA>
static int launch_tma_cfg(int splits, int sms, int M, int N, int K, float alpha, const uint16_t *A,
                          int lda, const uint16_t *B, int ldb, float beta, uint16_t *Cm, int ldc,
                          kb_stream_t stream)
{
    CUtensorMap ma, mb;
    /* each block of a cluster row loads BM / CLN of the A box's rows */
    if (!make_tensor_map(&ma, A, M, K, lda, C::BM / C::CLN) ||
        !make_tensor_map(&mb, B, K, N, ldb, TS_BK))
        return KBPKG_KERNEL_EUNSUPPORTED;
    /* units: one per cluster of CLM x CLN tiles */
    long long tiles = ts_unit_count(M, N, C::CLM * C::BM, C::CLN * C::BN);
    int ktiles = (K + TS_BK - 1) / TS_BK;
    if (tiles > 0x7fffffffLL / TS_MAX_SPLITS / C::CL ||
        (splits == TS_STREAM && tiles * ktiles > 0x7fffffffLL))
        return KBPKG_KERNEL_EINVAL;
    auto plain = gemm_tma<T, C, WGMMA, false, false>, split = gemm_tma<T, C, WGMMA, true, false>,
         stream_k = gemm_tma<T, C, WGMMA, true, true>;
    static std::atomic<unsigned long long> smem_done[3]; /* unsplit, split, stream-K kernel */
    /* blocks (clusters) resident at once: the persistent grid, and stream-K's deal */
    long long slots = (long long)sms * C::CTAS / C::CL;
    int rc = 0, per = 0, parts = splits;
    long long dealt = 0;
    if (splits == TS_STREAM) {
        if (!ts_smem_limit_once(smem_done[2], stream_k, C::SMEM_BYTES))
            return KBPKG_KERNEL_ELAUNCH;
        if (C::CL > 1)
            slots = ts_cluster_slots<C>(stream_k, slots);
        slots = ts_stream_slots(slots);
        ts_stream_deal(tiles, ktiles, sms > 0 ? slots : 0, &per, &parts, &dealt);
    }
    ts_args a = ts_args_begin(per ? 1 : parts, M, N, K, alpha, beta, Cm, ldc, stream);
    if (per > 0)
        ts_stream_begin(&a, per, parts, dealt, dealt * C::CL * (C::BM / 64), stream);
    /* TMA stores need 16-byte aligned rows of C and write C without reading it; they write
     * whole 16-byte chunks, so with N % 8 != 0 the last chunk of a row would overwrite up to 7
     * elements past N (seen on the H200: the check's padding test) */
    CUtensorMap mc = ma; /* unused unless tma_store */
    a.tma_store = C::EPI > 0 && (a.splits == 1 || a.stream_per) && beta == 0.0f &&
                  rows_aligned16(Cm, ldc) && (N & 7) == 0 &&
                  make_tensor_map(&mc, Cm, M, N, ldc, 64);
    int which = a.stream_per ? 2 : a.splits > 1;
    auto kernel = which == 2 ? stream_k : which ? split : plain;
    if (!ts_smem_limit_once(smem_done[which], kernel, C::SMEM_BYTES))
        rc = KBPKG_KERNEL_ELAUNCH;
    if (C::CL > 1 && rc == 0) /* asked once per configuration: stream-K asked above */
        slots = ts_cluster_slots<C>(kernel, slots);
    /* stream-K: a block per run, or every slot where whole units follow the runs */
    long long units = !a.stream_per   ? tiles * a.splits
                      : dealt < tiles ? slots
                                      : (dealt * ktiles + per - 1) / per;
    unsigned grid = (unsigned)((sms > 0 && units > slots ? slots : units) * C::CL);
    if (rc == 0 && C::CL == 1) {
        kernel<<<grid, C::THREADS, C::SMEM_BYTES, stream>>>(a, ma, mb, mc);
        rc = kb_gpu_launch_status();
    } else if (rc == 0) {
        cluster_launch l;
        cluster_launch_init(&l, C::CL, grid, C::THREADS, C::SMEM_BYTES, stream);
        if (cudaLaunchKernelEx(&l.cfg, kernel, a, ma, mb, mc) != cudaSuccess) {
            (void)cudaGetLastError();
            rc = KBPKG_KERNEL_ELAUNCH;
        } else {
            rc = kb_gpu_launch_status();
        }
    }
    return ts_split_finish<T>(a, sms, rc, stream);
}

/* ---- operands the copy engine cannot read, copied into 128-byte rows first ----
 * A tensor map needs rows that start on 16 bytes (base and leading dimension): K or N not a
 * multiple of 8, or a pointer off 16 bytes, would leave the product to the mma.sync kernel fed
 * by scalar loads, at 0.17-0.65 of cuBLAS at the mid sizes timed. Such an operand is copied instead
 * into stream-ordered workspace (ts_ws_alloc) with its leading dimension rounded up to 64 elements,
 * rows on 128-byte lines, and the TMA kernels read the copy; the columns past the operand's
 * width are never read (the tensor map ends there and the copy engine fills zeros). The copy
 * reads the operand once and writes it once, and paid (1.0-6.3x) at each of the 26 shapes timed
 * on the H200, decode sizes that read B once (16 x 50257 x 768: 1.10x the in-place kernel) and
 * shallow K (12544 x 64 x 147: 1.24x) included, so it is made wherever rows are unaligned
 * (docs/perf.md "Thirteenth pass"); decode over such a B mostly never gets here: the skinny
 * kernel reads it in place first (sk_default_max_m). RF_GEMM_STAGE=0 turns it off, read per call:
 * bench/gpu/gemm_unaligned.cu times both ways in one process, the package check runs both. */
constexpr int TS_STAGE_LD = 64;

/* The leading dimension a rows x cols operand is read with: its own, or its copy's. */
static int ts_read_ld(const uint16_t *p, int ld, int cols)
{
    return rows_aligned16(p, ld) ? ld : (cols + TS_STAGE_LD - 1) / TS_STAGE_LD * TS_STAGE_LD;
}

/* One thread copies 8 elements of a row in loads of W elements (the widest the source's
 * alignment allows) and stores them as one 16-byte chunk; threads walk the (row, chunk) pairs
 * of the whole operand grid-stride, so narrow rows (K = 147: 19 chunks) still fill the blocks. */
template <int W>
__global__ __launch_bounds__(256) void gemm_stage_rows(const uint16_t *__restrict__ src, int ld,
                                                       int rows, int cols,
                                                       uint16_t *__restrict__ dst, int ldd)
{
    long long chunks = (cols + 7) / 8, total = chunks * rows;
    for (long long i = blockIdx.x * 256LL + threadIdx.x; i < total; i += gridDim.x * 256LL) {
        int r = (int)(i / chunks), c0 = (int)(i - r * chunks) * 8;
        const uint16_t *row = src + (size_t)r * ld;
        /* the row's last chunk may be partial */
        uint4 v = c0 + 8 > cols ? load_chunk_scalar(row, c0, cols) : load_chunk_w<W>(row + c0);
        *reinterpret_cast<uint4 *>(dst + (size_t)r * ldd + c0) = v;
    }
}

static int ts_stage_copy(const uint16_t *src, int ld, int rows, int cols, uint16_t *dst, int ldd,
                         kb_stream_t stream)
{
    long long blocks = ((long long)(cols + 7) / 8 * rows + 255) / 256;
    int sms = sm_count(), cap = 16 * (sms > 0 ? sms : 132); /* enough to fill the GPU, no more */
    unsigned grid = (unsigned)(blocks < cap ? blocks : cap);
    switch (row_load_width(src, ld)) { /* never 8: aligned rows are read in place */
    case 4:
        gemm_stage_rows<4><<<grid, 256, 0, stream>>>(src, ld, rows, cols, dst, ldd);
        break;
    case 2:
        gemm_stage_rows<2><<<grid, 256, 0, stream>>>(src, ld, rows, cols, dst, ldd);
        break;
    default:
        gemm_stage_rows<1><<<grid, 256, 0, stream>>>(src, ld, rows, cols, dst, ldd);
    }
    return kb_gpu_launch_status();
}

/* The operands the TMA kernels read: A and B themselves where their rows are 16-byte aligned,
 * else their copies in ws (ts_stage_begin); ts_stage_end gives ws back. */
struct ts_staged {
    const uint16_t *A, *B;
    int lda, ldb;
    void *ws;
};

/* 0 with s filled (copies launched on stream where needed), or KBPKG_KERNEL_EUNSUPPORTED when
 * an operand would need a copy and copies are off (RF_GEMM_STAGE=0) or have no workspace. */
static int ts_stage_begin(ts_staged *s, int M, int N, int K, const uint16_t *A, int lda,
                          const uint16_t *B, int ldb, kb_stream_t stream)
{
    *s = {A, B, lda, ldb, nullptr};
    bool stage_a = !rows_aligned16(A, lda), stage_b = !rows_aligned16(B, ldb);
    if (!stage_a && !stage_b)
        return 0;
    const char *env = getenv("RF_GEMM_STAGE");
    if (env && env[0] == '0' && env[1] == '\0')
        return KBPKG_KERNEL_EUNSUPPORTED;
    s->lda = ts_read_ld(A, lda, K);
    s->ldb = ts_read_ld(B, ldb, N);
    /* B's copy starts on a 256-byte boundary after A's */
    size_t a_bytes = stage_a ? ((size_t)M * s->lda * 2 + 255) / 256 * 256 : 0;
    size_t b_bytes = stage_b ? (size_t)K * s->ldb * 2 : 0;
    if (!ts_ws_alloc(&s->ws, a_bytes + b_bytes, stream))
        return KBPKG_KERNEL_EUNSUPPORTED;
    int rc = 0;
    if (stage_a) {
        s->A = (const uint16_t *)s->ws;
        rc = ts_stage_copy(A, lda, M, K, (uint16_t *)s->A, s->lda, stream);
    }
    if (stage_b && rc == 0) {
        s->B = (const uint16_t *)((char *)s->ws + a_bytes);
        rc = ts_stage_copy(B, ldb, K, N, (uint16_t *)s->B, s->ldb, stream);
    }
    return rc;
}

/* Gives the copies' workspace back after the launches that read them (rc: their status). */
static int ts_stage_end(const ts_staged &s, int rc, kb_stream_t stream)
{
    if (s.ws && cudaFreeAsync(s.ws, stream) != cudaSuccess) {
        (void)cudaGetLastError();
        if (rc == 0)
            rc = KBPKG_KERNEL_ELAUNCH;
    }
    return rc;
}

/* The plan of an unforced launch (plan null, RF_GEMM_TMA_PLAN unset): the table's tile and split
 * count, in clusters where ts_cluster_pick moves it (wgmma builds), for operands read with
 * leading dimensions lda and ldb. */
template <bool WGMMA> static ts_plan ts_default_plan(int M, int N, int K, int lda, int ldb, int sms)
{
    ts_plan p = ts_choose(M, N, K, sms, TS_EPI_KTILES, WGMMA && ts_unaligned(lda, ldb));
    return WGMMA ? ts_cluster_pick(p, M, N, K, lda, ldb, sms) : p;
}

template <typename T, bool WGMMA, int EPI>
static int launch_tma_aligned(const ts_plan *plan, int M, int N, int K, float alpha,
                              const uint16_t *A, int lda, const uint16_t *B, int ldb, float beta,
                              uint16_t *C, int ldc, kb_stream_t stream);

/* K > 0 and a build whose TMA kernels run here; returns KBPKG_KERNEL_EUNSUPPORTED otherwise, when
 * the driver cannot encode tensor maps, or when rows not 16-byte aligned are not copied
 * (ts_stage_begin). plan: a row of kTsTiles and a split count, or null for the table's choice
 * (RF_GEMM_TMA_PLAN overrides that). EPI: the staged epilogue's columns per round (wgmma only;
 * the mma.sync consumer stores from registers). */
template <typename T, bool WGMMA, int EPI = RF_GEMM_EPI_COLS>
static int launch_tma_plan(const ts_plan *plan, int M, int N, int K, float alpha, const uint16_t *A,
                           int lda, const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                           kb_stream_t stream)
{
    constexpr int E = WGMMA ? EPI : 0;
    static const bool usable =
        kernel_code_at_least(gemm_tma<T, ts_cfg<128, 256, 1, E>, WGMMA, false, false>, 90);
    if (K == 0 || !usable)
        return KBPKG_KERNEL_EUNSUPPORTED;
    ts_staged s;
    int rc = ts_stage_begin(&s, M, N, K, A, lda, B, ldb, stream);
    if (rc == 0)
        rc = launch_tma_aligned<T, WGMMA, EPI>(plan, M, N, K, alpha, s.A, s.lda, s.B, s.ldb, beta,
                                               C, ldc, stream);
    return ts_stage_end(s, rc, stream);
}

/* launch_tma_plan on operands in 16-byte rows. */
template <typename T, bool WGMMA, int EPI>
static int launch_tma_aligned(const ts_plan *plan, int M, int N, int K, float alpha,
                              const uint16_t *A, int lda, const uint16_t *B, int ldb, float beta,
                              uint16_t *C, int ldc, kb_stream_t stream)
{
    /* the epilogue's staged columns are clamped to the tile's width here, so equal
     * configurations share kernels */
    constexpr int E = WGMMA ? EPI : 0, E128 = E < 128 ? E : 128;
    int sms = sm_count(), plan_sms = sms > 0 ? sms : 132; /* the model's SMs, unknown or not */
    ts_plan p;
    if (plan)
        p = *plan;
    else if (!ts_plan_from_env(&p) || p.tile >= TS_NTILES)
        p = ts_default_plan<WGMMA>(M, N, K, lda, ldb, plan_sms);
    int ktiles = (K + TS_BK - 1) / TS_BK;
    if (p.splits > ktiles) /* every split keeps at least one k-tile */
        p.splits = ktiles;
    if (!WGMMA) /* clusters: wgmma consumers only */
        p.tile = ts_plain_row(p.tile);
    if constexpr (WGMMA) { /* only wgmma builds instantiate the cluster rows */
        switch (p.tile) {
        case 4:
            return launch_tma_cfg<T, ts_cfg<128, 256, 1, E, 2>, WGMMA>(
                p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
        case 5:
            return launch_tma_cfg<T, ts_cfg<128, 128, 1, E128, 2>, WGMMA>(
                p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
        case 6:
            return launch_tma_cfg<T, ts_cfg<64, 256, 1, E, 2>, WGMMA>(
                p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
        case 7:
            return launch_tma_cfg<T, ts_cfg<64, 128, 1, E128, 2>, WGMMA>(
                p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
        case TS_2X2:
            return launch_tma_cfg<T, ts_cfg<128, 128, 1, E128, 2, 2>, WGMMA>(
                p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
        case TS_2X2 + 1:
            return launch_tma_cfg<T, ts_cfg<64, 128, 1, E128, 2, 2>, WGMMA>(
                p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
        }
    }
    switch (p.tile) {
    case 0:
        return launch_tma_cfg<T, ts_cfg<128, 256, 1, E>, WGMMA>(p.splits, sms, M, N, K, alpha, A,
                                                                lda, B, ldb, beta, C, ldc, stream);
    case 1:
        return launch_tma_cfg<T, ts_cfg<128, 128, 1, E128>, WGMMA>(
            p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    case 2:
        return launch_tma_cfg<T, ts_cfg<64, 256, 1, E>, WGMMA>(p.splits, sms, M, N, K, alpha, A,
                                                               lda, B, ldb, beta, C, ldc, stream);
    default:
        return launch_tma_cfg<T, ts_cfg<64, 128, 1, E128>, WGMMA>(
            p.splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    }
}

template <typename T, bool WGMMA>
static int launch_tma(int M, int N, int K, float alpha, const uint16_t *A, int lda,
                      const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                      kb_stream_t stream)
{
    return launch_tma_plan<T, WGMMA>(nullptr, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

/* ---- sm_90a decode (M <= 64): swap-AB wgmma tile streaming the weight through TMA ----
 * C^T = B^T A^T: 64 columns of the weight B are wgmma's A operand (the instruction's M = 64),
 * read from the TMA box of 64 k-rows x 64 columns (128 bytes, 128B-swizzled) as an MN-major
 * (transposed) operand, the same layout and descriptor the TMA kernels above give their B
 * operand; the tokens A are its B operand, K-major as the TMA kernels' A operand, TN = 8, 16
 * 32 or 64 rows (M padded by the copy engine's zero fill). A stage is the 8 KB weight box plus
 * TN x 128 bytes of tokens, so 16 stages fit (14 at TN = 64: 16 KB stages) where the 64x128 tile
 * keeps 8 stages of 24 KB whose A box is three quarters zero rows at M = 16. A block takes one
 * 64-column group (and one K part when split) at a time, walking units grid-stride (at most one
 * block per SM); one producer warp and one consumer warpgroup keeping one wgmma group in flight
 * (two warpgroups on alternate stages timed the same or slower on the H200: docs/perf.md "Eighth
 * pass"). The accumulators of m64nTN hold, per 8 tokens nn, weight column 16 (warp & 3) + g + 8
 * half and tokens 8 nn + 2t + {0,1}; C is written transposed from registers (M x 64 outputs per
 * unit). Split, every K part but a group's last writes fp32 partials to the workspace and counts
 * them on the group's flag; the last waits for them, adds them and writes C (no reduce kernel). */
constexpr int SW_COLS = 64;
#ifndef RF_GEMM_SWAP_STAGES
#define RF_GEMM_SWAP_STAGES 16
#endif
template <int TN_> struct sw_cfg {
    static constexpr int TN = TN_;
    static constexpr int B_BYTES = TS_BK * SW_COLS * 2, A_BYTES = TN * TS_BK * 2;
    static constexpr int STAGE_BYTES = B_BYTES + A_BYTES; /* multiples of 1024: swizzle atoms */
    static constexpr int THREADS = 128 + 32;
    static constexpr int FIT = (227 * 1024 - 2048 - 256) / STAGE_BYTES;
    static constexpr int STAGES = FIT < RF_GEMM_SWAP_STAGES ? FIT : RF_GEMM_SWAP_STAGES;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8;
    static_assert(STAGE_BYTES % 1024 == 0, "stages on swizzle atoms");
};

/* wgmma m64nTNk16, A (the weight) MN-major from shared memory (transpose flag 1), B (the
 * tokens) K-major (flag 0), fp32 accumulators d[TN / 2] added to. */
template <typename T, int TN>
__device__ __forceinline__ void wgmma_swap(float *d, uint64_t da, uint64_t db);
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define RF_SW_OP(TAG, TY, TN, DREGS, NA, NB, ...)                                                  \
    template <>                                                                                    \
    __device__ __forceinline__ void wgmma_swap<TAG, TN>(float *d, uint64_t da, uint64_t db)        \
    {                                                                                              \
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"                                    \
                     "wgmma.mma_async.sync.aligned.m64n" #TN "k16.f32." TY "." TY " " DREGS        \
                     ", %" #NA ", %" #NB ", p, 1, 1, 1, 0;\n}\n"                                   \
                     : __VA_ARGS__                                                                 \
                     : "l"(da), "l"(db));                                                          \
    }
#define RF_SW_D4 "{%0, %1, %2, %3}"
#define RF_SW_D8 "{%0, %1, %2, %3, %4, %5, %6, %7}"
#define RF_SW_D16 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define RF_SW_ACC4 "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
RF_SW_OP(kb_bf16_tag, "bf16", 8, RF_SW_D4, 4, 5, RF_SW_ACC4)
RF_SW_OP(kb_f16_tag, "f16", 8, RF_SW_D4, 4, 5, RF_SW_ACC4)
RF_SW_OP(kb_bf16_tag, "bf16", 16, RF_SW_D8, 8, 9, RF_WG_ACC8("+f", d, 0))
RF_SW_OP(kb_f16_tag, "f16", 16, RF_SW_D8, 8, 9, RF_WG_ACC8("+f", d, 0))
RF_SW_OP(kb_bf16_tag, "bf16", 32, RF_SW_D16, 16, 17, RF_WG_ACC8("+f", d, 0), RF_WG_ACC8("+f", d, 8))
RF_SW_OP(kb_f16_tag, "f16", 32, RF_SW_D16, 16, 17, RF_WG_ACC8("+f", d, 0), RF_WG_ACC8("+f", d, 8))
#define RF_SW_D32                                                                                  \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "  \
    "%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define RF_SW_ACC32                                                                                \
    RF_WG_ACC8("+f", d, 0), RF_WG_ACC8("+f", d, 8), RF_WG_ACC8("+f", d, 16), RF_WG_ACC8("+f", d, 24)
RF_SW_OP(kb_bf16_tag, "bf16", 64, RF_SW_D32, 32, 33, RF_SW_ACC32)
RF_SW_OP(kb_f16_tag, "f16", 64, RF_SW_D32, 32, 33, RF_SW_ACC32)
#undef RF_SW_ACC32
#undef RF_SW_OP
#else
template <typename T, int TN>
__device__ __forceinline__ void wgmma_swap(float *d, uint64_t da, uint64_t db)
{
}
#endif

/* Unit u of a swap launch: 64-column group u / splits, K part u % splits. */
__device__ __forceinline__ ts_unit sw_unit_of(int u, const ts_args &a, int splits)
{
    int ktiles = (a.K + TS_BK - 1) / TS_BK, per = (ktiles + splits - 1) / splits;
    ts_unit w;
    w.tile = 0;
    w.lower = 0;
    w.split = u % splits;
    w.m0 = 0;
    w.n0 = (u / splits) * SW_COLS;
    w.kbeg = w.split * per;
    w.kend = w.kbeg + per < ktiles ? w.kbeg + per : ktiles;
    return w;
}

/* f(i, gm, gn) for each of the consumer thread's outputs of unit w inside C: accumulator
 * nn * 4 + half * 2 + e of m64nTN holds weight column 16 (warp & 3) + g + 8 half of the group
 * (column gn of C) and token 8 nn + 2t + e (row gm). */
template <typename C, typename F>
__device__ __forceinline__ void sw_each_output(const ts_args &a, const ts_unit &w, F f)
{
    int warp = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
#pragma unroll
    for (int nn = 0; nn < C::TN / 8; nn++)
#pragma unroll
        for (int half = 0; half < 2; half++)
#pragma unroll
            for (int e = 0; e < 2; e++) {
                int gn = w.n0 + (warp & 3) * 16 + g + half * 8, gm = nn * 8 + t * 2 + e;
                if (gm < a.M && gn < a.N)
                    f(nn * 4 + half * 2 + e, gm, gn);
            }
}

template <typename T, typename C, bool SPLIT>
__global__ __launch_bounds__(C::THREADS, 1) void gemm_swap(const ts_args a,
                                                           const __grid_constant__ CUtensorMap tma,
                                                           const __grid_constant__ CUtensorMap tmb)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(1024) uint8_t sw_smem_raw[];
    uint8_t *smem = (uint8_t *)(((uintptr_t)sw_smem_raw + 1023) & ~(uintptr_t)1023);
    uint64_t *full = (uint64_t *)(smem + C::STAGES * C::STAGE_BYTES), *empty = full + C::STAGES;
    const int splits = SPLIT ? a.splits : 1;
    const int units = ((a.N + SW_COLS - 1) / SW_COLS) * splits;
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; s++) {
            mbar_init(&full[s], 1);
            mbar_init(&empty[s], 4); /* the 4 consumer warps */
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    }
    __syncthreads();
    if (warp == 4) { /* producer: the weight box, then the tokens' box, per k-tile */
        if (lane == 0) {
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tma) : "memory");
            asm volatile("prefetch.tensormap [%0];\n" ::"l"((uint64_t)&tmb) : "memory");
            int s = 0;
            unsigned phase = 0;
            for (int u = blockIdx.x; u < units; u += gridDim.x) {
                ts_unit w = sw_unit_of(u, a, splits);
                for (int kt = w.kbeg; kt < w.kend; kt++) {
                    mbar_wait(&empty[s], phase ^ 1);
                    mbar_expect_tx(&full[s], C::STAGE_BYTES);
                    uint8_t *sb = smem + s * C::STAGE_BYTES, *sa = sb + C::B_BYTES;
                    tma_load_2d(sb, &tmb, &full[s], w.n0, kt * TS_BK);
                    tma_load_2d(sa, &tma, &full[s], kt * TS_BK, 0);
                    if (++s == C::STAGES) {
                        s = 0;
                        phase ^= 1;
                    }
                }
            }
        }
        return;
    }
    int s = 0;
    unsigned phase = 0;
    for (int u = blockIdx.x; u < units; u += gridDim.x) {
        ts_unit w = sw_unit_of(u, a, splits);
        float d[C::TN / 2];
#pragma unroll
        for (int i = 0; i < C::TN / 2; i++)
            d[i] = 0.0f;
        int prev = -1;
        for (int kt = w.kbeg; kt < w.kend; kt++) {
            mbar_wait(&full[s], phase);
            uint32_t sb = smem_addr(smem + s * C::STAGE_BYTES), sa = sb + C::B_BYTES;
            asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
            for (int j = 0; j < TS_BK / 16; j++)
                wgmma_swap<T, C::TN>(d, wg_desc(sb + j * 2048, 8192, 1024),
                                     wg_desc(sa + j * 32, 16, 1024));
            asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
            /* one group stays in flight; the one before it is done with its stage */
            asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
            if (prev >= 0 && lane == 0)
                mbar_arrive(&empty[prev]);
            prev = s;
            if (++s == C::STAGES) {
                s = 0;
                phase ^= 1;
            }
        }
        asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
        if (prev >= 0 && lane == 0)
            mbar_arrive(&empty[prev]);
#pragma unroll
        for (int i = 0; i < C::TN / 2; i++) { /* the accumulators are read after the wait */
            asm volatile("" : "+f"(d[i])::"memory");
            d[i] *= a.alpha;
        }
        /* every K part but the group's last: its partial (alpha applied), counted on the flag */
        if (SPLIT && w.split < splits - 1) {
            float *slice = ts_slot(a, w.split, 0, 0);
            sw_each_output<C>(
                a, w, [&](int i, int gm, int gn) { slice[(size_t)gm * a.ldw + gn] = d[i]; });
            ts_partial_signal(&a.flags[w.n0 / SW_COLS], 0);
            continue;
        }
        if (SPLIT) { /* the group's last split: the others' partials, slice by slice, via L2 */
            ts_partials_wait(&a.flags[w.n0 / SW_COLS], splits - 1, 0);
            for (int sl = 0; sl < splits - 1; sl++) {
                const float *p = ts_slot_at(a, sl, 0, 0);
                sw_each_output<C>(a, w, [&](int i, int gm, int gn) {
                    d[i] += __ldcg(p + (size_t)gm * a.ldw + gn);
                });
            }
        }
        sw_each_output<C>(a, w, [&](int i, int gm, int gn) {
            uint16_t *c = a.C + (size_t)gm * a.ldc + gn;
            float v = d[i];
            if (a.beta != 0.0f)
                v += a.beta * kb_type<T>::load(*c);
            *c = kb_type<T>::store(v);
        });
    }
#else
    __trap(); /* launch_swap is only called from sm_90a builds */
#endif
}

template <typename T, typename C>
static int launch_swap_cfg(int splits, int sms, int M, int N, int K, float alpha, const uint16_t *A,
                           int lda, const uint16_t *B, int ldb, float beta, uint16_t *Cm, int ldc,
                           kb_stream_t stream)
{
    CUtensorMap ma, mb;
    if (!make_tensor_map(&ma, A, M, K, lda, C::TN) || !make_tensor_map(&mb, B, K, N, ldb, TS_BK))
        return KBPKG_KERNEL_EUNSUPPORTED;
    long long groups = (N + SW_COLS - 1) / SW_COLS;
    if (groups > 0x7fffffffLL / TS_MAX_SPLITS)
        return KBPKG_KERNEL_EINVAL;
    /* a split's partials are added by the last split of its column group, in the kernel: no
     * reduce launch (a flag per group counts the partials written) */
    ts_args a = ts_args_begin(1, M, N, K, alpha, beta, Cm, ldc, stream);
    if (splits > 1)
        ts_partials_begin(&a, splits, groups, stream);
    auto kernel = a.splits > 1 ? gemm_swap<T, C, true> : gemm_swap<T, C, false>;
    int rc = 0;
    static std::atomic<unsigned long long> smem_done[2];
    if (!ts_smem_limit_once(smem_done[a.splits > 1], kernel, C::SMEM_BYTES))
        rc = KBPKG_KERNEL_ELAUNCH;
    /* grid stride over units numbered group by group: with a grid that is a multiple of the
     * splits, a group's splits run in one pass of the grid on consecutive blocks, so the last
     * split's block waits only on lower blocks of its own pass (launch_swap keeps splits <= SMs) */
    long long units = groups * a.splits;
    unsigned grid = (unsigned)(sms > 0 && units > sms ? sms / a.splits * a.splits : units);
    if (rc == 0) {
        kernel<<<grid, C::THREADS, C::SMEM_BYTES, stream>>>(a, ma, mb);
        rc = kb_gpu_launch_status();
    }
    return ts_split_finish<T>(a, sms, rc, stream);
}

/* The default (sm_90a builds), unsplit: M <= 32 with at least SW_MIN_GROUPS 64-column groups,
 * and 33 <= M <= SW_DEFAULT_MAX_M (the 64-token box) with SW_MIN_GROUPS..SW_MAX_GROUPS_64 groups.
 * H200 (docs/perf.md "Eighth pass"): at M <= 32 faster than the TMA tiles' split plans and the
 * skinny kernel at 1x8192x8192, 8x4096x4096, 16x4096 / 5120 / 8192 squared, 16x28672x8192 (a
 * tie) and 32x8192x28672, and unsplit faster than split 2 or 4 down to 64 groups (16x4096x4096,
 * 64 blocks on 132 SMs). "Ninth pass": with the 64-token box faster than main's 64x128 tile at
 * 64x4096x4096 (15.7 -> 13.3 us graph), 48x4096x4096, 40x5120x5120 and 64x8192x8192 (a 1-3%
 * win: 128 groups, one wave), slower at 64x14336x4096 (224 groups, 1.7 waves: 31.7 -> 34.5),
 * so M 33..64 takes it up to 128 groups (N <= 8192). Fewer than 64 groups unsplit lost (16 x
 * 2048 / 1000 x 4096; split 4 won there, not a default yet), so narrower weights keep the plans
 * before. "Seventeenth pass" (H100): with the partials added in the kernel (no reduce launch)
 * splitting still loses from 64 groups up (1x4096x4096 16.8 us unsplit, 19.3 split 2, 21.9
 * split 4; 64x4096x4096 18.2 / 22.4 / 34.0): at 64 blocks the weight already streams at about
 * 2 TB/s, and more blocks on other K parts do not raise it. */
#ifndef RF_GEMM_SWAP_MAX_M
#define RF_GEMM_SWAP_MAX_M 64
#endif
constexpr int SW_DEFAULT_MAX_M = RF_GEMM_SWAP_MAX_M, SW_MIN_GROUPS = 64, SW_MAX_GROUPS_64 = 128;
/* The shape half of that default (the one rule: the dispatch and the benchmarks' plan labels). */
static inline bool sw_default_shape(int M, int N)
{
    int groups = (N + SW_COLS - 1) / SW_COLS;
    return M <= SW_DEFAULT_MAX_M && groups >= SW_MIN_GROUPS &&
           (M <= 32 || groups <= SW_MAX_GROUPS_64);
}

/* RF_GEMM_TMA_PLAN row past the table: 10 = the swap-AB decode tile (sm_90a builds, M <= 64). */
constexpr int TS_SWAP = TS_NTILES;

/* Needs M <= 64, K > 0 and A and B in 16-byte aligned rows: KBPKG_KERNEL_EUNSUPPORTED
 * otherwise (and in builds without wgmma). splits < 1: one. */
template <typename T>
static int launch_swap(int splits, int M, int N, int K, float alpha, const uint16_t *A, int lda,
                       const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                       kb_stream_t stream)
{
    if (!kTargetIsSm90a || M > 64 || K == 0 || !rows_aligned16(A, lda) || !rows_aligned16(B, ldb))
        return KBPKG_KERNEL_EUNSUPPORTED;
    if constexpr (kTargetIsSm90a) {
        static const bool usable = kernel_code_at_least(gemm_swap<T, sw_cfg<16>, false>, 90);
        if (!usable)
            return KBPKG_KERNEL_EUNSUPPORTED;
        int sms = sm_count();
        int ktiles = (K + TS_BK - 1) / TS_BK;
        if (splits < 1)
            splits = 1;
        if (splits > ktiles)
            splits = ktiles;
        if (sms > 0 && splits > sms) /* a group's splits in one pass of the grid */
            splits = sms;
#define RF_SW_LAUNCH(TN)                                                                           \
    launch_swap_cfg<T, sw_cfg<TN>>(splits, sms, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,      \
                                   stream)
        return M <= 8    ? RF_SW_LAUNCH(8)
               : M <= 16 ? RF_SW_LAUNCH(16)
               : M <= 32 ? RF_SW_LAUNCH(32)
                         : RF_SW_LAUNCH(64);
#undef RF_SW_LAUNCH
    }
    return KBPKG_KERNEL_EUNSUPPORTED;
}

/* ---- skinny M (decode, M <= 64): swap-AB mma.sync streaming the weight from global ----
 * C^T = B^T A^T: the weight B is the mma's A operand (16 columns n x 16 k), the tokens are its
 * B operand (16 k x 8 tokens), so M = 1 pads 7 of 8 mma columns, not 63 of 64 tile rows, and B
 * goes straight from DRAM to registers (no shared memory, no TMA): the kernel is a stream of B
 * at the bandwidth the loads in flight allow. Each warp owns 64 columns of B: lane (g, t) loads
 * the 16 bytes of columns [n0 + 8g, +8) of 4 k-rows per 16-row step (one load instruction
 * reads 4 rows x 128 contiguous bytes, whole lines). The mma sums over k, so k may be
 * relabelled as long as both operands agree: in a batch of U steps lane t holds k-rows
 * [kb, kb + 4U), kb = 16 U-step base + 4U t, and step u's rows kb + 4u + q (q = 0..3) play the
 * mma's k 2t, 2t+1, 2t+8, 2t+9; the lane's tokens are then 4U consecutive halves of each row
 * of A (16-byte loads, whole sectors). m16n8k16's A fragment (as ldmatrix gives it to gemm_mma
 * above) is a0 = (row g; k 2t, 2t+1), a1 = (row g+8; same k), a2/a3 = the same at k + 8; so
 * for j = 0..3, mma j takes columns n0 + 8g + 2j as its row g and n0 + 8g + 2j + 1 as its row
 * g + 8, each a0..a3 two halves of two loaded rows put side by side by __byte_perm. Its
 * accumulator (row g, g+8; columns 2t, 2t+1) is then C[8f + 2t (+1)][n0 + 8g + 2j (+1)]: the
 * lane holds pairs of adjacent columns of C.
 * Warps of a block take turns along K (U steps each) over the block's K range and add up
 * through shared memory in warp order; blocks split K further (`splits`) into the split-K
 * workspace of the TMA kernels, which gemm_tma_reduce adds in split order: results are the
 * same bit for bit from run to run. */
constexpr int SK_MAX_M = 64, SK_COLS = 64, SK_STEP = 16;

/* Steps (16 k-rows) per batch of loads a warp keeps in flight: 4 x U 16-byte loads per lane. */
template <int MF> struct sk_unroll {
    static constexpr int U = MF <= 4 ? 4 : 2;
    /* two blocks of 8 warps per SM where 128 registers hold it without spills (ptxas -v: MF
     * 2 spilled 84 bytes at 128) */
    static constexpr int MIN_BLOCKS = MF == 1 ? 2 : 1;
};

/* 16 bytes of B, read once: no L1 allocation (HINT: ask L2 to fetch 256-byte blocks). */
template <bool HINT> __device__ __forceinline__ uint4 sk_ld16(const uint16_t *p)
{
    uint4 v;
    if (HINT)
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
    else
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                     : "l"(p));
    return v;
}

/* Columns [col, col + 8) of k-row kr of B in loads of W elements (row_load_width of B; 8: one
 * 16-byte load that skips L1); zeros past K and N. */
template <bool HINT, int W>
__device__ __forceinline__ uint4 sk_load_b(const uint16_t *B, int ldb, int kr, int col, int N,
                                           int K)
{
    if (kr >= K || col >= N)
        return make_uint4(0, 0, 0, 0);
    const uint16_t *row = B + (size_t)kr * ldb;
    if (col + 8 > N)
        return load_chunk_scalar(row, col, N);
    if constexpr (W == 8)
        return sk_ld16<HINT>(row + col);
    else
        return load_chunk_w<W>(row + col);
}

/* Tokens m, k-columns [k, k + 8) of A; zeros past M and K. vec: A and lda allow 16-byte loads. */
__device__ __forceinline__ uint4 sk_load_a(const uint16_t *A, int lda, int m, int k, int M, int K,
                                           bool vec)
{
    if (m >= M || k >= K)
        return make_uint4(0, 0, 0, 0);
    const uint16_t *row = A + (size_t)m * lda;
    if (vec && k + 8 <= K)
        return __ldg(reinterpret_cast<const uint4 *>(row + k));
    return load_chunk_scalar(row, k, K);
}

template <int J> __device__ __forceinline__ uint32_t sk_word(const uint4 &v)
{
    return J == 0 ? v.x : J == 1 ? v.y : J == 2 ? v.z : v.w;
}

/* One 16-row step: the four m16n8k16 of the lane's loaded rows r (the mma's k 2t, 2t+1, 2t+8,
 * 2t+9) against MF fragments of 8 tokens. */
template <typename T, int MF, int J>
__device__ __forceinline__ void sk_mma(float (&acc)[4][MF][4], const uint4 (&r)[4],
                                       const uint32_t (&tok)[MF][2])
{
    uint32_t w0 = sk_word<J>(r[0]), w1 = sk_word<J>(r[1]), w2 = sk_word<J>(r[2]),
             w3 = sk_word<J>(r[3]);
    /* low halves: column 2J (row g of the fragment); high halves: column 2J + 1 (row g + 8) */
    uint32_t af[4] = {__byte_perm(w0, w1, 0x5410), __byte_perm(w0, w1, 0x7632),
                      __byte_perm(w2, w3, 0x5410), __byte_perm(w2, w3, 0x7632)};
#pragma unroll
    for (int f = 0; f < MF; f++)
        mma_16816<T>(acc[J][f], af, tok[f]);
}

/* Block (group, split): columns [64 group, +64) of C over k-steps [split * per, +per), per a
 * multiple of U; blockDim.x / 32 warps; shared memory: warps x 16 MF x 32 floats. */
template <typename T, int MF, bool HINT, int W>
__global__ __launch_bounds__(256, sk_unroll<MF>::MIN_BLOCKS) void gemm_skinny(
    const ts_args a, const uint16_t *__restrict__ A, int lda, const uint16_t *__restrict__ B,
    int ldb, bool a_vec, int per)
{
    constexpr int U = sk_unroll<MF>::U, PER_LANE = 16 * MF;
    extern __shared__ float sk_red[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int g = lane >> 2, t = lane & 3;
    const int groups = (a.N + SK_COLS - 1) / SK_COLS;
    const int group = blockIdx.x % groups, split = blockIdx.x / groups;
    const int col = group * SK_COLS + 8 * g;
    const int steps = (a.K + SK_STEP - 1) / SK_STEP;
    const int s_end = min(steps, (split + 1) * per);

    float acc[4][MF][4];
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
        for (int f = 0; f < MF; f++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                acc[j][f][r] = 0.0f;

    for (int s0 = split * per + warp * U; s0 < s_end; s0 += warps * U) {
        /* the batch's 16 U k-rows, relabelled: lane t holds rows kb .. kb + 4U - 1, step u
         * the 4 rows kb + 4u + q as the mma's k 2t, 2t+1, 2t+8, 2t+9 (q = 0..3), so the
         * tokens of a lane are 4U consecutive halves of A: 16-byte loads */
        const int kb = s0 * SK_STEP + 4 * U * t;
        uint4 rows[U][4]; /* every load of the batch before the first use */
#pragma unroll
        for (int u = 0; u < U; u++)
#pragma unroll
            for (int q = 0; q < 4; q++)
                rows[u][q] = sk_load_b<HINT, W>(B, ldb, kb + 4 * u + q, col, a.N, a.K);
        uint4 toks[MF][U / 2];
#pragma unroll
        for (int f = 0; f < MF; f++)
#pragma unroll
            for (int c = 0; c < U / 2; c++)
                toks[f][c] = sk_load_a(A, lda, 8 * f + g, kb + 8 * c, a.M, a.K, a_vec);
#pragma unroll
        for (int u = 0; u < U; u++) {
            uint32_t tok[MF][2]; /* halves 4u, 4u+1 and 4u+2, 4u+3 of the lane's tokens */
#pragma unroll
            for (int f = 0; f < MF; f++) {
                const uint4 &c = toks[f][u / 2];
                tok[f][0] = u % 2 ? c.z : c.x;
                tok[f][1] = u % 2 ? c.w : c.y;
            }
            sk_mma<T, MF, 0>(acc, rows[u], tok);
            sk_mma<T, MF, 1>(acc, rows[u], tok);
            sk_mma<T, MF, 2>(acc, rows[u], tok);
            sk_mma<T, MF, 3>(acc, rows[u], tok);
        }
    }

    /* Every warp's accumulators to shared memory, lane-major (no bank conflicts); then warp w
     * sums output pairs w, w + warps, ... over the warps in order, as the same lane. A pair is
     * (j, f, h): row 8f + 2t + h, columns col + 2j, +1, the accumulators h and h + 2. */
    float *mine = sk_red + (size_t)warp * PER_LANE * 32;
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
        for (int f = 0; f < MF; f++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                mine[((j * MF + f) * 4 + r) * 32 + lane] = acc[j][f][r];
    __syncthreads();
    for (int p = warp; p < 8 * MF; p += warps) {
        int jf = p >> 1, h = p & 1, j = jf / MF, f = jf % MF;
        float v0 = 0.0f, v1 = 0.0f;
        for (int w = 0; w < warps; w++) {
            v0 += sk_red[((size_t)w * PER_LANE + jf * 4 + h) * 32 + lane];
            v1 += sk_red[((size_t)w * PER_LANE + jf * 4 + h + 2) * 32 + lane];
        }
        int gm = 8 * f + 2 * t + h, gn = col + 2 * j;
        if (a.splits > 1)
            ts_emit<T, true>(a, split, gm, gn, a.alpha * v0, a.alpha * v1);
        else
            ts_emit<T, false>(a, split, gm, gn, a.alpha * v0, a.alpha * v1);
    }
}

/* splits: K parts over blocks (0: choose); warps: per block, 1..8 (0: 8); hint: L2 256-byte
 * fetches for B. */
struct sk_plan {
    int splits, warps;
    bool hint;
};

/* One wave: as many K parts as keep every block resident at once (blocks_per_sm from the
 * occupancy calculator), each warp with at least one batch of loads. */
static int sk_choose_splits(int groups, int steps, int unroll, int warps, int sms,
                            int blocks_per_sm)
{
    int slots = (sms > 0 ? sms : 132) * (blocks_per_sm > 0 ? blocks_per_sm : 1);
    int s = slots / groups, cap = steps / (unroll * warps);
    if (s > cap)
        s = cap;
    if (s > TS_MAX_SPLITS)
        s = TS_MAX_SPLITS;
    return s < 1 ? 1 : s;
}

template <typename T, int MF, bool HINT, int W>
static int launch_skinny_mf(const sk_plan &plan, int M, int N, int K, float alpha,
                            const uint16_t *A, int lda, const uint16_t *B, int ldb, float beta,
                            uint16_t *C, int ldc, kb_stream_t stream)
{
    constexpr int U = sk_unroll<MF>::U;
    auto kernel = gemm_skinny<T, MF, HINT, W>;
    int warps = plan.warps >= 1 && plan.warps <= 8 ? plan.warps : 8;
    int smem = warps * 16 * MF * 32 * (int)sizeof(float);
    if (smem > 48 * 1024 && kb_gpu_func_set_max_dyn_smem(kernel, smem) != kb_gpu_success)
        return KBPKG_KERNEL_ELAUNCH;
    int sms = sm_count();
    int groups = (N + SK_COLS - 1) / SK_COLS, steps = (K + SK_STEP - 1) / SK_STEP;
    int splits = plan.splits;
    if (splits < 1) {
        int occ = 0;
        if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernel, warps * 32, smem) !=
            cudaSuccess) {
            (void)cudaGetLastError();
            occ = 1;
        }
        splits = sk_choose_splits(groups, steps, U, warps, sms, occ);
    }
    if (splits > TS_MAX_SPLITS)
        splits = TS_MAX_SPLITS;
    /* steps per part, a multiple of U so no batch crosses into the next part */
    int per = (steps + splits - 1) / splits;
    per = (per + U - 1) / U * U;
    splits = (steps + per - 1) / per;
    ts_args a = ts_args_begin(splits, M, N, K, alpha, beta, C, ldc, stream);
    if (a.splits < splits) /* no workspace: one part, the whole of K */
        per = (steps + U - 1) / U * U;
    bool a_vec = rows_aligned16(A, lda);
    long long blocks = (long long)groups * a.splits;
    int rc = 0;
    if (blocks > 0x7fffffffLL)
        rc = KBPKG_KERNEL_EINVAL;
    if (rc == 0) {
        kernel<<<(unsigned)blocks, warps * 32, smem, stream>>>(a, A, lda, B, ldb, a_vec, per);
        rc = kb_gpu_launch_status();
    }
    return ts_split_finish<T>(a, sms, rc, stream);
}

/* One token-fragment count MF: B's load width picked from its rows' alignment (the L2 hint
 * only with 16-byte loads). */
template <typename T, int MF>
static int launch_skinny_w(const sk_plan &p, int M, int N, int K, float alpha, const uint16_t *A,
                           int lda, const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                           kb_stream_t stream)
{
#define RF_SK_LAUNCH(HINT, W)                                                                      \
    launch_skinny_mf<T, MF, HINT, W>(p, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream)
    switch (row_load_width(B, ldb)) {
    case 8:
        return p.hint ? RF_SK_LAUNCH(true, 8) : RF_SK_LAUNCH(false, 8);
    case 4:
        return RF_SK_LAUNCH(false, 4);
    case 2:
        return RF_SK_LAUNCH(false, 2);
    default:
        return RF_SK_LAUNCH(false, 1);
    }
#undef RF_SK_LAUNCH
}

/* Needs M <= 64 and K > 0: KBPKG_KERNEL_EUNSUPPORTED otherwise. B's rows may start anywhere:
 * they are read in place in the widest loads their alignment allows. plan: null for the
 * default. */
template <typename T>
static int launch_skinny(const sk_plan *plan, int M, int N, int K, float alpha, const uint16_t *A,
                         int lda, const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                         kb_stream_t stream)
{
    if (M > SK_MAX_M || K == 0)
        return KBPKG_KERNEL_EUNSUPPORTED;
    sk_plan p = plan ? *plan : sk_plan{0, 0, false};
    if (M <= 8)
        return launch_skinny_w<T, 1>(p, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    if (M <= 16)
        return launch_skinny_w<T, 2>(p, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    if (M <= 32)
        return launch_skinny_w<T, 4>(p, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
    return launch_skinny_w<T, 8>(p, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

/* Largest M that takes the skinny kernel in this build (H200, docs/perf.md "Skinny M"): on
 * sm_90/sm_90a it beats the TMA kernels at M = 1 (one token fragment, up to M = 8) and loses
 * from M = 16 on; sm_80..sm_89 builds have only the cp.async kernel, which it beats 2-5x at
 * every M <= 64 (timed on the H200 as a stand-in). A B whose rows do not start on 16 bytes is
 * read in place here rather than copied whole for the TMA kernels (read and written, then the
 * copy read: three times the bytes), in every build: in 4- or 8-byte loads at every M <= 64
 * (H100: 1.19-1.96x the copy at M = 16-64), in 2-byte loads (odd ldb) at M <= 8 only (1.47-1.80x
 * there; 0.75-0.98x at M = 16-64, where 8 loads per chunk cost more than the copy;
 * docs/perf.md "Fourteenth pass"). RF_GEMM_SKINNY="maxm[,splits[,warps]]" overrides all of
 * these (0 turns it off) and forces a plan: the package check and the benchmarks use it. */
constexpr int SK_MAX_M_SM90A = 8, SK_MAX_M_SM90 = 8, SK_MAX_M_OTHER = 64;
constexpr int SK_DEFAULT_MAX_M = kTargetIsSm90a  ? SK_MAX_M_SM90A
                                 : kTargetIsSm90 ? SK_MAX_M_SM90
                                                 : SK_MAX_M_OTHER;
constexpr int SK_NARROW_MAX_M = 8; /* B read 2 bytes at a time */

/* The default largest M for a B whose chunks load width elements at a time (row_load_width) */
static int sk_default_max_m(int width)
{
    return width == 8 ? SK_DEFAULT_MAX_M : width > 1 ? SK_MAX_M : SK_NARROW_MAX_M;
}

static int sk_max_m_from_env(sk_plan *p, int b_width)
{
    *p = sk_plan{0, 0, false};
    const int def = sk_default_max_m(b_width);
    const char *s = getenv("RF_GEMM_SKINNY");
    if (!s || !*s)
        return def;
    char *end;
    long maxm = strtol(s, &end, 10);
    if (end == s || maxm < 0 || maxm > SK_MAX_M)
        return def;
    if (*end == ',') {
        long splits = strtol(end + 1, &end, 10);
        if (splits >= 0 && splits <= TS_MAX_SPLITS)
            p->splits = (int)splits;
        if (*end == ',') {
            long warps = strtol(end + 1, &end, 10);
            if (warps >= 0 && warps <= 8)
                p->warps = (int)warps;
        }
    }
    return (int)maxm;
}

/* 16-byte cp.async needs 16-byte aligned rows; otherwise that operand takes scalar loads. */
template <typename T, int BM, int BN, int BK, int STAGES>
static int launch_mma(int M, int N, int K, float alpha, const uint16_t *A, int lda,
                      const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc,
                      kb_stream_t stream)
{
    bool avec = rows_aligned16(A, lda), bvec = rows_aligned16(B, ldb);
    if (avec && bvec)
        return launch_mma_variant<T, BM, BN, BK, STAGES, true, true>(M, N, K, alpha, A, lda, B, ldb,
                                                                     beta, C, ldc, stream);
    if (avec)
        return launch_mma_variant<T, BM, BN, BK, STAGES, true, false>(M, N, K, alpha, A, lda, B,
                                                                      ldb, beta, C, ldc, stream);
    if (bvec)
        return launch_mma_variant<T, BM, BN, BK, STAGES, false, true>(M, N, K, alpha, A, lda, B,
                                                                      ldb, beta, C, ldc, stream);
    return launch_mma_variant<T, BM, BN, BK, STAGES, false, false>(M, N, K, alpha, A, lda, B, ldb,
                                                                   beta, C, ldc, stream);
}
#endif

#if defined(KB_GPU_CUDA)
/* The wgmma configuration of sm_90a builds (bench/gpu/gemm_bench.cu times them all). */
#ifndef RF_GEMM_WG_BN
#define RF_GEMM_WG_BN 256
#endif
#ifndef RF_GEMM_WG_PIPE
#define RF_GEMM_WG_PIPE 1
#endif

#endif

/* The default configuration for 16-bit inputs, chosen from docs/perf-gpu-notes.md. */
template <typename T>
static int gemm_16bit(int M, int N, int K, float alpha, const uint16_t *A, int lda,
                      const uint16_t *B, int ldb, float beta, uint16_t *C, int ldc, void *stream)
{
    int rc = rf_gemm_check_args(M, N, K, A, lda, B, ldb, C, ldc);
    if (rc != 0 || M == 0 || N == 0)
        return rc;
    kb_stream_t s = (kb_stream_t)stream;
#if defined(KB_GPU_CUDA)
    if constexpr (kTargetIsSm90a) {
        /* decode: the swap-AB wgmma tile, forced by RF_GEMM_TMA_PLAN row 10 or by default (A
         * and B in 16-byte rows; otherwise the kernels below); a forced TMA plan or skinny
         * setting (RF_GEMM_SKINNY) turns the default off, so those kernels stay reachable */
        ts_plan fp;
        int splits = 0;
        if (ts_plan_from_env(&fp)) {
            if (fp.tile == TS_SWAP)
                splits = fp.splits;
        } else if (sw_default_shape(M, N) && !getenv("RF_GEMM_SKINNY")) {
            splits = 1;
        }
        if (splits > 0) {
            rc = launch_swap<T>(splits, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, s);
            if (rc != KBPKG_KERNEL_EUNSUPPORTED)
                return rc;
        }
    }
    sk_plan sp;
    if (M <= sk_max_m_from_env(&sp, row_load_width(B, ldb))) {
        /* decode sizes: stream B through the swap-AB mma.sync kernel */
        rc = launch_skinny<T>(&sp, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, s);
        if (rc != KBPKG_KERNEL_EUNSUPPORTED)
            return rc;
    }
    if constexpr (kTargetIsSm90) {
        /* TMA + warp-specialized persistent kernel, tile and split from the table: wgmma on
         * sm_90a, mma.sync on sm_90 (each build instantiates only its own consumer) */
        if constexpr (kTargetIsSm90a)
            rc = launch_tma<T, true>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, s);
        else
            rc = launch_tma<T, false>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, s);
        /* rows not 16-byte aligned and not copied (RF_GEMM_STAGE=0, no workspace): below */
        if (rc != KBPKG_KERNEL_EUNSUPPORTED)
            return rc;
    }
    if (kTargetIsSm90a) {
        rc = launch_wgmma<T, RF_GEMM_WG_BN, RF_GEMM_WG_PIPE != 0>(M, N, K, alpha, A, lda, B, ldb,
                                                                  beta, C, ldc, s);
        if (rc != KBPKG_KERNEL_EUNSUPPORTED) /* unaligned rows: the mma.sync kernel below */
            return rc;
    }
    bool aligned = rows_aligned16(A, lda) && rows_aligned16(B, ldb);
    long long wide_tiles = (long long)((M + 127) / 128) * ((N + 255) / 256);
    /* 128x256 tiles read shared memory less per flop, but need enough tiles to fill the GPU
     * and lose to 128x128 when a scalar-load operand doubles their load time */
    if (aligned && wide_tiles >= 2LL * sm_count())
        return launch_mma<T, 128, 256, 64, 3>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, s);
    return launch_mma<T, 128, 128, 64, 3>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, s);
#else
    return launch_simt<T>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, s);
#endif
}

} // namespace rf

extern "C" {

KBPKG_DEFINE_KERNEL_INFO(KB_GPU_BACKEND)

KBPKG_EXPORT int rf_gemm_bf16(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                              const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc,
                              void *stream)
{
    return rf::gemm_16bit<kb_bf16_tag>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

KBPKG_EXPORT int rf_gemm_f16(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                             const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc,
                             void *stream)
{
    return rf::gemm_16bit<kb_f16_tag>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, stream);
}

KBPKG_EXPORT int rf_gemm_f32(int M, int N, int K, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc, void *stream)
{
    int rc = rf_gemm_check_args(M, N, K, A, lda, B, ldb, C, ldc);
    if (rc != 0 || M == 0 || N == 0)
        return rc;
    return rf::launch_simt<float>(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc,
                                  (kb_stream_t)stream);
}
}
