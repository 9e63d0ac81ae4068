/* GPU clocks through NVML (probe/probe_nvml.c) against the fake NVML, and the bench's sampler and
 * its summary (builder/bench_clocks.c): device matching, absent or failing NVML, the busy filter.
 */
#include "kbtest.h"

#include "builder/builder.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* NVML lists bus 02 first; the probed device sits at bus 01 (as fake_libcuda puts device 0). */
#define TWO_NVML "0000:02:00.0 700 1593 1410;0000:01:00.0 1980/1410/1755/1600/1890 3201 1980"

static char *fake_nvml(void)
{
    const char *p = getenv("KB_FAKE_NVML");
    cr_assert(p && *p, "KB_FAKE_NVML is not set (run the tests through ctest)");
    return kbi_strdup(p);
}

static kb_device h200(const char *pci_id, int index)
{
    kb_device d;
    memset(&d, 0, sizeof(d));
    d.backend = KB_BACKEND_CUDA;
    d.index = index;
    snprintf(d.arch, sizeof(d.arch), "sm_90");
    snprintf(d.pci_id, sizeof(d.pci_id), "%s", pci_id);
    return d;
}

Test(probe_nvml, matches_the_device_by_pci_bus_id_not_by_ordinal)
{
    setenv("FAKE_NVML_DEVICES", TWO_NVML, 1);
    char *lib = fake_nvml(), why[256] = "";
    kb_device d = h200("0000:01:00.0", 0);
    kbi_nvml *n = kbi_nvml_open(lib, &d, why, sizeof(why));
    cr_assert_not_null(n, "%s", why);
    cr_expect_str_eq(kbi_nvml_driver(n), "580.159.04");
    cr_expect_eq(kbi_nvml_max_sm_mhz(n), 1980u, "the bus 01 device's maximum");
    kbi_clock_sample s;
    cr_assert(kbi_nvml_sample(n, &s, why, sizeof(why)), "%s", why);
    cr_expect_eq(s.sm_mhz, 1980u, "bus 01's first clock, not ordinal 0's 700");
    cr_expect_eq(s.mem_mhz, 3201u);
    cr_expect_eq(s.busy, 1, "FAKE_NVML_BUSY unset: busy");
    cr_assert(kbi_nvml_sample(n, &s, why, sizeof(why)));
    cr_expect_eq(s.sm_mhz, 1410u, "the next reading");
    kbi_nvml_close(n);
    free(lib);
}

Test(probe_nvml, without_a_pci_bus_id_the_ordinal_is_used)
{
    setenv("FAKE_NVML_DEVICES", TWO_NVML, 1);
    char *lib = fake_nvml(), why[256] = "";
    kb_device d = h200("", 0);
    kbi_nvml *n = kbi_nvml_open(lib, &d, why, sizeof(why));
    cr_assert_not_null(n, "%s", why);
    kbi_clock_sample s;
    cr_assert(kbi_nvml_sample(n, &s, why, sizeof(why)), "%s", why);
    cr_expect_eq(s.sm_mhz, 700u, "NVML's device 0");
    kbi_nvml_close(n);
    free(lib);
}

Test(probe_nvml, absent_failing_or_blind_nvml_says_why)
{
    char why[256] = "";
    kb_device d = h200("0000:01:00.0", 0);
    cr_expect_null(kbi_nvml_open("/nonexistent/libnvidia-ml.so.1", &d, why, sizeof(why)));
    cr_expect(strstr(why, "/nonexistent/libnvidia-ml.so.1 not found (dlopen:"), "%s", why);
    char *lib = fake_nvml();
    setenv("FAKE_NVML_MODE", "init_fails", 1);
    cr_expect_null(kbi_nvml_open(lib, &d, why, sizeof(why)));
    cr_expect_str_eq(why, "nvmlInit failed (error 9: Driver Not Loaded)");
    setenv("FAKE_NVML_MODE", "ok", 1);
    setenv("FAKE_NVML_DEVICES", "0000:02:00.0 700 1593 1410", 1);
    cr_expect_null(kbi_nvml_open(lib, &d, why, sizeof(why)));
    cr_expect_str_eq(why, "NVML has no device at PCI 0000:01:00.0 (error 6: Not Found)");
    /* a library that is not NVML */
    const char *cuda = getenv("KB_FAKE_CUDA");
    cr_assert(cuda && *cuda);
    cr_expect_null(kbi_nvml_open(cuda, &d, why, sizeof(why)));
    cr_expect(strstr(why, "has no symbol nvmlInit_v2 (not NVML?)"), "%s", why);
    free(lib);
}

static kbi_clock_sample sample(unsigned sm, unsigned mem, int busy)
{
    kbi_clock_sample s = {sm, mem, busy};
    return s;
}

Test(probe_nvml, summary_keeps_busy_samples_and_takes_the_median)
{
    kbi_clock_sample s[] = {sample(210, 1593, 0), sample(1980, 3201, 1), sample(1410, 3201, 1),
                            sample(1755, 0, 1),   sample(1600, 3201, 1), sample(345, 1593, 0)};
    kbi_clock_summary c;
    memset(&c, 0, sizeof(c));
    kbi_clock_summarise(&c, s, 6);
    cr_expect_eq(c.samples, 4u, "the four busy ones");
    cr_expect(c.busy_only);
    cr_expect_float_eq(c.sm_median, (1600.0 + 1755.0) / 2, 1e-9, "even count: the middle two");
    cr_expect_float_eq(c.sm_min, 1410.0, 1e-9);
    cr_expect_float_eq(c.sm_max, 1980.0, 1e-9);
    cr_expect_float_eq(c.mem_median, 3201.0, 1e-9, "a 0 memory clock is unknown, not a reading");
    /* NVML never said busy (a program too short for its utilization period): all are kept */
    kbi_clock_sample idle[] = {sample(210, 1593, 0), sample(1980, 3201, 0), sample(345, 1593, 0)};
    memset(&c, 0, sizeof(c));
    kbi_clock_summarise(&c, idle, 3);
    cr_expect_eq(c.samples, 3u);
    cr_expect_not(c.busy_only);
    cr_expect_float_eq(c.sm_median, 345.0, 1e-9);
    /* utilization not supported: all */
    kbi_clock_sample blind[] = {sample(1980, 3201, -1), sample(1410, 3201, -1)};
    memset(&c, 0, sizeof(c));
    kbi_clock_summarise(&c, blind, 2);
    cr_expect_eq(c.samples, 2u);
    cr_expect_not(c.busy_only);
    memset(&c, 0, sizeof(c));
    kbi_clock_summarise(&c, NULL, 0);
    cr_expect_eq(c.samples, 0u, "no sample, no clock");
}

Test(probe_nvml, the_sampler_reads_while_running_and_says_why_when_it_cannot)
{
    setenv("FAKE_NVML_DEVICES", TWO_NVML, 1);
    setenv("FAKE_NVML_BUSY", "3", 1);
    char *lib = fake_nvml();
    kb_device d = h200("0000:01:00.0", 0);
    kbi_clock_sampler *s = kbi_clock_sampler_start(lib, &d, 5);
    cr_assert_not_null(s);
    struct timespec wait = {0, 200000000L}; /* 40 intervals: the three busy ones are read */
    nanosleep(&wait, NULL);
    kbi_clock_summary c;
    kbi_clock_sampler_stop(s, &c);
    cr_expect_eq(c.samples, 3u, "the first three readings were busy: %s", c.note);
    cr_expect(c.busy_only);
    cr_expect_float_eq(c.sm_median, 1755.0, 1e-9, "median of 1980, 1410, 1755");
    cr_expect_float_eq(c.sm_min, 1410.0, 1e-9);
    cr_expect_float_eq(c.sm_max, 1980.0, 1e-9);
    cr_expect_str_eq(c.driver, "580.159.04");
    cr_expect_eq(c.device_max_mhz, 1980u);
    json_t *dev = json_object();
    cr_assert_eq(kbi_clock_summary_json(dev, &c), 0);
    cr_expect_eq(json_integer_value(json_object_get(dev, "clock_samples")), 3);
    cr_expect(json_is_null(json_object_get(dev, "clock_note")));
    json_decref(dev);
    /* NVML absent: no clocks, the reason kept */
    s = kbi_clock_sampler_start("/nonexistent/libnvidia-ml.so.1", &d, 5);
    cr_assert_not_null(s);
    kbi_clock_sampler_stop(s, &c);
    cr_expect_eq(c.samples, 0u);
    cr_expect(strstr(c.note, "not found (dlopen:"), "%s", c.note);
    dev = json_object();
    cr_assert_eq(kbi_clock_summary_json(dev, &c), 0);
    cr_expect(json_is_null(json_object_get(dev, "clock_mhz")));
    cr_expect(json_is_null(json_object_get(dev, "driver_version")));
    cr_expect(strstr(json_string_value(json_object_get(dev, "clock_note")), "not found"));
    json_decref(dev);
    free(lib);
}
