/* The build runner: plan a package's targets, compile/verify/package them in parallel worker
 * threads, and report per target. Callbacks run on the caller's thread only: workers have
 * their own ctx, and the caller's thread reports their progress while it waits. */
#include "builder/builder.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* One target's work, filled by a worker thread; the worker owns its own ctx. */
/* The device-lib overlay of one ROCm toolchain (hipcc, hip-clang), made before the workers
 * start; a failure fails that toolchain's targets with its message, never a silent skip. */
typedef struct rocm_overlay {
    const kb_toolchain *tc;
    char *dir;
    int rc;
    char *error;
} rocm_overlay;

typedef struct build_job {
    const kb_manifest *m;
    const kb_plan_item *item;
    const char *source_digest;
    const char *inputs_digest; /* what the build reads: the build key's input */
    const char *work_root;
    const char *out_dir;
    const rocm_overlay *overlay; /* the item's toolchain's overlay, or NULL */
    const char *deps_root;       /* <cache.dir>/deps, resolved on the caller's ctx */
    int64_t epoch;
    /* results */
    int rc;
    char *message;
    char *artifact;
    char sha256[65];
    uint64_t size;
    double seconds;
    char build_key[65];
    kb_buf log;
    kb_strv warnings; /* reported by the caller's thread as warnings */
    /* progress, reported by the caller's thread */
    uint64_t progress_job;
    char *label; /* "org/name target" */
} build_job;

typedef struct build_pool {
    build_job *jobs;
    size_t count;
    size_t next;     /* next job to hand out */
    size_t started;  /* jobs handed out */
    size_t finished; /* jobs done, not yet reported */
    bool cancelled;  /* the progress callback asked to stop: hand out nothing more */
    bool *done;
    pthread_mutex_t lock;
    pthread_cond_t changed;
} build_pool;

/* While targets compile, the caller's thread reports them this often (elapsed time for a
 * progress display, and a chance to cancel). */
#define BUILD_TICK_NS 250000000L

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void on_worker_log(kb_log_level level, const char *message, void *payload)
{
    build_job *job = payload;
    kbi_buf_printf(&job->log, "%s\n", message);
}

static int package_target(kb_ctx *ctx, build_job *job, const char *work, const kb_strv *flags,
                          const char *lib)
{
    char glibc[16] = "", glibcxx[16] = "";
    int rc = kbi_verify_library(ctx, lib, job->m, job->item, glibc, glibcxx, &job->warnings);
    if (!rc && job->item->backend == KB_BACKEND_ROCM)
        rc = kbi_verify_hip_runtime(ctx, lib, job->item);
    if (!rc && job->item->backend == KB_BACKEND_ROCM && job->item->tc->objdump)
        rc = kbi_verify_disassembly(ctx, lib, job->item, job->item->tc->objdump);
    else if (!rc && job->item->backend == KB_BACKEND_ROCM &&
             kbi_strv_push(&job->warnings, "not disassembled (no llvm-objdump; install llvm-19)"))
        rc = kbi_error_oom(ctx);
    char *staging = kbi_path_join(work, "stage");
    char *name = kbi_artifact_name(job->m, job->item->target);
    char *out = name ? kbi_path_join(job->out_dir, name) : NULL;
    if (!rc && (!staging || !out))
        rc = kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_mkdir_p(ctx, staging, 0755);
    kb_pkg_meta meta = {job->m,
                        job->item->target,
                        job->item->tc,
                        flags,
                        job->source_digest,
                        job->build_key,
                        glibc[0] ? glibc : NULL,
                        glibcxx[0] ? glibcxx : NULL,
                        job->item->backend};
    if (!rc)
        rc = kbi_stage_artifact(ctx, staging, &meta, lib);
    kb_archive_result res;
    if (!rc)
        rc = kbi_archive_write_dir(&res, ctx, out, staging, job->epoch);
    if (!rc) {
        memcpy(job->sha256, res.sha256, sizeof(job->sha256));
        job->size = res.size;
        job->artifact = out;
        out = NULL;
    }
    free(staging);
    free(name);
    free(out);
    return rc;
}

/* Compile, verify, package. Runs on a worker thread with its own ctx. */
static int run_job_in(kb_ctx *ctx, build_job *job)
{
    const kb_plan_item *item = job->item;
    if (job->overlay && job->overlay->rc)
        return kbi_error_set(ctx, job->overlay->rc, "%s", job->overlay->error);
    kb_strv flags = KB_STRV_INIT;
    if (kbi_target_build_key(job->build_key, &flags, job->m, item, job->inputs_digest))
        return kbi_error_oom(ctx);
    /* A fixed-name folder per target: nothing random reaches the binary. */
    char *work = kbi_path_join(job->work_root, item->target);
    char *lockpath = work ? kbi_asprintf("%s.lock", work) : NULL;
    char lib_name[128];
    kbi_lib_name(job->m->name, lib_name, sizeof(lib_name));
    char *lib = work ? kbi_asprintf("%s/lib%s.so", work, lib_name) : NULL;
    kb_lock lock = {-1};
    int rc = (!work || !lockpath || !lib) ? kbi_error_oom(ctx) : 0;
    if (!rc)
        rc = kbi_mkdir_p(ctx, job->work_root, 0755);
    if (!rc)
        rc = kbi_lock_acquire(ctx, &lock, lockpath);
    if (!rc)
        rc = kbi_rm_rf(ctx, work);
    if (!rc)
        rc = kbi_mkdir_p(ctx, work, 0755);
    const char *overlay = NULL;
    if (job->overlay &&
        (item->tc->hip_stub || kbi_strv_contains(&item->tc->overlay_archs, item->arch)))
        overlay = job->overlay->dir;
    kb_compile_env env = {work, overlay, job->deps_root};
    if (!rc)
        rc = kbi_compile_target(ctx, job->m, item, &env, lib, &job->log);
    if (!rc)
        rc = kbi_check_dependency_lists(ctx, job->m, work, job->deps_root);
    if (!rc)
        rc = package_target(ctx, job, work, &flags, lib);
    if (lock.fd >= 0)
        kbi_lock_release(&lock);
    free(work);
    free(lockpath);
    free(lib);
    kbi_strv_free(&flags);
    return rc;
}

static void run_job(build_job *job)
{
    double start = now_s();
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    o.log = on_worker_log;
    o.payload = job;
    o.log_level = KB_LOG_DEBUG;
    kb_ctx *ctx = NULL;
    if (kb_ctx_new(&ctx, &o) != 0) {
        job->rc = KB_ERR_NOMEM;
        job->message = kbi_strdup("cannot create a worker context");
        return;
    }
    job->rc = run_job_in(ctx, job);
    if (job->rc)
        job->message = kbi_strdup(kb_ctx_last_error(ctx)->message);
    kb_ctx_free(ctx);
    job->seconds = now_s() - start;
}

static void *worker_main(void *arg)
{
    build_pool *pool = arg;
    for (;;) {
        pthread_mutex_lock(&pool->lock);
        size_t i = pool->next < pool->count && !pool->cancelled ? pool->next++ : pool->count;
        if (i < pool->count) {
            pool->started++;
            pthread_cond_signal(&pool->changed);
        }
        pthread_mutex_unlock(&pool->lock);
        if (i == pool->count)
            return NULL;
        run_job(&pool->jobs[i]);
        pthread_mutex_lock(&pool->lock);
        pool->done[i] = true;
        pool->finished++;
        pthread_cond_signal(&pool->changed);
        pthread_mutex_unlock(&pool->lock);
    }
}

static unsigned job_count(kb_ctx *ctx, const kb_build_options *o)
{
    if (o && o->jobs)
        return o->jobs;
    long n = kbi_config_long(ctx, "build.jobs");
    if (n > 0)
        return (unsigned)n;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (unsigned)cores : 1;
}

/* One target's progress: started (done 0), ticking, finished with the artifact's size. */
static int report_target(kb_ctx *ctx, const build_job *job, bool finished)
{
    kb_progress p = {"build",
                     job->item->target,
                     finished ? job->size : 0,
                     finished ? job->size : 0,
                     finished ? 1 : 0,
                     job->progress_job,
                     job->label,
                     "bytes",
                     finished ? job->rc : 0};
    return kbi_progress_emit(ctx, &p);
}

/* The whole build: targets done of targets planned. */
static int report_overall(kb_ctx *ctx, const kb_manifest *m, uint64_t job, size_t done,
                          size_t total)
{
    kb_progress p = {"build", m->name, done, total, done == total, job, m->name, "targets", 0};
    return kbi_progress_emit(ctx, &p);
}

static void report_job(kb_ctx *ctx, const kb_manifest *m, build_job *job)
{
    if (job->log.len)
        kbi_log(ctx, KB_LOG_DEBUG, "%s:\n%s", job->item->target, job->log.data);
    for (size_t i = 0; i < job->warnings.len; i++)
        kbi_log(ctx, KB_LOG_WARN, "%s: %s", m->name, job->warnings.items[i]);
    if (job->rc == 0)
        kbi_event_emit(ctx, KB_EVENT_BUILD_DONE, m->name, "%s built in %.1fs (%s)",
                       job->item->target, job->seconds, job->sha256);
    else
        kbi_event_emit(ctx, KB_EVENT_BUILD_FAILED, m->name, "%s failed: %.*s", job->item->target,
                       job->message ? (int)strcspn(job->message, "\n") : 13,
                       job->message ? job->message : "unknown error");
    report_target(ctx, job, true);
}

/* Wait until a job starts or finishes, or a tick passes. Called with the lock held. */
static void wait_for_change(build_pool *pool, size_t started, size_t finished)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += BUILD_TICK_NS;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (pool->finished == finished && pool->started == started)
        if (pthread_cond_timedwait(&pool->changed, &pool->lock, &until) != 0)
            break;
}

/* Jobs never handed out after a cancel: failed, and said so. */
static void mark_cancelled(build_pool *pool)
{
    pool->cancelled = true;
    for (size_t i = pool->next; i < pool->count; i++) {
        pool->jobs[i].rc = KB_ERR_CANCELLED;
        pool->jobs[i].message = kbi_strdup("cancelled before it started");
        pool->done[i] = true;
        pool->finished++;
    }
    pool->next = pool->count;
}

/* Run every job on min(jobs, count) threads; events and progress are reported here, on the
 * caller's thread, in order of start and of completion. */
static int run_pool(kb_ctx *ctx, const kb_manifest *m, build_job *jobs, size_t count,
                    unsigned threads)
{
    build_pool pool = {jobs,
                       count,
                       0,
                       0,
                       0,
                       false,
                       calloc(count + 1, sizeof(bool)),
                       PTHREAD_MUTEX_INITIALIZER,
                       PTHREAD_COND_INITIALIZER};
    /* per job: 0 waiting, 1 its start reported, 2 its end reported */
    unsigned char *reported = calloc(count + 1, 1);
    if (threads > count)
        threads = (unsigned)count;
    pthread_t *tids = calloc(threads + 1, sizeof(*tids));
    int oom = !pool.done || !reported || !tids;
    for (size_t i = 0; !oom && i < count; i++) {
        jobs[i].label = kbi_asprintf("%s %s", m->name, jobs[i].item->target);
        jobs[i].progress_job = kbi_progress_job_new(ctx);
        oom = !jobs[i].label;
    }
    if (oom) {
        free(pool.done);
        free(reported);
        free(tids);
        return kbi_error_oom(ctx);
    }
    for (size_t i = 0; i < count; i++)
        kbi_event_emit(ctx, KB_EVENT_BUILD_START, m->name, "%s", jobs[i].item->target);
    uint64_t overall = kbi_progress_job_new(ctx);
    bool cancel = report_overall(ctx, m, overall, 0, count) != 0;
    if (cancel)
        mark_cancelled(&pool);
    unsigned started = 0;
    for (; started < threads; started++)
        if (pthread_create(&tids[started], NULL, worker_main, &pool) != 0)
            break;
    if (started == 0) /* no thread at all: do the work here */
        worker_main(&pool);
    size_t seen = 0, starts_seen = 0;
    while (seen < count) {
        pthread_mutex_lock(&pool.lock);
        if (cancel && !pool.cancelled)
            mark_cancelled(&pool); /* under the lock: no worker takes another job */
        wait_for_change(&pool, starts_seen, seen);
        starts_seen = pool.started;
        pthread_mutex_unlock(&pool.lock);
        for (size_t i = 0; i < count; i++) {
            pthread_mutex_lock(&pool.lock);
            bool running = i < pool.next && !pool.done[i];
            bool ended = pool.done[i];
            pthread_mutex_unlock(&pool.lock);
            if (reported[i] == 0 && (running || ended)) {
                reported[i] = 1;
                cancel |= report_target(ctx, &jobs[i], false) != 0;
            } else if (reported[i] == 1 && running) {
                cancel |= report_target(ctx, &jobs[i], false) != 0; /* a tick */
            }
            if (reported[i] == 1 && ended) {
                reported[i] = 2;
                report_job(ctx, m, &jobs[i]);
                ++seen;
                cancel |= report_overall(ctx, m, overall, seen, count) != 0;
            }
        }
    }
    for (unsigned t = 0; t < started; t++)
        pthread_join(tids[t], NULL);
    if (cancel)
        kb_ctx_clear_error(ctx); /* the cancelled targets say so in their results */
    pthread_mutex_destroy(&pool.lock);
    pthread_cond_destroy(&pool.changed);
    free(pool.done);
    free(reported);
    free(tids);
    return 0;
}

static int fill_target(kb_build_target_result *t, const kb_plan_item *item, const build_job *job)
{
    t->target = kbi_strdup(item->target);
    if (item->skip) {
        t->status = KB_BUILD_SKIPPED;
        t->message = kbi_strdup(item->skip);
        return t->target && t->message ? 0 : KB_ERR_NOMEM;
    }
    t->status = job->rc ? KB_BUILD_FAILED : KB_BUILD_BUILT;
    t->seconds = job->seconds;
    t->size = job->size;
    t->sha256 = job->sha256[0] ? kbi_strdup(job->sha256) : NULL;
    t->build_key = job->build_key[0] ? kbi_strdup(job->build_key) : NULL;
    t->artifact = kbi_strdup(job->artifact);
    t->message = kbi_strdup(job->message);
    return t->target && (!job->sha256[0] || t->sha256) ? 0 : KB_ERR_NOMEM;
}

static bool needs_overlay(const kb_plan *plan, const kb_toolchain *tc)
{
    for (size_t i = 0; i < plan->count; i++) {
        const kb_plan_item *it = &plan->items[i];
        if (it->tc == tc && (tc->hip_stub || kbi_strv_contains(&tc->overlay_archs, it->arch)))
            return true;
    }
    return false;
}

/* Everything one run of the plan needs, created before the workers start. */
typedef struct build_run {
    kb_manifest *m;
    kb_toolchains tcs;           /* discovered here, unless the caller lent its own */
    const kb_toolchains *tc_set; /* &tcs, or the caller's */
    kb_plan plan;
    char source_digest[65];
    char inputs_digest[65];
    char *out_dir;
    char *work_root;
    rocm_overlay overlays[2]; /* hipcc's, hip-clang's */
    char *deps_root;
} build_run;

static void build_run_free(build_run *r)
{
    kbi_plan_free(&r->plan);
    kbi_toolchains_free(&r->tcs);
    kb_manifest_free(r->m);
    free(r->out_dir);
    free(r->work_root);
    for (size_t i = 0; i < KB_ARRAY_LEN(r->overlays); i++) {
        free(r->overlays[i].dir);
        free(r->overlays[i].error);
    }
    free(r->deps_root);
}

/* Make the overlay of each ROCm toolchain the plan uses. A failure here fails the targets
 * that need it, with this message; never a silent skip. */
static void prepare_overlays(kb_ctx *ctx, build_run *r)
{
    const kb_toolchain *tcs[] = {&r->tc_set->tc[KB_BACKEND_ROCM], &r->tc_set->hip_clang};
    for (size_t i = 0; i < KB_ARRAY_LEN(tcs); i++) {
        rocm_overlay *o = &r->overlays[i];
        o->tc = tcs[i];
        if (!needs_overlay(&r->plan, tcs[i]))
            continue;
        o->rc = kbi_rocm_overlay(ctx, &o->dir, tcs[i], kbi_config_str(ctx, "cache.dir"));
        if (o->rc) {
            o->error = kbi_strdup(kb_ctx_last_error(ctx)->message);
            kb_ctx_clear_error(ctx);
        }
    }
}

static char *default_work_root(kb_ctx *ctx, const char *work_dir, const kb_manifest *m)
{
    char ver[160];
    kbi_pkg_version(&m->version, ver, sizeof(ver));
    char *pkg = kbi_strdup(m->name);
    char *slash = pkg ? strchr(pkg, '/') : NULL;
    if (slash)
        *slash = '-';
    char *root = NULL;
    if (pkg && work_dir)
        root = kbi_asprintf("%s/%s-%s", work_dir, pkg, ver);
    else if (pkg)
        root = kbi_asprintf("%s/builds/%s-%s", kbi_config_str(ctx, "cache.dir"), pkg, ver);
    free(pkg);
    return root;
}

/* The backends a filtered build can touch: "cpu..." needs only cc. */
static unsigned needed_backends(const char *const *filters, size_t count)
{
    if (count == 0)
        return ~0u;
    unsigned mask = 0;
    for (size_t i = 0; i < count; i++)
        for (unsigned b = KB_BACKEND_CUDA; b <= KB_BACKEND_CPU; b++)
            if (kbi_str_starts(filters[i], kbi_backend_name((kb_backend)b)))
                mask |= 1u << b;
    return mask ? mask : ~0u;
}

static int prepare_run(kb_ctx *ctx, build_run *r, const char *dir, const char *const *filters,
                       size_t filter_count, const char *out_dir, const char *work_dir,
                       const kb_toolchains *lent)
{
    memset(r, 0, sizeof(*r));
    r->tc_set = lent ? lent : &r->tcs;
    int rc = kbi_manifest_load(ctx, &r->m, dir, true);
    if (!rc && !lent)
        rc = kbi_toolchains_discover_some(ctx, &r->tcs, needed_backends(filters, filter_count));
    char arch[16], os[16], level[16];
    kbi_host_platform(arch, sizeof(arch), os, sizeof(os));
    kbi_host_cpu_level(ctx, level, sizeof(level));
    kb_plan_host host = {arch, os, level};
    if (!rc)
        rc = kbi_plan_make(ctx, &r->plan, r->m, r->tc_set, &host, filters, filter_count);
    if (!rc)
        rc = kbi_source_digest(ctx, r->source_digest, r->m);
    if (!rc)
        rc = kbi_build_inputs_digest(ctx, r->inputs_digest, r->m);
    if (!rc) {
        r->out_dir = out_dir ? kbi_strdup(out_dir) : kbi_path_join(r->m->dir, "dist");
        r->work_root = default_work_root(ctx, work_dir, r->m);
        r->deps_root = kbi_path_join(kbi_config_str(ctx, "cache.dir"), "deps");
        if (!r->out_dir || !r->work_root || !r->deps_root)
            rc = kbi_error_oom(ctx);
    }
    if (!rc)
        rc = kbi_mkdir_p(ctx, r->out_dir, 0755);
    if (!rc && !r->m->license_file)
        kbi_log(ctx, KB_LOG_WARN,
                "%s: %s has no LICENSE, LICENSE.md, LICENSE.txt or COPYING: its artifacts ship "
                "without a license file%s",
                r->m->name, r->m->dir, r->m->license ? "" : " and kernel.yaml names no license");
    if (!rc)
        rc = kbi_signature_check(ctx, r->m, &r->tcs, r->work_root);
    if (!rc)
        prepare_overlays(ctx, r);
    return rc;
}

static void init_job(build_job *job, const build_run *r, const kb_plan_item *item, int64_t epoch)
{
    memset(job, 0, sizeof(*job));
    job->m = r->m;
    job->item = item;
    job->source_digest = r->source_digest;
    job->inputs_digest = r->inputs_digest;
    job->work_root = r->work_root;
    job->out_dir = r->out_dir;
    for (size_t i = 0; i < KB_ARRAY_LEN(r->overlays); i++)
        if (item->tc && r->overlays[i].tc == item->tc && (r->overlays[i].dir || r->overlays[i].rc))
            job->overlay = &r->overlays[i];
    job->deps_root = r->deps_root;
    job->epoch = epoch;
}

static int collect(kb_ctx *ctx, kb_build_result *res, const build_run *r, build_job *jobs,
                   build_job **by_item)
{
    char ver[160];
    kbi_pkg_version(&r->m->version, ver, sizeof(ver));
    res->package = kbi_strdup(r->m->name);
    res->version = kbi_strdup(ver);
    res->source_digest = kbi_strdup(r->source_digest);
    res->targets = calloc(r->plan.count + 1, sizeof(*res->targets));
    if (!res->package || !res->version || !res->source_digest || !res->targets)
        return kbi_error_oom(ctx);
    (void)jobs;
    for (size_t i = 0; i < r->plan.count; i++) {
        kb_build_target_result *t = &res->targets[res->count++];
        if (fill_target(t, &r->plan.items[i], by_item[i]))
            return kbi_error_oom(ctx);
        if (t->status == KB_BUILD_BUILT)
            res->built++;
        else if (t->status == KB_BUILD_SKIPPED)
            res->skipped++;
        else
            res->failed++;
    }
    return 0;
}

static int64_t build_epoch(const kb_ctx *ctx)
{
    /* Default 0 (config table): a fixed value, so two farms or two days give the same bytes;
     * a manifest mtime would change with every git checkout. */
    return (int64_t)kbi_config_long(ctx, "source_date_epoch");
}

static int run_plan(kb_ctx *ctx, kb_build_result *res, build_run *r, unsigned threads)
{
    size_t n = r->plan.count;
    build_job *jobs = calloc(n + 1, sizeof(*jobs));
    build_job **by_item = calloc(n + 1, sizeof(*by_item));
    if (!jobs || !by_item) {
        free(jobs);
        free(by_item);
        return kbi_error_oom(ctx);
    }
    size_t count = 0;
    int64_t epoch = build_epoch(ctx);
    for (size_t i = 0; i < n; i++) {
        const kb_plan_item *item = &r->plan.items[i];
        if (item->skip) {
            kbi_event_emit(ctx, KB_EVENT_BUILD_SKIPPED, r->m->name, "%s skipped: %s", item->target,
                           item->skip);
            continue;
        }
        init_job(&jobs[count], r, item, epoch);
        by_item[i] = &jobs[count++];
    }
    int rc = count ? run_pool(ctx, r->m, jobs, count, threads) : 0;
    if (!rc)
        rc = collect(ctx, res, r, jobs, by_item);
    for (size_t i = 0; i < count; i++) {
        free(jobs[i].message);
        free(jobs[i].artifact);
        free(jobs[i].label);
        kbi_buf_free(&jobs[i].log);
        kbi_strv_free(&jobs[i].warnings);
    }
    free(jobs);
    free(by_item);
    return rc;
}

KB_EXTERN int kb_build(kb_build_result **out, kb_ctx *ctx, const char *dir,
                       const kb_build_options *o)
{
    return kbi_build_with(ctx, out, dir, o, NULL);
}

int kbi_build_with(kb_ctx *ctx, kb_build_result **out, const char *dir, const kb_build_options *o,
                   const kb_toolchains *tcs)
{
    *out = NULL;
    if (o && o->version != KB_BUILD_OPTIONS_VERSION)
        return kbi_error_set(ctx, KB_ERR_INVALID, "kb_build: options version %u, expected %u",
                             o->version, KB_BUILD_OPTIONS_VERSION);
    build_run r;
    int rc = prepare_run(ctx, &r, dir, o ? o->targets : NULL, o ? o->target_count : 0,
                         o ? o->out_dir : NULL, o ? o->work_dir : NULL, tcs);
    kb_build_result *res = rc ? NULL : calloc(1, sizeof(*res));
    if (!rc && !res)
        rc = kbi_error_oom(ctx);
    if (!rc && !(o && o->no_source_artifact)) {
        uint64_t size = 0;
        char hex[65];
        rc = kbi_write_source_artifact(ctx, &res->source_artifact, hex, &size, r.m, r.out_dir,
                                       r.source_digest, build_epoch(ctx));
        if (!rc && !(res->source_sha256 = kbi_strdup(hex)))
            rc = kbi_error_oom(ctx);
    }
    if (!rc)
        rc = run_plan(ctx, res, &r, job_count(ctx, o));
    build_run_free(&r);
    if (rc) {
        kb_build_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

int kbi_build_target(kb_ctx *ctx, char **artifact_path, const char *package_dir,
                     const char *target_id, const char *out_dir)
{
    *artifact_path = NULL;
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    const char *filters[] = {target_id};
    o.targets = filters;
    o.target_count = 1;
    o.jobs = 1;
    o.out_dir = out_dir;
    o.no_source_artifact = 1;
    kb_build_result *res = NULL;
    int rc = kb_build(&res, ctx, package_dir, &o);
    if (rc)
        return rc;
    const kb_build_target_result *t = NULL;
    for (size_t i = 0; i < res->count && !t; i++)
        if (strcmp(res->targets[i].target, target_id) == 0)
            t = &res->targets[i];
    if (!t)
        rc = kbi_error_set(ctx, KB_ERR_TARGET, "%s is not a full target id of %s", target_id,
                           res->package);
    else if (t->status == KB_BUILD_SKIPPED)
        rc =
            kbi_error_set(ctx, KB_ERR_TOOLCHAIN, "cannot build %s here: %s", target_id, t->message);
    else if (t->status == KB_BUILD_FAILED)
        rc = kbi_error_set(ctx, KB_ERR_BUILD, "%s", t->message);
    else if (!(*artifact_path = kbi_strdup(t->artifact)))
        rc = kbi_error_oom(ctx);
    kb_build_result_free(res);
    return rc;
}

KB_EXTERN void kb_build_result_free(kb_build_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->count; i++) {
        kb_build_target_result *t = &res->targets[i];
        free(t->target);
        free(t->artifact);
        free(t->build_key);
        free(t->message);
        free(t->sha256);
    }
    free(res->targets);
    free(res->source_sha256);
    free(res->package);
    free(res->version);
    free(res->source_artifact);
    free(res->source_digest);
    free(res);
}

KB_EXTERN const char *kb_build_status_name(kb_build_status status)
{
    switch (status) {
    case KB_BUILD_BUILT:
        return "built";
    case KB_BUILD_SKIPPED:
        return "skipped";
    case KB_BUILD_FAILED:
        return "failed";
    }
    return "unknown";
}
