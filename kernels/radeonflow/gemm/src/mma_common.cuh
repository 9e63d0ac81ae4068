/* cp.async, ldmatrix and mma.sync wrappers shared by the mma.sync GEMM kernels (gemm.cu,
 * gemm_fp8_mma.cu). */
#ifndef RF_MMA_COMMON_CUH
#define RF_MMA_COMMON_CUH

#include "kb_gpu_compat.h"
#if defined(KB_GPU_CUDA)
#include <stdint.h>

namespace rf
{

/* Copies bytes (0..16) from src and zero-fills the rest of the 16-byte chunk. */
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
                 "r"(bytes));
}
__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t *r, uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t *r, uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

/* Zeros for a warp's MF x NF mma fragments of 4 fp32 accumulators each. */
template <int MF, int NF> __device__ __forceinline__ void zero_frags(float (&f)[MF][NF][4])
{
#pragma unroll
    for (int i = 0; i < MF; i++)
#pragma unroll
        for (int j = 0; j < NF; j++)
#pragma unroll
            for (int r = 0; r < 4; r++)
                f[i][j][r] = 0.0f;
}

/* d += a x b, one m16n8k16 step of 16-bit inputs into fp32 (T: kb_bf16_tag or kb_f16_tag). */
template <typename T>
__device__ __forceinline__ void mma_16816(float *d, const uint32_t *a, const uint32_t *b);
template <>
__device__ __forceinline__ void mma_16816<kb_bf16_tag>(float *d, const uint32_t *a,
                                                       const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
__device__ __forceinline__ void mma_16816<kb_f16_tag>(float *d, const uint32_t *a,
                                                      const uint32_t *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

} // namespace rf

#endif
#endif
