/* kbpkg-community/activation on GPUs: memory-bound kernels with 16-byte vector loads. */
#include "activation_cpu.h"

#include <stdint.h>

#include "kb_activation.h"
#include "kb_gpu_compat.h"
#include <kbpkg/kernel_abi.h>

namespace act
{

template <int OP> __device__ __forceinline__ float apply(float x, float up);
template <> __device__ __forceinline__ float apply<ACT_SILU_AND_MUL>(float x, float up)
{
    return x / (1.0f + expf(-x)) * up;
}
/* gelu(x) = x Phi(x) = x/2 erfc(-x/sqrt 2), without 1 + erff()'s cancellation for x < 0 (see
 * the reference's gelu_erf in activation_cpu.c): erfc(z) for z = |x|/sqrt 2 from Numerical
 * Recipes' erfcc (a Chebyshev fit, relative error < 1.2e-7; 1.1e-6 in fp32, and the check
 * allows the most where the tail is smallest). CUDA's erfcf costs 2 exps and a division and
 * brought gelu_and_mul from 84% to 65% of copy bandwidth; this is one rcp and one exp. It is
 * nonzero wherever the reference's erfcf is (-12 < x < 0), so gelu times inf gives the same
 * inf or NaN on both. */
__device__ __forceinline__ float erfc_abs(float z)
{
    float t = __frcp_rn(fmaf(0.5f, z, 1.0f));
    float q = fmaf(t, 0.17087277f, -0.82215223f);
    q = fmaf(t, q, 1.48851587f);
    q = fmaf(t, q, -1.13520398f);
    q = fmaf(t, q, 0.27886807f);
    q = fmaf(t, q, -0.18628806f);
    q = fmaf(t, q, 0.09678418f);
    q = fmaf(t, q, 0.37409196f);
    q = fmaf(t, q, 1.00002368f);
    q = fmaf(t, q, -1.26551223f);
    return t * expf(fmaf(-z, z, q));
}
template <> __device__ __forceinline__ float apply<ACT_GELU_AND_MUL>(float x, float up)
{
    float e = erfc_abs(fabsf(x) * 0.70710678118654752f); /* erfc(|x|/sqrt 2) */
    float two_phi = x >= 0.0f ? 2.0f - e : e;            /* NaN x: NaN */
    return (x < -12.0f ? x * 0.0f : 0.5f * x * two_phi) * up;
}
template <> __device__ __forceinline__ float apply<ACT_GELU_TANH>(float x, float up)
{
    const float k = 0.79788456080286536f; /* sqrt(2/pi) */
    return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

/* One block strides over rows; the threads of a block stride over a row's columns. VEC: each
 * thread moves 16 bytes per load (needs 16-byte aligned rows), and 16-bit results round two
 * at a time (kb_vec16_pack: one hardware conversion per pair on sm_80+, same bits as the
 * CPU reference's rounding). */
template <typename T, int OP, bool VEC>
__global__ void act_kernel(typename kb_type<T>::storage *__restrict__ out,
                           const typename kb_type<T>::storage *__restrict__ in, int64_t n,
                           int64_t d)
{
    typedef typename kb_type<T>::storage S;
    constexpr bool gated = OP != ACT_GELU_TANH;
    constexpr int V = VEC ? 16 / (int)sizeof(S) : 1;
    int64_t in_width = gated ? 2 * d : d;
    for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
        const S *x = in + row * in_width;
        const S *up = x + d;
        S *o = out + row * d;
        for (int64_t c = (int64_t)threadIdx.x * V; c < d; c += (int64_t)blockDim.x * V) {
            if (VEC) {
                kb_vec16<T> xv, uv, ov;
                xv.raw = *reinterpret_cast<const uint4 *>(x + c);
                if (gated)
                    uv.raw = *reinterpret_cast<const uint4 *>(up + c);
                float f[16 / sizeof(S)];
#pragma unroll
                for (int i = 0; i < V; i++) {
                    float u = gated ? kb_type<T>::load(uv.e[i]) : 0.0f;
                    f[i] = apply<OP>(kb_type<T>::load(xv.e[i]), u);
                }
                kb_vec16_pack<T>(ov, f);
                *reinterpret_cast<uint4 *>(o + c) = ov.raw;
            } else {
                float u = gated ? kb_type<T>::load(up[c]) : 0.0f;
                o[c] = kb_type<T>::store(apply<OP>(kb_type<T>::load(x[c]), u));
            }
        }
    }
}

template <typename T, int OP>
static int launch(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *in,
                  int64_t n, int64_t d, void *stream)
{
    typedef typename kb_type<T>::storage S;
    int rc = act_check_args(out, in, n, d);
    if (rc != 0 || n == 0 || d == 0)
        return rc;
    bool vec = ((uintptr_t)out & 15) == 0 && ((uintptr_t)in & 15) == 0 &&
               ((uint64_t)d * sizeof(S)) % 16 == 0;
    int64_t per_row = vec ? d / (int64_t)(16 / sizeof(S)) : d;
    int threads = per_row >= 256 ? 256 : (int)((per_row + 31) / 32 * 32);
    unsigned blocks = n < (1 << 20) ? (unsigned)n : (1u << 20);
    kb_stream_t s = (kb_stream_t)stream;
    if (vec)
        act_kernel<T, OP, true><<<blocks, threads, 0, s>>>(out, in, n, d);
    else
        act_kernel<T, OP, false><<<blocks, threads, 0, s>>>(out, in, n, d);
    return kb_gpu_launch_status();
}

} // namespace act

extern "C" {

KBPKG_DEFINE_KERNEL_INFO(KB_GPU_BACKEND)

#define ACT_GPU_EXPORT(op, OP, suffix, tag, type)                                                  \
    KBPKG_EXPORT int act_##op##_##suffix(type *out, const type *in, int64_t n, int64_t d,          \
                                         void *stream)                                             \
    {                                                                                              \
        return act::launch<tag, OP>(out, in, n, d, stream);                                        \
    }
#define ACT_GPU_EXPORTS(op, OP)                                                                    \
    ACT_GPU_EXPORT(op, OP, f32, float, float)                                                      \
    ACT_GPU_EXPORT(op, OP, bf16, kb_bf16_tag, kbpkg_bf16)                                          \
    ACT_GPU_EXPORT(op, OP, f16, kb_f16_tag, kbpkg_f16)

ACT_GPU_EXPORTS(silu_and_mul, ACT_SILU_AND_MUL)
ACT_GPU_EXPORTS(gelu_and_mul, ACT_GELU_AND_MUL)
ACT_GPU_EXPORTS(gelu_tanh, ACT_GELU_TANH)
}
