/* "did you mean org/name?" after a mistyped package name: install, resolve, info, fetch from
 * the registry's names, uninstall (and info) from the installed ones; in --json as
 * error.suggestion; no suggestion when nothing is close or the name itself exists. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct fixture {
    char *tmp, *hub, *other_hub;
    char *env_cache, *env_config, *env_registry;
    const char *env[6];
} fixture;

static void publish(fixture *f, const char *name, const char *hub)
{
    char *src = kbt_data("publish/cpu-add");
    char *dir = kbi_asprintf("%s/src-%s", f->tmp, strchr(name, '/') + 1);
    char *cmd = kbi_asprintf("cp -r '%s' '%s' && sed -i 's|^name: .*|name: %s|' '%s/kernel.yaml'",
                             src, dir, name, dir);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    const char *args[] = {"-q", "publish", dir, "--registry", hub, NULL};
    kbt_run r = kbt_kbpkg(f->env, args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    free(cmd);
    free(dir);
    free(src);
}

/* hub: kbtest/cpu-add and kbtest/vec-scale; other_hub: kbtest/vec-scale only. */
static fixture setup(void)
{
    fixture f = {0};
    f.tmp = kbt_mkdtemp();
    f.hub = kbi_asprintf("%s/hub", f.tmp);
    f.other_hub = kbi_asprintf("%s/other", f.tmp);
    f.env_cache = kbi_asprintf("KBPKG_CACHE=%s/cache", f.tmp);
    f.env_config = kbi_asprintf("XDG_CONFIG_HOME=%s/config", f.tmp);
    f.env_registry = kbi_asprintf("KBPKG_REGISTRY=%s", f.hub);
    f.env[0] = f.env_cache;
    f.env[1] = f.env_config;
    f.env[2] = f.env_registry;
    f.env[3] = "KBPKG_DEVICES=none";
    f.env[4] = "KBPKG_CPU=x86_64_v3";
    publish(&f, "kbtest/cpu-add", f.hub);
    publish(&f, "kbtest/vec-scale", f.hub);
    publish(&f, "kbtest/vec-scale", f.other_hub);
    return f;
}

static void teardown(fixture *f)
{
    kbt_rmtree(f->tmp);
    free(f->tmp);
    free(f->hub);
    free(f->other_hub);
    free(f->env_cache);
    free(f->env_config);
    free(f->env_registry);
}

static kbt_run run(const fixture *f, const char *const *args)
{
    return kbt_kbpkg(f->env, args);
}

static char *installed(const fixture *f)
{
    const char *args[] = {"--json", "list", NULL};
    kbt_run r = run(f, args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    char *out = r.out;
    free(r.err);
    return out;
}

Test(suggest, install_typo_names_the_registry_and_suggests)
{
    fixture f = setup();
    const char *args[] = {"install", "kbtest/cpu-ad", NULL};
    kbt_run r = run(&f, args);
    cr_expect_eq(r.exit_code, 3);
    char *want = kbi_asprintf("kbpkg: no package kbtest/cpu-ad in %s\n"
                              "kbpkg: did you mean kbtest/cpu-add?\n",
                              f.hub);
    cr_expect_str_eq(r.err, want);
    cr_expect_str_eq(r.out, "");
    kbt_run_free(&r);
    free(want);
    char *list = installed(&f);
    cr_expect(strstr(list, "\"installed\": []"), "nothing installed: %s", list);
    free(list);

    /* a name without its org: the part after the slash is matched */
    const char *short_name[] = {"install", "cpu-add", NULL};
    r = run(&f, short_name);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "'cpu-add' is not a package name"), "%s", r.err);
    cr_expect(strstr(r.err, "kbpkg: did you mean kbtest/cpu-add?\n"), "%s", r.err);
    kbt_run_free(&r);
    teardown(&f);
}

Test(suggest, json_error_carries_the_suggestion_with_the_constraint)
{
    fixture f = setup();
    const char *args[] = {"--json", "install", "kbtest/vec-scal@^0.1", NULL};
    kbt_run r = run(&f, args);
    cr_expect_eq(r.exit_code, 3);
    json_error_t jerr;
    json_t *root = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(root, "%s", r.out);
    json_t *err = json_object_get(root, "error");
    cr_expect_str_eq(json_string_value(json_object_get(err, "suggestion")),
                     "kbtest/vec-scale@^0.1");
    char *msg = kbi_asprintf("no package kbtest/vec-scal in %s", f.hub);
    cr_expect_str_eq(json_string_value(json_object_get(err, "message")), msg);
    free(msg);
    json_decref(root);
    kbt_run_free(&r);

    /* nothing close: no suggestion, in text or JSON */
    const char *far[] = {"--json", "install", "kbtest/nothing-like-it", NULL};
    r = run(&f, far);
    cr_expect_eq(r.exit_code, 3);
    root = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(root, "%s", r.out);
    cr_expect_null(json_object_get(json_object_get(root, "error"), "suggestion"), "%s", r.out);
    cr_expect_not(strstr(r.err, "did you mean"), "%s", r.err);
    json_decref(root);
    kbt_run_free(&r);
    teardown(&f);
}

Test(suggest, resolve_info_and_fetch_suggest_from_the_registry)
{
    fixture f = setup();
    /* two neighbours swapped count as one edit */
    const char *resolve[] = {"resolve", "kbtest/cpu-dad", NULL};
    kbt_run r = run(&f, resolve);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "no package kbtest/cpu-dad in "), "%s", r.err);
    cr_expect(strstr(r.err, "kbpkg: did you mean kbtest/cpu-add?\n"), "%s", r.err);
    kbt_run_free(&r);

    const char *info[] = {"info", "kbtest/vec-scaled", NULL};
    r = run(&f, info);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "kbpkg: did you mean kbtest/vec-scale?\n"), "%s", r.err);
    kbt_run_free(&r);

    const char *fetch[] = {"fetch", "--source", "kbtest/cpuadd", NULL};
    r = run(&f, fetch);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "kbpkg: did you mean kbtest/cpu-add?\n"), "%s", r.err);
    kbt_run_free(&r);

    /* the name exists, the version does not: the message says so, no name to suggest */
    const char *version[] = {"resolve", "kbtest/cpu-add@9", NULL};
    r = run(&f, version);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "no version of kbtest/cpu-add matches '9'"), "%s", r.err);
    cr_expect_not(strstr(r.err, "did you mean"), "%s", r.err);
    kbt_run_free(&r);

    const char *far[] = {"fetch", "--source", "zzz/qqq", NULL};
    r = run(&f, far);
    cr_expect_eq(r.exit_code, 3);
    cr_expect_not(strstr(r.err, "did you mean"), "%s", r.err);
    kbt_run_free(&r);
    teardown(&f);
}

Test(suggest, uninstall_and_info_suggest_from_installed_names)
{
    fixture f = setup();
    const char *install[] = {"-q", "install", "kbtest/cpu-add", NULL};
    kbt_run r = run(&f, install);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);

    const char *uninstall[] = {"uninstall", "kbtest/cpu-adds", NULL};
    r = run(&f, uninstall);
    cr_expect_eq(r.exit_code, 3);
    cr_expect_str_eq(r.err, "kbpkg: kbtest/cpu-adds is not installed\n"
                            "kbpkg: did you mean kbtest/cpu-add?\n");
    kbt_run_free(&r);
    char *list = installed(&f);
    cr_expect(strstr(list, "\"name\": \"kbtest/cpu-add\""), "still installed: %s", list);
    free(list);

    /* vec-scale is in the registry but not installed: not a name uninstall suggests */
    const char *not_installed[] = {"--json", "uninstall", "kbtest/vec-scal", NULL};
    r = run(&f, not_installed);
    cr_expect_eq(r.exit_code, 3);
    cr_expect_not(strstr(r.err, "did you mean"), "%s", r.err);
    cr_expect_not(strstr(r.out, "suggestion"), "%s", r.out);
    kbt_run_free(&r);

    /* info against a registry without cpu-add still suggests the installed one */
    const char *info[] = {"info", "kbtest/cpu-ad", "--registry", f.other_hub, NULL};
    r = run(&f, info);
    cr_expect_eq(r.exit_code, 3);
    char *want = kbi_asprintf("kbpkg: no package kbtest/cpu-ad in %s\n"
                              "kbpkg: did you mean kbtest/cpu-add?\n",
                              f.other_hub);
    cr_expect_str_eq(r.err, want);
    free(want);
    kbt_run_free(&r);
    /* ... which install, reading that registry only, does not */
    const char *install_other[] = {"install", "kbtest/cpu-ad", "--registry", f.other_hub, NULL};
    r = run(&f, install_other);
    cr_expect_eq(r.exit_code, 3);
    cr_expect_not(strstr(r.err, "did you mean"), "%s", r.err);
    kbt_run_free(&r);
    teardown(&f);
}

Test(suggest, a_registry_folder_that_does_not_exist_is_named_as_the_problem)
{
    fixture f = setup();
    char *missing = kbi_asprintf("%s/no-such-hub", f.tmp);
    const char *args[] = {"--registry", missing, "install", "kbtest/cpu-add", NULL};
    kbt_run r = run(&f, args);
    cr_expect_eq(r.exit_code, 3);
    char *want = kbi_asprintf("kbpkg: no package kbtest/cpu-add in %s: that registry folder does "
                              "not exist (publish there first, or point --registry or "
                              "$KBPKG_REGISTRY at a registry)\n",
                              missing);
    cr_expect_str_eq(r.err, want);
    kbt_run_free(&r);
    /* the lookup created nothing, and the registry that does exist is still what it was */
    cr_expect_not(kbi_path_exists(missing), "%s was created", missing);
    char *list = installed(&f);
    cr_expect(strstr(list, "\"installed\": []"), "nothing installed: %s", list);
    free(list);
    const char *good[] = {"-q", "install", "kbtest/cpu-add", NULL};
    r = run(&f, good);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    /* an existing but empty folder is a registry without the package: the plain message */
    char *empty = kbi_asprintf("%s/empty-hub", f.tmp);
    cr_assert_eq(mkdir(empty, 0755), 0);
    const char *in_empty[] = {"--registry", empty, "install", "kbtest/cpu-add@9", NULL};
    r = run(&f, in_empty);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "no package kbtest/cpu-add in "), "%s", r.err);
    cr_expect_not(strstr(r.err, "does not exist"), "%s", r.err);
    kbt_run_free(&r);
    free(empty);
    free(want);
    free(missing);
    teardown(&f);
}

/* ==== list, verify and lock: a name that is not there fails as not found (exit 3), with the
 * suggestion (installed names for list and verify, the registry's for lock) ==== */

/* The --json error document of r: exit 3, kind "not found", and error.suggestion (NULL: none). */
static void expect_json_not_found(kbt_run *r, const char *suggestion, const char *what)
{
    cr_expect_eq(r->exit_code, 3, "%s: %s", what, r->err);
    json_error_t jerr;
    json_t *root = json_loads(r->out, 0, &jerr);
    cr_assert_not_null(root, "%s: %s", what, r->out);
    cr_expect(json_is_false(json_object_get(root, "ok")), "%s: %s", what, r->out);
    json_t *err = json_object_get(root, "error");
    cr_expect_str_eq(json_string_value(json_object_get(err, "kind")), "not found", "%s", what);
    const char *got = json_string_value(json_object_get(err, "suggestion"));
    if (suggestion)
        cr_expect(got && strcmp(got, suggestion) == 0, "%s: suggestion %s", what, r->out);
    else
        cr_expect_null(got, "%s: %s", what, r->out);
    json_decref(root);
}

Test(suggest, list_and_verify_of_a_name_not_installed_fail_and_suggest)
{
    fixture f = setup();
    const char *install[] = {"-q", "install", "kbtest/cpu-add", NULL};
    kbt_run r = run(&f, install);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);

    const char *commands[] = {"list", "verify"};
    for (size_t i = 0; i < 2; i++) {
        const char *typo[] = {commands[i], "kbtest/cpu-ad", NULL};
        r = run(&f, typo);
        cr_expect_eq(r.exit_code, 3, "%s: %s", commands[i], r.err);
        cr_expect_str_eq(r.err, "kbpkg: kbtest/cpu-ad is not installed (kbpkg list shows what is)\n"
                                "kbpkg: did you mean kbtest/cpu-add?\n");
        cr_expect_not(strstr(r.out, "nothing installed"), "%s: %s", commands[i], r.out);
        kbt_run_free(&r);

        const char *json[] = {"--json", commands[i], "kbtest/cpu-ad", NULL};
        r = run(&f, json);
        expect_json_not_found(&r, "kbtest/cpu-add", commands[i]);
        kbt_run_free(&r);

        /* in the registry but not installed: not found, and no installed name is close */
        const char *other[] = {"--json", commands[i], "kbtest/vec-scale", NULL};
        r = run(&f, other);
        expect_json_not_found(&r, NULL, commands[i]);
        cr_expect_not(strstr(r.err, "did you mean"), "%s: %s", commands[i], r.err);
        kbt_run_free(&r);

        /* without its org: not a package name, but the installed one is suggested */
        const char *short_name[] = {commands[i], "cpu-add", NULL};
        r = run(&f, short_name);
        cr_expect_eq(r.exit_code, 2, "%s: %s", commands[i], r.err);
        cr_expect(strstr(r.err, "kbpkg: did you mean kbtest/cpu-add?\n"), "%s", r.err);
        kbt_run_free(&r);

        /* the installed name itself still works */
        const char *good[] = {commands[i], "kbtest/cpu-add", NULL};
        r = run(&f, good);
        cr_expect_eq(r.exit_code, 0, "%s: %s", commands[i], r.err);
        cr_expect(strstr(r.out, "kbtest/cpu-add"), "%s: %s", commands[i], r.out);
        kbt_run_free(&r);
    }
    /* with nothing installed, a bare list still says so and succeeds */
    const char *uninstall[] = {"-q", "uninstall", "kbtest/cpu-add", NULL};
    r = run(&f, uninstall);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    const char *bare[] = {"list", NULL};
    r = run(&f, bare);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "nothing installed"), "%s", r.out);
    kbt_run_free(&r);
    teardown(&f);
}

Test(suggest, lock_typo_suggests_from_the_registry)
{
    fixture f = setup();
    char *lock = kbi_asprintf("%s/kbpkg.lock", f.tmp);
    const char *args[] = {"lock", "kbtest/vec-scale", "kbtest/cpu-ad@^0", "--file", lock, NULL};
    kbt_run r = run(&f, args);
    cr_expect_eq(r.exit_code, 3, "%s", r.err);
    char *want = kbi_asprintf("kbpkg: no package kbtest/cpu-ad in %s\n"
                              "kbpkg: did you mean kbtest/cpu-add@^0?\n",
                              f.hub);
    cr_expect_str_eq(r.err, want);
    free(want);
    cr_expect_not(kbi_path_exists(lock), "no lockfile written for a failed lock");
    kbt_run_free(&r);

    const char *json[] = {"--json", "lock", "kbtest/cpu-ad", "--file", lock, NULL};
    r = run(&f, json);
    expect_json_not_found(&r, "kbtest/cpu-add", "lock --json");
    kbt_run_free(&r);

    /* nothing close: the plain message */
    const char *far[] = {"lock", "zzz/qqq", "--file", lock, NULL};
    r = run(&f, far);
    cr_expect_eq(r.exit_code, 3);
    cr_expect(strstr(r.err, "no package zzz/qqq in "), "%s", r.err);
    cr_expect_not(strstr(r.err, "did you mean"), "%s", r.err);
    kbt_run_free(&r);
    free(lock);
    teardown(&f);
}
/* ==== end of list, verify and lock suggestions ==== */
