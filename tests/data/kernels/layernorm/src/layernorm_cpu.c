/* The CPU build and the reference of tests/check.c: f32 only. */
#include <math.h>

#include "rk_layernorm.h"
#include "rkmath/reduce.h"

int rk_layernorm_ref(float *out, const float *x, const float *w, const float *b, int64_t n,
                     int64_t c, float eps);

int rk_layernorm_ref(float *out, const float *x, const float *w, const float *b, int64_t n,
                     int64_t c, float eps)
{
    if (n < 0 || c <= 0 || !(eps >= 0.0f))
        return KBPKG_KERNEL_EINVAL;
    for (int64_t r = 0; r < n; r++) {
        rkmath_welford acc = {0.0f, 0.0f, 0.0f};
        for (int64_t i = 0; i < c; i++)
            rkmath_welford_add(&acc, x[r * c + i]);
        float rstd = 1.0f / sqrtf(acc.m2 / (float)c + eps);
        for (int64_t i = 0; i < c; i++)
            out[r * c + i] = (x[r * c + i] - acc.mean) * rstd * w[i] + b[i];
    }
    return KBPKG_KERNEL_OK;
}

#ifndef KBPKG_REFERENCE_ONLY
int rk_layernorm_f32(float *out, const float *x, const float *w, const float *b, int64_t n,
                     int64_t c, float eps, void *stream)
{
    (void)stream;
    return rk_layernorm_ref(out, x, w, b, n, c, eps);
}

KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)
#endif
