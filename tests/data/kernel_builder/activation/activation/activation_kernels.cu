// out[i, j] = act(x[i, j]) * x[i, d + j] for rows of 2*d inputs.
#include "activation/cuda_compat.h"
#include "activation/dispatch_utils.h"

#include <stdint.h>

template <float (*ACT)(float)>
__global__ void act_and_mul_kernel(float *out, const float *x, int64_t d)
{
    const int64_t row = blockIdx.x;
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
        float a = ACT_LDG(&x[row * 2 * d + j]);
        float b = ACT_LDG(&x[row * 2 * d + d + j]);
        out[row * d + j] = ACT(a) * b;
    }
}

void silu_and_mul_launch(float *out, const float *x, int64_t rows, int64_t d, cudaStream_t s)
{
    act_and_mul_kernel<act_silu><<<(unsigned)rows, 256, 0, s>>>(out, x, d);
}

void gelu_tanh_and_mul_launch(float *out, const float *x, int64_t rows, int64_t d,
                              cudaStream_t s)
{
    act_and_mul_kernel<act_gelu_tanh><<<(unsigned)rows, 256, 0, s>>>(out, x, d);
}
