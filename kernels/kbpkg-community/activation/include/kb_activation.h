/* kbpkg-community/activation: fused gated activations (silu/gelu and mul) and tanh-GELU. */
#ifndef KB_ACTIVATION_H
#define KB_ACTIVATION_H

#include <stdint.h>

#include <kbpkg/kernel_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * *_and_mul: in is [n, 2d] row-major (gate = in[:, :d], up = in[:, d:]), out is [n, d]:
 *   silu_and_mul: out = silu(gate) * up, silu(x) = x / (1 + exp(-x))
 *   gelu_and_mul: out = gelu(gate) * up, gelu(x) = 0.5 x (1 + erf(x / sqrt 2)), computed as
 *     0.5 x erfc(-x / sqrt 2) (no cancellation for x < 0: tiny gates times inf give +-inf
 *     on every device) and x * 0 below -12 (-0; NaN for -inf, as torch's formula)
 * gelu_tanh: elementwise, in and out are [n, d]:
 *   out = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 * Math is fp32; 16-bit outputs round to nearest even. n, d >= 0; out must not overlap in.
 * Pointers are device pointers on GPU builds (host on CPU builds); stream is a
 * cudaStream_t / hipStream_t (NULL = default), ignored on CPU. Returns 0 or a negative
 * KBPKG_KERNEL_* code; GPU builds refuse (KBPKG_KERNEL_EINVAL) a pointer that is not aligned
 * to its element. Any width and any element offset keep 16-byte accesses on GPUs.
 */
KBPKG_EXPORT int act_silu_and_mul_f32(float *out, const float *in, int64_t n, int64_t d,
                                      void *stream);
KBPKG_EXPORT int act_silu_and_mul_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *in, int64_t n, int64_t d,
                                       void *stream);
KBPKG_EXPORT int act_silu_and_mul_f16(kbpkg_f16 *out, const kbpkg_f16 *in, int64_t n, int64_t d,
                                      void *stream);

KBPKG_EXPORT int act_gelu_and_mul_f32(float *out, const float *in, int64_t n, int64_t d,
                                      void *stream);
KBPKG_EXPORT int act_gelu_and_mul_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *in, int64_t n, int64_t d,
                                       void *stream);
KBPKG_EXPORT int act_gelu_and_mul_f16(kbpkg_f16 *out, const kbpkg_f16 *in, int64_t n, int64_t d,
                                      void *stream);

KBPKG_EXPORT int act_gelu_tanh_f32(float *out, const float *in, int64_t n, int64_t d, void *stream);
KBPKG_EXPORT int act_gelu_tanh_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *in, int64_t n, int64_t d,
                                    void *stream);
KBPKG_EXPORT int act_gelu_tanh_f16(kbpkg_f16 *out, const kbpkg_f16 *in, int64_t n, int64_t d,
                                   void *stream);

#ifdef __cplusplus
}
#endif

#endif
