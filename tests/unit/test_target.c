/* Target ids, arch names and device lists: parse, canonical format, errors that name the item. */
#include "kbtest.h"

#include "model/target.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void expect_round_trip(kb_ctx *ctx, const char *id, const char *canonical)
{
    kb_target t;
    cr_assert_eq(kbi_target_parse(ctx, &t, id), 0, "%s: %s", id, kb_ctx_last_error(ctx)->message);
    char buf[128];
    kbi_target_format(&t, buf, sizeof(buf));
    cr_expect_str_eq(buf, canonical, "%s formats as %s", id, buf);
    kb_target again;
    cr_assert_eq(kbi_target_parse(ctx, &again, buf), 0, "%s", buf);
    cr_expect_eq(memcmp(&t, &again, sizeof(t)), 0, "%s does not parse back the same", buf);
}

Test(target, parse_format_round_trips)
{
    kb_ctx *ctx = kbt_ctx();
    static const char *ids[] = {
        "cuda13-sm_90-x86_64-linux",
        "cuda13-sm_90a-x86_64-linux",
        "cuda13-compute_80-x86_64-linux",
        "cuda13-sm_100a-aarch64-linux",
        "rocm5-gfx1030-x86_64-linux",
        "rocm6-gfx90a:xnack+-x86_64-linux",
        "rocm6-gfx90a:sramecc+:xnack--x86_64-linux",
        "rocm6-gfx11-generic-x86_64-linux",
        "rocm6-gfx10-3-generic-x86_64-linux",
        "metal3-apple-arm64-darwin",
        "cpu-x86_64_v3-x86_64-linux",
        "cpu-aarch64-aarch64-linux",
        "cpu-aarch64-arm64-darwin",
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(ids); i++)
        expect_round_trip(ctx, ids[i], ids[i]);
    kb_ctx_free(ctx);
}

Test(target, fields_of_a_parsed_id)
{
    kb_ctx *ctx = kbt_ctx();
    kb_target t;
    cr_assert_eq(kbi_target_parse(ctx, &t, "rocm6-gfx10-1-generic-x86_64-linux"), 0);
    cr_expect_eq(t.backend, KB_BACKEND_ROCM);
    cr_expect_eq(t.runtime_major, 6);
    cr_expect_str_eq(t.arch, "gfx10-1-generic");
    cr_expect_str_eq(t.host_arch, "x86_64");
    cr_expect_str_eq(t.host_os, "linux");
    cr_assert_eq(kbi_target_parse(ctx, &t, "cuda13-sm_90a-x86_64-linux"), 0);
    cr_expect_eq(t.backend, KB_BACKEND_CUDA);
    cr_expect_eq(t.runtime_major, 13);
    cr_expect_str_eq(t.arch, "sm_90a");
    cr_assert_eq(kbi_target_parse(ctx, &t, "cpu-x86_64_v4-x86_64-linux"), 0);
    cr_expect_eq(t.backend, KB_BACKEND_CPU);
    cr_expect_eq(t.runtime_major, 0);
    kb_ctx_free(ctx);
}

Test(target, rocm_features_canonical_order_is_alphabetical)
{
    /* LLVM's canonical target id: features in alphabetical order, sramecc before xnack */
    kb_ctx *ctx = kbt_ctx();
    expect_round_trip(ctx, "rocm6-gfx90a:xnack-:sramecc+-x86_64-linux",
                      "rocm6-gfx90a:sramecc+:xnack--x86_64-linux");
    char buf[128];
    cr_expect_eq(
        kb_target_canonical(buf, sizeof(buf), ctx, "rocm6-gfx942:xnack+:sramecc--x86_64-linux"), 0);
    cr_expect_str_eq(buf, "rocm6-gfx942:sramecc-:xnack+-x86_64-linux");
    kb_ctx_free(ctx);
}

typedef struct bad_case {
    const char *input;
    const char *message; /* the exact error message */
} bad_case;

static const bad_case bad_targets[] = {
    {"", "empty target id"},
    {"cuda13-sm_90", "bad target id 'cuda13-sm_90': expected BACKEND+RUNTIME-ARCH-HOSTARCH-OS, "
                     "e.g. cuda13-sm_90-x86_64-linux"},
    {"cuda-sm_90-x86_64-linux",
     "bad target id 'cuda-sm_90-x86_64-linux': backend 'cuda' needs a runtime major version, "
     "e.g. cuda13"},
    {"opencl3-foo-x86_64-linux", "bad target id 'opencl3-foo-x86_64-linux': unknown backend "
                                 "'opencl' (expected cuda, rocm, metal or cpu)"},
    {"CUDA13-sm_90-x86_64-linux", "bad target id 'CUDA13-sm_90-x86_64-linux': unknown backend "
                                  "'CUDA13' (expected cuda, rocm, metal or cpu)"},
    {"cuda013-sm_90-x86_64-linux",
     "bad target id 'cuda013-sm_90-x86_64-linux': bad runtime version '013' after 'cuda'"},
    {"cpu3-x86_64_v3-x86_64-linux",
     "bad target id 'cpu3-x86_64_v3-x86_64-linux': backend 'cpu' takes no runtime version"},
    {"cuda13-sm_70-x86_64-linux", "bad target id 'cuda13-sm_70-x86_64-linux': sm_70 is older "
                                  "than sm_75, the oldest arch CUDA 13 builds"},
    {"cuda13-sm_95-x86_64-linux",
     "bad target id 'cuda13-sm_95-x86_64-linux': unknown CUDA arch 'sm_95'"},
    {"cuda13-sm_86a-x86_64-linux", "bad target id 'cuda13-sm_86a-x86_64-linux': 'sm_86a': "
                                   "arch-specific 'a' variants exist from sm_90a on"},
    {"cuda13-sm_90x-x86_64-linux",
     "bad target id 'cuda13-sm_90x-x86_64-linux': 'sm_90x' has junk 'x' after the arch number"},
    {"cuda13-gfx1030-x86_64-linux", "bad target id 'cuda13-gfx1030-x86_64-linux': 'gfx1030' is "
                                    "not a CUDA arch (expected sm_XY, sm_XYa or compute_XY)"},
    {"rocm6-gfx1037-x86_64-linux",
     "bad target id 'rocm6-gfx1037-x86_64-linux': unknown AMD GPU arch 'gfx1037'"},
    {"rocm6-gfx1030:xnack+-x86_64-linux",
     "bad target id 'rocm6-gfx1030:xnack+-x86_64-linux': 'gfx1030:xnack+': gfx1030 has no "
     "xnack feature"},
    {"rocm6-gfx90a:xnack-x86_64-linux", "bad target id 'rocm6-gfx90a:xnack-x86_64-linux': "
                                        "'gfx90a:xnack': feature 'xnack' needs a + or - (e.g. "
                                        "xnack-)"},
    {"rocm6-gfx90a:xnack+:xnack--x86_64-linux",
     "bad target id 'rocm6-gfx90a:xnack+:xnack--x86_64-linux': 'gfx90a:xnack+:xnack-': feature "
     "'xnack' given twice"},
    {"rocm6-gfx90a:tgsplit+-x86_64-linux",
     "bad target id 'rocm6-gfx90a:tgsplit+-x86_64-linux': 'gfx90a:tgsplit+': unknown feature "
     "'tgsplit' (expected xnack or sramecc)"},
    {"rocm5-gfx11-generic-x86_64-linux",
     "bad target id 'rocm5-gfx11-generic-x86_64-linux': generic target gfx11-generic needs "
     "rocm6 or newer (generic targets are code object v6, loaded from ROCm 6.2 on)"},
    {"cuda13-sm_90-x86_64-windows", "bad target id 'cuda13-sm_90-x86_64-windows': unknown host "
                                    "'x86_64-windows' (expected x86_64-linux, aarch64-linux, "
                                    "arm64-darwin or x86_64-darwin)"},
    {"metal3-apple-x86_64-linux", "bad target id 'metal3-apple-x86_64-linux': metal targets run "
                                  "on arm64-darwin hosts, not x86_64-linux"},
    {"rocm6-gfx1030-aarch64-linux", "bad target id 'rocm6-gfx1030-aarch64-linux': rocm targets "
                                    "run on x86_64-linux hosts, not aarch64-linux"},
    {"cpu-aarch64-x86_64-linux", "bad target id 'cpu-aarch64-x86_64-linux': the CPU arch must be "
                                 "the host's arch, not x86_64-linux"},
    {"cpu-x86_64_v5-x86_64-linux",
     "bad target id 'cpu-x86_64_v5-x86_64-linux': unknown CPU arch 'x86_64_v5' (expected "
     "x86_64_v2, x86_64_v3, x86_64_v4 or aarch64)"},
    {"metal3-m1-arm64-darwin", "bad target id 'metal3-m1-arm64-darwin': unknown Metal GPU family "
                               "'m1' (expected apple)"},
    {"cuda13--x86_64-linux", "bad target id 'cuda13--x86_64-linux': empty arch"},
    {"cuda13-sm_90 -x86_64-linux", "bad target id 'cuda13-sm_90 -x86_64-linux': blank or "
                                   "non-ASCII character at offset 12"},
};

Test(target, bad_ids_name_the_id_and_the_problem)
{
    kb_ctx *ctx = kbt_ctx();
    for (size_t i = 0; i < KB_ARRAY_LEN(bad_targets); i++) {
        kb_target t;
        memset(&t, 0x5a, sizeof(t));
        cr_expect_eq(kbi_target_parse(ctx, &t, bad_targets[i].input), KB_ERR_TARGET, "%s",
                     bad_targets[i].input);
        cr_expect_str_eq(kb_ctx_last_error(ctx)->message, bad_targets[i].message);
        cr_expect_eq(t.backend, KB_BACKEND_NONE, "a failed parse leaves no half target");
    }
    kb_ctx_free(ctx);
}

Test(target, arch_valid_for_manifests)
{
    static const char *good_cuda[] = {"sm_75",  "sm_80",      "sm_86",     "sm_89",
                                      "sm_90",  "sm_90a",     "sm_100",    "sm_100a",
                                      "sm_120", "compute_75", "compute_90"};
    static const char *good_rocm[] = {
        "gfx900",          "gfx90a",          "gfx940",
        "gfx942",          "gfx1010",         "gfx1030",
        "gfx1036",         "gfx1100",         "gfx1151",
        "gfx1201",         "gfx9-generic",    "gfx9-4-generic",
        "gfx10-1-generic", "gfx10-3-generic", "gfx11-generic",
        "gfx12-generic",   "gfx90a:xnack-",   "gfx906:sramecc+:xnack+"};
    char why[160];
    for (size_t i = 0; i < KB_ARRAY_LEN(good_cuda); i++)
        cr_expect(kbi_arch_valid(KB_BACKEND_CUDA, good_cuda[i], why, sizeof(why)), "%s: %s",
                  good_cuda[i], why);
    for (size_t i = 0; i < KB_ARRAY_LEN(good_rocm); i++)
        cr_expect(kbi_arch_valid(KB_BACKEND_ROCM, good_rocm[i], why, sizeof(why)), "%s: %s",
                  good_rocm[i], why);
    cr_expect(kbi_arch_valid(KB_BACKEND_CPU, "x86_64_v2", why, sizeof(why)));
    cr_expect(kbi_arch_valid(KB_BACKEND_METAL, "apple", why, sizeof(why)));
    cr_expect_not(kbi_arch_valid(KB_BACKEND_CUDA, "sm_72", why, sizeof(why)));
    cr_expect_str_eq(why, "sm_72 is older than sm_75, the oldest arch CUDA 13 builds");
    cr_expect_not(kbi_arch_valid(KB_BACKEND_ROCM, "gfx11-generic:xnack+", why, sizeof(why)));
    cr_expect_str_eq(why, "'gfx11-generic:xnack+': gfx11-generic has no xnack feature");
    cr_expect_not(kbi_arch_valid(KB_BACKEND_ROCM, "sm_80", why, sizeof(why)));
    cr_expect_str_eq(why, "unknown AMD GPU arch 'sm_80'");
    cr_expect_not(kbi_arch_valid(KB_BACKEND_CPU, "", why, sizeof(why)));
    cr_expect_str_eq(why, "empty arch name");
}

Test(target, backend_names)
{
    for (kb_backend b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++)
        cr_expect_eq(kbi_backend_from_name(kbi_backend_name(b)), b);
    cr_expect_eq(kbi_backend_from_name("vulkan"), KB_BACKEND_NONE);
    cr_expect_eq(kbi_backend_from_name(NULL), KB_BACKEND_NONE);
}

/* ---- device lists ---- */

Test(target, devices_parse_each_form)
{
    kb_ctx *ctx = kbt_ctx();
    kb_device *d;
    size_t n;
    cr_assert_eq(kbi_devices_parse(ctx, &d, &n,
                                   "sm_86, gfx1031,sm_86@cuda12.4,gfx1030@rocm5.2,"
                                   "gfx90a:xnack-@rocm6.1,x86_64_v3,apple@metal3,gfx1100@rocm6"),
                 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_eq(n, 8);
    cr_expect_eq(d[0].backend, KB_BACKEND_CUDA);
    cr_expect_str_eq(d[0].arch, "sm_86");
    cr_expect(d[0].runtime_any, "no runtime stated: any");
    cr_expect_eq(d[0].index, 0);
    cr_expect_eq(d[1].backend, KB_BACKEND_ROCM);
    cr_expect(d[1].runtime_any);
    cr_expect_eq(d[2].runtime_major, 12);
    cr_expect_eq(d[2].runtime_minor, 4);
    cr_expect_not(d[2].runtime_any);
    cr_expect_eq(d[2].index, 1, "second CUDA device");
    cr_expect_eq(d[3].runtime_major, 5);
    cr_expect_eq(d[3].runtime_minor, 2);
    cr_expect_str_eq(d[4].arch, "gfx90a:xnack-");
    cr_expect_eq(d[4].runtime_major, 6);
    cr_expect_eq(d[4].runtime_minor, 1);
    cr_expect_not(d[4].runtime_minor_unknown);
    cr_expect_eq(d[5].backend, KB_BACKEND_CPU);
    cr_expect_str_eq(d[5].arch, "x86_64_v3");
    cr_expect_not(d[5].runtime_any, "a CPU has no runtime");
    cr_expect_eq(d[6].backend, KB_BACKEND_METAL);
    cr_expect_eq(d[6].runtime_major, 3);
    cr_expect(d[7].runtime_minor_unknown, "rocm6 names only the major");
    kbi_devices_free(d);
    kb_ctx_free(ctx);
}

Test(target, devices_none_means_no_gpu)
{
    kb_ctx *ctx = kbt_ctx();
    kb_device *d = (kb_device *)1;
    size_t n = 9;
    cr_expect_eq(kbi_devices_parse(ctx, &d, &n, "none"), 0);
    cr_expect_null(d);
    cr_expect_eq(n, 0);
    kb_ctx_free(ctx);
}

static const bad_case bad_devices[] = {
    {"", "empty device list (name devices like sm_86,gfx1030 or say 'none')"},
    {"sm_86,,gfx1030", "bad device list 'sm_86,,gfx1030': item 2 '': empty item"},
    {"foo", "bad device list 'foo': item 1 'foo': not a device: expected an arch like sm_86, "
            "gfx1030, apple, x86_64_v3, aarch64 or 'none'"},
    {"sm_86,none", "bad device list 'sm_86,none': item 2 'none': 'none' means no GPU and must "
                   "stand alone"},
    {"sm_90a", "bad device list 'sm_90a': item 1 'sm_90a': 'sm_90a': the 'a' suffix marks "
               "arch-specific code; the device is sm_90"},
    {"compute_80", "bad device list 'compute_80': item 1 'compute_80': 'compute_80' is a PTX "
                   "virtual arch; a device is a real arch like sm_86"},
    {"gfx11-generic", "bad device list 'gfx11-generic': item 1 'gfx11-generic': 'gfx11-generic' "
                      "is a generic code target; a device is a real gfx like gfx1100"},
    {"sm_86@rocm6.1", "bad device list 'sm_86@rocm6.1': item 1 'sm_86@rocm6.1': runtime "
                      "'rocm6.1' does not match a cuda device (expected cudaN[.M])"},
    {"sm_86@cuda", "bad device list 'sm_86@cuda': item 1 'sm_86@cuda': runtime 'cuda' has no "
                   "major version (expected cudaN[.M])"},
    {"sm_86@cuda12.x", "bad device list 'sm_86@cuda12.x': item 1 'sm_86@cuda12.x': bad runtime "
                       "version 'cuda12.x' (expected cudaN[.M])"},
    {"x86_64_v3@cuda13", "bad device list 'x86_64_v3@cuda13': item 1 'x86_64_v3@cuda13': a CPU "
                         "takes no runtime version"},
    {"@cuda13", "bad device list '@cuda13': item 1 '@cuda13': no arch before '@'"},
    {"gfx1030:xnack+", "bad device list 'gfx1030:xnack+': item 1 'gfx1030:xnack+': "
                       "'gfx1030:xnack+': gfx1030 has no xnack feature"},
    {"sm_4", "bad device list 'sm_4': item 1 'sm_4': 'sm_4' has no arch number (expected e.g. "
             "sm_86)"},
    {"gfx9999", "bad device list 'gfx9999': item 1 'gfx9999': unknown AMD GPU arch 'gfx9999'"},
    {"x86_64_v9", "bad device list 'x86_64_v9': item 1 'x86_64_v9': unknown CPU arch "
                  "'x86_64_v9' (expected x86_64_v2, x86_64_v3, x86_64_v4 or aarch64)"},
};

Test(target, bad_device_specs_name_the_item)
{
    kb_ctx *ctx = kbt_ctx();
    for (size_t i = 0; i < KB_ARRAY_LEN(bad_devices); i++) {
        kb_device *d = (kb_device *)1;
        size_t n = 7;
        cr_expect_eq(kbi_devices_parse(ctx, &d, &n, bad_devices[i].input), KB_ERR_TARGET, "%s",
                     bad_devices[i].input);
        cr_expect_str_eq(kb_ctx_last_error(ctx)->message, bad_devices[i].message);
        cr_expect_null(d);
        cr_expect_eq(n, 0);
    }
    kb_ctx_free(ctx);
}

Test(target, rocm_aliases_validation)
{
    char why[192];
    cr_expect(kbi_rocm_aliases_valid("gfx1031=gfx1030,gfx1032=gfx1030", why, sizeof(why)));
    cr_expect(kbi_rocm_aliases_valid("", why, sizeof(why)));
    cr_expect(kbi_rocm_aliases_valid(NULL, why, sizeof(why)));
    cr_expect_not(kbi_rocm_aliases_valid("gfx1031", why, sizeof(why)));
    cr_expect_str_eq(why, "alias 'gfx1031' is not DEVICE=TARGET (e.g. gfx1031=gfx1030)");
    cr_expect_not(kbi_rocm_aliases_valid("gfx1031=gfx1030,gfx1031=gfx77", why, sizeof(why)));
    cr_expect_str_eq(why, "alias 'gfx1031=gfx77': unknown AMD GPU arch 'gfx77'");
}

/* ---- the public API ---- */

/* Every known target parses to itself, and fits each device its runs_on list names. */
Test(target, known_table_is_canonical_and_honest)
{
    kb_ctx *ctx = kbt_ctx();
    const char *id, *runs_on;
    size_t n = 0;
    for (; kb_target_known(&id, &runs_on, n) == 0; n++) {
        expect_round_trip(ctx, id, id);
        kb_target t;
        cr_assert_eq(kbi_target_parse(ctx, &t, id), 0);
        size_t list_len = strcspn(runs_on, "(");
        cr_assert_gt(list_len, 1, "%s: runs_on names no device", id);
        char *list = kbi_strndup(runs_on, list_len);
        kb_device *d;
        size_t count;
        cr_assert_eq(kbi_devices_parse(ctx, &d, &count, list), 0, "%s: %s", id,
                     kb_ctx_last_error(ctx)->message);
        for (size_t i = 0; i < count; i++) {
            kb_compat r;
            kbi_compat_check(&r, &t, &d[i], NULL);
            cr_expect_neq(r.fit, KB_FIT_NONE, "%s claims %s: %s", id, d[i].arch, r.reason);
        }
        kbi_devices_free(d);
        free(list);
    }
    cr_expect_geq(n, 25);
    cr_expect_eq(kb_target_known(&id, &runs_on, n), KB_ERR_NOT_FOUND);
    kb_ctx_free(ctx);
}

Test(target, check_api_answers_with_reason)
{
#if !(defined(__x86_64__) && defined(__linux__))
    cr_skip_test("kb_target_check uses this machine's platform; these cases are x86_64-linux");
#endif
    kb_ctx *ctx = kbt_ctx();
    int fits = -1;
    char reason[256];
    cr_assert_eq(kb_target_check(&fits, reason, sizeof(reason), ctx, "cuda13-sm_80-x86_64-linux",
                                 "sm_86@cuda13.0"),
                 0);
    cr_expect_eq(fits, 1);
    cr_expect_str_eq(reason, "sm_80 SASS runs on sm_86 (same major 8, 0 <= 6)");
    cr_assert_eq(kb_target_check(&fits, reason, sizeof(reason), ctx, "rocm5-gfx1030-x86_64-linux",
                                 "gfx1031"),
                 0);
    cr_expect_eq(fits, 0);
    cr_expect(strstr(reason, "ROCm needs the exact gfx"), "%s", reason);
    /* the alias comes from the setting */
    cr_assert_eq(kb_ctx_set(ctx, "rocm.aliases", "gfx1031=gfx1030"), 0);
    cr_assert_eq(kb_target_check(&fits, reason, sizeof(reason), ctx, "rocm5-gfx1030-x86_64-linux",
                                 "gfx1031"),
                 0);
    cr_expect_eq(fits, 1, "%s", reason);
    cr_expect(strstr(reason, "from config"), "%s", reason);
    /* a CPU named in the device list is the host's CPU level */
    cr_assert_eq(kb_target_check(&fits, reason, sizeof(reason), ctx, "cpu-x86_64_v4-x86_64-linux",
                                 "x86_64_v3"),
                 0);
    cr_expect_eq(fits, 0);
    cr_expect_str_eq(reason, "x86_64_v4 code needs an x86_64_v4 CPU, this one is x86_64_v3");
    cr_assert_eq(kb_target_check(&fits, reason, sizeof(reason), ctx, "cpu-x86_64_v2-x86_64-linux",
                                 "x86_64_v3"),
                 0);
    cr_expect_eq(fits, 1, "%s", reason);
    /* the host platform is this machine's */
    cr_assert_eq(
        kb_target_check(&fits, reason, sizeof(reason), ctx, "metal3-apple-arm64-darwin", "apple"),
        0);
    cr_expect_eq(fits, 0);
    cr_expect_str_eq(reason, "the target is built for arm64-darwin, this host is x86_64-linux");
    kb_ctx_free(ctx);
}

Test(target, check_api_errors_name_the_input)
{
    kb_ctx *ctx = kbt_ctx();
    int fits = 7;
    char reason[64] = "x";
    cr_expect_eq(
        kb_target_check(&fits, reason, sizeof(reason), ctx, "cuda13-sm_91-x86_64-linux", "sm_90"),
        KB_ERR_TARGET);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "bad target id 'cuda13-sm_91-x86_64-linux': unknown CUDA arch 'sm_91'");
    cr_expect_eq(fits, 0);
    cr_expect_str_eq(reason, "");
    cr_expect_eq(kb_target_check(&fits, reason, sizeof(reason), ctx, "cuda13-sm_90-x86_64-linux",
                                 "sm_90;sm_86"),
                 KB_ERR_TARGET);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "item 1 'sm_90;sm_86'"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect_eq(
        kb_target_check(&fits, reason, sizeof(reason), ctx, "cuda13-sm_90-x86_64-linux", NULL),
        KB_ERR_INVALID, "no device given and probe.devices empty");
    cr_assert_eq(kb_ctx_set(ctx, "rocm.aliases", "gfx1031>gfx1030"), 0);
    cr_expect_eq(kb_target_check(&fits, reason, sizeof(reason), ctx, "rocm5-gfx1030-x86_64-linux",
                                 "gfx1031"),
                 KB_ERR_CONFIG);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "rocm.aliases: alias 'gfx1031>gfx1030' is not DEVICE=TARGET (e.g. "
                     "gfx1031=gfx1030)");
    kb_ctx_free(ctx);
}

/* Deterministic random ids and device lists glued from real pieces: the parsers never crash
 * (ASan watches), and whatever they accept formats to a canonical form that parses back. */
static unsigned next_random(unsigned *state)
{
    *state = *state * 1103515245u + 12345u;
    return (*state >> 16) & 0x7fff;
}

/* Either pieces glued at random, or a valid id or device list with a few bytes mutated. */
static void random_text(unsigned *state, char *buf, size_t size)
{
    static const char *pieces[] = {
        "cuda",   "rocm", "metal",   "cpu",     "13",    "6",      "5",        "3",
        "-",      "-",    "sm_",     "90",      "86",    "a",      "compute_", "gfx",
        "1030",   "90a",  "11",      "generic", ":",     "xnack",  "sramecc",  "+",
        "x86_64", "_v3",  "aarch64", "arm64",   "linux", "darwin", "apple",    "@",
        ",",      ".",    "none",    " ",       "\xff",
    };
    static const char *seeds[] = {
        "cuda13-sm_90a-x86_64-linux",         "rocm6-gfx90a:sramecc+:xnack--x86_64-linux",
        "rocm6-gfx10-3-generic-x86_64-linux", "cpu-x86_64_v3-x86_64-linux",
        "metal3-apple-arm64-darwin",          "sm_86@cuda12.4,gfx90a:xnack-@rocm6.1,x86_64_v3",
    };
    static const char alphabet[] = "-_:+@,.0123456789agsmx ";
    size_t len = 0;
    buf[0] = '\0';
    if (next_random(state) % 2) {
        snprintf(buf, size, "%s", seeds[next_random(state) % KB_ARRAY_LEN(seeds)]);
        len = strlen(buf);
        for (unsigned k = next_random(state) % 3; k > 0 && len > 1; k--) {
            size_t at = next_random(state) % len;
            char c = alphabet[next_random(state) % (sizeof(alphabet) - 1)];
            if (next_random(state) % 2)
                buf[at] = c;
            else
                memmove(buf + at, buf + at + 1, len-- - at);
        }
        return;
    }
    for (size_t i = 0, n = 1 + next_random(state) % 12; i < n; i++) {
        const char *p = pieces[next_random(state) % KB_ARRAY_LEN(pieces)];
        size_t pl = strlen(p);
        if (len + pl + 1 > size)
            break;
        memcpy(buf + len, p, pl + 1);
        len += pl;
    }
}

Test(target, random_input_never_crashes_and_accepted_ids_are_canonical)
{
    kb_ctx *ctx = kbt_ctx();
    unsigned state = 12345;
    size_t accepted_ids = 0, accepted_lists = 0;
    for (int i = 0; i < 200000; i++) {
        char text[160], canonical[128], again[128];
        random_text(&state, text, sizeof(text));
        kb_target t;
        if (kbi_target_parse(ctx, &t, text) == 0) {
            accepted_ids++;
            kbi_target_format(&t, canonical, sizeof(canonical));
            cr_assert_eq(kb_target_canonical(again, sizeof(again), ctx, canonical), 0, "%s",
                         canonical);
            cr_assert_str_eq(again, canonical, "from '%s'", text);
        } else
            cr_assert_neq(kb_ctx_last_error(ctx)->message[0], '\0', "'%s' fails silently", text);
        kb_device *d;
        size_t n;
        if (kbi_devices_parse(ctx, &d, &n, text) == 0) {
            accepted_lists++;
            kbi_devices_free(d);
        }
    }
    cr_expect_gt(accepted_ids, 0, "the generator never made a valid id");
    cr_expect_gt(accepted_lists, 0, "the generator never made a valid device list");
    kb_ctx_free(ctx);
}
