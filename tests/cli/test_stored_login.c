/* A `kbpkg login` counts everywhere: against an htpasswd docker-registry, doctor and hub render
 * fail before it saying how to log in, pass after it, and never show the password. */
#include "kbtest.h"
#include "registry_harness.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define USER "alice"
#define PASSWORD "Corr3ct-h0rse-kbpkg"

typedef struct world {
    kbt_registry srv;
    char *dir, *pkg, *site;
    char *ref;   /* oci://127.0.0.1:PORT/ns */
    char *login; /* "kbpkg login oci://127.0.0.1:PORT": what the errors tell you to run */
    char *env_home, *env_xdg, *env_cache, *env_registry;
    const char *env[7]; /* a fresh HOME and config folder: nothing stored yet */
} world;

static void world_start(world *w)
{
    memset(w, 0, sizeof(*w));
    /* the credentials come from a login here, never from the test runner's environment */
    unsetenv("KBPKG_REGISTRY_USER");
    unsetenv("KBPKG_REGISTRY_PASSWORD");
    unsetenv("KBPKG_CONFIG_DIR");
    kbt_registry_start(&w->srv, USER, PASSWORD);
    w->dir = kbt_mkdtemp();
    w->pkg = kbi_asprintf("%s/pkg", w->dir);
    w->site = kbi_asprintf("%s/site", w->dir);
    w->ref = kbi_asprintf("oci://127.0.0.1:%d/ns", w->srv.port);
    w->login = kbi_asprintf("kbpkg login oci://127.0.0.1:%d", w->srv.port);
    w->env_home = kbi_asprintf("HOME=%s/home", w->dir);
    w->env_xdg = kbi_asprintf("XDG_CONFIG_HOME=%s/home/.config", w->dir);
    w->env_cache = kbi_asprintf("KBPKG_CACHE=%s/cache", w->dir);
    w->env_registry = kbi_asprintf("KBPKG_REGISTRY=%s", w->ref);
    const char *env[] = {w->env_home,     w->env_xdg,           w->env_cache,
                         w->env_registry, "KBPKG_DEVICES=none", "KBPKG_CPU=x86_64_v3"};
    memcpy(w->env, env, sizeof(env));
    char *src = kbt_data("publish/cpu-add");
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, w->pkg);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(src);
}

static void world_stop(world *w)
{
    kbt_registry_stop(&w->srv);
    kbt_rmtree(w->dir);
    free(w->dir);
    free(w->pkg);
    free(w->site);
    free(w->ref);
    free(w->login);
    free(w->env_home);
    free(w->env_xdg);
    free(w->env_cache);
    free(w->env_registry);
}

/* Run kbpkg in the world (plus one extra "K=V", may be NULL); the password is in no output. */
static kbt_run run_in(const world *w, const char *extra, const char *const *args, const char *input)
{
    const char *env[8] = {0};
    memcpy(env, w->env, sizeof(w->env));
    env[6] = extra;
    kbt_run r = kbt_kbpkg_input(env, args, input);
    cr_expect_null(strstr(r.out, PASSWORD), "the password on stdout: %s", r.out);
    cr_expect_null(strstr(r.err, PASSWORD), "the password on stderr: %s", r.err);
    return r;
}

/* Publish kbtest/cpu-add@0.1.0 with the credentials in the environment, as CI would. */
static void publish_with_env_credentials(const world *w)
{
    const char *env[] = {w->env_home,
                         w->env_xdg,
                         w->env_cache,
                         w->env_registry,
                         "KBPKG_DEVICES=none",
                         "KBPKG_CPU=x86_64_v3",
                         "KBPKG_REGISTRY_USER=" USER,
                         "KBPKG_REGISTRY_PASSWORD=" PASSWORD,
                         NULL};
    const char *args[] = {"publish", w->pkg, NULL};
    kbt_run r = kbt_kbpkg(env, args);
    cr_assert_eq(r.exit_code, 0, "publish: %s / %s", r.out, r.err);
    cr_expect_null(strstr(r.out, PASSWORD), "%s", r.out);
    cr_expect_null(strstr(r.err, PASSWORD), "%s", r.err);
    kbt_run_free(&r);
}

static void login(const world *w)
{
    const char *args[] = {"login", w->ref, "--username", USER, "--password-stdin", NULL};
    kbt_run r = run_in(w, NULL, args, PASSWORD "\n");
    cr_assert_eq(r.exit_code, 0, "login: %s / %s", r.out, r.err);
    kbt_run_free(&r);
}

/* The registry check of `kbpkg --json doctor`; *fix_out is its fix ("" when none). */
static char *doctor_registry(const world *w, char **fix_out, int *exit_code)
{
    const char *args[] = {"--json", "doctor", NULL};
    kbt_run r = run_in(w, NULL, args, NULL);
    *exit_code = r.exit_code;
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "not JSON: %s / %s", r.out, r.err);
    size_t i;
    json_t *c, *reg = NULL;
    json_array_foreach(json_object_get(doc, "checks"), i, c)
    {
        if (strcmp(json_string_value(json_object_get(c, "check")), "registry") == 0)
            reg = c;
    }
    cr_assert_not_null(reg, "no registry check: %s", r.out);
    const char *fix = json_string_value(json_object_get(reg, "fix"));
    *fix_out = kbi_strdup(fix ? fix : "");
    char *line = kbi_asprintf("%s %s", json_string_value(json_object_get(reg, "status")),
                              json_string_value(json_object_get(reg, "message")));
    json_decref(doc);
    kbt_run_free(&r);
    return line;
}

Test(stored_login, doctor_fails_before_login_and_passes_after)
{
    world w;
    world_start(&w);
    publish_with_env_credentials(&w);

    int code = -1;
    char *fix = NULL;
    char *line = doctor_registry(&w, &fix, &code);
    cr_expect_eq(code, 1, "a refused registry is a failed check");
    cr_expect(kbi_str_starts(line, "fail "), "%s", line);
    cr_expect_not_null(strstr(line, "401"), "%s", line);
    char *want_fix = kbi_asprintf("log in with: kbpkg login %s (or set KBPKG_REGISTRY_USER and "
                                  "KBPKG_REGISTRY_PASSWORD)",
                                  w.ref);
    cr_expect_str_eq(fix, want_fix);
    free(line);
    free(fix);

    /* the text form puts the same fix under the failing line */
    const char *text[] = {"doctor", NULL};
    kbt_run r = run_in(&w, NULL, text, NULL);
    char *fix_line = kbi_asprintf("            fix: %s\n", want_fix);
    cr_expect_not_null(strstr(r.out, fix_line), "%s", r.out);
    cr_expect_null(strstr(r.out, "fix: set KBPKG_REGISTRY_USER"), "%s", r.out);
    kbt_run_free(&r);

    login(&w);
    line = doctor_registry(&w, &fix, &code);
    char *want = kbi_asprintf("pass %s answers", w.ref);
    cr_expect_str_eq(line, want, "the stored login is used");
    cr_expect_str_eq(fix, "");
    free(want);
    free(fix_line);
    free(want_fix);
    free(line);
    free(fix);
    world_stop(&w);
}

Test(stored_login, hub_render_fails_before_login_and_renders_after)
{
    world w;
    world_start(&w);
    publish_with_env_credentials(&w);

    const char *args[] = {"hub", "render", "--out", w.site, NULL};
    kbt_run r = run_in(&w, NULL, args, NULL);
    cr_expect_eq(r.exit_code, 1, "%s", r.out);
    cr_expect_not_null(strstr(r.err, "401 UNAUTHORIZED"), "%s", r.err);
    char *hint = kbi_asprintf("not logged in: log in with: %s (or set KBPKG_REGISTRY_USER and "
                              "KBPKG_REGISTRY_PASSWORD)",
                              w.login);
    cr_expect_not_null(strstr(r.err, hint), "%s", r.err);
    kbt_run_free(&r);

    login(&w);
    r = run_in(&w, NULL, args, NULL);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    char *want = kbi_asprintf("wrote %s/index.html and 1 package page\n", w.site);
    cr_expect_str_eq(r.out, want);
    kbt_run_free(&r);
    char *index = kbi_asprintf("%s/index.html", w.site);
    kb_buf html = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, index, &html), 0, "%s", index);
    cr_expect_not_null(strstr(html.data, "kbtest/cpu-add"), "the published package is listed");
    cr_expect_null(strstr(html.data, PASSWORD));
    kbi_buf_free(&html);
    free(index);
    free(want);
    free(hint);
    world_stop(&w);
}

/* A 401 says what to do next, naming the registry; with a refused user, which user. */
Test(stored_login, auth_errors_say_how_to_log_in)
{
    world w;
    world_start(&w);
    const char *args[] = {"search", "cpu", NULL};
    kbt_run r = run_in(&w, NULL, args, NULL);
    cr_expect_eq(r.exit_code, 1, "%s", r.out);
    char *hint = kbi_asprintf(": 401 UNAUTHORIZED: authentication required; not logged in: log in "
                              "with: %s (or set KBPKG_REGISTRY_USER and KBPKG_REGISTRY_PASSWORD)",
                              w.login);
    cr_expect_not_null(strstr(r.err, hint), "%s", r.err);
    kbt_run_free(&r);

    r = run_in(&w, "KBPKG_REGISTRY_USER=" USER, args, NULL); /* no password: refused */
    cr_expect_eq(r.exit_code, 1, "%s", r.out);
    char *refused =
        kbi_asprintf("the registry refused user '" USER "': log in again with: %s", w.login);
    cr_expect_not_null(strstr(r.err, refused), "%s", r.err);
    kbt_run_free(&r);

    /* a wrong password at login says the same, and stores nothing */
    const char *bad[] = {"login", w.ref, "--username", USER, "--password-stdin", NULL};
    r = run_in(&w, NULL, bad, "wrong-" PASSWORD "\n");
    cr_expect_eq(r.exit_code, 1, "%s", r.out);
    cr_expect_not_null(strstr(r.err, refused), "%s", r.err);
    kbt_run_free(&r);
    free(refused);
    free(hint);
    world_stop(&w);
}
