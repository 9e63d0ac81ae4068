/* Colors on stdout follow stdout: `kbpkg doctor > file` from a terminal writes no escape codes
 * into the file; with both streams on a terminal the colors show; NO_COLOR and --no-color win. */
#define _GNU_SOURCE
#include "kbtest.h"

#include <stdlib.h>
#include <string.h>

typedef struct pty_run {
    int exit_code;
    char *terminal; /* what reached the pseudo-terminal */
    char *file;     /* stdout, when it went to a file; NULL otherwise */
} pty_run;

static void pty_run_free(pty_run *r)
{
    free(r->terminal);
    free(r->file);
}

/* Run kbpkg with stderr (and stdout unless stdout_to_file) on a pseudo-terminal. */
static pty_run run(bool stdout_to_file, const char *extra_env, const char *const *args)
{
    char *dir = kbt_mkdtemp();
    char *out_path = kbi_asprintf("%s/stdout", dir);
    char *cache = kbi_asprintf("KBPKG_CACHE=%s/cache", dir);
    char *cfg = kbi_asprintf("KBPKG_CONFIG_DIR=%s/config", dir);
    char *reg = kbi_asprintf("KBPKG_REGISTRY=%s/hub", dir);
    const char *env[] = {cache, cfg, reg, "KBPKG_DEVICES=none", extra_env, NULL};
    kbt_run t = kbt_kbpkg_pty(env, args, 120, stdout_to_file ? out_path : NULL);
    pty_run r = {t.exit_code, t.out, NULL};
    if (stdout_to_file) {
        kb_buf b = KB_BUF_INIT;
        cr_assert_eq(kbi_read_file(NULL, out_path, &b), 0, "%s", out_path);
        kbi_buf_grow(&b, 0);
        r.file = kbi_buf_detach(&b);
    }
    kbt_rmtree(dir);
    free(dir);
    free(out_path);
    free(cache);
    free(cfg);
    free(reg);
    return r;
}

static const char *const doctor[] = {"doctor", NULL};
static const char *const targets[] = {"targets", "--device", "sm_86@cuda13.0", NULL};

Test(stdout_color, stdout_to_a_file_from_a_terminal_has_no_escape_codes)
{
    const char *const *cmds[] = {doctor, targets};
    const char *want[] = {"pass  toolchain", "FITS"};
    for (size_t i = 0; i < 2; i++) {
        pty_run r = run(true, NULL, cmds[i]);
        cr_expect_eq(r.exit_code, 0, "%s: %s / %s", cmds[i][0], r.file, r.terminal);
        cr_expect_not_null(strstr(r.file, want[i]), "%s: %s", cmds[i][0], r.file);
        cr_expect_null(strchr(r.file, '\033'), "%s wrote escape codes into a file: %s", cmds[i][0],
                       r.file);
        pty_run_free(&r);
    }
}

Test(stdout_color, stdout_on_a_terminal_is_colored)
{
    pty_run r = run(false, NULL, doctor);
    cr_expect_eq(r.exit_code, 0, "%s", r.terminal);
    cr_expect_not_null(strstr(r.terminal, "\033[32mpass\033[0m  toolchain"), "%s", r.terminal);
    cr_expect_not_null(strstr(r.terminal, "\033[33mwarn\033[0m  gpu"), "%s", r.terminal);
    pty_run_free(&r);
    r = run(false, NULL, targets);
    cr_expect_not_null(strstr(r.terminal, "\033[32myes \033[0m"), "%s", r.terminal);
    cr_expect_not_null(strstr(r.terminal, "\033[31mno  \033[0m"), "%s", r.terminal);
    pty_run_free(&r);
}

Test(stdout_color, no_color_and_the_flag_turn_it_off_on_a_terminal)
{
    const char *flagged[] = {"--no-color", "doctor", NULL};
    const char *const *cmds[] = {doctor, flagged, targets};
    const char *envs[] = {"NO_COLOR=1", NULL, "NO_COLOR=1"};
    for (size_t i = 0; i < 3; i++) {
        pty_run r = run(false, envs[i], cmds[i]);
        cr_expect_eq(r.exit_code, 0, "%s", r.terminal);
        cr_expect_not_null(strstr(r.terminal, i == 2 ? "FITS" : "pass  toolchain"), "%s",
                           r.terminal);
        cr_expect_null(strchr(r.terminal, '\033'), "escape codes: %s", r.terminal);
        pty_run_free(&r);
    }
}
