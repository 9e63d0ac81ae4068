/* kbpkg-community/activation check: every export against the CPU reference (and that against
 * fp64 math) on fresh random data, vector and scalar paths, and bad arguments. */
#include "../src/activation_cpu.h"

#include "kbpkg_check.h"

typedef int (*act_fn)(void *, const void *, int64_t, int64_t, void *);

#define WRAP(op, suffix)                                                                           \
    static int w_##op##_##suffix(void *o, const void *i, int64_t n, int64_t d, void *s)            \
    {                                                                                              \
        return act_##op##_##suffix(o, i, n, d, s);                                                 \
    }
WRAP(silu_and_mul, f32)
WRAP(silu_and_mul, bf16)
WRAP(silu_and_mul, f16)
WRAP(gelu_and_mul, f32)
WRAP(gelu_and_mul, bf16)
WRAP(gelu_and_mul, f16)
WRAP(gelu_tanh, f32)
WRAP(gelu_tanh, bf16)
WRAP(gelu_tanh, f16)

static const act_fn fns[3][3] = {
    {w_silu_and_mul_f32, w_silu_and_mul_bf16, w_silu_and_mul_f16},
    {w_gelu_and_mul_f32, w_gelu_and_mul_bf16, w_gelu_and_mul_f16},
    {w_gelu_tanh_f32, w_gelu_tanh_bf16, w_gelu_tanh_f16},
};
static const char *const op_names[] = {"silu_and_mul", "gelu_and_mul", "gelu_tanh"};

/* The GPU build takes rows whose bytes are a multiple of 16 in aligned buffers as one flat
 * array of 16-byte units (4096; 8, 1000, 24, 16384 at f32: 16-bit outputs of up to 2^17
 * elements go element by element, 64 and 600 x 4096 flat); any other width or buffer
 * offset, below 2^19 output elements (2^21 with the output off 16 bytes), element by element
 * (one per thread: 13, 4095, 1001, 127, 40001, 3 and the shifted cases in main; two for 16-bit
 * past 2^18: 80 x 4095), in a grid that covers the output once; past
 * that (600 and 513 rows of 4095), with an aligned output, the odd-width kernel: a thread per
 * 16-byte output unit, gate and up read as shifted aligned chunks, a unit that crosses a row end
 * merged from three windows, the tail on the first threads (600 x 4095 with the input one element
 * off too); with the output off 16 bytes, one flat output cut at its 16-byte boundaries (head,
 * units, tail: the any-width kernel, 600 x 4095 out+1), one unit per thread where the device holds
 * a thread per unit, else 4 per step. A build with -DACT_ODD_MIN=0 sends every odd width of at
 * least one unit here through the odd-width kernel (13, 4095, 1001, 127, 40001). */
static const int64_t shapes[][2] = {
    {64, 4096}, {3, 8}, {17, 1000}, {5, 13},    {1, 1},      {300, 24},   {9, 4095},   {4, 1001},
    {33, 127},  {9, 3}, {2, 40001}, {1, 16384}, {600, 4096}, {600, 4095}, {513, 4095}, {80, 4095}};

/* Which buffers a case moves off 16-byte alignment by one element. */
enum { SHIFT_IN = 1, SHIFT_OUT = 2 };

static double exact_op(int op, double x, double up)
{
    if (op == ACT_SILU_AND_MUL)
        return x / (1.0 + exp(-x)) * up;
    if (op == ACT_GELU_AND_MUL)
        return 0.5 * x * (1.0 + erf(x / sqrt(2.0))) * up;
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}

/* fp32 math: a few ulp of fp32 in exp/erf/tanh, then one rounding to the type */
static double rel_tol(kbc_dtype t)
{
    return kbc_ulp(t) + 8 * 5.96e-8;
}

/* gelu's 1 + erf(x) and 1 + tanh(x) cancel for negative x: in fp32 that sum is only known to an
 * ulp of 1, so the result carries an absolute error of about u |x up|. (x up is NaN for a gate
 * of -inf times a zero up, whose gelu is -0 times 0: no allowance there.) */
static double cancel_allowance(int op, double x, double up)
{
    double xu = fabs(x * up);
    return op == ACT_SILU_AND_MUL || !isfinite(xu) ? 0.0 : 4 * 5.96e-8 * xu;
}

/* Runs op on in (n rows) on the device into got (NaN-poisoned first) and on the CPU reference
 * into want; *rc and *rrc: what each returned. */
static void run_both(int *rc, int *rrc, void *got, void *want, int op, kbc_dtype t, const void *in,
                     int64_t n, int64_t d, int shift)
{
    int gated = op != ACT_GELU_TANH;
    size_t es = kbc_size(t), nin = (size_t)(n * d * (gated ? 2 : 1)), nout = (size_t)(n * d);
    size_t oi = shift & SHIFT_IN ? es : 0, oo = shift & SHIFT_OUT ? es : 0;
    kbc_poison(t, got, nout);
    char *bin = kbc_dev_alloc(nin * es + oi), *bout = kbc_dev_alloc(nout * es + oo);
    kbc_upload(bin + oi, in, nin * es);
    kbc_upload(bout + oo, got, nout * es);
    *rc = fns[op][t](bout + oo, bin + oi, n, d, NULL);
    kbc_download(got, bout + oo, nout * es);
    *rrc = act_cpu((enum act_op)op, (enum act_dtype)t, want, in, n, d);
    kbc_dev_free(bin);
    kbc_dev_free(bout);
}

static size_t run_case(kbc_rng *rng, int op, kbc_dtype t, int64_t n, int64_t d, int shift)
{
    int gated = op != ACT_GELU_TANH;
    size_t es = kbc_size(t), nin = (size_t)(n * d * (gated ? 2 : 1)), nout = (size_t)(n * d);
    void *in = kbc_xmalloc(nin * es), *got = kbc_xmalloc(nout * es), *want = kbc_xmalloc(nout * es),
         *ex = kbc_xmalloc(nout * es);
    kbc_fill(rng, t, in, nin, -6.0f, 6.0f);
    int rc, rrc;
    run_both(&rc, &rrc, got, want, op, t, in, n, d, shift);
    double *extra = kbc_xmalloc(sizeof(double) * (nout + 1));
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < d; c++) {
            int64_t base = r * d * (gated ? 2 : 1);
            double x = kbc_get(t, in, (size_t)(base + c));
            double up = gated ? kbc_get(t, in, (size_t)(base + d + c)) : 1.0;
            kbc_set(t, ex, (size_t)(r * d + c), (float)exact_op(op, x, up));
            extra[r * d + c] = cancel_allowance(op, x, up);
        }
    char what[128], what_ref[160];
    snprintf(what, sizeof what, "act_%s_%s n=%lld d=%lld%s%s", op_names[op], kbc_dtype_names[t],
             (long long)n, (long long)d, shift & SHIFT_IN ? " in+1" : "",
             shift & SHIFT_OUT ? " out+1" : "");
    snprintf(what_ref, sizeof what_ref, "reference vs fp64 (%s)", what);
    size_t bad = 0;
    if (rc != 0 || rrc != 0) {
        fprintf(stderr, "check: FAIL %s: returned %d (reference %d)\n", what, rc, rrc);
        bad++;
    }
    double rtol = rel_tol(t), atol = 1e-6;
    bad += kbc_compare(what_ref, t, want, ex, nout, rtol, atol, extra);
    bad += kbc_compare(what, t, got, want, nout, rtol, atol, extra);
    free(in), free(got), free(want), free(ex), free(extra);
    return bad;
}

/* Compares got with want element by element: NaN exactly where the reference has NaN,
 * infinities exactly, the rest within the usual tolerance. Prints the first 5 misses. */
static size_t compare_special(const char *what, int op, kbc_dtype t, const void *in,
                              const void *got, const void *want, int64_t n, int64_t d, int rc,
                              int rrc)
{
    int gated = op != ACT_GELU_TANH;
    size_t nout = (size_t)(n * d);
    size_t bad = rc != 0 || rrc != 0, nans = 0, infs = 0;
    for (size_t i = 0; i < nout; i++) {
        size_t r = i / (size_t)d, c = i % (size_t)d, base = r * (size_t)d * (gated ? 2 : 1);
        double g = kbc_get(t, got, i), w = kbc_get(t, want, i);
        double x = kbc_get(t, in, base + c), up = gated ? kbc_get(t, in, base + (size_t)d + c) : 1;
        int ok;
        if (isnan(w) || isnan(g))
            ok = isnan(w) && isnan(g), nans += isnan(w) != 0;
        else if (isinf(w) || isinf(g))
            ok = g == w, infs += isinf(w) != 0;
        else
            ok = fabs(g - w) <= rel_tol(t) * fabs(w) + 1e-6 + cancel_allowance(op, x, up);
        /* a non-finite gate (or a NaN up) gives NaN exactly where the fp64 formula (torch's)
         * does: gelu(-inf) is NaN there, not its limit 0 */
        if (ok && (!isfinite(x) || isnan(up)) && !isnan(w) != !isnan(exact_op(op, x, up))) {
            ok = 0;
            w = exact_op(op, x, up);
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "check: %s: element %zu: x %.9g up %.9g: got %.9g, want %.9g\n", what,
                    i, x, up, g, w);
    }
    if (bad)
        fprintf(stderr, "check: FAIL %s: %zu wrong (rc %d, reference %d)\n", what, bad, rc, rrc);
    else
        printf("check: ok   %s: %zu elements, %zu NaN, %zu inf\n", what, nout, nans, infs);
    return bad;
}

/* Runs op on in (n rows) on the device and on the reference, then compare_special. */
static size_t run_and_compare(const char *what, int op, kbc_dtype t, const void *in, int64_t n,
                              int64_t d)
{
    size_t nout = (size_t)(n * d);
    void *got = kbc_xmalloc(nout * kbc_size(t)), *want = kbc_xmalloc(nout * kbc_size(t));
    int rc, rrc;
    run_both(&rc, &rrc, got, want, op, t, in, n, d, 0);
    size_t bad = compare_special(what, op, t, in, got, want, n, d, rc, rrc);
    free(got), free(want);
    return bad;
}

/* NaN, infinities, signed zeros, subnormals and the largest finite values of each type among
 * random data, on the vector and the scalar path: NaN comes out exactly where the reference
 * has NaN (a NaN input must not round to a number, nor a number to NaN), infinities match
 * exactly, the rest within the usual tolerance. */
static size_t run_special(kbc_rng *rng, int op, kbc_dtype t, int64_t n, int64_t d)
{
    static const float specials[] = {NAN,    -NAN,    INFINITY, -INFINITY, 0.0f,     -0.0f,
                                     1e-40f, -1e-40f, 3.0e38f,  -3.0e38f,  65504.0f, -65504.0f,
                                     1e5f,   -1e5f,   -90.0f,   90.0f};
    const size_t nspecial = sizeof specials / sizeof specials[0];
    int gated = op != ACT_GELU_TANH;
    size_t nin = (size_t)(n * d * (gated ? 2 : 1));
    void *in = kbc_xmalloc(nin * kbc_size(t));
    kbc_fill(rng, t, in, nin, -6.0f, 6.0f);
    for (size_t i = 0; i < nin; i++)
        if (kbc_next(rng) % 3 == 0)
            kbc_set(t, in, i, specials[kbc_next(rng) % nspecial]);
    kbc_set(t, in, 0, NAN); /* at least one NaN result: row 0's first gate */
    char what[128];
    snprintf(what, sizeof what, "act_%s_%s special values n=%lld d=%lld", op_names[op],
             kbc_dtype_names[t], (long long)n, (long long)d);
    size_t bad = run_and_compare(what, op, t, in, n, d);
    free(in);
    return bad;
}

/* Every 16-bit gate value (all 65536 bit patterns: NaNs, infinities, subnormals, the far
 * tails) against an up of +inf, -inf, 1 and the largest finite value: where a gate's
 * activation is tiny but not zero, times inf is +-inf, and where it is zero it is NaN, so the
 * device and the reference must agree on which gates give exactly zero. Random data found a
 * gate where they did not (gelu with 1 + erff, now erfc); this finds them all, every run. */
static size_t run_gate_sweep(int op, kbc_dtype t)
{
    const int64_t d = 65536, n = 4;
    const float ups[4] = {INFINITY, -INFINITY, 1.0f, t == KBC_F16 ? 65504.0f : 3.0e38f};
    uint16_t *in = kbc_xmalloc(sizeof(uint16_t) * (size_t)(2 * n * d));
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < d; c++) {
            in[2 * r * d + c] = (uint16_t)c;
            kbc_set(t, in, (size_t)(2 * r * d + d + c), ups[r]);
        }
    char what[128];
    snprintf(what, sizeof what, "act_%s_%s every gate value times +-inf, 1, max", op_names[op],
             kbc_dtype_names[t]);
    size_t bad = run_and_compare(what, op, t, in, n, d);
    free(in);
    return bad;
}

static size_t check_bad_args(void)
{
    size_t bad = 0;
    float dummy[4] = {0};
    for (int op = 0; op < 3; op++)
        for (int t = 0; t < 3; t++) {
            int r1 = fns[op][t](dummy, dummy, -1, 4, NULL);
            int r2 = fns[op][t](dummy, dummy, 4, -1, NULL);
            int r3 = fns[op][t](NULL, dummy, 4, 4, NULL);
            int r4 = fns[op][t](NULL, NULL, 0, 4, NULL); /* empty: a successful no-op */
            if (r1 != KBPKG_KERNEL_EINVAL || r2 != KBPKG_KERNEL_EINVAL ||
                r3 != KBPKG_KERNEL_EINVAL || r4 != 0) {
                fprintf(stderr,
                        "check: FAIL act_%s_%s bad arguments: n<0 -> %d, d<0 -> %d, out NULL "
                        "-> %d (want %d), empty -> %d (want 0)\n",
                        op_names[op], kbc_dtype_names[t], r1, r2, r3, KBPKG_KERNEL_EINVAL, r4);
                bad++;
            }
        }
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    /* the GPU kernels read whole elements: a pointer between two is refused, not faulted on
     * (never dereferenced here) */
    for (int op = 0; op < 3; op++)
        for (int t = 0; t < 3; t++) {
            int r = fns[op][t]((char *)dummy + 1, dummy, 4, 4, NULL);
            if (r != KBPKG_KERNEL_EINVAL) {
                fprintf(stderr, "check: FAIL act_%s_%s out off its element: %d (want %d)\n",
                        op_names[op], kbc_dtype_names[t], r, KBPKG_KERNEL_EINVAL);
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
    size_t bad = kbc_check_info("kbpkg-community/activation");
    bad += check_bad_args();
    for (int op = 0; op < 3; op++)
        for (int t = 0; t < 3; t++) {
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                bad += run_case(&rng, op, (kbc_dtype)t, shapes[s][0], shapes[s][1], 0);
            /* buffers off each other: shifted gate/up loads, heads and tails on every row */
            bad += run_case(&rng, op, (kbc_dtype)t, 5, 4096, SHIFT_IN);
            bad += run_case(&rng, op, (kbc_dtype)t, 5, 4095, SHIFT_OUT);
            bad += run_case(&rng, op, (kbc_dtype)t, 7, 13, SHIFT_IN | SHIFT_OUT);
            bad += run_case(&rng, op, (kbc_dtype)t, 2, 8191, SHIFT_IN);
            /* enough units that the any-width kernel loops (U = 4 on a device of up to about
             * 150 SMs), with a head and a tail: those are loaded after its loop, not before */
            bad += run_case(&rng, op, (kbc_dtype)t, 600, 4095, SHIFT_OUT);
            bad += run_case(&rng, op, (kbc_dtype)t, 600, 4095, SHIFT_IN); /* odd-width kernel */
            bad += run_special(&rng, op, (kbc_dtype)t, 16, 64);           /* flat path */
            bad += run_special(&rng, op, (kbc_dtype)t, 7, 13);            /* row path */
            if (op != ACT_GELU_TANH && t != KBC_F32)
                bad += run_gate_sweep(op, (kbc_dtype)t);
        }
    if (bad) {
        printf("check: FAILED (%zu problems)\n", bad);
        return 1;
    }
    printf("check: PASSED\n");
    return 0;
}
