/* kbpkg publish into an OCI layout folder: publish, republish (no-op), changed sources refused,
 * --force replaces, prebuilt artifacts are used, bad input. */
#include "kbtest.h"
#include "registry/pkgindex.h"

#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *tmp, *pkg, *hub, *cache;
    char *env_cache, *env_config;
    const char *env[5];
} fixture;

static fixture setup(void)
{
    fixture f = {0};
    f.tmp = kbt_mkdtemp();
    f.pkg = kbi_asprintf("%s/pkg", f.tmp);
    f.hub = kbi_asprintf("%s/hub", f.tmp);
    f.cache = kbi_asprintf("%s/cache", f.tmp);
    f.env_cache = kbi_asprintf("KBPKG_CACHE=%s", f.cache);
    f.env_config = kbi_asprintf("XDG_CONFIG_HOME=%s/config", f.tmp);
    f.env[0] = f.env_cache;
    f.env[1] = f.env_config;
    f.env[2] = "KBPKG_DEVICES=none";
    f.env[3] = "KBPKG_CPU=x86_64_v3";
    char *src = kbt_data("publish/cpu-add");
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, f.pkg);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
    return f;
}

static void teardown(fixture *f)
{
    kbt_rmtree(f->tmp);
    free(f->tmp);
    free(f->pkg);
    free(f->hub);
    free(f->cache);
    free(f->env_cache);
    free(f->env_config);
}

/* The index digest the hub serves for kbtest/cpu-add@0.1.0 (NULL when none). */
static char *hub_index_digest(const fixture *f)
{
    kb_ctx *ctx = kbt_ctx();
    kb_registry *r = NULL;
    kb_pkg_index *idx = NULL;
    char *digest = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, f->hub), 0);
    if (kbi_pkg_index_fetch(&idx, r, "kbtest/cpu-add", "0.1.0", NULL) == 0)
        digest = kbi_strdup(idx->digest);
    kbi_pkg_index_free(idx);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    return digest;
}

static kbt_run publish(const fixture *f, const char *extra)
{
    const char *args[] = {"publish", f->pkg, "--registry", f->hub, extra, NULL};
    return kbt_kbpkg(f->env, args);
}

static size_t count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

Test(cli_publish, publish_republish_refuse_force)
{
    fixture f = setup();
    kbt_run r = publish(&f, NULL);
    cr_assert_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "no current artifacts of 0.1.0"), "says it builds: %s", r.err);
    cr_expect(strstr(r.out, "  cpu-x86_64_v3-x86_64-linux         published\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  cpu-x86_64_v2-x86_64-linux         published\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  source                             published\n"), "%s", r.out);
    char *d1 = hub_index_digest(&f);
    cr_assert_not_null(d1);
    char *line = kbi_asprintf("index %s\n", d1);
    cr_expect(strstr(r.out, line), "prints the index digest %s: %s", d1, r.out);
    free(line);
    kbt_run_free(&r);

    /* Same sources: the artifacts in dist/ are used, nothing changes. */
    r = publish(&f, NULL);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.err, "publishing 2 artifact(s) of 0.1.0 already built in"), "%s", r.err);
    cr_expect_eq(count(r.out, "already there (same bytes)"), 3, "%s", r.out);
    char *d2 = hub_index_digest(&f);
    cr_expect_str_eq(d2, d1, "a no-op republish keeps the index");
    kbt_run_free(&r);

    /* Changed sources, same version: rebuilt, refused, the hub keeps what it had. */
    char *src = kbi_asprintf("%s/src/vadd_cpu.c", f.pkg);
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, src, &b), 0);
    kbi_buf_puts(&b, "/* changed */\n");
    kbt_write(src, b.data);
    r = publish(&f, NULL);
    cr_expect_eq(r.exit_code, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.err, "(the sources changed since they were built); building"), "%s", r.err);
    cr_expect(strstr(r.err, "kbpkg: kbtest/cpu-add@0.1.0 cpu-x86_64_v3-x86_64-linux is already "
                            "published with different bytes (registry sha256:"),
              "%s", r.err);
    cr_expect(strstr(r.err, "use --force to replace it"), "%s", r.err);
    char *d3 = hub_index_digest(&f);
    cr_expect_str_eq(d3, d1, "a refused publish changes nothing");
    kbt_run_free(&r);

    /* --force replaces every changed item; --json says so. */
    r = publish(&f, "--force");
    kbt_run_free(&r);
    const char *json_args[] = {"--json", "publish", f.pkg, "--registry", f.hub, NULL};
    r = kbt_kbpkg(f.env, json_args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    char *d4 = hub_index_digest(&f);
    cr_expect_str_neq(d4, d1, "--force changed the index");
    char *field = kbi_asprintf("\"index_digest\": \"%s\"", d4);
    cr_expect(strstr(r.out, field), "%s", r.out);
    cr_expect_eq(count(r.out, "\"status\": \"unchanged\""), 3, "%s", r.out);
    free(field);
    kbt_run_free(&r);
    kbi_buf_free(&b);
    free(src);
    free(d1);
    free(d2);
    free(d3);
    free(d4);
    teardown(&f);
}

Test(cli_publish, force_reports_replaced)
{
    fixture f = setup();
    kbt_run r = publish(&f, "--target");
    cr_expect_eq(r.exit_code, 2, "a --target without a value is a usage error: %s", r.err);
    kbt_run_free(&r);
    const char *only_v2[] = {"publish", f.pkg, "--registry", f.hub, "-t", "cpu-x86_64_v2", NULL};
    r = kbt_kbpkg(f.env, only_v2);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "cpu-x86_64_v2-x86_64-linux         published"), "%s", r.out);
    cr_expect_null(strstr(r.out, "x86_64_v3"), "only the filtered target: %s", r.out);
    kbt_run_free(&r);
    char *src = kbi_asprintf("%s/LICENSE", f.pkg);
    kbt_write(src, "MIT, changed\n");
    const char *force[] = {"publish", f.pkg,           "--registry", f.hub,
                           "-t",      "cpu-x86_64_v2", "--force",    NULL};
    r = kbt_kbpkg(f.env, force);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "cpu-x86_64_v2-x86_64-linux         replaced (--force)"), "%s", r.out);
    cr_expect(strstr(r.out, "source                             replaced (--force)"), "%s", r.out);
    kbt_run_free(&r);
    free(src);
    teardown(&f);
}

Test(cli_publish, uses_artifacts_kbpkg_build_made)
{
    fixture f = setup();
    char *out = kbi_asprintf("%s/out", f.tmp);
    const char *build[] = {"build", f.pkg, "--out", out, "-t", "cpu-x86_64_v2", NULL};
    kbt_run r = kbt_kbpkg(f.env, build);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    const char *args[] = {"--json", "publish", f.pkg, "--registry", f.hub, "--out", out, NULL};
    r = kbt_kbpkg(f.env, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"built\": false"), "%s", r.out);
    cr_expect(strstr(r.out, "\"target\": \"cpu-x86_64_v2-x86_64-linux\""), "%s", r.out);
    cr_expect_null(strstr(r.out, "x86_64_v3"), "only what was built is published: %s", r.out);
    kbt_run_free(&r);
    free(out);
    teardown(&f);
}

Test(cli_publish, bad_input)
{
    fixture f = setup();
    const char *none[] = {"publish", NULL};
    kbt_run r = kbt_kbpkg(f.env, none);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "which package folder?"), "%s", r.err);
    kbt_run_free(&r);
    char *yaml = kbi_asprintf("%s/kernel.yaml", f.pkg);
    kbt_write(yaml, "name: kbtest/cpu-add\nversion: 0.1.0\nsurprise: 1\n");
    r = publish(&f, NULL);
    cr_expect_eq(r.exit_code, 5, "%s", r.err);
    cr_expect(strstr(r.err, "kernel.yaml:3:1"), "names file:line:col: %s", r.err);
    cr_expect_null(hub_index_digest(&f), "nothing was published");
    kbt_run_free(&r);
    free(yaml);
    teardown(&f);
}
