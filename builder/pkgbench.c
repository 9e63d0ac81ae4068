/* kb_package_bench: build the package's benchmark per runnable target, run it, collect its cases.
 */
#include "builder/builder.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BENCH_RUN_TIMEOUT_MS (10u * 60u * 1000u)

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The program's output holds one JSON object per case on its own line (docs/kernels.md); other
 * lines (the check header's prints, stderr) are not cases. A line that opens with '{' but is
 * not an object with a "case" string is an error: the contract is broken, not half-kept. */
static int collect_cases(kb_ctx *ctx, char **out, const char *output, const char *target)
{
    json_t *cases = json_array();
    int rc = cases ? 0 : kbi_error_oom(ctx);
    for (const char *line = output; !rc && line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len && line[0] == '{') {
            json_error_t jerr;
            json_t *o = json_loadb(line, len, 0, &jerr);
            if (!json_is_object(o) || !json_is_string(json_object_get(o, "case")) ||
                !json_is_number(json_object_get(o, "seconds")))
                rc = kbi_error_set(ctx, KB_ERR_BUILD,
                                   "%s: the benchmark printed a line that is not a case "
                                   "(docs/kernels.md): %.*s",
                                   target, (int)(len > 200 ? 200 : len), line);
            else
                json_array_append(cases, o);
            json_decref(o);
        }
        line = end ? end + 1 : NULL;
    }
    if (!rc && json_array_size(cases) == 0)
        rc = kbi_error_set(ctx, KB_ERR_BUILD, "%s: the benchmark printed no case", target);
    if (!rc) {
        *out = json_dumps(cases, JSON_COMPACT);
        rc = *out ? 0 : kbi_error_oom(ctx);
    }
    json_decref(cases);
    return rc;
}

static void run_one(kb_ctx *ctx, kb_bench_target_result *t, const kb_manifest *m,
                    const kb_plan_item *item, const char *work_root, unsigned flags)
{
    double start = now_s();
    char *work = kbi_path_join(work_root, item->target);
    char *exe = work ? kbi_path_join(work, "bench") : NULL;
    kb_buf output = KB_BUF_INIT;
    int rc = exe ? kbi_mkdir_p(ctx, work, 0755) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_pkgtest_build_program(ctx, m, item, work, m->bench, exe, &output);
    if (!rc) {
        const char *argv[] = {exe, (flags & KB_BENCH_QUICK) ? "--quick" : NULL, NULL};
        kb_proc_result r;
        rc = kbi_proc_run(ctx, &r, argv, m->dir, BENCH_RUN_TIMEOUT_MS);
        if (!rc) {
            if (r.exit_code != 0) {
                char *tail = kbi_test_output_excerpt(r.output.data, 20);
                rc = r.timed_out
                         ? kbi_error_set(ctx, KB_ERR_TIMEOUT, "%s: the benchmark timed out",
                                         item->target)
                         : kbi_error_set(ctx, KB_ERR_BUILD, "%s: the benchmark exited %d:\n%s",
                                         item->target, r.exit_code, tail ? tail : "");
                free(tail);
            } else {
                rc = collect_cases(ctx, &t->cases, r.output.data, item->target);
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

KB_EXTERN int kb_package_bench(kb_bench_result **out, kb_ctx *ctx, const char *dir,
                               const char *const *targets, size_t target_count, unsigned flags)
{
    *out = NULL;
    kb_manifest *m = NULL;
    kb_toolchains tcs;
    memset(&tcs, 0, sizeof(tcs));
    kb_plan plan = {0};
    char level[16];
    kb_probe_report probe;
    memset(&probe, 0, sizeof(probe));
    int rc = kbi_pkgtest_plan(ctx, &m, &tcs, &plan, dir, targets, target_count, level,
                              sizeof(level), &probe, true);
    kb_bench_result *res = rc ? NULL : calloc(1, sizeof(*res));
    if (res)
        res->targets = calloc(plan.count + 1, sizeof(*res->targets));
    if (!rc && (!res || !res->targets))
        rc = kbi_error_oom(ctx);
    char *work_root = NULL;
    if (!rc) {
        work_root = kbi_asprintf("%s/builds/bench/%s", kbi_config_str(ctx, "cache.dir"), m->name);
        rc = work_root ? 0 : kbi_error_oom(ctx);
    }
    for (size_t i = 0; !rc && i < plan.count; i++) {
        const kb_plan_item *item = &plan.items[i];
        kb_bench_target_result *t = &res->targets[res->count++];
        t->target = kbi_strdup(item->target);
        char *why = kbi_pkgtest_not_runnable(item, level, &probe);
        if (why) {
            t->status = KB_BUILD_SKIPPED;
            t->message = why;
            res->skipped++;
            kbi_event_emit(ctx, KB_EVENT_BUILD_SKIPPED, m->name, "bench %s skipped: %s",
                           item->target, why);
            continue;
        }
        kbi_event_emit(ctx, KB_EVENT_BUILD_START, m->name, "bench %s", item->target);
        run_one(ctx, t, m, item, work_root, flags);
        if (t->status == KB_BUILD_BUILT)
            res->ran++;
        else
            res->failed++;
        kbi_event_emit(ctx,
                       t->status == KB_BUILD_BUILT ? KB_EVENT_BUILD_DONE : KB_EVENT_BUILD_FAILED,
                       m->name, "bench %s %s (%.1fs)", item->target,
                       t->status == KB_BUILD_BUILT ? "ran" : "failed", t->seconds);
    }
    free(work_root);
    kbi_probe_report_free(&probe);
    kbi_plan_free(&plan);
    kbi_toolchains_free(&tcs);
    kb_manifest_free(m);
    if (rc) {
        kb_bench_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

KB_EXTERN void kb_bench_result_free(kb_bench_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->count; i++) {
        free(res->targets[i].target);
        free(res->targets[i].message);
        free(res->targets[i].cases);
    }
    free(res->targets);
    free(res);
}
