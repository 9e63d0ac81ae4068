/* The per-target loop of kb_package_test and kb_package_bench: plan, skip, build, run. */
#include "builder/builder.h"
#include "probe/probe.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUN_TIMEOUT_MS (10u * 60u * 1000u)
#define TAIL_LINES 20
/* GPU clock samples while a benchmark runs: often enough for a run of a second, cheap. */
#define CLOCK_INTERVAL_MS 25u

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The probed device a GPU target runs on: the first one it fits (the resolver's rules); NULL
 * for CPU targets or when none fits. */
static const kb_device *run_device(const kb_plan_item *item, const kb_probe_report *probe)
{
    kb_target t;
    if (item->backend == KB_BACKEND_CPU || kbi_target_parse(NULL, &t, item->target) != 0)
        return NULL;
    for (size_t i = 0; i < probe->host.device_count; i++) {
        kb_compat c;
        kbi_compat_check(&c, &t, &probe->host.devices[i], NULL);
        if (c.fit != KB_FIT_NONE)
            return &probe->host.devices[i];
    }
    return NULL;
}

/* The device a runnable target ran on, as JSON text: the GPU dev (run_device) with the clocks
 * sampled during the run (CUDA; none on ROCm, docs/bench.md), or this CPU with its
 * /proc/cpuinfo model and clock. */
static char *device_json(kb_ctx *ctx, const kb_plan_item *item, const kb_device *dev,
                         const char *level, const kb_probe_report *probe,
                         const kbi_clock_summary *clocks)
{
    json_t *d = NULL;
    if (item->backend == KB_BACKEND_CPU) {
        char model[256];
        double mhz;
        kbi_cpu_model(model, sizeof(model), &mhz, kbi_config_str(ctx, "probe.cpuinfo"));
        d = json_pack("{s:s, s:s, s:s, s:n, s:o, s:n}", "backend", "cpu", "name",
                      *model ? model : "unknown CPU", "arch", level, "driver", "clock_mhz",
                      mhz > 0 ? json_real(mhz) : json_null(), "memory_bytes");
    } else if (dev) {
        d = json_pack("{s:s, s:s, s:s, s:s?, s:n, s:I}", "backend", kbi_backend_name(dev->backend),
                      "name", *dev->name ? dev->name : dev->arch, "arch", dev->arch, "driver",
                      dev->backend == KB_BACKEND_CUDA   ? probe->cuda_driver
                      : dev->backend == KB_BACKEND_ROCM ? probe->hip_runtime
                                                        : NULL,
                      "clock_mhz", "memory_bytes", (json_int_t)dev->memory_bytes);
        if (d && dev->backend == KB_BACKEND_CUDA && kbi_clock_summary_json(d, clocks) != 0) {
            json_decref(d);
            d = NULL;
        }
    }
    char *text = d ? json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(d);
    return text;
}

/* The program, with the GPU's clocks sampled while it runs when gpu is set (benchmarks on
 * CUDA devices): the thread starts before the child and stops when it exits. */
static int run_program(kb_ctx *ctx, kb_proc_result *r, const char *const *argv, const char *dir,
                       const kb_device *gpu, kbi_clock_summary *clocks)
{
    kbi_clock_sampler *sampler =
        gpu ? kbi_clock_sampler_start(kbi_config_str(ctx, "probe.nvml_lib"), gpu, CLOCK_INTERVAL_MS)
            : NULL;
    int rc = kbi_proc_run(ctx, r, argv, dir, RUN_TIMEOUT_MS);
    if (gpu)
        kbi_clock_sampler_stop(sampler, clocks);
    return rc;
}

static void run_one(kb_ctx *ctx, kbi_pkgrun_row *t, const kb_manifest *m, const kb_plan_item *item,
                    const char *work_root, const char *libdir, const kbi_pkgrun *how,
                    const kb_device *gpu, kbi_clock_summary *clocks)
{
    double start = now_s();
    const char *what = how->bench ? "benchmark" : "test";
    char *work = kbi_path_join(work_root, item->target);
    char *exe = work ? kbi_path_join(work, how->bench ? "bench" : "check") : NULL;
    kb_buf output = KB_BUF_INIT;
    int rc = exe ? kbi_mkdir_p(ctx, work, 0755) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_pkgtest_build_program(ctx, m, item, work, how->bench ? m->bench : m->test, libdir,
                                       exe, &output);
    if (!rc) {
        bool quick = how->bench && (how->flags & KB_BENCH_QUICK);
        const char *argv[] = {exe, quick ? "--quick" : NULL, NULL};
        kb_proc_result r;
        rc = run_program(ctx, &r, argv, m->dir, gpu, clocks);
        if (!rc) {
            t->output = kbi_strdup(r.output.data);
            if (r.exit_code != 0) {
                char *tail = kbi_test_output_excerpt(r.output.data, TAIL_LINES);
                rc = r.timed_out ? kbi_error_set(ctx, KB_ERR_TIMEOUT, "%s: the %s timed out",
                                                 item->target, what)
                                 : kbi_error_set(ctx, KB_ERR_BUILD, "%s: the %s exited %d%s:\n%s",
                                                 item->target, what, r.exit_code,
                                                 r.signal ? " (signal)" : "", tail ? tail : "");
                free(tail);
            }
            kbi_proc_result_free(&r);
        }
    }
    t->status = rc ? KB_BUILD_FAILED : KB_BUILD_BUILT;
    if (rc)
        t->message = kbi_strdup(kb_ctx_last_error(ctx)->message);
    kb_ctx_clear_error(ctx);
    t->seconds = now_s() - start;
    kbi_buf_free(&output);
    free(work);
    free(exe);
}

/* The installed folder given for target, or NULL (libdirs unset, or no such target). */
static const char *libdir_for(const char *target, const char *const *targets, size_t count,
                              const char *const *libdirs)
{
    for (size_t i = 0; libdirs && i < count; i++)
        if (strcmp(targets[i], target) == 0)
            return libdirs[i];
    return NULL;
}

int kbi_pkgrun_targets(kbi_pkgrun_row **rows, size_t *row_count, kb_manifest **m_out, kb_ctx *ctx,
                       const char *dir, const char *const *targets, size_t count,
                       const kbi_pkgrun *how)
{
    *rows = NULL;
    *row_count = 0;
    kb_manifest *m = NULL;
    kb_toolchains tcs;
    memset(&tcs, 0, sizeof(tcs));
    kb_plan plan = {0};
    char level[16];
    kb_probe_report probe;
    memset(&probe, 0, sizeof(probe));
    int rc = kbi_pkgtest_plan(ctx, &m, &tcs, &plan, dir, targets, count, level, sizeof(level),
                              &probe, how->bench);
    kbi_pkgrun_row *out = rc ? NULL : calloc(plan.count + 1, sizeof(*out));
    size_t n = 0;
    if (!rc && !out)
        rc = kbi_error_oom(ctx);
    const char *verb = how->bench ? "bench" : "test";
    char *work_root = NULL;
    if (!rc) {
        work_root = kbi_asprintf("%s/builds/%s/%s", kbi_config_str(ctx, "cache.dir"),
                                 how->bench ? "bench" : "tests", m->name);
        rc = work_root ? 0 : kbi_error_oom(ctx);
    }
    for (size_t i = 0; !rc && i < plan.count; i++) {
        const kb_plan_item *item = &plan.items[i];
        const char *libdir = libdir_for(item->target, targets, count, how->libdirs);
        if (how->libdirs && !libdir)
            continue; /* only the installed targets run */
        kbi_pkgrun_row *t = &out[n++];
        t->target = kbi_strdup(item->target);
        char *why = kbi_pkgtest_not_runnable(item, level, &probe);
        if (why) {
            t->status = KB_BUILD_SKIPPED;
            t->message = why;
            kbi_event_emit(ctx, KB_EVENT_BUILD_SKIPPED, m->name, "%s %s skipped: %s", verb,
                           item->target, why);
            continue;
        }
        kbi_event_emit(ctx, KB_EVENT_BUILD_START, m->name, "%s %s", verb, item->target);
        kbi_clock_summary clocks;
        memset(&clocks, 0, sizeof(clocks));
        const kb_device *dev = how->bench ? run_device(item, &probe) : NULL;
        /* NVML is NVIDIA's; ROCm targets do not run here anyway */
        const kb_device *gpu = dev && dev->backend == KB_BACKEND_CUDA ? dev : NULL;
        run_one(ctx, t, m, item, work_root, libdir, how, gpu, &clocks);
        if (how->bench && t->status == KB_BUILD_BUILT)
            t->device = device_json(ctx, item, dev, level, &probe, &clocks);
        bool ok = t->status == KB_BUILD_BUILT;
        kbi_event_emit(ctx, ok ? KB_EVENT_BUILD_DONE : KB_EVENT_BUILD_FAILED, m->name,
                       "%s %s %s (%.1fs)", verb, item->target,
                       ok ? (how->bench ? "ran" : "passed") : "failed", t->seconds);
    }
    free(work_root);
    kbi_probe_report_free(&probe);
    kbi_plan_free(&plan);
    kbi_toolchains_free(&tcs);
    if (rc) {
        kbi_pkgrun_rows_free(out, n);
        kb_manifest_free(m);
        return rc;
    }
    *rows = out;
    *row_count = n;
    if (m_out)
        *m_out = m;
    else
        kb_manifest_free(m);
    return 0;
}

void kbi_pkgrun_rows_free(kbi_pkgrun_row *rows, size_t count)
{
    for (size_t i = 0; rows && i < count; i++) {
        free(rows[i].target);
        free(rows[i].message);
        free(rows[i].output);
        free(rows[i].device);
    }
    free(rows);
}
