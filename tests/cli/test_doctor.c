/* kbpkg doctor: pass/warn/fail with a fix for each check, from a fresh setup to a tampered
 * install and an unreachable registry; exit 1 only when a check fails. */
#include "kbtest.h"
#include "kbpkg/install.h"
#include "registry/pkgindex.h"
#include "registry_harness.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct doctor_env {
    char *dir;
    char *cache, *registry, *config;
    char *env[5]; /* "KBPKG_CACHE=..." etc., NULL-terminated */
} doctor_env;

static doctor_env env_new(void)
{
    doctor_env e = {.dir = kbt_mkdtemp()};
    e.cache = kb_asprintf("%s/cache", e.dir);
    e.registry = kb_asprintf("%s/hub", e.dir);
    e.config = kb_asprintf("%s/config", e.dir);
    e.env[0] = kb_asprintf("KBPKG_CACHE=%s", e.cache);
    e.env[1] = kb_asprintf("KBPKG_REGISTRY=%s", e.registry);
    e.env[2] = kb_asprintf("KBPKG_CONFIG_DIR=%s", e.config);
    e.env[3] = kb_strdup("KBPKG_DEVICES=none");
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
    cr_expect_not_null(find_check(doc, "gpu", "warn"), "KBPKG_DEVICES=none: no GPU");
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
    char *pkg = kb_asprintf("%s/vadd", e->dir);
    char *dist = kb_asprintf("%s/dist", e->dir);
    cr_assert_eq(kb_package_new(ctx, "kbtest/vadd", pkg), 0);
    const char *cpu[] = {"cpu"};
    kb_build_options bo = KB_BUILD_OPTIONS_INIT;
    bo.targets = cpu;
    bo.target_count = 1;
    bo.out_dir = dist;
    bo.no_source_artifact = 1;
    kb_build_result *br = NULL;
    cr_assert_eq(kb_build(ctx, &br, pkg, &bo), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_geq(br->built, 1, "%s", br->count ? br->targets[0].message : "no targets");
    kb_publish_item items[8];
    size_t n = 0;
    for (size_t i = 0; i < br->count && n < 8; i++)
        if (br->targets[i].status == KB_BUILD_BUILT)
            items[n++] = (kb_publish_item){br->targets[i].artifact, br->targets[i].target,
                                           br->targets[i].build_key, "{}"};
    kb_registry *reg = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, e->registry), 0);
    cr_assert_eq(kb_pkg_publish(reg, "kbtest/vadd", "0.1.0", NULL, items, n, false, NULL, NULL), 0,
                 "%s", kb_ctx_last_error(ctx)->message);
    kb_install_result *ir = NULL;
    kb_install_opts io = KB_INSTALL_OPTS_INIT;
    cr_assert_eq(kb_install_package(&ir, ctx, "kbtest/vadd", &io), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char *dir = kb_strdup(kb_install_result_dir(ir));
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
    char *meta = kb_asprintf("%s/kbpkg.json", dir);
    cr_assert(kb_path_exists(meta), "%s", meta);
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
    char *url = kb_asprintf("http://127.0.0.1:%d/kbpkg", kbt_free_port());
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
