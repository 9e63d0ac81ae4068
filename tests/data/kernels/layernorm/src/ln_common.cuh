// Shared by both precisions of layernorm.cu.
#pragma once
#include <cuda_fp16.h>

#define LN_CAT2(a, b) a##b
#define LN_CAT(a, b) LN_CAT2(a, b)
#define LN_NAME(base) LN_CAT(base, LN_SUFFIX)

static __device__ __forceinline__ float ln_load(float v) { return v; }
static __device__ __forceinline__ float ln_load(__half v) { return __half2float(v); }
static __device__ __forceinline__ void ln_store(float *p, float v) { *p = v; }
static __device__ __forceinline__ void ln_store(__half *p, float v) { *p = __float2half(v); }
