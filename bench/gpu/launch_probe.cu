/* A 16-byte copy kernel in a shared library, loaded with ctypes like the packages' artifacts:
 * bench/gpu/launch_probe.sh builds it with the static cudart (as kbpkg builds packages) and
 * with the shared one, to see what a trivial kernel of ours costs per CUDA-graph replay. The
 * kernel is mem_variants.cu's copy on purpose: this library holds nothing else (no package
 * headers, one kernel in its module), so the two can be told apart. */
#include <cuda_runtime.h>
#include <stdint.h>

__global__ void probe_copy16(uint4 *dst, const uint4 *src, int64_t units)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < units)
        dst[i] = src[i];
}

/* bytes: a multiple of 16, buffers 16-byte aligned; returns the launch's cudaError_t. */
extern "C" __attribute__((visibility("default"))) int probe_copy(void *dst, const void *src,
                                                                 int64_t bytes, void *stream)
{
    const int64_t units = bytes / 16;
    const unsigned blocks = units > 0 ? (unsigned)((units + 255) / 256) : 1u;
    probe_copy16<<<blocks, 256, 0, (cudaStream_t)stream>>>((uint4 *)dst, (const uint4 *)src, units);
    return (int)cudaGetLastError();
}
