/* radeonflow/gemm FP8 block-scaled GEMM for CUDA targets with FP8 mma.sync but no wgmma path
 * (sm_89, plain sm_90): cp.async multistage, ldmatrix, m16n8k32 e4m3, promoted per 128 of K. */
#include "gemm_cpu.h"

#include <stdint.h>

#include "kb_gpu_compat.h"
#include <kbpkg/kernel_abi.h>
#include "gemm_fp8_mma.h"
#include "mma_common.cuh"
#include "rf_gemm.h"
#include "sm90.cuh"

namespace rf_fp8
{
using namespace rf;

/* Only the sm_89 and sm_90(a) artifacts carry FP8 mma.sync SASS; the others keep a trap. */
constexpr bool kTargetHasFp8Mma = contains(KBPKG_TARGET, "sm_89") || kTargetIsSm90;

/*
 * Block tile BM x 128, one 128-wide scale block of K per stage (BM + 128 rows of 128 bytes),
 * 8 warps as 2 (M) x 4 (N), each warp BM/2 x 32. Shared rows are 128 bytes, 16-byte chunk c
 * of row r stored at c ^ (r & 7), so the 8 rows of every ldmatrix phase hit 8 distinct bank
 * groups. Both operands are K-major: the m16n8k32 e4m3 fragments have the byte layout of the
 * m16n8k16 16-bit ones, so plain (untransposed) ldmatrix .b16 feeds A and B alike.
 * BM 64 is for problems with fewer 128 x 128 tiles than SMs (e.g. M = 128 at LLM widths).
 */
constexpr int Q_BN = 128, Q_BK = RF_FP8_BLOCK, Q_THREADS = 256;
static_assert(Q_BN == RF_FP8_BLOCK, "one B scale per tile and K block");

template <int BM, int STAGES> struct q_cfg {
    static constexpr int WTM = BM / 2, MF = WTM / 16, NF = 32 / 8;
    static constexpr int STAGE_BYTES = (BM + Q_BN) * Q_BK;
    static constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;
    /* BM 128 keeps two fp32 tiles (block partial + accumulator) per thread: one block per SM */
    static constexpr int MIN_BLOCKS = BM == 128 ? 1 : 2;
};

__device__ __forceinline__ int q_off(int row, int chunk)
{
    return row * Q_BK + ((chunk ^ (row & 7)) << 4);
}

/* rows x 128 bytes of K block kb from a [rows_total, K] K-major operand; rows past the end
 * are zero-filled (their outputs are never stored). */
template <int ROWS>
__device__ __forceinline__ void q_load(uint8_t *dst, const uint8_t *src, int rows_total, int row0,
                                       int K, int kb)
{
#pragma unroll
    for (int c = threadIdx.x; c < ROWS * 8; c += Q_THREADS) {
        int row = c >> 3, ch = c & 7;
        bool in = row0 + row < rows_total;
        const uint8_t *p = in ? src + (size_t)(row0 + row) * K + kb * Q_BK + ch * 16 : src;
        cp_async_16(smem_addr(dst + q_off(row, ch)), p, in ? 16 : 0);
    }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
/* Hopper has no FP8 mma.sync unit: ptxas lowers m16n8k32 e4m3 to conversions and two f16
 * HMMA per instruction (NVIDIA/cutlass#1986). Converting each fragment once ourselves shares
 * the conversions among the mma that reuse it. RF_FP8_MMA_PTX_ON_SM90 keeps the PTX
 * instruction there (to time the two against each other). */
#if __CUDA_ARCH__ == 900 && !defined(RF_FP8_MMA_PTX_ON_SM90)
#define RF_FP8_MMA_VIA_F16 1
#endif

/* d += a x b, the m16n8k32 e4m3 fragments (a: 4 registers, b: 2; 4 bytes of K each). */
__device__ __forceinline__ void mma_fp8_16832(float *d, const uint32_t *a, const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Two e4m3 (the low or high half of v) to two f16, exactly (f16 holds every e4m3 value). */
__device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint32_t v, int high)
{
    uint32_t r;
    uint16_t h = (uint16_t)(high ? v >> 16 : v);
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(r) : "h"(h));
    return r;
}

/*
 * The f16 operands of the two m16n8k16 that do one m16n8k32 e4m3 step. An e4m3 register holds
 * K bytes 4t..4t+3 (+16 for registers 2, 3) where an f16 register holds K 2t, 2t+1 (+8): K is
 * a sum, so any order of it serves that A and B share. Step 0 takes K bytes 4t, 4t+1 as f16
 * slots 2t, 2t+1 and 4t+2, 4t+3 as slots 2t+8, 2t+9; step 1 the same of bytes 16-31.
 */
__device__ __forceinline__ void q_a_to_f16(uint32_t (*h)[4], const uint32_t *a)
{
#pragma unroll
    for (int s = 0; s < 2; s++) {
        h[s][0] = e4m3x2_to_f16x2(a[2 * s], 0);
        h[s][1] = e4m3x2_to_f16x2(a[2 * s + 1], 0);
        h[s][2] = e4m3x2_to_f16x2(a[2 * s], 1);
        h[s][3] = e4m3x2_to_f16x2(a[2 * s + 1], 1);
    }
}
__device__ __forceinline__ void q_b_to_f16(uint32_t (*h)[2], const uint32_t *b)
{
#pragma unroll
    for (int s = 0; s < 2; s++) {
        h[s][0] = e4m3x2_to_f16x2(b[s], 0);
        h[s][1] = e4m3x2_to_f16x2(b[s], 1);
    }
}
#endif

/* Columns (n, n + 1) of row m as bf16; pairs is "C and N allow 4-byte stores". */
__device__ __forceinline__ void q_store_pair(uint16_t *C, int M, int N, bool pairs, int m, int n,
                                             float v0, float v1)
{
    if (m >= M)
        return;
    uint16_t *p = C + (size_t)m * N + n;
    if (pairs && n + 1 < N) {
        *reinterpret_cast<uint32_t *>(p) = kb_f32x2_to_bf16x2(v0, v1);
        return;
    }
    if (n < N)
        p[0] = kb_f32_to_bf16(v0);
    if (n + 1 < N)
        p[1] = kb_f32_to_bf16(v1);
}

template <int BM, int STAGES>
__global__ __launch_bounds__(Q_THREADS, (q_cfg<BM, STAGES>::MIN_BLOCKS)) void gemm_fp8_mma(
    int M, int N, int K, const uint8_t *__restrict__ A, const float *__restrict__ scale_a,
    const uint8_t *__restrict__ B, const float *__restrict__ scale_b, uint16_t *C, bool pairs)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    typedef q_cfg<BM, STAGES> cfg;
    extern __shared__ __align__(128) uint8_t q_smem[];
    int m0 = blockIdx.y * BM, n0 = blockIdx.x * Q_BN;
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wm = warp >> 2, wn = warp & 3;
    int g = lane >> 2, t = lane & 3;
    int kblocks = K / Q_BK;
    const float *sb = scale_b + (size_t)(n0 / RF_FP8_BLOCK) * kblocks;
    /* this thread's rows: fragment i, half h is row m0 + wm * WTM + 16 i + 8 h + g; rows past
     * M read row M - 1's scales (never stored) */
    const float *sa[cfg::MF][2];
#pragma unroll
    for (int i = 0; i < cfg::MF; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int m = m0 + wm * cfg::WTM + 16 * i + 8 * h + g;
            sa[i][h] = scale_a + (size_t)(m < M ? m : M - 1) * kblocks;
        }

    float acc[cfg::MF][cfg::NF][4];
    zero_frags(acc);

#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < kblocks) {
            uint8_t *st = q_smem + s * cfg::STAGE_BYTES;
            q_load<BM>(st, A, M, m0, K, s);
            q_load<Q_BN>(st + BM * Q_BK, B, N, n0, K, s);
        }
        cp_async_commit();
    }

    for (int kb = 0; kb < kblocks; kb++) {
        /* this block's scales load under its mma */
        float s_b = __ldg(sb + kb), s_a[cfg::MF][2];
#pragma unroll
        for (int i = 0; i < cfg::MF; i++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                s_a[i][h] = __ldg(sa[i][h] + kb);

        cp_async_wait<STAGES - 2>();
        __syncthreads(); /* stage kb is in; every warp is done with stage kb - 1 */
        int next = kb + STAGES - 1;
        if (next < kblocks) {
            uint8_t *st = q_smem + (next % STAGES) * cfg::STAGE_BYTES;
            q_load<BM>(st, A, M, m0, K, next);
            q_load<Q_BN>(st + BM * Q_BK, B, N, n0, K, next);
        }
        cp_async_commit();

        const uint8_t *sa_s = q_smem + (kb % STAGES) * cfg::STAGE_BYTES;
        const uint8_t *sb_s = sa_s + BM * Q_BK;
        float part[cfg::MF][cfg::NF][4];
        zero_frags(part);
#pragma unroll
        for (int kk = 0; kk < Q_BK / 32; kk++) {
            uint32_t af[cfg::MF][4], bfr[cfg::NF][2];
#pragma unroll
            for (int i = 0; i < cfg::MF; i++) {
                /* matrices: rows 0-7 / 8-15 x bytes 0-15, then the same x bytes 16-31 */
                int row = wm * cfg::WTM + i * 16 + (lane & 15);
                ldmatrix_x4(af[i], smem_addr(sa_s + q_off(row, kk * 2 + (lane >> 4))));
            }
#pragma unroll
            for (int j = 0; j < cfg::NF; j += 2) {
                /* matrices: n-tile j bytes 0-15, 16-31, then n-tile j + 1 bytes 0-15, 16-31 */
                int mi = lane >> 3;
                int row = wn * 32 + j * 8 + (mi >> 1) * 8 + (lane & 7);
                uint32_t r[4];
                ldmatrix_x4(r, smem_addr(sb_s + q_off(row, kk * 2 + (mi & 1))));
                bfr[j][0] = r[0];
                bfr[j][1] = r[1];
                bfr[j + 1][0] = r[2];
                bfr[j + 1][1] = r[3];
            }
#if defined(RF_FP8_MMA_VIA_F16)
            uint32_t ah[cfg::MF][2][4], bh[cfg::NF][2][2];
#pragma unroll
            for (int i = 0; i < cfg::MF; i++)
                q_a_to_f16(ah[i], af[i]);
#pragma unroll
            for (int j = 0; j < cfg::NF; j++)
                q_b_to_f16(bh[j], bfr[j]);
#pragma unroll
            for (int s = 0; s < 2; s++)
#pragma unroll
                for (int i = 0; i < cfg::MF; i++)
#pragma unroll
                    for (int j = 0; j < cfg::NF; j++)
                        mma_16816<kb_f16_tag>(part[i][j], ah[i][s], bh[j][s]);
#else
#pragma unroll
            for (int i = 0; i < cfg::MF; i++)
#pragma unroll
                for (int j = 0; j < cfg::NF; j++)
                    mma_fp8_16832(part[i][j], af[i], bfr[j]);
#endif
        }
        /* promotion: the block's partial, scaled once by scale_a[row] * scale_b[N block] */
#pragma unroll
        for (int i = 0; i < cfg::MF; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float s = s_a[i][h] * s_b;
#pragma unroll
                for (int j = 0; j < cfg::NF; j++) {
                    acc[i][j][2 * h] += part[i][j][2 * h] * s;
                    acc[i][j][2 * h + 1] += part[i][j][2 * h + 1] * s;
                }
            }
    }
    cp_async_wait<0>();

    /* accumulator of lane (g, t): rows g and g + 8 of each 16 x 8 fragment, columns 2t, 2t + 1 */
#pragma unroll
    for (int i = 0; i < cfg::MF; i++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            int m = m0 + wm * cfg::WTM + 16 * i + 8 * h + g;
#pragma unroll
            for (int j = 0; j < cfg::NF; j++)
                q_store_pair(C, M, N, pairs, m, n0 + wn * 32 + j * 8 + 2 * t, acc[i][j][2 * h],
                             acc[i][j][2 * h + 1]);
        }
#else
    __trap(); /* launch_mma runs it only from sm_89 / sm_90 builds */
#endif
}

template <int BM, int STAGES>
static int launch_variant(int M, int N, int K, const uint8_t *A, const float *sa, const uint8_t *B,
                          const float *sb, uint16_t *C, kb_stream_t stream)
{
    typedef q_cfg<BM, STAGES> cfg;
    auto kernel = gemm_fp8_mma<BM, STAGES>;
    unsigned gx = (unsigned)((N + Q_BN - 1) / Q_BN), gy = (unsigned)((M + BM - 1) / BM);
    if (gy > 65535u)
        return KBPKG_KERNEL_EINVAL;
    if (kb_gpu_func_set_max_dyn_smem(kernel, cfg::SMEM_BYTES) != kb_gpu_success)
        return KBPKG_KERNEL_ELAUNCH;
    bool pairs = ((uintptr_t)C & 3) == 0 && (N & 1) == 0;
    kernel<<<dim3(gx, gy), Q_THREADS, cfg::SMEM_BYTES, stream>>>(M, N, K, A, sa, B, sb, C, pairs);
    return kb_gpu_launch_status();
}

/* sm_90 has 227 KB of shared memory per block, sm_89 99 KB: stages to fit either. */
constexpr int Q_STAGES_128 = kTargetIsSm90 ? 4 : 3, Q_STAGES_64 = 4;

int launch_mma(int M, int N, int K, const uint8_t *A, const float *sa, const uint8_t *B,
               const float *sb, uint16_t *C, kb_stream_t stream)
{
    if (!kTargetHasFp8Mma || ((uintptr_t)A & 15) || ((uintptr_t)B & 15))
        return KBPKG_KERNEL_EUNSUPPORTED;
    static const bool usable = kernel_code_at_least(gemm_fp8_mma<128, Q_STAGES_128>, 89);
    if (!usable)
        return KBPKG_KERNEL_EUNSUPPORTED;
    long long tiles = (long long)((M + 127) / 128) * ((N + Q_BN - 1) / Q_BN);
    int sms = sm_count();
    bool small = sms > 0 && tiles < sms; /* BM 64 doubles the blocks of a partial wave */
#if defined(RF_FP8_MMA_BM)               /* benchmarks only: one tile height for every shape */
    small = RF_FP8_MMA_BM == 64;
#endif
    if (small)
        return launch_variant<64, Q_STAGES_64>(M, N, K, A, sa, B, sb, C, stream);
    return launch_variant<128, Q_STAGES_128>(M, N, K, A, sa, B, sb, C, stream);
}

} // namespace rf_fp8
