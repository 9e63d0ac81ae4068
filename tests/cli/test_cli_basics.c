/* The kbpkg binary: version, help, unknown commands, exit codes. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
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

/* ---- typos in subcommands and options: the closest valid one, through the usage error ---- */

static void expect_usage_error(const char *const *args, const char *first_line)
{
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2, "%s", r.err);
    char *want = kbi_asprintf("kbpkg: %s\nusage: kbpkg %s ", first_line, args[0]);
    /* the message, then the usage line: nothing of getopt's own "unrecognized option" */
    cr_expect(kbi_str_starts(r.err, want), "want '%s', got: %s", want, r.err);
    cr_expect_str_eq(r.out, "");
    free(want);
    kbt_run_free(&r);
}

Test(cli, subcommand_typos_suggest_the_closest)
{
    expect_usage_error((const char *const[]){"config", "lst", NULL},
                       "unknown config subcommand 'lst'; did you mean 'list'?");
    expect_usage_error((const char *const[]){"key", "lst", NULL},
                       "unknown key subcommand 'lst'; did you mean 'list'?");
    expect_usage_error((const char *const[]){"manifest", "chek", "x", NULL},
                       "unknown manifest subcommand 'chek'; did you mean 'check'?");
    /* nothing close: no guess */
    expect_usage_error((const char *const[]){"key", "rotate", NULL},
                       "unknown key subcommand 'rotate'");
}

Test(cli, unknown_long_option_is_named_with_the_closest)
{
    expect_usage_error((const char *const[]){"install", "--allow-unsgined", "x", NULL},
                       "unknown option '--allow-unsgined'; did you mean --allow-unsigned?");
    /* after the package (getopt permutes) and with a value attached */
    expect_usage_error((const char *const[]){"uninstall", "x", "--tagret=cpu", NULL},
                       "unknown option '--tagret'; did you mean --target?");
    expect_usage_error((const char *const[]){"fetch", "--sorce", "x", NULL},
                       "unknown option '--sorce'; did you mean --source?");
    expect_usage_error((const char *const[]){"resolve", "--frobnicate", "x", NULL},
                       "unknown option '--frobnicate'");
    expect_usage_error((const char *const[]){"install", "-x", "y", NULL}, "unknown option '-x'");
    expect_usage_error((const char *const[]){"install", "x", "--target", NULL},
                       "option '--target' needs a value");
    expect_usage_error((const char *const[]){"install", "--no-build=1", "x", NULL},
                       "option '--no-build' takes no value");
}

/* Commands with an option table: the parser, help, man page and --json help come from the same
 * rows, so an option the parser takes is never missing from the help (resolve's --target and
 * --no-build were, when help was a hand-written string). */
Test(cli, option_table_drives_parser_help_and_man_page)
{
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"help", "resolve", NULL});
    cr_expect_eq(r.exit_code, 0);
    cr_expect(strstr(r.out, "\n  --target T, -t T     "), "got: %s", r.out);
    cr_expect(strstr(r.out, "\n  --no-build           "), "got: %s", r.out);
    cr_expect(strstr(r.out, "\n  --allow-unsigned     "), "got: %s", r.out);
    kbt_run_free(&r);
    r = kbt_kbpkg(NULL, (const char *const[]){"help", "--man", "resolve", NULL});
    cr_expect(strstr(r.out, "\\-\\-no\\-build"), "got: %s", r.out);
    kbt_run_free(&r);
    r = kbt_kbpkg(NULL, (const char *const[]){"--json", "help", "gc", NULL});
    json_t *doc = json_loads(r.out, 0, NULL);
    const char *help = json_string_value(json_object_get(doc, "help"));
    cr_assert_not_null(help, "got: %s", r.out);
    cr_expect(kbi_str_starts(help, "  --keep-lock FILE     "), "got: %s", help);
    json_decref(doc);
    kbt_run_free(&r);
    /* gc parses through the table too: typos get the closest, operands are refused */
    expect_usage_error((const char *const[]){"gc", "--kep-lock", "x", NULL},
                       "unknown option '--kep-lock'; did you mean --keep-lock?");
    expect_usage_error((const char *const[]){"gc", "stray", NULL}, "unexpected argument 'stray'");
    expect_usage_error((const char *const[]){"gc", "--keep-lock", NULL},
                       "option '--keep-lock' needs a value");
    expect_usage_error((const char *const[]){"sync", "stray", NULL}, "unexpected argument 'stray'");
    expect_usage_error((const char *const[]){"test", "--tagret", "cpu", NULL},
                       "unknown option '--tagret'; did you mean --target?");
    expect_usage_error((const char *const[]){"bench", "--quik", NULL},
                       "unknown option '--quik'; did you mean --quick?");
    expect_usage_error((const char *const[]){"lock", "--fiel", "x", "org/a", NULL},
                       "unknown option '--fiel'; did you mean --file?");
}

Test(cli, unknown_option_with_json_is_the_error_document)
{
    const char *args[] = {"--json", "install", "--allow-unsgined", "x", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    json_t *doc = json_loads(r.out, 0, NULL);
    cr_assert_not_null(doc, "not JSON: %s", r.out);
    json_t *err = json_object_get(doc, "error");
    cr_expect_str_eq(json_string_value(json_object_get(err, "message")),
                     "unknown option '--allow-unsgined'; did you mean --allow-unsigned?");
    cr_expect(kbi_str_starts(json_string_value(json_object_get(err, "usage")), "kbpkg install "),
              "%s", r.out);
    json_decref(doc);
    kbt_run_free(&r);
}
