/* rmsnorm's kernels with the plan forced (bench/gpu/mem_sweep.py times them beside the export
 * to pick the plan per width class), and a plain 16-byte copy kernel launched the same way (what
 * a trivial kernel of ours costs at few rows): C entries, loaded with ctypes. */
#include "rmsnorm_cpu.h"

#include "kb_gpu_compat.h"
#include "rmsnorm_kernels.cuh"

template <typename T>
static int forced(int path, int vecs, int threads, void *out, const void *x, const void *w,
                  int64_t n, int64_t d, float eps, void *stream)
{
    typedef typename kb_type<T>::storage S;
    rms::plan p = rms::choose<T>(n, d, rms::device_sms(), rms::rows_aligned<T>(out, x, w, d));
    if (path >= 0) {
        p.path = path;
        p.vecs = vecs;
        p.threads = threads;
        p.lanes = path == rms::PATH_WARP ? 32 : threads;
        p.rows = 1;
        p.blocks_needed = n; /* an upper bound: the grid is capped, extra blocks exit */
    }
    rms::run<T>(p, (S *)out, (const S *)x, (const S *)w, n, d, eps, (kb_stream_t)stream);
    return kb_gpu_launch_status();
}

/* dtype 0 f32, 1 bf16, 2 f16; path -1: the export's own plan; returns 0 or -2 (launch). */
extern "C" __attribute__((visibility("default"))) int
rms_variant(int dtype, int path, int vecs, int threads, void *out, const void *x, const void *w,
            int64_t n, int64_t d, float eps, void *stream)
{
    if (dtype == 1)
        return forced<kb_bf16_tag>(path, vecs, threads, out, x, w, n, d, eps, stream);
    if (dtype == 2)
        return forced<kb_f16_tag>(path, vecs, threads, out, x, w, n, d, eps, stream);
    return forced<float>(path, vecs, threads, out, x, w, n, d, eps, stream);
}

/* bytes / 16 threads, one 16-byte copy each: no loop, no math. */
__global__ void copy16_kernel(uint4 *dst, const uint4 *src, int64_t units)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < units)
        dst[i] = src[i];
}

/* bytes: a multiple of 16, buffers 16-byte aligned; returns 0 or -2 (launch). */
extern "C" __attribute__((visibility("default"))) int copy_variant(void *dst, const void *src,
                                                                   int64_t bytes, void *stream)
{
    const int64_t units = bytes / 16;
    const unsigned blocks = units > 0 ? (unsigned)((units + 255) / 256) : 1u;
    copy16_kernel<<<blocks, 256, 0, (kb_stream_t)stream>>>((uint4 *)dst, (const uint4 *)src, units);
    return kb_gpu_launch_status();
}
