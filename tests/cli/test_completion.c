/* kbpkg completion: the generated bash script completes commands, subcommands, flags and
 * installed package names in a real bash; the zsh script is well-formed for zsh. */
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Source the generated script in bash, complete `words` with the cursor on the last one (a
 * trailing space: on a new, empty word) and return COMPREPLY sorted, one per line. */
static char *complete_bash(const char *words)
{
    const char *bin = getenv("KBPKG_BIN");
    cr_assert_not_null(bin, "KBPKG_BIN is not set");
    char *script = kb_asprintf("source <(\"%s\" completion bash) || exit 9\n"
                               "COMP_WORDS=(%s%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                               "_kbpkg; printf '%%s\\n' \"${COMPREPLY[@]}\" | sort",
                               bin, words, kb_str_ends(words, " ") ? "\"\"" : "");
    const char *argv[] = {"bash", "-c", script, NULL};
    kb_proc_result res = {0};
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_proc_run(ctx, &res, argv, NULL, 30000), 0);
    cr_assert_eq(res.exit_code, 0, "bash said: %s", res.output.data);
    char *out = kb_buf_detach(&res.output);
    kb_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(script);
    return out;
}

static void expect_completion(const char *words, const char *expected)
{
    char *got = complete_bash(words);
    cr_expect_str_eq(got, expected, "completing '%s'", words);
    free(got);
}

Test(completion, bash_completes_command_names)
{
    /* The task's example: with `install` in the table "ins" offers it next to inspect. */
    kbt_run help = kbt_kbpkg(NULL, (const char *const[]){"help", NULL});
    bool has_install = strstr(help.out, "  install ") != NULL;
    kbt_run_free(&help);
    expect_completion("kbpkg ins", has_install ? "inspect\ninstall\n" : "inspect\n");
    expect_completion("kbpkg doc", "doctor\n");
    expect_completion("kbpkg --registry /tmp/x doc", "doctor\n");
}

Test(completion, bash_completes_subcommands_and_flags)
{
    expect_completion("kbpkg hub r", "render\n");
    expect_completion("kbpkg config s", "set\n");
    expect_completion("kbpkg build --ta", "--target\n");
    expect_completion("kbpkg doctor --js", "--json\n");
    expect_completion("kbpkg --reg", "--registry\n");
    expect_completion("kbpkg completion ", "bash\nzsh\n");
    expect_completion("kbpkg help doc", "doctor\n");
}

Test(completion, bash_completes_installed_packages_and_tolerates_no_list)
{
    /* A stand-in kbpkg on PATH answers `list --json` the way the list command does. */
    char *dir = kbt_mkdtemp();
    char *fake = kb_asprintf("%s/kbpkg", dir);
    kbt_write(fake, "#!/bin/sh\n[ \"$1 $2\" = 'list --json' ] || exit 2\n"
                    "printf '{\"packages\": [{\"name\": \"radeonflow/gemm\", \"version\": "
                    "\"1.0.0\"},\\n {\"name\": \"kbpkg-community/rmsnorm\"}]}\\n'\n");
    cr_assert_eq(chmod(fake, 0755), 0);
    /* the functions are sourced once; only the helper is checked against the stand-in */
    const char *bin = getenv("KBPKG_BIN");
    char *script = kb_asprintf("source <(\"%s\" completion bash); export PATH=%s:$PATH; "
                               "_kbpkg_packages",
                               bin, dir);
    const char *argv[] = {"bash", "-c", script, NULL};
    kb_proc_result res = {0};
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_proc_run(ctx, &res, argv, NULL, 30000), 0);
    cr_expect_str_eq(res.output.data, "kbpkg-community/rmsnorm\nradeonflow/gemm\n");
    kb_proc_result_free(&res);
    /* Without a list command (or without kbpkg at all) the helper prints nothing. */
    kbt_write(fake, "#!/bin/sh\necho \"kbpkg: unknown command '$1'\" >&2\nexit 2\n");
    memset(&res, 0, sizeof(res));
    cr_assert_eq(kb_proc_run(ctx, &res, argv, NULL, 30000), 0);
    cr_expect_eq(res.exit_code, 0);
    cr_expect_str_eq(res.output.data ? res.output.data : "", "");
    kb_proc_result_free(&res);
    kb_ctx_free(ctx);
    free(script);
    kbt_rmtree(dir);
    free(dir);
    free(fake);
}

Test(completion, zsh_script_parses_and_lists_commands)
{
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"completion", "zsh", NULL});
    cr_assert_eq(r.exit_code, 0);
    cr_expect(strncmp(r.out, "#compdef kbpkg\n", 15) == 0);
    cr_expect(strstr(r.out, "'doctor:check toolchains, GPUs, registry, cache and trust; say "
                            "how to fix'") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "hub) cwords=( 'render' '--out')") != NULL, "%s", r.out);
    if (access("/usr/bin/zsh", X_OK) == 0) {
        char *dir = kbt_mkdtemp();
        char *path = kb_asprintf("%s/_kbpkg", dir);
        kbt_write(path, r.out);
        const char *argv[] = {"/usr/bin/zsh", "-n", path, NULL};
        kb_proc_result res = {0};
        kb_ctx *ctx = kbt_ctx();
        cr_assert_eq(kb_proc_run(ctx, &res, argv, NULL, 30000), 0);
        cr_expect_eq(res.exit_code, 0, "zsh -n: %s", res.output.data);
        kb_proc_result_free(&res);
        kb_ctx_free(ctx);
        kbt_rmtree(dir);
        free(dir);
        free(path);
    }
    kbt_run_free(&r);
}

Test(completion, unknown_shell_is_a_usage_error)
{
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"completion", "fish", NULL});
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "unknown shell 'fish': bash or zsh") != NULL, "%s", r.err);
    kbt_run_free(&r);
    r = kbt_kbpkg(NULL, (const char *const[]){"completion", NULL});
    cr_expect_eq(r.exit_code, 2);
    cr_expect(strstr(r.err, "which shell? bash or zsh") != NULL, "%s", r.err);
    kbt_run_free(&r);
}
