/* Runs one driver call in a forked child with a deadline, so a hung driver never blocks us. */
#define _GNU_SOURCE
#include "probe/probe_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Wire format on the pipe: any number of stage bytes, then RESULT_MARK and the result. */
#define RESULT_MARK '\xff'

struct kb_probe_child_io {
    int fd;
};

void kbi_probe_child_stage(kb_probe_child_io *io, char stage)
{
    if (io) /* NULL when the probe runs in this process (see kbi_probe_cuda) */
        (void)kbi_write_all(io->fd, &stage, 1);
}

static long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* The child never returns: _exit skips atexit handlers and leak checks that belong to the
 * parent. A driver's own threads die with it. dlopen after fork is not async-signal-safe: in
 * a multithreaded embedder the child may deadlock on a lock another thread held, which the
 * deadline turns into a note instead of a hang. */
static void run_child(int fd, kb_probe_child_fn fn, const void *arg, void *result,
                      size_t result_size)
{
    kb_probe_child_io io = {fd};
    fn(&io, result, arg);
    char mark = RESULT_MARK;
    (void)kbi_write_all(fd, &mark, 1);
    (void)kbi_write_all(fd, result, result_size);
    _exit(0);
}

/* Read what the child sends until EOF or the deadline; returns false on timeout. */
static bool read_until_eof(int fd, kb_buf *got, long deadline)
{
    char chunk[4096];
    for (;;) {
        long left = deadline - monotonic_ms();
        if (left <= 0)
            return false;
        struct pollfd p = {fd, POLLIN, 0};
        int n = poll(&p, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0)
            return false;
        ssize_t r = read(fd, chunk, sizeof(chunk));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return true;
        if (kbi_buf_append(got, chunk, (size_t)r))
            return true; /* out of memory: treat what we have as all there is */
    }
}

/* Split the bytes into the last stage marker and the result. */
static bool parse_wire(const kb_buf *got, char *stage, void *result, size_t result_size)
{
    for (size_t i = 0; i < got->len; i++) {
        if (got->data[i] == RESULT_MARK) {
            if (got->len - i - 1 != result_size)
                return false;
            memcpy(result, got->data + i + 1, result_size);
            return true;
        }
        *stage = got->data[i];
    }
    return false;
}

void kbi_probe_in_child(kb_probe_child_outcome *out, kb_probe_child_fn fn, const void *arg,
                        void *result, size_t result_size, unsigned timeout_ms)
{
    memset(out, 0, sizeof(*out));
    long start = monotonic_ms();
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        out->status = KB_PROBE_CHILD_NO_FORK;
        out->errno_out = errno;
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        out->status = KB_PROBE_CHILD_NO_FORK;
        out->errno_out = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        return;
    }
    if (pid == 0) {
        close(pipefd[0]);
        run_child(pipefd[1], fn, arg, result, result_size);
    }
    close(pipefd[1]);
    kb_buf got = KB_BUF_INIT;
    bool finished = read_until_eof(pipefd[0], &got, start + (long)timeout_ms);
    close(pipefd[0]);
    if (!finished)
        kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    out->elapsed_ms = monotonic_ms() - start;
    bool complete = parse_wire(&got, &out->stage, result, result_size);
    kbi_buf_free(&got);
    if (!finished)
        out->status = KB_PROBE_CHILD_TIMEOUT;
    else if (complete && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        out->status = KB_PROBE_CHILD_OK;
    else {
        out->status = KB_PROBE_CHILD_CRASHED;
        out->signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        out->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
}
