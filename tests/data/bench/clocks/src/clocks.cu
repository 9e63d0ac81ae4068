/* The "CUDA" source of kbtest/clocks: plain C, built by tests/fakes/fake_nvcc.sh. */
#include "clocks.h"
#ifndef KBPKG_TARGET
#define KBPKG_TARGET "cuda"
#endif

int clocks_nop(void *stream)
{
    (void)stream;
    return 0;
}

const kbpkg_kernel_info_t *kbpkg_kernel_info(void)
{
    static const kbpkg_kernel_info_t info = {1, "kbtest/clocks", "0.1.0", KBPKG_TARGET, "cuda"};
    return &info;
}
