/* Checks rk_layernorm_f32: rows normalise to mean 0, variance 1 with unit weight, zero bias. */
#include <math.h>
#include <stdio.h>

#include "rk_layernorm.h"

int main(void)
{
    enum { N = 3, C = 64 };
    float x[N * C], out[N * C], w[C], b[C];
    for (int i = 0; i < N * C; i++)
        x[i] = sinf((float)i) * 3.0f + 1.0f;
    for (int i = 0; i < C; i++) {
        w[i] = 1.0f;
        b[i] = 0.0f;
    }
    if (rk_layernorm_f32(out, x, w, b, N, C, 1e-5f, NULL) != 0)
        return 1;
    for (int r = 0; r < N; r++) {
        double s = 0, s2 = 0;
        for (int i = 0; i < C; i++) {
            s += out[r * C + i];
            s2 += (double)out[r * C + i] * out[r * C + i];
        }
        if (fabs(s / C) > 1e-4 || fabs(s2 / C - 1.0) > 1e-3) {
            fprintf(stderr, "FAIL: row %d mean %g var %g\n", r, s / C, s2 / C);
            return 1;
        }
    }
    printf("check: ok %s\n", KBPKG_NAME);
    return 0;
}
