/* kbpkg_bench.h's timer (kernels/common), on the CPU: how many back-to-back calls it times per
 * repetition, sized from a warm call rather than the first one. */
#include "kbtest.h"

#include <time.h>

#include "kbpkg_bench.h"

typedef struct slow_first {
    int calls;
    long first_ns, later_ns;
} slow_first;

static void sleep_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* A first call that pays for setup (module load, first-use allocation), then cheap ones. */
static int slow_first_call(void *arg)
{
    slow_first *s = arg;
    sleep_ns(s->calls++ == 0 ? s->first_ns : s->later_ns);
    return 0;
}

Test(bench_timing, repetitions_are_sized_from_a_warm_call_not_the_cold_first_one)
{
    /* full size: 15 repetitions of ~20 ms. Sized from the 50 ms first call, each repetition
     * was one call ended by a device sync (16 calls in all); from a warm ~100 us call, about
     * 200 each. At least 2 per repetition holds unless a 100 us sleep overruns 10 ms, so a
     * loaded machine does not fail the test (a 2 ms target did: CI saw a 2 ms overrun). */
    slow_first s = {0, 50000000L, 100000L};
    double t = kbb_time(slow_first_call, &s, 0);
    cr_expect_geq(s.calls, 2 + 15 * 2, "only %d calls: repetitions sized from the cold call",
                  s.calls);
    cr_expect_lt(t, 5e-3, "median %g s per call includes the cold call", t);
    cr_expect_geq(t, 1e-4, "median %g s per call below the sleep", t);
}

Test(bench_timing, calls_per_repetition_fill_the_target_within_bounds)
{
    cr_expect_eq(kbb_calls_per_rep(1e-4, 1), 20);  /* 2 ms / 100 us */
    cr_expect_eq(kbb_calls_per_rep(1e-4, 0), 200); /* 20 ms / 100 us */
    cr_expect_eq(kbb_calls_per_rep(1.0, 0), 1);    /* a call longer than the target */
    cr_expect_eq(kbb_calls_per_rep(1e-9, 0), 1000);
    cr_expect_eq(kbb_calls_per_rep(0.0, 0), 1000); /* below the clock's resolution */
}
