/* Internal: the FP8 block-scaled mma.sync kernel (gemm_fp8_mma.cu) as gemm_fp8.cu's export calls
 * it. */
#ifndef RF_GEMM_FP8_MMA_H
#define RF_GEMM_FP8_MMA_H

#include "kb_gpu_compat.h"
#if defined(KB_GPU_CUDA)
#include <stdint.h>

namespace rf_fp8
{

/* mma.sync m16n8k32 e4m3 (sm_89 and sm_90 builds): the rf_gemm_fp8_blockscale contract for
 * K > 0, M > 0, N > 0. KBPKG_KERNEL_EUNSUPPORTED when this build's target has no FP8 mma or
 * A or B is not 16-byte aligned (cp.async's rule); the caller then takes the SIMT kernel. */
int launch_mma(int M, int N, int K, const uint8_t *A, const float *scale_a, const uint8_t *B,
               const float *scale_b, uint16_t *C, kb_stream_t stream);

} // namespace rf_fp8

#endif
#endif
