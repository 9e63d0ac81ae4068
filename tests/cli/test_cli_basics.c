/* The kbpkg binary: version, help, unknown commands, exit codes. */
#include "kbtest.h"

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
