/* Public target API: the table of targets kbpkg builds, and "does target T run on device D?". */
#include "model/target.h"
#include "probe/cpu.h"
#include "kbpkg/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct known_target {
    const char *id;
    /* The devices it runs on: a comma list of device archs (tests check each one fits),
     * then a parenthesised note. */
    const char *runs_on;
} known_target;

static const known_target known_targets[] = {
    {"cuda13-sm_75-x86_64-linux", "sm_75 (SASS, Turing)"},
    {"cuda13-sm_80-x86_64-linux", "sm_80, sm_86, sm_87, sm_88, sm_89 (SASS, same major 8)"},
    {"cuda13-sm_86-x86_64-linux", "sm_86, sm_87, sm_88, sm_89 (SASS, same major 8)"},
    {"cuda13-sm_89-x86_64-linux", "sm_89 (SASS)"},
    {"cuda13-sm_90-x86_64-linux", "sm_90 (SASS)"},
    {"cuda13-sm_90a-x86_64-linux", "sm_90 (arch-specific: only sm_90)"},
    {"cuda13-sm_100-x86_64-linux", "sm_100, sm_103 (SASS, same major 10)"},
    {"cuda13-sm_100a-x86_64-linux", "sm_100 (arch-specific: only sm_100)"},
    {"cuda13-sm_120-x86_64-linux", "sm_120, sm_121 (SASS, same major 12)"},
    {"cuda13-compute_75-x86_64-linux", "sm_75, sm_80, sm_90, sm_120 (PTX JIT: sm_75 and newer)"},
    {"cuda13-compute_80-x86_64-linux", "sm_80, sm_90, sm_100, sm_120 (PTX JIT: sm_80 and newer)"},
    {"cuda13-compute_90-x86_64-linux", "sm_90, sm_100, sm_120 (PTX JIT: sm_90 and newer)"},
    {"rocm5-gfx906-x86_64-linux", "gfx906 (exact gfx, HIP runtime 5: libamdhip64.so.5)"},
    {"rocm5-gfx908-x86_64-linux", "gfx908 (exact gfx, HIP runtime 5: libamdhip64.so.5)"},
    {"rocm5-gfx90a-x86_64-linux", "gfx90a (exact gfx, HIP runtime 5: libamdhip64.so.5)"},
    {"rocm5-gfx1030-x86_64-linux",
     "gfx1030 (exact gfx, HIP runtime 5: libamdhip64.so.5; aliases opt in more)"},
    {"rocm5-gfx1100-x86_64-linux", "gfx1100 (exact gfx, HIP runtime 5: libamdhip64.so.5)"},
    {"rocm6-gfx942-x86_64-linux", "gfx942 (exact gfx, HIP runtime 6: libamdhip64.so.6)"},
    {"rocm6-gfx1030-x86_64-linux", "gfx1030 (exact gfx, HIP runtime 6: libamdhip64.so.6)"},
    {"rocm6-gfx1031-x86_64-linux", "gfx1031 (exact gfx, HIP runtime 6: libamdhip64.so.6)"},
    {"rocm6-gfx1100-x86_64-linux", "gfx1100 (exact gfx, HIP runtime 6: libamdhip64.so.6)"},
    {"rocm6-gfx1151-x86_64-linux", "gfx1151 (exact gfx, HIP runtime 6: libamdhip64.so.6)"},
    {"rocm6-gfx1200-x86_64-linux", "gfx1200 (exact gfx, HIP runtime 6: libamdhip64.so.6)"},
    {"rocm6-gfx1201-x86_64-linux", "gfx1201 (exact gfx, HIP runtime 6: libamdhip64.so.6)"},
    {"rocm6-gfx9-generic-x86_64-linux",
     "gfx900, gfx902, gfx904, gfx906, gfx909, gfx90c (generic, code object v6: ROCm 6.2+)"},
    {"rocm6-gfx9-4-generic-x86_64-linux",
     "gfx940, gfx941, gfx942 (generic, code object v6: ROCm 6.2+)"},
    {"rocm6-gfx10-1-generic-x86_64-linux",
     "gfx1010, gfx1011, gfx1012, gfx1013 (generic, code object v6: ROCm 6.2+)"},
    {"rocm6-gfx10-3-generic-x86_64-linux", "gfx1030, gfx1031, gfx1032, gfx1033, gfx1034, gfx1035, "
                                           "gfx1036 (generic, code object v6: ROCm 6.2+)"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1100, gfx1101, gfx1102, gfx1103, gfx1150, gfx1151, "
                                         "gfx1152 (generic, code object v6: ROCm 6.2+)"},
    {"rocm6-gfx12-generic-x86_64-linux", "gfx1200, gfx1201 (generic, code object v6: ROCm 6.2+)"},
    {"metal3-apple-arm64-darwin", "apple (Apple GPU with Metal 3, macOS on arm64)"},
    {"cpu-x86_64_v2-x86_64-linux", "x86_64_v2, x86_64_v3, x86_64_v4 (CPU, no usable GPU)"},
    {"cpu-x86_64_v3-x86_64-linux", "x86_64_v3, x86_64_v4 (CPU, no usable GPU)"},
    {"cpu-x86_64_v4-x86_64-linux", "x86_64_v4 (CPU, no usable GPU)"},
    {"cpu-aarch64-aarch64-linux", "aarch64 (CPU, no usable GPU)"},
};

int kb_target_known(const char **id, const char **runs_on, size_t index)
{
    if (index >= KB_ARRAY_LEN(known_targets))
        return KB_ERR_NOT_FOUND;
    if (id)
        *id = known_targets[index].id;
    if (runs_on)
        *runs_on = known_targets[index].runs_on;
    return 0;
}

int kb_target_canonical(char *buf, size_t size, kb_ctx *ctx, const char *target_id)
{
    kb_target t;
    int rc = kbi_target_parse(ctx, &t, target_id);
    if (rc)
        return rc;
    kbi_target_format(&t, buf, size);
    return 0;
}

/* This machine's platform in target-id spelling ("x86_64", "linux"). */
static void this_platform(kb_host *host)
{
    kbi_host_platform(host->cpu_arch, sizeof(host->cpu_arch), host->os, sizeof(host->os));
}

static int host_from_spec(kb_ctx *ctx, kb_host *host, const char *device_spec)
{
    memset(host, 0, sizeof(*host));
    this_platform(host);
    const char *spec = device_spec;
    if (!spec)
        spec = kbi_config_str(ctx, "probe.devices");
    if (!spec || !*spec)
        return kbi_error_set(ctx, KB_ERR_INVALID,
                             "no device to check against (name one, e.g. --device sm_86 or "
                             "--device none)");
    int rc = kbi_devices_parse(ctx, &host->devices, &host->device_count, spec);
    if (rc)
        return rc;
    const char *cpu = kbi_config_str(ctx, "probe.cpu");
    for (size_t i = 0; i < host->device_count; i++)
        if (host->devices[i].backend == KB_BACKEND_CPU)
            cpu = host->devices[i].arch;
    if (cpu && *cpu)
        snprintf(host->cpu_level, sizeof(host->cpu_level), "%.15s", cpu);
    return 0;
}

int kb_target_check(int *fits, char *reason, size_t reason_size, kb_ctx *ctx, const char *target_id,
                    const char *device_spec)
{
    if (fits)
        *fits = 0;
    if (reason && reason_size)
        reason[0] = '\0';
    kb_target t;
    int rc = kbi_target_parse(ctx, &t, target_id);
    if (rc)
        return rc;
    kb_compat_opts opts = {kbi_config_str(ctx, "rocm.aliases"), false};
    char why[192];
    if (!kbi_rocm_aliases_valid(opts.rocm_aliases, why, sizeof(why)))
        return kbi_error_set(ctx, KB_ERR_CONFIG, "rocm.aliases: %s", why);
    kb_host host;
    rc = host_from_spec(ctx, &host, device_spec);
    if (rc) {
        kbi_host_free(&host);
        return rc;
    }
    kb_compat result;
    kbi_compat_check_host(&result, &t, &host, &opts);
    kbi_host_free(&host);
    if (fits)
        *fits = result.fit != KB_FIT_NONE;
    if (reason && reason_size)
        snprintf(reason, reason_size, "%s", result.reason);
    return 0;
}
