/* kbpkg-community/activation on the CPU; also the reference in tests. */
#include "activation_cpu.h"
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

#define ACT_CPU_EXPORT(op, OP, suffix, DT, type)                                                   \
    KBPKG_EXPORT int act_##op##_##suffix(type *out, const type *in, int64_t n, int64_t d,          \
                                         void *stream)                                             \
    {                                                                                              \
        (void)stream;                                                                              \
        return act_cpu(OP, DT, out, in, n, d);                                                     \
    }
#define ACT_CPU_EXPORTS(op, OP)                                                                    \
    ACT_CPU_EXPORT(op, OP, f32, ACT_F32, float)                                                    \
    ACT_CPU_EXPORT(op, OP, bf16, ACT_BF16, kbpkg_bf16)                                             \
    ACT_CPU_EXPORT(op, OP, f16, ACT_F16, kbpkg_f16)

ACT_CPU_EXPORTS(silu_and_mul, ACT_SILU_AND_MUL)
ACT_CPU_EXPORTS(gelu_and_mul, ACT_GELU_AND_MUL)
ACT_CPU_EXPORTS(gelu_tanh, ACT_GELU_TANH)
#endif
