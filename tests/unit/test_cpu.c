/* probe/cpu.c: x86-64 levels from features, the host's level against /proc/cpuinfo, and the
 * probe and the builder both using it. */
#include "kbtest.h"
#include "builder/builder.h"
#include "probe/cpu.h"
#include "probe/probe_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const kb_x86_features V3 = {.cx16 = true,
                                   .lahf = true,
                                   .popcnt = true,
                                   .sse3 = true,
                                   .sse41 = true,
                                   .sse42 = true,
                                   .ssse3 = true,
                                   .avx = true,
                                   .avx2 = true,
                                   .bmi1 = true,
                                   .bmi2 = true,
                                   .f16c = true,
                                   .fma = true,
                                   .lzcnt = true,
                                   .movbe = true,
                                   .xsave = true,
                                   .os_ymm = true};

Test(core_cpu, levels_need_every_feature)
{
    kb_x86_features f = {0};
    cr_expect_eq(kbi_x86_level(&f), 1);
    f = V3;
    cr_expect_eq(kbi_x86_level(&f), 3);
    f.os_ymm = false; /* AVX present but the OS does not save YMM state */
    cr_expect_eq(kbi_x86_level(&f), 2);
    f = V3;
    f.lzcnt = false;
    cr_expect_eq(kbi_x86_level(&f), 2);
    f = V3;
    f.popcnt = false;
    cr_expect_eq(kbi_x86_level(&f), 1);
    f = V3;
    f.avx512f = f.avx512bw = f.avx512cd = f.avx512dq = f.avx512vl = true;
    cr_expect_eq(kbi_x86_level(&f), 3, "no ZMM state saved by the OS");
    f.os_zmm = true;
    cr_expect_eq(kbi_x86_level(&f), 4);
    f.avx512vl = false;
    cr_expect_eq(kbi_x86_level(&f), 3);
}

/* The level, computed independently from the kernel's flag names. LZCNT (cpuid's ABM bit) is
 * left out: some kernels do not list "abm" in /proc/cpuinfo although cpuid reports it (this
 * machine's 6.18 does not), and every CPU with AVX2 has it. */
static int level_from_cpuinfo_flags(const char *flags)
{
    static const char *const v2[] = {"cx16",   "lahf_lm", "popcnt", "pni",
                                     "sse4_1", "sse4_2",  "ssse3"};
    static const char *const v3[] = {"avx",  "avx2", "bmi1",  "bmi2",
                                     "f16c", "fma",  "movbe", "xsave"};
    static const char *const v4[] = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"};
    const char *const *sets[] = {v2, v3, v4};
    size_t lens[] = {KB_ARRAY_LEN(v2), KB_ARRAY_LEN(v3), KB_ARRAY_LEN(v4)};
    int level = 1;
    for (size_t s = 0; s < 3; s++) {
        for (size_t i = 0; i < lens[s]; i++) {
            char word[32];
            snprintf(word, sizeof(word), " %s ", sets[s][i]);
            if (!strstr(flags, word))
                return level;
        }
        level++;
    }
    return level;
}

static char *cpuinfo_flags(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return NULL;
    char line[8192];
    char *flags = NULL;
    while (!flags && fgets(line, sizeof(line), f))
        if (kbi_str_starts(line, "flags")) {
            char *colon = strchr(line, ':');
            line[strcspn(line, "\n")] = '\0';
            flags = colon ? kbi_asprintf("%s ", colon + 1) : NULL; /* " flag flag ... " */
        }
    fclose(f);
    return flags;
}

Test(core_cpu, level_matches_proc_cpuinfo)
{
#if !defined(__x86_64__)
    cr_skip("not an x86-64 host");
#else
    char *flags = cpuinfo_flags();
    if (!flags)
        cr_skip("no flags line in /proc/cpuinfo");
    char arch[32], level[32], want[16];
    kbi_cpu_host(arch, sizeof(arch), level, sizeof(level));
    snprintf(want, sizeof(want), "x86_64_v%d", level_from_cpuinfo_flags(flags));
    cr_expect_str_eq(level, want, "cpuinfo flags:%s", flags);
    cr_expect_str_eq(arch, "x86_64");
    free(flags);
#endif
}

/* The probe and the builder both answer with probe/cpu.c's level, and both let probe.cpu win. */
Test(core_cpu, probe_and_builder_agree_with_the_host_level)
{
    char arch[32], level[32];
    kbi_cpu_host(arch, sizeof(arch), level, sizeof(level));
    cr_expect(kbi_cpu_level_valid(level) || strcmp(arch, "x86_64") != 0, "%s", level);
    kb_ctx *ctx = kbt_ctx();
    kb_probe_report r;
    memset(&r, 0, sizeof(r));
    cr_assert_eq(kbi_probe_cpu(ctx, &r, ""), 0);
    cr_expect_str_eq(r.host.cpu_level, level);
    cr_expect_str_eq(r.host.cpu_arch, arch);
    kbi_probe_report_free(&r);
    char built[32];
    kbi_host_cpu_level(ctx, built, sizeof(built));
    cr_expect_str_eq(built, level);

    const char *other = strcmp(level, "x86_64_v2") == 0 ? "x86_64_v4" : "x86_64_v2";
    cr_assert_eq(kb_ctx_set(ctx, "probe.cpu", other), 0);
    memset(&r, 0, sizeof(r));
    cr_assert_eq(kbi_probe_cpu(ctx, &r, other), 0);
    cr_expect_str_eq(r.host.cpu_level, other);
    cr_expect_str_eq(r.host.cpu_arch, "x86_64");
    kbi_probe_report_free(&r);
    kbi_host_cpu_level(ctx, built, sizeof(built));
    cr_expect_str_eq(built, other);
    kb_ctx_free(ctx);
}

Test(core_cpu, level_names)
{
    static const char *const good[] = {"x86_64_v1", "x86_64_v2", "x86_64_v3", "x86_64_v4",
                                       "aarch64"};
    for (size_t i = 0; i < KB_ARRAY_LEN(good); i++)
        cr_expect(kbi_cpu_level_valid(good[i]), "%s", good[i]);
    static const char *const bad[] = {"x86_64_v5", "x86_64", "x86_64_v", "arm64", "", "X86_64_V3"};
    for (size_t i = 0; i < KB_ARRAY_LEN(bad); i++)
        cr_expect_not(kbi_cpu_level_valid(bad[i]), "%s", bad[i]);
    cr_expect_not(kbi_cpu_level_valid(NULL));
    cr_expect_str_eq(kbi_cpu_level_arch("x86_64_v3"), "x86_64");
    cr_expect_str_eq(kbi_cpu_level_arch("aarch64"), "aarch64");
}
