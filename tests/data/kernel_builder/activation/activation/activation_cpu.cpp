// The CPU path: the same math, one row at a time.
#include "activation/dispatch_utils.h"

#include <cstdint>

void silu_and_mul_cpu(float *out, const float *x, int64_t rows, int64_t d)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < d; j++)
            out[r * d + j] = act_silu(x[r * 2 * d + j]) * x[r * 2 * d + d + j];
}

void gelu_tanh_and_mul_cpu(float *out, const float *x, int64_t rows, int64_t d)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < d; j++)
            out[r * d + j] = act_gelu_tanh(x[r * 2 * d + j]) * x[r * 2 * d + d + j];
}
