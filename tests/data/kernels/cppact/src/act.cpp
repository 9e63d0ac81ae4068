// The exported functions: extern "C" wrappers over the templates.
#include "act_impl.hpp"

#include "rk_act.h"

extern "C" int rk_silu_and_mul_f32(float *out, const float *in, int64_t n, int64_t d, void *)
{
    return rk::silu_and_mul(out, in, n, d);
}

extern "C" int rk_silu_and_mul_f64(double *out, const double *in, int64_t n, int64_t d, void *)
{
    return rk::silu_and_mul(out, in, n, d);
}

extern "C" int rk_gelu_tanh_f32(float *out, const float *in, int64_t n, void *)
{
    if (n < 0 || (n && (!out || !in)))
        return KBPKG_KERNEL_EINVAL;
    for (int64_t i = 0; i < n; i++) {
        float x = in[i];
        out[i] = 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
    }
    return KBPKG_KERNEL_OK;
}
