/* The progress renderer: per-job rate and ETA, a live block of lines on a terminal, summaries. */
#define _GNU_SOURCE
#include "progress.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define REDRAW_EVERY_S 0.1  /* at most 10 redraws a second */
#define SAMPLE_EVERY_S 0.25 /* rate samples kept this far apart ... */
#define RATE_WINDOW_S 4.0   /* ... over about this long: the rate is an average over it */
#define MAX_SAMPLES 32      /* > RATE_WINDOW_S / SAMPLE_EVERY_S + 1 */
#define BAR_MIN 10
#define BAR_MAX 30
#define LINE_MAX 1024

typedef struct sample {
    double t;
    uint64_t done;
} sample;

typedef struct job {
    uint64_t id; /* kb_progress.job; 0 from a library that does not number jobs */
    char *task;
    char *item;
    char *label;
    bool counts; /* unit is not bytes: "3/5 targets" */
    char *unit;
    uint64_t first_done; /* where it started: a resumed download starts past 0 */
    uint64_t done;
    uint64_t total;
    double start;
    double end;
    bool finished;
    int status;
    sample samples[MAX_SAMPLES];
    size_t nsamples;
    double rate; /* units per second over the window; < 0 while unknown */
} job;

struct cli_progress {
    cli_progress_opts o;
    pthread_mutex_t lock;
    job *jobs; /* running ones, and finished ones not printed yet, in order of start */
    size_t count;
    size_t cap;
    int drawn;        /* live lines on screen below the cursor's block start */
    double last_draw; /* < 0: never */
};

/* ---- a growable string (the CLI sees only the public API, so no kb_buf) ---- */

typedef struct sbuf {
    char *data;
    size_t len;
    size_t cap;
} sbuf;

static void sb_vprintf(sbuf *b, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        return;
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = (b->len + (size_t)n + 1) * 2;
        char *data = realloc(b->data, cap);
        if (!data)
            return;
        b->data = data;
        b->cap = cap;
    }
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sb_vprintf(b, fmt, ap);
    va_end(ap);
}

/* ---- numbers for people ---- */

static const char *const size_units[] = {"B", "KiB", "MiB", "GiB", "TiB"};

static int size_scale(double v)
{
    int s = 0;
    while (v >= 1024.0 && s < 4) {
        v /= 1024.0;
        s++;
    }
    return s;
}

static void fmt_scaled(char *out, size_t n, double v, int scale)
{
    if (scale == 0)
        snprintf(out, n, "%.0f", v);
    else
        snprintf(out, n, "%.1f", v / pow(1024.0, scale));
}

/* "512 B", "3.1 MiB" */
static void fmt_size(char *out, size_t n, double bytes)
{
    char num[32];
    int s = size_scale(bytes);
    fmt_scaled(num, sizeof(num), bytes, s);
    snprintf(out, n, "%s %s", num, size_units[s]);
}

/* "1.2/3.1 MiB": both in the total's unit */
static void fmt_of(char *out, size_t n, uint64_t done, uint64_t total)
{
    char a[32], b[32];
    int s = size_scale((double)total);
    fmt_scaled(a, sizeof(a), (double)done, s);
    fmt_scaled(b, sizeof(b), (double)total, s);
    snprintf(out, n, "%s/%s %s", a, b, size_units[s]);
}

/* "0.4 s", "12.0 s", "3m05s" */
static void fmt_duration(char *out, size_t n, double s)
{
    if (s < 0)
        s = 0;
    if (s < 59.95) {
        snprintf(out, n, "%.1f s", s);
        return;
    }
    unsigned long t = (unsigned long)(s + 0.5);
    if (t < 3600)
        snprintf(out, n, "%lum%02lus", t / 60, t % 60);
    else
        snprintf(out, n, "%luh%02lum", t / 3600, t / 60 % 60);
}

/* "0:07", "1:02:03"; false when too far off to mean anything */
static bool fmt_eta(char *out, size_t n, double s)
{
    if (!(s >= 0) || s > 99 * 3600.0)
        return false;
    unsigned long t = (unsigned long)ceil(s);
    if (t < 3600)
        snprintf(out, n, "%lu:%02lu", t / 60, t % 60);
    else
        snprintf(out, n, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    return true;
}

/* ---- what each task says ---- */

typedef struct task_words {
    const char *task;
    const char *doing; /* on a live line */
    const char *done;  /* on its summary */
    const char *verb;  /* "failed to <verb>" */
    bool rate;         /* bytes per second mean something */
    bool summary;      /* a line when it finishes */
} task_words;

static const task_words known_tasks[] = {
    {"download", "fetching", "fetched", "fetch", true, true},
    {"upload", "uploading", "uploaded", "upload", true, true},
    {"build", "building", "built", "build", false, true},
    /* the install line on stdout says it; a line per archive would be noise */
    {"extract", "extracting", "extracted", "extract", true, false},
};

static task_words words_for(const char *task)
{
    for (size_t i = 0; i < sizeof(known_tasks) / sizeof(known_tasks[0]); i++)
        if (strcmp(task, known_tasks[i].task) == 0)
            return known_tasks[i];
    task_words w = {task, task, task, task, true, true};
    return w;
}

/* ---- the terminal ---- */

static double monotonic_now(void *payload)
{
    (void)payload;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(const cli_progress *p)
{
    return p->o.clock ? p->o.clock(p->o.clock_payload) : monotonic_now(NULL);
}

static void term_size(const cli_progress *p, int *width, int *height)
{
    *width = p->o.width;
    *height = p->o.height;
    struct winsize ws;
    bool have = (!*width || !*height) && ioctl(fileno(p->o.out), TIOCGWINSZ, &ws) == 0;
    if (!*width && have && ws.ws_col > 0)
        *width = ws.ws_col;
    if (!*height && have && ws.ws_row > 0)
        *height = ws.ws_row;
    if (!*width) {
        const char *cols = getenv("COLUMNS");
        long c = cols ? strtol(cols, NULL, 10) : 0;
        *width = c > 0 && c < 10000 ? (int)c : 80;
    }
}

static const char *sgr(const cli_progress *p, const char *code)
{
    return p->o.color ? code : "";
}

/* ---- jobs ---- */

static void job_clear(job *j)
{
    free(j->task);
    free(j->item);
    free(j->label);
    free(j->unit);
}

static job *find_job(cli_progress *p, const kb_progress *ev)
{
    for (size_t i = 0; i < p->count; i++) {
        job *j = &p->jobs[i];
        if (j->finished)
            continue;
        if (ev->job ? j->id == ev->job
                    : !j->id && strcmp(j->task, ev->task) == 0 && strcmp(j->item, ev->item) == 0)
            return j;
    }
    return NULL;
}

static job *add_job(cli_progress *p, const kb_progress *ev, double t)
{
    if (p->count == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 8;
        job *jobs = realloc(p->jobs, cap * sizeof(*jobs));
        if (!jobs)
            return NULL;
        p->jobs = jobs;
        p->cap = cap;
    }
    job *j = &p->jobs[p->count];
    memset(j, 0, sizeof(*j));
    const char *label = ev->job && ev->label ? ev->label : ev->item;
    const char *unit = ev->job && ev->unit ? ev->unit : "bytes";
    j->id = ev->job;
    j->task = strdup(ev->task ? ev->task : "task");
    j->item = strdup(ev->item ? ev->item : "");
    j->label = strdup(label ? label : "");
    j->unit = strdup(unit);
    if (!j->task || !j->item || !j->label || !j->unit) {
        job_clear(j);
        return NULL;
    }
    j->counts = strcmp(unit, "bytes") != 0;
    j->first_done = ev->done;
    j->start = t;
    j->rate = -1;
    p->count++;
    return j;
}

static void remove_job(cli_progress *p, size_t i)
{
    job_clear(&p->jobs[i]);
    memmove(&p->jobs[i], &p->jobs[i + 1], (p->count - i - 1) * sizeof(*p->jobs));
    p->count--;
}

/* Keep a sample every SAMPLE_EVERY_S; the rate runs from the oldest one still in the window
 * (or just before it) to now. */
static void update_rate(job *j, double t)
{
    if (j->nsamples == 0 || t - j->samples[j->nsamples - 1].t >= SAMPLE_EVERY_S) {
        if (j->nsamples == MAX_SAMPLES) {
            memmove(&j->samples[0], &j->samples[1], (MAX_SAMPLES - 1) * sizeof(sample));
            j->nsamples--;
        }
        j->samples[j->nsamples++] = (sample){t, j->done};
    }
    while (j->nsamples > 1 && j->samples[1].t <= t - RATE_WINDOW_S) {
        memmove(&j->samples[0], &j->samples[1], (j->nsamples - 1) * sizeof(sample));
        j->nsamples--;
    }
    const sample *s = &j->samples[0];
    if (t - s->t >= 0.1 && j->done >= s->done)
        j->rate = (double)(j->done - s->done) / (t - s->t);
}

/* ---- lines ---- */

/* "fetched radeonflow/gemm sha256:3f2a9c1d0b4e 3.1 MiB in 0.4 s, 7.8 MiB/s" */
static void summary_line(const cli_progress *p, const job *j, sbuf *out)
{
    task_words w = words_for(j->task);
    char size[96] = "", took[32], rate[96] = "";
    double secs = j->end - j->start;
    fmt_duration(took, sizeof(took), secs);
    if (j->status) {
        if (j->total && !j->counts)
            fmt_of(size, sizeof(size), j->done, j->total);
        sb_printf(out, "%sfailed%s to %s %s after %s%s%s%s: %s", sgr(p, "\033[31m"),
                  sgr(p, "\033[0m"), w.verb, j->label, took, size[0] ? " (" : "", size,
                  size[0] ? ")" : "", kb_strerror(j->status));
        return;
    }
    if (j->done)
        fmt_size(size, sizeof(size), (double)j->done);
    uint64_t moved = j->done - j->first_done;
    if (w.rate && secs >= 0.001 && moved)
        fmt_size(rate, sizeof(rate), (double)moved / secs);
    sb_printf(out, "%s%s%s %s%s%s in %s%s%s%s", sgr(p, "\033[32m"), w.done, sgr(p, "\033[0m"),
              j->label, size[0] ? " " : "", size, took, rate[0] ? ", " : "", rate,
              rate[0] ? "/s" : "");
}

/* A bar of n cells: "[=========>          ]" */
static void bar(char *out, size_t n, double fraction)
{
    if (fraction < 0)
        fraction = 0;
    if (fraction > 1)
        fraction = 1;
    size_t inner = n - 2, full = (size_t)(fraction * (double)inner);
    out[0] = '[';
    for (size_t i = 0; i < inner; i++)
        out[1 + i] = i < full ? '=' : (i == full ? '>' : ' ');
    if (full == inner)
        out[inner] = '=';
    out[n - 1] = ']';
    out[n] = '\0';
}

/* One live line, at most width - 1 columns (the last column would wrap on some terminals and
 * throw the cursor moves off). */
static void live_line(const cli_progress *p, const job *j, double t, int width, sbuf *out)
{
    task_words w = words_for(j->task);
    char right[256] = "", part[96];
    size_t rn = 0;
#define RIGHT(...) rn += (size_t)snprintf(right + rn, sizeof(right) - rn, __VA_ARGS__)
    bool fraction = j->total > 0;
    if (j->counts) {
        RIGHT("%llu/%llu %s", (unsigned long long)j->done, (unsigned long long)j->total, j->unit);
        double per =
            j->done > j->first_done ? (t - j->start) / (double)(j->done - j->first_done) : -1;
        if (per >= 0 && fraction && fmt_eta(part, sizeof(part), per * (double)(j->total - j->done)))
            RIGHT(" ETA %s", part);
    } else if (j->done || j->total || w.rate) {
        if (fraction)
            fmt_of(part, sizeof(part), j->done, j->total);
        else
            fmt_size(part, sizeof(part), (double)j->done);
        RIGHT("%s", part);
        if (w.rate && j->rate >= 0) {
            fmt_size(part, sizeof(part), j->rate);
            RIGHT(" %s/s", part);
        }
        if (w.rate && fraction && j->rate > 0 && j->done <= j->total &&
            fmt_eta(part, sizeof(part), (double)(j->total - j->done) / j->rate))
            RIGHT(" ETA %s", part);
    } else {
        fmt_duration(part, sizeof(part), t - j->start); /* a compile: how long so far */
        RIGHT("%s", part);
    }
#undef RIGHT
    size_t max = width > 1 ? (size_t)width - 1 : 1;
    size_t doing = strlen(w.doing), label = strlen(j->label), rlen = strlen(right);
    /* the label gives way first; below 10 columns of it, the numbers go instead */
    if (doing + 1 + 10 + 1 + rlen > max) {
        right[0] = '\0';
        rlen = 0;
    }
    size_t room = max - doing - 1 - (rlen ? rlen + 1 : 0);
    if (room > max)
        room = 0; /* too narrow for anything */
    char barbuf[BAR_MAX + 1] = "";
    if (fraction && rlen && label + 1 + BAR_MIN <= room) {
        size_t cells = room - label - 1;
        cells = cells > BAR_MAX ? BAR_MAX : cells;
        bar(barbuf, cells, (double)j->done / (double)j->total);
    }
    char shown[LINE_MAX];
    if (label <= room)
        snprintf(shown, sizeof(shown), "%s", j->label);
    else if (room > 3)
        snprintf(shown, sizeof(shown), "%.*s...", (int)(room - 3), j->label);
    else
        snprintf(shown, sizeof(shown), "%.*s", (int)room, j->label);
    if (doing > max) {
        sb_printf(out, "%.*s", (int)max, w.doing);
        return;
    }
    sb_printf(out, "%s%s%s %s%s%s%s%s", sgr(p, "\033[36m"), w.doing, sgr(p, "\033[0m"), shown,
              barbuf[0] ? " " : "", barbuf, rlen ? " " : "", right);
}

/* ---- output ---- */

static bool wants_summary(const job *j)
{
    return !j->counts && (words_for(j->task).summary || j->status);
}

/* Plain: a finished job's line, nothing else. */
static void flush_plain(cli_progress *p)
{
    for (size_t i = 0; i < p->count;) {
        job *j = &p->jobs[i];
        if (!j->finished) {
            i++;
            continue;
        }
        if (wants_summary(j)) {
            sbuf line = {0};
            summary_line(p, j, &line);
            if (line.data)
                fprintf(p->o.out, "%s\n", line.data);
            free(line.data);
        }
        remove_job(p, i);
    }
    fflush(p->o.out);
}

/* Terminal: back to the top of the live block, then the text (if any), the summaries of what
 * finished, and the live lines; clear what is left of the old block. */
static void redraw(cli_progress *p, const char *text, double t)
{
    int width, height;
    term_size(p, &width, &height);
    sbuf b = {0};
    if (p->drawn)
        sb_printf(&b, "\r\033[%dA", p->drawn);
    const char *eol = p->drawn ? "\033[K\n" : "\n";
    for (const char *s = text; s && *s;) {
        size_t n = strcspn(s, "\n");
        sb_printf(&b, "%.*s%s", (int)n, s, eol);
        s += n + (s[n] == '\n');
    }
    for (size_t i = 0; i < p->count;) {
        job *j = &p->jobs[i];
        if (!j->finished) {
            i++;
            continue;
        }
        if (wants_summary(j)) {
            summary_line(p, j, &b);
            sb_printf(&b, "%s", eol);
        }
        remove_job(p, i);
    }
    /* keep the block on the screen: one row for the cursor, one for "... and N more" */
    size_t room = height > 2 ? (size_t)height - 1 : p->count;
    size_t shown = p->count <= room ? p->count : (room > 1 ? room - 1 : 1);
    for (size_t i = 0; i < shown; i++) {
        live_line(p, &p->jobs[i], t, width, &b);
        sb_printf(&b, "\033[K\n");
    }
    int lines = (int)shown;
    if (shown < p->count) {
        sb_printf(&b, "... and %zu more\033[K\n", p->count - shown);
        lines++;
    }
    if (p->drawn > lines)
        sb_printf(&b, "\033[J");
    p->drawn = lines;
    p->last_draw = t;
    if (b.data)
        fwrite(b.data, 1, b.len, p->o.out);
    fflush(p->o.out);
    free(b.data);
}

/* ---- the API ---- */

cli_progress_mode cli_progress_mode_for(bool quiet, bool json, bool stderr_tty, const char *term)
{
    if (quiet || json)
        return CLI_PROGRESS_OFF;
    if (stderr_tty && !(term && strcmp(term, "dumb") == 0))
        return CLI_PROGRESS_TTY;
    return CLI_PROGRESS_PLAIN;
}

cli_progress *cli_progress_new(const cli_progress_opts *opts)
{
    cli_progress *p = calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->o = *opts;
    if (!p->o.out)
        p->o.out = stderr;
    if (p->o.mode != CLI_PROGRESS_TTY)
        p->o.color = false;
    p->last_draw = -1;
    pthread_mutex_init(&p->lock, NULL);
    return p;
}

void cli_progress_free(cli_progress *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    if (p->o.mode == CLI_PROGRESS_PLAIN) {
        flush_plain(p);
    } else if (p->o.mode == CLI_PROGRESS_TTY) {
        /* what still runs was abandoned (an error ends the command): leave its summary out */
        for (size_t i = 0; i < p->count;)
            if (p->jobs[i].finished)
                i++;
            else
                remove_job(p, i);
        redraw(p, NULL, now(p));
    }
    for (size_t i = 0; i < p->count; i++)
        job_clear(&p->jobs[i]);
    free(p->jobs);
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_destroy(&p->lock);
    free(p);
}

int cli_progress_update(cli_progress *p, const kb_progress *ev)
{
    if (!p || !ev || p->o.mode == CLI_PROGRESS_OFF)
        return 0;
    pthread_mutex_lock(&p->lock);
    double t = now(p);
    job *j = find_job(p, ev);
    bool fresh = !j;
    if (!j)
        j = add_job(p, ev, t);
    if (!j) {
        pthread_mutex_unlock(&p->lock);
        return 0; /* out of memory: no display, but the work goes on */
    }
    if (ev->job && ev->label && strcmp(ev->label, j->label) != 0) {
        char *label = strdup(ev->label);
        if (label) {
            free(j->label);
            j->label = label;
        }
    }
    j->done = ev->done;
    j->total = ev->total;
    if (j->done < j->first_done) /* started over (the server ignored a Range) */
        j->first_done = j->done, j->nsamples = 0;
    update_rate(j, t);
    if (ev->finished) {
        j->finished = true;
        j->end = t;
        j->status = ev->job ? ev->status : 0;
    }
    if (p->o.mode == CLI_PROGRESS_PLAIN) {
        if (ev->finished)
            flush_plain(p);
    } else if (fresh || ev->finished || p->last_draw < 0 || t - p->last_draw >= REDRAW_EVERY_S) {
        redraw(p, NULL, t);
    }
    pthread_mutex_unlock(&p->lock);
    return 0;
}

void cli_progress_print(cli_progress *p, FILE *fallback, const char *text)
{
    if (!p) {
        fprintf(fallback, "%s\n", text);
        fflush(fallback);
        return;
    }
    pthread_mutex_lock(&p->lock);
    if (p->o.mode == CLI_PROGRESS_TTY && p->drawn) {
        redraw(p, text, now(p));
    } else {
        fprintf(p->o.out, "%s\n", text);
        fflush(p->o.out);
    }
    pthread_mutex_unlock(&p->lock);
}
