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
};

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

#endif
