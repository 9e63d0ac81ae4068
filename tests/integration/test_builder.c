/* Builder: toolchain version parsing, plans, build keys, CPU builds end to end. */
#include "kbtest.h"

#include "builder/builder.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

Test(builder, parses_nvcc_version)
{
    char v[32];
    cr_assert(kbi_parse_nvcc_version("nvcc: NVIDIA (R) Cuda compiler driver\n"
                                     "Cuda compilation tools, release 13.0, V13.0.88\n",
                                     v, sizeof(v)));
    cr_expect_str_eq(v, "13.0");
    cr_expect_not(kbi_parse_nvcc_version("gcc (Debian 12.2.0) 12.2.0\n", v, sizeof(v)));
}

Test(builder, parses_hipcc_version_and_clang)
{
    const char *out = "HIP version: 5.2.21153-0\nDebian clang version 15.0.6\n"
                      "Target: x86_64-pc-linux-gnu\nThread model: posix\nInstalledDir: /usr/bin\n";
    char v[32], dir[64];
    unsigned major = 0;
    cr_assert(kbi_parse_hipcc_version(out, v, sizeof(v)));
    cr_expect_str_eq(v, "5.2.21153");
    cr_assert(kbi_parse_hipcc_clang(out, &major, dir, sizeof(dir)));
    cr_expect_eq(major, 15);
    cr_expect_str_eq(dir, "/usr/bin");
    cr_expect_not(kbi_parse_hipcc_version("clang version 15\n", v, sizeof(v)));
}

Test(builder, parses_cc_versions)
{
    char v[32];
    cr_assert(
        kbi_parse_cc_version("cc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright\n", v, sizeof(v)));
    cr_expect_str_eq(v, "12.2.0");
    cr_assert(kbi_parse_cc_version("Debian clang version 14.0.6\nTarget: x\n", v, sizeof(v)));
    cr_expect_str_eq(v, "14.0.6");
    cr_expect_not(kbi_parse_cc_version("no version here\n", v, sizeof(v)));
}

Test(builder, parses_nvcc_arch_lists_and_defaults)
{
    kb_strv a = KB_STRV_INIT;
    cr_assert_eq(kbi_parse_nvcc_arch_list("sm_75\nsm_80\ncompute_80\nsm_80\n", &a), 0);
    cr_expect_eq(a.len, 3);
    cr_expect(kbi_strv_contains(&a, "compute_80"));
    kbi_strv_free(&a);
    cr_assert_eq(kbi_nvcc_default_archs(13, &a), 0);
    cr_expect(kbi_strv_contains(&a, "sm_75"));
    cr_expect_not(kbi_strv_contains(&a, "sm_70"), "CUDA 13 builds sm_75 and newer only");
    kbi_strv_free(&a);
}

Test(builder, nvcc_builds_arch_specific_variants_from_sm_90_on)
{
    kb_strv a = KB_STRV_INIT;
    cr_assert_eq(kbi_parse_nvcc_arch_list("sm_80 sm_89 sm_90 sm_100 compute_80 compute_90", &a), 0);
    cr_assert_eq(kbi_nvcc_add_arch_specific(&a), 0);
    cr_expect(kbi_strv_contains(&a, "sm_90a"));
    cr_expect(kbi_strv_contains(&a, "sm_100a"));
    cr_expect(kbi_strv_contains(&a, "compute_90a"));
    cr_expect_not(kbi_strv_contains(&a, "sm_89a"), "no arch-specific variant before sm_90");
    cr_expect_not(kbi_strv_contains(&a, "sm_80a"));
    size_t n = a.len;
    cr_assert_eq(kbi_nvcc_add_arch_specific(&a), 0);
    cr_expect_eq(a.len, n, "adding twice adds nothing");
    kbi_strv_free(&a);
}

Test(builder, rocm_archs_from_device_libs_and_overlay)
{
    kb_strv files = KB_STRV_INIT, archs = KB_STRV_INIT, overlay = KB_STRV_INIT;
    kbi_strv_push(&files, "ocml.bc");
    kbi_strv_push(&files, "oclc_isa_version_1030.bc");
    kbi_strv_push(&files, "oclc_isa_version_90a.bc");
    cr_assert_eq(kbi_rocm_archs_from_libs(&files, 15, &archs, &overlay), 0);
    cr_expect(kbi_strv_contains(&archs, "gfx1030"));
    cr_expect(kbi_strv_contains(&archs, "gfx90a"));
    cr_expect(kbi_strv_contains(&archs, "gfx1100"));
    cr_expect(kbi_strv_contains(&overlay, "gfx1100"));
    cr_expect_not(kbi_strv_contains(&overlay, "gfx1030"));
    kbi_strv_free(&archs);
    kbi_strv_free(&overlay);
    /* clang 14 cannot target gfx11: no overlay offered */
    cr_assert_eq(kbi_rocm_archs_from_libs(&files, 14, &archs, &overlay), 0);
    cr_expect_not(kbi_strv_contains(&archs, "gfx1100"));
    cr_expect_eq(overlay.len, 0);
    kbi_strv_free(&archs);
    kbi_strv_free(&overlay);
    kbi_strv_free(&files);
    unsigned isa = 0;
    cr_assert(kbi_gfx_isa_version("gfx1100", &isa));
    cr_expect_eq(isa, 11000);
    cr_assert(kbi_gfx_isa_version("gfx90a", &isa));
    cr_expect_eq(isa, 9010);
    cr_expect_not(kbi_gfx_isa_version("sm_80", &isa));
}

/* A manifest built by hand: cuda sm_80+ptx, rocm gfx1030, metal, cpu (host level). */
static kb_manifest *hand_manifest(void)
{
    kb_manifest *m = calloc(1, sizeof(*m));
    m->name = kbi_strdup("org/pkg");
    m->dir = kbi_strdup("/nonexistent");
    m->version.major = 1;
    m->backends[KB_BACKEND_CUDA].present = true;
    kbi_strv_push(&m->backends[KB_BACKEND_CUDA].archs, "sm_80");
    kbi_strv_push(&m->backends[KB_BACKEND_CUDA].archs, "sm_70");
    m->backends[KB_BACKEND_CUDA].ptx = kbi_strdup("sm_80");
    m->backends[KB_BACKEND_ROCM].present = true;
    kbi_strv_push(&m->backends[KB_BACKEND_ROCM].archs, "gfx1030");
    m->backends[KB_BACKEND_METAL].present = true;
    m->backends[KB_BACKEND_CPU].present = true;
    return m;
}

static void free_hand_manifest(kb_manifest *m)
{
    free(m->name);
    free(m->dir);
    free(m->backends[KB_BACKEND_CUDA].ptx);
    for (int b = 0; b < 5; b++)
        kbi_strv_free(&m->backends[b].archs);
    free(m);
}

static void fake_toolchains(kb_toolchains *t)
{
    memset(t, 0, sizeof(*t));
    kb_toolchain *nv = &t->tc[KB_BACKEND_CUDA];
    nv->backend = KB_BACKEND_CUDA;
    nv->name = "nvcc";
    nv->found = true;
    nv->version = kbi_strdup("13.0");
    kbi_nvcc_default_archs(13, &nv->archs);
    kb_toolchain *hip = &t->tc[KB_BACKEND_ROCM];
    hip->name = "hipcc";
    hip->note = kbi_strdup("hipcc not found in PATH or /opt/rocm/bin");
    kb_toolchain *cc = &t->tc[KB_BACKEND_CPU];
    cc->backend = KB_BACKEND_CPU;
    cc->name = "cc";
    cc->found = true;
    cc->version = kbi_strdup("12.2.0");
    kbi_cpu_levels("x86_64", &cc->archs);
    t->hip_clang.backend = KB_BACKEND_ROCM;
    t->hip_clang.name = "hip-clang";
    t->hip_clang.hip_major = 6;
    t->hip_clang.hip_stub = true;
    t->hip_clang.note = kbi_strdup("clang-19 not found in PATH");
    t->tc[KB_BACKEND_METAL].name = "metal";
    t->tc[KB_BACKEND_METAL].note = kbi_strdup("Metal targets build only on macOS");
}

static const kb_plan_item *find_item(const kb_plan *p, const char *target)
{
    for (size_t i = 0; i < p->count; i++)
        if (strcmp(p->items[i].target, target) == 0)
            return &p->items[i];
    return NULL;
}

Test(builder, plan_lists_every_declared_target_with_reasons)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = hand_manifest();
    kb_toolchains t;
    fake_toolchains(&t);
    kb_plan_host host = {"x86_64", "linux", "x86_64_v3"};
    kb_plan p;
    cr_assert_eq(kbi_plan_make(ctx, &p, m, &t, &host, NULL, 0), 0);
    cr_expect_eq(p.count, 8);
    for (size_t i = 0; i < p.count; i++) {
        if (p.items[i].skip)
            continue; /* cuda13-sm_70 is refused by kbi_target_parse too */
        kb_target parsed;
        char again[96];
        cr_expect_eq(kbi_target_parse(ctx, &parsed, p.items[i].target), 0, "%s: %s",
                     p.items[i].target, kb_ctx_last_error(ctx)->message);
        kbi_target_format(&parsed, again, sizeof(again));
        cr_expect_str_eq(again, p.items[i].target, "plan ids are canonical target ids");
    }
    const kb_plan_item *it = find_item(&p, "cuda13-sm_80-x86_64-linux");
    cr_assert_not_null(it);
    cr_expect_null(it->skip);
    it = find_item(&p, "cuda13-compute_80-x86_64-linux");
    cr_assert_not_null(it, "PTX is a target of its own");
    it = find_item(&p, "cuda13-sm_70-x86_64-linux");
    cr_assert_not_null(it);
    cr_expect_str_eq(it->skip, "nvcc 13.0 cannot build sm_70");
    it = find_item(&p, "rocm5-gfx1030-x86_64-linux");
    cr_assert_not_null(it);
    cr_expect_str_eq(it->skip, "hipcc not found in PATH or /opt/rocm/bin");
    it = find_item(&p, "rocm6-gfx1030-x86_64-linux");
    cr_assert_not_null(it, "every arch also gets a ROCm 6 target");
    cr_expect_str_eq(it->skip, "clang-19 not found in PATH");
    it = find_item(&p, "metal3-apple-arm64-darwin");
    cr_assert_not_null(it);
    cr_expect(strstr(it->skip, "macOS"));
    cr_expect_not_null(find_item(&p, "cpu-x86_64_v3-x86_64-linux"));
    cr_expect_not_null(find_item(&p, "cpu-x86_64_v2-x86_64-linux"), "portable fallback");
    kbi_plan_free(&p);

    const char *filters[] = {"cpu"};
    cr_assert_eq(kbi_plan_make(ctx, &p, m, &t, &host, filters, 1), 0);
    cr_expect_eq(p.count, 2);
    kbi_plan_free(&p);
    const char *bad[] = {"cuda13-sm_90"};
    cr_expect_eq(kbi_plan_make(ctx, &p, m, &t, &host, bad, 1), KB_ERR_TARGET);
    cr_expect(
        strstr(kb_ctx_last_error(ctx)->message, "target 'cuda13-sm_90' is not declared by org/pkg"),
        "got: %s", kb_ctx_last_error(ctx)->message);
    kbi_toolchains_free(&t);
    free_hand_manifest(m);
    kb_ctx_free(ctx);
}

/* hipcc 5.2 as Debian ships it (device libs up to gfx1036 and gfx940, gfx11 by overlay) and
 * hip-clang 19 next to it. */
static void fake_rocm_toolchains(kb_toolchains *t)
{
    fake_toolchains(t);
    kb_toolchain *hip = &t->tc[KB_BACKEND_ROCM];
    hip->backend = KB_BACKEND_ROCM;
    hip->found = true;
    hip->version = kbi_strdup("5.2.21153");
    hip->hip_major = 5;
    kb_strv libs = KB_STRV_INIT;
    kbi_strv_push(&libs, "oclc_isa_version_1030.bc");
    kbi_strv_push(&libs, "oclc_isa_version_1031.bc");
    kbi_strv_push(&libs, "oclc_isa_version_940.bc");
    kbi_rocm_archs_from_libs(&libs, 15, &hip->archs, &hip->overlay_archs);
    kbi_strv_free(&libs);
    kb_toolchain *clang = &t->hip_clang;
    clang->found = true;
    clang->version = kbi_strdup("19.1.7");
    clang->hip_headers = kbi_strdup("5.2");
    kbi_hip_clang_archs(19, &clang->archs);
}

/* Per arch: rocm5 from hipcc where ROCm 5 reaches, rocm6 from hip-clang for every arch, and
 * each target neither can build says exactly why. */
Test(builder, plan_picks_the_hip_toolchain_per_arch_and_runtime)
{
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = hand_manifest();
    const char *archs[] = {"gfx1031", "gfx942",        "gfx1151",
                           "gfx1201", "gfx11-generic", "gfx9-4-generic"};
    for (size_t i = 0; i < KB_ARRAY_LEN(archs); i++)
        kbi_strv_push(&m->backends[KB_BACKEND_ROCM].archs, archs[i]);
    kb_toolchains t;
    fake_rocm_toolchains(&t);
    kb_plan_host host = {"x86_64", "linux", "x86_64_v3"};
    kb_plan p;
    const char *rocm[] = {"rocm5", "rocm6"};
    cr_assert_eq(kbi_plan_make(ctx, &p, m, &t, &host, rocm, 2), 0);
    struct {
        const char *target;
        const kb_toolchain *tc;
        const char *skip;
    } want[] = {
        {"rocm5-gfx1030-x86_64-linux", &t.tc[KB_BACKEND_ROCM], NULL},
        {"rocm6-gfx1030-x86_64-linux", &t.hip_clang, NULL},
        {"rocm5-gfx1031-x86_64-linux", &t.tc[KB_BACKEND_ROCM], NULL},
        {"rocm6-gfx1031-x86_64-linux", &t.hip_clang, NULL},
        {"rocm5-gfx942-x86_64-linux", NULL,
         "hipcc 5.2.21153 cannot build gfx942: its clang and ROCm 5 device libraries do not know "
         "it (the rocm6 target is built with hip-clang)"},
        {"rocm6-gfx942-x86_64-linux", &t.hip_clang, NULL},
        {"rocm6-gfx1151-x86_64-linux", &t.hip_clang, NULL},
        {"rocm6-gfx1201-x86_64-linux", &t.hip_clang, NULL},
        {"rocm6-gfx11-generic-x86_64-linux", &t.hip_clang, NULL},
        {"rocm6-gfx9-4-generic-x86_64-linux", NULL,
         "hip-clang 19.1.7 cannot build gfx9-4-generic: clang learned it in 20, and Debian 12's "
         "newest clang is 19 (set build.hip_clang to a clang 20 or newer)"},
    };
    cr_expect_eq(p.count, KB_ARRAY_LEN(want), "no rocm5 target for gfx1151, gfx12 or generics");
    for (size_t i = 0; i < KB_ARRAY_LEN(want); i++) {
        const kb_plan_item *it = find_item(&p, want[i].target);
        cr_assert_not_null(it, "%s", want[i].target);
        cr_expect_eq(it->tc, want[i].tc, "%s", want[i].target);
        if (want[i].skip)
            cr_expect_str_eq(it->skip, want[i].skip);
        else
            cr_expect_null(it->skip, "%s: %s", want[i].target, it->skip);
    }
    /* hip-clang's flags: the runtime stub instead of the installed runtime, v6 for generics */
    kb_strv flags = KB_STRV_INIT;
    cr_assert_eq(kbi_compile_flags(m, find_item(&p, "rocm6-gfx11-generic-x86_64-linux"), &flags),
                 0);
    cr_expect(kbi_strv_contains(&flags, "--offload-arch=gfx11-generic"));
    cr_expect(kbi_strv_contains(&flags, "-mcode-object-version=6"));
    cr_expect(kbi_strv_contains(&flags, "-no-hip-rt"));
    cr_expect(kbi_strv_contains(&flags, "-Wl,-z,defs"));
    kbi_strv_free(&flags);
    cr_assert_eq(kbi_compile_flags(m, find_item(&p, "rocm5-gfx1030-x86_64-linux"), &flags), 0);
    cr_expect_not(kbi_strv_contains(&flags, "-no-hip-rt"), "hipcc links its own runtime");
    cr_expect_not(kbi_strv_contains(&flags, "-mcode-object-version=6"));
    kbi_strv_free(&flags);
    kbi_plan_free(&p);
    /* requires: {rocm: {min: "6.0"}} holds hip-clang to its HIP headers (5.2), not clang 19 */
    m->requires[KB_BACKEND_ROCM].min = kbi_strdup("6.0");
    cr_assert_eq(kbi_plan_make(ctx, &p, m, &t, &host, rocm, 2), 0);
    const kb_plan_item *it = find_item(&p, "rocm6-gfx1201-x86_64-linux");
    cr_assert_not_null(it);
    cr_expect_str_eq(it->skip,
                     "the package requires rocm >= 6.0; hip-clang here compiles with HIP 5.2 "
                     "headers");
    free(m->requires[KB_BACKEND_ROCM].min);
    m->requires[KB_BACKEND_ROCM].min = NULL;
    kbi_plan_free(&p);
    kbi_toolchains_free(&t);
    free_hand_manifest(m);
    kb_ctx_free(ctx);
}

Test(builder, isa_versions_of_generic_targets_and_the_rocm5_era)
{
    struct {
        const char *arch;
        unsigned isa;
    } cases[] = {{"gfx11-generic", 11000}, {"gfx10-3-generic", 10300}, {"gfx9-4-generic", 9400},
                 {"gfx9-generic", 9000},   {"gfx12-generic", 12000},   {"gfx1151", 11501},
                 {"gfx942", 9402},         {"gfx1201", 12001}};
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        unsigned isa = 0;
        cr_expect(kbi_gfx_isa_version(cases[i].arch, &isa), "%s", cases[i].arch);
        cr_expect_eq(isa, cases[i].isa, "%s: %u", cases[i].arch, isa);
    }
    unsigned isa;
    cr_expect_not(kbi_gfx_isa_version("gfx11-foo", &isa));
    cr_expect_not(kbi_gfx_isa_version("gfx-generic", &isa));
    cr_expect(kbi_rocm5_era_arch("gfx1030"));
    cr_expect(kbi_rocm5_era_arch("gfx942:sramecc+"));
    cr_expect(kbi_rocm5_era_arch("gfx1103"));
    cr_expect_not(kbi_rocm5_era_arch("gfx1151"));
    cr_expect_not(kbi_rocm5_era_arch("gfx1200"));
    cr_expect_not(kbi_rocm5_era_arch("gfx10-3-generic"));
}

/* A fake clang answering --version as clang `version` installed in dir. */
static char *fake_clang(const char *dir, const char *version)
{
    char *path = kbi_asprintf("%s/clang-fake", dir);
    char *text = kbi_asprintf("#!/bin/sh\necho 'Debian clang version %s'\necho 'Target: "
                              "x86_64-pc-linux-gnu'\necho 'InstalledDir: %s'\n",
                              version, dir);
    kbt_write(path, text);
    cr_assert_eq(chmod(path, 0755), 0);
    free(text);
    return path;
}

/* Discovery names what is missing, with the Debian package that has it. */
Test(builder, hip_clang_discovery_names_what_is_missing)
{
    char *tmp = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    char *old = fake_clang(tmp, "15.0.6");
    cr_assert_eq(kb_ctx_set(ctx, "build.hip_clang", old), 0);
    kb_toolchains t;
    cr_assert_eq(kbi_toolchains_discover_some(ctx, &t, 1u << KB_BACKEND_ROCM), 0);
    cr_expect_not(t.hip_clang.found);
    cr_expect(strstr(t.hip_clang.note, "is clang 15.0.6; ROCm 6 targets need clang 19 or newer "
                                       "(install the Debian package clang-19)"),
              "%s", t.hip_clang.note);
    kbi_toolchains_free(&t);
    char *new = fake_clang(tmp, "19.1.7");
    cr_assert_eq(kb_ctx_set(ctx, "build.hip_clang", new), 0);
    cr_assert_eq(kbi_toolchains_discover_some(ctx, &t, 1u << KB_BACKEND_ROCM), 0);
    cr_expect_not(t.hip_clang.found);
    cr_expect(strstr(t.hip_clang.note, "clang-offload-bundler is missing (install the Debian "
                                       "package clang-tools-19)"),
              "%s", t.hip_clang.note);
    kbi_toolchains_free(&t);
    cr_assert_eq(kb_ctx_set(ctx, "build.hip_clang", "/nonexistent/clang-19"), 0);
    cr_assert_eq(kbi_toolchains_discover_some(ctx, &t, 1u << KB_BACKEND_ROCM), 0);
    cr_expect_str_eq(t.hip_clang.note,
                     "build.hip_clang is /nonexistent/clang-19, which is not an executable");
    kbi_toolchains_free(&t);
    free(old);
    free(new);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
}

Test(builder, build_key_follows_source_flags_toolchain)
{
    kb_strv flags = KB_STRV_INIT;
    kbi_strv_push(&flags, "-O3");
    char k1[65], k2[65];
    kbi_build_key(k1, "aaaa", "cpu-x86_64_v3-x86_64-linux", "cc-12.2.0-1", &flags);
    kbi_build_key(k2, "aaaa", "cpu-x86_64_v3-x86_64-linux", "cc-12.2.0-1", &flags);
    cr_expect_str_eq(k1, k2);
    kbi_build_key(k2, "aaab", "cpu-x86_64_v3-x86_64-linux", "cc-12.2.0-1", &flags);
    cr_expect_str_neq(k1, k2, "source digest");
    kbi_build_key(k2, "aaaa", "cpu-x86_64_v3-x86_64-linux", "cc-13.1.0-1", &flags);
    cr_expect_str_neq(k1, k2, "toolchain");
    kbi_strv_push(&flags, "-ffast-math");
    kbi_build_key(k2, "aaaa", "cpu-x86_64_v3-x86_64-linux", "cc-12.2.0-1", &flags);
    cr_expect_str_neq(k1, k2, "flags");
    kbi_strv_free(&flags);
}

/* Copy the vadd fixture into a temp folder so tests can change it. */
static char *copy_fixture(const char *tmp)
{
    char *src = kbt_data("builder/vadd");
    char *dst = kbi_asprintf("%s/vadd", tmp);
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, dst);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(src);
    return dst;
}

Test(builder, source_digest_ignores_mtime_not_content)
{
    char *tmp = kbt_mkdtemp();
    char *dir = copy_fixture(tmp);
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = NULL;
    cr_assert_eq(kbi_manifest_load(ctx, &m, dir, true), 0, "%s", kb_ctx_last_error(ctx)->message);
    char d1[65], d2[65];
    cr_assert_eq(kbi_source_digest(ctx, d1, m), 0);
    char *cmd = kbi_asprintf("touch -d '2001-01-01' '%s/src/vadd_cpu.c'", dir);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    cr_assert_eq(kbi_source_digest(ctx, d2, m), 0);
    cr_expect_str_eq(d1, d2, "mtime must not change the digest");
    char *f = kbi_asprintf("%s/src/vadd_cpu.c", dir);
    FILE *fp = fopen(f, "a");
    fputs("/* changed */\n", fp);
    fclose(fp);
    free(f);
    cr_assert_eq(kbi_source_digest(ctx, d2, m), 0);
    cr_expect_str_neq(d1, d2);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

/* Write (or keep) the source artifact; its inode tells a rewrite (temp + rename) from a reuse. */
static ino_t source_artifact(kb_ctx *ctx, const kb_manifest *m, const char *out, int64_t epoch,
                             char hex[65])
{
    char digest[65];
    cr_assert_eq(kbi_source_digest(ctx, digest, m), 0);
    char *path = NULL;
    uint64_t size = 0;
    cr_assert_eq(kbi_write_source_artifact(ctx, &path, hex, &size, m, out, digest, epoch), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_expect_eq((uint64_t)st.st_size, size);
    free(path);
    return st.st_ino;
}

/* An unchanged source is not compressed again; whatever changes its bytes (content, exec bits,
 * epoch) or damages the file on disk makes it written anew. */
Test(builder, source_artifact_is_reused_while_its_key_holds)
{
    char *tmp = kbt_mkdtemp();
    char *dir = copy_fixture(tmp);
    char *out = kbi_asprintf("%s/out", tmp);
    cr_assert_eq(kbi_mkdir_p(NULL, out, 0755), 0);
    kb_ctx *ctx = kbt_ctx();
    kb_manifest *m = NULL;
    cr_assert_eq(kbi_manifest_load(ctx, &m, dir, true), 0, "%s", kb_ctx_last_error(ctx)->message);
    char h1[65], h2[65];
    ino_t first = source_artifact(ctx, m, out, 100, h1);
    cr_expect_eq(source_artifact(ctx, m, out, 100, h2), first, "unchanged: reused");
    cr_expect_str_eq(h1, h2);

    char *artifact = kbi_asprintf("%s/kbtest-vec-add-0.1.0-source.tar.zst", out);
    FILE *fp = fopen(artifact, "a"); /* damaged on disk: the sidecar's sha256 no longer holds */
    fputs("x", fp);
    fclose(fp);
    ino_t again = source_artifact(ctx, m, out, 100, h2);
    cr_expect_str_eq(h1, h2, "rewritten to the same bytes");

    char *src = kbi_asprintf("%s/src/vadd_cpu.c", dir);
    cr_assert_eq(chmod(src, 0755), 0);
    ino_t exec = source_artifact(ctx, m, out, 100, h2);
    cr_expect_neq(exec, again, "an exec bit is recorded in the archive");
    cr_expect_str_neq(h1, h2);
    cr_assert_eq(chmod(src, 0644), 0);
    ino_t back = source_artifact(ctx, m, out, 100, h2);
    cr_expect_str_eq(h1, h2);
    cr_expect_neq(source_artifact(ctx, m, out, 101, h2), back, "another epoch");
    fp = fopen(src, "a");
    fputs("/* changed */\n", fp);
    fclose(fp);
    ino_t edited = source_artifact(ctx, m, out, 101, h1);
    cr_expect_str_neq(h1, h2, "an edit gives other bytes");
    cr_expect_eq(source_artifact(ctx, m, out, 101, h2), edited);
    free(src);
    free(artifact);
    kb_manifest_free(m);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(out);
    free(dir);
    free(tmp);
}

static kb_build_result *build_cpu(kb_ctx *ctx, const char *dir, const char *tmp, const char *out)
{
    const char *filters[] = {"cpu-x86_64_v2"};
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    o.targets = filters;
    o.target_count = 1;
    o.jobs = 1;
    char *outdir = kbi_asprintf("%s/%s", tmp, out);
    char *work = kbi_asprintf("%s/work", tmp);
    o.out_dir = outdir;
    o.work_dir = work;
    kb_build_result *r = NULL;
    cr_assert_eq(kb_build(&r, ctx, dir, &o), 0, "%s", kb_ctx_last_error(ctx)->message);
    free(outdir);
    free(work);
    return r;
}

Test(builder, cpu_build_end_to_end_is_reproducible)
{
    char *tmp = kbt_mkdtemp();
    char *dir = copy_fixture(tmp);
    kb_ctx *ctx = kbt_ctx();
    kb_build_result *a = build_cpu(ctx, dir, tmp, "out1");
    cr_assert_eq(a->count, 1);
    cr_assert_eq(a->targets[0].status, KB_BUILD_BUILT, "%s", a->targets[0].message);
    cr_expect_str_eq(a->targets[0].target, "cpu-x86_64_v2-x86_64-linux");
    cr_expect(kbi_str_ends(a->targets[0].artifact,
                           "/kbtest-vec-add-0.1.0-cpu-x86_64_v2-x86_64-linux.tar.zst"));
    cr_expect_not_null(a->source_artifact);
    /* touching sources changes nothing in the output bytes */
    char *cmd = kbi_asprintf("touch '%s/src/vadd_cpu.c'", dir);
    system(cmd);
    free(cmd);
    kb_build_result *b = build_cpu(ctx, dir, tmp, "out2");
    cr_assert_eq(b->targets[0].status, KB_BUILD_BUILT);
    cr_expect_str_eq(a->targets[0].sha256, b->targets[0].sha256, "rebuild must be identical");
    cr_expect_str_eq(a->source_sha256, b->source_sha256);
    cr_expect_str_eq(a->targets[0].build_key, b->targets[0].build_key);

    /* the artifact holds the library, header, LICENSE and kbpkg.json with the fields */
    cmd = kbi_asprintf("cd '%s' && mkdir x && tar -C x -xf '%s' && test -f x/lib/libvec_add.so "
                       "&& test -f x/include/vadd.h && test -f x/LICENSE",
                       tmp, a->targets[0].artifact);
    cr_expect_eq(system(cmd), 0, "artifact layout");
    free(cmd);
    char *json = kbi_asprintf("%s/x/kbpkg.json", tmp);
    kb_buf text = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, json, &text), 0);
    cr_expect(strstr(text.data, "\"name\": \"kbtest/vec-add\""), "%s", text.data);
    cr_expect(strstr(text.data, "\"target\": \"cpu-x86_64_v2-x86_64-linux\""));
    cr_expect(strstr(text.data, "\"-march=x86-64-v2\""));
    cr_expect(strstr(text.data, "\"glibc\": null"), "vadd calls nothing in libc");
    char *key = kbi_asprintf("\"build_key\": \"%s\"", a->targets[0].build_key);
    cr_expect(strstr(text.data, key));
    free(key);
    kbi_buf_free(&text);
    free(json);
    kb_build_result_free(a);
    kb_build_result_free(b);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(builder, failing_source_fails_its_target_only)
{
    char *tmp = kbt_mkdtemp();
    char *dir = copy_fixture(tmp);
    /* a source with an error, used by the v4 target only via per-arch archs */
    char *yaml = kbi_asprintf("%s/kernel.yaml", dir);
    kb_buf y = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, yaml, &y), 0);
    char *p = strstr(y.data, "cpu: { sources: [src/vadd_cpu.c] }");
    cr_assert_not_null(p);
    char *fixed = kbi_asprintf("%.*scpu: { archs: [x86_64_v2, x86_64_v3], sources: "
                               "[src/vadd_cpu.c] }\n",
                               (int)(p - y.data), y.data);
    kbt_write(yaml, fixed);
    char *src = kbi_asprintf("%s/src/vadd_cpu.c", dir);
    kb_buf s = KB_BUF_INIT;
    kbi_read_file(NULL, src, &s);
    char *broken =
        kbi_asprintf("%s\n#if defined(__AVX2__)\nint broken = undeclared_thing;\n#endif\n", s.data);
    kbt_write(src, broken);
    kb_ctx *ctx = kbt_ctx();
    const char *filters[] = {"cpu"};
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    o.targets = filters;
    o.target_count = 1;
    o.jobs = 2;
    char *work = kbi_asprintf("%s/work", tmp);
    o.work_dir = work;
    kb_build_result *r = NULL;
    cr_assert_eq(kb_build(&r, ctx, dir, &o), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_eq(r->count, 2);
    cr_expect_eq(r->failed, 1);
    cr_expect_eq(r->built, 1);
    for (size_t i = 0; i < r->count; i++) {
        if (strstr(r->targets[i].target, "x86_64_v3")) {
            cr_expect_eq(r->targets[i].status, KB_BUILD_FAILED);
            cr_expect(strstr(r->targets[i].message, "undeclared_thing"), "%s",
                      r->targets[i].message);
            cr_expect(strstr(r->targets[i].message, "src/vadd_cpu.c:"));
        } else
            cr_expect_eq(r->targets[i].status, KB_BUILD_BUILT, "%s", r->targets[i].message);
    }
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbi_buf_free(&y);
    kbi_buf_free(&s);
    free(yaml);
    free(fixed);
    free(src);
    free(broken);
    free(work);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(builder, missing_export_fails_verification)
{
    char *tmp = kbt_mkdtemp();
    char *dir = copy_fixture(tmp);
    char *yaml = kbi_asprintf("%s/kernel.yaml", dir);
    kb_buf y = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, yaml, &y), 0);
    char *p = strstr(y.data, "exports: [vadd_f32]");
    cr_assert_not_null(p);
    char *changed = kbi_asprintf("%.*sexports: [vadd_f32, vadd_f16]%s", (int)(p - y.data), y.data,
                                 p + strlen("exports: [vadd_f32]"));
    kbt_write(yaml, changed);
    kb_ctx *ctx = kbt_ctx();
    kb_build_result *r = build_cpu(ctx, dir, tmp, "out");
    cr_assert_eq(r->count, 1);
    cr_expect_eq(r->targets[0].status, KB_BUILD_FAILED);
    cr_expect(strstr(r->targets[0].message,
                     "libvec_add.so does not export vadd_f16 (declared in exports)"),
              "%s", r->targets[0].message);
    kb_build_result_free(r);
    kb_ctx_free(ctx);
    kbi_buf_free(&y);
    free(yaml);
    free(changed);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(builder, reads_glibc_needs_and_exports_of_an_elf)
{
    kb_ctx *ctx = kbt_ctx();
    char glibc[16], glibcxx[16];
    cr_assert_eq(kbi_verify_glibc_needs(ctx, "/proc/self/exe", glibc, glibcxx), 0);
    cr_expect(kbi_str_starts(glibc, "2."), "got '%s'", glibc);
    cr_expect_str_eq(glibcxx, "");
    kb_strv req = KB_STRV_INIT;
    kbi_strv_push(&req, "no_such_symbol_here");
    cr_expect_eq(kbi_verify_exports(ctx, "/proc/self/exe", &req), KB_ERR_BUILD);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "does not export no_such_symbol_here"));
    kbi_strv_free(&req);
    kb_ctx_free(ctx);
}

Test(builder, build_target_for_the_fetcher)
{
    char *tmp = kbt_mkdtemp();
    char *dir = copy_fixture(tmp);
    kb_ctx *ctx = kbt_ctx();
    char *cache = kbi_asprintf("%s/cache", tmp), *out = kbi_asprintf("%s/o", tmp);
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", cache), 0);
    char *artifact = NULL;
    cr_assert_eq(kbi_build_target(ctx, &artifact, dir, "cpu-x86_64_v2-x86_64-linux", out), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect(kbi_str_ends(artifact, "/o/kbtest-vec-add-0.1.0-cpu-x86_64_v2-x86_64-linux.tar.zst"),
              "%s", artifact);
    cr_expect(kbi_path_exists(artifact));
    free(artifact);
    cr_expect_eq(kbi_build_target(ctx, &artifact, dir, "cpu", out), KB_ERR_TARGET,
                 "a prefix is not a target id");
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "cpu is not a full target id"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect_null(artifact);
    cr_expect_eq(kbi_build_target(ctx, &artifact, dir, "metal3-apple-arm64-darwin", out),
                 KB_ERR_TARGET, "not declared by the fixture");
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(cache);
    free(out);
    free(dir);
    free(tmp);
}

Test(builder, test_failure_excerpt_keeps_early_fail_lines)
{
    /* stderr's FAIL line comes first (unbuffered), then 30 lines of buffered stdout */
    kb_buf b = KB_BUF_INIT;
    kbi_buf_append(&b, "check: FAIL act_silu special values: 1 wrong\n", 45);
    for (int i = 0; i < 30; i++) {
        char line[64];
        int n = snprintf(line, sizeof line, "check: ok   case %d\n", i);
        kbi_buf_append(&b, line, (size_t)n);
    }
    kbi_buf_append(&b, "check: FAILED (1 problems)\n\n", 28);
    char *x = kbi_test_output_excerpt(b.data, 5);
    cr_assert_not_null(x);
    cr_expect(strncmp(x, "check: FAIL act_silu special values: 1 wrong\n[...]\n", 51) == 0, "%s",
              x);
    cr_expect(strstr(x, "case 29\ncheck: FAILED (1 problems)"), "%s", x);
    cr_expect_not(strstr(x, "case 25\n"), "only the tail's 5 lines: %s", x);
    free(x);
    /* nothing early: just the tail, no marker */
    x = kbi_test_output_excerpt("a\nb\nc\n", 2);
    cr_expect_str_eq(x, "b\nc");
    free(x);
    kbi_buf_free(&b);
}
