/* The compatibility rules: does a target run on a device or host, how well, and why. */
#include "model/target_arch.h"

#include <stdio.h>
#include <string.h>

static void set_result(kb_compat *out, kb_fit fit, int closeness, const char *fmt, ...)
    KB_PRINTF(4, 5);

/* closeness (0..99) orders fits within one rank: score = fit*100 + closeness. */
static void set_result(kb_compat *out, kb_fit fit, int closeness, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
    va_end(ap);
    out->fit = fit;
    if (closeness < 0)
        closeness = 0;
    if (closeness > 99)
        closeness = 99;
    out->score = fit == KB_FIT_NONE ? 0 : (int)fit * 100 + closeness;
}

static void refuse(kb_compat *out, const char *fmt, ...) KB_PRINTF(2, 3);

static void refuse(kb_compat *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->reason, sizeof(out->reason), fmt, ap);
    va_end(ap);
    out->fit = KB_FIT_NONE;
    out->score = 0;
}

/* Add a clause to a fitting result's reason ("...; driver version not stated"). */
static void append_reason(kb_compat *out, const char *clause)
{
    size_t len = strlen(out->reason);
    snprintf(out->reason + len, sizeof(out->reason) - len, "; %s", clause);
}

/* ---- CUDA ---- */

static void check_cuda_arch(kb_compat *out, const kb_arch_info *t, const kb_arch_info *d,
                            const char *tarch, const char *darch)
{
    unsigned tn = t->cuda_number, dn = d->cuda_number;
    unsigned tmaj = tn / 10, tmin = tn % 10, dmaj = dn / 10, dmin = dn % 10;
    if (t->cuda_specific) {
        if (tn != dn)
            refuse(out, "%s is arch-specific: it runs only on sm_%u, not on %s", tarch, tn, darch);
        else if (t->cuda_ptx)
            set_result(out, KB_FIT_PTX, 99, "%s PTX is JIT-compiled for %s (arch-specific, exact)",
                       tarch, darch);
        else
            set_result(out, KB_FIT_EXACT, 51, "%s is arch-specific code for exactly %s", tarch,
                       darch);
    } else if (t->cuda_ptx) {
        if (dn >= tn)
            set_result(out, KB_FIT_PTX, 99 - (int)(dn - tn),
                       "%s PTX is JIT-compiled by the driver for %s (%u <= %u; slower first load)",
                       tarch, darch, tn, dn);
        else
            refuse(out, "%s PTX needs sm_%u or newer, the device is %s", tarch, tn, darch);
    } else if (tn == dn) {
        set_result(out, KB_FIT_EXACT, 50, "%s SASS is native code for %s", tarch, darch);
    } else if (tmaj != dmaj) {
        refuse(out, "%s SASS does not run on %s (major %u != %u; SASS runs only within its major)",
               tarch, darch, tmaj, dmaj);
    } else if (tmin <= dmin) {
        set_result(out, KB_FIT_FAMILY, 10 - (int)(dmin - tmin),
                   "%s SASS runs on %s (same major %u, %u <= %u)", tarch, darch, tmaj, tmin, dmin);
    } else {
        refuse(out, "%s SASS does not run on %s (same major %u, but %u > %u)", tarch, darch, tmaj,
               tmin, dmin);
    }
}

/* Since CUDA 11 a binary needs a driver of at least its CUDA major (cudart is static). */
static void check_cuda_driver(kb_compat *out, const kb_target *t, const kb_device *d)
{
    if (d->runtime_any)
        append_reason(out, "driver version not stated, assumed new enough");
    else if (d->runtime_major < t->runtime_major)
        refuse(out, "the driver supports CUDA %u.%u, older than CUDA %u that cuda%u-%s needs",
               d->runtime_major, d->runtime_minor, t->runtime_major, t->runtime_major, t->arch);
}

/* ---- ROCm ---- */

/* Is "dev=tgt" one of the opt-in alias entries? */
static bool alias_maps(const char *aliases, const char *dev, const char *tgt)
{
    if (!aliases)
        return false;
    size_t dl = strlen(dev), tl = strlen(tgt);
    const char *p = aliases;
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p;
        while (len && (*s == ' ' || *s == '\t')) {
            s++;
            len--;
        }
        while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
            len--;
        if (len == dl + 1 + tl && memcmp(s, dev, dl) == 0 && s[dl] == '=' &&
            memcmp(s + dl + 1, tgt, tl) == 0)
            return true;
        if (!comma)
            break;
        p = comma + 1;
    }
    return false;
}

bool kbi_rocm_aliases_valid(const char *aliases, char *why, size_t why_size)
{
    const char *p = aliases ? aliases : "";
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char entry[64], sub[160];
        kb_arch_info a;
        if (len >= sizeof(entry)) {
            snprintf(why, why_size, "alias '%.*s' is too long", (int)len, p);
            return false;
        }
        memcpy(entry, p, len);
        entry[len] = '\0';
        char *eq = strchr(entry, '=');
        if (!eq || strchr(entry, ' ') || strchr(entry, ':')) {
            snprintf(why, why_size, "alias '%s' is not DEVICE=TARGET (e.g. gfx1031=gfx1030)",
                     entry);
            return false;
        }
        *eq = '\0';
        const char *sides[2] = {entry, eq + 1};
        for (int i = 0; i < 2; i++)
            if (!kbi_arch_decode(&a, KB_BACKEND_ROCM, sides[i], true, sub, sizeof(sub))) {
                snprintf(why, why_size, "alias '%s=%s': %s", entry, eq + 1, sub);
                return false;
            }
        if (!comma)
            break;
        p = comma + 1;
    }
    return true;
}

/* gfx1031 takes its native code first, a generic target next, and code of another gfx only
 * through an alias the user opted into: the alias runs code the device was not built for
 * (what HSA_OVERRIDE_GFX_VERSION does), so it ranks under everything AMD supports. */
static void check_rocm_arch(kb_compat *out, const kb_arch_info *t, const kb_arch_info *d,
                            const char *dev_arch, const kb_compat_opts *opts)
{
    const char *aliases = opts ? opts->rocm_aliases : NULL;
    if (t->rocm_generic) {
        if (kbi_rocm_generic_covers(t->gfx, d->gfx))
            set_result(out, KB_FIT_GENERIC, 50,
                       "%s code runs on %s (a generic target covering it, code object v6)", t->gfx,
                       d->gfx);
        else
            refuse(out, "%s does not cover %s", t->gfx, d->gfx);
    } else if (strcmp(t->gfx, d->gfx) == 0) {
        set_result(out, KB_FIT_EXACT, 50, "%s code object is native code for %s", t->gfx, dev_arch);
    } else if (alias_maps(aliases, d->gfx, t->gfx)) {
        set_result(out, KB_FIT_ALIAS, 50,
                   "%s runs %s code through the alias %s=%s from config (rocm.aliases)", d->gfx,
                   t->gfx, d->gfx, t->gfx);
    } else if (strlen(t->gfx) == 7 && strlen(d->gfx) == 7 && memcmp(t->gfx, d->gfx, 6) == 0) {
        refuse(out,
               "%s code does not run on %s (ROCm needs the exact gfx; the alias %s=%s in "
               "rocm.aliases would opt in)",
               t->gfx, d->gfx, d->gfx, t->gfx);
    } else {
        refuse(out, "%s code does not run on %s (ROCm needs the exact gfx)", t->gfx, d->gfx);
    }
}

static const char *feature_text(kb_feature f)
{
    return f == KB_FEATURE_ON ? "+" : f == KB_FEATURE_OFF ? "-" : " unknown";
}

/* A code object that pins a feature loads only on a device running in that mode. An unknown
 * device mode refuses: guessing wrong means a load failure or wrong results under xnack. */
static void check_rocm_feature(kb_compat *out, const char *name, kb_feature t, kb_feature d,
                               const char *dev_arch)
{
    if (out->fit == KB_FIT_NONE || t == KB_FEATURE_ANY)
        return;
    if (d == KB_FEATURE_ANY)
        refuse(out,
               "the target pins %s%s but the device's %s mode is unknown (name it, e.g. "
               "--device %s:%s%s)",
               name, feature_text(t), name, dev_arch, name, feature_text(t));
    else if (t != d)
        refuse(out, "the target needs %s%s but the device runs %s%s", name, feature_text(t), name,
               feature_text(d));
    else if (out->fit == KB_FIT_EXACT)
        out->score++; /* code built for the device's exact mode beats mode-agnostic code */
}

/* The HIP runtime is a shared library whose soname carries its major (libamdhip64.so.6), so a
 * code object linked against one major does not load where only another is installed: the
 * majors must match, where CUDA's statically linked cudart only needs a new enough driver.
 * Generic targets are code object v6, which the runtime loads from ROCm 6.2 on. */
static void check_rocm_runtime(kb_compat *out, const kb_target *t, const kb_arch_info *ta,
                               const kb_device *d)
{
    if (out->fit == KB_FIT_NONE)
        return;
    if (d->runtime_any) {
        append_reason(out, "HIP runtime not stated, assumed new enough");
        return;
    }
    bool minor_ok = d->runtime_minor_unknown || d->runtime_minor >= 2;
    if (d->runtime_major == 0)
        refuse(out, "rocm%u-%s needs libamdhip64.so.%u; no HIP runtime was found on this host",
               t->runtime_major, t->arch, t->runtime_major);
    else if (d->runtime_major != t->runtime_major)
        refuse(out,
               "rocm%u-%s needs libamdhip64.so.%u (HIP runtime %u), the host has HIP runtime "
               "%u.%u (libamdhip64.so.%u)",
               t->runtime_major, t->arch, t->runtime_major, t->runtime_major, d->runtime_major,
               d->runtime_minor, d->runtime_major);
    else if (ta->rocm_generic && d->runtime_major == 6 && !minor_ok)
        refuse(out,
               "generic code objects (%s) are code object v6, which ROCm loads from 6.2 on; the "
               "device has ROCm %u.%u",
               ta->gfx, d->runtime_major, d->runtime_minor);
}

/* ---- Metal, CPU ---- */

static void check_metal(kb_compat *out, const kb_target *t, const kb_device *d)
{
    set_result(out, KB_FIT_EXACT, 50, "metal%u metallib runs on the apple GPU", t->runtime_major);
    if (d->runtime_any)
        append_reason(out, "Metal version not stated, assumed new enough");
    else if (d->runtime_major < t->runtime_major)
        refuse(out, "the device supports Metal %u, the target needs Metal %u", d->runtime_major,
               t->runtime_major);
}

static void check_cpu(kb_compat *out, const kb_arch_info *t, const kb_arch_info *d,
                      const char *tarch, const char *darch)
{
    if (t->cpu_aarch64 || d->cpu_aarch64) {
        if (t->cpu_aarch64 && d->cpu_aarch64)
            set_result(out, KB_FIT_CPU, 1, "aarch64 code runs on an aarch64 CPU");
        else
            refuse(out, "%s code does not run on an %s CPU", tarch, darch);
    } else if (t->cpu_level <= d->cpu_level) {
        set_result(out, KB_FIT_CPU, (int)t->cpu_level, "%s code runs on an %s CPU (v%u <= v%u)",
                   tarch, darch, t->cpu_level, d->cpu_level);
    } else {
        refuse(out, "%s code needs an x86_64_v%u CPU, this one is %s", tarch, t->cpu_level, darch);
    }
}

void kbi_compat_check(kb_compat *out, const kb_target *t, const kb_device *d,
                      const kb_compat_opts *opts)
{
    memset(out, 0, sizeof(*out));
    kb_arch_info ta, da;
    char why[160];
    if (t->backend != d->backend) {
        refuse(out, "a %s target does not run on a %s device (%s)", kbi_backend_name(t->backend),
               kbi_backend_name(d->backend), d->arch);
        return;
    }
    if (!kbi_arch_decode(&ta, t->backend, t->arch, false, why, sizeof(why))) {
        refuse(out, "bad target arch: %s", why);
        return;
    }
    if (!kbi_arch_decode(&da, d->backend, d->arch, true, why, sizeof(why))) {
        refuse(out, "bad device arch: %s", why);
        return;
    }
    switch (t->backend) {
    case KB_BACKEND_CUDA:
        check_cuda_arch(out, &ta, &da, t->arch, d->arch);
        if (out->fit != KB_FIT_NONE)
            check_cuda_driver(out, t, d);
        break;
    case KB_BACKEND_ROCM:
        check_rocm_arch(out, &ta, &da, d->arch, opts);
        check_rocm_feature(out, "sramecc", ta.sramecc, da.sramecc, da.gfx);
        check_rocm_feature(out, "xnack", ta.xnack, da.xnack, da.gfx);
        check_rocm_runtime(out, t, &ta, d);
        break;
    case KB_BACKEND_METAL:
        check_metal(out, t, d);
        break;
    case KB_BACKEND_CPU:
        check_cpu(out, &ta, &da, t->arch, d->arch);
        break;
    default:
        refuse(out, "no backend");
    }
}

/* ---- the host: its platform, its GPUs, its CPU ---- */

static bool is_gpu(const kb_device *d)
{
    return d->backend == KB_BACKEND_CUDA || d->backend == KB_BACKEND_ROCM ||
           d->backend == KB_BACKEND_METAL;
}

static const kb_device *first_gpu(const kb_host *host)
{
    for (size_t i = 0; i < host->device_count; i++)
        if (is_gpu(&host->devices[i]))
            return &host->devices[i];
    return NULL;
}

/* The CPU as a device: the probed level, else a CPU named in the device list. */
static bool host_cpu_device(kb_device *cpu, const kb_host *host)
{
    memset(cpu, 0, sizeof(*cpu));
    cpu->backend = KB_BACKEND_CPU;
    const char *level = host->cpu_level;
    for (size_t i = 0; !*level && i < host->device_count; i++)
        if (host->devices[i].backend == KB_BACKEND_CPU)
            level = host->devices[i].arch;
    if (!*level && kbi_host_arch_equal(host->cpu_arch, "aarch64"))
        level = "aarch64";
    if (!*level)
        return false;
    snprintf(cpu->arch, sizeof(cpu->arch), "%s", level);
    return true;
}

static void check_host_cpu_target(kb_compat *out, const kb_target *t, const kb_host *host,
                                  const kb_compat_opts *opts)
{
    const kb_device *gpu = first_gpu(host);
    bool allow = opts && opts->allow_cpu_with_gpu;
    kb_device cpu;
    if (gpu && !allow) {
        refuse(out, "CPU fallback is not used while a usable GPU is present (%s %s)",
               kbi_backend_name(gpu->backend), gpu->arch);
        return;
    }
    if (!host_cpu_device(&cpu, host)) {
        refuse(out, "the host's CPU level is unknown (name it, e.g. --device x86_64_v3)");
        return;
    }
    kbi_compat_check(out, t, &cpu, opts);
    if (out->fit != KB_FIT_NONE)
        append_reason(out, gpu ? "CPU fallback allowed next to the GPU" : "no usable GPU");
}

static void check_host_gpu_target(kb_compat *out, const kb_target *t, const kb_host *host,
                                  const kb_compat_opts *opts)
{
    bool seen = false;
    for (size_t i = 0; i < host->device_count; i++) {
        const kb_device *d = &host->devices[i];
        if (d->backend != t->backend)
            continue;
        kb_compat one;
        kbi_compat_check(&one, t, d, opts);
        /* The first refusal explains; a later fit or a better fit replaces it. */
        if (!seen || one.score > out->score)
            *out = one;
        seen = true;
    }
    if (!seen) {
        const kb_device *gpu = first_gpu(host);
        if (gpu)
            refuse(out, "no %s device on this host (it has %s %s)", kbi_backend_name(t->backend),
                   kbi_backend_name(gpu->backend), gpu->arch);
        else
            refuse(out, "no %s device on this host (no GPU)", kbi_backend_name(t->backend));
    }
}

void kbi_compat_check_host(kb_compat *out, const kb_target *t, const kb_host *host,
                           const kb_compat_opts *opts)
{
    memset(out, 0, sizeof(*out));
    /* The host binary must load at all: same CPU arch and OS (unknown parts are not checked). */
    bool arch_ok = !*host->cpu_arch || kbi_host_arch_equal(t->host_arch, host->cpu_arch);
    bool os_ok = !*host->os || strcmp(t->host_os, host->os) == 0;
    if (!arch_ok || !os_ok) {
        refuse(out, "the target is built for %s-%s, this host is %s-%s", t->host_arch, t->host_os,
               *host->cpu_arch ? host->cpu_arch : "?", *host->os ? host->os : "?");
        return;
    }
    if (t->backend == KB_BACKEND_CPU)
        check_host_cpu_target(out, t, host, opts);
    else
        check_host_gpu_target(out, t, host, opts);
}

int kbi_target_rank_cmp(const char *target_a, const kb_compat *a, const char *target_b,
                        const kb_compat *b)
{
    if (a->score != b->score)
        return (b->score > a->score) - (b->score < a->score);
    /* Equal fits (two SASS archs of one distance cannot tie, but a mirror may list one target
     * twice, or a lockfile two equivalent pins): the target id decides, so the same candidates
     * give the same choice whatever order a registry, lockfile or folder listing gave them. */
    return strcmp(target_a ? target_a : "", target_b ? target_b : "");
}
