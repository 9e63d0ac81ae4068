/* CLI: kbpkg key generate/trust/list/revoke/export and what they leave on disk. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct home {
    char *dir;
    char *env_cfg; /* "KBPKG_CONFIG_DIR=<dir>/cfg" */
} home;

static home new_home(void)
{
    home h = {kbt_mkdtemp(), NULL};
    h.env_cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s/cfg", h.dir);
    return h;
}

static void free_home(home *h)
{
    kbt_rmtree(h->dir);
    free(h->dir);
    free(h->env_cfg);
}

static kbt_run run(const home *h, const char *const *args)
{
    const char *env[] = {h->env_cfg, NULL};
    return kbt_kbpkg(env, args);
}

/* `key generate` and the id it printed. */
static char *generate(const home *h, const char *name)
{
    const char *with[] = {"key", "generate", "--name", name, NULL};
    const char *without[] = {"key", "generate", NULL};
    kbt_run r = run(h, name ? with : without);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_assert_eq(strlen(r.out), 17, "one id line: '%s'", r.out);
    char *id = kbi_strndup(r.out, 16);
    kbt_run_free(&r);
    return id;
}

Test(cli_key, generate_list_json_and_files)
{
    home h = new_home();
    char *first = generate(&h, "ci");
    char *second = generate(&h, NULL);
    char *key = kbi_asprintf("%s/cfg/keys/%s.key", h.dir, first);
    struct stat st;
    cr_assert_eq(stat(key, &st), 0);
    cr_expect_eq(st.st_mode & 0777, 0600);

    const char *args[] = {"key", "list", "--json", NULL};
    kbt_run r = run(&h, args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    json_t *all = json_loads(r.out, 0, NULL);
    cr_assert(json_is_array(all), "%s", r.out);
    cr_assert_eq(json_array_size(all), 2);
    for (size_t i = 0; i < 2; i++) {
        json_t *k = json_array_get(all, i);
        const char *id = json_string_value(json_object_get(k, "id"));
        bool is_first = strcmp(id, first) == 0;
        cr_expect(is_first || strcmp(id, second) == 0, "%s", id);
        cr_expect_str_eq(json_string_value(json_object_get(k, "kind")), "private");
        cr_expect_eq(json_is_true(json_object_get(k, "default")), is_first);
        cr_expect(json_is_false(json_object_get(k, "revoked")));
        if (is_first)
            cr_expect_str_eq(json_string_value(json_object_get(k, "name")), "ci");
    }
    json_decref(all);
    kbt_run_free(&r);
    free(key);
    free(first);
    free(second);
    free_home(&h);
}

Test(cli_key, export_then_trust_elsewhere_then_revoke)
{
    home a = new_home(), b = new_home();
    char *id = generate(&a, NULL);
    const char *exp[] = {"key", "export", id, NULL};
    kbt_run r = run(&a, exp);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(kbi_str_starts(r.out, "-----BEGIN PUBLIC KEY-----\n"), "%s", r.out);
    char *pem = kbi_asprintf("%s/a.pem", b.dir);
    kbt_write(pem, r.out);
    kbt_run_free(&r);

    const char *trust[] = {"key", "trust", pem, NULL};
    r = run(&b, trust);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    char *said = kbi_asprintf("trusted key %s\n", id);
    cr_expect_str_eq(r.out, said);
    kbt_run_free(&r);

    const char *list[] = {"key", "list", NULL};
    r = run(&b, list);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(kbi_str_starts(r.out, id), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "public"), "%s", r.out);
    kbt_run_free(&r);

    const char *revoke[] = {"key", "revoke", id, "--reason", "rotated", NULL};
    r = run(&b, revoke);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    r = run(&b, list);
    cr_expect_not_null(strstr(r.out, "revoked"), "%s", r.out);
    cr_expect_not_null(strstr(r.out, "rotated"), "%s", r.out);
    kbt_run_free(&r);

    /* a revoked key cannot be trusted again by accident */
    r = run(&b, trust);
    cr_expect_eq(r.exit_code, 4, "%s", r.err);
    char *want =
        kbi_asprintf("kbpkg: %s: key %s is revoked (rotated); refusing to trust it\n", pem, id);
    cr_expect_str_eq(r.err, want);
    kbt_run_free(&r);
    free(want);
    free(said);
    free(pem);
    free(id);
    free_home(&a);
    free_home(&b);
}

Test(cli_key, bad_input_is_named)
{
    home h = new_home();
    char *junk = kbi_asprintf("%s/junk.pem", h.dir);
    kbt_write(junk, "hello\n");
    const char *trust[] = {"key", "trust", junk, NULL};
    kbt_run r = run(&h, trust);
    cr_expect_eq(r.exit_code, 5);
    char *want = kbi_asprintf(
        "kbpkg: %s: not a PEM public key (expected a '-----BEGIN PUBLIC KEY-----' block)\n", junk);
    cr_expect_str_eq(r.err, want);
    kbt_run_free(&r);

    const char *exp[] = {"key", "export", "0123456789abcdef", NULL};
    r = run(&h, exp);
    cr_expect_eq(r.exit_code, 3, "%s", r.err);
    cr_expect_not_null(strstr(r.err, "no key 0123456789abcdef in "), "%s", r.err);
    kbt_run_free(&r);

    const char *revoke[] = {"key", "revoke", "not-an-id", NULL};
    r = run(&h, revoke);
    cr_expect_eq(r.exit_code, 2);
    cr_expect_str_eq(r.err, "kbpkg: invalid key id 'not-an-id' (expected 16 lowercase hex)\n");
    kbt_run_free(&r);

    const char *unknown[] = {"key", "rotate", NULL};
    r = run(&h, unknown);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(kbi_str_starts(r.err, "kbpkg: unknown key subcommand 'rotate'\nusage: kbpkg key "),
              "%s", r.err);
    kbt_run_free(&r);
    free(want);
    free(junk);
    free_home(&h);
}
