/* kbpkg-community/rmsnorm: out = x / sqrt(mean(x^2) + eps) * weight, row by row. */
#ifndef KB_RMSNORM_H
#define KB_RMSNORM_H

#include <stdint.h>

#include <kbpkg/kernel_abi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * x and out are [n, d] row-major, weight is [d]; all three share the type. Math is fp32
 * (mean of squares, rsqrt, scale by weight) and 16-bit outputs round once, at the end.
 * n, d >= 0, eps >= 0 (and not NaN); out may equal x (in place) but must not partly overlap it.
 * Pointers are device pointers on GPU builds (host on CPU builds); stream is a
 * cudaStream_t / hipStream_t (NULL = default), ignored on CPU. Returns 0 or a negative
 * KBPKG_KERNEL_* code; GPU builds refuse (KBPKG_KERNEL_EINVAL) a pointer that is not aligned
 * to its element. Any width and any element offset keep 16-byte accesses on GPUs.
 */
KBPKG_EXPORT int rmsnorm_f32(float *out, const float *x, const float *weight, int64_t n, int64_t d,
                             float eps, void *stream);
KBPKG_EXPORT int rmsnorm_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *x, const kbpkg_bf16 *weight,
                              int64_t n, int64_t d, float eps, void *stream);
KBPKG_EXPORT int rmsnorm_f16(kbpkg_f16 *out, const kbpkg_f16 *x, const kbpkg_f16 *weight, int64_t n,
                             int64_t d, float eps, void *stream);

#ifdef __cplusplus
}
#endif

#endif
