/* kbpkg-community/rmsnorm's GPU kernels and the choice among them (included by rmsnorm.cu,
 * and by bench/gpu/mem_bench.cu to time forced variants side by side). */
#ifndef KB_RMSNORM_KERNELS_CUH
#define KB_RMSNORM_KERNELS_CUH

#include <stdint.h>

#include <atomic>

#include "kb_gpu_compat.h"

/* Most blocks a launch gets; rows past it loop. A knob for tests: a small cap makes every
 * kernel take many rows per block (both halves of the block kernel's scratch in use). */
#ifndef KB_RMS_MAX_BLOCKS
#define KB_RMS_MAX_BLOCKS (1 << 20)
#endif

namespace rms
{

/*
 * Every row is cut at the output row's 16-byte boundaries: `head` elements before the first
 * one, `units` 16-byte vectors, `tail` elements after the last (head and tail < one vector;
 * both 0 when the width is a multiple of 16 bytes and the buffers are aligned). x and the
 * weight are read in the same units: one aligned load where they sit like the output (xs, ws
 * = 0), else two aligned loads shifted together (kb_pair16), so odd widths keep 16-byte
 * accesses. Each lane of a row holds its units, one head and one tail element in registers:
 * x is read once.
 */
template <typename T> struct row_geo {
    typedef typename kb_type<T>::storage S;
    static const int V = 16 / (int)sizeof(S);
    int64_t units;
    int head, tail;
    unsigned xs, ws; /* byte offsets of x and w against the output's units */

    __device__ __forceinline__ row_geo() {}
    __device__ __forceinline__ row_geo(const S *orow, const S *xrow, const S *w, int64_t d)
    {
        int64_t h = (int64_t)(((16u - ((uintptr_t)orow & 15u)) & 15u) / sizeof(S));
        if (h > d)
            h = d;
        head = (int)h;
        units = (d - h) / V;
        tail = (int)(d - h - units * V);
        xs = (unsigned)((uintptr_t)(xrow + h) & 15u);
        ws = (unsigned)((uintptr_t)(w + h) & 15u);
    }
};

template <typename T> __device__ __forceinline__ float vsumsq(const kb_vec16<T> &v)
{
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(v.e[0])); i++) {
        float f = kb_type<T>::load(v.e[i]);
        s = fmaf(f, f, s);
    }
    return s;
}

/* x * inv * w element by element (the CPU reference's order), one rounding each, stored. */
template <typename T>
__device__ __forceinline__ void write_unit(typename kb_type<T>::storage *p, const kb_vec16<T> &x,
                                           const kb_vec16<T> &w, float inv)
{
    const int V = 16 / (int)sizeof(x.e[0]);
    float f[16 / sizeof(typename kb_type<T>::storage)];
#pragma unroll
    for (int i = 0; i < V; i++)
        f[i] = kb_type<T>::load(x.e[i]) * inv * kb_type<T>::load(w.e[i]);
    kb_vec16<T> o;
    kb_vec16_pack_sel<T>(o, f);
    kb_store16(p, o.raw);
}

/* 1 / d for the mean of the squares, worked out before the row's loads arrive (the pipelined
 * kernel, held for the launch; in the rows kernel a register held for it grew the spills of its
 * 128-register shapes, so it keeps the division): the row's chain then takes one multiply where the
 * IEEE division (div.rn.f32: a reciprocal, fix-ups and a slow-path test) sat between the sum and
 * rsqrtf. Within an ulp of sum / d; rsqrtf is approximate anyway. */
__device__ __forceinline__ float mean_scale(int64_t d)
{
    return __frcp_rn((float)d);
}

/* A block's sum of s over one row with one barrier. Every warp adds the same partials in the same
 * order, so every thread gets the same value (one inv for the whole row). slot: this row's half of
 * a two-slot scratch; consecutive rows alternate halves, so a row's writes cannot meet the reads
 * of the row before and no second barrier is needed. */
__device__ __forceinline__ float row_block_sum(float s, float *slot)
{
    const int ws = kb_warp_size(), lane = threadIdx.x % ws, warp = threadIdx.x / ws;
    const int warps = (blockDim.x + ws - 1) / ws;
    s = kb_warp_sum(s);
    if (lane == 0)
        slot[warp] = s;
    __syncthreads();
    return kb_warp_sum(lane < warps ? slot[lane] : 0.0f);
}

/* Loads R units of a row, unit j of this lane being lane + j * lanes (one coalesced sweep per
 * j), every load issued before any is used; units past the row are zero. */
template <typename T, int R>
__device__ __forceinline__ void load_units(kb_vec16<T> (&v)[R],
                                           const typename kb_type<T>::storage *p, unsigned shift,
                                           const void *end, int units, int lane, int lanes, bool ok)
{
    const int V = 16 / (int)sizeof(p[0]);
    if (shift == 0) {
#pragma unroll
        for (int j = 0; j < R; j++) {
            int c = j * lanes + lane;
            if (ok && c < units)
                v[j].raw = *reinterpret_cast<const uint4 *>(p + c * V);
            else
                v[j].raw = make_uint4(0u, 0u, 0u, 0u);
        }
    } else {
        /* x not aligned like out (rare: the buffers sit differently modulo 16): 4 units at a
         * time, which keeps the pairs' registers within the cap */
        const int B = R < 4 ? R : 4;
#pragma unroll
        for (int j0 = 0; j0 < R; j0 += B) {
            kb_pair16 pr[B];
#pragma unroll
            for (int j = 0; j < B; j++) {
                int c = (j0 + j) * lanes + lane;
                if (ok && c < units)
                    kb_pair16_load(pr[j], p + c * V, end);
            }
#pragma unroll
            for (int j = 0; j < B; j++) {
                int c = (j0 + j) * lanes + lane;
                if (ok && c < units)
                    v[j0 + j].raw = kb_pair16_get(pr[j], p + c * V, end);
                else
                    v[j0 + j].raw = make_uint4(0u, 0u, 0u, 0u);
            }
        }
    }
}

/* Scales and writes this lane's R units, then its head and tail elements. The weight comes
 * from registers where the kernel loaded it with x (EARLY: wv, wh, wt), else from memory 4
 * units at a time (L1 hits after the first rows: every row reads the same weight). */
template <typename T, int R, bool EARLY>
__device__ __forceinline__ void
write_row(typename kb_type<T>::storage *orow, const typename kb_type<T>::storage *w,
          const kb_vec16<T> (&xv)[R], const kb_vec16<T> (&wearly)[R], float xh, float xt, float wh,
          float wt, const row_geo<T> &g, float inv, int lane, int lanes, int64_t d)
{
    typedef typename kb_type<T>::storage S;
    const int V = row_geo<T>::V;
    const S *wu = w + g.head, *w_end = w + d;
    S *ou = orow + g.head;
    const int B = R < 4 ? R : 4;
#pragma unroll
    for (int j0 = 0; j0 < R; j0 += B) {
        kb_vec16<T> wv[B];
        if (EARLY) {
#pragma unroll
            for (int j = 0; j < B; j++)
                wv[j].raw = wearly[j0 + j].raw; /* raw: HIP's half types delete the union's copy */
        } else if (g.ws == 0) {
#pragma unroll
            for (int j = 0; j < B; j++) {
                int c = (j0 + j) * lanes + lane;
                if (c < (int)g.units)
                    wv[j].raw = *reinterpret_cast<const uint4 *>(wu + c * V);
            }
        } else {
            kb_pair16 pr[B];
#pragma unroll
            for (int j = 0; j < B; j++) {
                int c = (j0 + j) * lanes + lane;
                if (c < (int)g.units)
                    kb_pair16_load(pr[j], wu + c * V, w_end);
            }
#pragma unroll
            for (int j = 0; j < B; j++) {
                int c = (j0 + j) * lanes + lane;
                if (c < (int)g.units)
                    wv[j].raw = kb_pair16_get(pr[j], wu + c * V, w_end);
            }
        }
#pragma unroll
        for (int j = 0; j < B; j++) {
            int c = (j0 + j) * lanes + lane;
            if (c < (int)g.units)
                write_unit<T>(ou + c * V, xv[j0 + j], wv[j], inv);
        }
    }
    if (lane < g.head)
        orow[lane] = kb_type<T>::store(xh * inv * (EARLY ? wh : kb_type<T>::load(w[lane])));
    if (lane < g.tail) {
        int64_t c = g.head + g.units * V + lane;
        orow[c] = kb_type<T>::store(xt * inv * (EARLY ? wt : kb_type<T>::load(w[c])));
    }
}

/* The first units of the weight this lane will read, towards L2 (the first rows of a launch
 * would otherwise wait for them after their sum). */
template <typename T, int R>
__device__ __forceinline__ void prefetch_weight(const typename kb_type<T>::storage *w, int64_t d,
                                                int lane, int lanes)
{
    const int64_t bytes = d * (int64_t)sizeof(w[0]);
#pragma unroll
    for (int j = 0; j < R; j++) {
        int64_t off = ((int64_t)j * lanes + lane) * 16;
        if (off < bytes)
            kb_prefetch_l2((const char *)w + off);
    }
}

/* How the lanes of a row are laid out: part of a warp (lanes given at launch: one unit each),
 * a whole warp (lanes = 32 known when compiling, so unit j's address is an immediate offset
 * and costs no register), or the whole block. */
enum shape { SHAPE_GROUP, SHAPE_WARP, SHAPE_BLOCK };

/* Launch bounds of each kernel: at most 128 registers (170 for the warp of 16 units per lane),
 * so that two blocks or more share an SM; the grid takes what fits (rows_grid). The block of
 * few units per thread (R = 2 or 4, few rows: choose) spreads a row over up to 512 threads. */
template <int R, int SHAPE> struct bounds {
    static const int threads = SHAPE == SHAPE_BLOCK ? (R <= 4 ? 512 : 256) : R >= 16 ? 128 : 256;
    static const int blocks = SHAPE == SHAPE_BLOCK ? (R <= 4 ? 1 : 2) : R >= 16 ? 3 : 2;
};

/* Rows a group of lanes holds at once: 8 units in flight per lane (4 for rows of one unit per
 * lane) whatever the width, since rows of few units would otherwise leave too few bytes in
 * flight per SM; bf16 (whose unpacked floats the compiler keeps) half of that at 2 and 4
 * units per lane, which spilled at the 128-register cap. */
template <typename T> struct is_bf16 {
    static const bool value = false;
};
template <> struct is_bf16<kb_bf16_tag> {
    static const bool value = true;
};
template <typename T> struct is_f16 {
    static const bool value = false;
};
template <> struct is_f16<kb_f16_tag> {
    static const bool value = true;
};
template <typename T, int R, int SHAPE> struct rows_at_once {
    static const int full = SHAPE == SHAPE_BLOCK || R >= 8 ? 1 : R == 1 ? 4 : 8 / R;
    static const int value = is_bf16<T>::value && (R == 2 || R == 4) ? full / 2 : full;
};

/*
 * Rows held in registers: R units per lane, M rows per group of lanes at once (loads of all M
 * issued before the first sum; M > 1 only for many rows, choose). In the shapes taken for few
 * rows (EARLY) the weight is loaded with x, so a row waits for memory once, not a second time
 * after its sum: what a launch of few rows takes is that chain. GROUP and WARP: blockDim.x / lanes
 * groups per block, the sum a butterfly inside the lanes of a row (no barrier, no shared memory;
 * the loop bound is uniform over the block, so every lane reaches every shuffle). BLOCK: the block
 * is one row, the per-warp sums meet in shared memory behind one barrier; the scratch alternates
 * between two halves by row, so the next row's writes cannot meet this row's reads. Rows loop over
 * a grid sized to the device (rows_grid). out == x works: every element is read before the row's
 * sum, and written only after it, by the lane that read it.
 */
template <typename T, int R, int SHAPE, int M>
/* each argument in parentheses: HIP's __launch_bounds__ is a macro, and the comma inside
 * bounds<R, SHAPE> would split it into four arguments */
__global__ void __launch_bounds__((bounds<R, SHAPE>::threads), (bounds<R, SHAPE>::blocks))
    rms_rows_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                    const typename kb_type<T>::storage *__restrict__ w, int64_t n, int64_t d,
                    float eps, int group)
{
    typedef typename kb_type<T>::storage S;
    /* the shapes of few rows (choose): one row at a time, the weight loaded with x */
    const bool EARLY = (SHAPE == SHAPE_BLOCK && R <= 4) || (SHAPE == SHAPE_GROUP && M == 1);
    __shared__ float partial[2][32];
    const int lanes = SHAPE == SHAPE_WARP ? 32 : SHAPE == SHAPE_BLOCK ? (int)blockDim.x : group;
    /* lanes of a group are a power of two (choose): shifts, not the three integer divisions
     * (about 20 dependent instructions each) that ncu found ahead of the first load */
    const int lg = SHAPE == SHAPE_WARP ? 5 : __ffs(lanes) - 1;
    const int lane = SHAPE == SHAPE_BLOCK ? (int)threadIdx.x : (int)threadIdx.x & (lanes - 1);
    const int64_t groups = SHAPE == SHAPE_BLOCK ? 1 : blockDim.x >> lg;
    const int64_t my_group = SHAPE == SHAPE_BLOCK ? 0 : threadIdx.x >> lg;
    const S *x_end = x + n * d, *w_end = w + d;
    int half = 0;
    if (!EARLY)
        prefetch_weight<T, R>(w, d, lane, lanes);
    for (int64_t base = (int64_t)blockIdx.x * groups * M; base < n;
         base += (int64_t)gridDim.x * groups * M, half ^= 1) {
        kb_vec16<T> xv[M][R], wv[R];
        float xh[M], xt[M], s[M], wh = 0.0f, wt = 0.0f;
        bool ok[M];
        S *orow[M];
        row_geo<T> g[M];
#pragma unroll
        for (int m = 0; m < M; m++) {
            const int64_t row = base + m * groups + my_group;
            ok[m] = row < n;
            const int64_t r = ok[m] ? row : base;
            const S *xrow = x + r * d;
            orow[m] = out + r * d;
            g[m] = row_geo<T>(orow[m], xrow, w, d);
            load_units<T, R>(xv[m], xrow + g[m].head, g[m].xs, x_end, (int)g[m].units, lane, lanes,
                             ok[m]);
            xh[m] = ok[m] && lane < g[m].head ? kb_type<T>::load(xrow[lane]) : 0.0f;
            xt[m] = ok[m] && lane < g[m].tail
                        ? kb_type<T>::load(xrow[g[m].head + g[m].units * row_geo<T>::V + lane])
                        : 0.0f;
        }
        if (EARLY) {
            load_units<T, R>(wv, w + g[0].head, g[0].ws, w_end, (int)g[0].units, lane, lanes, true);
            wh = lane < g[0].head ? kb_type<T>::load(w[lane]) : 0.0f;
            wt = lane < g[0].tail
                     ? kb_type<T>::load(w[g[0].head + g[0].units * row_geo<T>::V + lane])
                     : 0.0f;
        }
#pragma unroll
        for (int m = 0; m < M; m++) {
            s[m] = fmaf(xh[m], xh[m], xt[m] * xt[m]);
#pragma unroll
            for (int j = 0; j < R; j++)
                s[m] += vsumsq<T>(xv[m][j]);
        }
        if (SHAPE == SHAPE_BLOCK) {
            s[0] = row_block_sum(s[0], partial[half]);
        } else {
#pragma unroll
            for (int m = 0; m < M; m++)
                s[m] = SHAPE == SHAPE_WARP ? kb_warp_sum(s[m]) : kb_group_sum(s[m], lanes);
        }
#pragma unroll
        for (int m = 0; m < M; m++) {
            const float inv = rsqrtf(s[m] / (float)d + eps);
            if (ok[m])
                write_row<T, R, EARLY>(orow[m], w, xv[m], wv, xh[m], xt[m], wh, wt, g[m], inv, lane,
                                       lanes, d);
        }
    }
}

/*
 * Aligned rows (d a multiple of V; out, x and w 16-byte aligned, so every row starts on a unit
 * and has no head or tail), many of them: `lanes` lanes per row (a group inside a warp, or the
 * whole block: BLOCK), R units per lane. Each group walks rows with a stride of the grid's groups
 * and loads the next row's x before it sums and writes this one, so two rows of loads are in
 * flight per group and its reads overlap its writes (the rows kernel waits for each row's loads,
 * then writes, then loads again). A lane reads the same columns of every row, so the weight's
 * units are loaded once per launch and kept (WKEEP; else read per row, from L1). out == x works:
 * a row is read before it is written and by the lane that writes it, and the row loaded ahead is
 * another row.
 */
template <typename T, int R, bool BLOCK, bool WKEEP>
__global__ void __launch_bounds__(BLOCK ? 512 : 256)
    rms_pipe_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                    const typename kb_type<T>::storage *__restrict__ w, int64_t n, int64_t d,
                    float eps, int lanes)
{
    typedef typename kb_type<T>::storage S;
    const int V = row_geo<T>::V;
    __shared__ float partial[2][32];
    const float rd = mean_scale(d);
    const int units = (int)(d / V);
    const int lg = BLOCK ? 0 : __ffs(lanes) - 1; /* lanes: a power of two (choose) */
    const int lane = BLOCK ? (int)threadIdx.x : (int)threadIdx.x & (lanes - 1);
    const int64_t groups = BLOCK ? 1 : blockDim.x >> lg;
    const int64_t my_group = BLOCK ? 0 : threadIdx.x >> lg;
    const int64_t stride = (int64_t)gridDim.x * groups;
    kb_vec16<T> wv[R], xa[R], xb[R];
    if (WKEEP)
        load_units<T, R>(wv, w, 0, w + d, units, lane, lanes, true);
    int64_t base = (int64_t)blockIdx.x * groups;
    load_units<T, R>(xa, x + (base + my_group) * d, 0, x, units, lane, lanes, base + my_group < n);
    int half = 0;
    /* the bound is uniform over the block: every lane reaches every shuffle and barrier */
    for (; base < n; base += stride, half ^= 1) {
        const int64_t row = base + my_group, next = row + stride;
        load_units<T, R>(xb, x + next * d, 0, x, units, lane, lanes, next < n);
        float s = 0.0f;
#pragma unroll
        for (int j = 0; j < R; j++)
            s += vsumsq<T>(xa[j]);
        if (BLOCK) {
            s = row_block_sum(s, partial[half]);
        } else {
            s = kb_group_sum(s, lanes);
        }
        const float inv = rsqrtf(s * rd + eps);
        if (row < n) {
            S *orow = out + row * d;
#pragma unroll
            for (int j = 0; j < R; j++) {
                const int c = j * lanes + lane;
                if (c < units) {
                    kb_vec16<T> u;
                    if (WKEEP)
                        u.raw = wv[j].raw;
                    else
                        u.raw = *reinterpret_cast<const uint4 *>(w + c * V);
                    write_unit<T>(orow + c * V, xa[j], u, inv);
                }
            }
        }
#pragma unroll
        for (int j = 0; j < R; j++)
            xa[j].raw = xb[j].raw;
    }
}

/* Rows too wide for registers: the sum in a first sweep, then the row read again (from L2: a
 * row is at most a few MB) and written, both sweeps in the units above. out == x works: each
 * element is read by the thread that writes it, and every read of the first sweep happens
 * before the barrier. */
template <typename T>
__global__ void __launch_bounds__(1024)
    rms_stream_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                      const typename kb_type<T>::storage *__restrict__ w, int64_t n, int64_t d,
                      float eps)
{
    typedef typename kb_type<T>::storage S;
    const int V = row_geo<T>::V;
    __shared__ float partial[2][32];
    const int t = threadIdx.x, nt = blockDim.x;
    const S *x_end = x + n * d, *w_end = w + d;
    int half = 0;
    for (int64_t row = blockIdx.x; row < n; row += gridDim.x, half ^= 1) {
        const S *xrow = x + row * d;
        S *orow = out + row * d;
        const row_geo<T> g(orow, xrow, w, d);
        const S *xu = xrow + g.head, *wu = w + g.head;
        S *ou = orow + g.head;
        float s = 0.0f;
#pragma unroll 4
        for (int64_t c = t; c < g.units; c += nt) {
            kb_vec16<T> v;
            if (g.xs == 0)
                v.raw = *reinterpret_cast<const uint4 *>(xu + c * V);
            else
                v.raw = kb_load16_any(xu + c * V, x_end);
            s += vsumsq<T>(v);
        }
        if (t < g.head) {
            float f = kb_type<T>::load(xrow[t]);
            s = fmaf(f, f, s);
        }
        if (t < g.tail) {
            float f = kb_type<T>::load(xu[g.units * V + t]);
            s = fmaf(f, f, s);
        }
        s = row_block_sum(s, partial[half]);
        const float inv = rsqrtf(s / (float)d + eps);
#pragma unroll 4
        for (int64_t c = t; c < g.units; c += nt) {
            kb_vec16<T> xv, wv;
            xv.raw = g.xs == 0 ? *reinterpret_cast<const uint4 *>(xu + c * V)
                               : kb_load16_any(xu + c * V, x_end);
            wv.raw = g.ws == 0 ? *reinterpret_cast<const uint4 *>(wu + c * V)
                               : kb_load16_any(wu + c * V, w_end);
            write_unit<T>(ou + c * V, xv, wv, inv);
        }
        if (t < g.head)
            orow[t] = kb_type<T>::store(kb_type<T>::load(xrow[t]) * inv * kb_type<T>::load(w[t]));
        if (t < g.tail) {
            int64_t c = g.units * V + t;
            ou[c] = kb_type<T>::store(kb_type<T>::load(xu[c]) * inv * kb_type<T>::load(wu[c]));
        }
    }
}

/*
 * Few unaligned rows of up to blockDim x E elements (rms_elem_kernel): a block per row, E
 * elements per thread (blocks of up to 1024 threads), one block's width apart (CONTIG: E adjacent
 * elements per thread, as torch.compile's kernel lays out its row; bench/gpu/rms_plans.cu times
 * both), x and the weight loaded together, one barrier. No 16-byte units, so no head, tail or
 * shifted loads: at few rows a launch is one row's chain of dependent steps, and that of the rows
 * kernel (row geometry, head and tail, shifted unit loads of the weight) kept 7 and 64 rows of 1001
 * at 2.1-2.2 us on an H100. The chain is short on purpose: 32-bit indices (few rows of at most
 * 2048 elements) and, with LOOP false, no loop over rows (the grid has a block per row): a form
 * of this kernel with 64-bit indices and a row loop took 0.15-0.25 us more at 1-64 rows of
 * 513-1999 (docs/perf.md, memory-bound "Eleventh pass"). LOOP: rows loop when the grid is capped
 * below n (KB_RMS_MAX_BLOCKS); the partials alternate between two slots so that one barrier per row
 * suffices. out == x works: each element is read by the thread that writes it, before the barrier.
 */
template <typename T, int E, bool CONTIG = false, bool LOOP = true>
__global__ void __launch_bounds__(1024)
    rms_elem_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                    const typename kb_type<T>::storage *__restrict__ w, int n, int d, float eps)
{
    typedef typename kb_type<T>::storage S;
    __shared__ float partial[2][32];
    const int t = threadIdx.x, nt = blockDim.x;
    int half = 0;
    for (int row = blockIdx.x; row < n; row += gridDim.x, half ^= 1) {
        const S *xr = x + (size_t)row * d;
        S *orow = out + (size_t)row * d;
        float xv[E], wv[E], s = 0.0f;
#pragma unroll
        for (int k = 0; k < E; k++) {
            const int c = CONTIG ? t * E + k : t + k * nt; /* d <= nt E */
            xv[k] = c < d ? kb_type<T>::load(xr[c]) : 0.0f;
            wv[k] = c < d ? kb_type<T>::load(w[c]) : 0.0f;
        }
#pragma unroll
        for (int k = 0; k < E; k++)
            s = fmaf(xv[k], xv[k], s);
        s = row_block_sum(s, partial[half]);
        const float inv = rsqrtf(s / (float)d + eps);
#pragma unroll
        for (int k = 0; k < E; k++) {
            const int c = CONTIG ? t * E + k : t + k * nt;
            if (c < d)
                orow[c] = kb_type<T>::store(xv[k] * inv * wv[k]);
        }
        if (!LOOP)
            break;
    }
}

/*
 * Few aligned rows (rms_unit_kernel; rows of whole 16-byte units at aligned addresses, few
 * enough that each gets its own group of lanes or block): the element kernel's short chain with
 * the pipelined kernel's 16-byte units. A group of `lanes` lanes per row (BLOCK: the block is the
 * row), R units per lane, x and the weight loaded together, 32-bit indices, no row loop and no
 * row loaded ahead: at few rows a launch is one row's chain, and the pipelined kernel's 64-bit
 * row loop and look-ahead load sit in it. Having no row loop, it takes a block per row (or group
 * of rows) whatever KB_RMS_MAX_BLOCKS says. out == x works: each unit is read by the lane that
 * writes it, before the sum.
 */
template <typename T, int R, bool BLOCK>
/* at most 512 threads (few_aligned_plan): 128 registers, where bf16 at R = 4 spilled 68 bytes at
 * 1024 threads' 64 and ran 1.1-1.2x slower than the pipelined kernel at 1-128 rows of 8192-16384 */
__global__ void __launch_bounds__(512)
    rms_unit_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                    const typename kb_type<T>::storage *__restrict__ w, int n, int d, float eps,
                    int lanes)
{
    const int V = row_geo<T>::V;
    __shared__ float partial[32];
    const float rd = mean_scale(d);
    const int units = d / V;
    const int lg = BLOCK ? 0 : __ffs(lanes) - 1; /* lanes: a power of two */
    const int lane = BLOCK ? (int)threadIdx.x : (int)threadIdx.x & (lanes - 1);
    const int row = BLOCK ? (int)blockIdx.x
                          : (int)blockIdx.x * ((int)blockDim.x >> lg) + ((int)threadIdx.x >> lg);
    const bool ok = row < n; /* the last block's spare groups still take part in the sum */
    const size_t off = (size_t)(ok ? row : 0) * d;
    kb_vec16<T> xv[R], wv[R];
    load_units<T, R>(xv, x + off, 0, x, units, lane, lanes, ok);
    load_units<T, R>(wv, w, 0, w + d, units, lane, lanes, true);
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < R; j++)
        s += vsumsq<T>(xv[j]);
    s = BLOCK ? row_block_sum(s, partial) : kb_group_sum(s, lanes);
    const float inv = rsqrtf(s * rd + eps);
#pragma unroll
    for (int j = 0; j < R; j++) {
        const int c = j * lanes + lane;
        if (ok && c < units)
            write_unit<T>(out + off + c * V, xv[j], wv[j], inv);
    }
}

/* Which kernel a call takes, with its launch shape. */
enum path { PATH_WARP, PATH_BLOCK, PATH_STREAM, PATH_PIPE, PATH_ELEM, PATH_UNIT, PATH_COUNT };
/* A path's name (the benches label the export's plan with it). */
static inline const char *path_name(int path)
{
    static const char *const names[] = {"warp", "block", "stream", "pipe", "elem", "unit"};
    static_assert(sizeof names / sizeof names[0] == PATH_COUNT, "a name per path");
    return path >= 0 && path < PATH_COUNT ? names[path] : "?";
}
struct plan {
    int path;
    int vecs;    /* units per lane (R; PATH_ELEM: elements per thread, E) */
    int rows;    /* PATH_WARP: rows per group of lanes at once (M: 1 or rows_at_once) */
    int threads; /* per block */
    int lanes;   /* per row (PATH_PIPE, PATH_UNIT: lanes == threads is the block shape) */
    int64_t blocks_needed;
    bool uncapped; /* a block per piece of work (at most KB_RMS_MAX_BLOCKS), not rows_grid's cap */
    bool wrow;     /* PATH_PIPE: the weight read per row (from L1), not held for the launch */
};

static const int WARP_MAX_VECS = 16;  /* rows of up to 32 x 16 units: a warp or less per row */
static const int BLOCK_THREADS = 256; /* the block path: 8 units per thread, then 16 */
/* the block of few units per thread (R = 2 or 4): at most 512 threads (1024 measured slower) */
static const int FEW_MAX_THREADS = 512;

static inline int pow2_at_least(int64_t v)
{
    int p = 1;
    while (p < v)
        p *= 2;
    return p;
}

/* Threads of a block per row holding `count` items (units or elements) at r per thread: whole
 * warps. */
static inline int64_t row_block_threads(int64_t count, int r)
{
    return ((count + r - 1) / r + 31) / 32 * 32;
}

/* A block per row of `units` at r per thread on `path`: the launch shape every block-per-row plan
 * shares (n blocks before any cap, the block its row's lanes). */
static inline void row_block_plan(plan &p, int path, int64_t n, int64_t units, int r)
{
    p.path = path;
    p.rows = 1;
    p.vecs = r;
    p.threads = (int)row_block_threads(units, r);
    p.lanes = p.threads;
    p.blocks_needed = n;
}

/* Threads per SM the few-row plans count as the device's: their blocks all fit at once below
 * it; R = 2 and the element kernel stop at half of it. */
static const int64_t FEW_SM_THREADS = 1024;

/*
 * Few rows (at most 4 per SM) whose blocks all fit on the device at once (at most 1024 threads
 * per SM): a launch then takes as long as one row's chain of dependent steps (load, sum, one
 * barrier, store), which is short with few units per thread. So each row gets a block of 2
 * units per thread up to 1024 units, 4 up to 2048 (at most 512 threads), the weight loaded
 * with x. Measured on the H200 (one run, docs/perf.md): a warp of 16 units per lane took
 * 3.5 us for one f32 row of 2048 where these took 2.3-2.4; blocks of 1024 threads (R = 1 or 2
 * on the widest rows) were 0.3-1.3 us slower than 512 or fewer. R = 2 only while the rows fill
 * at most half the device's threads: at 512 rows of 4095 (16-bit, unaligned) the block of 4 per
 * thread was 1.14-1.16x the block of 2 on an H100, at 64 rows the block of 2 stays ahead
 * (docs/perf.md, memory-bound "Tenth pass"). Rows of a warp or less (units <= 32) stay with the
 * lane groups. Only rows the pipelined kernel does not take reach here (unaligned rows, in
 * practice). Returns 0 where it does not apply.
 */
static inline int few_rows_vecs(int64_t n, int64_t units, int sms)
{
    if (sms <= 0 || units <= 32 || n > 4 * (int64_t)sms)
        return 0;
    for (int r = 2; r <= 4; r *= 2) {
        const int64_t threads = row_block_threads(units, r);
        if (threads <= FEW_MAX_THREADS &&
            n * threads <= sms * (r == 2 ? FEW_SM_THREADS / 2 : FEW_SM_THREADS))
            return r;
    }
    return 0;
}

/*
 * Many rows: from this many rows per SM the pipelined kernel launches a block per row (rows of
 * more than 64 units), rows of more than 1024 units from MANY_WIDE_ROWS_PER_SM. Measured on an
 * H100 (bench/gpu/rms_plans.cu and the sweep against the capped plans in the same rounds,
 * docs/perf.md memory-bound "Thirteenth pass"): at 8192 and 32768 rows a block per row on the
 * uncapped grid was 0.98-1.06x of the capped plans at every dtype and width of 1000-16384 (the
 * sweep's geomean there 1.02), at 97-100% of a 16-byte copy kernel; at 4096 rows (31 per SM) it
 * was 1.02-1.07x at 14336-16384 and 0.93-0.98x at 16-bit 1000-5120, where the data nearly fits in
 * L2; at 2048 rows the capped grid stayed ahead at 8192 (rms_plans, 4-7%). 32-61 rows per SM
 * were not timed. On the H200 (seventh pass) 16-bit rows of 512-1024 units ran 8-9% faster this
 * way from 64 x SMs rows and 2-8% slower at 4096 rows; wider rows were not timed there.
 */
static const int MANY_ROWS_PER_SM = 48;
static const int MANY_WIDE_ROWS_PER_SM = 24;

/* A block per row on the uncapped grid for many rows: R = 2 up to 1024 units (65-128 units a
 * block of 64 threads), R = 4 up to 2048 and (f32) 8 up to 4096; 16-bit rows of 512 units or more
 * at R = 4 reading the weight per row (bf16 4096 x 16384 99.9 -> 93.6 us in rms_plans; holding
 * the weight, 0.82-0.87 of the copy kernel: registers). Returns false where it does not apply
 * (16-bit rows past 2048 units, any past 4096). */
template <typename T> static inline bool many_rows_plan(plan &p, int64_t n, int64_t units, int sms)
{
    const bool f32 = sizeof(typename kb_type<T>::storage) == 4;
    const int64_t per_sm = units > 1024 ? MANY_WIDE_ROWS_PER_SM : MANY_ROWS_PER_SM;
    if (sms <= 0 || n < per_sm * sms || units <= 64 || units > 4096 || (!f32 && units > 2048))
        return false;
    int r = units <= 1024 ? 2 : units <= 2048 ? 4 : 8;
    if (!f32 && units >= 512) {
        r = 4;
        p.wrow = true;
    }
    row_block_plan(p, PATH_PIPE, n, units, r);
    p.uncapped = true;
    return true;
}

/*
 * The pipelined kernel for aligned rows (rms_pipe_kernel), where it was measured faster than the
 * rows kernel on the H200 (bench/gpu/rms_plans.sh, docs/perf.md "Fifth pass": 1.1-1.8x at 512+
 * rows, within 3-10% of a copy of the same bytes): many rows as many_rows_plan says; otherwise
 * rows of up to 32 units a group of lanes of one unit each (from 2 * sms rows: fewer were not
 * measured), up to 128 units a warp of 2 or 4 per lane, up to 1024 a block of 2 per thread,
 * then a block of 4 (bf16, f32) or 8 (f32) per thread up to 512 threads. f16 past 1024 units
 * stays with the rows kernel (the pipelined block of 4 per thread measured 10-25% slower there),
 * as do 16-bit rows past 2048 units. Returns false where it does not apply (the caller's plan
 * stands).
 */
template <typename T> static inline bool pipe_plan(plan &p, int64_t n, int64_t units, int sms)
{
    const bool f32 = sizeof(typename kb_type<T>::storage) == 4;
    if (sms <= 0 || units < 1)
        return false;
    if (many_rows_plan<T>(p, n, units, sms))
        return true;
    if (units <= 32) {
        if (n < 2 * (int64_t)sms)
            return false;
        p.vecs = 1;
        p.lanes = pow2_at_least(units);
    } else if (units <= 128) {
        p.vecs = units <= 64 ? 2 : 4;
        p.lanes = 32;
    } else {
        int r = units <= 1024 ? 2 : units <= 2048 ? 4 : 8;
        if ((r == 4 && is_f16<T>::value) || (r == 8 && !f32) || units > 4096)
            return false;
        row_block_plan(p, PATH_PIPE, n, units, r);
        /* A block per row (the grid not capped at what the device holds), as torch.compile's
         * Triton kernel launches: the hardware hands a finished block's slot to the next row.
         * H200, seventh pass (docs/perf.md): f32 at 4096-32768 rows of 4096-8192 4-10% faster
         * than the capped grid, at 99-101% of a 16-byte copy kernel; so f32 rows of 1024-2048
         * units take it at every row count. Many rows of any width: many_rows_plan. */
        if (f32 && r <= 4 && units >= 1024)
            p.uncapped = true;
        return true;
    }
    p.path = PATH_PIPE;
    p.rows = 1;
    p.threads = 256;
    p.blocks_needed = (n + 256 / p.lanes - 1) / (256 / p.lanes);
    return true;
}

/*
 * Few aligned rows (at most 4 per SM, rows of whole units at aligned addresses): a group of lanes
 * or a block per row, the weight's units loaded with x. There a launch is one row's chain
 * (prologue, loads, sum, reduction, store), so it takes the unit kernel (rms_unit_kernel: 32-bit
 * indices, no row loop, no look-ahead load), which ran 1.03-1.10x faster than the pipelined
 * kernel in the same shapes at 1-512 rows of 128-4096 elements and within 2% of it at 1-128
 * rows of 16-bit 7168-16384 (H100, bench/gpu/rms_plans.cu; docs/perf.md, memory-bound "Twelfth
 * pass"). Rows of up to 32 units a group of lanes of one unit each, 128 threads a block; up to 256
 * units a block of one unit per thread (the width spread over the most threads, as torch's kernels
 * do), up to 768 (f16: 1024) a block of 2 per thread, up to 2048 a block of 4 (at most 512 threads;
 * on the H100 one unit per thread up to 512 units was within 2% of these). f32 at 4 units per
 * thread takes the pipelined kernel a row per block on an uncapped grid, and from 2 x SMs rows
 * 16-bit blocks of 2 or 4 per thread take it two rows per block (the second row's loads overlap the
 * first's sum and stores; H200, docs/perf.md "Sixth pass"): the unit kernel ran up to 1.2-1.4x
 * slower there at 300-512 rows of 16-bit 5120-16384 on the H100 ("Twelfth pass"). Returns false
 * where it does not apply.
 */
template <typename T>
static inline bool few_aligned_plan(plan &p, int64_t n, int64_t units, int sms)
{
    /* f16 at 769-1024 units: a block of 2 per thread measured as fast as 4 (bf16, f32: 4 faster) */
    const int r2_max = is_f16<T>::value ? 1024 : 768;
    const int r = units <= 256 ? 1 : units <= r2_max ? 2 : units <= 2048 ? 4 : 0;
    if (sms <= 0 || units < 1 || n > 4 * (int64_t)sms || r == 0)
        return false;
    p.path = PATH_UNIT;
    p.rows = 1;
    p.uncapped = true; /* no row loop: a block per row or group of rows, whatever the cap */
    if (units <= 32) {
        p.vecs = 1;
        p.lanes = pow2_at_least(units);
        p.threads = 128;
        const int64_t groups = p.threads / p.lanes;
        p.blocks_needed = (n + groups - 1) / groups;
        return true;
    }
    row_block_plan(p, PATH_UNIT, n, units, r);
    if (sizeof(typename kb_type<T>::storage) == 4 && r == 4) {
        /* f32 rows of 4 units per thread: the pipelined kernel a row per block, the grid uncapped
         * as pipe_plan's (the unit kernel 2-5% slower at 1-64 rows of 4096-8192; at 300 and 512
         * rows 1.04-1.27x faster than two rows per block; H100) */
        p.path = PATH_PIPE;
    } else if (r > 1 && n >= 2 * (int64_t)sms) {
        p.path = PATH_PIPE;
        p.uncapped = false;
        p.blocks_needed = (n + 1) / 2;
    }
    return true;
}

/* A block per row of R units per thread, the first R from r_first (doubling up to 16) that
 * holds the row in at most BLOCK_THREADS threads (whole warps); rows wider than that take the
 * streaming kernel. Sets path, vecs, threads, lanes and blocks_needed. */
static inline void block_or_stream_plan(plan &p, int64_t n, int64_t units, int r_first)
{
    p.blocks_needed = n;
    for (int r = r_first; r <= 16; r *= 2) {
        const int64_t threads = (units + r - 1) / r;
        if (threads <= BLOCK_THREADS) {
            p.path = PATH_BLOCK;
            p.vecs = r;
            p.threads =
                (int)((threads + KB_WARP_SIZE_MAX - 1) / KB_WARP_SIZE_MAX * KB_WARP_SIZE_MAX);
            p.lanes = p.threads;
            return;
        }
    }
    p.path = PATH_STREAM;
    p.vecs = 0;
    p.threads = 1024;
    p.lanes = 1024;
}

/* Unaligned rows wider than this many units leave the warp path (below: unaligned_block_plan) */
static const int64_t UNALIGNED_WARP_MAX = 64;

/*
 * Many unaligned rows (odd widths, or pointers off 16 bytes) of more than 64 units: the rows
 * kernel's block of R = 4 units per thread up to 512 units, then 8 and 16 (at most 256
 * threads), a block per row (the grid not capped at what the device holds: a finished block's
 * slot goes to the next row, as in pipe_plan). Measured on an H100 (bench/gpu/rms_plans.cu,
 * docs/perf.md, memory-bound "Tenth pass", 4096-32768 rows of 1001-16383): the warp path of up to
 * 512 units (8 rows a block) and the capped grid were 1.03-1.43x slower; R = 2 was ahead by a few %
 * at 4096 rows of about 128 units and behind at 32768. Past 4096 units: the streaming kernel.
 */
static inline plan unaligned_block_plan(int64_t n, int64_t units)
{
    plan p;
    p.rows = 1;
    p.wrow = false;
    block_or_stream_plan(p, n, units, units <= 512 ? 4 : 8);
    /* the streaming kernel loops over rows on a grid of what fits */
    p.uncapped = p.path == PATH_BLOCK;
    return p;
}

/*
 * Few unaligned rows of ELEM_MIN_D..ELEM_MAX_D elements: rms_elem_kernel's block per row of
 * ELEM_E elements per thread (at most 512 threads), while the rows fill at most half the
 * device's threads (as R = 2 in few_rows_vecs). Measured on an H100 (bench/gpu/rms_plans.cu and
 * the sweep, docs/perf.md memory-bound "Eleventh pass"): at 7-256 rows of 513-1001 the export
 * took 1.05-1.27x less time than with the rows kernel's block of 2 units per thread, and at 7 and
 * 64 rows of 1999-2047 a block of 512 x 4 was 1.09-1.17x the rows kernel's; 8 elements per thread
 * lost everywhere (a thread's chain grows with its elements), as did 16-bit rows at 512 x 1001
 * (past the half: the rows block stayed 7% ahead).
 */
static const int64_t ELEM_MIN_D = 513, ELEM_MAX_D = 2048;
static const int ELEM_E = 4;
static inline bool few_elem_plan(plan &p, int64_t n, int64_t d, int sms)
{
    if (sms <= 0 || d < ELEM_MIN_D || d > ELEM_MAX_D)
        return false;
    const int64_t threads = row_block_threads(d, ELEM_E);
    if (n * threads > sms * FEW_SM_THREADS / 2)
        return false;
    p.path = PATH_ELEM;
    p.vecs = ELEM_E;
    p.threads = (int)threads;
    p.lanes = p.threads;
    p.blocks_needed = n;
    p.uncapped = true;
    return true;
}

/*
 * d: elements per row, units: 16-byte vectors per row (d / V, rounded down); n > 0; aligned:
 * d % V == 0 and every pointer 16-byte aligned. Few aligned rows take few_aligned_plan, few
 * unaligned rows of 513-2048 elements few_elem_plan, other few rows few_rows_vecs. Aligned rows
 * that are not few take pipe_plan where it applies, many unaligned rows of more than 64 units
 * unaligned_block_plan. Else
 * rows of up to 512 units (256 for bf16) go to a warp or part of one (no barrier): R, the units
 * per lane, the fewest that hold the row in a warp, and at least V lanes so that each holds at
 * most one head and one tail element. Rows of few units take several rows per group of lanes
 * at once (rows_at_once) where there are rows enough (16 per SM: at 7-512 rows of 128 that was
 * 2.3x slower than one at a time), and small n spreads the groups over the SMs (sms: the
 * device's, 0 when unknown). Wider rows take a block of up to 256 threads of R = 8 (measured
 * on the H200 for bf16: 86-97% of copy bandwidth where R = 4 reached 65-89%;
 * docs/perf-gpu-notes.md) or 16, then the streaming kernel (rows past 4096 units: bf16 wider
 * than 32768).
 */
template <typename T> static inline plan choose(int64_t n, int64_t d, int sms, bool aligned = false)
{
    const int V = row_geo<T>::V;
    const int64_t units = d / V;
    /* bf16 at 16 units per lane spilled (144 bytes at the cap): a block of 8 per thread */
    const int64_t warp_max = is_bf16<T>::value ? 32 * 8 : 32 * WARP_MAX_VECS;
    plan p;
    p.rows = 1;
    p.uncapped = false;
    p.wrow = false;
    if (aligned ? few_aligned_plan<T>(p, n, units, sms) : few_elem_plan(p, n, d, sms))
        return p;
    const int few = few_rows_vecs(n, units, sms);
    if (few == 0 && aligned && pipe_plan<T>(p, n, units, sms))
        return p;
    if (few > 0) {
        row_block_plan(p, PATH_BLOCK, n, units, few);
        return p;
    }
    if (!aligned && units > UNALIGNED_WARP_MAX)
        return unaligned_block_plan(n, units);
    if (units <= warp_max) {
        int r = 1;
        while ((int64_t)32 * r < units)
            r *= 2;
        int lanes = pow2_at_least((units + r - 1) / r);
        if (lanes < V)
            lanes = V; /* still a power of two, as the kernel's shifts need */
        int m = 1;     /* rows_at_once for the shape the kernel will take */
        if (r == 1)
            m = rows_at_once<T, 1, SHAPE_GROUP>::value;
        else if (r == 2)
            m = rows_at_once<T, 2, SHAPE_WARP>::value;
        else if (r == 4)
            m = rows_at_once<T, 4, SHAPE_WARP>::value;
        if (r == 1 && n < 16 * (int64_t)sms)
            m = 1;
        const int most = r >= 16 ? 128 : 256;
        /* groups per block: as many as fill the block, fewer when the rows would then sit on
         * fewer SMs than the device has (at least a warp) */
        int64_t per_block = most / lanes, need = (n + m - 1) / m;
        if (sms > 0 && need < per_block * sms)
            per_block = (need + sms - 1) / sms;
        if (per_block * lanes < 32)
            per_block = 32 / lanes;
        p.path = PATH_WARP;
        p.vecs = r;
        p.rows = m;
        p.lanes = lanes;
        p.threads = (int)(per_block * lanes);
        p.blocks_needed = (need + per_block - 1) / per_block;
        return p;
    }
    block_or_stream_plan(p, n, units, 8);
    return p;
}

/* The current device's SM count, 0 when the runtime cannot say. */
static inline int device_sms()
{
    int dev = 0, sms = 0;
    if (kb_gpu_get_device(&dev) != kb_gpu_success || kb_gpu_sm_count(&sms, dev) != kb_gpu_success) {
        (void)kb_gpu_get_last_error(); /* a failed query must not look like a failed launch */
        return 0;
    }
    return sms;
}

/* Blocks for a launch: what the rows need, at most what the device holds at once (rows loop
 * inside the kernel: no second wave, no block launch per few rows). The occupancy of each
 * kernel and block size is asked once (cache: one slot per 32 threads) and kept; the SM count
 * is asked per call (cheap; the current device may change). */
template <typename K>
static unsigned rows_grid(K kernel, const plan &p, std::atomic<int> (&cache)[33])
{
    int dev = 0, sms = 0;
    std::atomic<int> &slot = cache[(p.threads + 31) / 32 % 33];
    int per_sm = slot.load(std::memory_order_relaxed);
    bool failed = false;
    if (per_sm <= 0) {
        failed = kb_gpu_occupancy(&per_sm, kernel, p.threads) != kb_gpu_success;
        if (!failed && per_sm > 0)
            slot.store(per_sm, std::memory_order_relaxed);
    }
    int64_t most = KB_RMS_MAX_BLOCKS;
    if (!failed && per_sm > 0) {
        failed = kb_gpu_get_device(&dev) != kb_gpu_success ||
                 kb_gpu_sm_count(&sms, dev) != kb_gpu_success;
        if (!failed && sms > 0 && (int64_t)sms * per_sm < most)
            most = (int64_t)sms * per_sm;
    }
    if (failed)
        (void)kb_gpu_get_last_error(); /* a failed query must not look like a failed launch */
    return (unsigned)(p.blocks_needed < most ? p.blocks_needed : most);
}

/* The plan's grid: a block per piece of work where the plan says uncapped (at most
 * KB_RMS_MAX_BLOCKS: the kernels loop over rows past it), else rows_grid's cap. */
template <typename K>
static unsigned plan_grid(K kernel, const plan &p, std::atomic<int> (&cache)[33])
{
    const int64_t most = KB_RMS_MAX_BLOCKS;
    if (p.uncapped)
        return (unsigned)(p.blocks_needed < most ? p.blocks_needed : most);
    return rows_grid(kernel, p, cache);
}

template <typename T, int R, int SHAPE, int M>
static void
launch_rows(const plan &p, typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
            const typename kb_type<T>::storage *w, int64_t n, int64_t d, float eps, kb_stream_t s)
{
    static std::atomic<int> cache[33];
    rms_rows_kernel<T, R, SHAPE, M>
        <<<plan_grid(rms_rows_kernel<T, R, SHAPE, M>, p, cache), p.threads, 0, s>>>(out, x, w, n, d,
                                                                                    eps, p.lanes);
}

template <typename T, int R, bool BLOCK, bool WK = true>
static void
launch_pipe(const plan &p, typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
            const typename kb_type<T>::storage *w, int64_t n, int64_t d, float eps, kb_stream_t s)
{
    static std::atomic<int> cache[33];
    const unsigned grid = plan_grid(rms_pipe_kernel<T, R, BLOCK, WK>, p, cache);
    rms_pipe_kernel<T, R, BLOCK, WK><<<grid, p.threads, 0, s>>>(out, x, w, n, d, eps, p.lanes);
}

/* Launches the plan's kernel (vecs must be one of the instantiated R). */
template <typename T>
static void run(const plan &p, typename kb_type<T>::storage *out,
                const typename kb_type<T>::storage *x, const typename kb_type<T>::storage *w,
                int64_t n, int64_t d, float eps, kb_stream_t s)
{
    if (p.path == PATH_PIPE) {
        /* R = 8 is planned for f32 only: 16-bit builds map it to R = 4, an instance they have
         * anyway, rather than compile a kernel that spills and is never launched */
        const int R8 = sizeof(typename kb_type<T>::storage) == 4 ? 8 : 4;
        if (p.lanes != p.threads) {
            if (p.vecs == 1)
                launch_pipe<T, 1, false>(p, out, x, w, n, d, eps, s);
            else if (p.vecs == 2)
                launch_pipe<T, 2, false>(p, out, x, w, n, d, eps, s);
            else
                launch_pipe<T, 4, false>(p, out, x, w, n, d, eps, s);
        } else if (p.vecs == 2) { /* blocks of 2, 4 or 8 per thread (pipe_plan, few_aligned_plan) */
            launch_pipe<T, 2, true>(p, out, x, w, n, d, eps, s);
        } else if (p.vecs == 4 && p.wrow) {
            launch_pipe<T, 4, true, false>(p, out, x, w, n, d, eps, s);
        } else if (p.vecs == 4) {
            launch_pipe<T, 4, true>(p, out, x, w, n, d, eps, s);
        } else {
            launch_pipe<T, R8, true>(p, out, x, w, n, d, eps, s);
        }
    } else if (p.path == PATH_UNIT) {
        /* few_aligned_plan: at most 4 x SMs rows of at most 2048 units, so n and d fit an int */
        const unsigned grid = (unsigned)p.blocks_needed;
        if (p.lanes != p.threads)
            rms_unit_kernel<T, 1, false>
                <<<grid, p.threads, 0, s>>>(out, x, w, (int)n, (int)d, eps, p.lanes);
        else if (p.vecs == 1)
            rms_unit_kernel<T, 1, true>
                <<<grid, p.threads, 0, s>>>(out, x, w, (int)n, (int)d, eps, p.lanes);
        else if (p.vecs == 2)
            rms_unit_kernel<T, 2, true>
                <<<grid, p.threads, 0, s>>>(out, x, w, (int)n, (int)d, eps, p.lanes);
        else
            rms_unit_kernel<T, 4, true>
                <<<grid, p.threads, 0, s>>>(out, x, w, (int)n, (int)d, eps, p.lanes);
    } else if (p.path == PATH_ELEM) {
        /* few_elem_plan: n * threads <= sms * FEW_SM_THREADS / 2 and d <= ELEM_MAX_D: both fit an
         * int */
        static std::atomic<int> cache[33];
        const unsigned grid = plan_grid(rms_elem_kernel<T, ELEM_E>, p, cache);
        if ((int64_t)grid >= n)
            rms_elem_kernel<T, ELEM_E, false, false>
                <<<grid, p.threads, 0, s>>>(out, x, w, (int)n, (int)d, eps);
        else
            rms_elem_kernel<T, ELEM_E><<<grid, p.threads, 0, s>>>(out, x, w, (int)n, (int)d, eps);
    } else if (p.path == PATH_STREAM) {
        static std::atomic<int> cache[33];
        rms_stream_kernel<T>
            <<<rows_grid(rms_stream_kernel<T>, p, cache), p.threads, 0, s>>>(out, x, w, n, d, eps);
    } else if (p.path == PATH_BLOCK) {
        if (p.vecs == 2)
            launch_rows<T, 2, SHAPE_BLOCK, 1>(p, out, x, w, n, d, eps, s);
        else if (p.vecs == 4)
            launch_rows<T, 4, SHAPE_BLOCK, 1>(p, out, x, w, n, d, eps, s);
        else if (p.vecs == 8)
            launch_rows<T, 8, SHAPE_BLOCK, 1>(p, out, x, w, n, d, eps, s);
        else
            launch_rows<T, 16, SHAPE_BLOCK, 1>(p, out, x, w, n, d, eps, s);
    } else if (p.vecs == 1) {
        if (p.rows > 1)
            launch_rows<T, 1, SHAPE_GROUP, rows_at_once<T, 1, SHAPE_GROUP>::value>(p, out, x, w, n,
                                                                                   d, eps, s);
        else
            launch_rows<T, 1, SHAPE_GROUP, 1>(p, out, x, w, n, d, eps, s);
    } else if (p.vecs == 2) {
        launch_rows<T, 2, SHAPE_WARP, rows_at_once<T, 2, SHAPE_WARP>::value>(p, out, x, w, n, d,
                                                                             eps, s);
    } else if (p.vecs == 4) {
        launch_rows<T, 4, SHAPE_WARP, rows_at_once<T, 4, SHAPE_WARP>::value>(p, out, x, w, n, d,
                                                                             eps, s);
    } else if (p.vecs == 8) {
        launch_rows<T, 8, SHAPE_WARP, 1>(p, out, x, w, n, d, eps, s);
    } else {
        launch_rows<T, 16, SHAPE_WARP, 1>(p, out, x, w, n, d, eps, s);
    }
}

/* The kernels need each pointer aligned to its element (any 16-byte offset works). */
template <typename T> static inline bool elem_aligned(const void *out, const void *x, const void *w)
{
    const uintptr_t m = sizeof(typename kb_type<T>::storage) - 1;
    return (((uintptr_t)out | (uintptr_t)x | (uintptr_t)w) & m) == 0;
}

/* Rows of whole 16-byte units at 16-byte aligned addresses: what `choose` calls aligned (every
 * row starts on a unit and has no head or tail, so the pipelined kernel may take them). */
template <typename T>
static inline bool rows_aligned(const void *out, const void *x, const void *w, int64_t d)
{
    return d % row_geo<T>::V == 0 && (((uintptr_t)out | (uintptr_t)x | (uintptr_t)w) & 15u) == 0;
}

} // namespace rms

#endif
