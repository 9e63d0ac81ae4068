/* kbpkg bench on installed packages: the installed library is what runs, --json fields, --publish
 * to a folder registry and to docker-registry, results kept per device, info and hub show them,
 * and bad input (unknown package, no bench, a refusing registry) fails clearly, losing nothing. */
#include "json_schema.h"
#include "kbtest.h"
#include "registry_harness.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PKG "kbpkg-community/rmsnorm"
#define TARGET "cpu-x86_64_v2-x86_64-linux"

typedef struct world {
    char *tmp, *pkg, *hub, *env_cache, *env_cfg, *env_reg, *env_cpu;
    const char *env[10];
} world;

/* A copy of the rmsnorm package (publish writes dist/ into it), a folder hub, a cache. */
static void world_init(world *w, const char *registry, const char *cpuinfo)
{
    memset(w, 0, sizeof(*w));
    w->tmp = kbt_mkdtemp();
    w->pkg = kbi_asprintf("%s/rmsnorm", w->tmp);
    w->hub = registry ? kbi_strdup(registry) : kbi_asprintf("%s/hub", w->tmp);
    w->env_cache = kbi_asprintf("KBPKG_CACHE=%s/cache", w->tmp);
    w->env_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s/config", w->tmp);
    w->env_reg = kbi_asprintf("KBPKG_REGISTRY=%s", w->hub);
    char *info = kbt_data(cpuinfo);
    w->env_cpu = kbi_asprintf("KBPKG_CPUINFO=%s", info);
    free(info);
    const char *env[] = {w->env_cache,
                         w->env_cfg,
                         w->env_reg,
                         w->env_cpu,
                         "KBPKG_SYSTEM_CONFIG=/nonexistent",
                         "KBPKG_DEVICES=none",
                         "KBPKG_CPU=x86_64_v2",
                         NULL};
    memcpy(w->env, env, sizeof(env));
    char *src = kbt_source("kernels/kbpkg-community/rmsnorm");
    char *cmd = kbi_asprintf("cp -r '%s' '%s' && rm -rf '%s/dist'", src, w->pkg, w->pkg);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
}

static void world_use_cpuinfo(world *w, const char *cpuinfo)
{
    char *info = kbt_data(cpuinfo);
    free(w->env_cpu);
    w->env_cpu = kbi_asprintf("KBPKG_CPUINFO=%s", info);
    w->env[3] = w->env_cpu;
    free(info);
}

static void world_free(world *w)
{
    kbt_rmtree(w->tmp);
    free(w->tmp);
    free(w->pkg);
    free(w->hub);
    free(w->env_cache);
    free(w->env_cfg);
    free(w->env_reg);
    free(w->env_cpu);
}

/* kbpkg ARGS... (NULL-terminated) in the world. */
static kbt_run run(const world *w, ...)
{
    const char *args[24];
    size_t n = 0;
    va_list ap;
    va_start(ap, w);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 23;)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    return kbt_kbpkg(w->env, args);
}

static void ok(kbt_run r, const char *what)
{
    cr_assert_eq(r.exit_code, 0, "%s: exit %d\nstdout: %s\nstderr: %s", what, r.exit_code, r.out,
                 r.err);
    kbt_run_free(&r);
}

static json_t *ok_json(kbt_run r, const char *what)
{
    cr_assert_eq(r.exit_code, 0, "%s: exit %d\nstdout: %s\nstderr: %s", what, r.exit_code, r.out,
                 r.err);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert(json_is_object(doc), "%s: not JSON: %s", what, r.out);
    kbt_run_free(&r);
    return doc;
}

/* Publish the package's CPU target and install it from the world's registry. */
static void publish_and_install(const world *w, const char *trust)
{
    ok(run(w, "publish", w->pkg, "--target", "cpu-x86_64_v2", NULL), "publish");
    ok(run(w, "install", PKG, trust, NULL), "install");
}

/* doc against docs/json/<schema> (docs/json.md). */
static void expect_schema(const json_t *doc, const char *schema)
{
    char *dir = kbt_source("docs/json");
    char *problems = kbt_json_check_ref(dir, schema, doc);
    cr_expect(problems == NULL, "%s: %s", schema, problems);
    free(problems);
    free(dir);
}

static json_t *info_benchmarks(const world *w, const char *trust)
{
    json_t *doc = ok_json(run(w, "info", PKG, "--json", trust, NULL), "info --json");
    expect_schema(doc, "info.json");
    json_t *b = json_incref(json_object_get(doc, "benchmarks"));
    cr_assert(json_is_array(b), "info --json has benchmarks");
    json_decref(doc);
    return b;
}

static const char *device_of(json_t *result)
{
    return json_string_value(json_object_get(json_object_get(result, "device"), "name"));
}

Test(bench_cli, installed_cpu_package_runs_the_installed_library)
{
    world w;
    world_init(&w, NULL, "bench/cpuinfo-a");
    publish_and_install(&w, NULL);
    json_t *doc = ok_json(run(&w, "bench", PKG, "--quick", "--json", NULL), "bench --json");
    expect_schema(doc, "bench.json");
    cr_expect_str_eq(json_string_value(json_object_get(doc, "package")), PKG);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "version")), "1.0.0");
    cr_expect(json_is_true(json_object_get(doc, "installed")), "benched what is installed");
    cr_expect_eq(json_integer_value(json_object_get(doc, "ran")), 1);
    json_t *t = json_array_get(json_object_get(doc, "targets"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(t, "target")), TARGET);
    json_t *dev = json_object_get(t, "device");
    cr_expect_str_eq(json_string_value(json_object_get(dev, "name")), "Test CPU A");
    cr_expect_str_eq(json_string_value(json_object_get(dev, "backend")), "cpu");
    cr_expect_float_eq(json_number_value(json_object_get(dev, "clock_mhz")), 1234.5, 1e-9);
    json_t *cases = json_object_get(t, "cases");
    cr_assert_gt(json_array_size(cases), 0, "cases");
    for (size_t i = 0; i < json_array_size(cases); i++) {
        json_t *c = json_array_get(cases, i);
        cr_expect_gt(json_number_value(json_object_get(c, "seconds")), 0, "median time");
        cr_expect_gt(json_number_value(json_object_get(c, "gbps")), 0, "rate");
        cr_expect_str_eq(json_string_value(json_object_get(json_object_get(c, "baseline"), "name")),
                         "copy", "the copy bandwidth is rmsnorm's baseline");
    }
    json_decref(doc);
    /* the installed library is what runs: without it the benchmark cannot start */
    char *lib = kbi_asprintf("%s/cache/pkgs/%s/1.0.0/%s/lib/librmsnorm.so", w.tmp, PKG, TARGET);
    cr_assert_eq(unlink(lib), 0, "%s", lib);
    kbt_run r = run(&w, "bench", PKG, "--quick", NULL);
    cr_expect_eq(r.exit_code, 1, "without the installed library: exit %d\n%s%s", r.exit_code, r.out,
                 r.err);
    cr_expect(strstr(r.out, "failed") && strstr(r.out, "-lrmsnorm"), "names the library: %s",
              r.out);
    kbt_run_free(&r);
    free(lib);
    world_free(&w);
}

Test(bench_cli, publish_to_a_folder_keeps_each_device_and_info_and_hub_show_them)
{
    world w;
    world_init(&w, NULL, "bench/cpuinfo-a");
    publish_and_install(&w, NULL);
    json_t *none = info_benchmarks(&w, NULL);
    cr_expect_eq(json_array_size(none), 0, "nothing published yet");
    json_decref(none);
    kbt_run r = run(&w, "info", PKG, NULL);
    cr_expect(strstr(r.out, "benchmarks: none published"), "info says so: %s", r.out);
    kbt_run_free(&r);

    json_t *doc = ok_json(run(&w, "bench", PKG, "--quick", "--publish", "--json", NULL), "A");
    cr_expect_eq(json_array_size(json_object_get(doc, "published")), 1, "one target published");
    expect_schema(doc, "bench.json");
    json_decref(doc);
    world_use_cpuinfo(&w, "bench/cpuinfo-b");
    ok(run(&w, "bench", PKG, "--quick", "--publish", NULL), "publish from device B");

    json_t *b = info_benchmarks(&w, NULL);
    cr_assert_eq(json_array_size(b), 2, "both devices' results are kept");
    bool a_seen = false, b_seen = false;
    for (size_t i = 0; i < 2; i++) {
        json_t *res = json_array_get(b, i);
        a_seen |= strcmp(device_of(res), "Test CPU A") == 0;
        b_seen |= strcmp(device_of(res), "Test CPU B") == 0;
        cr_expect_str_eq(json_string_value(json_object_get(res, "target")), TARGET);
        cr_expect(json_array_size(json_object_get(res, "cases")) > 0, "cases travel");
        cr_expect(json_is_string(json_object_get(res, "kbpkg_version")), "kbpkg version");
    }
    cr_expect(a_seen && b_seen, "devices A and B");
    json_decref(b);
    r = run(&w, "info", PKG, NULL);
    cr_expect(strstr(r.out, "on Test CPU A") && strstr(r.out, "on Test CPU B") &&
                  strstr(r.out, "x copy"),
              "info shows device and baseline ratio: %s", r.out);
    kbt_run_free(&r);

    /* the referrers tag schema: an index tagged sha256-<index hex> lists both */
    char *site = kbi_asprintf("%s/site", w.tmp);
    ok(run(&w, "hub", "render", "--out", site, NULL), "hub render");
    char *cmd = kbi_asprintf("grep -q 'Test CPU A' '%s/%s.html' && grep -q 'Test CPU B' "
                             "'%s/%s.html' && grep -q 'x copy' '%s/%s.html'",
                             site, PKG, site, PKG, site, PKG);
    cr_expect_eq(system(cmd), 0, "the hub page shows both results: %s", cmd);
    char *tagged = kbi_asprintf("grep -q '\"%s:sha256-' '%s/hub/index.json'", PKG, w.tmp);
    cr_expect_eq(system(tagged), 0, "the referrers tag exists: %s", tagged);
    free(tagged);
    free(cmd);
    free(site);
    world_free(&w);
}

Test(bench_cli, publish_to_docker_registry_and_a_refusal_loses_nothing)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed");
    kbt_registry reg;
    kbt_registry_start(&reg, "alice", "s3cret-bench");
    char *ref = kbi_asprintf("oci://127.0.0.1:%d/ns", reg.port);
    world w;
    world_init(&w, ref, "bench/cpuinfo-a");
    w.env[7] = "KBPKG_REGISTRY_USER=alice";
    w.env[8] = "KBPKG_REGISTRY_PASSWORD=s3cret-bench";
    w.env[9] = NULL;
    publish_and_install(&w, "--allow-unsigned");
    ok(run(&w, "bench", PKG, "--quick", "--publish", "--allow-unsigned", NULL), "publish A");
    /* unsigned packages are refused without --allow-unsigned, as install refuses them */
    world_use_cpuinfo(&w, "bench/cpuinfo-b");
    kbt_run r = run(&w, "bench", PKG, "--quick", "--publish", NULL);
    cr_expect_eq(r.exit_code, 4, "an unsigned index is not admitted: exit %d %s", r.exit_code,
                 r.err);
    kbt_run_free(&r);
    /* a registry refusing the credentials: a clear error, the results measured still shown */
    w.env[8] = "KBPKG_REGISTRY_PASSWORD=wrong";
    r = run(&w, "bench", PKG, "--quick", "--publish", "--allow-unsigned", NULL);
    cr_expect_eq(r.exit_code, 1, "refused: exit %d %s", r.exit_code, r.err);
    cr_expect(strstr(r.err, "authentication"), "says why: %s", r.err);
    cr_expect(strstr(r.out, "rmsnorm_bf16"), "what was measured is printed: %s", r.out);
    kbt_run_free(&r);
    w.env[8] = "KBPKG_REGISTRY_PASSWORD=s3cret-bench";
    ok(run(&w, "bench", PKG, "--quick", "--publish", "--allow-unsigned", NULL), "publish B");
    json_t *b = info_benchmarks(&w, NULL);
    cr_expect_eq(json_array_size(b), 2, "A and B, nothing lost to the refusal: %s",
                 json_dumps(b, 0));
    json_decref(b);
    kbt_registry_stop(&reg);
    world_free(&w);
    free(ref);
}

Test(bench_cli, bad_input_fails_clearly)
{
    world w;
    world_init(&w, NULL, "bench/cpuinfo-a");
    kbt_run r = run(&w, "bench", PKG, "--quick", NULL);
    cr_expect_eq(r.exit_code, 3, "not installed: exit %d", r.exit_code);
    cr_expect(strstr(r.err, "is not installed"), "%s", r.err);
    kbt_run_free(&r);
    r = run(&w, "bench", "nosuch/pkg", "--json", NULL);
    cr_expect_eq(r.exit_code, 3, "unknown package: exit %d", r.exit_code);
    cr_expect(strstr(r.out, "\"ok\": false"), "a JSON error: %s", r.out);
    kbt_run_free(&r);
    /* a package that declares no benchmark */
    char *add = kbt_data("publish/cpu-add"), *copy = kbi_asprintf("%s/cpu-add", w.tmp);
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", add, copy);
    cr_assert_eq(system(cmd), 0);
    ok(run(&w, "publish", copy, "--target", "cpu-x86_64_v2", NULL), "publish cpu-add");
    ok(run(&w, "install", "kbtest/cpu-add", NULL), "install cpu-add");
    r = run(&w, "bench", "kbtest/cpu-add", NULL);
    cr_expect_eq(r.exit_code, 5, "no bench: exit %d %s", r.exit_code, r.err);
    cr_expect(strstr(r.err, "declares no benchmark"), "%s", r.err);
    kbt_run_free(&r);
    /* publishing a version the registry does not hold */
    publish_and_install(&w, NULL);
    ok(run(&w, "bench", PKG, "--quick", NULL), "bench (fetches the source into the cache)");
    char *other = kbi_asprintf("KBPKG_REGISTRY=%s/empty-hub", w.tmp);
    w.env[2] = other;
    r = run(&w, "bench", PKG, "--quick", "--publish", NULL);
    cr_expect_eq(r.exit_code, 3, "not published there: exit %d %s", r.exit_code, r.err);
    cr_expect(strstr(r.err, "publish the package first"), "%s", r.err);
    kbt_run_free(&r);
    w.env[2] = w.env_reg;
    json_t *b = info_benchmarks(&w, NULL);
    cr_expect_eq(json_array_size(b), 0, "nothing was published by the failures");
    json_decref(b);
    free(other);
    free(cmd);
    free(copy);
    free(add);
    world_free(&w);
}

/* ---- GPU clocks: a CUDA target built by tests/fakes/fake_nvcc.sh (the host C compiler), run on
 * the fake CUDA driver's H200 at PCI 0000:01:00.0, its clocks read from the fake NVML ---- */

#define CLOCKS "kbtest/clocks"
#define CLOCKS_TARGET "cuda13-sm_90"
/* NVML lists bus 02 first: matching by ordinal would read 700 MHz, by PCI bus id 1755. */
#define CLOCKS_NVML                                                                                \
    "FAKE_NVML_DEVICES=0000:02:00.0 700 1593 1410;0000:01:00.0 1980/1410/1755/1600/1890 3201 1980"

typedef struct gpu_world {
    world w;
    char *pkg, *cuda, *nvml, *nvcc;
    const char *env[20];
} gpu_world;

static char *fake_env(const char *name, const char *var)
{
    const char *p = getenv(var);
    cr_assert(p && *p, "%s is not set (run the tests through ctest)", var);
    return kbi_asprintf("%s=%s", name, p);
}

/* The world's folder hub and cache, a copy of the clocks package, the fakes; nvml_lib: the
 * KBPKG_NVML_LIB entry, NULL for the fake NVML. */
static void gpu_world_init(gpu_world *g, const char *nvml_lib)
{
    memset(g, 0, sizeof(*g));
    world_init(&g->w, NULL, "bench/cpuinfo-a");
    g->pkg = kbi_asprintf("%s/clocks", g->w.tmp);
    char *src = kbt_data("bench/clocks");
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, g->pkg);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
    g->cuda = fake_env("KBPKG_CUDA_LIB", "KB_FAKE_CUDA");
    g->nvml = nvml_lib ? kbi_strdup(nvml_lib) : fake_env("KBPKG_NVML_LIB", "KB_FAKE_NVML");
    g->nvcc = fake_env("KBPKG_NVCC", "KB_FAKE_NVCC");
    const char *env[] = {g->w.env_cache,
                         g->w.env_cfg,
                         g->w.env_reg,
                         g->w.env_cpu,
                         "KBPKG_SYSTEM_CONFIG=/nonexistent",
                         "KBPKG_SYSFS_ROOT=/nonexistent-kbpkg-sysfs",
                         "KBPKG_CPU=x86_64_v2",
                         g->cuda,
                         "FAKE_CUDA_DEVICES=sm_90:NVIDIA H200:150000000000",
                         "FAKE_CUDA_DRIVER=13000",
                         g->nvml,
                         CLOCKS_NVML,
                         "FAKE_NVML_BUSY=5",
                         g->nvcc,
                         NULL};
    memcpy(g->env, env, sizeof(env));
}

static void gpu_world_free(gpu_world *g)
{
    free(g->pkg);
    free(g->cuda);
    free(g->nvml);
    free(g->nvcc);
    world_free(&g->w);
}

static kbt_run gpu_run(gpu_world *g, const char *const *args)
{
    return kbt_kbpkg(g->env, args);
}

/* The device of the one target `kbpkg bench PKG --target cuda13-sm_90 --json` ran (owned). */
static json_t *bench_gpu_device(gpu_world *g, const char *publish)
{
    const char *args[] = {"bench", g->pkg, "--target", CLOCKS_TARGET, "--json", publish, NULL};
    json_t *doc = ok_json(gpu_run(g, args), "bench --json on the fake GPU");
    expect_schema(doc, "bench.json");
    cr_expect_eq(json_integer_value(json_object_get(doc, "ran")), 1, "the CUDA target ran");
    json_t *t = json_array_get(json_object_get(doc, "targets"), 0);
    cr_expect_str_eq(json_string_value(json_object_get(t, "target")), "cuda13-sm_90-x86_64-linux");
    json_t *dev = json_incref(json_object_get(t, "device"));
    cr_assert(json_is_object(dev), "a device");
    if (publish)
        cr_expect_eq(json_array_size(json_object_get(doc, "published")), 1, "published");
    json_decref(doc);
    return dev;
}

static double num(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    cr_assert(json_is_number(v), "%s is a number: %s", key, json_dumps(o, 0));
    return json_number_value(v);
}

Test(bench_cli, gpu_clocks_sampled_during_the_run_reach_json_text_info_and_hub)
{
    gpu_world g;
    gpu_world_init(&g, NULL);
    const char *pub[] = {"publish", g.pkg, "--target", "cpu-x86_64_v2", NULL};
    ok(gpu_run(&g, pub), "publish the version (its CPU target)");
    json_t *dev = bench_gpu_device(&g, "--publish");
    cr_expect_str_eq(json_string_value(json_object_get(dev, "name")), "NVIDIA H200");
    cr_expect_str_eq(json_string_value(json_object_get(dev, "driver")), "13.0", "CUDA driver API");
    cr_expect_str_eq(json_string_value(json_object_get(dev, "driver_version")), "580.159.04");
    /* the five busy readings 1980/1410/1755/1600/1890 of the device at PCI 0000:01:00.0 */
    cr_expect_float_eq(num(dev, "clock_mhz"), 1755.0, 1e-9, "median");
    cr_expect_float_eq(num(dev, "clock_min_mhz"), 1410.0, 1e-9);
    cr_expect_float_eq(num(dev, "clock_max_mhz"), 1980.0, 1e-9);
    cr_expect_float_eq(num(dev, "mem_clock_mhz"), 3201.0, 1e-9);
    cr_expect_float_eq(num(dev, "clock_device_max_mhz"), 1980.0, 1e-9);
    cr_expect_eq(json_integer_value(json_object_get(dev, "clock_samples")), 5);
    cr_expect(json_is_true(json_object_get(dev, "clock_busy_only")), "idle readings dropped");
    cr_expect(json_is_null(json_object_get(dev, "clock_note")), "no reason needed");
    json_decref(dev);

    const char *line = "NVIDIA H200 (sm_90, driver 580.159.04, CUDA 13.0, SM 1755 MHz median of "
                       "5 samples, mem 3201 MHz)";
    const char *text[] = {"bench", g.pkg, "--target", CLOCKS_TARGET, NULL};
    kbt_run r = gpu_run(&g, text);
    cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, line), "the text names driver and clocks: %s", r.out);
    kbt_run_free(&r);

    const char *info[] = {"info", CLOCKS, NULL};
    r = gpu_run(&g, info);
    cr_expect(strstr(r.out, line), "info shows the clocks of the published result: %s", r.out);
    kbt_run_free(&r);
    const char *info_json[] = {"info", CLOCKS, "--json", NULL};
    json_t *doc = ok_json(gpu_run(&g, info_json), "info --json");
    expect_schema(doc, "info.json");
    json_t *res = json_array_get(json_object_get(doc, "benchmarks"), 0);
    cr_expect_float_eq(num(json_object_get(res, "device"), "clock_mhz"), 1755.0, 1e-9);
    json_decref(doc);

    char *site = kbi_asprintf("%s/site", g.w.tmp);
    const char *hub[] = {"hub", "render", "--out", site, NULL};
    ok(gpu_run(&g, hub), "hub render");
    char *cmd = kbi_asprintf("grep -qF '%s' '%s/%s.html'", line, site, CLOCKS);
    cr_expect_eq(system(cmd), 0, "the hub page shows the clocks: %s", cmd);
    free(cmd);
    free(site);
    gpu_world_free(&g);
}

/* NVML absent, or failing to start: the benchmark still runs and says why clocks are unknown. */
static void expect_no_clocks(gpu_world *g, const char *reason)
{
    json_t *dev = bench_gpu_device(g, NULL);
    cr_expect_str_eq(json_string_value(json_object_get(dev, "driver")), "13.0", "probe's driver");
    static const char *const null_keys[] = {
        "clock_mhz",     "clock_min_mhz", "clock_max_mhz", "mem_clock_mhz", "clock_device_max_mhz",
        "clock_samples", "driver_version"};
    for (size_t i = 0; i < KB_ARRAY_LEN(null_keys); i++)
        cr_expect(json_is_null(json_object_get(dev, null_keys[i])), "%s is null: %s", null_keys[i],
                  json_dumps(dev, 0));
    const char *note = json_string_value(json_object_get(dev, "clock_note"));
    cr_expect(note && strstr(note, reason), "clock_note says why: %s", note ? note : "(none)");
    json_decref(dev);
    const char *text[] = {"bench", g->pkg, "--target", CLOCKS_TARGET, NULL};
    kbt_run r = gpu_run(g, text);
    cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "(sm_90, driver 13.0, clocks unknown: ") && strstr(r.out, reason),
              "the text says so: %s", r.out);
    kbt_run_free(&r);
}

Test(bench_cli, without_nvml_the_bench_runs_and_clocks_are_null_with_the_reason)
{
    gpu_world g;
    gpu_world_init(&g, "KBPKG_NVML_LIB=/nonexistent/libnvidia-ml.so.1");
    expect_no_clocks(&g, "/nonexistent/libnvidia-ml.so.1 not found (dlopen: ");
    gpu_world_free(&g);
}

Test(bench_cli, when_nvml_fails_to_start_clocks_are_null_with_the_reason)
{
    gpu_world g;
    gpu_world_init(&g, NULL);
    g.env[14] = "FAKE_NVML_MODE=init_fails";
    expect_no_clocks(&g, "nvmlInit failed (error 9: Driver Not Loaded)");
    gpu_world_free(&g);
}
