/* kbpkg-community/rmsnorm on the CPU: rmsnorm_cpu, the scalar reference the checks compare
 * every build with (its sum in double), and the CPU build's exports: the same normalisation a
 * vector at a time, the sum of squares in fp32 lanes, one block of rows per core. */
#define _GNU_SOURCE /* kb_cpu.h: sched_getaffinity */
#include <math.h>

#include "rmsnorm_cpu.h"

#include "kb_cpu.h"
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

/* Rows of at least this many bytes (read and written) per thread: a thread costs tens of
 * microseconds to start and join, what a core streams in that time. */
#define MIN_BYTES_PER_THREAD (1 << 20)

_Static_assert((int)RMS_F32 == KB_CPU_F32 && (int)RMS_BF16 == KB_CPU_BF16 &&
                   (int)RMS_F16 == KB_CPU_F16,
               "the dtype enum numbers types as kb_cpu.h does");

typedef struct rms_job {
    enum rms_dtype dtype;
    void *out;
    const void *x;
    int64_t n, d;
    float eps;
    const float *weight; /* converted to fp32 once for every row */
    float *rows;         /* a row of d floats per part (padded to whole vectors) */
    int64_t row_stride;
} rms_job;

/* The sum of squares of x[0, count) (count a multiple of KB_VW, zero-padded) into acc: four
 * vectors of accumulators, so the adds overlap. */
static void sum_squares(kb_vecf acc[4], const float *x, int count)
{
    int i = 0;
    for (; i + 4 * KB_VW <= count; i += 4 * KB_VW)
        for (int a = 0; a < 4; a++) {
            kb_vecf v = kb_vload(x + i + a * KB_VW);
            acc[a] += v * v;
        }
    for (; i < count; i += KB_VW) {
        kb_vecf v = kb_vload(x + i);
        acc[0] += v * v;
    }
}

/* Each row converted to fp32 once into this part's buffer, its sum of squares taken there,
 * then scaled from there: one read of x, one write of out. */
static void rms_rows(void *arg, int index, int count)
{
    const rms_job *j = arg;
    float *x = j->rows + j->row_stride * index;
    int padded = (int)j->row_stride;
    for (int64_t r = j->n * index / count; r < j->n * (index + 1) / count; r++) {
        kb_cpu_to_floats((int)j->dtype, x, j->x, r * j->d, (int)j->d);
        kb_vecf acc[4] = {{0}, {0}, {0}, {0}};
        sum_squares(acc, x, padded);
        kb_vecf all = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        float sum = 0.0f;
        for (int l = 0; l < KB_VW; l++)
            sum += all[l];
        float inv = (float)(1.0 / sqrt((double)sum / (double)j->d + (double)j->eps));
        for (int64_t i = 0; i < j->d; i++) /* as the reference: (x * inv) * w */
            x[i] = x[i] * inv * j->weight[i];
        kb_cpu_from_floats((int)j->dtype, j->out, r * j->d, x, (int)j->d);
    }
}

static int rmsnorm_fast(enum rms_dtype dtype, void *out, const void *x, const void *weight,
                        int64_t n, int64_t d, float eps)
{
    int rc = rmsnorm_check_args(out, x, weight, n, d, eps);
    if (rc != 0 || n == 0 || d == 0)
        return rc;
    if (d > INT32_MAX - 16) /* the row buffers are padded to 16 floats */
        return KBPKG_KERNEL_EUNSUPPORTED;
    int threads =
        kb_cpu_threads((double)n * d * 2 * (dtype == RMS_F32 ? 4 : 2), MIN_BYTES_PER_THREAD);
    threads = threads < n ? threads : (int)n;
    int64_t stride = (d + 15) / 16 * 16; /* whole vectors, 64-byte rows: aligned_alloc's rule */
    float *buf = aligned_alloc(64, sizeof(float) * (size_t)stride * (size_t)(threads + 1));
    if (buf == NULL)
        return KBPKG_KERNEL_EUNSUPPORTED;
    /* the rows' padding stays zero: sum_squares reads whole vectors */
    memset(buf, 0, sizeof(float) * (size_t)stride * (size_t)(threads + 1));
    kb_cpu_to_floats((int)dtype, buf + stride * threads, weight, 0, (int)d);
    rms_job job = {dtype, out, x, n, d, eps, buf + stride * threads, buf, stride};
    kb_cpu_parallel(rms_rows, &job, threads);
    free(buf);
    return KBPKG_KERNEL_OK;
}

KBPKG_EXPORT int rmsnorm_f32(float *out, const float *x, const float *weight, int64_t n, int64_t d,
                             float eps, void *stream)
{
    (void)stream;
    return rmsnorm_fast(RMS_F32, out, x, weight, n, d, eps);
}

KBPKG_EXPORT int rmsnorm_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *x, const kbpkg_bf16 *weight,
                              int64_t n, int64_t d, float eps, void *stream)
{
    (void)stream;
    return rmsnorm_fast(RMS_BF16, out, x, weight, n, d, eps);
}

KBPKG_EXPORT int rmsnorm_f16(kbpkg_f16 *out, const kbpkg_f16 *x, const kbpkg_f16 *weight, int64_t n,
                             int64_t d, float eps, void *stream)
{
    (void)stream;
    return rmsnorm_fast(RMS_F16, out, x, weight, n, d, eps);
}
#endif
