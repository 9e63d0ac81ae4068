/* rk/layernorm: out = (x - mean) / sqrt(var + eps) * weight + bias over rows of length c. */
#ifndef RK_LAYERNORM_H
#define RK_LAYERNORM_H

#include <stdint.h>

#include <kbpkg/kernel_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* x, out: [n, c]; weight, bias: [c]. Device pointers on GPU builds. 0 or KBPKG_KERNEL_*. */
KBPKG_EXPORT int rk_layernorm_f32(float *out, const float *x, const float *weight,
                                  const float *bias, int64_t n, int64_t c, float eps,
                                  void *stream);
/* The CUDA build only (the CPU build exports the f32 entry alone). */
KBPKG_EXPORT int rk_layernorm_f16(kbpkg_f16 *out, const kbpkg_f16 *x, const kbpkg_f16 *weight,
                                  const kbpkg_f16 *bias, int64_t n, int64_t c, float eps,
                                  void *stream);

#ifdef __cplusplus
}
#endif
#endif
