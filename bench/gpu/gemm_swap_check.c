/* The swap-AB decode tile's part of radeonflow/gemm's package check alone: tests/check.c's
 * forced row 8 (unsplit and split 3, bf16 and f16, fp64 reference) and its overlapping split
 * calls with row 8 forced, without the rest of the
 * check, for device calls too short for the whole of it. Build like the package check:
 *   nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -Ikernels/radeonflow/gemm/include -Iinclude \
 *     bench/gpu/gemm_swap_check.c kernels/radeonflow/gemm/src/gemm_cpu.c -LDIR -lgemm -o check_swap
 */
#define main rf_gemm_check_main
#include "../../kernels/radeonflow/gemm/tests/check.c"
#undef main

int main(void)
{
    kbc_rng rng = kbc_rng_from_env_or_time();
    size_t bad = check_concurrent_splits(&rng, "RF_GEMM_TMA_PLAN", "8,4", "swap-AB split-K");
    bad += check_plan_rows(&rng, 8, 8);
    if (bad) {
        printf("check: FAILED (%zu problems in the swap-AB cases)\n", bad);
        return 1;
    }
    printf("check: PASSED (the swap-AB cases)\n");
    return 0;
}
