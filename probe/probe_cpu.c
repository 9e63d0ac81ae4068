/* Host probe: CPU level (probe/cpu.c) or the probe.cpu override, OS from uname, glibc. */
#include "probe/cpu.h"
#include "probe/probe_internal.h"

#include <stdio.h>
#include <string.h>

#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

static int apply_cpu_override(kb_ctx *ctx, kb_probe_report *r, const char *level)
{
    if (!kbi_cpu_level_valid(level))
        return kbi_error_set(ctx, KB_ERR_CONFIG,
                             "probe.cpu: '%s' is not a CPU level (x86_64_v1, x86_64_v2, x86_64_v3, "
                             "x86_64_v4 or aarch64)",
                             level);
    snprintf(r->host.cpu_level, sizeof(r->host.cpu_level), "%s", level);
    snprintf(r->host.cpu_arch, sizeof(r->host.cpu_arch), "%s", kbi_cpu_level_arch(level));
    return kbi_probe_note_add(ctx, r, "override", "CPU level %s from probe.cpu", level);
}

int kbi_probe_cpu(kb_ctx *ctx, kb_probe_report *r, const char *cpu_override)
{
    char arch[sizeof(r->host.cpu_arch)];
    kbi_host_platform(arch, sizeof(arch), r->host.os, sizeof(r->host.os));
#if defined(__GLIBC__)
    snprintf(r->host.glibc, sizeof(r->host.glibc), "%s", gnu_get_libc_version());
#endif
    if (cpu_override && *cpu_override)
        return apply_cpu_override(ctx, r, cpu_override);
    kbi_cpu_host(r->host.cpu_arch, sizeof(r->host.cpu_arch), r->host.cpu_level,
                 sizeof(r->host.cpu_level));
    return 0;
}
