/* Progress on stderr: a block of live lines redrawn in place on a terminal, a line per finished
 * job anywhere else, nothing with -q or --json. */
#ifndef KB_CLI_PROGRESS_H
#define KB_CLI_PROGRESS_H

#include <stdbool.h>
#include <stdio.h>

#include "kbpkg/common.h"

typedef enum cli_progress_mode {
    CLI_PROGRESS_OFF = 0,   /* nothing: -q, --json */
    CLI_PROGRESS_PLAIN = 1, /* one line per finished job, no escape codes: a pipe, TERM=dumb */
    CLI_PROGRESS_TTY = 2,   /* one live line per running job, redrawn at most 10 times a second */
} cli_progress_mode;

typedef struct cli_progress_opts {
    cli_progress_mode mode;
    FILE *out;  /* stderr; never stdout, which carries results and --json */
    bool color; /* color the verbs (only ever on a terminal) */
    int width;  /* columns; 0: the terminal's (TIOCGWINSZ on out), else $COLUMNS, else 80 */
    int height; /* rows; 0: the terminal's, else no limit on the live lines */
    /* monotonic seconds; NULL: CLOCK_MONOTONIC (tests pass a fake one) */
    double (*clock)(void *clock_payload);
    void *clock_payload;
} cli_progress_opts;

typedef struct cli_progress cli_progress;

/* The mode for these flags and this stderr: off for -q and --json, a live display only on a
 * terminal that understands cursor moves (not TERM=dumb). */
cli_progress_mode cli_progress_mode_for(bool quiet, bool json, bool stderr_tty, const char *term);

/* NULL when out of memory. */
cli_progress *cli_progress_new(const cli_progress_opts *opts);
/* Prints what finished and was not shown yet, erases the live lines. NULL is fine. */
void cli_progress_free(cli_progress *p);
/* A kb_progress_cb: safe to call from several threads (calls are serialized). Returns 0. */
int cli_progress_update(cli_progress *p, const kb_progress *ev);
/* Print text and a newline above the live lines (a log line, an event); they are redrawn
 * below it. Without live lines, or with p NULL, it is a plain write. */
void cli_progress_print(cli_progress *p, FILE *fallback, const char *text);

#endif
