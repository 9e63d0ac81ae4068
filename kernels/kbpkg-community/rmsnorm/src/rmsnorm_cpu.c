/* kbpkg-community/rmsnorm on the CPU; also the reference in tests. */
#include <math.h>

#include "rmsnorm_cpu.h"

#include "kbpkg_half.h"

static float load(enum rms_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case RMS_BF16:
        return kbpkg_bf16_to_f32(((const uint16_t *)p)[i]);
    case RMS_F16:
        return kbpkg_f16_to_f32(((const uint16_t *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

static void store(enum rms_dtype t, void *p, int64_t i, float v)
{
    switch (t) {
    case RMS_BF16:
        ((uint16_t *)p)[i] = kbpkg_f32_to_bf16(v);
        break;
    case RMS_F16:
        ((uint16_t *)p)[i] = kbpkg_f32_to_f16(v);
        break;
    default:
        ((float *)p)[i] = v;
        break;
    }
}

int rmsnorm_cpu(enum rms_dtype dtype, void *out, const void *x, const void *weight, int64_t n,
                int64_t d, float eps)
{
    int rc = rmsnorm_check_args(out, x, weight, n, d, eps);
    if (rc != 0 || d == 0)
        return rc;
    for (int64_t r = 0; r < n; r++) {
        /* the sum in double keeps the reference's own rounding out of the comparison */
        double sum = 0.0;
        for (int64_t c = 0; c < d; c++) {
            double v = load(dtype, x, r * d + c);
            sum += v * v;
        }
        float inv = (float)(1.0 / sqrt(sum / (double)d + (double)eps));
        for (int64_t c = 0; c < d; c++)
            store(dtype, out, r * d + c, load(dtype, x, r * d + c) * inv * load(dtype, weight, c));
    }
    return KBPKG_KERNEL_OK;
}

/* The CPU build's exports; the GPU checks compile this file with KBPKG_REFERENCE_ONLY. */
#ifndef KBPKG_REFERENCE_ONLY
KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)

KBPKG_EXPORT int rmsnorm_f32(float *out, const float *x, const float *weight, int64_t n, int64_t d,
                             float eps, void *stream)
{
    (void)stream;
    return rmsnorm_cpu(RMS_F32, out, x, weight, n, d, eps);
}

KBPKG_EXPORT int rmsnorm_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *x, const kbpkg_bf16 *weight,
                              int64_t n, int64_t d, float eps, void *stream)
{
    (void)stream;
    return rmsnorm_cpu(RMS_BF16, out, x, weight, n, d, eps);
}

KBPKG_EXPORT int rmsnorm_f16(kbpkg_f16 *out, const kbpkg_f16 *x, const kbpkg_f16 *weight, int64_t n,
                             int64_t d, float eps, void *stream)
{
    (void)stream;
    return rmsnorm_cpu(RMS_F16, out, x, weight, n, d, eps);
}
#endif
