/* The FP8 part of radeonflow/gemm's package check alone: tests/check.c's own e4m3 decode check,
 * bad-argument check and FP8 cases (fp64 reference, the device tolerance), without its bf16/f16
 * cases, which take most of a device call. Build like the package check, e.g. (fp8_prebuild.sh):
 *   nvcc -DKBPKG_CHECK_CUDA -DKBPKG_REFERENCE_ONLY -Ikernels/radeonflow/gemm/include -Iinclude \
 *     bench/gpu/fp8_check.c kernels/radeonflow/gemm/src/gemm_cpu.c -LDIR -lgemm -o check_fp8 */
#define main rf_gemm_check_main
#include "../../kernels/radeonflow/gemm/tests/check.c"
#undef main

int main(void)
{
    kbc_rng rng = kbc_rng_from_env_or_time();
    size_t bad = check_e4m3_decode();
    bad += check_fp8_bad_args();
    for (size_t i = 0; i < sizeof fp8_cases / sizeof fp8_cases[0]; i++)
        bad += run_fp8_case(&rng, &fp8_cases[i]);
    if (bad) {
        printf("check: FAILED (%zu problems in the FP8 cases)\n", bad);
        return 1;
    }
    printf("check: PASSED (the FP8 cases)\n");
    return 0;
}
