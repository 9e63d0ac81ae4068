/* Round trips of every first-party package (CPU targets) through a layout folder and a real
 * docker-registry: publish with the CLI, install into a fresh cache, load with kb_kernel_open,
 * verify. */
#include "kbtest.h"
#include "registry_harness.h"

#include <stdlib.h>
#include <string.h>

static const char *packages[] = {"radeonflow/gemm", "kbpkg-community/activation",
                                 "kbpkg-community/rmsnorm"};
static const char *probe_symbol[] = {"rf_gemm_f32", "act_silu_and_mul_f32", "rmsnorm_f32"};
static const char *header[] = {"rf_gemm.h", "kb_activation.h", "kb_rmsnorm.h"};

/* A consumer compiles against the installed package's include/ alone: the package header's
 * #include <kbpkg/kernel_abi.h> is shipped beside it (it once failed: kbpkg_kernel.h missing). */
static void expect_consumer_compiles(const char *tmp, const kb_kernel *k, size_t i)
{
    char *src = kbi_asprintf("%s/consumer_%zu.c", tmp, i);
    char *text = kbi_asprintf(
        "#include <%s>\nint main(void)\n{\n    void (*volatile f)(void) = (void (*)(void))%s;\n"
        "    return f != 0 ? 0 : 1;\n}\n",
        header[i], probe_symbol[i]);
    kbt_write(src, text);
    char *inc = kbi_asprintf("-I%s/include", kb_kernel_path(k));
    char *obj = kbi_asprintf("%s/consumer_%zu.o", tmp, i);
    const char *argv[] = {"cc", "-std=c11", "-Wall", "-Werror", "-pedantic", inc,
                          "-c", src,        "-o",    obj,       NULL};
    kb_ctx *ctx = kbt_ctx();
    kb_proc_result res;
    cr_assert_eq(kbi_proc_run(ctx, &res, argv, NULL, 60000), 0);
    cr_expect_eq(res.exit_code, 0, "%s: a consumer of %s does not compile against %s:\n%s",
                 packages[i], header[i], inc, res.output.data ? res.output.data : "");
    kbi_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(src), free(text), free(inc), free(obj);
}

static kbt_run run_env(const char *cache, const char *registry, const char *cfg,
                       const char *const *args)
{
    char *e1 = kbi_asprintf("KBPKG_CACHE=%s", cache);
    char *e2 = kbi_asprintf("KBPKG_REGISTRY=%s", registry);
    char *e3 = kbi_asprintf("KBPKG_CONFIG_DIR=%s", cfg);
    const char *env[] = {e1, e2, e3, "KBPKG_DEVICES=none", "KBPKG_CPU=x86_64_v2", NULL};
    kbt_run r = kbt_kbpkg(env, args);
    free(e1);
    free(e2);
    free(e3);
    return r;
}

static void round_trip(const char *tmp, const char *registry, const char *tag)
{
    char *cache = kbi_asprintf("%s/cache-%s", tmp, tag);
    char *cfg = kbi_asprintf("%s/config", tmp);
    for (size_t i = 0; i < KB_ARRAY_LEN(packages); i++) {
        char *src = kbt_source("kernels");
        char *dir = kbi_asprintf("%s/%s", src, packages[i]);
        char *out = kbi_asprintf("%s/dist/%zu", tmp, i);
        const char *publish[] = {"publish", dir, "--target", "cpu-x86_64_v2", "--out", out, NULL};
        kbt_run r = run_env(cache, registry, cfg, publish);
        cr_assert_eq(r.exit_code, 0, "%s publish to %s: %s %s", packages[i], tag, r.out, r.err);
        kbt_run_free(&r);
        const char *install[] = {"install", packages[i], "--allow-unsigned", NULL};
        r = run_env(cache, registry, cfg, install);
        cr_assert_eq(r.exit_code, 0, "%s install from %s: %s", packages[i], tag, r.err);
        cr_expect(strstr(r.out, "cpu-x86_64_v2-x86_64-linux"), "%s", r.out);
        kbt_run_free(&r);

        setenv("KBPKG_CACHE", cache, 1);
        kb_ctx *ctx = kbt_ctx();
        kb_ctx_set(ctx, "probe.devices", "none");
        kb_ctx_set(ctx, "probe.cpu", "x86_64_v2");
        kb_kernel *k = NULL;
        cr_assert_eq(kb_kernel_open(&k, ctx, packages[i], KB_OPEN_ALLOW_UNSIGNED), 0, "%s",
                     kb_ctx_last_error(ctx)->message);
        cr_expect_not_null(kb_kernel_sym(k, probe_symbol[i]), "%s", probe_symbol[i]);
        expect_consumer_compiles(tmp, k, i);
        kb_kernel_close(k);
        kb_ctx_free(ctx);
        unsetenv("KBPKG_CACHE");
        free(src);
        free(dir);
        free(out);
    }
    const char *verify[] = {"verify", NULL};
    kbt_run r = run_env(cache, registry, cfg, verify);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    free(cache);
    free(cfg);
}

Test(first_party, round_trip_layout_and_docker_registry, .timeout = 900)
{
    char *tmp = kbt_mkdtemp();
    char *hub = kbi_asprintf("%s/hub", tmp);
    round_trip(tmp, hub, "layout");
    if (kbt_registry_available()) {
        kbt_registry reg;
        kbt_registry_start(&reg, NULL, NULL);
        round_trip(tmp, reg.url, "registry"); /* reuses the artifacts built above */
        kbt_registry_stop(&reg);
    }
    kbt_rmtree(tmp);
    free(hub);
    free(tmp);
}
