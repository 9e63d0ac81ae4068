/* kb_package_test: build the package's test program per runnable target and run it. */
#include "builder/builder.h"
#include "probe/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
 * the target and linked, and the test uses device memory (-DKBPKG_CHECK_CUDA, docs/kernels.md).
 * An installed artifact (libdir) is linked as it is, whatever the backend, and its header
 * comes first on the include path. */
int kbi_pkgtest_build_program(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                              const char *work, const char *program, const char *libdir,
                              const char *exe, kb_buf *output)
{
    char *deps = kbi_path_join(kbi_config_str(ctx, "cache.dir"), "deps");
    kb_compile_env env = {work, NULL, deps};
    kb_strv extra = KB_STRV_INIT, link_extra = KB_STRV_INIT, objects = KB_STRV_INIT;
    int rc = deps ? 0 : kbi_error_oom(ctx);
    char name[64];
    kbi_lib_name(m->name, name, sizeof(name));
    bool cuda = item->backend == KB_BACKEND_CUDA;
    char *lib_dir = libdir ? kbi_path_join(libdir, "lib") : kbi_strdup(work);
    rc = rc ? rc : lib_dir ? 0 : kbi_error_oom(ctx);
    if (!rc && !libdir && cuda) {
        char *lib = kbi_asprintf("%s/lib%s.so", work, name);
        rc = lib ? kbi_compile_target(ctx, m, item, &env, lib, output) : kbi_error_oom(ctx);
        free(lib);
    }
    if (!rc && (cuda || libdir)) {
        if (cuda)
            kbi_strv_push(&extra, "-DKBPKG_CHECK_CUDA");
        kbi_strv_push(&extra, "-DKBPKG_REFERENCE_ONLY");
        if (libdir)
            kbi_strv_push_owned(&extra, kbi_asprintf("-I%s/include", libdir));
        kbi_strv_push_owned(&link_extra, kbi_asprintf("-L%s", lib_dir));
        kbi_strv_push_owned(&link_extra, kbi_asprintf("-l%s", name));
        kbi_strv_push_owned(&link_extra,
                            kbi_asprintf(cuda ? "-Xlinker=-rpath,%s" : "-Wl,-rpath,%s", lib_dir));
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
    free(lib_dir);
    free(check_obj);
    free(deps);
    kbi_strv_free(&extra);
    kbi_strv_free(&link_extra);
    kbi_strv_free(&objects);
    return rc;
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
    kbi_pkgrun_row *rows = NULL;
    size_t n = 0;
    kbi_pkgrun how = {false, 0, NULL};
    int rc = kbi_pkgrun_targets(&rows, &n, NULL, ctx, dir, targets, target_count, &how);
    kb_test_result *res = rc ? NULL : calloc(1, sizeof(*res));
    if (res)
        res->targets = calloc(n + 1, sizeof(*res->targets));
    if (!rc && (!res || !res->targets))
        rc = kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < n; i++) {
        kb_test_target_result *t = &res->targets[res->count++];
        t->target = rows[i].target, t->status = rows[i].status, t->message = rows[i].message;
        t->seconds = rows[i].seconds, t->output = rows[i].output;
        rows[i].target = rows[i].message = rows[i].output = NULL;
        res->passed += t->status == KB_BUILD_BUILT;
        res->skipped += t->status == KB_BUILD_SKIPPED;
        res->failed += t->status == KB_BUILD_FAILED;
    }
    kbi_pkgrun_rows_free(rows, n);
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
