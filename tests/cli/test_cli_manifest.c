/* kbpkg manifest check: text lines, errors with positions, --json, exit codes. */
#include "kbtest.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A package folder holding the fixture manifest rel and the files it names. */
static char *package_from_fixture(const char *rel)
{
    char *src = kbt_data(rel);
    kb_buf text = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, src, &text), 0, "%s", src);
    char *dir = kbt_mkdtemp();
    char *yaml = kbi_path_join(dir, "kernel.yaml");
    char *header = kbi_path_join(dir, "include/rf_gemm.h");
    char *source = kbi_path_join(dir, "src/gemm.cu");
    kbt_write(yaml, text.data);
    kbt_write(header, "");
    kbt_write(source, "");
    kbi_buf_free(&text);
    free(src);
    free(yaml);
    free(header);
    free(source);
    return dir;
}

/* No system or user config file of the machine running the tests. */
static const char *const clean_env[] = {"KBPKG_SYSTEM_CONFIG=/nonexistent/kbpkg.yaml",
                                        "KBPKG_CONFIG_DIR=/nonexistent", NULL};

Test(cli_manifest, valid_manifests_print_ok_lines)
{
    char *full = kbt_data("manifests/good/full");
    char *minimal = kbt_data("manifests/good/minimal/kernel.yaml");
    const char *args[] = {"manifest", "check", full, minimal, NULL};
    kbt_run r = kbt_kbpkg(clean_env, args);
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    char *want = kbi_asprintf("ok  radeonflow/gemm 1.0.0 (%s)\nok  acme/axpy 0.1.0-rc.1+build.7 "
                              "(%s)\n",
                              full, minimal);
    cr_expect_str_eq(r.out, want);
    free(want);
    kbt_run_free(&r);
    free(full);
    free(minimal);
}

Test(cli_manifest, invalid_manifest_reports_position_and_goes_on)
{
    char *bad = package_from_fixture("manifests/bad/cuda_arch_bad.yaml");
    char *good = kbt_data("manifests/good/url");
    const char *args[] = {"manifest", "check", bad, good, NULL};
    kbt_run r = kbt_kbpkg(clean_env, args);
    cr_expect_eq(r.exit_code, 5);
    char *want_err =
        kbi_asprintf("kbpkg: %s/kernel.yaml:8:27: backends.cuda.archs[2]: 'sm_8x' is not a CUDA "
                     "arch (",
                     bad);
    cr_expect(kbi_str_starts(r.err, want_err), "stderr: %s", r.err);
    char *want_out = kbi_asprintf("ok  acme/fft.v2 2.3.4 (%s)\n", good);
    cr_expect_str_eq(r.out, want_out);
    free(want_err);
    free(want_out);
    kbt_run_free(&r);
    kbt_rmtree(bad);
    free(bad);
    free(good);
}

Test(cli_manifest, json_lists_each_result)
{
    char *good = kbt_data("manifests/good/full/kernel.yaml");
    char *dir = package_from_fixture("manifests/bad/missing_abi.yaml");
    char *bad = kbi_path_join(dir, "kernel.yaml");
    const char *args[] = {"--json", "manifest", "check", good, bad, NULL};
    kbt_run r = kbt_kbpkg(clean_env, args);
    cr_expect_eq(r.exit_code, 5);
    json_error_t jerr;
    json_t *arr = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(arr, "stdout is not JSON: %s\n%s", jerr.text, r.out);
    cr_assert(json_is_array(arr) && json_array_size(arr) == 2);
    json_t *ok = json_array_get(arr, 0), *ko = json_array_get(arr, 1);
    cr_expect_str_eq(json_string_value(json_object_get(ok, "path")), good);
    cr_expect(json_is_true(json_object_get(ok, "ok")));
    cr_expect_str_eq(json_string_value(json_object_get(ok, "name")), "radeonflow/gemm");
    cr_expect_str_eq(json_string_value(json_object_get(ok, "version")), "1.0.0");
    cr_expect(json_is_null(json_object_get(ok, "error")));
    cr_expect(json_is_false(json_object_get(ko, "ok")));
    cr_expect(json_is_null(json_object_get(ko, "name")));
    json_t *err = json_object_get(ko, "error");
    cr_expect_eq(json_integer_value(json_object_get(err, "line")), 1);
    cr_expect_eq(json_integer_value(json_object_get(err, "column")), 1);
    cr_expect(
        strstr(json_string_value(json_object_get(err, "message")), "missing required key 'abi'"));
    json_decref(arr);
    kbt_run_free(&r);
    kbt_rmtree(dir);
    free(dir);
    free(good);
    free(bad);
}

Test(cli_manifest, usage_errors_exit_2)
{
    const char *none[] = {"manifest", "check", NULL};
    kbt_run r = kbt_kbpkg(clean_env, none);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "manifest check needs at least one PATH"), "%s", r.err);
    kbt_run_free(&r);
    const char *unknown[] = {"manifest", "lint", "x", NULL};
    r = kbt_kbpkg(clean_env, unknown);
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "unknown manifest subcommand 'lint'"), "%s", r.err);
    kbt_run_free(&r);
}

Test(cli_manifest, missing_path_fails_with_its_name)
{
    const char *args[] = {"manifest", "check", "/nonexistent/pkg", NULL};
    kbt_run r = kbt_kbpkg(clean_env, args);
    cr_expect_eq(r.exit_code, 5);
    cr_expect(strstr(r.err, "/nonexistent/pkg"), "%s", r.err);
    kbt_run_free(&r);
}
