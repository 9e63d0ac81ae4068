// One source for CUDA and HIP: the few names that differ.
#pragma once
#ifdef __HIP_PLATFORM_AMD__
#include <hip/hip_runtime.h>
#define ACT_LDG(p) (*(p))
#else
#include <cuda_runtime.h>
#define ACT_LDG(p) __ldg(p)
#endif
