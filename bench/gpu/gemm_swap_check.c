/* The swap-AB decode tile's part of radeonflow/gemm's package check alone: tests/check.c's
 * forced row 10 (unsplit and split 3, bf16 and f16, fp64 reference) and its overlapping split
 * calls with row 10 forced, then a few shapes with no plan forced that the swap default takes
 * (M 33..64, 64..128 column groups; builds without the swap tile run them on the kernels
 * before), without the rest of the
 * check, for device calls too short for the whole of it. Build like the package check:
 *   nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -Ikernels/radeonflow/gemm/include -Iinclude \
 *     bench/gpu/gemm_swap_check.c kernels/radeonflow/gemm/src/gemm_cpu.c -LDIR -lgemm -o check_swap
 */
#define main rf_gemm_check_main
#include "../../kernels/radeonflow/gemm/tests/check.c"
#undef main

static const gemm_case default_cases[] = {
    {48, 4100, 1000, 0, 4, 3, 1.0f, 0.5f, 0},
    {64, 4096, 512, 0, 0, 0, 1.0f, 0.0f, 0},
    {33, 8192, 300, 8, 0, 2, -1.0f, 0.25f, 0},
};

int main(void)
{
    kbc_rng rng = kbc_rng_from_env_or_time();
    size_t bad = check_concurrent_splits(&rng, "RF_GEMM_TMA_PLAN", "10,4", "swap-AB split-K");
    bad += check_plan_rows(&rng, 10, 10);
    size_t dbad = 0;
    for (int t = KBC_BF16; t <= KBC_F16; t++)
        for (size_t i = 0; i < sizeof default_cases / sizeof default_cases[0]; i++)
            dbad += run_case(&rng, (kbc_dtype)t, &default_cases[i]);
    if (!dbad)
        printf("check: ok   default path at M 33..64 (no plan forced)\n");
    bad += dbad;
    if (bad) {
        printf("check: FAILED (%zu problems in the swap-AB cases)\n", bad);
        return 1;
    }
    printf("check: PASSED (the swap-AB cases)\n");
    return 0;
}
