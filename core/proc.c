/* Child processes: run a command, capture its output, bound it in time. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int kbi_which(char **out, const char *name)
{
    *out = NULL;
    if (strchr(name, '/')) {
        if (access(name, X_OK) != 0)
            return KB_ERR_NOT_FOUND;
        *out = kbi_strdup(name);
        return *out ? 0 : KB_ERR_NOMEM;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    char *copy = kbi_strdup(path);
    if (!copy)
        return KB_ERR_NOMEM;
    int rc = KB_ERR_NOT_FOUND;
    char *save = NULL;
    for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
        char *cand = kbi_path_join(*dir ? dir : ".", name);
        if (!cand) {
            rc = KB_ERR_NOMEM;
            break;
        }
        if (access(cand, X_OK) == 0 && !kbi_is_dir(cand)) {
            *out = cand;
            rc = 0;
            break;
        }
        free(cand);
    }
    free(copy);
    return rc;
}

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void child_exec(const char *const *argv, const char *cwd, int out_fd)
{
    /* New process group so a timeout can kill the whole tree (nvcc spawns children). */
    setpgid(0, 0);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0)
        dup2(devnull, 0);
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    if (cwd && chdir(cwd) != 0)
        _exit(126);
    execvp(argv[0], (char *const *)argv);
    _exit(127);
}

int kbi_proc_run(kb_ctx *ctx, kb_proc_result *res, const char *const *argv, const char *cwd,
                 unsigned timeout_ms)
{
    memset(res, 0, sizeof(*res));
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0)
        return kbi_error_set(ctx, KB_ERR_IO, "cannot create a pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pipefd[0]);
        close(pipefd[1]);
        return kbi_error_set(ctx, KB_ERR_IO, "cannot start %s: %s", argv[0], strerror(errno));
    }
    if (pid == 0)
        child_exec(argv, cwd, pipefd[1]);
    close(pipefd[1]);
    long deadline = timeout_ms ? now_ms() + (long)timeout_ms : 0;
    char chunk[4096];
    for (;;) {
        int wait_ms = -1;
        if (deadline) {
            long left = deadline - now_ms();
            if (left <= 0) {
                kill(-pid, SIGKILL);
                res->timed_out = 1;
                break;
            }
            wait_ms = (int)left;
        }
        struct pollfd pfd = {pipefd[0], POLLIN, 0};
        int n = poll(&pfd, 1, wait_ms);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            continue;
        ssize_t got = read(pipefd[0], chunk, sizeof(chunk));
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (kbi_buf_append(&res->output, chunk, (size_t)got)) {
            kill(-pid, SIGKILL);
            break;
        }
    }
    close(pipefd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && !res->timed_out) {
        res->exit_code = WEXITSTATUS(status);
    } else {
        res->exit_code = -1;
        res->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    }
    if (!res->output.data && kbi_buf_grow(&res->output, 0))
        return kbi_error_oom(ctx);
    if (res->exit_code == 127 && res->output.len == 0)
        return kbi_error_set(ctx, KB_ERR_NOT_FOUND, "cannot run %s: not found", argv[0]);
    return 0;
}

void kbi_proc_result_free(kb_proc_result *res)
{
    kbi_buf_free(&res->output);
}
