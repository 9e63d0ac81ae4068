/* kbpkg build / toolchains from the command line. */
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>

Test(cli_build, builds_cpu_target_and_prints_table)
{
    char *tmp = kbt_mkdtemp();
    char *src = kbt_data("builder/vadd");
    char *cache = kb_asprintf("%s/cache", tmp), *out = kb_asprintf("%s/out", tmp);
    const char *args[] = {"--cache", cache, "build", src, "--target", "cpu-x86_64_v2",
                          "--out",   out,   "-j",    "1", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "kbtest/vec-add 0.1.0: 1 built, 0 skipped, 0 failed"), "%s", r.out);
    cr_expect(strstr(r.out, "cpu-x86_64_v2-x86_64-linux"));
    kbt_run_free(&r);
    const char *json_args[] = {"--cache", cache,           "--json", "build", src,
                               "-t",      "cpu-x86_64_v2", "--out",  out,     NULL};
    r = kbt_kbpkg(NULL, json_args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"status\": \"built\""), "%s", r.out);
    kbt_run_free(&r);
    kbt_rmtree(tmp);
    free(tmp);
    free(src);
    free(cache);
    free(out);
}

Test(cli_build, undeclared_target_is_an_error)
{
    char *src = kbt_data("builder/vadd");
    const char *args[] = {"build", src, "--target", "cuda13-sm_90", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "kbpkg: target 'cuda13-sm_90' is not declared by kbtest/vec-add"), "%s",
              r.err);
    kbt_run_free(&r);
    free(src);
}

Test(cli_build, bad_jobs_is_a_usage_error)
{
    const char *args[] = {"build", ".", "-j", "zero", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "-j needs a number from 1 to 256, got 'zero'"), "%s", r.err);
    kbt_run_free(&r);
}

Test(cli_build, toolchains_lists_cc)
{
    const char *args[] = {"--json", "toolchains", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strstr(r.out, "\"name\": \"cc\""), "%s", r.out);
    cr_expect(strstr(r.out, "x86_64_v2") || strstr(r.out, "aarch64"));
    kbt_run_free(&r);
}
