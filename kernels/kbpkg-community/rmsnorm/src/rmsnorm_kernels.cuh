/* kbpkg-community/rmsnorm's GPU kernels and the choice among them (included by rmsnorm.cu,
 * and by bench/gpu/mem_bench.cu to time the variants side by side). */
#ifndef KB_RMSNORM_KERNELS_CUH
#define KB_RMSNORM_KERNELS_CUH

#include <stdint.h>

#include "kb_gpu_compat.h"

/* Units (16-byte vectors) each thread of the one-block-per-row path holds in registers: rows
 * of up to BLOCK_THREADS times this many; wider rows take 8 per thread, then the streaming
 * path. A build-time knob for benchmarks (4 or 8). */
#ifndef KB_RMS_VECS
#define KB_RMS_VECS 4
#endif

/* Most blocks a launch gets; rows past it loop. A knob for tests: a small cap makes every
 * kernel take many rows per block. */
#ifndef KB_RMS_MAX_BLOCKS
#define KB_RMS_MAX_BLOCKS (1 << 20)
#endif

namespace rms
{

/* Rows of at most this many units go to groups of lanes inside a warp (no barrier). */
static const int64_t GROUP_MAX_UNITS = 128;
static const int GROUP_UNITS = 4; /* units per lane there */
static const int GROUP_THREADS = 256;
static const int BLOCK_THREADS = 512; /* most threads of the register path: 128 registers each */
static const int STREAM_THREADS = 1024;

/* What one thread moves at a time: a 16-byte vector (VEC: aligned rows whose bytes are a
 * multiple of 16) or one element. */
template <typename T, bool VEC> struct unit {
    typedef typename kb_type<T>::storage S;
    static const int N = VEC ? 16 / (int)sizeof(S) : 1;
    kb_vec16<T> v;

    __device__ __forceinline__ void load(const S *p)
    {
        if (VEC)
            v.raw = *reinterpret_cast<const uint4 *>(p);
        else
            v.e[0] = *p;
    }
    __device__ __forceinline__ void clear()
    {
        v.raw = make_uint4(0u, 0u, 0u, 0u);
    }
    __device__ __forceinline__ float at(int i) const
    {
        return kb_type<T>::load(v.e[i]);
    }
    __device__ __forceinline__ float sumsq() const
    {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < N; i++)
            s += at(i) * at(i);
        return s;
    }
};

/* p = x * inv * w element by element (the CPU reference's order), one rounding each. */
template <typename T, bool VEC>
__device__ __forceinline__ void write_scaled(typename kb_type<T>::storage *p, const unit<T, VEC> &x,
                                             const unit<T, VEC> &w, float inv)
{
    if (VEC) {
        float f[16 / sizeof(typename kb_type<T>::storage)];
#pragma unroll
        for (int i = 0; i < unit<T, VEC>::N; i++)
            f[i] = x.at(i) * inv * w.at(i);
        kb_vec16<T> o;
        kb_vec16_pack<T>(o, f);
        *reinterpret_cast<uint4 *>(p) = o.raw;
    } else {
        *p = kb_type<T>::store(x.at(0) * inv * w.at(0));
    }
}

/*
 * Short rows (at most GROUP_MAX_UNITS units): `group` lanes (a power of two <= 32) per row,
 * GROUP_UNITS units per lane, blockDim.x / group rows per block; the sum is a butterfly
 * inside the group, so no barrier and no shared memory. The weight is read after the sum
 * (from L1: every row reads the same few KB), which keeps the registers under 72 for bf16. The
 * loop bound is uniform over the block, so every lane reaches every shuffle.
 */
template <typename T, bool VEC>
__global__ void rms_group_kernel(typename kb_type<T>::storage *out,
                                 const typename kb_type<T>::storage *x,
                                 const typename kb_type<T>::storage *__restrict__ w, int64_t n,
                                 int64_t d, float eps, int group)
{
    typedef unit<T, VEC> U;
    const int64_t units = d / U::N;
    const int lane = threadIdx.x % group;
    const int64_t rows_per_block = blockDim.x / group;
    for (int64_t base = (int64_t)blockIdx.x * rows_per_block; base < n;
         base += (int64_t)gridDim.x * rows_per_block) {
        const int64_t row = base + threadIdx.x / group;
        const bool ok = row < n;
        const typename U::S *xr = x + (ok ? row : 0) * d;
        U xv[GROUP_UNITS];
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < GROUP_UNITS; j++) {
            int64_t c = (int64_t)j * group + lane;
            if (ok && c < units)
                xv[j].load(xr + c * U::N);
            else
                xv[j].clear();
        }
#pragma unroll
        for (int j = 0; j < GROUP_UNITS; j++)
            s += xv[j].sumsq();
        s = kb_group_sum(s, group);
        const float inv = rsqrtf(s / (float)d + eps);
        if (!ok)
            continue;
        typename U::S *orow = out + row * d;
#pragma unroll
        for (int j = 0; j < GROUP_UNITS; j++) {
            int64_t c = (int64_t)j * group + lane;
            if (c < units) {
                U wv;
                wv.load(w + c * U::N);
                write_scaled<T, VEC>(orow + c * U::N, xv[j], wv, inv);
            }
        }
    }
}

/*
 * One block per row, R units per thread (unit j of thread t is t + j * blockDim.x: each j is
 * one coalesced sweep), all R loads issued before the first use. Per-warp sums meet in shared
 * memory behind one barrier; the scratch alternates between two halves by row, so the next
 * row's writes cannot meet this row's reads. The weight is loaded with the row (R <= 4) or
 * after the sum (R = 8: 105 registers for bf16 on sm_90 instead of the cap, 128).
 */
template <typename T, bool VEC, int R>
__global__ void __launch_bounds__(BLOCK_THREADS)
    rms_block_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                     const typename kb_type<T>::storage *__restrict__ w, int64_t n, int64_t d,
                     float eps)
{
    typedef unit<T, VEC> U;
    const bool w_early = R <= 4;
    __shared__ float partial[2][32];
    const int64_t units = d / U::N;
    const int ws = kb_warp_size(), lane = threadIdx.x % ws, warp = threadIdx.x / ws;
    const int warps = (blockDim.x + ws - 1) / ws;
    int half = 0;
    for (int64_t row = blockIdx.x; row < n; row += gridDim.x, half ^= 1) {
        const typename U::S *xr = x + row * d;
        U xv[R], wv[R];
#pragma unroll
        for (int j = 0; j < R; j++) {
            int64_t c = (int64_t)j * blockDim.x + threadIdx.x;
            if (c < units) {
                xv[j].load(xr + c * U::N);
                if (w_early)
                    wv[j].load(w + c * U::N);
            } else {
                xv[j].clear();
            }
        }
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < R; j++)
            s += xv[j].sumsq();
        s = kb_warp_sum(s);
        if (lane == 0)
            partial[half][warp] = s;
        __syncthreads();
        /* every warp adds the same values in the same order: one inv for the whole row */
        s = kb_warp_sum(lane < warps ? partial[half][lane] : 0.0f);
        const float inv = rsqrtf(s / (float)d + eps);
        typename U::S *orow = out + row * d;
#pragma unroll
        for (int j = 0; j < R; j++) {
            int64_t c = (int64_t)j * blockDim.x + threadIdx.x;
            if (c < units) {
                if (!w_early)
                    wv[j].load(w + c * U::N);
                write_scaled<T, VEC>(orow + c * U::N, xv[j], wv[j], inv);
            }
        }
    }
}

/* Rows too wide for registers: sum in a first sweep, then re-read the row (from L2: a row is
 * at most a few MB) and write it. out == x works: each element is read by the thread that
 * writes it, and every read of the first sweep happens before the barrier. */
template <typename T, bool VEC>
__global__ void __launch_bounds__(STREAM_THREADS)
    rms_stream_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                      const typename kb_type<T>::storage *__restrict__ w, int64_t n, int64_t d,
                      float eps)
{
    typedef unit<T, VEC> U;
    __shared__ float partial[2][32];
    const int64_t units = d / U::N;
    const int ws = kb_warp_size(), lane = threadIdx.x % ws, warp = threadIdx.x / ws;
    const int warps = (blockDim.x + ws - 1) / ws;
    int half = 0;
    for (int64_t row = blockIdx.x; row < n; row += gridDim.x, half ^= 1) {
        const typename U::S *xr = x + row * d;
        typename U::S *orow = out + row * d;
        float s = 0.0f;
#pragma unroll 4
        for (int64_t c = threadIdx.x; c < units; c += blockDim.x) {
            U xv;
            xv.load(xr + c * U::N);
            s += xv.sumsq();
        }
        s = kb_warp_sum(s);
        if (lane == 0)
            partial[half][warp] = s;
        __syncthreads();
        s = kb_warp_sum(lane < warps ? partial[half][lane] : 0.0f);
        const float inv = rsqrtf(s / (float)d + eps);
#pragma unroll 4
        for (int64_t c = threadIdx.x; c < units; c += blockDim.x) {
            U xv, wv;
            xv.load(xr + c * U::N);
            wv.load(w + c * U::N);
            write_scaled<T, VEC>(orow + c * U::N, xv, wv, inv);
        }
    }
}

/* Which kernel a call takes, with its launch shape. */
enum path { PATH_GROUP, PATH_BLOCK, PATH_STREAM };
struct plan {
    int path;
    int vecs;    /* PATH_BLOCK: units per thread (R) */
    int threads; /* per block */
    int group;   /* PATH_GROUP: lanes per row */
    unsigned blocks;
};

static inline int round_up(int64_t v, int64_t m)
{
    return (int)((v + m - 1) / m * m);
}

static inline unsigned grid(int64_t blocks)
{
    return blocks < KB_RMS_MAX_BLOCKS ? (unsigned)blocks : (unsigned)KB_RMS_MAX_BLOCKS;
}

/* The block path with R units per thread, as few threads as hold the row (whole warps). */
static inline plan block_plan(int64_t n, int64_t units, int vecs)
{
    plan p = {PATH_BLOCK, vecs, round_up((units + vecs - 1) / vecs, KB_WARP_SIZE_MAX), 0, grid(n)};
    return p;
}

/* units: 16-byte vectors per row (or elements, off the vector path); n, units > 0.
 * prefer_r8: 8 vectors per thread from 512 units on. Measured on the H200 for bf16 (mem_bench,
 * docs/perf-gpu-notes.md): R8 reached 86-97% of copy bandwidth where R4 reached 65-89%
 * (16384x8192: 94% vs 74%). f16/f32 were already at 95-97% with R4 and keep it. */
static inline plan choose(int64_t n, int64_t units, bool prefer_r8 = false)
{
    if (units <= GROUP_MAX_UNITS) {
        int group = 1;
        while (group * GROUP_UNITS < units)
            group *= 2;
        int64_t rows_per_block = GROUP_THREADS / group;
        plan p = {PATH_GROUP, GROUP_UNITS, GROUP_THREADS, group,
                  grid((n + rows_per_block - 1) / rows_per_block)};
        return p;
    }
    if (prefer_r8 && units >= 8 * 64 && units <= (int64_t)BLOCK_THREADS * 8)
        return block_plan(n, units, 8);
    if (units <= (int64_t)BLOCK_THREADS * KB_RMS_VECS)
        return block_plan(n, units, KB_RMS_VECS);
    if (units <= (int64_t)BLOCK_THREADS * 8)
        return block_plan(n, units, 8);
    plan p = {PATH_STREAM, 0, STREAM_THREADS, 0, grid(n)};
    return p;
}

/* Launches the plan's kernel; a PATH_BLOCK plan must have vecs R (the instantiated one). */
template <typename T, bool VEC, int R>
static void run_block(const plan &p, typename kb_type<T>::storage *out,
                      const typename kb_type<T>::storage *x, const typename kb_type<T>::storage *w,
                      int64_t n, int64_t d, float eps, kb_stream_t s)
{
    rms_block_kernel<T, VEC, R><<<p.blocks, p.threads, 0, s>>>(out, x, w, n, d, eps);
}

template <typename T, bool VEC>
static void run(const plan &p, typename kb_type<T>::storage *out,
                const typename kb_type<T>::storage *x, const typename kb_type<T>::storage *w,
                int64_t n, int64_t d, float eps, kb_stream_t s)
{
    if (p.path == PATH_GROUP)
        rms_group_kernel<T, VEC><<<p.blocks, p.threads, 0, s>>>(out, x, w, n, d, eps, p.group);
    else if (p.path == PATH_STREAM)
        rms_stream_kernel<T, VEC><<<p.blocks, p.threads, 0, s>>>(out, x, w, n, d, eps);
    else if (p.vecs == KB_RMS_VECS)
        run_block<T, VEC, KB_RMS_VECS>(p, out, x, w, n, d, eps, s);
    else
        run_block<T, VEC, 8>(p, out, x, w, n, d, eps, s);
}

/* 16-byte vectors when every row starts and ends on 16 bytes. */
template <typename T>
static inline bool vec_ok(const void *out, const void *x, const void *w, int64_t d)
{
    return ((uintptr_t)out & 15) == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)w & 15) == 0 &&
           ((uint64_t)d * sizeof(typename kb_type<T>::storage)) % 16 == 0;
}

} // namespace rms

#endif
