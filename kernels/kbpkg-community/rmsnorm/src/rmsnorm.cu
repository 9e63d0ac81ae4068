/* kbpkg-community/rmsnorm on GPUs: one block per row, 16-byte loads, fp32 math. */
#include <stdint.h>

#include "rmsnorm_cpu.h"

#include "kb_gpu_compat.h"
#include "kb_rmsnorm.h"
#include "kbpkg_kernel.h"

namespace rms
{

template <typename T> union vec16 {
    uint4 raw;
    typename kb_type<T>::storage e[16 / sizeof(typename kb_type<T>::storage)];
};

/* Pass 1 sums squares; pass 2 re-reads the row (from L1/L2: a row is at most a few hundred
 * KB) and writes it scaled. out == x works: each element is read before it is written by
 * the same thread, after the barrier in kb_block_sum. */
template <typename T, bool VEC>
__global__ void
rmsnorm_kernel(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
               const typename kb_type<T>::storage *__restrict__ w, int64_t n, int64_t d, float eps)
{
    typedef typename kb_type<T>::storage S;
    constexpr int V = VEC ? 16 / (int)sizeof(S) : 1;
    __shared__ float scratch[32];
    for (int64_t row = blockIdx.x; row < n; row += gridDim.x) {
        const S *xr = x + row * d;
        S *orow = out + row * d;
        float sum = 0.0f;
        for (int64_t c = (int64_t)threadIdx.x * V; c < d; c += (int64_t)blockDim.x * V) {
            if (VEC) {
                vec16<T> v;
                v.raw = *reinterpret_cast<const uint4 *>(xr + c);
#pragma unroll
                for (int i = 0; i < V; i++) {
                    float f = kb_type<T>::load(v.e[i]);
                    sum += f * f;
                }
            } else {
                float f = kb_type<T>::load(xr[c]);
                sum += f * f;
            }
        }
        float inv = rsqrtf(kb_block_sum(sum, scratch) / (float)d + eps);
        for (int64_t c = (int64_t)threadIdx.x * V; c < d; c += (int64_t)blockDim.x * V) {
            if (VEC) {
                vec16<T> v, wv, o;
                v.raw = *reinterpret_cast<const uint4 *>(xr + c);
                wv.raw = *reinterpret_cast<const uint4 *>(w + c);
#pragma unroll
                for (int i = 0; i < V; i++)
                    o.e[i] = kb_type<T>::store(kb_type<T>::load(v.e[i]) * inv *
                                               kb_type<T>::load(wv.e[i]));
                *reinterpret_cast<uint4 *>(orow + c) = o.raw;
            } else {
                orow[c] = kb_type<T>::store(kb_type<T>::load(xr[c]) * inv * kb_type<T>::load(w[c]));
            }
        }
    }
}

template <typename T>
static int launch(typename kb_type<T>::storage *out, const typename kb_type<T>::storage *x,
                  const typename kb_type<T>::storage *w, int64_t n, int64_t d, float eps,
                  void *stream)
{
    typedef typename kb_type<T>::storage S;
    int rc = rmsnorm_check_args(out, x, w, n, d, eps);
    if (rc != 0 || n == 0 || d == 0)
        return rc;
    bool vec = ((uintptr_t)out & 15) == 0 && ((uintptr_t)x & 15) == 0 && ((uintptr_t)w & 15) == 0 &&
               ((uint64_t)d * sizeof(S)) % 16 == 0;
    int64_t per_row = vec ? d / (int64_t)(16 / sizeof(S)) : d;
    /* enough threads for one pass over the row, at most 1024, whole warps (64 covers AMD) */
    int threads = per_row >= 1024 ? 1024 : (int)((per_row + 63) / 64 * 64);
    unsigned blocks = n < (1 << 20) ? (unsigned)n : (1u << 20);
    kb_stream_t s = (kb_stream_t)stream;
    if (vec)
        rmsnorm_kernel<T, true><<<blocks, threads, 0, s>>>(out, x, w, n, d, eps);
    else
        rmsnorm_kernel<T, false><<<blocks, threads, 0, s>>>(out, x, w, n, d, eps);
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
