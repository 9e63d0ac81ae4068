/* kbpkg config list|get|set: values, origins and files; a bad file stops kbpkg with its
 * position. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct sandbox {
    char *root, *user_dir, *env_system, *env_user;
    const char *env[3];
} sandbox;

static sandbox make_sandbox(void)
{
    sandbox s;
    s.root = kbt_mkdtemp();
    s.user_dir = kbi_path_join(s.root, "user");
    s.env_system = kbi_asprintf("KBPKG_SYSTEM_CONFIG=%s/system.yaml", s.root);
    s.env_user = kbi_asprintf("KBPKG_CONFIG_DIR=%s", s.user_dir);
    s.env[0] = s.env_system;
    s.env[1] = s.env_user;
    s.env[2] = NULL;
    cr_assert_eq(chdir(s.root), 0); /* the child's project folder */
    return s;
}

static void free_sandbox(sandbox *s)
{
    kbt_rmtree(s->root);
    free(s->root);
    free(s->user_dir);
    free(s->env_system);
    free(s->env_user);
}

Test(cli_config, set_then_get_and_list_with_origin)
{
    sandbox s = make_sandbox();
    const char *set_user[] = {"config", "set", "net.retries", "7", NULL};
    kbt_run r = kbt_kbpkg(s.env, set_user);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    const char *set_project[] = {"config", "set", "--project", "build.jobs", "3", NULL};
    r = kbt_kbpkg(s.env, set_project);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);

    const char *get[] = {"config", "get", "net.retries", NULL};
    r = kbt_kbpkg(s.env, get);
    cr_expect_eq(r.exit_code, 0);
    cr_expect_str_eq(r.out, "7\n");
    kbt_run_free(&r);

    const char *list[] = {"--json", "config", "list", NULL};
    r = kbt_kbpkg(s.env, list);
    cr_expect_eq(r.exit_code, 0);
    json_t *arr = json_loads(r.out, 0, NULL);
    cr_assert(json_is_array(arr), "%s", r.out);
    char *user_file = kbi_path_join(s.user_dir, "config.yaml");
    int seen = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        json_t *e = json_array_get(arr, i);
        const char *key = json_string_value(json_object_get(e, "key"));
        const char *origin = json_string_value(json_object_get(e, "origin"));
        const char *path = json_string_value(json_object_get(e, "path"));
        if (strcmp(key, "net.retries") == 0) {
            seen++;
            cr_expect_str_eq(origin, "user");
            cr_expect_str_eq(path, user_file);
        } else if (strcmp(key, "build.jobs") == 0) {
            seen++;
            cr_expect_str_eq(origin, "project");
            cr_expect(kbi_str_ends(path, "/kbpkg.yaml"), "%s", path);
        }
    }
    cr_expect_eq(seen, 2);
    json_decref(arr);
    kbt_run_free(&r);

    const char *text_list[] = {"config", "list", NULL};
    r = kbt_kbpkg(s.env, text_list);
    char *line = kbi_asprintf("(user: %s)", user_file);
    cr_expect(strstr(r.out, line), "%s", r.out);
    free(line);
    kbt_run_free(&r);
    free(user_file);
    free_sandbox(&s);
}

Test(cli_config, refused_values_and_keys)
{
    sandbox s = make_sandbox();
    const char *bad_value[] = {"config", "set", "offline", "perhaps", NULL};
    kbt_run r = kbt_kbpkg(s.env, bad_value);
    cr_expect_eq(r.exit_code, 5);
    cr_expect(strstr(r.err, "offline: 'perhaps' is not a boolean"), "%s", r.err);
    kbt_run_free(&r);
    const char *bad_key[] = {"config", "get", "no.key", NULL};
    r = kbt_kbpkg(s.env, bad_key);
    cr_expect_eq(r.exit_code, 5);
    cr_expect(strstr(r.err, "unknown configuration key 'no.key'"), "%s", r.err);
    kbt_run_free(&r);
    const char *bad_flag[] = {"config", "set", "--global", "offline", "true", NULL};
    r = kbt_kbpkg(s.env, bad_flag);
    cr_expect_eq(r.exit_code, 2);
    kbt_run_free(&r);
    free_sandbox(&s);
}

Test(cli_config, bad_config_file_stops_with_its_position)
{
    sandbox s = make_sandbox();
    char *system = kbi_asprintf("%s/system.yaml", s.root);
    kbt_write(system, "offline: false\n\nnet: {retries: x}\n");
    const char *args[] = {"config", "list", NULL};
    kbt_run r = kbt_kbpkg(s.env, args);
    cr_expect_neq(r.exit_code, 0);
    char *want = kbi_asprintf("%s:3:16: net.retries: 'x' is not a non-negative integer", system);
    cr_expect(strstr(r.err, want), "%s", r.err);
    free(want);
    kbt_run_free(&r);
    free(system);
    free_sandbox(&s);
}

Test(cli_config, set_warns_when_a_higher_layer_still_overrides_and_bare_config_lists)
{
    sandbox s = make_sandbox();
    char *env_retries = kbi_strdup("KBPKG_RETRIES=9");
    const char *env[] = {s.env_system, s.env_user, env_retries, NULL};
    /* the variable is the env layer of net.retries */
    const char *get[] = {"--json", "config", "get", "net.retries", NULL};
    kbt_run r = kbt_kbpkg(env, get);
    json_t *g = json_loads(r.out, 0, NULL);
    cr_assert_not_null(g, "%s", r.out);
    cr_assert_str_eq(json_string_value(json_object_get(g, "origin")), "env", "%s", r.out);
    json_decref(g);
    kbt_run_free(&r);

    const char *set[] = {"config", "set", "net.retries", "7", NULL};
    r = kbt_kbpkg(env, set);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    char *user_file = kbi_path_join(s.user_dir, "config.yaml");
    char *said = kbi_asprintf("net.retries = 7 (user: %s)\n", user_file);
    cr_expect_str_eq(r.out, said);
    cr_expect_str_eq(r.err, "kbpkg: warning: net.retries stays 9 here: the env setting "
                            "(KBPKG_RETRIES) overrides the user file\n");
    kbt_run_free(&r);
    /* written all the same: without the variable, the file's value is in effect */
    const char *plain_get[] = {"config", "get", "net.retries", NULL};
    r = kbt_kbpkg(s.env, plain_get);
    cr_expect_str_eq(r.out, "7\n");
    kbt_run_free(&r);

    const char *set_json[] = {"--json", "config", "set", "net.retries", "8", NULL};
    r = kbt_kbpkg(env, set_json);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    json_t *o = json_loads(r.out, 0, NULL);
    cr_assert_not_null(o, "%s", r.out);
    json_t *over = json_object_get(o, "overridden_by");
    cr_expect_str_eq(json_string_value(json_object_get(over, "origin")), "env", "%s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(over, "value")), "9", "%s", r.out);
    json_decref(o);
    kbt_run_free(&r);

    /* nothing above the user file: no warning, no overridden_by */
    const char *set_plain[] = {"--json", "config", "set", "build.jobs", "2", NULL};
    r = kbt_kbpkg(s.env, set_plain);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect_str_eq(r.err, "");
    cr_expect_not(strstr(r.out, "overridden_by"), "%s", r.out);
    kbt_run_free(&r);

    /* plain `kbpkg config` shows the settings, as `config list` does */
    const char *bare[] = {"config", NULL};
    r = kbt_kbpkg(s.env, bare);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    const char *list[] = {"config", "list", NULL};
    kbt_run l = kbt_kbpkg(s.env, list);
    cr_expect_str_eq(r.out, l.out);
    cr_expect(strstr(r.out, "build.jobs"), "%s", r.out);
    kbt_run_free(&l);
    kbt_run_free(&r);
    free(said);
    free(user_file);
    free(env_retries);
    free_sandbox(&s);
}
