/* kbpkg-community/activation on GPUs: memory-bound kernels with 16-byte vector loads at every
 * width (odd ones through shifted aligned loads). */
#include "activation_cpu.h"

#include <stdint.h>

#include "kb_activation.h"
#include "kb_gpu_compat.h"
#include <kbpkg/kernel_abi.h>

namespace act
{

template <int OP> __device__ __forceinline__ float apply(float x, float up);
template <> __device__ __forceinline__ float apply<ACT_SILU_AND_MUL>(float x, float up)
{
    /* __fdividef: a reciprocal and a multiply (2 ulp), where the IEEE division's fix-up code
     * and slow-path call cost 0.3 us of a one-block launch (docs/perf.md, fourth pass). It is
     * only that accurate for y <= 2^126 and returns 0 above, where x / y is still about 1e-37
     * (-88.7 < x < -87.3: times an up of inf that is inf, not NaN; the package check's gate
     * sweep failed on exactly those gates): there both are scaled by 2^-64, which is exact.
     * y = inf (x < -88.7) still gives x / inf = -0, as the reference does. */
    const float y = 1.0f + expf(-x), s = y > 0x1p100f ? 0x1p-64f : 1.0f;
    return __fdividef(x * s, y * s) * up;
}
/* gelu(x) = x Phi(x) = x/2 erfc(-x/sqrt 2), without 1 + erff()'s cancellation for x < 0 (see
 * the reference's gelu_erf in activation_cpu.c): erfc(z) for z = |x|/sqrt 2 from Numerical
 * Recipes' erfcc (a Chebyshev fit, relative error < 1.2e-7; 1.1e-6 in fp32, and the check
 * allows the most where the tail is smallest). CUDA's erfcf costs 2 exps and a division and
 * brought gelu_and_mul from 84% to 65% of copy bandwidth; this is one rcp and one exp. It is
 * nonzero wherever the reference's erfcf is (-12 < x < 0), so gelu times inf gives the same
 * inf or NaN on both. */
__device__ __forceinline__ float erfc_abs(float z)
{
    float t = __frcp_rn(fmaf(0.5f, z, 1.0f));
    float q = fmaf(t, 0.17087277f, -0.82215223f);
    q = fmaf(t, q, 1.48851587f);
    q = fmaf(t, q, -1.13520398f);
    q = fmaf(t, q, 0.27886807f);
    q = fmaf(t, q, -0.18628806f);
    q = fmaf(t, q, 0.09678418f);
    q = fmaf(t, q, 0.37409196f);
    q = fmaf(t, q, 1.00002368f);
    q = fmaf(t, q, -1.26551223f);
    return t * expf(fmaf(-z, z, q));
}
template <> __device__ __forceinline__ float apply<ACT_GELU_AND_MUL>(float x, float up)
{
    float e = erfc_abs(fabsf(x) * 0.70710678118654752f); /* erfc(|x|/sqrt 2) */
    float two_phi = x >= 0.0f ? 2.0f - e : e;            /* NaN x: NaN */
    return (x < -12.0f ? x * 0.0f : 0.5f * x * two_phi) * up;
}
template <> __device__ __forceinline__ float apply<ACT_GELU_TANH>(float x, float up)
{
    const float k = 0.79788456080286536f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

/* out = f(gate, up) for one 16-byte unit; 16-bit results round two at a time
 * (kb_vec16_pack: one hardware conversion per pair on sm_80+, same bits as the CPU
 * reference's rounding). */
template <typename T, int OP>
__device__ __forceinline__ uint4 apply_unit(const kb_vec16<T> &xv, const kb_vec16<T> &uv)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    float f[16 / sizeof(S)];
#pragma unroll
    for (int i = 0; i < (int)(16 / sizeof(S)); i++) {
        float u = gated ? kb_type<T>::load(uv.e[i]) : 0.0f;
        f[i] = apply<OP>(kb_type<T>::load(xv.e[i]), u);
    }
    kb_vec16<T> ov;
    kb_vec16_pack<T>(ov, f);
    return ov.raw;
}

/* u / div and u % div for u < 2^32 by one multiply-high (Granlund-Montgomery round-up
 * method: m = ceil(2^(32 + l) / div), l = ceil(log2 div)); the flat kernel's row of each unit
 * without a 64-bit division. */
struct fastdiv {
    uint32_t div, mul, shift;
};
static inline fastdiv make_fastdiv(uint32_t div)
{
    fastdiv f;
    f.div = div;
    uint32_t l = 0;
    while (l < 32 && ((uint64_t)1 << l) < div)
        l++;
    f.mul = (uint32_t)((((uint64_t)1 << 32) * (((uint64_t)1 << l) - div)) / div + 1);
    f.shift = l;
    return f;
}
static __device__ __forceinline__ uint32_t fastdiv_q(const fastdiv &f, uint32_t u)
{
    uint32_t t = __umulhi(u, f.mul);
    return (uint32_t)(((uint64_t)t + u) >> f.shift);
}

/* The row of flat element e (e < 2^32: one multiply-high; else a 64-bit division, uniform
 * over the launch). */
static __device__ __forceinline__ int64_t row_of(const fastdiv &f, int64_t e, int64_t d, bool wide)
{
    return wide ? e / d : (int64_t)fastdiv_q(f, (uint32_t)e);
}

/*
 * Rows whose bytes are a multiple of 16, in 16-byte aligned buffers: the output is one array
 * of n * d / V units, walked grid-stride U units per thread at a time (unit k of a step one
 * grid's width after unit k - 1: coalesced; every load of a step issued before the first use),
 * so short rows fill the machine as well as long ones. U = 1 where the grid holds a thread per
 * unit: a short body, and no predicated-off copies of the math for units past the end. Unit i
 * lies in row i / units_per_row (fastdiv: at most 2^32 units; wider launches take the any-width
 * kernel). LOOP false (U = 1, a thread per unit, the input under 2^31 elements): no loop and
 * 32-bit indices, 0-3% faster at 1-512 rows on an H100 (docs/perf.md, memory-bound "Twelfth
 * pass").
 */
template <typename T, int OP, int U, bool LOOP = true>
__global__ void __launch_bounds__(256)
    act_flat_kernel(typename kb_type<T>::storage *__restrict__ out,
                    const typename kb_type<T>::storage *__restrict__ in, uint32_t total,
                    fastdiv upr, int64_t d)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    constexpr int V = 16 / (int)sizeof(S);
    if (!LOOP) {
        const uint32_t u = blockIdx.x * blockDim.x + threadIdx.x;
        if (u >= total)
            return;
        const uint32_t row = fastdiv_q(upr, u), col = u - row * upr.div, dd = (uint32_t)d;
        const S *x = in + (row * (gated ? 2 * dd : dd) + col * V);
        kb_vec16<T> xv, uv;
        xv.raw = *reinterpret_cast<const uint4 *>(x);
        if (gated)
            uv.raw = *reinterpret_cast<const uint4 *>(x + dd);
        kb_store16(out + u * V, apply_unit<T, OP>(xv, uv));
        return;
    }
    const int64_t in_width = gated ? 2 * d : d;
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    for (int64_t base = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; base < total;
         base += threads * U) {
        kb_vec16<T> xv[U], uv[U];
#pragma unroll
        for (int k = 0; k < U; k++) {
            const int64_t u64 = base + k * threads;
            const uint32_t u = (uint32_t)u64;
            if (u64 < total) {
                uint32_t row = fastdiv_q(upr, u), col = u - row * upr.div;
                const S *x = in + (int64_t)row * in_width + (int64_t)col * V;
                xv[k].raw = *reinterpret_cast<const uint4 *>(x);
                if (gated)
                    uv[k].raw = *reinterpret_cast<const uint4 *>(x + d);
            }
        }
#pragma unroll
        for (int k = 0; k < U; k++) {
            const int64_t u = base + k * threads;
            if (u < total)
                kb_store16(out + u * V, apply_unit<T, OP>(xv[k], uv[k]));
        }
    }
}

/* Gate and up of the V elements of an output unit that crosses a row end, starting at (row,
 * col), into unit registers, every load issued before the first one is used: the unit then
 * takes the same math and 16-byte store as the others. Element by element with the math and
 * store between loads, each unit waited for memory up to V times in a row (in and out may
 * alias, so no load could pass a store): ncu's longest stall at 7 x 4095. Not inlined: it runs
 * for one unit in d / V, and the kernels' hot loops stay short. */
template <typename T> struct gathered {
    kb_vec16<T> x, up;
};
template <typename T, int OP>
__device__ __noinline__ gathered<T> act_gather(const typename kb_type<T>::storage *in, int64_t row,
                                               int64_t col, int64_t d)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    constexpr int V = 16 / (int)sizeof(S);
    const int64_t in_width = gated ? 2 * d : d;
    gathered<T> g;
    g.up.raw = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
    for (int j = 0; j < V; j++, col++) {
        while (col >= d) { /* past the row's end: the next row (several, for d < V) */
            col -= d;
            row++;
        }
        const S *x = in + row * in_width + col;
        g.x.e[j] = x[0];
        if (gated)
            g.up.e[j] = x[d];
    }
    return g;
}

/* One element of the output, gate and up loaded when the kernel starts and used at its end,
 * so that the head and tail elements add no round trip to memory after the units'. */
struct pending {
    float x, up;
};
template <typename T, int OP>
__device__ __forceinline__ pending act_load_elem(const typename kb_type<T>::storage *in,
                                                 int64_t row, int64_t col, int64_t d, bool on)
{
    constexpr bool gated = OP != ACT_GELU_TANH;
    pending p = {0.0f, 0.0f};
    if (on) {
        const typename kb_type<T>::storage *x = in + row * (gated ? 2 * d : d) + col;
        p.x = kb_type<T>::load(x[0]);
        p.up = gated ? kb_type<T>::load(x[d]) : 0.0f;
    }
    return p;
}

/*
 * Any width, any element-aligned buffers: the output is still one flat array, cut at its own
 * 16-byte boundaries (head elements, units, tail elements) and walked like the flat kernel, so
 * every store is 16 bytes and every thread has the same work whatever the width. A unit's
 * elements sit in one row of gate and up unless the unit crosses a row end (one in d / V);
 * there gate and up are read as the two aligned chunks around them, shifted together
 * (kb_pair16: the second chunk is mostly an L1 hit, the next unit's first), and straight where
 * they happen to sit aligned. Units that cross a row end are gathered element by element
 * (act_gather) and stored whole; the head and tail elements are loaded before the units and
 * stored after them.
 */
template <typename T, int OP, int U>
__global__ void __launch_bounds__(256)
    act_any_kernel(typename kb_type<T>::storage *__restrict__ out,
                   const typename kb_type<T>::storage *__restrict__ in, int64_t n, int64_t d,
                   int64_t units, int head, int tail, fastdiv fd)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    constexpr int V = 16 / (int)sizeof(S);
    const int64_t in_width = gated ? 2 * d : d;
    const S *in_end = in + n * in_width;
    const bool wide = n * d > (int64_t)0xffffffffll;
    const int64_t threads = (int64_t)gridDim.x * blockDim.x;
    const int64_t me = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    /* U = 1 (a thread per unit: few rows) loads them first; U = 4 (loops over many units)
     * at the end, where they cost no registers inside the loop (there, 12 bytes spilled) */
    const int64_t tail_e = head + units * V + me;
    const int64_t tail_r = me < tail ? row_of(fd, tail_e, d, wide) : 0;
    pending ph = act_load_elem<T, OP>(in, 0, me, d, U == 1 && me < head);
    pending pt = act_load_elem<T, OP>(in, tail_r, tail_e - tail_r * d, d, U == 1 && me < tail);
    for (int64_t base = me; base < units; base += threads * U) {
        kb_pair16 xp[U], upp[U];
        int64_t row[U], col[U];
#pragma unroll
        for (int k = 0; k < U; k++) {
            const int64_t u = base + k * threads, e = head + u * V;
            if (u < units) {
                row[k] = row_of(fd, e, d, wide);
                col[k] = e - row[k] * d;
                if (col[k] + V <= d) {
                    const S *x = in + row[k] * in_width + col[k];
                    if (((uintptr_t)x & 15u) == 0)
                        xp[k].lo = *reinterpret_cast<const uint4 *>(x);
                    else
                        kb_pair16_load(xp[k], x, in_end);
                    if (gated) {
                        if (((uintptr_t)(x + d) & 15u) == 0)
                            upp[k].lo = *reinterpret_cast<const uint4 *>(x + d);
                        else
                            kb_pair16_load(upp[k], x + d, in_end);
                    }
                }
            }
        }
#pragma unroll
        for (int k = 0; k < U; k++) {
            const int64_t u = base + k * threads, e = head + u * V;
            if (u >= units)
                continue;
            kb_vec16<T> xv, uv;
            if (col[k] + V <= d) {
                const S *x = in + row[k] * in_width + col[k];
                xv.raw = ((uintptr_t)x & 15u) == 0 ? xp[k].lo : kb_pair16_get(xp[k], x, in_end);
                uv.raw = make_uint4(0u, 0u, 0u, 0u);
                if (gated)
                    uv.raw = ((uintptr_t)(x + d) & 15u) == 0 ? upp[k].lo
                                                             : kb_pair16_get(upp[k], x + d, in_end);
            } else {
                /* here, not with the loads above: one unit in d / V, and the batch of loads
                 * keeps its registers (with it there, U = 4 spilled) */
                const gathered<T> g = act_gather<T, OP>(in, row[k], col[k], d);
                xv.raw = g.x.raw;
                uv.raw = g.up.raw;
            }
            kb_store16(out + e, apply_unit<T, OP>(xv, uv));
        }
    }
    if (U != 1) {
        ph = act_load_elem<T, OP>(in, 0, me, d, me < head);
        pt = act_load_elem<T, OP>(in, tail_r, tail_e - tail_r * d, d, me < tail);
    }
    if (me < head)
        out[me] = kb_type<T>::store(apply<OP>(ph.x, ph.up));
    if (me < tail)
        out[tail_e] = kb_type<T>::store(apply<OP>(pt.x, pt.up));
}

/* The 16 bytes at p (element-aligned, [p, p + 16) inside the buffer that ends at end) as
 * the aligned chunk holding p and, where p is off 16 bytes, the next one: both issued here,
 * shifted by act_win_get; the next chunk is read whole unless it passes end (the last one of
 * the buffer, then act_win_get reads it element by element). */
struct act_win {
    uint4 lo, hi;
};
static __device__ __forceinline__ act_win act_win_load(const void *p, const void *end)
{
    const uint4 *c = kb_chunk16(p);
    act_win w;
    w.lo = __ldg(c); /* ld.global.nc, as the flat kernel's loads of its restrict input */
    w.hi = w.lo;
    if (((uintptr_t)p & 15u) != 0 && (uintptr_t)(c + 2) <= (uintptr_t)end)
        w.hi = __ldg(c + 1);
    return w;
}
static __device__ __forceinline__ uint4 act_win_get(act_win w, const void *p, const void *end)
{
    const uint4 *c = kb_chunk16(p);
    if (((uintptr_t)p & 15u) != 0 && (uintptr_t)(c + 2) > (uintptr_t)end)
        w.hi = kb_load16_upto(c + 1, end);
    return kb_shift16(w.lo, w.hi, (unsigned)((uintptr_t)p & 15u));
}

/*
 * Odd widths (rows off 16 bytes), many rows, a 16-byte aligned output: the output is one flat
 * array of 16-byte units, a thread per unit and a block per 256 units (no grid cap, as the
 * flat kernel), every global access a whole 16-byte one. Unit u holds output elements
 * e = u V .. u V + V - 1, row r = e / d (fastdiv), column c; its gate is the V elements at
 * x = in + 2 d r + c and its up those at x + d, each read as the aligned chunk around it and
 * the next (the second mostly an L1 hit: the neighbour's first) and shifted (kb_shift16; the
 * shift is the same along a row). A gated unit that crosses a row end (one in d / V) is
 * gathered out of line (act_gather), where it read a third window and merged two pairs in
 * line: that held 58 registers at 16-bit (4 blocks of 256 per SM, ncu: 42% achieved
 * occupancy, 75% of DRAM peak), this 40 (6 blocks), and 16-bit 32768 x 4095 ran 1.10x faster
 * on the H100, f32 1.06x; capping it at 32 registers (8 blocks, spills) gained no more
 * (docs/perf.md, ninth memory pass). The < V tail elements of the output go to the first
 * threads, loaded before their unit and stored after it.
 */
template <typename T, int OP>
__global__ void __launch_bounds__(256)
    act_odd_kernel(typename kb_type<T>::storage *__restrict__ out,
                   const typename kb_type<T>::storage *__restrict__ in, uint32_t units, int tail,
                   int64_t n, fastdiv fd)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    constexpr int V = 16 / (int)sizeof(S);
    const uint32_t d = fd.div;
    const int64_t in_width = gated ? 2 * (int64_t)d : (int64_t)d;
    const S *in_end = in + n * in_width;
    const uint32_t me = blockIdx.x * blockDim.x + threadIdx.x;
    const uint32_t tail_e = units * V + me;
    const uint32_t tail_r = me < (uint32_t)tail ? fastdiv_q(fd, tail_e) : 0u;
    const pending pt =
        act_load_elem<T, OP>(in, tail_r, tail_e - tail_r * d, d, me < (uint32_t)tail);
    if (me < units) {
        const uint32_t e = me * V, row = fastdiv_q(fd, e), col = e - row * d;
        const S *x = in + (int64_t)row * in_width + col;
        kb_vec16<T> a, b;
        if (gated && d - col < (uint32_t)V) { /* gelu_tanh's rows are contiguous */
            const gathered<T> g = act_gather<T, OP>(in, row, col, d);
            a.raw = g.x.raw; /* raw: HIP's uint4 makes the union's copy assignment deleted */
            b.raw = g.up.raw;
        } else {
            const act_win wx = act_win_load(x, in_end);
            act_win wu = wx;
            if (gated)
                wu = act_win_load(x + d, in_end);
            a.raw = act_win_get(wx, x, in_end);
            b.raw = gated ? act_win_get(wu, x + d, in_end) : make_uint4(0u, 0u, 0u, 0u);
        }
        kb_store16(out + e, apply_unit<T, OP>(a, b));
    }
    if (me < (uint32_t)tail)
        out[tail_e] = kb_type<T>::store(apply<OP>(pt.x, pt.up));
}

/*
 * Few elements at any width (act_pick_elem): E output elements per thread, element k of a
 * thread one grid's width after element k - 1 (a warp's loads and stores are 32 neighbouring
 * elements: coalesced), every load issued before the first result, and a grid that covers every
 * element in one step. Element e lies in row e / d (fastdiv). No 16-byte units, so no head,
 * tail, shifted pairs or gathered row-crossing units: a short chain of index math, one round trip
 * to memory, the math, a store. What torch.compile's kernel does at these shapes; the any-width
 * kernel's ~400 instructions per thread took 1-1.5 us over a copy there (docs/perf.md, fourth and
 * sixth passes). 32-bit indices (the input is under 2^31 elements: ACT_ELEM_MAX) and no loop: a
 * form with 64-bit indices looping over a grid capped at what the device holds took 1.10-1.16x as
 * long for f32 at 1-64 rows of 4095 and 512 x 1000 on an H100 (docs/perf.md, memory-bound
 * "Twelfth pass").
 */
template <typename T, int OP, int E>
__global__ void __launch_bounds__(256)
    act_elem_kernel(typename kb_type<T>::storage *__restrict__ out,
                    const typename kb_type<T>::storage *__restrict__ in, uint32_t total, fastdiv fd)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    const uint32_t d = fd.div, in_width = gated ? 2 * d : d;
    const uint32_t threads = gridDim.x * blockDim.x, base = blockIdx.x * blockDim.x + threadIdx.x;
    float x[E], up[E];
#pragma unroll
    for (int k = 0; k < E; k++) {
        const uint32_t e = base + k * threads;
        x[k] = 0.0f;
        up[k] = 0.0f;
        if (e < total) {
            const uint32_t row = fastdiv_q(fd, e), col = e - row * d;
            const S *p = in + (row * in_width + col);
            x[k] = kb_type<T>::load(p[0]);
            if (gated)
                up[k] = kb_type<T>::load(p[d]);
        }
    }
#pragma unroll
    for (int k = 0; k < E; k++) {
        const uint32_t e = base + k * threads;
        if (e < total)
            out[e] = kb_type<T>::store(apply<OP>(x[k], up[k]));
    }
}

/* Blocks that fill the device once (the kernels loop), at most what the work needs. */
template <typename K> static unsigned fill_grid(K kernel, int threads, int64_t needed)
{
    int dev = 0, sms = 0, per_sm = 0;
    int64_t most = 1 << 20;
    if (kb_gpu_get_device(&dev) == kb_gpu_success && kb_gpu_sm_count(&sms, dev) == kb_gpu_success &&
        kb_gpu_occupancy(&per_sm, kernel, threads) == kb_gpu_success && sms > 0 && per_sm > 0)
        most = (int64_t)sms * per_sm;
    else
        (void)kb_gpu_get_last_error(); /* a failed query must not look like a failed launch */
    if (needed < 1)
        needed = 1;
    return (unsigned)(needed < most ? needed : most);
}

/* The any-width kernel's launch: the output cut at its 16-byte boundaries (head elements,
 * units, tail elements), a thread per unit where the device holds them, else 4 per step. */
template <typename T, int OP>
static void launch_any(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *in,
                       int64_t n, int64_t d, kb_stream_t s)
{
    typedef typename kb_type<T>::storage S;
    const int V = 16 / (int)sizeof(S), threads = 256;
    const int64_t total = n * d;
    int64_t head = (int64_t)(((16u - ((uintptr_t)out & 15u)) & 15u) / sizeof(S));
    if (head > total)
        head = total;
    const int64_t units = (total - head) / V, tail = total - head - units * V;
    const fastdiv fd = make_fastdiv(d <= 0xffffffffll ? (uint32_t)d : 1u);
    int64_t needed = (units + threads - 1) / threads;
    if (needed < 1)
        needed = 1; /* the head and tail alone */
    const unsigned one = fill_grid(act_any_kernel<T, OP, 1>, threads, needed);
    if (one >= needed)
        act_any_kernel<T, OP, 1>
            <<<one, threads, 0, s>>>(out, in, n, d, units, (int)head, (int)tail, fd);
    else
        act_any_kernel<T, OP, 4>
            <<<fill_grid(act_any_kernel<T, OP, 4>, threads, needed), threads, 0, s>>>(
                out, in, n, d, units, (int)head, (int)tail, fd);
}

/* The element kernel's launch (the input under 2^31 elements: act_pick_elem): E elements per
 * thread, blocks of `threads`, as many as cover the output once. */
template <typename T, int OP, int E>
static void launch_elem(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *in,
                        int64_t n, int64_t d, int threads, kb_stream_t s)
{
    const int64_t total = n * d, per_block = (int64_t)threads * E;
    act_elem_kernel<T, OP, E><<<(unsigned)((total + per_block - 1) / per_block), threads, 0, s>>>(
        out, in, (uint32_t)total, make_fastdiv((uint32_t)d));
}

/* The odd-width kernel's launch (out 16-byte aligned, d >= V, n * d + 2^16 < 2^32): a
 * thread per output unit, a block per 256 units, the < V tail elements on the first threads. */
template <typename T, int OP>
static void launch_odd(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *in,
                       int64_t n, int64_t d, kb_stream_t s)
{
    typedef typename kb_type<T>::storage S;
    const int V = 16 / (int)sizeof(S);
    const int64_t total = n * d, units = total / V;
    const int64_t blocks = units > 0 ? (units + 255) / 256 : 1;
    act_odd_kernel<T, OP><<<(unsigned)blocks, 256, 0, s>>>(
        out, in, (uint32_t)units, (int)(total - units * V), n, make_fastdiv((uint32_t)d));
}
static inline bool act_can_odd(const void *out, int64_t n, int64_t d, int V)
{
    return ((uintptr_t)out & 15u) == 0 && d >= V && d <= 0xffffffffll &&
           (uint64_t)n * (uint64_t)d + (1u << 16) < (1ull << 32);
}

/* Rows the flat kernel cannot take (odd widths, buffers off 16 bytes) go to the element kernel
 * up to ACT_ELEM_MAX elements of output, where a launch is one round trip to memory and the
 * any-width kernel's instruction chain was the time (H200, bench/gpu/act_odd: 1-512 rows of
 * 4095 0.8-1.0 us faster at 1-64 rows, 0.3-2 us at 512); past it, to the any-width kernel
 * (16-byte units: fewer instructions per byte; 16-bit 2048 x 4095 took 22 us there against 25
 * for the element kernel). */
#ifndef ACT_ELEM_MAX
#define ACT_ELEM_MAX (1 << 21)
#endif
/* From ACT_ODD_MIN output elements, odd widths in a 16-byte aligned output take the odd-width
 * kernel (aligned 16-byte loads shifted in registers, a thread per unit, no grid cap). H200
 * (bench/gpu/act_odd and the interleaved sweep, docs/perf.md, eighth pass): against the
 * element kernel 512 x 4095 (2^21 elements) 16-bit 7.2 -> 5.9 us, f32 equal; 512 x 1001
 * (2^19) equal at 16-bit, f32 3% faster; 64 x 4095 (2^18) 3-4% slower in one process (0.90 in
 * the sweep), 7 x 4095 25% slower. Against the any-width kernel 4096-32768 rows of 4095 and
 * 32768 x 1001 1.03-1.30 faster at 16-bit, 1.01-1.04 at f32. So from 2^19, where it wins. */
#ifndef ACT_ODD_MIN
#define ACT_ODD_MIN (1 << 19)
#endif
/* the element kernel's 32-bit indices: gate and up rows of 2 x ACT_ELEM_MAX elements */
static_assert(ACT_ELEM_MAX <= (1 << 30), "the element kernel indexes its input in 32 bits");
static inline bool act_pick_elem(int64_t n, int64_t d)
{
    return n * d <= (int64_t)ACT_ELEM_MAX;
}
/* Up to ACT_FLAT16_MIN output elements, 16-bit rows the flat kernel could take go element by
 * element instead: a launch that small is one thread's chain, and a 16-byte unit's (two 16-byte
 * loads, eight activations, a pack) is longer than one element's; and a thread per element
 * spreads the launch over 8x the blocks (at 7 x 5120 140 blocks where the flat kernel has 18;
 * torch.compile's kernel launches 140). H100 (bench/gpu/act_odd.cu; docs/perf.md, memory-bound
 * "Tenth pass" and "Twelfth pass"): 1x128 to 7x4096 and 1x16384 1.03-1.15x faster, and with both
 * kernels loop-free 7x5120 to 64x2048 (up to 2^17) 1.01-1.06x, 64x4096 8% slower; f32 (4-element
 * units) lost 4-19% throughout in the tenth pass and was within 2% either way in the twelfth. */
#ifndef ACT_FLAT16_MIN
#define ACT_FLAT16_MIN (1 << 17)
#endif

template <typename T, int OP>
static int launch(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *in,
                  int64_t n, int64_t d, void *stream)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    const int V = 16 / (int)sizeof(S), threads = 256;
    int rc = act_check_args(out, in, n, d);
    if (rc != 0 || n == 0 || d == 0)
        return rc;
    if ((((uintptr_t)out | (uintptr_t)in) & (sizeof(S) - 1)) != 0)
        return KBPKG_KERNEL_EINVAL; /* not aligned to the element */
    kb_stream_t s = (kb_stream_t)stream;
    const bool flat = ((uintptr_t)out & 15) == 0 && ((uintptr_t)in & 15) == 0 && d % V == 0 &&
                      d / V <= 0xffffffffll && (uint64_t)n * (uint64_t)(d / V) < (1ull << 32) &&
                      !(sizeof(S) == 2 && n * d <= (int64_t)ACT_FLAT16_MIN);
    if (flat) {
        const uint32_t total = (uint32_t)(n * (d / V));
        const int64_t needed = ((int64_t)total + threads - 1) / threads;
        const fastdiv upr = make_fastdiv((uint32_t)(d / V));
        /* a thread per unit, a block per 256 units whatever the count (at most 2^24 blocks),
         * as torch.compile's Triton kernel launches: where the grid was capped at what the
         * device holds and each thread walked 4 units a grid apart (U = 4), the H200 read
         * 16-bit 32768 x 4096-8192 at 0.90-0.91 of torch.compile (seventh pass, docs/perf.md);
         * the U = 4 kernel stays for bench/gpu/act_odd.cu to time beside it */
        if (n * (gated ? 2 * d : d) < (1ll << 31))
            act_flat_kernel<T, OP, 1, false>
                <<<(unsigned)needed, threads, 0, s>>>(out, in, total, upr, d);
        else
            act_flat_kernel<T, OP, 1><<<(unsigned)needed, threads, 0, s>>>(out, in, total, upr, d);
    } else if (n * d >= (int64_t)ACT_ODD_MIN && act_can_odd(out, n, d, V)) {
        launch_odd<T, OP>(out, in, n, d, s);
    } else if (act_pick_elem(n, d)) {
        /* one element per thread; 16-bit past 2^18 elements two (H100, docs/perf.md memory-bound
         * "Twelfth pass": 512 x 1000 3.22 -> 2.73 us, where f32 was 1-4% faster with one at 1 x
         * 128 - 512 x 1000; 16-bit with two lost 4% at 1 x 4095 and tied at 64 x 4095) */
        if (sizeof(S) == 2 && n * d > (1 << 18))
            launch_elem<T, OP, 2>(out, in, n, d, 256, s);
        else
            launch_elem<T, OP, 1>(out, in, n, d, 256, s);
    } else {
        launch_any<T, OP>(out, in, n, d, s);
    }
    return kb_gpu_launch_status();
}

} // namespace act

extern "C" {

KBPKG_DEFINE_KERNEL_INFO(KB_GPU_BACKEND)

#define ACT_GPU_EXPORT(op, OP, suffix, tag, type)                                                  \
    KBPKG_EXPORT int act_##op##_##suffix(type *out, const type *in, int64_t n, int64_t d,          \
                                         void *stream)                                             \
    {                                                                                              \
        return act::launch<tag, OP>(out, in, n, d, stream);                                        \
    }
#define ACT_GPU_EXPORTS(op, OP)                                                                    \
    ACT_GPU_EXPORT(op, OP, f32, float, float)                                                      \
    ACT_GPU_EXPORT(op, OP, bf16, kb_bf16_tag, kbpkg_bf16)                                          \
    ACT_GPU_EXPORT(op, OP, f16, kb_f16_tag, kbpkg_f16)

ACT_GPU_EXPORTS(silu_and_mul, ACT_SILU_AND_MUL)
ACT_GPU_EXPORTS(gelu_and_mul, ACT_GELU_AND_MUL)
ACT_GPU_EXPORTS(gelu_tanh, ACT_GELU_TANH)
}
