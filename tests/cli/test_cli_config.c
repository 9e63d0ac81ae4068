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
    s.user_dir = kb_path_join(s.root, "user");
    s.env_system = kb_asprintf("KBPKG_SYSTEM_CONFIG=%s/system.yaml", s.root);
    s.env_user = kb_asprintf("KBPKG_CONFIG_DIR=%s", s.user_dir);
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
    char *user_file = kb_path_join(s.user_dir, "config.yaml");
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
            cr_expect(kb_str_ends(path, "/kbpkg.yaml"), "%s", path);
        }
    }
    cr_expect_eq(seen, 2);
    json_decref(arr);
    kbt_run_free(&r);

    const char *text_list[] = {"config", "list", NULL};
    r = kbt_kbpkg(s.env, text_list);
    char *line = kb_asprintf("(user: %s)", user_file);
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
    char *system = kb_asprintf("%s/system.yaml", s.root);
    kbt_write(system, "offline: false\n\nnet: {retries: x}\n");
    const char *args[] = {"config", "list", NULL};
    kbt_run r = kbt_kbpkg(s.env, args);
    cr_expect_neq(r.exit_code, 0);
    char *want = kb_asprintf("%s:3:16: net.retries: 'x' is not a non-negative integer", system);
    cr_expect(strstr(r.err, want), "%s", r.err);
    free(want);
    kbt_run_free(&r);
    free(system);
    free_sandbox(&s);
}
