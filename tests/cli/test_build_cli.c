/* kbpkg build / toolchains from the command line. */
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>

Test(cli_build, builds_cpu_target_and_prints_table)
{
    char *tmp = kbt_mkdtemp();
    char *src = kbt_data("builder/vadd");
    char *cache = kbi_asprintf("%s/cache", tmp), *out = kbi_asprintf("%s/out", tmp);
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

Test(cli_build, new_then_build_then_test_on_cpu)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/pkg", tmp), *cache = kbi_asprintf("%s/cache", tmp);
    const char *new_args[] = {"new", "acme/fast-add", dir, NULL};
    kbt_run r = kbt_kbpkg(NULL, new_args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    const char *again[] = {"new", "acme/fast-add", dir, NULL};
    r = kbt_kbpkg(NULL, again);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "already holds a kernel.yaml"), "%s", r.err);
    kbt_run_free(&r);
    const char *build_args[] = {"--cache", cache, "build", dir, "--target", "cpu", NULL};
    r = kbt_kbpkg(NULL, build_args);
    cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "cpu-x86_64_v2-x86_64-linux"), "%s", r.out);
    kbt_run_free(&r);
    const char *test_args[] = {"--cache", cache, "test", dir, NULL};
    r = kbt_kbpkg(NULL, test_args);
    cr_expect_eq(r.exit_code, 0, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "0 failed"), "%s", r.out);
    cr_expect(strstr(r.out, "cpu-x86_64_v2-x86_64-linux         passed"), "%s", r.out);
    kbt_run_free(&r);
    kbt_rmtree(tmp);
    free(tmp);
    free(dir);
    free(cache);
}

Test(cli_build, new_rejects_bad_names)
{
    const char *args[] = {"new", "Acme/x", "/tmp/kbpkg-should-not-exist", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(strstr(r.err, "bad package name 'Acme/x': 'A' is not allowed"), "%s", r.err);
    kbt_run_free(&r);
}

Test(cli_build, failing_test_reports_output_tail)
{
    char *tmp = kbt_mkdtemp();
    char *dir = kbi_asprintf("%s/pkg", tmp), *cache = kbi_asprintf("%s/cache", tmp);
    const char *new_args[] = {"new", "acme/bad", dir, NULL};
    kbt_run r = kbt_kbpkg(NULL, new_args);
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    kbt_run_free(&r);
    char *src = kbi_asprintf("%s/src/bad_cpu.c", dir);
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, src, &b), 0);
    char *p = strstr(b.data, "out[i] = a[i] + b[i];");
    cr_assert_not_null(p);
    memcpy(p, "out[i] = a[i] - b[i];", strlen("out[i] = a[i] - b[i];"));
    kbt_write(src, b.data);
    const char *test_args[] = {"--cache", cache, "test", dir, "--target", "cpu-x86_64_v2", NULL};
    r = kbt_kbpkg(NULL, test_args);
    cr_expect_eq(r.exit_code, 1, "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "the test exited 1"), "%s", r.out);
    cr_expect(strstr(r.out, "mismatch at"), "%s", r.out);
    kbt_run_free(&r);
    kbi_buf_free(&b);
    free(src);
    kbt_rmtree(tmp);
    free(tmp);
    free(dir);
    free(cache);
}
