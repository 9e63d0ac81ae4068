/* kbpkg-community/activation on the CPU: act_cpu, the scalar reference the checks compare
 * every build with (itself checked against fp64), and the CPU build's exports, the same
 * functions a vector at a time and one block of rows per core. */
#define _GNU_SOURCE /* kb_cpu.h: sched_getaffinity */
#include "activation_cpu.h"
#include "kb_cpu.h"
#include "kbpkg_half.h"

static float silu(float x)
{
    return x / (1.0f + expf(-x));
}
/* x/2 (1 + erf(x/sqrt 2)) written with erfc, which keeps the tail's precision: 1 + erff()
 * cancels below x = -5.5, where math libraries round it to 0 or to one ulp differently (the
 * H200 gave NaN for a gate near -6 times an infinite up, glibc -inf). Below -12, |gelu| <
 * 1e-32 and erfcf nears its underflow, where libraries may again disagree: gelu is x * 0
 * there on every device (-0, and NaN for -inf as in torch's formula). The GPU build computes
 * the same function with a cheaper erfc (activation.cu), zero at the same x. */
static float gelu_erf(float x)
{
    return x < -12.0f ? x * 0.0f : 0.5f * x * erfcf(x * -0.70710678118654752f);
}
static float gelu_tanh(float x)
{
    const float k = 0.79788456080286536f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

static float load(enum act_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case ACT_BF16:
        return kbpkg_bf16_to_f32(((const uint16_t *)p)[i]);
    case ACT_F16:
        return kbpkg_f16_to_f32(((const uint16_t *)p)[i]);
    default:
        return ((const float *)p)[i];
    }
}

static void store(enum act_dtype t, void *p, int64_t i, float v)
{
    switch (t) {
    case ACT_BF16:
        ((uint16_t *)p)[i] = kbpkg_f32_to_bf16(v);
        break;
    case ACT_F16:
        ((uint16_t *)p)[i] = kbpkg_f32_to_f16(v);
        break;
    default:
        ((float *)p)[i] = v;
        break;
    }
}

int act_cpu(enum act_op op, enum act_dtype dtype, void *out, const void *in, int64_t n, int64_t d)
{
    int rc = act_check_args(out, in, n, d);
    if (rc != 0)
        return rc;
    int gated = op != ACT_GELU_TANH;
    int64_t in_width = gated ? 2 * d : d;
    for (int64_t r = 0; r < n; r++) {
        for (int64_t c = 0; c < d; c++) {
            float x = load(dtype, in, r * in_width + c);
            float v;
            if (op == ACT_SILU_AND_MUL)
                v = silu(x) * load(dtype, in, r * in_width + d + c);
            else if (op == ACT_GELU_AND_MUL)
                v = gelu_erf(x) * load(dtype, in, r * in_width + d + c);
            else
                v = gelu_tanh(x);
            store(dtype, out, r * d + c, v);
        }
    }
    return KBPKG_KERNEL_OK;
}

/* The CPU build's exports; the GPU checks compile this file with KBPKG_REFERENCE_ONLY. */
#ifndef KBPKG_REFERENCE_ONLY
KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)

/* A row is converted to fp32 CHUNK elements at a time (L1-sized), computed, and stored back. */
enum { CHUNK = 512 };

/* Rows of at least this many bytes (read and written) per thread: a thread costs tens of
 * microseconds to start and join, what a core streams in that time. */
#define MIN_BYTES_PER_THREAD (1 << 20)

_Static_assert((int)ACT_F32 == KB_CPU_F32 && (int)ACT_BF16 == KB_CPU_BF16 &&
                   (int)ACT_F16 == KB_CPU_F16,
               "the dtype enum numbers types as kb_cpu.h does");

/* silu(x) = x / (1 + e^-x), as the reference, with the vector e^x. */
static kb_vecf vec_silu(kb_vecf x)
{
    return x / (1.0f + kb_vexp(-x));
}

/* 0.5 x (1 + tanh(u)) = x / (1 + e^-2u): one exp, and no 1 + tanh cancellation for x < 0
 * (where the reference loses digits, the check allows an absolute 1e-6). */
static kb_vecf vec_gelu_tanh(kb_vecf x)
{
    kb_vecf u = 0.79788456080286536f * (x + 0.044715f * x * x * x);
    return x / (1.0f + kb_vexp(-2.0f * u));
}

/* gelu(x) = x/2 erfc(-x/sqrt 2) with the GPU build's erfc(|z|) (activation.cu: Numerical
 * Recipes' erfcc, one reciprocal and one exp), and the reference's x * 0 below -12. */
static kb_vecf vec_gelu_erf(kb_vecf x)
{
    kb_vecf z = kb_vselect(x < 0.0f, -x, x) * 0.70710678118654752f;
    kb_vecf t = 1.0f / (0.5f * z + 1.0f);
    kb_vecf q = t * 0.17087277f - 0.82215223f;
    q = t * q + 1.48851587f;
    q = t * q - 1.13520398f;
    q = t * q + 0.27886807f;
    q = t * q - 0.18628806f;
    q = t * q + 0.09678418f;
    q = t * q + 0.37409196f;
    q = t * q + 1.00002368f;
    q = t * q - 1.26551223f;
    kb_vecf e = t * kb_vexp(q - z * z);
    kb_vecf two_phi = kb_vselect(x >= 0.0f, 2.0f - e, e); /* NaN x: NaN */
    return kb_vselect(x < -12.0f, x * 0.0f, 0.5f * x * two_phi);
}

typedef struct act_job {
    enum act_op op;
    enum act_dtype dtype;
    void *out;
    const void *in;
    int64_t n, d;
} act_job;

/* CHUNK (or fewer: count) elements of x (and up) in place in x; whole vectors past count are
 * computed on zeros and never stored. */
static void apply_chunk(enum act_op op, float *x, const float *up, int count)
{
    for (int i = 0; i < count; i += KB_VW) {
        kb_vecf v = kb_vload(x + i);
        if (op == ACT_SILU_AND_MUL)
            v = vec_silu(v) * kb_vload(up + i);
        else if (op == ACT_GELU_AND_MUL)
            v = vec_gelu_erf(v) * kb_vload(up + i);
        else
            v = vec_gelu_tanh(v);
        kb_vstore(x + i, v);
    }
}

static void act_rows(void *arg, int index, int count)
{
    const act_job *j = arg;
    float x[CHUNK] __attribute__((aligned(64))), up[CHUNK] __attribute__((aligned(64)));
    int gated = j->op != ACT_GELU_TANH;
    int64_t in_width = gated ? 2 * j->d : j->d;
    for (int64_t r = j->n * index / count; r < j->n * (index + 1) / count; r++) {
        for (int64_t c = 0; c < j->d; c += CHUNK) {
            int len = j->d - c < CHUNK ? (int)(j->d - c) : CHUNK;
            int padded = (len + KB_VW - 1) / KB_VW * KB_VW;
            kb_cpu_to_floats((int)j->dtype, x, j->in, r * in_width + c, len);
            if (gated)
                kb_cpu_to_floats((int)j->dtype, up, j->in, r * in_width + j->d + c, len);
            for (int i = len; i < padded; i++)
                x[i] = up[i] = 0.0f;
            apply_chunk(j->op, x, up, padded);
            kb_cpu_from_floats((int)j->dtype, j->out, r * j->d + c, x, len);
        }
    }
}

static int act_fast(enum act_op op, enum act_dtype dtype, void *out, const void *in, int64_t n,
                    int64_t d)
{
    int rc = act_check_args(out, in, n, d);
    if (rc != 0 || n == 0 || d == 0)
        return rc;
    act_job job = {op, dtype, out, in, n, d};
    double bytes = (double)n * d * (op == ACT_GELU_TANH ? 2 : 3) * (dtype == ACT_F32 ? 4 : 2);
    int threads = kb_cpu_threads(bytes, MIN_BYTES_PER_THREAD);
    kb_cpu_parallel(act_rows, &job, threads < n ? threads : (int)n);
    return KBPKG_KERNEL_OK;
}

#define ACT_CPU_EXPORT(op, OP, suffix, DT, type)                                                   \
    KBPKG_EXPORT int act_##op##_##suffix(type *out, const type *in, int64_t n, int64_t d,          \
                                         void *stream)                                             \
    {                                                                                              \
        (void)stream;                                                                              \
        return act_fast(OP, DT, out, in, n, d);                                                    \
    }
#define ACT_CPU_EXPORTS(op, OP)                                                                    \
    ACT_CPU_EXPORT(op, OP, f32, ACT_F32, float)                                                    \
    ACT_CPU_EXPORT(op, OP, bf16, ACT_BF16, kbpkg_bf16)                                             \
    ACT_CPU_EXPORT(op, OP, f16, ACT_F16, kbpkg_f16)

ACT_CPU_EXPORTS(silu_and_mul, ACT_SILU_AND_MUL)
ACT_CPU_EXPORTS(gelu_and_mul, ACT_GELU_AND_MUL)
ACT_CPU_EXPORTS(gelu_tanh, ACT_GELU_TANH)
#endif
