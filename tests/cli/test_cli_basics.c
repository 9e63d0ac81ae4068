/* The kbpkg binary: version, help, unknown commands, exit codes. */
#include "kbtest.h"

#include <jansson.h>
#include <string.h>

Test(cli, version_prints_library_version)
{
    const char *args[] = {"--version", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, KBPKG_VERSION_STRING), "got: %s", r.out);
    kbt_run_free(&r);
    const char *jargs[] = {"--version", "--json", NULL};
    r = kbt_kbpkg(NULL, jargs);
    cr_expect(strstr(r.out, "\"version\": \"" KBPKG_VERSION_STRING "\""), "got: %s", r.out);
    kbt_run_free(&r);
}

Test(cli, help_lists_every_command)
{
    const char *args[] = {"help", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "help"));
    kbt_run_free(&r);
}

Test(cli, unknown_command_is_a_usage_error_with_suggestion)
{
    const char *args[] = {"hlep", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "kbpkg: unknown command 'hlep'; did you mean 'help'?"), "got: %s",
              r.err);
    kbt_run_free(&r);
}

Test(cli, no_command_prints_usage_and_fails)
{
    const char *args[] = {NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.out, "usage: kbpkg"));
    kbt_run_free(&r);
}

Test(cli, bad_setting_flag_names_the_key)
{
    const char *args[] = {"--set", "bogus.key=1", "help", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "unknown configuration key 'bogus.key'"), "got: %s", r.err);
    kbt_run_free(&r);
}

Test(cli, no_command_with_json_prints_the_error_document)
{
    /* --json promises one JSON document on stdout, a bad command line included */
    const char *args[] = {"--json", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "not JSON (%s): %s", jerr.text, r.out);
    cr_expect(json_is_false(json_object_get(doc, "ok")), "%s", r.out);
    cr_expect_eq(json_integer_value(json_object_get(doc, "kbpkg_json")), 1, "%s", r.out);
    json_t *err = json_object_get(doc, "error");
    cr_expect_eq(json_integer_value(json_object_get(err, "code")), KB_ERR_INVALID, "%s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(err, "message")), "no command given");
    cr_expect(strstr(r.err, "kbpkg: no command given"), "got: %s", r.err);
    json_decref(doc);
    kbt_run_free(&r);
}
