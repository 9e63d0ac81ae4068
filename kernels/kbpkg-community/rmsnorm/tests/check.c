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

/* 16-byte rows (vector path) small and large, odd widths (scalar path), wider than a block */
static const int64_t shapes[][2] = {{64, 4096}, {7, 8}, {33, 1000}, {5, 13},
                                    {2, 20000}, {1, 1}, {129, 64}};

static size_t run_case(kbc_rng *rng, kbc_dtype t, int64_t n, int64_t d, int in_place)
{
    size_t es = kbc_size(t), count = (size_t)(n * d);
    void *x = kbc_xmalloc(count * es), *w = kbc_xmalloc((size_t)d * es),
         *got = kbc_xmalloc(count * es), *want = kbc_xmalloc(count * es),
         *ex = kbc_xmalloc(count * es);
    kbc_fill(rng, t, x, count, -3.0f, 3.0f);
    kbc_fill(rng, t, w, (size_t)d, 0.5f, 1.5f);
    float eps = 1e-6f;
    void *dx = kbc_dev_alloc(count * es), *dw = kbc_dev_alloc((size_t)d * es);
    void *dout = in_place ? dx : kbc_dev_alloc(count * es);
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
    snprintf(what, sizeof what, "rmsnorm_%s n=%lld d=%lld%s", kbc_dtype_names[t], (long long)n,
             (long long)d, in_place ? " in place" : "");
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
    kbc_dev_free(dx);
    kbc_dev_free(dw);
    if (!in_place)
        kbc_dev_free(dout);
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
            bad += run_case(&rng, (kbc_dtype)t, shapes[s][0], shapes[s][1], 0);
        bad += run_case(&rng, (kbc_dtype)t, 16, 2048, 1);
    }
    if (bad) {
        printf("check: FAILED (%zu problems)\n", bad);
        return 1;
    }
    printf("check: PASSED\n");
    return 0;
}
