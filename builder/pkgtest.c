/* kb_package_test: build the package's test program per runnable target and run it. */
#include "builder/builder.h"
#include "probe/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TEST_RUN_TIMEOUT_MS (10u * 60u * 1000u)
#define TEST_TAIL_LINES 20

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* x86_64_v3 -> 3; aarch64 -> 1; unknown -> 0. */
static int cpu_rank(const char *level)
{
    if (kbi_str_starts(level, "x86_64_v"))
        return (int)strtol(level + 8, NULL, 10);
    return strcmp(level, "aarch64") == 0 ? 1 : 0;
}

/* A CUDA target runs where a probed device accepts it (the resolver's own rules). */
static char *gpu_not_runnable(const kb_plan_item *item, const kb_probe_report *probe)
{
    if (item->backend != KB_BACKEND_CUDA)
        return kbi_asprintf("%s tests need that GPU and its runtime; only CUDA and CPU tests run "
                            "here",
                            kbi_backend_name(item->backend));
    if (item->skip)
        return kbi_strdup(item->skip);
    kb_target t;
    if (kbi_target_parse(NULL, &t, item->target) != 0)
        return kbi_asprintf("cannot parse %s", item->target);
    kb_compat best = {KB_FIT_NONE, 0, "no CUDA device found"};
    for (size_t i = 0; probe && i < probe->host.device_count; i++) {
        kb_compat c;
        kbi_compat_check(&c, &t, &probe->host.devices[i], NULL);
        if (c.fit != KB_FIT_NONE)
            return NULL;
        best = c;
    }
    return kbi_asprintf("no device here runs it (%s)", best.reason);
}

/* Why this target cannot run here, or NULL when it can. */
char *kbi_pkgtest_not_runnable(const kb_plan_item *item, const char *host_level,
                               const kb_probe_report *probe)
{
    if (item->backend != KB_BACKEND_CPU)
        return gpu_not_runnable(item, probe);
    if (item->skip)
        return kbi_strdup(item->skip);
    bool x86 = kbi_str_starts(item->arch, "x86_64_v");
    if (x86 != kbi_str_starts(host_level, "x86_64_v") || cpu_rank(item->arch) == 0 ||
        cpu_rank(item->arch) > cpu_rank(host_level))
        return kbi_asprintf("this CPU is %s; %s cannot run here", host_level, item->arch);
    return NULL;
}

static char *tail_lines(const char *text, size_t n)
{
    size_t len = strlen(text), lines = 0;
    while (len && (text[len - 1] == '\n'))
        len--;
    size_t i = len;
    while (i > 0 && lines < n)
        if (text[--i] == '\n')
            lines++;
    if (text[i] == '\n')
        i++;
    return kbi_strndup(text + i, len - i);
}

char *kbi_test_output_excerpt(const char *text, size_t n)
{
    char *tail = tail_lines(text, n);
    if (!tail)
        return NULL;
    size_t len = strlen(text); /* the tail ends where tail_lines trimmed the newlines */
    while (len && text[len - 1] == '\n')
        len--;
    size_t tail_at = len - strlen(tail);
    kb_buf out = KB_BUF_INIT;
    size_t found = 0;
    for (const char *line = text; line < text + tail_at && found < 10;) {
        const char *end = strchr(line, '\n');
        size_t ll = end ? (size_t)(end - line) : strlen(line);
        if (line + ll > text + tail_at)
            ll = (size_t)(text + tail_at - line);
        bool fail = false;
        for (size_t k = 0; k + 4 <= ll && !fail; k++)
            fail = memcmp(line + k, "FAIL", 4) == 0;
        if (fail) {
            kbi_buf_append(&out, line, ll);
            kbi_buf_append(&out, "\n", 1);
            found++;
        }
        line += ll + (end ? 1 : 0);
    }
    if (found)
        kbi_buf_append(&out, "[...]\n", 6);
    kbi_buf_append(&out, tail, strlen(tail));
    free(tail);
    return kbi_buf_detach(&out);
}

/* The test program: check.c and the CPU sources (the reference, with their own flags),
 * compiled with the target's flags, so the test sees the defines, include folders and flags
 * the package's build uses (KBPKG_NAME among them). CUDA: the package library is built for
 * the target and linked, and the test uses device memory (-DKBPKG_CHECK_CUDA, docs/kernels.md). */
int kbi_pkgtest_build_program(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                              const char *work, const char *program, const char *exe,
                              kb_buf *output)
{
    char *deps = kbi_path_join(kbi_config_str(ctx, "cache.dir"), "deps");
    kb_compile_env env = {work, NULL, deps};
    kb_strv extra = KB_STRV_INIT, link_extra = KB_STRV_INIT, objects = KB_STRV_INIT;
    int rc = deps ? 0 : kbi_error_oom(ctx);
    if (!rc && item->backend == KB_BACKEND_CUDA) {
        char name[64];
        kbi_lib_name(m->name, name, sizeof(name));
        char *lib = kbi_asprintf("%s/lib%s.so", work, name);
        rc = lib ? kbi_compile_target(ctx, m, item, &env, lib, output) : kbi_error_oom(ctx);
        free(lib);
        kbi_strv_push(&extra, "-DKBPKG_CHECK_CUDA");
        kbi_strv_push(&extra, "-DKBPKG_REFERENCE_ONLY");
        kbi_strv_push_owned(&link_extra, kbi_asprintf("-L%s", work));
        kbi_strv_push_owned(&link_extra, kbi_asprintf("-l%s", name));
        kbi_strv_push_owned(&link_extra, kbi_asprintf("-Xlinker=-rpath,%s", work));
        kbi_strv_free(&objects); /* the library's objects are not the test's */
    }
    char *check_obj = kbi_asprintf("%s/obj/%s.o", work, program == m->test ? "check" : "bench");
    if (!rc)
        rc = check_obj
                 ? kbi_compile_file(ctx, m, item, &env, program, NULL, &extra, check_obj, output)
                 : kbi_error_oom(ctx);
    if (!rc && kbi_strv_push(&objects, check_obj))
        rc = kbi_error_oom(ctx);
    const kb_backend_spec *cpu = &m->backends[KB_BACKEND_CPU];
    for (size_t i = 0; !rc && i < cpu->source_count; i++) {
        char *obj = kbi_asprintf("%s/obj/ref-%02zu.o", work, i);
        rc = obj ? kbi_compile_file(ctx, m, item, &env, cpu->sources[i].path,
                                    &cpu->sources[i].flags, &extra, obj, output)
                 : kbi_error_oom(ctx);
        if (!rc && kbi_strv_push_owned(&objects, obj))
            rc = kbi_error_oom(ctx);
        else if (rc)
            free(obj);
    }
    if (!rc)
        rc = kbi_link(ctx, m, item, &env, &objects, &link_extra, exe, true, output);
    if (rc)
        kbi_error_prefix(ctx, "building %s", program);
    free(check_obj);
    free(deps);
    kbi_strv_free(&extra);
    kbi_strv_free(&link_extra);
    kbi_strv_free(&objects);
    return rc;
}

static void run_one(kb_ctx *ctx, kb_test_target_result *t, const kb_manifest *m,
                    const kb_plan_item *item, const char *work_root)
{
    double start = now_s();
    char *work = kbi_path_join(work_root, item->target);
    char *exe = work ? kbi_path_join(work, "check") : NULL;
    kb_buf output = KB_BUF_INIT;
    int rc = exe ? kbi_mkdir_p(ctx, work, 0755) : kbi_error_oom(ctx);
    if (!rc)
        rc = kbi_pkgtest_build_program(ctx, m, item, work, m->test, exe, &output);
    if (!rc) {
        const char *argv[] = {exe, NULL};
        kb_proc_result r;
        kbi_buf_reset(&output);
        rc = kbi_proc_run(ctx, &r, argv, m->dir, TEST_RUN_TIMEOUT_MS);
        if (!rc) {
            t->output = kbi_strdup(r.output.data);
            if (r.exit_code != 0) {
                char *tail = kbi_test_output_excerpt(r.output.data, TEST_TAIL_LINES);
                rc = r.timed_out ? kbi_error_set(ctx, KB_ERR_TIMEOUT, "%s: the test timed out",
                                                 item->target)
                                 : kbi_error_set(ctx, KB_ERR_BUILD, "%s: the test exited %d%s:\n%s",
                                                 item->target, r.exit_code,
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

int kbi_pkgtest_plan(kb_ctx *ctx, kb_manifest **m, kb_toolchains *tcs, kb_plan *plan,
                     const char *dir, const char *const *targets, size_t count, char *level,
                     size_t level_size, kb_probe_report *probe, bool bench)
{
    char arch[16], os[16];
    kbi_host_platform(arch, sizeof(arch), os, sizeof(os));
    kbi_host_cpu_level(ctx, level, level_size);
    kb_plan_host host = {arch, os, level};
    int rc = kbi_manifest_load(ctx, m, dir, true);
    if (!rc && !bench && !(*m)->test)
        rc = kbi_error_set_path(ctx, KB_ERR_MANIFEST, (*m)->path, 0, 0,
                                "%s declares no test (add `test: tests/check.c`)", (*m)->name);
    if (!rc && bench && !(*m)->bench)
        rc =
            kbi_error_set_path(ctx, KB_ERR_MANIFEST, (*m)->path, 0, 0,
                               "%s declares no benchmark (add `bench: tests/bench.c`)", (*m)->name);
    if (!rc)
        rc = kbi_toolchains_discover_some(ctx, tcs,
                                          (1u << KB_BACKEND_CPU) | (1u << KB_BACKEND_CUDA));
    if (!rc)
        rc = kbi_probe_run(ctx, probe);
    if (!rc)
        rc = kbi_plan_make(ctx, plan, *m, tcs, &host, targets, count);
    return rc;
}

KB_EXTERN int kb_package_test(kb_test_result **out, kb_ctx *ctx, const char *dir,
                              const char *const *targets, size_t target_count)
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
                              sizeof(level), &probe, false);
    kb_test_result *res = rc ? NULL : calloc(1, sizeof(*res));
    if (res)
        res->targets = calloc(plan.count + 1, sizeof(*res->targets));
    if (!rc && (!res || !res->targets))
        rc = kbi_error_oom(ctx);
    char *work_root = NULL;
    if (!rc) {
        work_root = kbi_asprintf("%s/builds/tests/%s", kbi_config_str(ctx, "cache.dir"), m->name);
        rc = work_root ? 0 : kbi_error_oom(ctx);
    }
    for (size_t i = 0; !rc && i < plan.count; i++) {
        const kb_plan_item *item = &plan.items[i];
        kb_test_target_result *t = &res->targets[res->count++];
        t->target = kbi_strdup(item->target);
        char *why = kbi_pkgtest_not_runnable(item, level, &probe);
        if (why) {
            t->status = KB_BUILD_SKIPPED;
            t->message = why;
            res->skipped++;
            kbi_event_emit(ctx, KB_EVENT_BUILD_SKIPPED, m->name, "test %s skipped: %s",
                           item->target, why);
            continue;
        }
        kbi_event_emit(ctx, KB_EVENT_BUILD_START, m->name, "test %s", item->target);
        run_one(ctx, t, m, item, work_root);
        if (t->status == KB_BUILD_BUILT)
            res->passed++;
        else
            res->failed++;
        kbi_event_emit(ctx,
                       t->status == KB_BUILD_BUILT ? KB_EVENT_BUILD_DONE : KB_EVENT_BUILD_FAILED,
                       m->name, "test %s %s (%.1fs)", item->target,
                       t->status == KB_BUILD_BUILT ? "passed" : "failed", t->seconds);
    }
    free(work_root);
    kbi_probe_report_free(&probe);
    kbi_plan_free(&plan);
    kbi_toolchains_free(&tcs);
    kb_manifest_free(m);
    if (rc) {
        kb_test_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

KB_EXTERN void kb_test_result_free(kb_test_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->count; i++) {
        free(res->targets[i].target);
        free(res->targets[i].message);
        free(res->targets[i].output);
    }
    free(res->targets);
    free(res);
}
