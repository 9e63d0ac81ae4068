// Element-wise math shared by the GPU kernels and the CPU path.
#pragma once
#include <math.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define ACT_HD __host__ __device__ inline
#else
#define ACT_HD inline
#endif

ACT_HD float act_silu(float x) { return x / (1.0f + expf(-x)); }
ACT_HD float act_gelu_tanh(float x)
{
    const float k = 0.7978845608f; // sqrt(2/pi)
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}
