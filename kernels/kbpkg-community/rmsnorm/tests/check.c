/* kbpkg-community/rmsnorm check: every export against the CPU reference (and that against
 * fp64) on fresh random data, vector and scalar widths, in place, and bad arguments. */
#include "../src/rmsnorm_cpu.h"

#include "kbpkg_check.h"

typedef int (*rms_fn)(void *, const void *, const void *, int64_t, int64_t, float, void *);

static int w_f32(void *o, const void *x, const void *w, int64_t n, int64_t d, float e, void *s)
{
    return rmsnorm_f32(o, x, w, n, d, e, s);
}
static int w_bf16(void *o, const void *x, const void *w, int64_t n, int64_t d, float e, void *s)
{
    return rmsnorm_bf16(o, x, w, n, d, e, s);
}
static int w_f16(void *o, const void *x, const void *w, int64_t n, int64_t d, float e, void *s)
{
    return rmsnorm_f16(o, x, w, n, d, e, s);
}
static const rms_fn fns[] = {w_f32, w_bf16, w_f16};

/* The GPU build cuts every row at the output's 16-byte boundaries (head elements, 16-byte units,
 * tail elements) and picks a kernel by the units per row (V = 8 for 16-bit, 4 for f32): lanes
 * of a warp with one unit each up to 32 units, a whole warp with 2-16 units per lane up to 512,
 * a block of 8 or 16 per thread up to 4096, then a streaming block. Few rows (at most 4 per SM,
 * 528 on an H200) of more than 32 units take instead a block per row of 2 or 4 units per
 * thread with the weight loaded with x, so the comments below name the many-rows plan; the
 * shapes of 540 rows and more reach those on a device of up to 135 SMs, and 2200 rows of 24
 * the lane groups holding 4 rows at once. Many unaligned rows (odd widths, or a pointer off 16
 * bytes) of more than 64 units take a block per row (uncapped grid) of 4 units per thread up to
 * 512 units, then 8 and 16, not the warp. Few unaligned rows of 513-2048 elements take a block
 * per row of 4 elements per thread (the element kernel: 3 x 1001, 5 x 1999, 13 x 1000 with x
 * off, 6 x 1001 in place and the cases after the shifted ones). Odd widths put every row at another
 * offset (head, tail and shifted weight loads); the shifted cases below move x, the weight or out
 * off each other (shifted x loads). Rows of whole units at 16-byte aligned addresses take the
 * pipelined kernel instead where its plan applies (from 2 x SMs rows of up to 32 units, or past the
 * few-row limit; f16 and bf16 rows past 1024 and 2048 units excepted, f16 only below 24 x SMs
 * rows). Few of them (up to 2048 units) take the unit kernel: a block per row of 1, 2 or 4 units
 * per thread (33 x 1000, 3 x 1032, 64 x 4096, 64 x 16384) or groups of lanes in blocks of 128
 * threads (7 x 8, 300 x 24, and 129 x 64 with a partial last block), except f32 at 4 units per
 * thread, which takes the pipelined kernel a row per block (64 x 4096, 300 x 8192), and 16-bit
 * blocks of 2 or 4 per thread from 2 x SMs rows, which take its two rows per block (300 x 8192).
 * The aligned shapes below reach those, their shifted cases the kernels named. Shapes cover each
 * path and its edges. */
static const int64_t shapes[][2] = {
    {64, 4096},   /* 16-bit: 512 units, a warp of 16 per lane; f32: a block of 128 x 8 */
    {7, 8},       /* 16-bit: one unit per row, 8 lanes; f32: two units */
    {33, 1000},   /* 16-bit: 125 units, a warp of 4 per lane, its last lanes short */
    {5, 13},      /* tiny odd: head and tail only or one unit, 8 lanes */
    {9, 3},       /* tiny: fewer elements than a vector, rows at every offset */
    {3, 1001},    /* odd: 125 units, heads and tails */
    {5, 1999},    /* odd, few rows: the element kernel, a block of 512 x 4 per row */
    {2, 20000},   /* 16-bit: 2500 units, a block of 16 per thread; f32: 5000 units, streaming */
    {1, 1},       /* one element */
    {129, 64},    /* 8 or 16 lanes per row, a partial last block of rows */
    {1000, 1024}, /* 16-bit: 128 units, a warp of 4 per lane, many rows per block */
    {3, 1032},    /* 16-bit: 129 units, a warp of 8 per lane */
    {2, 16384},   /* 16-bit: 2048 units, the widest block of 8; f32: a block of 16 */
    {2, 16392},   /* 16-bit: 2049 units, a block of 16 */
    {2, 40000},   /* 16-bit: 5000 units, streaming */
    {300, 24},    /* a few lanes per row */
    {17, 4095},   /* odd: 511 units of a warp (16-bit), rows at all 8 offsets */
    {9, 8191},    /* odd, a block per row */
    {3, 40001},   /* odd, streaming */
    {33, 127},    /* odd, one unit per lane of 16 */
    {300, 8192},  /* few rows: 16-bit a block of 4 per thread (R = 2 would not fit at once) */
    {64, 16384},  /* few rows: 16-bit a block of 512 x 4 */
    {2200, 24},   /* many rows of a few lanes: 4 rows per group at once */
    {600, 1000},  /* many rows: 16-bit a warp of 4 per lane; f32 8 */
    {540, 2048},  /* many rows: 16-bit a warp of 8 per lane; f32 16 */
    {600, 4095},  /* many odd rows: 16-bit a block of 128 x 4 per row; f32 128 x 8 */
    {600, 1001},  /* many odd rows: 16-bit 125 units, a block of 32 x 4 per row; f32 64 x 4 */
    {600, 600},   /* many odd rows: 16-bit 75 units, 32 x 4 (19 threads hold units); f32 64 x 4 */
    {540, 16383}, /* many odd rows: 16-bit 2047 units, 256 x 8; f32 4095 units, 256 x 16 */
    {600, 8192},  /* many rows: 16-bit a pipelined block of 512 x 2 on a capped grid; f32 512 x 4,
                   * a block per row (uncapped grid) */
    /* aligned rows, many of them: the pipelined kernel (PATH_PIPE), looping with a capped grid */
    {400, 8},     /* 16-bit: one unit per row, one lane; f32: two lanes */
    {700, 512},   /* 16-bit: 64 units, a warp of 2 per lane; f32: 128 units, 4 per lane */
    {540, 12288}, /* bf16: 1536 units, a block of 384 x 4; f32: 3072 units, 384 x 8 */
    /* many rows (48 x SMs and more, rows of more than 1024 units 24 x SMs; up to 135 SMs): a
     * block per row, uncapped grid */
    {8700, 4096}, /* 16-bit a block of 128 x 4 per row, the weight read per row; f32 512 x 2 */
    {6500, 1000}, /* 16-bit 125 units, a block of 64 x 2; f32 250 units, 128 x 2 */
    {3300, 8200}, /* 16-bit 1025 units, 288 x 4 (the last thread one unit), the weight read per
                   * row (f16 too); f32 2050 units, 288 x 8 */
};

/* Which pointers a case moves off 16-byte alignment by one element (scalar path). */
enum { SHIFT_X = 1, SHIFT_W = 2, SHIFT_OUT = 4 };

static size_t run_case(kbc_rng *rng, kbc_dtype t, int64_t n, int64_t d, int in_place, int shift)
{
    size_t es = kbc_size(t), count = (size_t)(n * d);
    size_t ox = shift & SHIFT_X ? es : 0, ow = shift & SHIFT_W ? es : 0,
           oo = shift & SHIFT_OUT ? es : 0;
    void *x = kbc_xmalloc(count * es), *w = kbc_xmalloc((size_t)d * es),
         *got = kbc_xmalloc(count * es), *want = kbc_xmalloc(count * es),
         *ex = kbc_xmalloc(count * es);
    kbc_fill(rng, t, x, count, -3.0f, 3.0f);
    kbc_fill(rng, t, w, (size_t)d, 0.5f, 1.5f);
    float eps = 1e-6f;
    char *bx = kbc_dev_alloc(count * es + ox), *bw = kbc_dev_alloc((size_t)d * es + ow);
    char *bout = in_place ? bx : kbc_dev_alloc(count * es + oo);
    void *dx = bx + ox, *dw = bw + ow, *dout = in_place ? dx : bout + oo;
    kbc_upload(dx, x, count * es);
    kbc_upload(dw, w, (size_t)d * es);
    if (!in_place) {
        kbc_poison(t, got, count);
        kbc_upload(dout, got, count * es);
    }
    int rc = fns[t](dout, dx, dw, n, d, eps, NULL);
    kbc_download(got, dout, count * es);
    int rrc = rmsnorm_cpu((enum rms_dtype)t, want, x, w, n, d, eps);
    for (int64_t r = 0; r < n; r++) {
        double s = 0;
        for (int64_t c = 0; c < d; c++) {
            double v = kbc_get(t, x, (size_t)(r * d + c));
            s += v * v;
        }
        double inv = 1.0 / sqrt(s / (double)d + eps);
        for (int64_t c = 0; c < d; c++)
            kbc_set(t, ex, (size_t)(r * d + c),
                    (float)(kbc_get(t, x, (size_t)(r * d + c)) * inv * kbc_get(t, w, (size_t)c)));
    }
    char what[128], what_ref[160];
    snprintf(what, sizeof what, "rmsnorm_%s n=%lld d=%lld%s%s%s%s", kbc_dtype_names[t],
             (long long)n, (long long)d, in_place ? " in place" : "", ox ? " x+1" : "",
             ow ? " weight+1" : "", oo ? " out+1" : "");
    snprintf(what_ref, sizeof what_ref, "reference vs fp64 (%s)", what);
    size_t bad = 0;
    if (rc != 0 || rrc != 0) {
        fprintf(stderr, "check: FAIL %s: returned %d (reference %d)\n", what, rc, rrc);
        bad++;
    }
    /* fp32 sum of d squares (order differs) and rsqrt: ~d u relative, then one rounding */
    double rtol = kbc_ulp(t) + (double)(d + 16) * 5.96e-8 * 2, atol = 1e-6;
    bad += kbc_compare(what_ref, t, want, ex, count, rtol, atol, NULL);
    bad += kbc_compare(what, t, got, want, count, rtol, atol, NULL);
    kbc_dev_free(bx);
    kbc_dev_free(bw);
    if (!in_place)
        kbc_dev_free(bout);
    free(x), free(w), free(got), free(want), free(ex);
    return bad;
}

static size_t check_bad_args(void)
{
    size_t bad = 0;
    float dummy[4] = {0};
    for (int t = 0; t < 3; t++) {
        int r1 = fns[t](dummy, dummy, dummy, -1, 4, 1e-6f, NULL);
        int r2 = fns[t](dummy, dummy, dummy, 4, -1, 1e-6f, NULL);
        int r3 = fns[t](dummy, dummy, NULL, 4, 4, 1e-6f, NULL);
        int r4 = fns[t](dummy, dummy, dummy, 4, 4, -1.0f, NULL);
        int r5 = fns[t](dummy, dummy, dummy, 4, 4, NAN, NULL);
        int r6 = fns[t](NULL, NULL, NULL, 0, 0, 1e-6f, NULL);
        if (r1 != KBPKG_KERNEL_EINVAL || r2 != KBPKG_KERNEL_EINVAL || r3 != KBPKG_KERNEL_EINVAL ||
            r4 != KBPKG_KERNEL_EINVAL || r5 != KBPKG_KERNEL_EINVAL || r6 != 0) {
            fprintf(stderr,
                    "check: FAIL rmsnorm_%s bad arguments: n<0 %d, d<0 %d, weight NULL %d, "
                    "eps<0 %d, eps NaN %d (want %d each), empty %d (want 0)\n",
                    kbc_dtype_names[t], r1, r2, r3, r4, r5, KBPKG_KERNEL_EINVAL, r6);
            bad++;
        }
    }
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    /* the GPU kernels read whole elements: a pointer between two is refused, not faulted on
     * (never dereferenced here) */
    for (int t = 0; t < 3; t++) {
        char *odd = (char *)dummy + 1;
        int r = fns[t](odd, dummy, dummy, 4, 4, 1e-6f, NULL);
        if (r != KBPKG_KERNEL_EINVAL) {
            fprintf(stderr, "check: FAIL rmsnorm_%s out off its element: %d (want %d)\n",
                    kbc_dtype_names[t], r, KBPKG_KERNEL_EINVAL);
            bad++;
        }
    }
#endif
    if (!bad)
        printf("check: ok   bad arguments refused with KBPKG_KERNEL_EINVAL\n");
    return bad;
}

int main(void)
{
    kbc_rng rng = kbc_rng_from_env_or_time();
    size_t bad = kbc_check_info("kbpkg-community/rmsnorm");
    bad += check_bad_args();
    for (int t = 0; t < 3; t++) {
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            bad += run_case(&rng, (kbc_dtype)t, shapes[s][0], shapes[s][1], 0, 0);
        bad += run_case(&rng, (kbc_dtype)t, 16, 2048, 1, 0);
        bad += run_case(&rng, (kbc_dtype)t, 16, 2048, 1, SHIFT_X);
        /* rows of 16-byte multiples, one pointer off: every row takes the scalar path */
        bad += run_case(&rng, (kbc_dtype)t, 9, 4096, 0, SHIFT_X);
        bad += run_case(&rng, (kbc_dtype)t, 9, 4096, 0, SHIFT_W);
        bad += run_case(&rng, (kbc_dtype)t, 9, 512, 0, SHIFT_OUT);
        /* many rows, x off 16 bytes: the unaligned block per row (16-bit 64 x 4, f32 128 x 4) */
        bad += run_case(&rng, (kbc_dtype)t, 600, 2048, 0, SHIFT_X);
        bad += run_case(&rng, (kbc_dtype)t, 3, 40000, 0, SHIFT_X | SHIFT_W | SHIFT_OUT);
        /* odd widths in place, and with x off out (shifted x loads) in each kernel */
        bad += run_case(&rng, (kbc_dtype)t, 11, 4095, 1, 0);
        bad += run_case(&rng, (kbc_dtype)t, 6, 1001, 1, 0);
        bad += run_case(&rng, (kbc_dtype)t, 5, 4095, 1, SHIFT_X);
        bad += run_case(&rng, (kbc_dtype)t, 13, 1000, 0, SHIFT_X);
        bad += run_case(&rng, (kbc_dtype)t, 5, 4095, 0, SHIFT_X | SHIFT_W);
        bad += run_case(&rng, (kbc_dtype)t, 3, 8191, 0, SHIFT_OUT);
        bad += run_case(&rng, (kbc_dtype)t, 2, 40001, 0, SHIFT_X);
        bad += run_case(&rng, (kbc_dtype)t, 17, 33, 0, SHIFT_W);
        /* few unaligned rows of 513-2048 elements: the element kernel, at both ends of its
         * widths (a partial last warp; every thread full), in place and with pointers off */
        bad += run_case(&rng, (kbc_dtype)t, 7, 513, 0, 0);
        bad += run_case(&rng, (kbc_dtype)t, 2, 1024, 0, SHIFT_W);
        bad += run_case(&rng, (kbc_dtype)t, 9, 777, 1, SHIFT_X);
        bad += run_case(&rng, (kbc_dtype)t, 40, 1001, 0, SHIFT_OUT);
        bad += run_case(&rng, (kbc_dtype)t, 3, 2048, 1, SHIFT_X);
    }
    if (bad) {
        printf("check: FAILED (%zu problems)\n", bad);
        return 1;
    }
    printf("check: PASSED\n");
    return 0;
}
