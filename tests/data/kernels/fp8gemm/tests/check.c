/* Checks the f32 reference on a 2x2 product. */
#include <stdio.h>

#include "rk_fp8gemm.h"

int main(void)
{
    const float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8};
    float c[4];
    if (rk_gemm_f32(c, a, b, 2, 2, 2, NULL) != 0 || c[0] != 19 || c[1] != 22 || c[2] != 43 ||
        c[3] != 50) {
        fprintf(stderr, "FAIL: %g %g %g %g\n", c[0], c[1], c[2], c[3]);
        return 1;
    }
    printf("check: ok\n");
    return 0;
}
