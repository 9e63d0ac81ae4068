/* kb_package_bench: the package's benchmark per runnable target (builder/pkgrun.c), its cases. */
#include "builder/builder.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

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

int kbi_package_bench_run(kb_bench_result **out, kb_ctx *ctx, const char *dir,
                          const char *const *targets, size_t count, unsigned flags,
                          const char *const *libdirs)
{
    *out = NULL;
    kbi_pkgrun_row *rows = NULL;
    size_t n = 0;
    kb_manifest *m = NULL;
    kbi_pkgrun how = {true, flags, libdirs};
    int rc = kbi_pkgrun_targets(&rows, &n, &m, ctx, dir, targets, count, &how);
    kb_bench_result *res = rc ? NULL : calloc(1, sizeof(*res));
    if (res) {
        res->targets = calloc(n + 1, sizeof(*res->targets));
        res->name = kbi_strdup(m->name);
        res->version = kbi_strdup(m->version_text);
    }
    if (!rc && (!res || !res->targets || !res->name || !res->version))
        rc = kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < n; i++) {
        kb_bench_target_result *t = &res->targets[res->count++];
        kbi_pkgrun_row *row = &rows[i];
        t->target = row->target, t->status = row->status, t->message = row->message;
        t->seconds = row->seconds, t->device = row->device;
        row->target = row->message = row->device = NULL;
        /* a program that exits 0 but breaks the output contract fails its target */
        if (t->status == KB_BUILD_BUILT &&
            collect_cases(ctx, &t->cases, row->output ? row->output : "", t->target) != 0) {
            t->status = KB_BUILD_FAILED;
            t->message = kbi_strdup(kb_ctx_last_error(ctx)->message);
            kb_ctx_clear_error(ctx);
        }
        res->ran += t->status == KB_BUILD_BUILT;
        res->skipped += t->status == KB_BUILD_SKIPPED;
        res->failed += t->status == KB_BUILD_FAILED;
    }
    kbi_pkgrun_rows_free(rows, n);
    kb_manifest_free(m);
    if (rc) {
        kb_bench_result_free(res);
        return rc;
    }
    *out = res;
    return 0;
}

KB_EXTERN int kb_package_bench(kb_bench_result **out, kb_ctx *ctx, const char *dir,
                               const char *const *targets, size_t target_count, unsigned flags)
{
    return kbi_package_bench_run(out, ctx, dir, targets, target_count, flags, NULL);
}

/* The clock part of a device line: sampled GPU clocks, the CPU's clock, or why none. */
static void clock_text(kb_buf *b, json_t *d)
{
    json_t *samples = json_object_get(d, "clock_samples");
    double mhz = json_number_value(json_object_get(d, "clock_mhz"));
    if (json_is_integer(samples)) {
        kbi_buf_printf(b, ", SM %.0f MHz median of %lld sample%s", mhz,
                       (long long)json_integer_value(samples),
                       json_integer_value(samples) == 1 ? "" : "s");
        if (json_is_number(json_object_get(d, "mem_clock_mhz")))
            kbi_buf_printf(b, ", mem %.0f MHz",
                           json_number_value(json_object_get(d, "mem_clock_mhz")));
    } else if (json_is_number(json_object_get(d, "clock_mhz"))) {
        kbi_buf_printf(b, ", %.0f MHz", mhz);
    } else if (json_is_string(json_object_get(d, "clock_note"))) {
        kbi_buf_printf(b, ", clocks unknown: %s",
                       json_string_value(json_object_get(d, "clock_note")));
    }
}

KB_EXTERN char *kb_bench_device_text(const char *device_json)
{
    json_t *d = device_json ? json_loads(device_json, 0, NULL) : NULL;
    if (!json_is_object(d)) {
        json_decref(d);
        return NULL;
    }
    const char *name = json_string_value(json_object_get(d, "name"));
    const char *arch = json_string_value(json_object_get(d, "arch"));
    const char *api = json_string_value(json_object_get(d, "driver"));
    const char *driver = json_string_value(json_object_get(d, "driver_version"));
    kb_buf b = KB_BUF_INIT;
    kbi_buf_printf(&b, "%s (%s", name ? name : "unknown device", arch ? arch : "?");
    /* NVML's driver version is what users compare; the CUDA driver API version follows it */
    if (driver)
        kbi_buf_printf(&b, ", driver %s%s%s", driver, api ? ", CUDA " : "", api ? api : "");
    else if (api)
        kbi_buf_printf(&b, ", driver %s", api);
    clock_text(&b, d);
    kbi_buf_puts(&b, ")");
    json_decref(d);
    if (kbi_buf_grow(&b, 0)) {
        kbi_buf_free(&b);
        return NULL;
    }
    return kbi_buf_detach(&b);
}

KB_EXTERN void kb_bench_result_free(kb_bench_result *res)
{
    if (!res)
        return;
    for (size_t i = 0; i < res->count; i++) {
        free(res->targets[i].target);
        free(res->targets[i].message);
        free(res->targets[i].cases);
        free(res->targets[i].device);
    }
    free(res->targets);
    free(res->name);
    free(res->version);
    free(res->registry);
    free(res);
}
