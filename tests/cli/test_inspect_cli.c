/* kbpkg inspect, run as a user would: text and --json output, usage and input errors. */
#include "kbtest.h"

#include "archive/archive.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* A small artifact whose lib/ holds a real shared library built with cc. */
static char *make_artifact(const char *dir)
{
    char *cc = NULL;
    if (kbi_which(&cc, "cc") != 0)
        return NULL;
    char *src = kbi_path_join(dir, "a.c"), *so = kbi_path_join(dir, "liba.so");
    char *json = kbi_path_join(dir, "kbpkg.json"), *art = kbi_path_join(dir, "a.tar.zst");
    kbt_write(src, "int kb_entry(void) { return 1; }\n");
    kbt_write(json, "{}\n");
    const char *argv[] = {cc, "-shared", "-fPIC", "-o", so, src, NULL};
    kb_ctx *ctx = kbt_ctx();
    kb_proc_result res = {0};
    cr_assert_eq(kbi_proc_run(ctx, &res, argv, dir, 120000), 0);
    cr_assert_eq(res.exit_code, 0, "%s", res.output.data);
    kb_archive_member members[] = {{"lib/liba.so", so}, {"kbpkg.json", json}};
    kb_archive_result r;
    cr_assert_eq(kbi_archive_write_members(&r, ctx, art, members, 2, 0), 0);
    kbi_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(cc), free(src), free(so), free(json);
    return art;
}

Test(inspect_cli, artifact_as_json)
{
    char *dir = kbt_mkdtemp();
    char *art = make_artifact(dir);
    if (!art)
        kbt_skip_missing("no C compiler (cc) in PATH");
    kbt_run r = kbt_kbpkg(NULL, (const char *[]){"inspect", art, "--json", NULL});
    cr_assert_eq(r.exit_code, 0, "stderr: %s", r.err);
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    cr_assert_not_null(doc, "not JSON: %s", r.out);
    cr_expect_str_eq(json_string_value(json_object_get(doc, "kind")), "archive");
    json_t *members = json_object_get(doc, "members");
    cr_expect_eq(json_array_size(members), 3);
    json_t *lib = json_array_get(json_object_get(doc, "libraries"), 0);
    cr_assert_not_null(lib);
    cr_expect_str_eq(json_string_value(json_object_get(lib, "name")), "lib/liba.so");
    json_t *exports = json_object_get(lib, "exports");
    cr_expect_eq(json_array_size(exports), 1);
    cr_expect_str_eq(json_string_value(json_array_get(exports, 0)), "kb_entry");
    cr_expect(json_is_array(json_object_get(lib, "gpu_code")));
    json_decref(doc);
    kbt_run_free(&r);
    kbt_rmtree(dir);
    free(dir), free(art);
}

Test(inspect_cli, text_output_and_errors)
{
    char *dir = kbt_mkdtemp();
    char *art = make_artifact(dir);
    if (!art)
        kbt_skip_missing("no C compiler (cc) in PATH");
    kbt_run r = kbt_kbpkg(NULL, (const char *[]){"inspect", art, NULL});
    cr_expect_eq(r.exit_code, 0, "stderr: %s", r.err);
    cr_expect(strstr(r.out, "(artifact, 3 members)"), "%s", r.out);
    cr_expect(strstr(r.out, "  exports:    kb_entry\n"), "%s", r.out);
    cr_expect(strstr(r.out, "  gpu code:   (none)\n"), "%s", r.out);
    kbt_run_free(&r);
    r = kbt_kbpkg(NULL, (const char *[]){"inspect", NULL});
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "kbpkg: missing FILE"), "%s", r.err);
    kbt_run_free(&r);
    char *text = kbi_path_join(dir, "notes.txt");
    kbt_write(text, "hello\n");
    r = kbt_kbpkg(NULL, (const char *[]){"inspect", text, NULL});
    cr_expect_eq(r.exit_code, 1);
    cr_expect(strstr(r.err, "notes.txt is neither an ELF file nor a .tar.zst artifact"), "%s",
              r.err);
    kbt_run_free(&r);
    kbt_rmtree(dir);
    free(dir), free(art), free(text);
}
