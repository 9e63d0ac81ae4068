/* CUDA/HIP portability: one CUDA-dialect source compiles with nvcc and with hipcc. */
#ifndef KB_GPU_COMPAT_H
#define KB_GPU_COMPAT_H

#include <stdint.h>

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
#define KB_GPU_HIP 1
#define KB_GPU_BACKEND KBPKG_BACKEND_ROCM
typedef hipStream_t kb_stream_t;
typedef hipError_t kb_gpu_error_t;
#define kb_gpu_success hipSuccess
#define kb_gpu_get_last_error hipGetLastError
#define kb_gpu_func_set_max_dyn_smem(fn, bytes)                                                    \
    hipFuncSetAttribute((const void *)(fn), hipFuncAttributeMaxDynamicSharedMemorySize, (bytes))
#define kb_gpu_get_device hipGetDevice
#define kb_gpu_sm_count(out, dev)                                                                  \
    hipDeviceGetAttribute((out), hipDeviceAttributeMultiprocessorCount, (dev))
#define kb_gpu_occupancy(out, fn, threads)                                                         \
    hipOccupancyMaxActiveBlocksPerMultiprocessor((out), (fn), (threads), 0)
#define KB_WARP_SIZE_MAX 64
#else
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#define KB_GPU_CUDA 1
#define KB_GPU_BACKEND KBPKG_BACKEND_CUDA
typedef cudaStream_t kb_stream_t;
typedef cudaError_t kb_gpu_error_t;
#define kb_gpu_success cudaSuccess
#define kb_gpu_get_last_error cudaGetLastError
#define kb_gpu_func_set_max_dyn_smem(fn, bytes)                                                    \
    cudaFuncSetAttribute((fn), cudaFuncAttributeMaxDynamicSharedMemorySize, (bytes))
#define kb_gpu_get_device cudaGetDevice
#define kb_gpu_sm_count(out, dev)                                                                  \
    cudaDeviceGetAttribute((out), cudaDevAttrMultiProcessorCount, (dev))
#define kb_gpu_occupancy(out, fn, threads)                                                         \
    cudaOccupancyMaxActiveBlocksPerMultiprocessor((out), (fn), (threads), 0)
#define KB_WARP_SIZE_MAX 32
#endif

/* 16-bit storage <-> float on the device. bf16 is the top half of a float. */
static __device__ __forceinline__ float kb_bf16_to_f32(uint16_t h)
{
    return __uint_as_float(((uint32_t)h) << 16);
}

/* NaN to bf16: sign and top payload bits kept, quiet bit set (kbpkg_half.h's rule). */
static __device__ __forceinline__ uint16_t kb_bf16_nan_bits(float f)
{
    return (uint16_t)((__float_as_uint(f) >> 16) | 0x40u);
}

/* Round to nearest even in integer arithmetic: the reference for the hardware path. */
static __device__ __forceinline__ uint16_t kb_f32_to_bf16_soft(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return kb_bf16_nan_bits(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* sm_80 on converts f32 to bf16 in hardware (cvt.rn, round to nearest even, subnormals kept,
 * overflow to inf: the same result as the integer rounding bit for bit) except that it writes
 * one canonical NaN; the NaN lanes are patched to kb_bf16_nan_bits so every path agrees. */
#if defined(KB_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define KB_GPU_HW_BF16 1
#endif

/* Round to nearest even; NaN stays NaN (quiet, sign and top payload bits kept). */
static __device__ __forceinline__ uint16_t kb_f32_to_bf16(float f)
{
#ifdef KB_GPU_HW_BF16
    uint16_t r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
    return f != f ? kb_bf16_nan_bits(f) : r;
#else
    return kb_f32_to_bf16_soft(f);
#endif
}

#ifdef KB_GPU_HW_BF16
/* The bare instruction: lo to the low half, hi to the high half, NaN lanes canonical. */
static __device__ __forceinline__ uint32_t kb_cvt_bf16x2(float lo, float hi)
{
    uint32_t r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* r with its NaN lanes rewritten by the software rule. */
static __device__ __forceinline__ uint32_t kb_bf16x2_patch_nan(uint32_t r, float lo, float hi)
{
    if (lo != lo)
        r = (r & 0xffff0000u) | kb_bf16_nan_bits(lo);
    if (hi != hi)
        r = (r & 0x0000ffffu) | ((uint32_t)kb_bf16_nan_bits(hi) << 16);
    return r;
}
#endif

/* Two floats to two bf16 in one 32-bit word, lo in the low half: one instruction on sm_80+
 * (plus a compare; only NaN takes the patching branch). */
static __device__ __forceinline__ uint32_t kb_f32x2_to_bf16x2(float lo, float hi)
{
#ifdef KB_GPU_HW_BF16
    uint32_t r = kb_cvt_bf16x2(lo, hi);
    if (__builtin_expect(lo != lo || hi != hi, 0))
        r = kb_bf16x2_patch_nan(r, lo, hi);
    return r;
#else
    return (uint32_t)kb_f32_to_bf16_soft(lo) | ((uint32_t)kb_f32_to_bf16_soft(hi) << 16);
#endif
}

static __device__ __forceinline__ float kb_f16_to_f32(uint16_t h)
{
    return __half2float(__ushort_as_half(h));
}

static __device__ __forceinline__ uint16_t kb_f32_to_f16(float f)
{
    return __half_as_ushort(__float2half_rn(f));
}

/* Two floats to two f16 in one 32-bit word, lo in the low half (the same rounding as
 * kb_f32_to_f16, one instruction on sm_80+). */
static __device__ __forceinline__ uint32_t kb_f32x2_to_f16x2(float lo, float hi)
{
#if defined(KB_GPU_CUDA) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    uint32_t r;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return (uint32_t)kb_f32_to_f16(lo) | ((uint32_t)kb_f32_to_f16(hi) << 16);
#endif
}

/* Storage types: a tag type per 16-bit format so templates can pick the conversion. */
struct kb_bf16_tag {
    uint16_t bits;
};
struct kb_f16_tag {
    uint16_t bits;
};

template <typename T> struct kb_type;
template <> struct kb_type<float> {
    typedef float storage;
    static __device__ __forceinline__ float load(float v)
    {
        return v;
    }
    static __device__ __forceinline__ float store(float v)
    {
        return v;
    }
};
template <> struct kb_type<kb_bf16_tag> {
    typedef uint16_t storage;
    static __device__ __forceinline__ float load(uint16_t v)
    {
        return kb_bf16_to_f32(v);
    }
    static __device__ __forceinline__ uint16_t store(float v)
    {
        return kb_f32_to_bf16(v);
    }
    /* Two outputs as one word, lo in the low half: store's bits, one conversion per pair. */
    static __device__ __forceinline__ uint32_t store2(float lo, float hi)
    {
        return kb_f32x2_to_bf16x2(lo, hi);
    }
    /* store2 without the NaN rule: the same bits unless lo or hi is NaN. For epilogues that
     * test a whole fragment once (kb_any_nan) instead of every pair. */
    static __device__ __forceinline__ uint32_t store2_raw(float lo, float hi)
    {
#ifdef KB_GPU_HW_BF16
        return kb_cvt_bf16x2(lo, hi);
#else
        return kb_f32x2_to_bf16x2(lo, hi);
#endif
    }
#ifdef KB_GPU_HW_BF16
    static constexpr bool raw_nan_differs = true;
#else
    static constexpr bool raw_nan_differs = false;
#endif
};
template <> struct kb_type<kb_f16_tag> {
    typedef uint16_t storage;
    static __device__ __forceinline__ float load(uint16_t v)
    {
        return kb_f16_to_f32(v);
    }
    static __device__ __forceinline__ uint16_t store(float v)
    {
        return kb_f32_to_f16(v);
    }
    static __device__ __forceinline__ uint32_t store2(float lo, float hi)
    {
        return kb_f32x2_to_f16x2(lo, hi);
    }
    static __device__ __forceinline__ uint32_t store2_raw(float lo, float hi)
    {
        return kb_f32x2_to_f16x2(lo, hi);
    }
    static constexpr bool raw_nan_differs = false; /* the instruction keeps NaN payloads */
};

/* Whether any of v[0..n) is NaN; unordered compares of pairs, one test per two values. */
template <int N> __device__ __forceinline__ bool kb_any_nan(const float *v)
{
    bool nan = false;
#pragma unroll
    for (int i = 0; i + 1 < N; i += 2)
        nan |= (v[i] != v[i]) | (v[i + 1] != v[i + 1]);
    if (N % 2)
        nan |= v[N - 1] != v[N - 1];
    return nan;
}

/* 16 bytes of storage seen as elements or as 32-bit words (one 16-byte load or store). */
template <typename T> union kb_vec16 {
    uint4 raw;
    uint32_t w[4];
    typename kb_type<T>::storage e[16 / sizeof(typename kb_type<T>::storage)];
};

/* Fills v from f[0 .. elements-per-vector), one rounding per element; 16-bit types convert
 * two at a time (one instruction each on sm_80+). */
template <typename T> __device__ __forceinline__ void kb_vec16_pack(kb_vec16<T> &v, const float *f);
template <> __device__ __forceinline__ void kb_vec16_pack<float>(kb_vec16<float> &v, const float *f)
{
#pragma unroll
    for (int i = 0; i < 4; i++)
        v.e[i] = f[i];
}
template <>
__device__ __forceinline__ void kb_vec16_pack<kb_bf16_tag>(kb_vec16<kb_bf16_tag> &v, const float *f)
{
#ifdef KB_GPU_HW_BF16
    /* one NaN test for all eight (unordered compares pair up); the patch is a branch that
     * only NaN takes */
    bool nan = false;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        v.w[i] = kb_cvt_bf16x2(f[2 * i], f[2 * i + 1]);
        nan |= (f[2 * i] != f[2 * i]) | (f[2 * i + 1] != f[2 * i + 1]);
    }
    if (__builtin_expect(nan, 0)) {
#pragma unroll
        for (int i = 0; i < 4; i++)
            v.w[i] = kb_bf16x2_patch_nan(v.w[i], f[2 * i], f[2 * i + 1]);
    }
#else
#pragma unroll
    for (int i = 0; i < 4; i++)
        v.w[i] = kb_f32x2_to_bf16x2(f[2 * i], f[2 * i + 1]);
#endif
}
template <>
__device__ __forceinline__ void kb_vec16_pack<kb_f16_tag>(kb_vec16<kb_f16_tag> &v, const float *f)
{
#pragma unroll
    for (int i = 0; i < 4; i++)
        v.w[i] = kb_f32x2_to_f16x2(f[2 * i], f[2 * i + 1]);
}

/* The same bits as kb_vec16_pack, with each pair's NaN lanes fixed by selects as it is
 * converted: no float outlives its conversion. For kernels that convert several vectors in a
 * row (rmsnorm: the branch's kept floats cost about 80 registers, and spills, on sm_90). */
template <typename T>
__device__ __forceinline__ void kb_vec16_pack_sel(kb_vec16<T> &v, const float *f)
{
    kb_vec16_pack<T>(v, f);
}
template <>
__device__ __forceinline__ void kb_vec16_pack_sel<kb_bf16_tag>(kb_vec16<kb_bf16_tag> &v,
                                                               const float *f)
{
#ifdef KB_GPU_HW_BF16
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float lo = f[2 * i], hi = f[2 * i + 1];
        uint32_t r = kb_cvt_bf16x2(lo, hi);
        r = lo != lo ? (r & 0xffff0000u) | kb_bf16_nan_bits(lo) : r;
        r = hi != hi ? (r & 0x0000ffffu) | ((uint32_t)kb_bf16_nan_bits(hi) << 16) : r;
        v.w[i] = r;
    }
#else
    kb_vec16_pack<kb_bf16_tag>(v, f);
#endif
}

/* Launch-time error check shared by the exports. */
static inline int kb_gpu_launch_status(void)
{
    return kb_gpu_get_last_error() == kb_gpu_success ? 0 : -2;
}

/* Lanes per warp: 32 on NVIDIA, 32 or 64 on AMD (wave32/wave64, known only on the device). */
static __device__ __forceinline__ int kb_warp_size(void)
{
#if defined(KB_GPU_HIP)
    return warpSize;
#else
    return 32;
#endif
}

/* Sum over aligned groups of `width` lanes (a power of two, at most 32): every lane of a group
 * gets the same bits (a butterfly adds the same pairs in every lane). All lanes of the warp
 * must take part. */
static __device__ __forceinline__ float kb_group_sum(float v, int width)
{
    for (int o = width / 2; o > 0; o >>= 1)
#if defined(KB_GPU_HIP)
        v += __shfl_xor(v, o, width);
#else
        v += __shfl_xor_sync(0xffffffffu, v, o, width);
#endif
    return v;
}

/* Sum over one warp (32 lanes on NVIDIA, warpSize = 32 or 64 on AMD). */
static __device__ __forceinline__ float kb_warp_sum(float v)
{
#if defined(KB_GPU_HIP)
    for (int o = warpSize / 2; o > 0; o >>= 1)
        v += __shfl_xor(v, o);
#else
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
#endif
    return v;
}

/* Sum over the block; every thread gets the result. scratch holds one float per warp. */
static __device__ __forceinline__ float kb_block_sum(float v, float *scratch)
{
    int lane = threadIdx.x % warpSize, warp = threadIdx.x / warpSize;
    int warps = (blockDim.x + warpSize - 1) / warpSize;
    v = kb_warp_sum(v);
    __syncthreads(); /* scratch may still be read from an earlier call */
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < warps ? scratch[lane] : 0.0f;
    return kb_warp_sum(v);
}

/* ---- 16 bytes at any element offset: rows whose bytes are not a multiple of 16 (odd widths)
 * and buffers that sit differently modulo 16 keep 16-byte loads. A row is split into a head
 * (elements before the first 16-byte boundary of the output row), aligned 16-byte units and
 * a tail; an input that is not aligned like the output reads each unit as the two aligned
 * 16-byte chunks around it (the second mostly an L1 hit: it is the next unit's first) and
 * shifts them together. ---- */

/* The aligned chunk holding p. */
static __device__ __forceinline__ const uint4 *kb_chunk16(const void *p)
{
    return (const uint4 *)((uintptr_t)p & ~(uintptr_t)15);
}

/* Bytes s .. s + 16 of lo:hi (0 <= s < 16; s is uniform over a row, so the selects do not
 * diverge). Word i is a funnel shift of words i + s/4 and i + s/4 + 1. */
static __device__ __forceinline__ uint4 kb_shift16(uint4 lo, uint4 hi, unsigned s)
{
    const uint32_t w[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    const unsigned q = s >> 2, r = (s & 3u) * 8u;
    uint32_t t[7], u[5], o[4];
#pragma unroll
    for (int i = 0; i < 7; i++)
        t[i] = (q & 1u) ? w[i + 1] : w[i];
#pragma unroll
    for (int i = 0; i < 5; i++)
        u[i] = (q & 2u) ? t[i + 2] : t[i];
#pragma unroll
    for (int i = 0; i < 4; i++)
        o[i] = (uint32_t)((((uint64_t)u[i + 1] << 32) | u[i]) >> r);
    return make_uint4(o[0], o[1], o[2], o[3]);
}

/* The aligned chunk c, of which only the bytes before end may be read (the last chunk of a
 * buffer): two bytes at a time, the rest zero. */
static __device__ __forceinline__ uint4 kb_load16_upto(const uint4 *c, const void *end)
{
    const uint16_t *h = (const uint16_t *)c;
    uint32_t wd[4] = {0u, 0u, 0u, 0u};
#pragma unroll
    for (int i = 0; i < 8; i++)
        if ((uintptr_t)(h + i + 1) <= (uintptr_t)end)
            wd[i / 2] |= (uint32_t)h[i] << (16 * (i % 2));
    return make_uint4(wd[0], wd[1], wd[2], wd[3]);
}

/* The 16 bytes at p (aligned to its element, p % 16 != 0, [p, p + 16) before end) in two
 * steps, so that a kernel issues every load of a batch before the first shift waits on one:
 * kb_pair16_load reads the chunk at p and the next one (that chunk again when the next one
 * would pass end: the last vector of a buffer), kb_pair16_get patches that case from the
 * bytes before end and shifts. */
struct kb_pair16 {
    uint4 lo, hi;
};

static __device__ __forceinline__ bool kb_pair16_whole(const void *p, const void *end)
{
    return (uintptr_t)(kb_chunk16(p) + 2) <= (uintptr_t)end;
}

static __device__ __forceinline__ void kb_pair16_load(kb_pair16 &v, const void *p, const void *end)
{
    const uint4 *c = kb_chunk16(p);
    v.lo = c[0];
    v.hi = c[kb_pair16_whole(p, end) ? 1 : 0];
}

static __device__ __forceinline__ uint4 kb_pair16_get(const kb_pair16 &v, const void *p,
                                                      const void *end)
{
    uint4 hi = v.hi;
    if (!kb_pair16_whole(p, end))
        hi = kb_load16_upto(kb_chunk16(p) + 1, end);
    return kb_shift16(v.lo, hi, (unsigned)((uintptr_t)p & 15));
}

/* The 16 bytes at p (aligned to its element, [p, p + 16) before end), at once: for loops
 * that use each vector right after loading it. */
static __device__ __forceinline__ uint4 kb_load16_any(const void *p, const void *end)
{
    if (((uintptr_t)p & 15) == 0)
        return *(const uint4 *)p;
    kb_pair16 v;
    kb_pair16_load(v, p, end);
    return kb_pair16_get(v, p, end);
}

/* 16 bytes to p (16-byte aligned, global memory) in one store instruction. A plain uint4 store
 * of a kb_vec16 was compiled to four 4-byte stores in some kernels (Nsight Compute on the H200:
 * 4x the store instructions of a copy in rmsnorm's block kernel and the any-width activation
 * kernel; docs/perf.md, fourth pass), so on CUDA the vector store is written out. No "memory"
 * clobber: no kernel reads back what it stores before a barrier, and the loads stay free to
 * move ahead of it. */
static __device__ __forceinline__ void kb_store16(void *p, uint4 v)
{
#if defined(KB_GPU_CUDA)
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w));
#else
    *(uint4 *)p = v;
#endif
}

/* A warp-uniform hint that the lines at p will be read soon (the weight of a normalisation,
 * read by every row): one request, no register. */
static __device__ __forceinline__ void kb_prefetch_l2(const void *p)
{
#if defined(KB_GPU_CUDA)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(p));
#else
    (void)p;
#endif
}

#endif
