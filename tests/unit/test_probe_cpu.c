/* Probe of the host: OS and glibc; the CPU level is probe/cpu.c's (tests/unit/test_cpu.c). */
#include "kbtest.h"
#include "probe/probe_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(probe_cpu, os_and_glibc)
{
    kb_ctx *ctx = kbt_ctx();
    kb_probe_report r;
    memset(&r, 0, sizeof(r));
    cr_assert_eq(kbi_probe_cpu(ctx, &r, ""), 0);
#if defined(__linux__)
    cr_expect_str_eq(r.host.os, "linux");
#endif
#if defined(__GLIBC__)
    char want[16];
    snprintf(want, sizeof(want), "%d.%d", __GLIBC__, __GLIBC_MINOR__);
    cr_expect_str_eq(r.host.glibc, want);
#endif
    kbi_probe_report_free(&r);
    kb_ctx_free(ctx);
}
