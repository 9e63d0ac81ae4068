/* The GPU clocks a benchmark ran at: a thread samples NVML (probe/) while the program runs. */
#include "builder/builder.h"

#include <jansson.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A thread that does not finish this long after the program exited is stuck in the driver. */
#define SAMPLER_STOP_WAIT_S 5
/* 25 ms apart for ten minutes (the run's own limit) is 24000; more is not kept. */
#define MAX_SAMPLES 65536

struct kbi_clock_sampler {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC: stop and done are signalled on it */
    bool stop, done;
    char lib[256];
    kb_device dev;
    unsigned interval_ms;
    /* written by the thread alone, read once done is set */
    kbi_clock_sample *samples;
    size_t count;
    char driver[96];
    unsigned max_sm_mhz;
    char note[256];
};

static void deadline_after_ms(struct timespec *ts, unsigned ms)
{
    clock_gettime(CLOCK_MONOTONIC, ts);
    ts->tv_sec += ms / 1000;
    ts->tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L)
        ts->tv_sec++, ts->tv_nsec -= 1000000000L;
}

/* Sample until told to stop; the first reading is taken at once, so a short program has one. */
static void sample_loop(kbi_clock_sampler *s, kbi_nvml *n)
{
    for (;;) {
        kbi_clock_sample one;
        if (!kbi_nvml_sample(n, &one, s->note, sizeof(s->note)))
            return; /* NVML stopped answering: what was read stays */
        if (s->count < MAX_SAMPLES)
            s->samples[s->count++] = one;
        struct timespec until;
        deadline_after_ms(&until, s->interval_ms);
        pthread_mutex_lock(&s->mu);
        int rc = 0;
        while (!s->stop && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
        bool stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop)
            return;
    }
}

static void *sampler_main(void *arg)
{
    kbi_clock_sampler *s = arg;
    kbi_nvml *n = kbi_nvml_open(s->lib, &s->dev, s->note, sizeof(s->note));
    if (n) {
        snprintf(s->driver, sizeof(s->driver), "%s", kbi_nvml_driver(n));
        s->max_sm_mhz = kbi_nvml_max_sm_mhz(n);
        sample_loop(s, n);
        kbi_nvml_close(n);
    }
    pthread_mutex_lock(&s->mu);
    s->done = true;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void sampler_free(kbi_clock_sampler *s)
{
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s->samples);
    free(s);
}

kbi_clock_sampler *kbi_clock_sampler_start(const char *nvml_lib, const kb_device *dev,
                                           unsigned interval_ms)
{
    kbi_clock_sampler *s = calloc(1, sizeof(*s));
    if (!s)
        return NULL;
    s->samples = calloc(MAX_SAMPLES, sizeof(*s->samples));
    snprintf(s->lib, sizeof(s->lib), "%s", nvml_lib);
    s->dev = *dev;
    s->interval_ms = interval_ms ? interval_ms : 1;
    pthread_condattr_t attr;
    bool cond_ok = pthread_condattr_init(&attr) == 0;
    cond_ok = cond_ok && pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) == 0 &&
              pthread_cond_init(&s->cv, &attr) == 0;
    pthread_condattr_destroy(&attr);
    if (!s->samples || !cond_ok || pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s->samples);
        free(s);
        return NULL;
    }
    if (pthread_create(&s->thread, NULL, sampler_main, s) != 0) {
        sampler_free(s);
        return NULL;
    }
    return s;
}

void kbi_clock_sampler_stop(kbi_clock_sampler *s, kbi_clock_summary *out)
{
    memset(out, 0, sizeof(*out));
    if (!s) {
        snprintf(out->note, sizeof(out->note), "the clock sampler could not start");
        return;
    }
    struct timespec until;
    deadline_after_ms(&until, SAMPLER_STOP_WAIT_S * 1000u);
    pthread_mutex_lock(&s->mu);
    s->stop = true;
    pthread_cond_broadcast(&s->cv);
    int rc = 0;
    while (!s->done && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&s->cv, &s->mu, &until);
    bool done = s->done;
    pthread_mutex_unlock(&s->mu);
    if (!done) {
        /* Stuck in the driver: the thread keeps s (left allocated) and the process moves on. */
        pthread_detach(s->thread);
        snprintf(out->note, sizeof(out->note), "NVML did not answer within %d s",
                 SAMPLER_STOP_WAIT_S);
        return;
    }
    pthread_join(s->thread, NULL);
    kbi_clock_summarise(out, s->samples, s->count);
    snprintf(out->driver, sizeof(out->driver), "%s", s->driver);
    out->device_max_mhz = s->max_sm_mhz;
    if (out->samples == 0)
        snprintf(out->note, sizeof(out->note), "%s", s->note[0] ? s->note : "no clock sample");
    sampler_free(s);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorted in place); the mean of the middle two when n is even. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

void kbi_clock_summarise(kbi_clock_summary *out, const kbi_clock_sample *s, size_t n)
{
    /* Idle readings (before the program's first kernel, between its phases) would drag the
     * median towards the idle clock: keep the busy ones, when NVML says which those are. */
    size_t busy = 0;
    for (size_t i = 0; i < n; i++)
        busy += s[i].busy == 1;
    out->busy_only = busy > 0;
    double *sm = calloc(n + 1, sizeof(*sm)), *mem = calloc(n + 1, sizeof(*mem));
    size_t k = 0, m = 0;
    for (size_t i = 0; sm && mem && i < n; i++) {
        if (out->busy_only && s[i].busy != 1)
            continue;
        sm[k++] = s[i].sm_mhz;
        if (s[i].mem_mhz)
            mem[m++] = s[i].mem_mhz;
    }
    out->samples = k;
    if (k) {
        out->sm_median = median(sm, k); /* sorted now */
        out->sm_min = sm[0];
        out->sm_max = sm[k - 1];
    }
    out->mem_median = m ? median(mem, m) : 0;
    free(sm);
    free(mem);
}

/* NULL when v is 0 (unknown). */
static json_t *mhz_or_null(double v)
{
    return v > 0 ? json_real(v) : json_null();
}

int kbi_clock_summary_json(json_t *device, const kbi_clock_summary *c)
{
    bool have = c->samples > 0;
    json_t *add = json_pack(
        "{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "driver_version",
        c->driver[0] ? json_string(c->driver) : json_null(), "clock_mhz",
        mhz_or_null(have ? c->sm_median : 0), "clock_min_mhz", mhz_or_null(have ? c->sm_min : 0),
        "clock_max_mhz", mhz_or_null(have ? c->sm_max : 0), "mem_clock_mhz",
        mhz_or_null(have ? c->mem_median : 0), "clock_device_max_mhz",
        c->device_max_mhz ? json_integer(c->device_max_mhz) : json_null(), "clock_samples",
        have ? json_integer((json_int_t)c->samples) : json_null(), "clock_busy_only",
        have ? json_boolean(c->busy_only) : json_null(), "clock_note",
        have ? json_null() : json_string(c->note[0] ? c->note : "unknown"));
    int rc = add && json_object_update(device, add) == 0 ? 0 : KB_ERR_NOMEM;
    json_decref(add);
    return rc;
}
