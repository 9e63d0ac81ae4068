/* kbpkg-community/rmsnorm on GPUs: each row is read once into registers in 16-byte units
 * (odd widths too), summed, scaled and written from there; fp32 math, one barrier (or none)
 * per row. */
#include <stdint.h>

#include "rmsnorm_cpu.h"

#include "kb_gpu_compat.h"
#include "kb_rmsnorm.h"
#include <kbpkg/kernel_abi.h>
#include "rmsnorm_kernels.cuh"

namespace rms
{

template <typename T>
static int launch(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                  const typename kb_type<T>::storage *w, int64_t n, int64_t d, float eps,
                  void *stream)
{
    int rc = rmsnorm_check_args(out, x, w, n, d, eps);
    if (rc != 0 || n == 0 || d == 0)
        return rc;
    if (!elem_aligned<T>(out, x, w))
        return KBPKG_KERNEL_EINVAL;
    run<T>(choose<T>(n, d, device_sms(), rows_aligned<T>(out, x, w, d)), out, x, w, n, d, eps,
           (kb_stream_t)stream);
    return kb_gpu_launch_status();
}

} // namespace rms

extern "C" {

KBPKG_DEFINE_KERNEL_INFO(KB_GPU_BACKEND)

KBPKG_EXPORT int rmsnorm_f32(float *out, const float *x, const float *weight, int64_t n, int64_t d,
                             float eps, void *stream)
{
    return rms::launch<float>(out, x, weight, n, d, eps, stream);
}

KBPKG_EXPORT int rmsnorm_bf16(kbpkg_bf16 *out, const kbpkg_bf16 *x, const kbpkg_bf16 *weight,
                              int64_t n, int64_t d, float eps, void *stream)
{
    return rms::launch<kb_bf16_tag>(out, x, weight, n, d, eps, stream);
}

KBPKG_EXPORT int rmsnorm_f16(kbpkg_f16 *out, const kbpkg_f16 *x, const kbpkg_f16 *weight, int64_t n,
                             int64_t d, float eps, void *stream)
{
    return rms::launch<kb_f16_tag>(out, x, weight, n, d, eps, stream);
}
}
