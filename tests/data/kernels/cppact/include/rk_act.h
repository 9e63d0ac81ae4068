/* rk/cppact: gated activations, C ABI over a C++ implementation. */
#ifndef RK_ACT_H
#define RK_ACT_H

#include <stdint.h>

#include <kbpkg/kernel_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* in is [n, 2d] (gate, up), out is [n, d]; stream is ignored on CPU. 0 or KBPKG_KERNEL_*. */
KBPKG_EXPORT int rk_silu_and_mul_f32(float *out, const float *in, int64_t n, int64_t d,
                                     void *stream);
KBPKG_EXPORT int rk_silu_and_mul_f64(double *out, const double *in, int64_t n, int64_t d,
                                     void *stream);
/* elementwise over n values */
KBPKG_EXPORT int rk_gelu_tanh_f32(float *out, const float *in, int64_t n, void *stream);

#ifdef __cplusplus
}
#endif
#endif
