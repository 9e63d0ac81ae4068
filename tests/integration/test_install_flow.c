/* End to end: build a CPU package, publish it, then install, resolve, load, verify, uninstall,
 * gc, offline builds and side-by-side versions, through the CLI and the C API. */
#include "kbtest.h"
#include "archive/extract.h"
#include <jansson.h>
#include "manifests/manifest.h"
#include "publish/publish.h"
#include "registry/pkgindex.h"
#include "kbpkg/trust.h"
#include "registry_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct world {
    char *tmp;
    char *hub;   /* layout registry folder */
    char *cache; /* KBPKG_CACHE */
    char *env_cache;
    char *env_reg;
    char *env_cfg;
} world;

static void world_init(world *w)
{
    w->tmp = kbt_mkdtemp();
    w->hub = kbi_asprintf("%s/hub", w->tmp);
    w->cache = kbi_asprintf("%s/cache", w->tmp);
    w->env_cache = kbi_asprintf("KBPKG_CACHE=%s", w->cache);
    w->env_reg = kbi_asprintf("KBPKG_REGISTRY=%s", w->hub);
    w->env_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s/config", w->tmp);
    setenv("KBPKG_CONFIG_DIR", w->env_cfg + strlen("KBPKG_CONFIG_DIR="), 1);
    setenv("KBPKG_SYSTEM_CONFIG", "/nonexistent/kbpkg.yaml", 1);
    unsetenv("KBPKG_DEVICES");
    unsetenv("KBPKG_ROCM_ALIASES");
}

static void world_free(world *w)
{
    kbt_rmtree(w->tmp);
    free(w->tmp);
    free(w->hub);
    free(w->cache);
    free(w->env_cache);
    free(w->env_reg);
    free(w->env_cfg);
}

/* Copy the fixture package, optionally changing its version. */
static char *fixture_copy(world *w, const char *version)
{
    char *src = kbt_data("builder/vadd");
    char *dst = kbi_asprintf("%s/pkg-%s", w->tmp, version);
    /* the fixture's kbpkg_kernel_info() spells its version out: keep it in step */
    char *cmd = kbi_asprintf("cp -r '%s' '%s' && sed -i 's/^version: .*/version: %s/' "
                             "'%s/kernel.yaml' && sed -i 's/\"0\\.1\\.0\"/\"%s\"/' "
                             "'%s/src/vadd_cpu.c'",
                             src, dst, version, dst, version, dst);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(src);
    return dst;
}

/* Build the cpu targets + source of a package copy and publish them to registry ref. */
static void build_and_publish(world *w, const char *pkgdir, const char *registry)
{
    kb_ctx *ctx = kbt_ctx();
    char *out = kbi_asprintf("%s/dist", pkgdir);
    char *work = kbi_asprintf("%s/work", w->tmp);
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    const char *filters[] = {"cpu"};
    bo.targets = filters;
    bo.target_count = 1;
    bo.out_dir = out;
    bo.work_dir = work;
    kb_build_result *br = NULL;
    cr_assert_eq(kb_build(&br, ctx, pkgdir, &bo), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert(br->built >= 1 && br->failed == 0, "built %zu failed %zu", br->built, br->failed);
    cr_assert_not_null(br->source_artifact);
    kb_publish_item items[16];
    kb_buf cfgs[16];
    size_t n = 0;
    for (size_t i = 0; i < br->count && n < 15; i++) {
        if (br->targets[i].status != KB_BUILD_BUILT)
            continue;
        cfgs[n] = (kb_buf)KB_BUF_INIT;
        cr_assert_eq(
            kbi_extract_read_member(&cfgs[n], ctx, br->targets[i].artifact, "kbpkg.json", 1 << 20),
            0);
        items[n] = (kb_publish_item){br->targets[i].artifact, br->targets[i].target,
                                     br->targets[i].build_key, cfgs[n].data};
        n++;
    }
    cfgs[n] = (kb_buf)KB_BUF_INIT;
    kbi_buf_puts(&cfgs[n], "{\"target\":\"source\"}");
    items[n] = (kb_publish_item){br->source_artifact, "source", NULL, cfgs[n].data};
    n++;
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, registry), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_eq(
        kbi_pkg_publish(r, br->package, br->version, "vector add", items, n, false, NULL, NULL), 0,
        "%s", kb_ctx_last_error(ctx)->message);
    kb_registry_free(r);
    for (size_t i = 0; i < n; i++)
        kbi_buf_free(&cfgs[i]);
    kb_build_result_free(br);
    free(out);
    free(work);
    kb_ctx_free(ctx);
}

static kbt_run kb(world *w, const char *devices, const char *const *args)
{
    char *dev = kbi_asprintf("KBPKG_DEVICES=%s", devices);
    const char *env[] = {w->env_cache, w->env_reg, w->env_cfg, dev, NULL};
    kbt_run r = kbt_kbpkg(env, args);
    free(dev);
    return r;
}

Test(install_flow, cpu_install_list_verify_load_uninstall_gc)
{
    world w;
    world_init(&w);
    char *pkg = fixture_copy(&w, "0.1.0");
    build_and_publish(&w, pkg, w.hub);

    const char *install[] = {"install", "kbtest/vec-add", NULL};
    kbt_run r = kb(&w, "none", install);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "installed kbtest/vec-add 0.1.0 cpu-x86_64_v"), "%s", r.out);
    kbt_run_free(&r);
    r = kb(&w, "none", install);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "up to date kbtest/vec-add 0.1.0"), "%s", r.out);
    kbt_run_free(&r);

    const char *list[] = {"list", "--json", NULL};
    r = kb(&w, "none", list);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "\"name\": \"kbtest/vec-add\""), "%s", r.out);
    kbt_run_free(&r);
    const char *verify[] = {"verify", NULL};
    r = kb(&w, "none", verify);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);

    /* load it through the C API and call it */
    setenv("KBPKG_CACHE", w.cache, 1);
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "none"), 0);
    kb_kernel *k = NULL;
    cr_assert_eq(kb_kernel_open(&k, ctx, "kbtest/vec-add@^0.1", 0), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect(kbi_str_starts(kb_kernel_target(k), "cpu-x86_64_v"));
    cr_expect_str_eq(kb_kernel_version(k), "0.1.0");
    int (*vadd)(float *, const float *, const float *, int, void *) = NULL;
    *(void **)&vadd = kb_kernel_sym(k, "vadd_f32");
    cr_assert_not_null(vadd);
    float a[5] = {1, 2, 3, 4, 5}, b[5] = {10, 20, 30, 40, 50}, out[5] = {0};
    cr_expect_eq(vadd(out, a, b, 5, NULL), 0);
    for (int i = 0; i < 5; i++)
        cr_expect_float_eq(out[i], a[i] + b[i], 1e-6);
    cr_expect_null(kb_kernel_sym(k, "kbpkg_kernel_info"), "only declared exports are handed out");
    const char *dir = kb_kernel_path(k);
    char *lib = kbi_asprintf("%s/lib/libvec_add.so", dir);
    kb_kernel_close(k);
    cr_expect_eq(kb_kernel_open(&k, ctx, "kbtest/vec-add@^2", 0), KB_ERR_NOT_FOUND);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "kbtest/vec-add@^2 is not installed") ||
                  strstr(kb_ctx_last_error(ctx)->message, "no installed target"),
              "%s", kb_ctx_last_error(ctx)->message);
    kb_ctx_free(ctx);
    unsetenv("KBPKG_CACHE");

    /* tamper with the installed library: verify names the file */
    FILE *f = fopen(lib, "ab");
    cr_assert_not_null(f, "%s", lib);
    fputs("tampered", f);
    fclose(f);
    r = kb(&w, "none", verify);
    cr_expect_eq(r.exit_code, 4, "%s %s", r.out, r.err);
    cr_expect(strstr(r.err, lib) && strstr(r.err, "expected"), "%s", r.err);
    kbt_run_free(&r);

    const char *uninstall[] = {"uninstall", "kbtest/vec-add", NULL};
    r = kb(&w, "none", uninstall);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    r = kb(&w, "none", uninstall);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "kbtest/vec-add is not installed"), "%s", r.err);
    kbt_run_free(&r);
    const char *gc[] = {"gc", "--json", NULL};
    r = kb(&w, "none", gc);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "\"removed\": 1"), "the artifact blob is collected: %s", r.out);
    kbt_run_free(&r);
    free(lib);
    free(pkg);
    world_free(&w);
}

/* Publish index entries for GPU targets without building them: resolution reads the index
 * only. The bytes are never installed. */
static void publish_fake_targets(world *w)
{
    kb_ctx *ctx = kbt_ctx();
    char *blob = kbi_asprintf("%s/fake.tar.zst", w->tmp);
    kbt_write(blob, "not an archive: resolution never downloads it");
    const char *targets[] = {"cuda13-sm_80-x86_64-linux",      "cuda13-sm_90-x86_64-linux",
                             "cuda13-compute_80-x86_64-linux", "rocm5-gfx1030-x86_64-linux",
                             "cpu-x86_64_v2-x86_64-linux",     "source"};
    kb_publish_item items[6];
    for (size_t i = 0; i < 6; i++)
        items[i] = (kb_publish_item){blob, targets[i], NULL, "{}"};
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, w->hub), 0);
    cr_assert_eq(
        kbi_pkg_publish(r, "radeonflow/gemm", "1.0.0", "gemm", items, 6, false, NULL, NULL), 0,
        "%s", kb_ctx_last_error(ctx)->message);
    kb_registry_free(r);
    free(blob);
    kb_ctx_free(ctx);
}

static char *resolved_target(world *w, const char *devices, const char *extra)
{
    const char *args[] = {"resolve", "radeonflow/gemm", "--json", extra, NULL};
    kbt_run r = kb(w, devices, args);
    cr_assert_eq(r.exit_code, 0, "devices %s: %s", devices, r.err);
    json_error_t jerr;
    json_t *o = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(o, "%s", r.out);
    char *t = kbi_strdup(json_string_value(json_object_get(o, "target")));
    json_decref(o);
    kbt_run_free(&r);
    return t;
}

Test(install_flow, resolution_by_device)
{
    world w;
    world_init(&w);
    publish_fake_targets(&w);
    struct {
        const char *devices, *extra, *want;
    } cases[] = {
        {"sm_86", NULL, "cuda13-sm_80-x86_64-linux"},
        {"sm_90", NULL, "cuda13-sm_90-x86_64-linux"},
        {"sm_89@cuda13.0", NULL, "cuda13-sm_80-x86_64-linux"},
        {"sm_120", NULL, "cuda13-compute_80-x86_64-linux"},
        {"gfx1030", NULL, "rocm5-gfx1030-x86_64-linux"},
        {"x86_64_v3", NULL, "cpu-x86_64_v2-x86_64-linux"},
        {"none", NULL, "cpu-x86_64_v2-x86_64-linux"},
        {"gfx1031", "--set=rocm.aliases=gfx1031=gfx1030", "rocm5-gfx1030-x86_64-linux"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        char *t = resolved_target(&w, cases[i].devices, cases[i].extra);
        cr_expect_str_eq(t, cases[i].want, "devices %s", cases[i].devices);
        free(t);
    }
    /* sm_75: the compute_80 PTX needs >= 80, no SASS fits: a local build with nvcc, or a
     * clear refusal naming what the registry has */
    const char *sm75[] = {"resolve", "radeonflow/gemm", "--json", NULL};
    kbt_run r75 = kb(&w, "sm_75", sm75);
    if (r75.exit_code == 0)
        cr_expect(strstr(r75.out, "\"target\": \"cuda13-sm_75-x86_64-linux\"") &&
                      strstr(r75.out, "\"rank\": \"local-build\""),
                  "%s", r75.out);
    else
        cr_expect(strstr(r75.err, "compute_80") && strstr(r75.err, "sm_75"), "%s", r75.err);
    kbt_run_free(&r75);
    /* gfx1031 without the alias: a local build (hipcc present) or a clear refusal */
    const char *explain[] = {"resolve", "radeonflow/gemm", "--explain", NULL};
    kbt_run r = kb(&w, "gfx1031", explain);
    cr_expect(strstr(r.out, "rocm5-gfx1030-x86_64-linux") && strstr(r.out, "gfx1031"), "%s%s",
              r.out, r.err);
    if (r.exit_code == 0)
        cr_expect(strstr(r.out, "build rocm5-gfx1031-x86_64-linux from source"), "%s", r.out);
    kbt_run_free(&r);
    /* a driver older than the artifacts' CUDA major: nothing prebuilt fits */
    const char *nobuild[] = {"resolve", "radeonflow/gemm", "--no-build", NULL};
    r = kb(&w, "sm_86@cuda12.4", nobuild);
    cr_expect_eq(r.exit_code, 3, "%s %s", r.out, r.err);
    cr_expect(strstr(r.err, "nothing in radeonflow/gemm@1.0.0 fits this machine (sm_86)"), "%s",
              r.err);
    cr_expect(strstr(r.err, "cuda13-sm_80-x86_64-linux: "), "lists what the registry has: %s",
              r.err);
    kbt_run_free(&r);
    world_free(&w);
}

/* An index with the AMD targets the first-party packages publish (never downloaded). */
static void publish_fake_amd_targets(world *w, const char *const *targets, size_t n)
{
    kb_ctx *ctx = kbt_ctx();
    char *blob = kbi_asprintf("%s/fake-amd.tar.zst", w->tmp);
    kbt_write(blob, "not an archive: resolution never downloads it");
    kb_publish_item items[16];
    cr_assert_leq(n, KB_ARRAY_LEN(items));
    for (size_t i = 0; i < n; i++)
        items[i] = (kb_publish_item){blob, targets[i], NULL, "{}"};
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, w->hub), 0);
    cr_assert_eq(
        kbi_pkg_publish(r, "radeonflow/gemm", "1.0.0", "gemm", items, n, false, NULL, NULL), 0,
        "%s", kb_ctx_last_error(ctx)->message);
    kb_registry_free(r);
    free(blob);
    kb_ctx_free(ctx);
}

/* Publish only a source entry for name whose config says which targets it declares (as
 * kbi_pub_source_artifact writes it): resolution must then plan local builds from that list. */
static void publish_source_declaring(world *w, const char *name, const char *declared)
{
    kb_ctx *ctx = kbt_ctx();
    char *blob = kbi_asprintf("%s/src.tar.zst", w->tmp);
    kbt_write(blob, "not an archive: resolution never downloads it");
    char *cfg = kbi_asprintf("{\"declared_targets\":\"%s\",\"target\":\"source\"}", declared);
    kb_publish_item item = {blob, "source", NULL, cfg};
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, w->hub), 0);
    cr_assert_eq(kbi_pkg_publish(r, name, "1.0.0", "fixture", &item, 1, false, NULL, NULL), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    kb_registry_free(r);
    free(cfg);
    free(blob);
    kb_ctx_free(ctx);
}

/* Fake AMD devices: MI300 (gfx942), Strix Halo (gfx1151), RX 6700 XT (gfx1031) native vs
 * generic vs alias, RDNA4 (gfx1201), and ROCm 5 vs ROCm 6 hosts. */
Test(install_flow, amd_archs_resolve_by_device_and_runtime)
{
    world w;
    world_init(&w);
    const char *all[] = {"rocm5-gfx1030-x86_64-linux",       "rocm5-gfx1100-x86_64-linux",
                         "rocm6-gfx1030-x86_64-linux",       "rocm6-gfx1031-x86_64-linux",
                         "rocm6-gfx1100-x86_64-linux",       "rocm6-gfx1151-x86_64-linux",
                         "rocm6-gfx1200-x86_64-linux",       "rocm6-gfx1201-x86_64-linux",
                         "rocm6-gfx942-x86_64-linux",        "rocm6-gfx10-3-generic-x86_64-linux",
                         "rocm6-gfx11-generic-x86_64-linux", "rocm6-gfx12-generic-x86_64-linux",
                         "cpu-x86_64_v2-x86_64-linux"};
    publish_fake_amd_targets(&w, all, KB_ARRAY_LEN(all));
    struct {
        const char *devices, *extra, *want;
    } cases[] = {
        {"gfx942:sramecc+:xnack-@rocm6.2", NULL, "rocm6-gfx942-x86_64-linux"},
        {"gfx1151@rocm6.2", NULL, "rocm6-gfx1151-x86_64-linux"},
        {"gfx1031@rocm6.2", NULL, "rocm6-gfx1031-x86_64-linux"},
        {"gfx1031@rocm6.2", "--set=rocm.aliases=gfx1031=gfx1030", "rocm6-gfx1031-x86_64-linux"},
        {"gfx1201@rocm6.3", NULL, "rocm6-gfx1201-x86_64-linux"},
        {"gfx1030@rocm6.2", NULL, "rocm6-gfx1030-x86_64-linux"},
        {"gfx1030@rocm5.2", NULL, "rocm5-gfx1030-x86_64-linux"},
        {"gfx1100@rocm5.7", NULL, "rocm5-gfx1100-x86_64-linux"},
        /* a gfx11 chip nothing was built for natively: the generic code object */
        {"gfx1102@rocm6.2", NULL, "rocm6-gfx11-generic-x86_64-linux"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(cases); i++) {
        char *t = resolved_target(&w, cases[i].devices, cases[i].extra);
        cr_expect_str_eq(t, cases[i].want, "devices %s", cases[i].devices);
        free(t);
    }
    /* gfx1031 without its native artifact: generic first, the gfx1030 alias only by opt-in,
     * and on ROCm 6.1 (no code object v6) the alias or nothing */
    kbt_rmtree(w.hub);
    const char *no1031[] = {"rocm6-gfx1030-x86_64-linux", "rocm6-gfx10-3-generic-x86_64-linux"};
    publish_fake_amd_targets(&w, no1031, KB_ARRAY_LEN(no1031));
    char *t = resolved_target(&w, "gfx1031@rocm6.2", "--set=rocm.aliases=gfx1031=gfx1030");
    cr_expect_str_eq(t, "rocm6-gfx10-3-generic-x86_64-linux");
    free(t);
    t = resolved_target(&w, "gfx1031@rocm6.1", "--set=rocm.aliases=gfx1031=gfx1030");
    cr_expect_str_eq(t, "rocm6-gfx1030-x86_64-linux");
    free(t);
    const char *explain[] = {"resolve", "radeonflow/gemm", "--explain", "--no-build", NULL};
    kbt_run r = kb(&w, "gfx1031@rocm6.2", explain);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "rocm6-gfx10-3-generic-x86_64-linux") &&
                  strstr(r.out, "gfx10-3-generic code runs on gfx1031"),
              "--explain names the generic code it took: %s", r.out);
    cr_expect(strstr(r.out, "the alias gfx1031=gfx1030 in rocm.aliases would opt in"), "%s", r.out);
    kbt_run_free(&r);
    r = kb(&w, "gfx1031@rocm6.1", explain);
    cr_expect_eq(r.exit_code, 3, "%s %s", r.out, r.err);
    cr_expect(
        strstr(r.err, "code object v6, which ROCm loads from 6.2 on; the device has ROCm 6.1"),
        "the refusal of the generic code says why: %s", r.err);
    kbt_run_free(&r);

    /* only a source: the local build links against the device's runtime (hip-clang for
     * ROCm 6, hipcc for ROCm 5) */
    kbt_rmtree(w.hub);
    const char *source[] = {"source"};
    publish_fake_amd_targets(&w, source, 1);
    const char *explain_build[] = {"resolve", "radeonflow/gemm", "--explain", NULL};
    struct {
        const char *devices, *tool, *want;
    } builds[] = {{"gfx1201@rocm6.3", "clang-19", "build rocm6-gfx1201-x86_64-linux from source"},
                  {"gfx1030@rocm6.2", "clang-19", "build rocm6-gfx1030-x86_64-linux from source"},
                  {"gfx1030@rocm5.2", "hipcc", "build rocm5-gfx1030-x86_64-linux from source"}};
    for (size_t i = 0; i < KB_ARRAY_LEN(builds); i++) {
        char *tool = NULL;
        bool have = kbi_which(&tool, builds[i].tool) == 0;
        free(tool);
        r = kb(&w, builds[i].devices, explain_build);
        if (have)
            cr_expect(strstr(r.out, builds[i].want), "%s: %s %s", builds[i].devices, r.out, r.err);
        kbt_run_free(&r);
    }

    /* a probed ROCm 6 host (KFD fixture + fake libamdhip64 saying 6.2) takes the rocm6
     * artifact and refuses the rocm5 one for its soname */
    kbt_rmtree(w.hub);
    const char *both[] = {"rocm5-gfx1030-x86_64-linux", "rocm6-gfx1030-x86_64-linux"};
    publish_fake_amd_targets(&w, both, KB_ARRAY_LEN(both));
    char *sysfs = kbt_data("sysfs/gfx1030");
    char *e_sysfs = kbi_asprintf("KBPKG_SYSFS_ROOT=%s", sysfs);
    char *e_hip = kbi_asprintf("KBPKG_HIP_LIB=%s", getenv("KB_FAKE_HIP"));
    const char *env[] = {w.env_cache,
                         w.env_reg,
                         w.env_cfg,
                         e_sysfs,
                         e_hip,
                         "KBPKG_CUDA_LIB=/nonexistent/libcuda.so.1",
                         "FAKE_HIP_RUNTIME=60241134",
                         NULL};
    r = kbt_kbpkg(env, explain);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "rocm6-gfx1030-x86_64-linux"), "%s", r.out);
    cr_expect(strstr(r.out, "rocm5-gfx1030 needs libamdhip64.so.5 (HIP runtime 5), the host has "
                            "HIP runtime 6.2 (libamdhip64.so.6)"),
              "%s", r.out);
    kbt_run_free(&r);
    const char *json[] = {"resolve", "radeonflow/gemm", "--json", "--no-build", NULL};
    r = kbt_kbpkg(env, json);
    cr_expect(strstr(r.out, "\"target\": \"rocm6-gfx1030-x86_64-linux\""), "%s", r.out);
    kbt_run_free(&r);
    free(sysfs);
    free(e_sysfs);
    free(e_hip);
    world_free(&w);
}

/* Issue 13 bug 6: a local build was planned for the device's arch whatever the package
 * declared (a ROCm-only package on an sm_90 host, llm.c's sm_80/sm_90 on sm_75) and failed
 * later with exit 5. Now: exit 3 naming what is declared, or a build of a declared arch the
 * device runs (family rules). Needs nvcc for the planned builds (CI's images have it). */
Test(install_flow, local_build_only_for_declared_targets)
{
    world w;
    world_init(&w);
    publish_source_declaring(&w, "rk/fp8gemm", "rocm-gfx90a,rocm-gfx942");
    publish_source_declaring(&w, "rk/llmc", "cuda-sm_80,cuda-sm_90,cuda-compute_80,cpu");
    publish_source_declaring(&w, "rk/hopper", "cuda-sm_90a");
    struct {
        const char *pkg, *devices, *err;
    } refused[] = {
        {"rk/fp8gemm", "sm_90",
         "source: cannot build here: the package declares rocm-gfx90a, rocm-gfx942; none runs "
         "on sm_90"},
        {"rk/llmc", "sm_75",
         "source: cannot build here: the package declares cuda-sm_80, cuda-sm_90, "
         "cuda-compute_80, cpu; none runs on sm_75"},
        {"rk/hopper", "sm_89", "the package declares cuda-sm_90a; none runs on sm_89"},
        {"rk/fp8gemm", "none",
         "the package declares rocm-gfx90a, rocm-gfx942; none runs on "
         "this CPU"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(refused); i++) {
        const char *args[] = {"resolve", refused[i].pkg, NULL};
        kbt_run r = kb(&w, refused[i].devices, args);
        cr_expect_eq(r.exit_code, 3, "%s on %s: %s%s", refused[i].pkg, refused[i].devices, r.out,
                     r.err);
        cr_expect(strstr(r.err, refused[i].err), "%s on %s: %s", refused[i].pkg, refused[i].devices,
                  r.err);
        kbt_run_free(&r);
    }
    /* family rules: sm_80 SASS runs on sm_86, sm_90a on sm_90, compute_80 PTX on sm_120 */
    struct {
        const char *pkg, *devices, *arch;
    } planned[] = {
        {"rk/llmc", "sm_86", "-sm_80-"},
        {"rk/llmc", "sm_90", "-sm_90-"},
        {"rk/llmc", "sm_120", "-compute_80-"},
        {"rk/hopper", "sm_90", "-sm_90a-"},
    };
    for (size_t i = 0; i < KB_ARRAY_LEN(planned); i++) {
        const char *args[] = {"resolve", planned[i].pkg, "--json", NULL};
        kbt_run r = kb(&w, planned[i].devices, args);
        cr_expect_eq(r.exit_code, 0, "%s on %s: %s", planned[i].pkg, planned[i].devices, r.err);
        cr_expect(strstr(r.out, "\"rank\": \"local-build\"") && strstr(r.out, planned[i].arch),
                  "%s on %s builds %s: %s", planned[i].pkg, planned[i].devices, planned[i].arch,
                  r.out);
        kbt_run_free(&r);
    }
    world_free(&w);
}

/* The declared targets travel manifest -> source config -> source descriptor -> index. */
Test(install_flow, index_records_declared_targets)
{
    world w;
    world_init(&w);
    kb_ctx *ctx = kbt_ctx();
    char *dir = kbt_data("builder/vadd");
    kb_manifest *m = NULL;
    cr_assert_eq(kbi_manifest_load(ctx, &m, dir, true), 0, "%s", kb_ctx_last_error(ctx)->message);
    kb_pub_artifact src;
    char *out = kbi_asprintf("%s/dist", w.tmp);
    cr_assert_eq(kbi_pub_source_artifact(&src, ctx, m, "0.1.0", "sha256:00", out), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    kb_publish_item item = {src.path, src.target, src.build_key, src.config_json};
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, w.hub), 0);
    cr_assert_eq(kbi_pkg_publish(r, m->name, "0.1.0", NULL, &item, 1, false, NULL, NULL), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    kb_pkg_index *idx = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&idx, r, m->name, "0.1.0", NULL), 0);
    cr_expect_str_eq(idx->declared ? idx->declared : "(none)",
                     "cuda-sm_80,cuda-compute_80,rocm-gfx1030,rocm-gfx1100,cpu");
    kbi_pkg_index_free(idx);
    kb_registry_free(r);
    kbi_pub_artifact_clear(&src);
    kb_manifest_free(m);
    free(out);
    free(dir);
    kb_ctx_free(ctx);
    world_free(&w);
}

Test(install_flow, two_versions_side_by_side_in_one_process)
{
    world w;
    world_init(&w);
    char *p1 = fixture_copy(&w, "0.1.0");
    char *p2 = fixture_copy(&w, "0.2.0");
    build_and_publish(&w, p1, w.hub);
    build_and_publish(&w, p2, w.hub);
    const char *i1[] = {"install", "kbtest/vec-add@0.1.0", NULL};
    const char *i2[] = {"install", "kbtest/vec-add@0.2.0", NULL};
    kbt_run r = kb(&w, "none", i1);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    r = kb(&w, "none", i2);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    setenv("KBPKG_CACHE", w.cache, 1);
    kb_ctx *ctx = kbt_ctx();
    kb_ctx_set(ctx, "probe.devices", "none");
    kb_kernel *a = NULL, *b = NULL;
    cr_assert_eq(kb_kernel_open(&a, ctx, "kbtest/vec-add@0.1.0", 0), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_eq(kb_kernel_open(&b, ctx, "kbtest/vec-add@0.2.0", 0), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect_str_eq(kb_kernel_version(a), "0.1.0");
    cr_expect_str_eq(kb_kernel_version(b), "0.2.0");
    cr_expect_neq(kb_kernel_sym(a, "vadd_f32"), kb_kernel_sym(b, "vadd_f32"),
                  "each version keeps its own copy (RTLD_LOCAL)");
    kb_kernel *c = NULL;
    cr_assert_eq(kb_kernel_open(&c, ctx, "kbtest/vec-add", 0), 0);
    cr_expect_str_eq(kb_kernel_version(c), "0.2.0", "no constraint: the highest installed");
    kb_kernel_close(c);
    kb_kernel_close(a);
    kb_kernel_close(b);
    kb_ctx_free(ctx);
    unsetenv("KBPKG_CACHE");
    free(p1);
    free(p2);
    world_free(&w);
}

Test(install_flow, offline_build_from_fetched_source_opens_no_socket)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed");
    world w;
    world_init(&w);
    kbt_registry reg;
    kbt_registry_start(&reg, NULL, NULL);
    char *pkg = fixture_copy(&w, "0.3.0");
    build_and_publish(&w, pkg, reg.url);
    char *env_remote = kbi_asprintf("KBPKG_REGISTRY=%s", reg.url);
    const char *env[] = {w.env_cache, env_remote, w.env_cfg, "KBPKG_DEVICES=none", NULL};
    const char *fetch[] = {"fetch", "--source", "kbtest/vec-add", "--allow-unsigned", NULL};
    kbt_run r = kbt_kbpkg(env, fetch);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    kbt_registry_stop(&reg); /* the registry is gone: offline must not need it */
    const char *offline[] = {"install", "kbtest/vec-add", "--offline", NULL};
    r = kbt_kbpkg(env, offline);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "built and installed kbtest/vec-add 0.3.0 cpu-x86_64_v"), "%s", r.out);
    kbt_run_free(&r);
    /* --offline never opens a socket: strace counts connect() calls */
    char *strace = NULL;
    if (kbi_which(&strace, "strace") == 0) {
        char *bin = getenv("KBPKG_BIN");
        char *cmd = kbi_asprintf("env KBPKG_CACHE='%s' KBPKG_REGISTRY='%s' KBPKG_CONFIG_DIR="
                                 "'%s/config' KBPKG_DEVICES=none strace -f -e trace=connect,socket "
                                 "-o '%s/strace.log' '%s' install kbtest/vec-add --offline "
                                 ">/dev/null 2>&1; grep -c -E 'AF_INET|AF_INET6' '%s/strace.log'",
                                 w.cache, reg.url, w.tmp, w.tmp, bin, w.tmp);
        FILE *p = popen(cmd, "r");
        char line[32] = "";
        if (p && fgets(line, sizeof(line), p))
            cr_expect_eq(strtol(line, NULL, 10), 0, "offline install opened %s network sockets",
                         line);
        if (p)
            pclose(p);
        free(cmd);
        free(strace);
    }
    free(env_remote);
    free(pkg);
    world_free(&w);
}

Test(install_flow, docker_registry_round_trip)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed");
    world w;
    world_init(&w);
    kbt_registry reg;
    kbt_registry_start(&reg, NULL, NULL);
    char *pkg = fixture_copy(&w, "0.4.0");
    build_and_publish(&w, pkg, reg.url);
    char *env_remote = kbi_asprintf("KBPKG_REGISTRY=%s", reg.url);
    const char *env[] = {w.env_cache, env_remote, w.env_cfg, "KBPKG_DEVICES=none", NULL};
    /* a remote registry requires a trusted signature by default */
    const char *unsigned_install[] = {"install", "kbtest/vec-add@^0.4", NULL};
    kbt_run r = kbt_kbpkg(env, unsigned_install);
    cr_expect_eq(r.exit_code, 4, "%s", r.err);
    cr_expect(strstr(r.err, "kbtest/vec-add@0.4.0") && strstr(r.err, "sha256:"), "%s", r.err);
    kbt_run_free(&r);
    const char *list[] = {"list", "--json", NULL};
    r = kbt_kbpkg(env, list);
    cr_expect(strstr(r.out, "\"installed\": []"), "nothing installed after a refusal: %s", r.out);
    kbt_run_free(&r);
    /* sign the index with a fresh key (trusted: generated keys trust themselves) */
    setenv("KBPKG_CONFIG_DIR", w.env_cfg + strlen("KBPKG_CONFIG_DIR="), 1);
    kb_ctx *ctx = kbt_ctx();
    kb_trust_key *key = NULL;
    cr_assert_eq(kb_trust_key_generate(&key, ctx, "ci"), 0, "%s", kb_ctx_last_error(ctx)->message);
    kb_trust_key_free(key);
    kb_registry *rr = NULL;
    cr_assert_eq(kb_registry_open(&rr, ctx, reg.url), 0);
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&ix, rr, "kbtest/vec-add", "0.4.0", NULL), 0);
    cr_assert_eq(kb_trust_sign_index(NULL, ctx, rr, "kbtest/vec-add", "0.4.0", ix->digest, NULL), 0,
                 "%s", kb_ctx_last_error(ctx)->message);
    kbi_pkg_index_free(ix);
    kb_registry_free(rr);
    kb_ctx_free(ctx);
    const char *install[] = {"install", "kbtest/vec-add@^0.4", "--json", NULL};
    r = kbt_kbpkg(env, install);
    cr_assert_eq(r.exit_code, 0, "a signed package installs: %s", r.err);
    cr_expect(strstr(r.out, "\"version\": \"0.4.0\""), "%s", r.out);
    kbt_run_free(&r);
    const char *info[] = {"info", "kbtest/vec-add", NULL};
    r = kbt_kbpkg(env, info);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "vector add") && strstr(r.out, "installed: 0.4.0"), "%s", r.out);
    kbt_run_free(&r);
    const char *search[] = {"search", "VEC", NULL};
    r = kbt_kbpkg(env, search);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "kbtest/vec-add"), "%s", r.out);
    kbt_run_free(&r);
    kbt_registry_stop(&reg);
    free(env_remote);
    free(pkg);
    world_free(&w);
}

static const char *open_version(kb_ctx *ctx, const char *ref, kb_kernel **k)
{
    int rc = kb_kernel_open(k, ctx, ref, 0);
    cr_assert_eq(rc, 0, "open %s: %s", ref, kb_ctx_last_error(ctx)->message);
    return kb_kernel_version(*k);
}

/* kb_kernel_open remembers per ctx what a ref resolved to; what other processes install or
 * uninstall in between must still be seen by the next open, in the same process and ctx. */
Test(install_flow, a_warm_open_sees_what_other_processes_install_and_uninstall)
{
    world w;
    world_init(&w);
    char *p1 = fixture_copy(&w, "0.1.0");
    char *p2 = fixture_copy(&w, "0.2.0");
    build_and_publish(&w, p1, w.hub);
    build_and_publish(&w, p2, w.hub);
    const char *i1[] = {"install", "kbtest/vec-add@0.1.0", NULL};
    const char *i2[] = {"install", "kbtest/vec-add@0.2.0", NULL};
    const char *u2[] = {"uninstall", "kbtest/vec-add@0.2.0", NULL};
    const char *u1[] = {"uninstall", "kbtest/vec-add@0.1.0", NULL};
    kbt_run r = kb(&w, "none", i1);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);

    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", w.cache), 0);
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "none"), 0);
    cr_assert_eq(kb_ctx_set(ctx, "registry", w.hub), 0);
    kb_kernel *k = NULL;
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &k), "0.1.0");
    char *dir = kbi_strdup(kb_kernel_path(k));
    kb_kernel_close(k);
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &k), "0.1.0");
    kb_kernel_close(k);

    /* a warm open reads no record: with 0.1.0's record moved away by hand (no kbpkg change,
     * so no new generation) the remembered answer still loads */
    char *record = kbi_path_join(dir, "kbpkg-install.json");
    char *aside = kbi_asprintf("%s/record-aside.json", w.tmp);
    cr_assert_eq(rename(record, aside), 0, "%s", record);
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &k), "0.1.0");
    kb_kernel_close(k);
    /* ... and a setting change forgets it: the folder without a record is no install */
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "none"), 0);
    cr_expect_eq(kb_kernel_open(&k, ctx, "kbtest/vec-add", 0), KB_ERR_NOT_FOUND);
    cr_assert_eq(rename(aside, record), 0);
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &k), "0.1.0");
    kb_kernel_close(k);

    /* another process installs a higher version: seen at once */
    r = kb(&w, "none", i2);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &k), "0.2.0");
    kb_kernel_close(k);
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add@0.1.0", &k), "0.1.0");
    kb_kernel_close(k);

    /* ... and uninstalls it, while this process still holds it open */
    kb_kernel *held = NULL;
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &held), "0.2.0");
    r = kb(&w, "none", u2);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &k), "0.1.0");
    kb_kernel_close(k);
    kb_kernel_close(held);

    /* an install by this ctx itself (KB_OPEN_INSTALL) is seen by the next plain open */
    cr_assert_eq(
        kb_kernel_open(&k, ctx, "kbtest/vec-add@0.2.0", KB_OPEN_INSTALL | KB_OPEN_ALLOW_UNSIGNED),
        0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect_str_eq(kb_kernel_version(k), "0.2.0");
    kb_kernel_close(k);
    cr_expect_str_eq(open_version(ctx, "kbtest/vec-add", &k), "0.2.0");
    kb_kernel_close(k);

    /* everything uninstalled: not found, naming the package */
    r = kb(&w, "none", u1);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    r = kb(&w, "none", u2);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    cr_expect_eq(kb_kernel_open(&k, ctx, "kbtest/vec-add", 0), KB_ERR_NOT_FOUND);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "kbtest/vec-add"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect_null(k);

    kb_ctx_free(ctx);
    free(dir), free(record), free(aside);
    free(p1);
    free(p2);
    world_free(&w);
}
