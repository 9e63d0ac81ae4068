/* kbpkg completion: the generated bash script completes commands, subcommands, flags and
 * installed package names in a real bash; the zsh script parses and, driven by a real zsh with
 * stand-ins for compsys's builtins, offers the same after the command word. */
#include "kbtest.h"

#include <jansson.h>
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
    char *script = kbi_asprintf("source <(\"%s\" completion bash) || exit 9\n"
                                "COMP_WORDS=(%s%s); COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n"
                                "_kbpkg; printf '%%s\\n' \"${COMPREPLY[@]}\" | sort",
                                bin, words, kbi_str_ends(words, " ") ? "\"\"" : "");
    const char *argv[] = {"bash", "-c", script, NULL};
    kb_proc_result res = {0};
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_proc_run(ctx, &res, argv, NULL, 30000), 0);
    cr_assert_eq(res.exit_code, 0, "bash said: %s", res.output.data);
    char *out = kbi_buf_detach(&res.output);
    kbi_proc_result_free(&res);
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

/* `word` is one of the lines of `lines`. */
static bool has_line(const char *lines, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = lines; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, word, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
            return true;
    return false;
}

/* The table's flags of a (sub)command are among what `kbpkg CMD -` completes to. */
static void expect_flags_offered(const char *cmd, const char *offered, json_t *entry)
{
    json_t *options = json_object_get(entry, "options");
    cr_assert(json_is_array(options), "%s: no option table", cmd);
    size_t i;
    json_t *o;
    json_array_foreach(options, i, o)
    {
        char *flag = kbi_asprintf("--%s", json_string_value(json_object_get(o, "name")));
        const char *shrt = json_string_value(json_object_get(o, "short"));
        cr_expect(has_line(offered, flag), "kbpkg %s -: %s is not offered: %s", cmd, flag, offered);
        cr_expect(!shrt || has_line(offered, shrt), "kbpkg %s -: %s is not offered", cmd, shrt);
        free(flag);
    }
}

/* Every command's flags, its subcommands' and the subcommand names come from the table (short
 * forms and the shared groups too), not from scraping its help text: a command or option the
 * table has and completion lacks fails here. */
Test(completion, bash_completes_flags_from_option_tables)
{
    expect_completion("kbpkg resolve --",
                      "--allow-unsigned\n--cache\n--device\n--explain\n--help\n--insecure\n"
                      "--json\n--no-build\n--no-color\n--offline\n--quiet\n--registry\n--set\n"
                      "--target\n--verbose\n--version\n");
    expect_completion("kbpkg install -t", "-t\n");
    expect_completion("kbpkg gc --k", "--keep-lock\n");
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"--json", "help", NULL});
    json_t *list = json_loads(r.out, 0, NULL);
    cr_assert_not_null(list, "%s", r.out);
    kbt_run_free(&r);
    char *commands = complete_bash("kbpkg ");
    size_t i, k;
    json_t *entry, *sub;
    json_array_foreach(json_object_get(list, "commands"), i, entry)
    {
        const char *cmd = json_string_value(json_object_get(entry, "name"));
        cr_expect(has_line(commands, cmd), "'kbpkg ' does not offer %s", cmd);
        r = kbt_kbpkg(NULL, (const char *const[]){"--json", "help", cmd, NULL});
        json_t *doc = json_loads(r.out, 0, NULL);
        cr_assert_not_null(doc, "%s", r.out);
        kbt_run_free(&r);
        char *words = kbi_asprintf("kbpkg %s -", cmd);
        char *offered = complete_bash(words);
        char *plain_words = kbi_asprintf("kbpkg %s ", cmd);
        char *plain = complete_bash(plain_words);
        expect_flags_offered(cmd, offered, doc);
        json_array_foreach(json_object_get(doc, "subcommands"), k, sub)
        {
            const char *name = json_string_value(json_object_get(sub, "name"));
            cr_expect(has_line(plain, name), "'kbpkg %s ' does not offer %s: %s", cmd, name, plain);
            char *sub_cmd = kbi_asprintf("%s %s", cmd, name);
            char *sub_words = kbi_asprintf("kbpkg %s -", sub_cmd);
            char *sub_offered = complete_bash(sub_words);
            expect_flags_offered(sub_cmd, sub_offered, sub);
            free(sub_offered);
            free(sub_words);
            free(sub_cmd);
        }
        free(plain);
        free(plain_words);
        free(offered);
        free(words);
        json_decref(doc);
    }
    free(commands);
    json_decref(list);
}

/* Once a subcommand is on the line only its flags are offered, and no subcommand names again;
 * a second word that names no subcommand (farm's DIR) keeps the command's words. */
Test(completion, bash_narrows_to_the_subcommand_on_the_line)
{
    char *got = complete_bash("kbpkg key generate --");
    cr_expect(has_line(got, "--name") && !has_line(got, "--reason"), "%s", got);
    free(got);
    got = complete_bash("kbpkg key revoke --");
    cr_expect(has_line(got, "--reason") && !has_line(got, "--name"), "%s", got);
    free(got);
    expect_completion("kbpkg config list ", "\n");
    got = complete_bash("kbpkg farm kernels --");
    cr_expect(has_line(got, "--jobs") && !has_line(got, "--pools"), "%s", got);
    free(got);
}

/* A fresh cache with kbtest/cpu-add really installed from a layout registry, and a PATH
 * whose kbpkg is the built one: what the scripts' `kbpkg list --json` reads. */
typedef struct installed_world {
    char *tmp;
    char *exports; /* shell lines exporting KBPKG_CACHE, PATH, ... for the completing shell */
} installed_world;

static installed_world install_one_package(void)
{
    installed_world w = {kbt_mkdtemp(), NULL};
    char *env_cache = kbi_asprintf("KBPKG_CACHE=%s/cache", w.tmp);
    char *env_config = kbi_asprintf("XDG_CONFIG_HOME=%s/config", w.tmp);
    char *env_registry = kbi_asprintf("KBPKG_REGISTRY=%s/hub", w.tmp);
    const char *env[] = {
        env_cache, env_config, env_registry, "KBPKG_DEVICES=none", "KBPKG_CPU=x86_64_v3", NULL};
    char *src = kbt_data("publish/cpu-add");
    char *publish_dir = kbi_asprintf("%s/cpu-add", w.tmp);
    char *cmd = kbi_asprintf("cp -r '%s' '%s' && mkdir '%s/bin' && ln -s '%s' '%s/bin/kbpkg'", src,
                             publish_dir, w.tmp, getenv("KBPKG_BIN"), w.tmp);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    kbt_run r = kbt_kbpkg(env, (const char *const[]){"-q", "publish", publish_dir, NULL});
    cr_assert_eq(r.exit_code, 0, "publish: %s", r.err);
    kbt_run_free(&r);
    r = kbt_kbpkg(env, (const char *const[]){"-q", "install", "kbtest/cpu-add", NULL});
    cr_assert_eq(r.exit_code, 0, "install: %s", r.err);
    kbt_run_free(&r);
    w.exports = kbi_asprintf("export %s %s %s KBPKG_DEVICES=none PATH='%s/bin':\"$PATH\"\n",
                             env_cache, env_config, env_registry, w.tmp);
    free(cmd);
    free(publish_dir);
    free(src);
    free(env_registry);
    free(env_config);
    free(env_cache);
    return w;
}

static void installed_world_free(installed_world *w)
{
    kbt_rmtree(w->tmp);
    free(w->tmp);
    free(w->exports);
}

/* Run script in shell (bash or zsh -f); its stdout. */
static char *run_shell(const char *shell, const char *script)
{
    const char *argv[] = {shell, strcmp(shell, "zsh") == 0 ? "-fc" : "-c", script, NULL};
    kb_proc_result res = {0};
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_proc_run(ctx, &res, argv, NULL, 30000), 0);
    cr_assert_eq(res.exit_code, 0, "%s said: %s", shell, res.output.data);
    char *out = res.output.data ? kbi_buf_detach(&res.output) : kbi_strdup("");
    kbi_proc_result_free(&res);
    kb_ctx_free(ctx);
    return out;
}

Test(completion, bash_completes_installed_packages_and_tolerates_no_list)
{
    /* The real `kbpkg list --json` of a cache holding one install. */
    installed_world w = install_one_package();
    char *script = kbi_asprintf("%ssource <(kbpkg completion bash) || exit 9\n"
                                "COMP_WORDS=(kbpkg uninstall \"\"); COMP_CWORD=2\n"
                                "_kbpkg; printf '%%s\\n' \"${COMPREPLY[@]}\" | sort\n",
                                w.exports);
    char *got = run_shell("bash", script);
    cr_expect_str_eq(got, "kbtest/cpu-add\n", "completing 'kbpkg uninstall '");
    free(got);
    free(script);
    /* Without a list command (or without kbpkg at all) the helper prints nothing. */
    char *fake = kbi_asprintf("%s/bin/kbpkg", w.tmp);
    const char *bin = getenv("KBPKG_BIN");
    script = kbi_asprintf("source <(\"%s\" completion bash); %s_kbpkg_packages", bin, w.exports);
    cr_assert_eq(unlink(fake), 0);
    kbt_write(fake, "#!/bin/sh\necho \"kbpkg: unknown command '$1'\" >&2\nexit 2\n");
    cr_assert_eq(chmod(fake, 0755), 0);
    got = run_shell("bash", script);
    cr_expect_str_eq(got, "");
    free(got);
    free(script);
    free(fake);
    installed_world_free(&w);
}

/* Drive the zsh script's _kbpkg outside the line editor: compadd, _describe and _files are
 * stand-ins that print what they are offered, and words/CURRENT/PREFIX are set as compsys sets
 * them. words is as for the bash helper (a trailing space: a new, empty word). Returns the
 * offered words sorted, one per line, with a leading newline to match "\nword\n". */
static char *complete_zsh(const char *exports, const char *words)
{
    char *script = kbi_asprintf(
        "%s"
        "compadd() { while (($#)) && [[ $1 != -- ]]; do shift; done; shift; print -rl -- \"$@\"; "
        "}\n"
        "_describe() { local -a d; d=(\"${(@P)2}\"); print -rl -- \"${d[@]%%%%:*}\"; }\n"
        "_files() { print -r -- '<files>'; }\n"
        "compdef() { : }\n"
        "source <(kbpkg completion zsh) || exit 9\n"
        "words=(%s%s); CURRENT=${#words}; PREFIX=${words[CURRENT]}\n"
        "{ print; _kbpkg | sort -u }\n",
        exports, words, kbi_str_ends(words, " ") ? "''" : "");
    char *out = run_shell("zsh", script);
    free(script);
    return out;
}

Test(completion, zsh_completes_after_the_command_word)
{
    if (system("command -v zsh >/dev/null 2>&1") != 0)
        kbt_skip_missing("zsh is not installed: the zsh script's completions were not checked");
    installed_world w = install_one_package();
    char *got = complete_zsh(w.exports, "kbpkg hub ");
    cr_expect(strstr(got, "\nrender\n") != NULL, "hub offers render: %s", got);
    cr_expect(strstr(got, "\ndoctor\n") == NULL, "hub offers no command names: %s", got);
    free(got);
    got = complete_zsh(w.exports, "kbpkg uninstall ");
    cr_expect(strstr(got, "\nkbtest/cpu-add\n") != NULL, "uninstall offers the install: %s", got);
    free(got);
    got = complete_zsh(w.exports, "kbpkg key ");
    cr_expect(strstr(got, "\ngenerate\n") != NULL && strstr(got, "\nrevoke\n") != NULL, "%s", got);
    free(got);
    got = complete_zsh(w.exports, "kbpkg build --ta");
    cr_expect(strstr(got, "\n--target\n") != NULL, "build --ta offers --target: %s", got);
    free(got);
    got = complete_zsh(w.exports, "kbpkg key generate --");
    cr_expect(strstr(got, "\n--name\n") != NULL && strstr(got, "\n--reason\n") == NULL,
              "key generate offers its own flags only: %s", got);
    free(got);
    got = complete_zsh(w.exports, "kbpkg farm merge ");
    cr_expect(strstr(got, "\nkbtest/cpu-add\n") != NULL && strstr(got, "\nplan\n") == NULL,
              "farm merge offers installed packages, not subcommands: %s", got);
    free(got);
    got = complete_zsh(w.exports, "kbpkg --registry /tmp/x doc");
    cr_expect(strstr(got, "\ndoctor\n") != NULL, "a global's value is not the command: %s", got);
    free(got);
    installed_world_free(&w);
}

Test(completion, zsh_script_parses_and_lists_commands)
{
    kbt_run r = kbt_kbpkg(NULL, (const char *const[]){"completion", "zsh", NULL});
    cr_assert_eq(r.exit_code, 0);
    cr_expect(strncmp(r.out, "#compdef kbpkg\n", 15) == 0);
    cr_expect(strstr(r.out, "'doctor:check toolchains, GPUs, registry, cache and trust; say "
                            "how to fix'") != NULL,
              "%s", r.out);
    cr_expect(strstr(r.out, "hub) cwords=( 'render')") != NULL, "%s", r.out);
    cr_expect(strstr(r.out, "'hub render') cwords=( '--out' '')") != NULL, "%s", r.out);
    if (access("/usr/bin/zsh", X_OK) == 0) {
        char *dir = kbt_mkdtemp();
        char *path = kbi_asprintf("%s/_kbpkg", dir);
        kbt_write(path, r.out);
        const char *argv[] = {"/usr/bin/zsh", "-n", path, NULL};
        kb_proc_result res = {0};
        kb_ctx *ctx = kbt_ctx();
        cr_assert_eq(kbi_proc_run(ctx, &res, argv, NULL, 30000), 0);
        cr_expect_eq(res.exit_code, 0, "zsh -n: %s", res.output.data);
        kbi_proc_result_free(&res);
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
