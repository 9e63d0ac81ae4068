/* Man pages from the command table: `kbpkg help --man`, rendered by groff, and the pages the
 * build generated into build/man for every command. */
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *groff_ascii(const char *page_path, char **warnings)
{
    char *script =
        kbi_asprintf("groff -man -Tascii -ww %s 2>%s.err | col -bx", page_path, page_path);
    const char *argv[] = {"sh", "-c", script, NULL};
    kb_proc_result res = {0};
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_proc_run(ctx, &res, argv, NULL, 30000), 0);
    cr_assert_eq(res.exit_code, 0, "%s", res.output.data);
    char *err_path = kbi_asprintf("%s.err", page_path);
    kb_buf err = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(ctx, err_path, &err), 0);
    *warnings = err.data ? kbi_buf_detach(&err) : kbi_strdup("");
    char *text = kbi_buf_detach(&res.output);
    kbi_proc_result_free(&res);
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
        kbt_skip_missing("groff is not installed");
    }
    char *dir = kbt_mkdtemp();
    char *page = kbi_asprintf("%s/kbpkg-doctor.1", dir);
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
        char *path = kbi_asprintf("%s/man/kbpkg-%.*s.1", build, (int)(end - name), name);
        cr_expect(kbi_path_exists(path), "missing %s (the man target did not run?)", path);
        free(path);
        pages++;
    }
    cr_expect_geq(pages, 10);
    char *index = kbi_asprintf("%s/man/kbpkg.1", build);
    kb_buf b = KB_BUF_INIT;
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_read_file(ctx, index, &b), 0);
    cr_expect(strstr(b.data, ".BR kbpkg\\-hub (1)") != NULL, "%s", b.data);
    kbi_buf_free(&b);
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

/* The global options, as `kbpkg help` lists them: "  -q, --quiet        print ..." under
 * "global options". Each option name (short forms too), one per line (owned). */
static char *global_options_in_help(const char *help)
{
    const char *p = strstr(help, "\nglobal options");
    cr_assert_not_null(p, "no global options in help: %s", help);
    p = strchr(p + 1, '\n') + 1;
    kb_buf names = KB_BUF_INIT;
    while (strncmp(p, "  -", 3) == 0) {
        const char *end = strstr(p + 2, "  "); /* the help column */
        cr_assert_not_null(end, "%s", p);
        /* "-q, --quiet" or "--registry R": the words that start with '-' */
        for (const char *w = p + 2; w < end;) {
            size_t n = strcspn(w, ", ");
            if (*w == '-')
                cr_assert(kbi_buf_append(&names, w, n) == 0 &&
                          kbi_buf_append(&names, "\n", 1) == 0);
            w += n;
            w += strspn(w, ", ");
        }
        p = strchr(p, '\n') + 1;
    }
    return kbi_buf_detach(&names);
}

/* word occurs in text between separators: "--set" is not found in "--settings". */
static bool has_word(const char *text, const char *word, const char *before, const char *after)
{
    size_t n = strlen(word);
    for (const char *p = strstr(text, word); p; p = strstr(p + 1, word))
        if (p > text && strchr(before, p[-1]) && p[n] && strchr(after, p[n]))
            return true;
    return false;
}

/* The line of script that starts (after indentation) with prefix. */
static char *script_line(const char *script, const char *prefix)
{
    for (const char *p = script; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
        const char *s = p + strspn(p, " ");
        if (strncmp(s, prefix, strlen(prefix)) == 0)
            return kbi_strndup(s, strcspn(s, "\n"));
    }
    cr_assert_fail("no line starting with %s in:\n%s", prefix, script);
    return NULL;
}

Test(man, every_global_option_is_in_help_the_man_page_and_both_completions)
{
    kbt_run help = kbt_kbpkg(NULL, (const char *const[]){"help", NULL});
    cr_assert_eq(help.exit_code, 0);
    char *names = global_options_in_help(help.out);
    /* the ones that went missing from the man page once, among the others */
    static const char *const known[] = {
        "--json",   "-q",      "--quiet",   "-v",         "--verbose", "--no-color", "--registry",
        "--device", "--cache", "--offline", "--insecure", "--set",     "--version",  "--help"};
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        char *line = kbi_asprintf("\n%s\n", known[i]);
        char *all = kbi_asprintf("\n%s", names);
        cr_expect(strstr(all, line) != NULL, "%s is not in kbpkg help:\n%s", known[i], help.out);
        free(all);
        free(line);
    }

    const char *build = getenv("KB_BUILD_DIR");
    cr_assert_not_null(build);
    char *index = kbi_asprintf("%s/man/kbpkg.1", build);
    kb_buf man = KB_BUF_INIT;
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_read_file(ctx, index, &man), 0, "%s (the man target did not run?)", index);
    const char *options = strstr(man.data, "\n.SH OPTIONS\n");
    cr_assert_not_null(options, "kbpkg.1 has no OPTIONS section:\n%s", man.data);
    char *section = kbi_strndup(options, (size_t)(strstr(options + 1, "\n.SH ") - options));

    kbt_run bash = kbt_kbpkg(NULL, (const char *const[]){"completion", "bash", NULL});
    kbt_run zsh = kbt_kbpkg(NULL, (const char *const[]){"completion", "zsh", NULL});
    char *bash_globals = script_line(bash.out, "local globals=");
    char *zsh_globals = script_line(zsh.out, "globals=(");

    size_t count = 0;
    for (char *name = names, *nl; (nl = strchr(name, '\n')); name = nl + 1, count++) {
        *nl = '\0';
        kb_buf roff = KB_BUF_INIT; /* "--no-color" is written \-\-no\-color in roff */
        for (const char *c = name; *c; c++)
            cr_assert_eq(*c == '-' ? kbi_buf_append(&roff, "\\-", 2) : kbi_buf_append(&roff, c, 1),
                         0);
        cr_expect(has_word(section, roff.data, " \"\n", " \",\n"), "%s not in kbpkg(1):\n%s", name,
                  section);
        cr_expect(has_word(bash_globals, name, "\" ", "\" "), "%s not in bash's %s", name,
                  bash_globals);
        cr_expect(has_word(zsh_globals, name, "( ", ") "), "%s not in zsh's %s", name, zsh_globals);
        kbi_buf_free(&roff);
    }
    cr_expect_geq(count, sizeof(known) / sizeof(known[0]));
    free(zsh_globals);
    free(bash_globals);
    kbt_run_free(&zsh);
    kbt_run_free(&bash);
    free(section);
    kbi_buf_free(&man);
    kb_ctx_free(ctx);
    free(index);
    free(names);
    kbt_run_free(&help);
}
