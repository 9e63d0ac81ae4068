/* Test helpers: temp folders, fixture paths and running the kbpkg binary. */
#define _GNU_SOURCE
#include "kbtest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

char *kbt_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char *tmpl = kbi_asprintf("%s/kbtest-XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(tmpl);
    cr_assert_not_null(mkdtemp(tmpl), "mkdtemp failed");
    return tmpl;
}

void kbt_rmtree(const char *path)
{
    if (path)
        kbi_rm_rf(NULL, path);
}

static char *env_path(const char *var, const char *rel)
{
    const char *base = getenv(var);
    cr_assert(base && *base, "%s is not set (run the tests through ctest)", var);
    return kbi_asprintf("%s/%s", base, rel);
}

char *kbt_data(const char *rel)
{
    return env_path("KB_TEST_DATA", rel);
}

char *kbt_source(const char *rel)
{
    return env_path("KB_SOURCE_DIR", rel);
}

void kbt_write(const char *path, const char *text)
{
    char *dir = kbi_strdup(path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        cr_assert_eq(kbi_mkdir_p(NULL, dir, 0755), 0, "mkdir %s", dir);
    }
    free(dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    fclose(f);
}

static char *slurp_fd(int fd)
{
    kb_buf b = KB_BUF_INIT;
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        kbi_buf_append(&b, chunk, (size_t)n);
    kbi_buf_grow(&b, 0);
    return kbi_buf_detach(&b);
}

/* argv for execv: the binary, then args; the caller frees the array (not its strings). */
static const char **kbpkg_argv(const char *bin, const char *const *args)
{
    size_t n = 0;
    while (args[n])
        n++;
    const char **argv = calloc(n + 2, sizeof(*argv));
    cr_assert_not_null(argv);
    argv[0] = bin;
    for (size_t i = 0; i < n; i++)
        argv[i + 1] = args[i];
    return argv;
}

static int exit_code_of(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

kbt_run kbt_kbpkg(const char *const *env, const char *const *args)
{
    return kbt_kbpkg_input(env, args, NULL);
}

kbt_run kbt_kbpkg_input(const char *const *env, const char *const *args, const char *input)
{
    const char *bin = getenv("KBPKG_BIN");
    cr_assert(bin && *bin, "KBPKG_BIN is not set (run the tests through ctest)");
    char out_tmpl[] = "/tmp/kbt-outXXXXXX", err_tmpl[] = "/tmp/kbt-errXXXXXX";
    int out_fd = mkstemp(out_tmpl), err_fd = mkstemp(err_tmpl);
    cr_assert(out_fd >= 0 && err_fd >= 0);
    unlink(out_tmpl);
    unlink(err_tmpl);
    const char **argv = kbpkg_argv(bin, args);
    int in[2] = {-1, -1};
    cr_assert(!input || pipe(in) == 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        int stdin_fd = input ? in[0] : open("/dev/null", O_RDONLY);
        if (input)
            close(in[1]);
        dup2(stdin_fd, 0);
        dup2(out_fd, 1);
        dup2(err_fd, 2);
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    free(argv);
    if (input) { /* small texts: the pipe buffer holds them, the child reads when it wants */
        close(in[0]);
        cr_assert_eq(write(in[1], input, strlen(input)), (ssize_t)strlen(input));
        close(in[1]);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    kbt_run r = {exit_code_of(status), NULL, NULL};
    lseek(out_fd, 0, SEEK_SET);
    lseek(err_fd, 0, SEEK_SET);
    r.out = slurp_fd(out_fd);
    r.err = slurp_fd(err_fd);
    close(out_fd);
    close(err_fd);
    return r;
}

/* Everything the master side reads until the child closes the terminal (60 s at most). */
static char *drain_pty(int master)
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
        kbi_buf_append(&out, chunk, (size_t)got);
    }
    kbi_buf_grow(&out, 0);
    return kbi_buf_detach(&out);
}

kbt_run kbt_kbpkg_pty(const char *const *env, const char *const *args, int cols,
                      const char *stdout_path)
{
    const char *bin = getenv("KBPKG_BIN");
    cr_assert(bin && *bin, "KBPKG_BIN is not set (run the tests through ctest)");
    const char **argv = kbpkg_argv(bin, args);
    struct winsize ws = {.ws_row = 30, .ws_col = (unsigned short)cols};
    int master = -1;
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    cr_assert_geq(pid, 0, "forkpty: %s", strerror(errno));
    if (pid == 0) {
        unsetenv("NO_COLOR");
        unsetenv("COLUMNS");
        setenv("TERM", "xterm", 1);
        for (size_t i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        if (stdout_path) {
            int fd = open(stdout_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || dup2(fd, 1) < 0)
                _exit(126);
        }
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    free(argv);
    kbt_run r = {0, drain_pty(master), NULL};
    close(master);
    int status = 0;
    waitpid(pid, &status, 0);
    r.exit_code = exit_code_of(status);
    return r;
}

void kbt_run_free(kbt_run *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
}

kb_ctx *kbt_ctx(void)
{
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    kb_ctx *ctx = NULL;
    cr_assert_eq(kb_ctx_new(&ctx, &o), 0);
    return ctx;
}

bool kbt_deps_required(void)
{
    const char *v = getenv("KBPKG_REQUIRE_DEPS");
    return v && strcmp(v, "1") == 0;
}
