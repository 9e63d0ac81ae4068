/* Man pages from the command table: `kbpkg help --man`, rendered by groff, and the pages the
 * build generated into build/man for every command. */
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *groff_ascii(const char *page_path, char **warnings)
{
    char *script =
        kb_asprintf("groff -man -Tascii -ww %s 2>%s.err | col -bx", page_path, page_path);
    const char *argv[] = {"sh", "-c", script, NULL};
    kb_proc_result res = {0};
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_proc_run(ctx, &res, argv, NULL, 30000), 0);
    cr_assert_eq(res.exit_code, 0, "%s", res.output.data);
    char *err_path = kb_asprintf("%s.err", page_path);
    kb_buf err = KB_BUF_INIT;
    cr_assert_eq(kb_read_file(ctx, err_path, &err), 0);
    *warnings = err.data ? kb_buf_detach(&err) : kb_strdup("");
    char *text = kb_buf_detach(&res.output);
    kb_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(err_path);
    free(script);
    return text;
}

Test(man, doctor_page_renders_with_groff)
{
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"help", "--man", "doctor", NULL});
    cr_assert_eq(r.exit_code, 0, "%s", r.err);
    cr_expect(strncmp(r.out, ".TH KBPKG-DOCTOR 1 ", 19) == 0, "%s", r.out);
    cr_expect(strstr(r.out, "kbpkg doctor [\\-\\-json]") != NULL, "dashes escaped: %s", r.out);
    if (access("/usr/bin/groff", X_OK) != 0) {
        kbt_run_free(&r);
        cr_skip("groff is not installed");
    }
    char *dir = kbt_mkdtemp();
    char *page = kb_asprintf("%s/kbpkg-doctor.1", dir);
    kbt_write(page, r.out);
    char *warnings = NULL;
    char *text = groff_ascii(page, &warnings);
    cr_expect_str_eq(warnings, "", "groff warned");
    /* groff justifies lines: check words that stay on one line, not exact spacing */
    cr_expect(strstr(text, "KBPKG-DOCTOR(1)") != NULL, "%s", text);
    cr_expect(strstr(text, "registry, cache and trust") != NULL, "%s", text);
    cr_expect(strstr(text, "       kbpkg doctor [--json]\n") != NULL, "%s", text);
    cr_expect(strstr(text, "exit 1 when a check failed; warnings alone exit 0") != NULL, "%s",
              text);
    free(text);
    free(warnings);
    free(page);
    kbt_rmtree(dir);
    free(dir);
    kbt_run_free(&r);
}

Test(man, build_generated_a_page_per_command)
{
    const char *build = getenv("KB_BUILD_DIR");
    cr_assert_not_null(build);
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"--json", "help", NULL});
    cr_assert_eq(r.exit_code, 0);
    size_t pages = 0;
    for (const char *p = strstr(r.out, "\"name\": \""); p; p = strstr(p + 1, "\"name\": \"")) {
        const char *name = p + 9, *end = strchr(name, '"');
        char *path = kb_asprintf("%s/man/kbpkg-%.*s.1", build, (int)(end - name), name);
        cr_expect(kb_path_exists(path), "missing %s (the man target did not run?)", path);
        free(path);
        pages++;
    }
    cr_expect_geq(pages, 10);
    char *index = kb_asprintf("%s/man/kbpkg.1", build);
    kb_buf b = KB_BUF_INIT;
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_read_file(ctx, index, &b), 0);
    cr_expect(strstr(b.data, ".BR kbpkg\\-hub (1)") != NULL, "%s", b.data);
    kb_buf_free(&b);
    kb_ctx_free(ctx);
    free(index);
    kbt_run_free(&r);
}

Test(man, unknown_command_is_a_usage_error)
{
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"help", "--man", "instal", NULL});
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "unknown command 'instal'") != NULL, "%s", r.err);
    cr_expect_str_eq(r.out, "");
    kbt_run_free(&r);
}
