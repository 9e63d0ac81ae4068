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

/* Round to nearest even; NaN stays NaN (quiet). */
static __device__ __forceinline__ uint16_t kb_f32_to_bf16(float f)
{
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static __device__ __forceinline__ float kb_f16_to_f32(uint16_t h)
{
    return __half2float(__ushort_as_half(h));
}

static __device__ __forceinline__ uint16_t kb_f32_to_f16(float f)
{
    return __half_as_ushort(__float2half_rn(f));
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

/* Launch-time error check shared by the exports. */
static inline int kb_gpu_launch_status(void)
{
    return kb_gpu_get_last_error() == kb_gpu_success ? 0 : -2;
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
