/* kbpkg farm over a layout folder: a second run publishes nothing; a broken manifest fails its
 * own row and the other packages still publish. */
#include "kbtest.h"
#include "registry/pkgindex.h"
#include "registry/registry.h"

#include <jansson.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct fixture {
    char *tmp, *pkgs, *hub;
    char *env_cache, *env_config;
    const char *env[5];
} fixture;

static void copy_package(const char *to, const char *name)
{
    char *src = kbt_data("publish/cpu-add");
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, to);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    if (name) {
        char *yaml = kbi_asprintf("%s/kernel.yaml", to);
        kb_buf b = KB_BUF_INIT;
        cr_assert_eq(kbi_read_file(NULL, yaml, &b), 0);
        char *rest = strchr(b.data, '\n');
        char *text = kbi_asprintf("name: %s%s", name, rest);
        kbt_write(yaml, text);
        free(text);
        kbi_buf_free(&b);
        free(yaml);
    }
    free(cmd);
    free(src);
}

static fixture setup(void)
{
    fixture f = {0};
    f.tmp = kbt_mkdtemp();
    f.pkgs = kbi_asprintf("%s/pkgs", f.tmp);
    f.hub = kbi_asprintf("%s/hub", f.tmp);
    f.env_cache = kbi_asprintf("KBPKG_CACHE=%s/cache", f.tmp);
    f.env_config = kbi_asprintf("XDG_CONFIG_HOME=%s/config", f.tmp);
    f.env[0] = f.env_cache;
    f.env[1] = f.env_config;
    f.env[2] = "KBPKG_DEVICES=none";
    f.env[3] = "KBPKG_CPU=x86_64_v3";
    char *one = kbi_asprintf("%s/team/one", f.pkgs), *two = kbi_asprintf("%s/two", f.pkgs);
    char *team = kbi_asprintf("%s/team", f.pkgs);
    cr_assert_eq(kbi_mkdir_p(NULL, team, 0755), 0);
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
    if (kbi_pkg_index_fetch(&idx, r, name, "0.1.0", NULL) == 0)
        digest = kbi_strdup(idx->digest);
    kbi_pkg_index_free(idx);
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
    cr_assert_eq(kbi_pkg_index_fetch(&idx, reg, "kbtest/cpu-add", "0.1.0", NULL), 0);
    const kb_pkg_entry *e = kbi_pkg_index_find(idx, "cpu-x86_64_v2-x86_64-linux");
    cr_assert_not_null(e);
    cr_expect(e->build_key && strlen(e->build_key) == 64, "build key annotation present");
    cr_expect_not_null(kbi_pkg_index_find(idx, "source"), "the source is published too");
    kbi_pkg_index_free(idx);
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
    char *broken = kbi_asprintf("%s/team/broken/kernel.yaml", f.pkgs);
    kbt_write(broken, "name: kbtest/broken\nversion: 1.0.0\nbackends: [cpu]\n");
    /* Hidden and build folders are not searched: this would fail too if it were. */
    char *hidden = kbi_asprintf("%s/.git/kernel.yaml", f.pkgs);
    kbt_write(hidden, "not: a manifest\n");
    const char *args[] = {"farm", f.pkgs, "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(f.env, args);
    cr_expect_eq(r.exit_code, 1, "a failed row fails the run: %s", r.err);
    cr_expect(strstr(r.out, "\n4 published, 1 failed\n"), "%s", r.out);
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
    char *nowhere = kbi_asprintf("%s/nowhere", f.tmp);
    const char *args[] = {"farm", nowhere, "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(f.env, args);
    cr_expect_eq(r.exit_code, 3, "%s", r.err);
    char *msg = kbi_asprintf("kbpkg: %s: not a package or a folder of packages\n", nowhere);
    cr_expect_str_eq(r.err, msg);
    kbt_run_free(&r);
    free(msg);
    free(nowhere);
    teardown(&f);
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* Run every "command" of the plan's items (a stand-in for an engine's workers), then every
 * merge: the hub ends byte-identical to a one-machine farm of the same packages. */
static void run_plan(const fixture *f, const char *plan_json)
{
    json_t *plan = json_loads(plan_json, 0, NULL);
    cr_assert(plan, "plan is JSON: %s", plan_json);
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(plan, "items"), i, it)
    {
        const char *args[] = {"farm",
                              "build",
                              json_string_value(json_object_get(it, "dir")),
                              "--target",
                              json_string_value(json_object_get(it, "target")),
                              "--stage",
                              "--registry",
                              f->hub,
                              NULL};
        kbt_run r = kbt_kbpkg(f->env, args);
        cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
        cr_expect(strstr(r.out, " staged"), "%s", r.out);
        kbt_run_free(&r);
    }
    cr_expect_null(index_digest(f, "kbtest/cpu-add"), "staging publishes no version tag");
    json_array_foreach(json_object_get(plan, "merges"), i, it)
    {
        const char *args[] = {"farm",       "merge", json_string_value(json_object_get(it, "ref")),
                              "--registry", f->hub,  NULL};
        kbt_run r = kbt_kbpkg(f->env, args);
        cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
        cr_expect(strstr(r.out, " merged"), "%s", r.out);
        kbt_run_free(&r);
    }
    json_decref(plan);
}

Test(cli_farm, plan_stage_merge_equals_one_machine_farm)
{
    fixture f = setup();
    const char *plan_args[] = {"farm", "plan", f.pkgs, "--registry", f.hub, NULL};
    kbt_run p = kbt_kbpkg(f.env, plan_args);
    cr_assert_eq(p.exit_code, 0, "%s", p.err);
    cr_expect_eq(count_of(p.out, "\"command\": \"kbpkg farm build"), 4, "%s", p.out);
    cr_expect_eq(count_of(p.out, "\"command\": \"kbpkg farm merge"), 2, "%s", p.out);
    run_plan(&f, p.out);
    kbt_run_free(&p);
    char *staged_a = index_digest(&f, "kbtest/cpu-add");
    char *staged_b = index_digest(&f, "kbtest/cpu-add-two");

    /* Nothing left to plan; a worker rechecking a key says "already there". */
    p = kbt_kbpkg(f.env, plan_args);
    cr_expect(strstr(p.out, "\"items\": []"), "%s", p.out);
    kbt_run_free(&p);
    char *one = kbi_asprintf("%s/team/one", f.pkgs);
    const char *again[] = {"farm",    "build",      one,   "--target", "cpu-x86_64_v2-x86_64-linux",
                           "--stage", "--registry", f.hub, NULL};
    p = kbt_kbpkg(f.env, again);
    cr_expect(p.exit_code == 0 && strstr(p.out, "already there"), "%s%s", p.out, p.err);
    kbt_run_free(&p);

    char *hub = f.hub;
    f.hub = kbi_asprintf("%s/hub-one-machine", f.tmp);
    kbt_run r = farm(&f);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    char *one_a = index_digest(&f, "kbtest/cpu-add");
    char *one_b = index_digest(&f, "kbtest/cpu-add-two");
    cr_expect_str_eq(staged_a, one_a, "plan/stage/merge gives the one-machine index bytes");
    cr_expect_str_eq(staged_b, one_b);
    free(f.hub);
    f.hub = hub;
    free(one);
    free(staged_a);
    free(staged_b);
    free(one_a);
    free(one_b);
    teardown(&f);
}

Test(cli_farm, github_format_chunks_the_matrix)
{
    fixture f = setup();
    const char *args[] = {"farm", "plan", f.pkgs, "--registry", f.hub, "--format", "github", NULL};
    kbt_run r = kbt_kbpkg(f.env, args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(kbi_str_starts(r.out, "chunks=1\nchunk0={\"include\":[{"), "%s", r.out);
    cr_expect(strstr(r.out, "\nmerges={\"include\":[{"), "%s", r.out);
    kbt_run_free(&r);
    const char *bad[] = {"farm", "plan", f.pkgs, "--format", "gitlab", NULL};
    r = kbt_kbpkg(f.env, bad);
    cr_expect_eq(r.exit_code, 2, "%s", r.err);
    cr_expect(strstr(r.err, "--format is json or github"), "%s", r.err);
    kbt_run_free(&r);
    teardown(&f);
}

/* A README edit changes no build key: nothing rebuilds. The source did change under a published
 * version, which is said once for the package, not once per target. */
Test(cli_farm, readme_edit_rebuilds_nothing_and_is_reported_once)
{
    fixture f = setup();
    kbt_run r = farm(&f);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    char *readme = kbi_asprintf("%s/two/README.md", f.pkgs);
    kbt_write(readme, "# now with a README\n");
    r = farm(&f);
    cr_expect_eq(r.exit_code, 1, "%s", r.err);
    cr_expect_null(strstr(r.err, "built "), "nothing was built: %s", r.err);
    cr_expect(strstr(r.out, "\"failed\": 1"), "one row, for the package: %s", r.out);
    cr_expect(strstr(r.out, "\"already_there\": 2"), "the other package: %s", r.out);
    cr_expect(strstr(r.out, "the sources of kbtest/cpu-add-two@0.1.0 changed since 0.1.0 was "
                            "published"),
              "%s", r.out);
    kbt_run_free(&r);
    free(readme);
    teardown(&f);
}

/* A merge given a bad reference says what it wants, and writes nothing. */
Test(cli_farm, merge_bad_input)
{
    fixture f = setup();
    const char *args[] = {"farm", "merge", "kbtest/cpu-add", "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(f.env, args);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "org/name@version"), "%s", r.err);
    kbt_run_free(&r);
    cr_expect_not(kbi_path_exists(f.hub), "nothing written");
    const char *never[] = {"farm", "merge", "kbtest/cpu-add@0.1.0", "--registry", f.hub, NULL};
    r = kbt_kbpkg(f.env, never);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "kbtest/cpu-add@0.1.0: nothing is published or staged"), "%s", r.err);
    kbt_run_free(&r);
    teardown(&f);
}

/* farm build --stage and farm merge count their own rows ("1 staged", "1 merged"), not
 * "0 published"; a merge that meets a conflict (a staged target whose bytes differ from the
 * index's) reports it, keeps the index, and exits 1 so a job engine sees it. */
Test(cli_farm, stage_and_merge_summaries_and_a_conflict_exits_1)
{
    fixture f = setup();
    char *one = kbi_asprintf("%s/team/one", f.pkgs);
    const char *stage[] = {"farm",    "build",      one,   "--target", "cpu-x86_64_v2-x86_64-linux",
                           "--stage", "--registry", f.hub, NULL};
    kbt_run r = kbt_kbpkg(f.env, stage);
    cr_assert_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "\n1 staged\n"), "%s", r.out);
    cr_expect_null(strstr(r.out, "published"), "%s", r.out);
    kbt_run_free(&r);
    const char *merge[] = {"farm", "merge", "kbtest/cpu-add@0.1.0", "--registry", f.hub, NULL};
    r = kbt_kbpkg(f.env, merge);
    cr_assert_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "\n1 merged\n"), "%s", r.out);
    kbt_run_free(&r);
    char *before = index_digest(&f, "kbtest/cpu-add");

    /* A worker with another compiler identity (another build key, other bytes) that checked
     * the index before that merge and tags its stage after it: the race a conflict is. */
    char *cc = kbi_asprintf("%s/cc-other", f.tmp);
    kbt_write(cc, "#!/bin/sh\n[ \"$1\" = --version ] && echo 'other cc 1.0' && exit 0\n"
                  "exec cc \"$@\"\n");
    cr_assert_eq(chmod(cc, 0755), 0);
    char *env_cc = kbi_asprintf("KBPKG_CC=%s", cc);
    const char *env[] = {f.env[0], f.env[1], f.env[2], f.env[3], env_cc, NULL};
    char *hub2 = kbi_asprintf("%s/hub-other", f.tmp);
    const char *stage2[] = {"farm",    "build",      one,  "--target", "cpu-x86_64_v2-x86_64-linux",
                            "--stage", "--registry", hub2, NULL};
    r = kbt_kbpkg(env, stage2);
    cr_assert_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    kbt_run_free(&r);
    /* Its blobs reach the hub, then its stage tag (layout folders: blobs are files). */
    char *copy = kbi_asprintf("cp -n '%s'/blobs/sha256/* '%s'/blobs/sha256/", hub2, f.hub);
    cr_assert_eq(system(copy), 0, "%s", copy);
    const char *tag = "kbstage-0.1.0--cpu-x86_64_v2-x86_64-linux";
    kb_ctx *ctx = kbt_ctx();
    kb_registry *from = NULL, *to = NULL;
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kb_registry_open(&from, ctx, hub2), 0);
    cr_assert_eq(kb_registry_open(&to, ctx, f.hub), 0);
    cr_assert_eq(kbi_registry_manifest_get(&m, from, "kbtest/cpu-add", tag), 0);
    cr_assert_eq(
        kbi_registry_manifest_put(NULL, to, "kbtest/cpu-add", tag, m->media_type, m->data, m->len),
        0, "%s", kb_ctx_last_error(ctx)->message);
    kbi_registry_manifest_free(m);
    kb_registry_free(from);
    kb_registry_free(to);
    kb_ctx_free(ctx);
    r = kbt_kbpkg(f.env, merge);
    cr_expect_eq(r.exit_code, 1, "a conflict fails the merge: %s%s", r.out, r.err);
    cr_expect(strstr(r.out, "\n1 unchanged, 1 conflict\n"), "%s", r.out);
    kbt_run_free(&r);
    char *after = index_digest(&f, "kbtest/cpu-add");
    cr_expect_str_eq(after, before, "the index keeps what it had");
    free(after);
    free(before);
    free(copy);
    free(hub2);
    free(env_cc);
    free(cc);
    free(one);
    teardown(&f);
}
