/* Host CPU detection: x86-64 level from cpuid and XCR0, or the machine name elsewhere. */
#include "probe/cpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#define KB_HAVE_CPUID 1
#endif

int kbi_x86_level(const kb_x86_features *f)
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

void kbi_host_platform(char *arch, size_t arch_size, char *os, size_t os_size)
{
    struct utsname u;
    if (uname(&u) != 0) {
        snprintf(arch, arch_size, "unknown");
        snprintf(os, os_size, "unknown");
        return;
    }
    /* Target ids spell the machine as Linux does: macOS and the BSDs say arm64 and amd64. */
    const char *machine = u.machine;
    if (strcmp(machine, "amd64") == 0)
        machine = "x86_64";
    else if (strcmp(machine, "arm64") == 0)
        machine = "aarch64";
    snprintf(arch, arch_size, "%s", machine);
    size_t i = 0; /* Linux -> linux, Darwin -> darwin */
    for (; u.sysname[i] && i + 1 < os_size; i++)
        os[i] =
            (char)(u.sysname[i] >= 'A' && u.sysname[i] <= 'Z' ? u.sysname[i] + 32 : u.sysname[i]);
    if (os_size)
        os[i] = '\0';
}

void kbi_cpu_host(char *arch, size_t arch_size, char *level, size_t level_size)
{
#ifdef KB_HAVE_CPUID
    kb_x86_features f;
    read_x86_features(&f);
    snprintf(arch, arch_size, "x86_64");
    snprintf(level, level_size, "x86_64_v%d", kbi_x86_level(&f));
#else
    char os[16];
    kbi_host_platform(arch, arch_size, os, sizeof(os));
    snprintf(level, level_size, "%s", arch);
#endif
}

/* The value after "key<spaces>:" on line, trimmed; NULL when line is not that key's. */
static const char *cpuinfo_value(const char *line, const char *key)
{
    size_t n = strlen(key);
    if (strncmp(line, key, n) != 0)
        return NULL;
    line += n;
    while (*line == ' ' || *line == '\t')
        line++;
    if (*line++ != ':')
        return NULL;
    while (*line == ' ')
        line++;
    return line;
}

void kbi_cpu_model(char *name, size_t name_size, double *mhz, const char *cpuinfo)
{
    if (name_size)
        name[0] = '\0';
    *mhz = 0;
    FILE *f = fopen(cpuinfo ? cpuinfo : "/proc/cpuinfo", "r");
    char line[512];
    bool have_name = false, have_mhz = false;
    while (f && (!have_name || !have_mhz) && fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        const char *v = cpuinfo_value(line, "model name");
        if (v && !have_name) {
            snprintf(name, name_size, "%s", v);
            have_name = true;
        }
        v = cpuinfo_value(line, "cpu MHz");
        if (v && !have_mhz) {
            *mhz = strtod(v, NULL);
            have_mhz = true;
        }
    }
    if (f)
        fclose(f);
}

static const char *const cpu_levels[] = {"x86_64_v1", "x86_64_v2", "x86_64_v3", "x86_64_v4",
                                         "aarch64"};

bool kbi_cpu_level_valid(const char *level)
{
    for (size_t i = 0; level && i < sizeof(cpu_levels) / sizeof(cpu_levels[0]); i++)
        if (strcmp(level, cpu_levels[i]) == 0)
            return true;
    return false;
}

const char *kbi_cpu_level_arch(const char *level)
{
    return strncmp(level, "x86_64", 6) == 0 ? "x86_64" : "aarch64";
}
