/* Host probe: x86-64 level from cpuid (or aarch64), OS from uname, glibc version. */
#include "probe/probe_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define KB_HAVE_CPUID 1
#endif
#if defined(__GLIBC__)
#include <gnu/libc-version.h>
#endif

int kb_x86_level(const kb_x86_features *f)
{
    bool v2 = f->cx16 && f->lahf && f->popcnt && f->sse3 && f->sse41 && f->sse42 && f->ssse3;
    bool v3 = v2 && f->avx && f->avx2 && f->bmi1 && f->bmi2 && f->f16c && f->fma && f->lzcnt &&
              f->movbe && f->xsave && f->os_ymm;
    bool v4 =
        v3 && f->avx512f && f->avx512bw && f->avx512cd && f->avx512dq && f->avx512vl && f->os_zmm;
    return v4 ? 4 : v3 ? 3 : v2 ? 2 : 1;
}

#ifdef KB_HAVE_CPUID
static uint64_t read_xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static void read_x86_features(kb_x86_features *f)
{
    unsigned a, b, c, d;
    memset(f, 0, sizeof(*f));
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return;
    f->sse3 = c & (1u << 0);
    f->ssse3 = c & (1u << 9);
    f->fma = c & (1u << 12);
    f->cx16 = c & (1u << 13);
    f->sse41 = c & (1u << 19);
    f->sse42 = c & (1u << 20);
    f->movbe = c & (1u << 22);
    f->popcnt = c & (1u << 23);
    f->xsave = c & (1u << 26);
    bool osxsave = c & (1u << 27);
    f->avx = c & (1u << 28);
    f->f16c = c & (1u << 29);
    /* The OS must save the wide registers on context switch, or using them is unsafe. */
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    f->os_ymm = (xcr0 & 0x6) == 0x6;   /* SSE and AVX state */
    f->os_zmm = (xcr0 & 0xe6) == 0xe6; /* plus opmask, ZMM_Hi256, Hi16_ZMM */
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f->bmi1 = b & (1u << 3);
        f->avx2 = b & (1u << 5);
        f->bmi2 = b & (1u << 8);
        f->avx512f = b & (1u << 16);
        f->avx512dq = b & (1u << 17);
        f->avx512cd = b & (1u << 28);
        f->avx512bw = b & (1u << 30);
        f->avx512vl = b & (1u << 31);
    }
    if (__get_cpuid(0x80000001, &a, &b, &c, &d)) {
        f->lahf = c & (1u << 0);
        f->lzcnt = c & (1u << 5); /* ABM */
    }
}
#endif

/* The probed level: "x86_64_vN" from cpuid, or the machine name elsewhere (aarch64). */
static void probe_level(kb_host *h, const char *machine)
{
#ifdef KB_HAVE_CPUID
    kb_x86_features f;
    read_x86_features(&f);
    snprintf(h->cpu_arch, sizeof(h->cpu_arch), "x86_64");
    snprintf(h->cpu_level, sizeof(h->cpu_level), "x86_64_v%d", kb_x86_level(&f));
#else
    /* macOS says arm64 where Linux says aarch64; the level name follows the targets' spelling. */
    bool arm = strcmp(machine, "aarch64") == 0 || strcmp(machine, "arm64") == 0;
    snprintf(h->cpu_arch, sizeof(h->cpu_arch), "%s", machine);
    snprintf(h->cpu_level, sizeof(h->cpu_level), "%s", arm ? "aarch64" : machine);
#endif
}

static const char *const cpu_levels[] = {"x86_64_v1", "x86_64_v2", "x86_64_v3", "x86_64_v4",
                                         "aarch64"};

static int apply_cpu_override(kb_ctx *ctx, kb_probe_report *r, const char *level)
{
    for (size_t i = 0; i < KB_ARRAY_LEN(cpu_levels); i++)
        if (strcmp(level, cpu_levels[i]) == 0) {
            snprintf(r->host.cpu_level, sizeof(r->host.cpu_level), "%s", level);
            snprintf(r->host.cpu_arch, sizeof(r->host.cpu_arch), "%s",
                     kb_str_starts(level, "x86_64") ? "x86_64" : "aarch64");
            return kb_probe_note_add(ctx, r, "override", "CPU level %s from probe.cpu", level);
        }
    return kb_error_set(ctx, KB_ERR_CONFIG,
                        "probe.cpu: '%s' is not a CPU level (x86_64_v1, x86_64_v2, x86_64_v3, "
                        "x86_64_v4 or aarch64)",
                        level);
}

static void lowercase_os(char *buf, size_t size, const char *sysname)
{
    size_t i = 0;
    for (; sysname[i] && i + 1 < size; i++)
        buf[i] = (char)(sysname[i] >= 'A' && sysname[i] <= 'Z' ? sysname[i] + 32 : sysname[i]);
    buf[i] = '\0';
}

int kb_probe_cpu(kb_ctx *ctx, kb_probe_report *r, const char *cpu_override)
{
    struct utsname u;
    if (uname(&u) != 0)
        memset(&u, 0, sizeof(u));
    lowercase_os(r->host.os, sizeof(r->host.os), u.sysname); /* Linux -> linux, Darwin -> darwin */
#if defined(__GLIBC__)
    snprintf(r->host.glibc, sizeof(r->host.glibc), "%s", gnu_get_libc_version());
#endif
    if (cpu_override && *cpu_override)
        return apply_cpu_override(ctx, r, cpu_override);
    probe_level(&r->host, u.machine);
    return 0;
}
