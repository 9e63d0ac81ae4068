/* CPU implementation (and the reference of the test). */
#include "vadd.h"
#ifndef KBPKG_TARGET
#define KBPKG_TARGET "cpu"
#endif

int vadd_f32(float *out, const float *a, const float *b, int n, void *stream)
{
    (void)stream;
    for (int i = 0; i < n; i++)
        out[i] = a[i] + b[i];
    return 0;
}

const kbpkg_kernel_info_t *kbpkg_kernel_info(void)
{
    static const kbpkg_kernel_info_t info = {1, "kbtest/cpu-add", "0.1.0", KBPKG_TARGET, "cpu"};
    return &info;
}
