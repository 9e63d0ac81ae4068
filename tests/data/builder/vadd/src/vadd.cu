/* GPU implementation: CUDA, and HIP through hipcc. */
#include "vadd.h"
#if defined(__HIP__)
#include <hip/hip_runtime.h>
#define KB_BACKEND "rocm"
typedef hipStream_t kb_stream;
#else
#define KB_BACKEND "cuda"
typedef cudaStream_t kb_stream;
#endif
#ifndef KBPKG_TARGET
#define KBPKG_TARGET "gpu"
#endif

__global__ static void vadd_kernel(float *out, const float *a, const float *b, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a[i] + b[i];
}

extern "C" int vadd_f32(float *out, const float *a, const float *b, int n, void *stream)
{
    vadd_kernel<<<(n + 255) / 256, 256, 0, (kb_stream)stream>>>(out, a, b, n);
    return 0;
}

extern "C" const kbpkg_kernel_info_t *kbpkg_kernel_info(void)
{
    static const kbpkg_kernel_info_t info = {1, "kbtest/vec-add", "0.1.0", KBPKG_TARGET,
                                             KB_BACKEND};
    return &info;
}
