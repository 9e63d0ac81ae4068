/* Colors on stdout follow stdout: `kbpkg doctor > file` from a terminal writes no escape codes
 * into the file; with both streams on a terminal the colors show; NO_COLOR and --no-color win. */
#define _GNU_SOURCE
#include "kbtest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Everything the master side reads until the child closes the terminal. */
static char *drain(int master)
{
    kb_buf out = KB_BUF_INIT;
    time_t deadline = time(NULL) + 60;
    for (;;) {
        struct pollfd p = {master, POLLIN, 0};
        int ready = poll(&p, 1, 1000);
        cr_assert_lt(time(NULL), deadline, "kbpkg did not finish: %s", out.data ? out.data : "");
        if (ready <= 0)
            continue;
        char chunk[4096];
        ssize_t got = read(master, chunk, sizeof(chunk));
        if (got <= 0) /* EIO once the child closed the terminal */
            break;
        kb_buf_append(&out, chunk, (size_t)got);
    }
    kb_buf_grow(&out, 0);
    return kb_buf_detach(&out);
}

/* Run kbpkg with stderr (and stdout unless stdout_to_file) on a pseudo-terminal. */
static pty_run run(bool stdout_to_file, const char *extra_env, const char *const *args)
{
    char *dir = kbt_mkdtemp();
    char *out_path = kb_asprintf("%s/stdout", dir);
    char *cache = kb_asprintf("KBPKG_CACHE=%s/cache", dir);
    char *cfg = kb_asprintf("KBPKG_CONFIG_DIR=%s/config", dir);
    char *reg = kb_asprintf("KBPKG_REGISTRY=%s/hub", dir);
    const char *bin = getenv("KBPKG_BIN");
    cr_assert_not_null(bin);
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = calloc(n + 2, sizeof(*argv));
    argv[0] = bin;
    memcpy(argv + 1, args, n * sizeof(*argv));
    struct winsize ws = {.ws_row = 30, .ws_col = 120};
    int master = -1;
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    cr_assert_geq(pid, 0, "forkpty: %s", strerror(errno));
    if (pid == 0) {
        unsetenv("NO_COLOR");
        setenv("TERM", "xterm", 1);
        putenv(cache);
        putenv(cfg);
        putenv(reg);
        putenv("KBPKG_DEVICES=none");
        if (extra_env)
            putenv((char *)extra_env);
        if (stdout_to_file) {
            int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || dup2(fd, 1) < 0)
                _exit(126);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    pty_run r = {0};
    r.terminal = drain(master);
    close(master);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (stdout_to_file) {
        kb_buf b = KB_BUF_INIT;
        cr_assert_eq(kb_read_file(NULL, out_path, &b), 0, "%s", out_path);
        kb_buf_grow(&b, 0);
        r.file = kb_buf_detach(&b);
    }
    kbt_rmtree(dir);
    free(argv);
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
