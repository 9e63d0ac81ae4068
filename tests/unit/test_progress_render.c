/* The CLI's progress renderer (cli/progress.c) fed kb_progress reports on a fake clock and a
 * fake terminal width: exact lines for the rate, ETA, redraws, summaries, plain and quiet. */
#define _GNU_SOURCE
#include "kbtest.h"
#include "progress.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MiB (1024.0 * 1024.0)

typedef struct screen {
    double t; /* the fake clock */
    char *buf;
    size_t len;
    size_t seen; /* what take() already returned */
    FILE *f;
    cli_progress *p;
} screen;

static double fake_clock(void *payload)
{
    return ((screen *)payload)->t;
}

static void open_screen(screen *s, cli_progress_mode mode, int width)
{
    memset(s, 0, sizeof(*s));
    s->f = open_memstream(&s->buf, &s->len);
    cr_assert_not_null(s->f);
    cli_progress_opts o = {mode, s->f, false, width, 0, fake_clock, s};
    s->p = cli_progress_new(&o);
    cr_assert_not_null(s->p);
}

/* What was written since the last take (owned by the screen until the next call). */
static char *take(screen *s)
{
    static char *last;
    fflush(s->f);
    free(last);
    last = strndup(s->buf + s->seen, s->len - s->seen);
    s->seen = s->len;
    return last;
}

static void close_screen(screen *s)
{
    cli_progress_free(s->p);
    s->p = NULL;
    fclose(s->f);
    free(s->buf);
}

static void report(screen *s, double t, uint64_t job, const char *task, const char *label,
                   uint64_t done, uint64_t total, int finished, int status)
{
    s->t = t;
    kb_progress p = {task, label, done, total, finished, job, label, "bytes", status};
    cr_assert_eq(cli_progress_update(s->p, &p), 0);
}

static void report_count(screen *s, double t, uint64_t job, const char *label, uint64_t done,
                         uint64_t total)
{
    s->t = t;
    kb_progress p = {"build", label, done, total, done == total, job, label, "targets", 0};
    cli_progress_update(s->p, &p);
}

#define GEMM "radeonflow/gemm sm_90a"
/* a 30-cell bar half full */
#define BAR_HALF "[==============>             ]"

Test(progress_render, live_line_shows_rate_and_eta)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 100);
    report(&s, 0.0, 1, "download", GEMM, 0, (uint64_t)(4 * MiB), 0, 0);
    cr_expect_str_eq(take(&s), "fetching " GEMM " [>                           ] 0.0/4.0 MiB"
                               "\033[K\n");
    report(&s, 0.5, 1, "download", GEMM, (uint64_t)(1 * MiB), (uint64_t)(4 * MiB), 0, 0);
    /* 1 MiB in 0.5 s: 2 MiB/s, 3 MiB to go: 1.5 s, shown rounded up */
    cr_expect_str_eq(take(&s), "\r\033[1Afetching " GEMM " [=======>                    ] "
                               "1.0/4.0 MiB 2.0 MiB/s ETA 0:02\033[K\n");
    report(&s, 1.0, 1, "download", GEMM, (uint64_t)(2 * MiB), (uint64_t)(4 * MiB), 0, 0);
    /* 2 MiB in 1 s since the start: 2 MiB/s, 2 MiB to go */
    cr_expect_str_eq(take(&s), "\r\033[1Afetching " GEMM " " BAR_HALF " 2.0/4.0 MiB 2.0 MiB/s "
                               "ETA 0:01\033[K\n");
    close_screen(&s);
}

Test(progress_render, rate_is_a_moving_average)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 120);
    uint64_t total = (uint64_t)(100 * MiB);
    report(&s, 0.0, 1, "download", "x", 0, total, 0, 0);
    /* 1 MiB/s for 8 s, then 9 MiB/s: after 4 s more the window holds only the fast part */
    for (int i = 1; i <= 8; i++)
        report(&s, i, 1, "download", "x", (uint64_t)(i * MiB), total, 0, 0);
    for (int i = 1; i <= 4; i++)
        report(&s, 8 + i, 1, "download", "x", (uint64_t)((8 + 9 * i) * MiB), total, 0, 0);
    char *out = take(&s);
    char *last = strrchr(out, '\r');
    cr_assert_not_null(last);
    /* 44 MiB done, 56 MiB left at 9 MiB/s: 6.2 s */
    cr_expect(strstr(last, " 44.0/100.0 MiB 9.0 MiB/s ETA 0:07\033[K\n"), "%s", last);
    close_screen(&s);
}

Test(progress_render, redraws_at_most_ten_times_a_second)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 100);
    report(&s, 0.0, 1, "download", GEMM, 0, 1000, 0, 0);
    take(&s);
    report(&s, 0.05, 1, "download", GEMM, 100, 1000, 0, 0);
    cr_expect_str_eq(take(&s), "", "a report 50 ms after the last draw waits");
    report(&s, 0.1, 1, "download", GEMM, 200, 1000, 0, 0);
    cr_expect_neq(strlen(take(&s)), 0, "100 ms after the last draw: drawn");
    report(&s, 0.2, 1, "download", GEMM, 990, 1000, 1, 0);
    cr_expect_str_eq(take(&s), "\r\033[1Afetched " GEMM " 990 B in 0.2 s, 4.8 KiB/s\033[K\n\033[J",
                     "a finished job is shown at once");
    close_screen(&s);
}

Test(progress_render, parallel_jobs_get_a_line_each_and_collapse_into_summaries)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 80);
    report(&s, 0.0, 1, "build", "kbtest/add cpu-x86_64_v2-x86_64-linux", 0, 0, 0, 0);
    take(&s);
    report(&s, 0.0, 2, "build", "kbtest/add cpu-x86_64_v3-x86_64-linux", 0, 0, 0, 0);
    cr_expect_str_eq(take(&s), "\r\033[1A"
                               "building kbtest/add cpu-x86_64_v2-x86_64-linux 0.0 s\033[K\n"
                               "building kbtest/add cpu-x86_64_v3-x86_64-linux 0.0 s\033[K\n");
    report(&s, 2.5, 2, "build", "kbtest/add cpu-x86_64_v3-x86_64-linux", 0, 0, 0, 0);
    cr_expect_str_eq(take(&s), "\r\033[2A"
                               "building kbtest/add cpu-x86_64_v2-x86_64-linux 2.5 s\033[K\n"
                               "building kbtest/add cpu-x86_64_v3-x86_64-linux 2.5 s\033[K\n");
    report(&s, 3.0, 1, "build", "kbtest/add cpu-x86_64_v2-x86_64-linux", 2662, 2662, 1, 0);
    cr_expect_str_eq(take(&s),
                     "\r\033[2A"
                     "built kbtest/add cpu-x86_64_v2-x86_64-linux 2.6 KiB in 3.0 s\033[K\n"
                     "building kbtest/add cpu-x86_64_v3-x86_64-linux 3.0 s\033[K\n"
                     "\033[J");
    report(&s, 4.0, 2, "build", "kbtest/add cpu-x86_64_v3-x86_64-linux", 0, 0, 1, KB_ERR_BUILD);
    cr_expect_str_eq(take(&s), "\r\033[1A"
                               "failed to build kbtest/add cpu-x86_64_v3-x86_64-linux after 4.0 s: "
                               "build failed\033[K\n"
                               "\033[J");
    /* nothing live: a later line is a plain one */
    cli_progress_print(s.p, stderr, "kbpkg: done");
    cr_expect_str_eq(take(&s), "kbpkg: done\n");
    close_screen(&s);
}

Test(progress_render, finished_download_summary)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 100);
    uint64_t size = 3271557; /* 3.1 MiB; 7.8 MiB/s over 0.4 s */
    report(&s, 10.0, 7, "download", GEMM, 0, size, 0, 0);
    take(&s);
    report(&s, 10.4, 7, "download", GEMM, size, size, 1, 0);
    cr_expect_str_eq(take(&s),
                     "\r\033[1Afetched " GEMM " 3.1 MiB in 0.4 s, 7.8 MiB/s\033[K\n\033[J");
    close_screen(&s);
}

Test(progress_render, counts_and_elapsed_time)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 100);
    report_count(&s, 0.0, 1, "kbtest/add", 0, 4);
    cr_expect_str_eq(take(&s), "building kbtest/add [>                           ] 0/4 targets"
                               "\033[K\n");
    report_count(&s, 3.0, 1, "kbtest/add", 1, 4);
    /* 3 s a target, 3 to go */
    cr_expect_str_eq(take(&s), "\r\033[1Abuilding kbtest/add [=======>                    ] "
                               "1/4 targets ETA 0:09\033[K\n");
    report_count(&s, 9.0, 1, "kbtest/add", 4, 4);
    cr_expect_str_eq(take(&s), "\r\033[1A\033[J", "a count ends without a summary line");
    close_screen(&s);
}

Test(progress_render, narrow_terminal_shortens_the_label_not_the_numbers)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 60);
    const char *label = "kbpkg-community/activation cuda13-sm_90a-x86_64-linux";
    report(&s, 0.0, 1, "download", label, 0, 2048, 0, 0);
    report(&s, 1.0, 1, "download", label, 1024, 2048, 0, 0);
    char *out = take(&s);
    char *line = strstr(out, "\r\033[1A");
    cr_assert_not_null(line);
    line += strlen("\r\033[1A");
    cr_expect_str_eq(line, "fetching kbpkg-community/... 1.0/2.0 KiB 1.0 KiB/s ETA 0:01\033[K\n");
    cr_expect_eq(strcspn(line, "\033"), 59, "at most width - 1 columns");
    /* too narrow for the numbers: the label stays readable */
    close_screen(&s);
    open_screen(&s, CLI_PROGRESS_TTY, 30);
    report(&s, 0.0, 1, "download", label, 0, 2048, 0, 0);
    cr_expect_str_eq(take(&s), "fetching kbpkg-community/a...\033[K\n");
    close_screen(&s);
}

Test(progress_render, lines_printed_above_the_live_block)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_TTY, 100);
    report(&s, 0.0, 1, "download", GEMM, 0, 1000, 0, 0);
    take(&s);
    s.t = 0.01;
    cli_progress_print(s.p, stderr, "kbpkg: warning: one\ntwo");
    cr_expect_str_eq(take(&s), "\r\033[1Akbpkg: warning: one\033[K\ntwo\033[K\n"
                               "fetching " GEMM " [>                           ] 0/1000 B"
                               "\033[K\n");
    /* an abandoned job (the command failed) is erased, not summarized */
    cli_progress_free(s.p);
    s.p = NULL;
    cr_expect_str_eq(take(&s), "\r\033[1A\033[J");
    fclose(s.f);
    free(s.buf);
}

Test(progress_render, plain_mode_prints_only_finished_jobs)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_PLAIN, 100);
    uint64_t size = 3271557;
    report(&s, 10.0, 1, "download", GEMM, 0, size, 0, 0);
    report(&s, 10.2, 1, "download", GEMM, size / 2, size, 0, 0);
    report_count(&s, 10.2, 2, "kbtest/add", 0, 1);
    report(&s, 10.2, 3, "build", "kbtest/add cpu", 0, 0, 0, 0);
    cr_expect_str_eq(take(&s), "", "nothing while jobs run");
    report(&s, 10.4, 1, "download", GEMM, size, size, 1, 0);
    cr_expect_str_eq(take(&s), "fetched " GEMM " 3.1 MiB in 0.4 s, 7.8 MiB/s\n");
    report(&s, 11.7, 3, "build", "kbtest/add cpu", 2662, 2662, 1, 0);
    report_count(&s, 11.7, 2, "kbtest/add", 1, 1);
    cr_expect_str_eq(take(&s), "built kbtest/add cpu 2.6 KiB in 1.5 s\n");
    report(&s, 12.0, 4, "download", "kbtest/add sha256:0123", 0, 4096, 0, 0);
    report(&s, 12.2, 4, "download", "kbtest/add sha256:0123", 1024, 4096, 1, KB_ERR_DIGEST);
    cr_expect_str_eq(take(&s), "failed to fetch kbtest/add sha256:0123 after 0.2 s (1.0/4.0 KiB): "
                               "digest mismatch\n");
    /* a library that does not number jobs (job 0): told apart by task and item */
    kb_progress old = {"extract", "/c/blobs/x", 10, 0, 0, 0, NULL, NULL, 0};
    cli_progress_update(s.p, &old);
    old.finished = 1;
    cli_progress_update(s.p, &old);
    cr_expect_str_eq(take(&s), "", "extraction has no line of its own");
    cli_progress_print(s.p, stderr, "a line");
    char *out = take(&s);
    cr_expect_str_eq(out, "a line\n");
    close_screen(&s);
}

Test(progress_render, quiet_mode_prints_nothing)
{
    screen s;
    open_screen(&s, CLI_PROGRESS_OFF, 100);
    report(&s, 0.0, 1, "download", GEMM, 0, 1000, 0, 0);
    report(&s, 1.0, 1, "download", GEMM, 500, 1000, 0, 0);
    report(&s, 2.0, 1, "download", GEMM, 1000, 1000, 1, 0);
    report(&s, 2.0, 2, "build", "x", 0, 0, 1, KB_ERR_BUILD);
    cr_expect_str_eq(take(&s), "");
    close_screen(&s);
}

Test(progress_render, mode_follows_flags_and_terminal)
{
    cr_expect_eq(cli_progress_mode_for(false, false, true, "xterm-256color"), CLI_PROGRESS_TTY);
    cr_expect_eq(cli_progress_mode_for(false, false, true, NULL), CLI_PROGRESS_TTY);
    cr_expect_eq(cli_progress_mode_for(false, false, true, "dumb"), CLI_PROGRESS_PLAIN);
    cr_expect_eq(cli_progress_mode_for(false, false, false, "xterm"), CLI_PROGRESS_PLAIN);
    cr_expect_eq(cli_progress_mode_for(true, false, true, "xterm"), CLI_PROGRESS_OFF);
    cr_expect_eq(cli_progress_mode_for(false, true, true, "xterm"), CLI_PROGRESS_OFF);
}

Test(progress_render, colors_only_on_a_terminal)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_progress_opts o = {CLI_PROGRESS_PLAIN, f, true, 100, 0, NULL, NULL};
    cli_progress *p = cli_progress_new(&o);
    kb_progress ev = {"download", "x", 10, 10, 1, 1, "x", "bytes", 0};
    cli_progress_update(p, &ev);
    cli_progress_free(p);
    fclose(f);
    cr_expect(strstr(buf, "fetched x 10 B in") && !strchr(buf, '\033'), "%s", buf);
    free(buf);
    buf = NULL;
    f = open_memstream(&buf, &len);
    o.mode = CLI_PROGRESS_TTY;
    o.out = f;
    p = cli_progress_new(&o);
    cli_progress_update(p, &ev);
    cli_progress_free(p);
    fclose(f);
    cr_expect(strstr(buf, "\033[32mfetched\033[0m x 10 B in"), "%s", buf);
    free(buf);
}

/* ---- reports from several threads at once (a library may call from worker threads) ---- */

typedef struct worker_arg {
    cli_progress *p;
    uint64_t job;
} worker_arg;

static void *hammer(void *arg)
{
    worker_arg *w = arg;
    char label[32];
    snprintf(label, sizeof(label), "job-%llu", (unsigned long long)w->job);
    for (uint64_t i = 0; i <= 2000; i++) {
        kb_progress ev = {"download", label, i, 2000, i == 2000, w->job, label, "bytes", 0};
        cli_progress_update(w->p, &ev);
        if (i % 500 == 0)
            cli_progress_print(w->p, stderr, "a message");
    }
    return NULL;
}

Test(progress_render, reports_from_threads_are_serialized)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cli_progress_opts o = {CLI_PROGRESS_TTY, f, false, 100, 0, NULL, NULL};
    cli_progress *p = cli_progress_new(&o);
    pthread_t t[4];
    worker_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (worker_arg){p, (uint64_t)i + 1};
        cr_assert_eq(pthread_create(&t[i], NULL, hammer, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cli_progress_free(p);
    fclose(f);
    for (int i = 1; i <= 4; i++) {
        char want[64];
        snprintf(want, sizeof(want), "fetched job-%d 2.0 KiB in", i);
        cr_expect(strstr(buf, want), "%s missing", want);
    }
    size_t messages = 0;
    for (const char *s = buf; (s = strstr(s, "a message")); s++)
        messages++;
    cr_expect_eq(messages, 20);
    free(buf);
}
