/* Compatibility rules as a table: target x device list x host x options -> fit and reason. */
#include "kbtest.h"

#include "model/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum host_preset {
    HOST_X86_V3 = 0, /* the default: x86_64-linux, x86_64_v3 */
    HOST_X86_V2,
    HOST_X86_V4,
    HOST_ARM_LINUX,
    HOST_MAC,
} host_preset;

typedef struct compat_case {
    const char *target;
    const char *devices;
    host_preset host;
    const char *aliases;
    bool allow_cpu;
    kb_fit fit;
    const char *reason; /* a substring the one-line reason must contain */
} compat_case;

#define X86 HOST_X86_V3
#define NOAL NULL

static const compat_case cases[] = {
    /* CUDA SASS: same major, device minor >= target minor */
    {"cuda13-sm_86-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_EXACT,
     "sm_86 SASS is native code for sm_86"},
    {"cuda13-sm_80-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_FAMILY,
     "sm_80 SASS runs on sm_86 (same major 8, 0 <= 6)"},
    {"cuda13-sm_86-x86_64-linux", "sm_89", X86, NOAL, false, KB_FIT_FAMILY, "same major 8, 6 <= 9"},
    {"cuda13-sm_89-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_NONE,
     "sm_89 SASS does not run on sm_86 (same major 8, but 9 > 6)"},
    {"cuda13-sm_90-x86_64-linux", "sm_89", X86, NOAL, false, KB_FIT_NONE, "major 9 != 8"},
    {"cuda13-sm_90-x86_64-linux", "sm_100", X86, NOAL, false, KB_FIT_NONE, "major 9 != 10"},
    {"cuda13-sm_120-x86_64-linux", "sm_121", X86, NOAL, false, KB_FIT_FAMILY,
     "same major 12, 0 <= 1"},
    {"cuda13-sm_75-x86_64-linux", "sm_70", X86, NOAL, false, KB_FIT_NONE, "major 7, but 5 > 0"},
    /* arch-specific 'a': exactly that arch */
    {"cuda13-sm_90a-x86_64-linux", "sm_90", X86, NOAL, false, KB_FIT_EXACT,
     "sm_90a is arch-specific code for exactly sm_90"},
    {"cuda13-sm_90a-x86_64-linux", "sm_89", X86, NOAL, false, KB_FIT_NONE,
     "runs only on sm_90, not on sm_89"},
    {"cuda13-sm_90a-x86_64-linux", "sm_100", X86, NOAL, false, KB_FIT_NONE,
     "runs only on sm_90, not on sm_100"},
    {"cuda13-sm_100a-x86_64-linux", "sm_100", X86, NOAL, false, KB_FIT_EXACT, "exactly sm_100"},
    {"cuda13-sm_100a-x86_64-linux", "sm_103", X86, NOAL, false, KB_FIT_NONE,
     "runs only on sm_100, not on sm_103"},
    {"cuda13-compute_90a-x86_64-linux", "sm_90", X86, NOAL, false, KB_FIT_PTX,
     "compute_90a PTX is JIT-compiled for sm_90 (arch-specific, exact)"},
    {"cuda13-compute_90a-x86_64-linux", "sm_100", X86, NOAL, false, KB_FIT_NONE,
     "compute_90a is arch-specific: it runs only on sm_90, not on sm_100"},
    /* PTX: any device >= XY, across majors */
    {"cuda13-compute_80-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_PTX,
     "compute_80 PTX is JIT-compiled by the driver for sm_86 (80 <= 86"},
    {"cuda13-compute_80-x86_64-linux", "sm_90", X86, NOAL, false, KB_FIT_PTX, "80 <= 90"},
    {"cuda13-compute_80-x86_64-linux", "sm_120", X86, NOAL, false, KB_FIT_PTX, "80 <= 120"},
    {"cuda13-compute_75-x86_64-linux", "sm_75", X86, NOAL, false, KB_FIT_PTX, "75 <= 75"},
    {"cuda13-compute_90-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_NONE,
     "compute_90 PTX needs sm_90 or newer, the device is sm_86"},
    /* the driver's CUDA major */
    {"cuda13-sm_86-x86_64-linux", "sm_86@cuda12.4", X86, NOAL, false, KB_FIT_NONE,
     "the driver supports CUDA 12.4, older than CUDA 13 that cuda13-sm_86 needs"},
    {"cuda13-compute_80-x86_64-linux", "sm_86@cuda12.4", X86, NOAL, false, KB_FIT_NONE,
     "supports CUDA 12.4"},
    {"cuda13-sm_86-x86_64-linux", "sm_86@cuda13.0", X86, NOAL, false, KB_FIT_EXACT, "native code"},
    {"cuda13-sm_80-x86_64-linux", "sm_86@cuda14.1", X86, NOAL, false, KB_FIT_FAMILY, "0 <= 6"},
    {"cuda13-sm_86-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_EXACT,
     "driver version not stated, assumed new enough"},
    /* several devices: the best one answers */
    {"cuda13-sm_86-x86_64-linux", "sm_75,sm_86", X86, NOAL, false, KB_FIT_EXACT, "native"},
    {"cuda13-sm_80-x86_64-linux", "sm_75,sm_70", X86, NOAL, false, KB_FIT_NONE,
     "sm_80 SASS does not run on sm_75"},
    /* cross backend */
    {"cuda13-sm_86-x86_64-linux", "gfx1030", X86, NOAL, false, KB_FIT_NONE,
     "no cuda device on this host (it has rocm gfx1030)"},
    {"rocm5-gfx1030-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_NONE,
     "no rocm device on this host (it has cuda sm_86)"},
    {"cuda13-compute_75-x86_64-linux", "none", X86, NOAL, false, KB_FIT_NONE,
     "no cuda device on this host (no GPU)"},
    /* ROCm: exact gfx, opt-in aliases */
    {"rocm5-gfx1030-x86_64-linux", "gfx1030@rocm5.2", X86, NOAL, false, KB_FIT_EXACT,
     "gfx1030 code object is native code for gfx1030"},
    {"rocm5-gfx1030-x86_64-linux", "gfx1031@rocm5.2", X86, NOAL, false, KB_FIT_NONE,
     "gfx1030 code does not run on gfx1031 (ROCm needs the exact gfx; the alias gfx1031=gfx1030 "
     "in rocm.aliases would opt in)"},
    {"rocm5-gfx1030-x86_64-linux", "gfx1031@rocm5.2", X86, "gfx1031=gfx1030", false, KB_FIT_ALIAS,
     "gfx1031 runs gfx1030 code through the alias gfx1031=gfx1030 from config"},
    {"rocm5-gfx1030-x86_64-linux", "gfx1031", X86, "gfx1032=gfx1030, gfx1031=gfx1030", false,
     KB_FIT_ALIAS, "alias gfx1031=gfx1030"},
    {"rocm5-gfx1030-x86_64-linux", "gfx1031", X86, "gfx1032=gfx1030", false, KB_FIT_NONE,
     "ROCm needs the exact gfx"},
    {"rocm5-gfx1030-x86_64-linux", "gfx1031", X86, "gfx1030=gfx1031", false, KB_FIT_NONE,
     "ROCm needs the exact gfx"},
    {"rocm5-gfx1100-x86_64-linux", "gfx1030", X86, NOAL, false, KB_FIT_NONE,
     "gfx1100 code does not run on gfx1030 (ROCm needs the exact gfx)"},
    /* ROCm features: a pinned feature needs the device to agree */
    {"rocm6-gfx90a:xnack+-x86_64-linux", "gfx90a:xnack+@rocm6.1", X86, NOAL, false, KB_FIT_EXACT,
     "native code for gfx90a:xnack+"},
    {"rocm6-gfx90a:xnack+-x86_64-linux", "gfx90a:xnack-@rocm6.1", X86, NOAL, false, KB_FIT_NONE,
     "the target needs xnack+ but the device runs xnack-"},
    {"rocm6-gfx90a:xnack--x86_64-linux", "gfx90a@rocm6.1", X86, NOAL, false, KB_FIT_NONE,
     "the target pins xnack- but the device's xnack mode is unknown"},
    {"rocm6-gfx90a-x86_64-linux", "gfx90a:xnack+@rocm6.1", X86, NOAL, false, KB_FIT_EXACT,
     "native code"},
    {"rocm6-gfx90a-x86_64-linux", "gfx90a:sramecc-:xnack-@rocm6.1", X86, NOAL, false, KB_FIT_EXACT,
     "native code"},
    {"rocm6-gfx90a:sramecc+-x86_64-linux", "gfx90a:sramecc-:xnack+@rocm6.1", X86, NOAL, false,
     KB_FIT_NONE, "the target needs sramecc+ but the device runs sramecc-"},
    {"rocm6-gfx90a:sramecc+:xnack--x86_64-linux", "gfx90a:xnack-:sramecc+@rocm6.2", X86, NOAL,
     false, KB_FIT_EXACT, "native code for gfx90a:sramecc+:xnack-"},
    {"rocm6-gfx942:sramecc+-x86_64-linux", "gfx942:xnack-@rocm6.2", X86, NOAL, false, KB_FIT_NONE,
     "device's sramecc mode is unknown"},
    /* generic targets: covered processors, code object v6: ROCm 6.2+ */
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1100@rocm6.2", X86, NOAL, false, KB_FIT_GENERIC,
     "gfx11-generic code runs on gfx1100"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1100@rocm5.2", X86, NOAL, false, KB_FIT_NONE,
     "needs libamdhip64.so.6 (HIP runtime 6), the host has HIP runtime 5.2"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1100@rocm6.0", X86, NOAL, false, KB_FIT_NONE,
     "code object v6, which ROCm loads from 6.2 on; the device has ROCm 6.0"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1100@rocm6.1", X86, NOAL, false, KB_FIT_NONE,
     "which ROCm loads from 6.2 on; the device has ROCm 6.1"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1100@rocm6", X86, NOAL, false, KB_FIT_GENERIC,
     "covering it"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1151@rocm6.2", X86, NOAL, false, KB_FIT_GENERIC,
     "gfx1151"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1152", X86, NOAL, false, KB_FIT_GENERIC, "gfx1152"},
    {"rocm6-gfx11-generic-x86_64-linux", "gfx1200@rocm6.3", X86, NOAL, false, KB_FIT_NONE,
     "gfx11-generic does not cover gfx1200"},
    {"rocm6-gfx10-3-generic-x86_64-linux", "gfx1031", X86, NOAL, false, KB_FIT_GENERIC,
     "HIP runtime not stated, assumed new enough"},
    {"rocm6-gfx10-1-generic-x86_64-linux", "gfx1030", X86, NOAL, false, KB_FIT_NONE,
     "does not cover gfx1030"},
    {"rocm6-gfx9-generic-x86_64-linux", "gfx906@rocm6.2", X86, NOAL, false, KB_FIT_GENERIC,
     "gfx906"},
    {"rocm6-gfx9-generic-x86_64-linux", "gfx90a@rocm6.2", X86, NOAL, false, KB_FIT_NONE,
     "gfx9-generic does not cover gfx90a"},
    {"rocm6-gfx9-4-generic-x86_64-linux", "gfx942:sramecc+:xnack-@rocm6.2", X86, NOAL, false,
     KB_FIT_GENERIC, "gfx9-4-generic code runs on gfx942"},
    {"rocm6-gfx12-generic-x86_64-linux", "gfx1201@rocm6.4", X86, NOAL, false, KB_FIT_GENERIC,
     "gfx1201"},
    /* the new archs natively, on the runtime major they were linked against */
    {"rocm6-gfx942-x86_64-linux", "gfx942:sramecc+:xnack-@rocm6.2", X86, NOAL, false, KB_FIT_EXACT,
     "native code for gfx942"},
    {"rocm6-gfx1151-x86_64-linux", "gfx1151@rocm6.2", X86, NOAL, false, KB_FIT_EXACT,
     "native code for gfx1151"},
    {"rocm6-gfx1201-x86_64-linux", "gfx1201@rocm6.3", X86, NOAL, false, KB_FIT_EXACT,
     "native code for gfx1201"},
    {"rocm6-gfx1200-x86_64-linux", "gfx1201@rocm6.3", X86, NOAL, false, KB_FIT_NONE,
     "gfx1200 code does not run on gfx1201 (ROCm needs the exact gfx; the alias"},
    {"rocm6-gfx1031-x86_64-linux", "gfx1031@rocm6.2", X86, NOAL, false, KB_FIT_EXACT,
     "native code for gfx1031"},
    /* HIP runtime majors: libamdhip64.so.N must be the one the code object was linked to */
    {"rocm6-gfx942-x86_64-linux", "gfx942@rocm5.7", X86, NOAL, false, KB_FIT_NONE,
     "rocm6-gfx942 needs libamdhip64.so.6 (HIP runtime 6), the host has HIP runtime 5.7"},
    {"rocm5-gfx1030-x86_64-linux", "gfx1030@rocm6.2", X86, NOAL, false, KB_FIT_NONE,
     "needs libamdhip64.so.5 (HIP runtime 5), the host has HIP runtime 6.2 (libamdhip64.so.6)"},
    {"rocm5-gfx1030-x86_64-linux", "gfx1030@rocm5.2", X86, NOAL, false, KB_FIT_EXACT, "native"},
    {"rocm5-gfx90a-x86_64-linux", "gfx90a@rocm6.1", X86, NOAL, false, KB_FIT_NONE,
     "needs libamdhip64.so.5"},
    /* Metal */
    {"metal3-apple-arm64-darwin", "apple", HOST_MAC, NOAL, false, KB_FIT_EXACT,
     "metal3 metallib runs on the apple GPU"},
    {"metal3-apple-arm64-darwin", "apple@metal3", HOST_MAC, NOAL, false, KB_FIT_EXACT, "apple"},
    {"metal3-apple-arm64-darwin", "apple@metal2", HOST_MAC, NOAL, false, KB_FIT_NONE,
     "the device supports Metal 2, the target needs Metal 3"},
    {"metal3-apple-arm64-darwin", "apple", X86, NOAL, false, KB_FIT_NONE,
     "the target is built for arm64-darwin, this host is x86_64-linux"},
    /* CPU levels and host platform */
    {"cpu-x86_64_v3-x86_64-linux", "none", X86, NOAL, false, KB_FIT_CPU,
     "x86_64_v3 code runs on an x86_64_v3 CPU (v3 <= v3); no usable GPU"},
    {"cpu-x86_64_v3-x86_64-linux", "none", HOST_X86_V2, NOAL, false, KB_FIT_NONE,
     "x86_64_v3 code needs an x86_64_v3 CPU, this one is x86_64_v2"},
    {"cpu-x86_64_v3-x86_64-linux", "none", HOST_X86_V4, NOAL, false, KB_FIT_CPU, "v3 <= v4"},
    {"cpu-x86_64_v4-x86_64-linux", "none", X86, NOAL, false, KB_FIT_NONE, "needs an x86_64_v4 CPU"},
    {"cpu-x86_64_v2-x86_64-linux", "none", HOST_X86_V2, NOAL, false, KB_FIT_CPU, "v2 <= v2"},
    {"cpu-aarch64-aarch64-linux", "none", HOST_ARM_LINUX, NOAL, false, KB_FIT_CPU,
     "aarch64 code runs on an aarch64 CPU"},
    {"cpu-aarch64-aarch64-linux", "none", X86, NOAL, false, KB_FIT_NONE,
     "the target is built for aarch64-linux, this host is x86_64-linux"},
    {"cpu-x86_64_v2-x86_64-linux", "none", HOST_ARM_LINUX, NOAL, false, KB_FIT_NONE,
     "built for x86_64-linux, this host is aarch64-linux"},
    {"cpu-aarch64-arm64-darwin", "none", HOST_MAC, NOAL, false, KB_FIT_CPU, "aarch64"},
    {"cuda13-sm_86-x86_64-linux", "sm_86", HOST_ARM_LINUX, NOAL, false, KB_FIT_NONE,
     "this host is aarch64-linux"},
    {"cuda13-sm_90-aarch64-linux", "sm_90", HOST_ARM_LINUX, NOAL, false, KB_FIT_EXACT,
     "native code for sm_90"},
    /* CPU next to a GPU: only when allowed */
    {"cpu-x86_64_v3-x86_64-linux", "sm_86", X86, NOAL, false, KB_FIT_NONE,
     "CPU fallback is not used while a usable GPU is present (cuda sm_86)"},
    {"cpu-x86_64_v3-x86_64-linux", "sm_86", X86, NOAL, true, KB_FIT_CPU,
     "CPU fallback allowed next to the GPU"},
    {"cpu-x86_64_v3-x86_64-linux", "gfx1030", HOST_X86_V2, NOAL, true, KB_FIT_NONE,
     "needs an x86_64_v3 CPU"},
};

static void make_host(kb_host *h, host_preset preset)
{
    static const struct {
        const char *arch, *level, *os;
    } presets[] = {
        {"x86_64", "x86_64_v3", "linux"}, {"x86_64", "x86_64_v2", "linux"},
        {"x86_64", "x86_64_v4", "linux"}, {"aarch64", "aarch64", "linux"},
        {"arm64", "aarch64", "darwin"},
    };
    memset(h, 0, sizeof(*h));
    snprintf(h->cpu_arch, sizeof(h->cpu_arch), "%s", presets[preset].arch);
    snprintf(h->cpu_level, sizeof(h->cpu_level), "%s", presets[preset].level);
    snprintf(h->os, sizeof(h->os), "%s", presets[preset].os);
}

static const char *fit_name(kb_fit f)
{
    switch (f) {
    case KB_FIT_EXACT:
        return "exact";
    case KB_FIT_FAMILY:
        return "family";
    case KB_FIT_GENERIC:
        return "generic";
    case KB_FIT_ALIAS:
        return "alias";
    case KB_FIT_PTX:
        return "ptx";
    case KB_FIT_LOCAL_BUILD:
        return "local-build";
    case KB_FIT_CPU:
        return "cpu";
    default:
        return "none";
    }
}

/* Run one case through the host check; with one GPU device also through the device check,
 * which must agree. */
static void run_case(kb_ctx *ctx, size_t i, const compat_case *c)
{
    kb_target t;
    cr_assert_eq(kbi_target_parse(ctx, &t, c->target), 0, "case %zu: %s: %s", i, c->target,
                 kb_ctx_last_error(ctx)->message);
    kb_host host;
    make_host(&host, c->host);
    cr_assert_eq(kbi_devices_parse(ctx, &host.devices, &host.device_count, c->devices), 0,
                 "case %zu: %s: %s", i, c->devices, kb_ctx_last_error(ctx)->message);
    kb_compat_opts opts = {c->aliases, c->allow_cpu};
    kb_compat r;
    kbi_compat_check_host(&r, &t, &host, &opts);
    cr_expect_eq(r.fit, c->fit, "case %zu: %s on %s: expected %s, got %s (%s)", i, c->target,
                 c->devices, fit_name(c->fit), fit_name(r.fit), r.reason);
    cr_expect(strstr(r.reason, c->reason), "case %zu: %s on %s: reason '%s' lacks '%s'", i,
              c->target, c->devices, r.reason, c->reason);
    cr_expect_eq(r.score == 0, c->fit == KB_FIT_NONE, "case %zu: score %d", i, r.score);
    if (c->fit != KB_FIT_NONE)
        cr_expect(r.score >= (int)c->fit * 100 && r.score < (int)c->fit * 100 + 100,
                  "case %zu: score %d outside its rank", i, r.score);
    if (host.device_count == 1 && host.devices[0].backend == t.backend &&
        t.backend != KB_BACKEND_CPU && c->host == X86 && strstr(c->target, "x86_64-linux")) {
        kb_compat d;
        kbi_compat_check(&d, &t, &host.devices[0], &opts);
        cr_expect_eq(d.fit, r.fit, "case %zu: device check disagrees: %s", i, d.reason);
        cr_expect_str_eq(d.reason, r.reason, "case %zu", i);
    }
    kbi_host_free(&host);
}

Test(compat, table)
{
    cr_assert_geq(KB_ARRAY_LEN(cases), 50, "the table must hold at least 50 cases");
    kb_ctx *ctx = kbt_ctx();
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++)
        run_case(ctx, i, &cases[i]);
    kb_ctx_free(ctx);
}

Test(compat, device_check_refuses_other_backend)
{
    kb_ctx *ctx = kbt_ctx();
    kb_target t;
    kb_device *d;
    size_t n;
    cr_assert_eq(kbi_target_parse(ctx, &t, "cuda13-sm_86-x86_64-linux"), 0);
    cr_assert_eq(kbi_devices_parse(ctx, &d, &n, "gfx1030@rocm6.1,x86_64_v3"), 0);
    kb_compat r;
    kbi_compat_check(&r, &t, &d[0], NULL);
    cr_expect_eq(r.fit, KB_FIT_NONE);
    cr_expect_str_eq(r.reason, "a cuda target does not run on a rocm device (gfx1030)");
    kbi_compat_check(&r, &t, &d[1], NULL);
    cr_expect_str_eq(r.reason, "a cuda target does not run on a cpu device (x86_64_v3)");
    kbi_devices_free(d);
    kb_ctx_free(ctx);
}

/* ---- ranking: sort candidates for one host, best first ---- */

typedef struct ranked {
    const char *id;
    kb_compat c;
} ranked;

static int by_rank(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    return kbi_target_rank_cmp(x->id, &x->c, y->id, &y->c);
}

/* Rank ids on a host made from devices; expect the fitting ones in exactly `order`. */
static void expect_order(const char *const *ids, size_t n, const char *devices, host_preset preset,
                         const kb_compat_opts *opts, const char *const *order, size_t n_order)
{
    kb_ctx *ctx = kbt_ctx();
    kb_host host;
    make_host(&host, preset);
    cr_assert_eq(kbi_devices_parse(ctx, &host.devices, &host.device_count, devices), 0);
    ranked *r = calloc(n, sizeof(*r));
    cr_assert(r);
    for (size_t i = 0; i < n; i++) {
        kb_target t;
        cr_assert_eq(kbi_target_parse(ctx, &t, ids[i]), 0, "%s", ids[i]);
        r[i].id = ids[i];
        kbi_compat_check_host(&r[i].c, &t, &host, opts);
    }
    qsort(r, n, sizeof(*r), by_rank);
    size_t fitting = 0;
    while (fitting < n && r[fitting].c.fit != KB_FIT_NONE)
        fitting++;
    cr_expect_eq(fitting, n_order, "on %s: %zu fit, expected %zu", devices, fitting, n_order);
    for (size_t i = 0; i < n_order && i < fitting; i++)
        cr_expect_str_eq(r[i].id, order[i], "on %s: rank %zu is %s (%s), expected %s", devices,
                         i + 1, r[i].id, r[i].c.reason, order[i]);
    free(r);
    kbi_host_free(&host);
    kb_ctx_free(ctx);
}

Test(compat, rank_sm86_prefers_exact_then_closest_sass_then_ptx)
{
    const char *ids[] = {"cuda13-compute_75-x86_64-linux", "cuda13-sm_80-x86_64-linux",
                         "cuda13-compute_80-x86_64-linux", "cuda13-sm_86-x86_64-linux",
                         "cuda13-sm_89-x86_64-linux",      "cuda13-sm_90-x86_64-linux",
                         "cpu-x86_64_v3-x86_64-linux"};
    const char *order[] = {"cuda13-sm_86-x86_64-linux", "cuda13-sm_80-x86_64-linux",
                           "cuda13-compute_80-x86_64-linux", "cuda13-compute_75-x86_64-linux"};
    expect_order(ids, KB_ARRAY_LEN(ids), "sm_86", X86, NULL, order, KB_ARRAY_LEN(order));
}

Test(compat, rank_without_exact_sass_takes_closest_minor)
{
    const char *ids[] = {"cuda13-sm_80-x86_64-linux", "cuda13-compute_80-x86_64-linux",
                         "cuda13-sm_86-x86_64-linux", "cuda13-sm_87-x86_64-linux"};
    const char *order[] = {"cuda13-sm_87-x86_64-linux", "cuda13-sm_86-x86_64-linux",
                           "cuda13-sm_80-x86_64-linux", "cuda13-compute_80-x86_64-linux"};
    expect_order(ids, KB_ARRAY_LEN(ids), "sm_89", X86, NULL, order, KB_ARRAY_LEN(order));
}

Test(compat, rank_sm90_specific_over_plain_over_ptx)
{
    const char *ids[] = {"cuda13-compute_80-x86_64-linux", "cuda13-sm_90-x86_64-linux",
                         "cuda13-compute_90-x86_64-linux", "cuda13-sm_90a-x86_64-linux",
                         "cuda13-sm_100a-x86_64-linux"};
    const char *order[] = {"cuda13-sm_90a-x86_64-linux", "cuda13-sm_90-x86_64-linux",
                           "cuda13-compute_90-x86_64-linux", "cuda13-compute_80-x86_64-linux"};
    expect_order(ids, KB_ARRAY_LEN(ids), "sm_90@cuda13.0", X86, NULL, order, KB_ARRAY_LEN(order));
}

/* gfx1031 (RX 6700 XT): native code, then the generic gfx10-3 code AMD supports on it, then
 * gfx1030 code only through the alias the user opted into. */
Test(compat, rank_rocm_native_then_generic_then_alias)
{
    const char *ids[] = {"rocm6-gfx10-3-generic-x86_64-linux", "rocm6-gfx1030-x86_64-linux",
                         "rocm6-gfx1031-x86_64-linux", "rocm6-gfx1100-x86_64-linux",
                         "rocm5-gfx1031-x86_64-linux"};
    const char *order[] = {"rocm6-gfx1031-x86_64-linux", "rocm6-gfx10-3-generic-x86_64-linux",
                           "rocm6-gfx1030-x86_64-linux"};
    kb_compat_opts opts = {"gfx1031=gfx1030", false};
    expect_order(ids, KB_ARRAY_LEN(ids), "gfx1031@rocm6.2", X86, &opts, order, KB_ARRAY_LEN(order));
    /* without the alias only the native and the generic code fit */
    const char *plain[] = {"rocm6-gfx1031-x86_64-linux", "rocm6-gfx10-3-generic-x86_64-linux"};
    expect_order(ids, KB_ARRAY_LEN(ids), "gfx1031@rocm6.2", X86, NULL, plain, KB_ARRAY_LEN(plain));
    /* ROCm 6.1 cannot load the generic code object v6: the alias is what is left */
    const char *old_rt[] = {"rocm6-gfx1031-x86_64-linux", "rocm6-gfx1030-x86_64-linux"};
    expect_order(ids, KB_ARRAY_LEN(ids), "gfx1031@rocm6.1", X86, &opts, old_rt,
                 KB_ARRAY_LEN(old_rt));
}

/* The opt-in alias ranks under a generic target but above building from source. */
Test(compat, rank_alias_between_generic_and_local_build)
{
    cr_expect_gt((int)KB_FIT_GENERIC * 100, (int)KB_FIT_ALIAS * 100 + 99);
    cr_expect_gt((int)KB_FIT_ALIAS * 100, (int)KB_FIT_LOCAL_BUILD * 100 + 99);
}

/* A KFD device whose HIP runtime could not be loaded (major 0): no ROCm code object loads. */
Test(compat, rocm_without_a_hip_runtime_refuses_with_the_soname)
{
    kb_device d = {.backend = KB_BACKEND_ROCM, .arch = "gfx1030"};
    kb_ctx *ctx = kbt_ctx();
    kb_target t;
    cr_assert_eq(kbi_target_parse(ctx, &t, "rocm6-gfx1030-x86_64-linux"), 0);
    kb_compat c;
    kbi_compat_check(&c, &t, &d, NULL);
    cr_expect_eq(c.fit, KB_FIT_NONE);
    cr_expect(strstr(c.reason, "needs libamdhip64.so.6; no HIP runtime was found"), "%s", c.reason);
    kb_ctx_free(ctx);
}

Test(compat, rank_pinned_feature_beats_feature_free_code)
{
    const char *ids[] = {"rocm6-gfx90a-x86_64-linux", "rocm6-gfx90a:xnack--x86_64-linux",
                         "rocm6-gfx90a:xnack+-x86_64-linux"};
    const char *order[] = {"rocm6-gfx90a:xnack--x86_64-linux", "rocm6-gfx90a-x86_64-linux"};
    expect_order(ids, KB_ARRAY_LEN(ids), "gfx90a:xnack-@rocm6.1", X86, NULL, order,
                 KB_ARRAY_LEN(order));
}

Test(compat, rank_cpu_highest_level_wins_and_gpu_beats_cpu)
{
    const char *ids[] = {"cpu-x86_64_v2-x86_64-linux", "cpu-x86_64_v4-x86_64-linux",
                         "cpu-x86_64_v3-x86_64-linux", "cpu-aarch64-aarch64-linux"};
    const char *order[] = {"cpu-x86_64_v4-x86_64-linux", "cpu-x86_64_v3-x86_64-linux",
                           "cpu-x86_64_v2-x86_64-linux"};
    expect_order(ids, KB_ARRAY_LEN(ids), "none", HOST_X86_V4, NULL, order, KB_ARRAY_LEN(order));
    const char *mixed[] = {"cpu-x86_64_v4-x86_64-linux", "cuda13-compute_75-x86_64-linux"};
    const char *gpu_first[] = {"cuda13-compute_75-x86_64-linux", "cpu-x86_64_v4-x86_64-linux"};
    kb_compat_opts allow = {NULL, true};
    expect_order(mixed, KB_ARRAY_LEN(mixed), "sm_120", HOST_X86_V4, &allow, gpu_first,
                 KB_ARRAY_LEN(gpu_first));
}

Test(compat, ranks_keep_the_design_order)
{
    /* every score of a rank lies above every score of the rank below it */
    static const kb_fit ranks[] = {KB_FIT_EXACT, KB_FIT_FAMILY,      KB_FIT_GENERIC, KB_FIT_ALIAS,
                                   KB_FIT_PTX,   KB_FIT_LOCAL_BUILD, KB_FIT_CPU};
    for (size_t i = 1; i < KB_ARRAY_LEN(ranks); i++)
        cr_expect_gt((int)ranks[i - 1] * 100, (int)ranks[i] * 100 + 99);
    kb_compat a = {KB_FIT_FAMILY, 5010, ""}, b = {KB_FIT_EXACT, 6050, ""};
    cr_expect_gt(kbi_target_rank_cmp("t1", &a, "t2", &b), 0);
    cr_expect_lt(kbi_target_rank_cmp("t2", &b, "t1", &a), 0);
    cr_expect_eq(kbi_target_rank_cmp("t1", &a, "t1", &a), 0);
}

Test(compat, unknown_cpu_level_refuses_x86_levels_but_knows_aarch64)
{
    kb_ctx *ctx = kbt_ctx();
    kb_target t;
    kb_host host = {"x86_64", "", "linux", "", NULL, 0, 0};
    kb_compat r;
    cr_assert_eq(kbi_target_parse(ctx, &t, "cpu-x86_64_v2-x86_64-linux"), 0);
    kbi_compat_check_host(&r, &t, &host, NULL);
    cr_expect_eq(r.fit, KB_FIT_NONE);
    cr_expect_str_eq(r.reason,
                     "the host's CPU level is unknown (name it, e.g. --device x86_64_v3)");
    kb_host arm = {"aarch64", "", "linux", "", NULL, 0, 0};
    cr_assert_eq(kbi_target_parse(ctx, &t, "cpu-aarch64-aarch64-linux"), 0);
    kbi_compat_check_host(&r, &t, &arm, NULL);
    cr_expect_eq(r.fit, KB_FIT_CPU, "%s", r.reason);
    kb_ctx_free(ctx);
}

/* ---- one ranking for install, sync and the loader (kbi_target_rank_cmp) ---- */

/* The best of n candidates scanned in the given order, as sync and the loader scan. */
static const ranked *best_by_scan(const ranked *r, const size_t *order, size_t n)
{
    const ranked *best = NULL;
    for (size_t i = 0; i < n; i++) {
        const ranked *c = &r[order[i]];
        if (!best || kbi_target_rank_cmp(c->id, &c->c, best->id, &best->c) < 0)
            best = c;
    }
    return best;
}

Test(compat, one_ranking_picks_the_same_target_in_any_order)
{
    /* Equal scores (a listing with one target twice under two spellings of equal fit, or two
     * pins of one fit) once went to whichever came first: the loader's readdir order, the
     * lockfile's order. Now the id breaks the tie, and sorting (install) and scanning (sync,
     * loader) agree. */
    static const struct {
        ranked set[3];
        const char *want;
    } table[] = {
        {{{"cuda13-sm_86-x86_64-linux", {KB_FIT_EXACT, 6000, ""}},
          {"cuda13-sm_80-x86_64-linux", {KB_FIT_FAMILY, 5094, ""}},
          {"cuda13-compute_80-x86_64-linux", {KB_FIT_PTX, 3000, ""}}},
         "cuda13-sm_86-x86_64-linux"},
        {{{"cpu-x86_64_v3-x86_64-linux", {KB_FIT_CPU, 1003, ""}},
          {"cpu-x86_64_v2-x86_64-linux", {KB_FIT_CPU, 1002, ""}},
          {"cpu-x86_64_v3-x86_64-linux-b", {KB_FIT_CPU, 1003, ""}}},
         "cpu-x86_64_v3-x86_64-linux"},
        {{{"rocm6-gfx11-generic-x86_64-linux", {KB_FIT_GENERIC, 4000, ""}},
          {"rocm5-gfx1100-x86_64-linux", {KB_FIT_GENERIC, 4000, ""}},
          {"rocm6-gfx1100-x86_64-linux", {KB_FIT_GENERIC, 4000, ""}}},
         "rocm5-gfx1100-x86_64-linux"},
    };
    static const size_t orders[][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                       {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
    for (size_t t = 0; t < KB_ARRAY_LEN(table); t++)
        for (size_t o = 0; o < KB_ARRAY_LEN(orders); o++) {
            ranked sorted[3];
            for (size_t i = 0; i < 3; i++)
                sorted[i] = table[t].set[orders[o][i]];
            qsort(sorted, 3, sizeof sorted[0], by_rank); /* install sorts its candidates */
            cr_expect_str_eq(sorted[0].id, table[t].want, "row %zu, order %zu (sorted)", t, o);
            const ranked *scanned = best_by_scan(table[t].set, orders[o], 3);
            cr_expect_str_eq(scanned->id, table[t].want, "row %zu, order %zu (scanned)", t, o);
        }
}
