/* Checks the activations against straight C on fixed data; uses KBPKG_NAME like real tests. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rk_act.h"

int main(void)
{
    if (strcmp(KBPKG_NAME, "rk/cppact") != 0 || strcmp(kbpkg_kernel_info()->name, KBPKG_NAME)) {
        fprintf(stderr, "FAIL: KBPKG_NAME is %s\n", KBPKG_NAME);
        return 1;
    }
    float in[2 * 5], out[5];
    for (int i = 0; i < 10; i++)
        in[i] = (float)(i - 4) / 3.0f;
    if (rk_silu_and_mul_f32(out, in, 1, 5, NULL) != 0)
        return 1;
    for (int i = 0; i < 5; i++) {
        float want = in[i] / (1.0f + expf(-in[i])) * in[5 + i];
        if (fabsf(out[i] - want) > 1e-5f) {
            fprintf(stderr, "FAIL: silu_and_mul[%d] = %g, want %g\n", i, out[i], want);
            return 1;
        }
    }
    printf("check: ok (%s)\n", KBPKG_TARGET);
    return 0;
}
