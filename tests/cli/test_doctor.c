/* kbpkg doctor: pass/warn/fail with a fix for each check, from a fresh setup to a tampered
 * install and an unreachable registry; exit 1 only when a check fails. */
#include "kbtest.h"
#include "kbpkg/install.h"
#include "registry/pkgindex.h"
#include "registry_harness.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct doctor_env {
    char *dir;
    char *cache, *registry, *config;
    char *env[5]; /* "KBPKG_CACHE=..." etc., NULL-terminated */
} doctor_env;

static doctor_env env_new(void)
{
    doctor_env e = {.dir = kbt_mkdtemp()};
    e.cache = kbi_asprintf("%s/cache", e.dir);
    e.registry = kbi_asprintf("%s/hub", e.dir);
    e.config = kbi_asprintf("%s/config", e.dir);
    e.env[0] = kbi_asprintf("KBPKG_CACHE=%s", e.cache);
    e.env[1] = kbi_asprintf("KBPKG_REGISTRY=%s", e.registry);
    e.env[2] = kbi_asprintf("KBPKG_CONFIG_DIR=%s", e.config);
    e.env[3] = kbi_strdup("KBPKG_DEVICES=none");
    return e;
}

static void env_free(doctor_env *e)
{
    kbt_rmtree(e->dir);
    for (size_t i = 0; i < 4; i++)
        free(e->env[i]);
    free(e->dir);
    free(e->cache);
    free(e->registry);
    free(e->config);
}

/* Run `kbpkg --json doctor [extra]` and parse its output. */
static json_t *doctor_json(const doctor_env *e, const char *extra_flag, const char *extra_value,
                           int *exit_code)
{
    const char *args[] = {"--json", "doctor", extra_flag, extra_value, NULL};
    kbt_run r = kbt_kbpkg((const char *const *)e->env, args);
    *exit_code = r.exit_code;
    json_error_t err;
    json_t *doc = json_loads(r.out, 0, &err);
    cr_assert_not_null(doc, "not JSON (%s): %s / %s", err.text, r.out, r.err);
    kbt_run_free(&r);
    return doc;
}

/* The first check named area with status, or NULL. */
static json_t *find_check(json_t *doc, const char *area, const char *status)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(doc, "checks"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "check")), area) == 0 &&
            strcmp(json_string_value(json_object_get(c, "status")), status) == 0)
            return c;
    }
    return NULL;
}

static const char *field(json_t *check, const char *key)
{
    const char *s = json_string_value(json_object_get(check, key));
    return s ? s : "";
}

Test(doctor, fresh_setup_warns_with_fixes_and_exits_zero)
{
    doctor_env e = env_new();
    int code = -1;
    json_t *doc = doctor_json(&e, NULL, NULL, &code);
    cr_expect_eq(code, 0, "warnings alone exit 0");
    cr_expect(json_is_true(json_object_get(doc, "ok")));
    json_t *reg = find_check(doc, "registry", "warn");
    cr_assert_not_null(reg, "a layout folder that does not exist yet is a warning");
    cr_expect(strstr(field(reg, "message"), e.registry) != NULL, "%s", field(reg, "message"));
    cr_expect(strstr(field(reg, "fix"), "publish something first") != NULL);
    json_t *trust = find_check(doc, "trust", "warn");
    cr_assert_not_null(trust);
    cr_expect_str_eq(field(trust, "message"),
                     "no trusted keys: signed packages cannot be verified");
    cr_expect(strstr(field(trust, "fix"), "kbpkg key trust FILE") != NULL);
    json_t *cache = find_check(doc, "cache", "pass");
    cr_assert_not_null(cache);
    cr_expect(strstr(field(cache, "message"), "0 installed packages verified") != NULL);
    cr_expect(json_is_null(json_object_get(cache, "fix")));
    json_t *gpu = find_check(doc, "gpu", "warn");
    cr_assert_not_null(gpu, "KBPKG_DEVICES=none: no GPU");
    cr_expect(kbi_str_starts(field(gpu, "fix"), "the device list is set to none (probe.devices"),
              "not 'install a driver': %s", field(gpu, "fix"));
    json_t *cc = find_check(doc, "toolchain", "pass");
    cr_expect_not_null(cc, "at least the C compiler is found");
    cr_expect_eq(json_integer_value(json_object_get(json_object_get(doc, "summary"), "fail")), 0);
    json_decref(doc);
    env_free(&e);
}

/* Scaffold kbtest/vadd, build its CPU target, publish it to the layout, install it. */
static char *install_package(const doctor_env *e)
{
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", e->cache), 0);
    cr_assert_eq(kb_ctx_set(ctx, "registry", e->registry), 0);
    cr_assert_eq(kb_ctx_set(ctx, "probe.devices", "none"), 0);
    char *pkg = kbi_asprintf("%s/vadd", e->dir);
    char *dist = kbi_asprintf("%s/dist", e->dir);
    cr_assert_eq(kb_package_new(ctx, "kbtest/vadd", pkg), 0);
    const char *cpu[] = {"cpu"};
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    bo.targets = cpu;
    bo.target_count = 1;
    bo.out_dir = dist;
    bo.no_source_artifact = 1;
    kb_build_result *br = NULL;
    cr_assert_eq(kb_build(&br, ctx, pkg, &bo), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_geq(br->built, 1, "%s", br->count ? br->targets[0].message : "no targets");
    kb_publish_item items[8];
    size_t n = 0;
    for (size_t i = 0; i < br->count && n < 8; i++)
        if (br->targets[i].status == KB_BUILD_BUILT)
            items[n++] = (kb_publish_item){br->targets[i].artifact, br->targets[i].target,
                                           br->targets[i].build_key, "{}"};
    kb_registry *reg = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, e->registry), 0);
    cr_assert_eq(kbi_pkg_publish(reg, "kbtest/vadd", "0.1.0", NULL, items, n, false, NULL, NULL), 0,
                 "%s", kb_ctx_last_error(ctx)->message);
    kb_install_result *ir = NULL;
    kb_install_options io = KB_INSTALL_OPTIONS_INIT;
    cr_assert_eq(kb_install_package(&ir, ctx, "kbtest/vadd", &io), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char *dir = kbi_strdup(kb_install_result_dir(ir));
    kb_install_result_free(ir);
    kb_registry_free(reg);
    kb_build_result_free(br);
    kb_ctx_free(ctx);
    free(pkg);
    free(dist);
    return dir;
}

Test(doctor, published_registry_and_keys_pass)
{
    doctor_env e = env_new();
    free(install_package(&e));
    const char *gen[] = {"key", "generate", "--name", "doctor-test", NULL};
    kbt_run g = kbt_kbpkg((const char *const *)e.env, gen);
    cr_assert_eq(g.exit_code, 0, "%s", g.err);
    kbt_run_free(&g);
    int code = -1;
    json_t *doc = doctor_json(&e, NULL, NULL, &code);
    cr_expect_eq(code, 0);
    json_t *reg = find_check(doc, "registry", "pass");
    cr_assert_not_null(reg, "the layout exists now");
    cr_expect(strstr(field(reg, "message"), "answers") != NULL);
    json_t *trust = find_check(doc, "trust", "pass");
    cr_assert_not_null(trust, "a generated key is trusted and signs");
    cr_expect(strstr(field(trust, "message"), "1 trusted key, default signing key ") != NULL, "%s",
              field(trust, "message"));
    json_t *cache = find_check(doc, "cache", "pass");
    cr_assert_not_null(cache);
    cr_expect(strstr(field(cache, "message"), "1 installed package verified") != NULL, "%s",
              field(cache, "message"));
    json_decref(doc);
    env_free(&e);
}

Test(doctor, tampered_install_fails_with_the_file_and_a_fix)
{
    doctor_env e = env_new();
    char *dir = install_package(&e);
    char *meta = kbi_asprintf("%s/kbpkg.json", dir);
    cr_assert(kbi_path_exists(meta), "%s", meta);
    kbt_write(meta, "{\"tampered\": true}\n");
    int code = -1;
    json_t *doc = doctor_json(&e, NULL, NULL, &code);
    cr_expect_eq(code, 1, "a failed check exits 1");
    cr_expect(json_is_false(json_object_get(doc, "ok")));
    json_t *cache = find_check(doc, "cache", "fail");
    cr_assert_not_null(cache);
    cr_expect(strstr(field(cache, "message"), "kbtest/vadd@0.1.0") != NULL, "%s",
              field(cache, "message"));
    cr_expect(strstr(field(cache, "message"), "kbpkg.json") != NULL, "names the file: %s",
              field(cache, "message"));
    cr_expect_str_eq(field(cache, "fix"),
                     "kbpkg uninstall kbtest/vadd@0.1.0 && kbpkg install kbtest/vadd@0.1.0");
    json_decref(doc);
    /* The text form says the same, with the fix under the failing line. */
    const char *args[] = {"doctor", NULL};
    kbt_run r = kbt_kbpkg((const char *const *)e.env, args);
    cr_expect_eq(r.exit_code, 1);
    cr_expect(strstr(r.out, "fail  cache      kbtest/vadd@0.1.0") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "            fix: kbpkg uninstall kbtest/vadd@0.1.0") != NULL, "%s",
              r.out);
    kbt_run_free(&r);
    free(meta);
    free(dir);
    env_free(&e);
}

Test(doctor, unreachable_registry_fails_naming_it)
{
    doctor_env e = env_new();
    char *url = kbi_asprintf("http://127.0.0.1:%d/kbpkg", kbt_free_port());
    int code = -1;
    json_t *doc = doctor_json(&e, "--registry", url, &code);
    cr_expect_eq(code, 1);
    json_t *reg = find_check(doc, "registry", "fail");
    cr_assert_not_null(reg);
    cr_expect(strstr(field(reg, "message"), "127.0.0.1") != NULL, "%s", field(reg, "message"));
    cr_expect(strstr(field(reg, "fix"), "check the address") != NULL);
    json_decref(doc);
    /* Offline, a remote registry is not contacted: a warning, not a failure. */
    char *offline[] = {e.env[0], e.env[1], e.env[2], e.env[3], "KBPKG_OFFLINE=1", NULL};
    const char *args[] = {"--json", "doctor", "--registry", url, NULL};
    kbt_run r = kbt_kbpkg((const char *const *)offline, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.out);
    doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc);
    cr_expect_not_null(find_check(doc, "registry", "warn"), "%s", r.out);
    json_decref(doc);
    kbt_run_free(&r);
    free(url);
    env_free(&e);
}

Test(doctor, extra_argument_is_a_usage_error)
{
    const char *args[] = {"doctor", "now", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "unexpected argument 'now'") != NULL, "%s", r.err);
    kbt_run_free(&r);
}

/* ---- what doctor says about GPUs and compilers, with the fake CUDA driver and fake tools ---- */

/* `kbpkg --json doctor` with the doctor env minus KBPKG_DEVICES=none, plus extra ("K=V"). */
static json_t *doctor_json_env(const doctor_env *e, const char *const *extra, int *exit_code,
                               char **text_out)
{
    const char *env[16] = {e->env[0], e->env[1], e->env[2]};
    size_t n = 3;
    for (size_t i = 0; extra[i] && n < 15; i++)
        env[n++] = extra[i];
    const char *args[] = {"--json", "doctor", NULL};
    kbt_run r = kbt_kbpkg(env, args);
    *exit_code = r.exit_code;
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "not JSON: %s / %s", r.out, r.err);
    kbt_run_free(&r);
    const char *text[] = {"doctor", NULL};
    r = kbt_kbpkg(env, text);
    *text_out = r.out;
    r.out = NULL;
    kbt_run_free(&r);
    return doc;
}

/* The fake libcuda (tests/fakes/fake_libcuda.c) in the given mode, and no HIP or KFD. */
typedef struct fake_gpu {
    char *lib;
    const char *env[8];
} fake_gpu;

static fake_gpu fake_gpu_env(const char *mode)
{
    const char *path = getenv("KB_FAKE_CUDA");
    cr_assert(path && *path, "KB_FAKE_CUDA is not set (run the tests through ctest)");
    fake_gpu g = {.lib = kbi_asprintf("KBPKG_CUDA_LIB=%s", path)};
    const char *env[] = {g.lib,
                         "KBPKG_HIP_LIB=/nonexistent/libamdhip64.so",
                         "KBPKG_SYSFS_ROOT=/nonexistent-kbpkg-sysfs",
                         mode,
                         "FAKE_CUDA_DEVICES=sm_90:NVIDIA H200:150000000000",
                         "FAKE_CUDA_DRIVER=12040",
                         NULL};
    memcpy(g.env, env, sizeof(env));
    return g;
}

Test(doctor, a_cuda_device_and_its_driver_pass)
{
    doctor_env e = env_new();
    fake_gpu g = fake_gpu_env("FAKE_CUDA_MODE=ok");
    int code = -1;
    char *text = NULL;
    json_t *doc = doctor_json_env(&e, g.env, &code, &text);
    json_t *gpu = find_check(doc, "gpu", "pass");
    cr_assert_not_null(gpu, "%s", text);
    cr_expect_str_eq(field(gpu, "message"), "cuda:0 sm_90 NVIDIA H200 (runtime 12.4)");
    cr_expect_null(find_check(doc, "gpu", "warn"), "a device was found: %s", text);
    json_t *driver = find_check(doc, "driver", "pass");
    cr_assert_not_null(driver, "%s", text);
    cr_expect_str_eq(field(driver, "message"), "CUDA driver 12.4");
    cr_expect_not_null(strstr(text, "pass  gpu        cuda:0 sm_90 NVIDIA H200 (runtime 12.4)\n"),
                       "%s", text);
    cr_expect_not_null(strstr(text, "pass  driver     CUDA driver 12.4\n"), "%s", text);
    json_decref(doc);
    free(text);
    free(g.lib);
    env_free(&e);
}

/* A loaded driver that shows no devices is not told to install the driver. */
Test(doctor, a_driver_without_devices_gets_an_accurate_fix)
{
    doctor_env e = env_new();
    fake_gpu g = fake_gpu_env("FAKE_CUDA_MODE=no_devices");
    int code = -1;
    char *text = NULL;
    json_t *doc = doctor_json_env(&e, g.env, &code, &text);
    cr_expect_eq(code, 0, "no GPU is a warning: %s", text);
    cr_expect_not_null(find_check(doc, "driver", "pass"), "the driver itself answers: %s", text);
    json_t *gpu = find_check(doc, "gpu", "warn");
    cr_assert_not_null(gpu, "%s", text);
    cr_expect_not_null(strstr(field(gpu, "message"), "the CUDA 12.4 driver reports no devices"),
                       "%s", field(gpu, "message"));
    const char *fix = field(gpu, "fix");
    cr_expect_null(strstr(fix, "install the NVIDIA driver"), "%s", fix);
    cr_expect(kbi_str_starts(fix, "the NVIDIA driver is loaded but shows no devices"), "%s", fix);
    cr_expect_not_null(strstr(fix, "CUDA_VISIBLE_DEVICES"), "%s", fix);
    cr_expect_not_null(strstr(fix, "/dev/nvidia*"), "%s", fix);
    cr_expect_not_null(strstr(fix, "nvidia-smi"), "%s", fix);
    json_decref(doc);
    free(text);
    free(g.lib);
    env_free(&e);

    /* no driver at all: installing one is the fix */
    e = env_new();
    const char *none[] = {"KBPKG_CUDA_LIB=/nonexistent/libcuda.so.1",
                          "KBPKG_HIP_LIB=/nonexistent/libamdhip64.so",
                          "KBPKG_SYSFS_ROOT=/nonexistent-kbpkg-sysfs", NULL};
    doc = doctor_json_env(&e, none, &code, &text);
    gpu = find_check(doc, "gpu", "warn");
    cr_assert_not_null(gpu, "%s", text);
    cr_expect(kbi_str_starts(field(gpu, "fix"), "install the NVIDIA driver (libcuda) or ROCm"),
              "%s", field(gpu, "fix"));
    cr_expect_null(find_check(doc, "driver", "pass"), "%s", text);
    json_decref(doc);
    free(text);
    env_free(&e);
}

Test(doctor, toolchains_show_their_version_and_a_missing_one_its_fix)
{
    doctor_env e = env_new();
    char *cc = kbi_asprintf("%s/bin/cc", e.dir);
    kbt_write(cc, "#!/bin/sh\necho 'cc (Fake 9.8.7-1) 9.8.7'\n");
    cr_assert_eq(chmod(cc, 0755), 0);
    char *cc_env = kbi_asprintf("KBPKG_CC=%s", cc);
    const char *extra[] = {cc_env, "KBPKG_NVCC=/nonexistent/nvcc", "KBPKG_DEVICES=none", NULL};
    int code = -1;
    char *text = NULL;
    json_t *doc = doctor_json_env(&e, extra, &code, &text);
    cr_expect_eq(code, 0, "a missing nvcc is a warning: %s", text);
    char *want = kbi_asprintf("cc 9.8.7 (%s)", cc);
    size_t i;
    json_t *c;
    bool cc_seen = false;
    json_array_foreach(json_object_get(doc, "checks"), i, c)
    {
        cc_seen = cc_seen || strcmp(field(c, "message"), want) == 0;
    }
    cr_expect(cc_seen, "no '%s' check: %s", want, text);
    json_t *nvcc = find_check(doc, "toolchain", "warn");
    cr_assert_not_null(nvcc, "%s", text);
    cr_expect_str_eq(field(nvcc, "message"),
                     "nvcc not found: build.nvcc is /nonexistent/nvcc, which is not an executable");
    cr_expect_str_eq(field(nvcc, "fix"), "install the CUDA toolkit (nvcc) or set build.nvcc; only "
                                         "needed to build CUDA targets");
    char *line = kbi_asprintf("pass  toolchain  %s\n", want);
    cr_expect_not_null(strstr(text, line), "%s", text);
    cr_expect_not_null(strstr(text, "warn  toolchain  nvcc not found: build.nvcc is "
                                    "/nonexistent/nvcc, which is not an executable\n"
                                    "            fix: install the CUDA toolkit (nvcc)"),
                       "%s", text);
    json_decref(doc);
    free(text);
    free(line);
    free(want);

    /* no C compiler means nothing can be built: a failure, exit 1 */
    const char *no_cc[] = {"KBPKG_CC=/nonexistent/cc", "KBPKG_DEVICES=none", NULL};
    doc = doctor_json_env(&e, no_cc, &code, &text);
    cr_expect_eq(code, 1, "%s", text);
    json_t *fail = find_check(doc, "toolchain", "fail");
    cr_assert_not_null(fail, "%s", text);
    cr_expect_str_eq(field(fail, "message"),
                     "cc not found: build.cc is /nonexistent/cc, which is not an executable");
    cr_expect(kbi_str_starts(field(fail, "fix"), "install a C compiler"), "%s", field(fail, "fix"));
    json_decref(doc);
    free(text);
    free(cc_env);
    free(cc);
    env_free(&e);
}
