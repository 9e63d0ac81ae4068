/* Checks vadd_f32 against a plain loop. */
#include <stdio.h>
#include "vadd.h"

int main(void)
{
    float a[100], b[100], out[100];
    for (int i = 0; i < 100; i++) {
        a[i] = (float)i;
        b[i] = 2.0f * (float)i;
        out[i] = -1.0f;
    }
    if (vadd_f32(out, a, b, 100, NULL) != 0)
        return 1;
    for (int i = 0; i < 100; i++)
        if (out[i] != 3.0f * (float)i) {
            printf("mismatch at %d\n", i);
            return 1;
        }
    printf("ok\n");
    return 0;
}
