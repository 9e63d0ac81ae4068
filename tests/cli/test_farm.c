/* kbpkg farm over a layout folder: a second run publishes nothing; a broken manifest fails its
 * own row and the other packages still publish. */
#include "kbtest.h"
#include "registry/pkgindex.h"

#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *tmp, *pkgs, *hub;
    char *env_cache, *env_config;
    const char *env[5];
} fixture;

static void copy_package(const char *to, const char *name)
{
    char *src = kbt_data("publish/cpu-add");
    char *cmd = kb_asprintf("cp -r '%s' '%s'", src, to);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    if (name) {
        char *yaml = kb_asprintf("%s/kernel.yaml", to);
        kb_buf b = KB_BUF_INIT;
        cr_assert_eq(kb_read_file(NULL, yaml, &b), 0);
        char *rest = strchr(b.data, '\n');
        char *text = kb_asprintf("name: %s%s", name, rest);
        kbt_write(yaml, text);
        free(text);
        kb_buf_free(&b);
        free(yaml);
    }
    free(cmd);
    free(src);
}

static fixture setup(void)
{
    fixture f = {0};
    f.tmp = kbt_mkdtemp();
    f.pkgs = kb_asprintf("%s/pkgs", f.tmp);
    f.hub = kb_asprintf("%s/hub", f.tmp);
    f.env_cache = kb_asprintf("KBPKG_CACHE=%s/cache", f.tmp);
    f.env_config = kb_asprintf("XDG_CONFIG_HOME=%s/config", f.tmp);
    f.env[0] = f.env_cache;
    f.env[1] = f.env_config;
    f.env[2] = "KBPKG_DEVICES=none";
    f.env[3] = "KBPKG_CPU=x86_64_v3";
    char *one = kb_asprintf("%s/team/one", f.pkgs), *two = kb_asprintf("%s/two", f.pkgs);
    char *team = kb_asprintf("%s/team", f.pkgs);
    cr_assert_eq(kb_mkdir_p(NULL, team, 0755), 0);
    copy_package(one, NULL);
    copy_package(two, "kbtest/cpu-add-two");
    free(one);
    free(two);
    free(team);
    return f;
}

static void teardown(fixture *f)
{
    kbt_rmtree(f->tmp);
    free(f->tmp);
    free(f->pkgs);
    free(f->hub);
    free(f->env_cache);
    free(f->env_config);
}

static char *index_digest(const fixture *f, const char *name)
{
    kb_ctx *ctx = kbt_ctx();
    kb_registry *r = NULL;
    kb_pkg_index *idx = NULL;
    char *digest = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, f->hub), 0);
    if (kb_pkg_index_fetch(&idx, r, name, "0.1.0", NULL) == 0)
        digest = kb_strdup(idx->digest);
    kb_pkg_index_free(idx);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    return digest;
}

static kbt_run farm(const fixture *f)
{
    const char *args[] = {"--json", "farm", f->pkgs, "--registry", f->hub, "-j", "2", NULL};
    return kbt_kbpkg(f->env, args);
}

Test(cli_farm, second_run_publishes_nothing)
{
    fixture f = setup();
    kbt_run r = farm(&f);
    cr_assert_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "\"published\": 4"), "2 packages x 2 CPU targets: %s", r.out);
    cr_expect(strstr(r.out, "\"already_there\": 0"), "%s", r.out);
    kbt_run_free(&r);
    char *a1 = index_digest(&f, "kbtest/cpu-add"), *b1 = index_digest(&f, "kbtest/cpu-add-two");
    cr_assert(a1 && b1, "both packages are in the hub");

    r = farm(&f);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"published\": 0"), "%s", r.out);
    cr_expect(strstr(r.out, "\"already_there\": 4"), "%s", r.out);
    cr_expect_null(strstr(r.err, "built in"), "nothing was built: %s", r.err);
    kbt_run_free(&r);
    char *a2 = index_digest(&f, "kbtest/cpu-add"), *b2 = index_digest(&f, "kbtest/cpu-add-two");
    cr_expect_str_eq(a2, a1);
    cr_expect_str_eq(b2, b1);

    /* The build key is what decides: the index entry carries the key the builder computed. */
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    kb_pkg_index *idx = NULL;
    cr_assert_eq(kb_registry_open(&reg, ctx, f.hub), 0);
    cr_assert_eq(kb_pkg_index_fetch(&idx, reg, "kbtest/cpu-add", "0.1.0", NULL), 0);
    const kb_pkg_entry *e = kb_pkg_index_find(idx, "cpu-x86_64_v2-x86_64-linux");
    cr_assert_not_null(e);
    cr_expect(e->build_key && strlen(e->build_key) == 64, "build key annotation present");
    cr_expect_not_null(kb_pkg_index_find(idx, "source"), "the source is published too");
    kb_pkg_index_free(idx);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    free(a1);
    free(b1);
    free(a2);
    free(b2);
    teardown(&f);
}

Test(cli_farm, broken_manifest_fails_alone)
{
    fixture f = setup();
    char *broken = kb_asprintf("%s/team/broken/kernel.yaml", f.pkgs);
    kbt_write(broken, "name: kbtest/broken\nversion: 1.0.0\nbackends: [cpu]\n");
    /* Hidden and build folders are not searched: this would fail too if it were. */
    char *hidden = kb_asprintf("%s/.git/kernel.yaml", f.pkgs);
    kbt_write(hidden, "not: a manifest\n");
    const char *args[] = {"farm", f.pkgs, "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(f.env, args);
    cr_expect_eq(r.exit_code, 1, "a failed row fails the run: %s", r.err);
    cr_expect(strstr(r.out, "4 published, 0 already there, 0 skipped, 1 failed\n"), "%s", r.out);
    cr_expect(strstr(r.out, "team/broken/kernel.yaml:3:"), "names the file and line: %s", r.out);
    cr_expect_null(strstr(r.out, ".git"), "%s", r.out);
    kbt_run_free(&r);
    char *a = index_digest(&f, "kbtest/cpu-add");
    cr_expect_not_null(a, "the good packages were published");
    free(a);
    free(broken);
    free(hidden);
    teardown(&f);
}

Test(cli_farm, missing_folder_is_an_error)
{
    fixture f = setup();
    char *nowhere = kb_asprintf("%s/nowhere", f.tmp);
    const char *args[] = {"farm", nowhere, "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(f.env, args);
    cr_expect_eq(r.exit_code, 3, "%s", r.err);
    char *msg = kb_asprintf("kbpkg: %s: not a package or a folder of packages\n", nowhere);
    cr_expect_str_eq(r.err, msg);
    kbt_run_free(&r);
    free(msg);
    free(nowhere);
    teardown(&f);
}
