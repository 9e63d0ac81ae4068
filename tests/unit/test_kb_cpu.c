/* kernels/common/kb_cpu.h, what the packages' CPU builds share: e^x on a vector against the
 * double-precision exp, and the fork-join and thread count the CPU kernels run on. */
#define _GNU_SOURCE
#include "kbtest.h"

#include <float.h>
#include <math.h>

#include "kb_cpu.h"

static float vexp1(float x)
{
    float in[KB_VW], out[KB_VW];
    for (int i = 0; i < KB_VW; i++)
        in[i] = x;
    kb_vstore(out, kb_vexp(kb_vload(in)));
    return out[KB_VW - 1];
}

/* the error of got against exp(x) in ulps of the correctly rounded fp32 result */
static double ulps(float got, float x)
{
    double want = exp((double)x);
    float rounded = (float)want;
    double ulp = rounded < FLT_MIN ? 0x1p-149 : ldexp(1.0, ilogb(rounded) - 23);
    return fabs((double)got - want) / ulp;
}

Test(kb_cpu, vexp_is_within_two_ulp_of_exp_across_fp32)
{
    double worst = 0;
    float worst_x = 0;
    for (uint32_t u = 0; u < 0xff800000u; u += 4099) { /* positive then negative floats */
        float x;
        memcpy(&x, &u, sizeof x);
        if (!(x > -103.9f && x < 88.7f))
            continue;
        double e = ulps(vexp1(x), x);
        if (e > worst)
            worst = e, worst_x = x;
    }
    cr_expect(worst <= 2.0, "kb_vexp(%.9g) is %.2f ulp from exp", worst_x, worst);
}

Test(kb_cpu, vexp_keeps_libm_edges)
{
    cr_expect(isinf(vexp1(88.73f)) && vexp1(88.73f) > 0, "e^88.73 overflows to +inf");
    cr_expect(isinf(vexp1(INFINITY)), "e^inf = inf");
    cr_expect_eq(vexp1(-INFINITY), 0.0f, "e^-inf = 0");
    cr_expect_eq(vexp1(-104.0f), 0.0f, "e^-104 rounds to 0");
    cr_expect(isnan(vexp1(NAN)), "e^NaN = NaN");
    cr_expect_eq(vexp1(0.0f), 1.0f, "e^0 = 1 exactly");
    float sub = vexp1(-100.0f); /* 3.7e-44: a subnormal, rounded once */
    cr_expect(sub > 0 && sub < FLT_MIN && ulps(sub, -100.0f) <= 1.0, "e^-100 = %g", sub);
    cr_expect(ulps(vexp1(88.72f), 88.72f) <= 2.0, "e^88.72, the largest finite, is %g",
              vexp1(88.72f));
}

typedef struct marks {
    int hits[64];
    int counts[64];
} marks;

static void mark(void *arg, int index, int count)
{
    marks *m = arg;
    __atomic_add_fetch(&m->hits[index], 1, __ATOMIC_RELAXED);
    m->counts[index] = count;
}

Test(kb_cpu, parallel_runs_every_part_once)
{
    for (int count = 1; count <= 64; count += 9) {
        marks m = {{0}, {0}};
        kb_cpu_parallel(mark, &m, count);
        for (int i = 0; i < 64; i++) {
            cr_expect_eq(m.hits[i], i < count ? 1 : 0, "count %d: part %d ran %d times", count, i,
                         m.hits[i]);
            if (i < count)
                cr_expect_eq(m.counts[i], count, "part %d was told %d parts", i, m.counts[i]);
        }
    }
}

Test(kb_cpu, threads_follow_the_work_and_omp_num_threads)
{
    unsetenv("OMP_NUM_THREADS");
    int all = kb_cpu_threads(1e30, 1.0);
    cr_expect(all >= 1 && all <= 64, "%d threads", all);
    cr_expect_eq(kb_cpu_threads(3.0, 1.0), all < 3 ? all : 3, "3 units of work, 1 a thread");
    cr_expect_eq(kb_cpu_threads(0.5, 1.0), 1, "less than one thread's work runs on one");
    setenv("OMP_NUM_THREADS", "1", 1);
    cr_expect_eq(kb_cpu_threads(1e30, 1.0), 1, "OMP_NUM_THREADS=1 caps at one");
    setenv("OMP_NUM_THREADS", "not-a-number", 1);
    cr_expect_eq(kb_cpu_threads(1e30, 1.0), all, "an unreadable OMP_NUM_THREADS is ignored");
    setenv("OMP_NUM_THREADS", "100000", 1);
    cr_expect_eq(kb_cpu_threads(1e30, 1.0), all, "OMP_NUM_THREADS above the cores does not add");
    unsetenv("OMP_NUM_THREADS");
}
