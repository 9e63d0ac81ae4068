/* kbpkg bench [DIR] [--target T]... [--quick] [--json]: the package benchmark per runnable target.
 */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bench_status(kb_build_status s)
{
    return s == KB_BUILD_BUILT ? "ran" : s == KB_BUILD_SKIPPED ? "skipped" : "failed";
}

/* One case as a table row: shape, time, rate, and the baseline's rate and ratio. */
static void print_case(json_t *c)
{
    const char *unit = json_object_get(c, "tflops") ? "tflops" : "gbps";
    double rate = json_number_value(json_object_get(c, unit));
    json_t *base = json_object_get(c, "baseline");
    printf("    %-24s %-16s %10.3f ms %9.2f %s", json_string_value(json_object_get(c, "case")),
           json_string_value(json_object_get(c, "shape"))
               ? json_string_value(json_object_get(c, "shape"))
               : "",
           json_number_value(json_object_get(c, "seconds")) * 1e3, rate,
           unit[0] == 't' ? "TFLOP/s" : "GB/s");
    if (json_is_object(base)) {
        double brate = json_number_value(json_object_get(base, unit));
        printf("   %s %.3g (%.2fx)", json_string_value(json_object_get(base, "name")), brate,
               brate > 0 ? rate / brate : 0.0);
    } else {
        const char *note = json_string_value(json_object_get(c, "baseline_note"));
        printf("   no baseline%s%s", note ? ": " : "", note ? note : "");
    }
    printf("\n");
}

static void print_result(cli *c, const kb_bench_result *r)
{
    if (c->json) {
        json_t *a = json_array();
        for (size_t i = 0; i < r->count; i++) {
            const kb_bench_target_result *t = &r->targets[i];
            json_t *cases = t->cases ? json_loads(t->cases, 0, NULL) : NULL;
            json_array_append_new(a, json_pack("{s:s, s:s, s:f, s:s?, s:o?}", "target", t->target,
                                               "status", bench_status(t->status), "seconds",
                                               t->seconds, "message", t->message, "cases", cases));
        }
        cli_json_print(json_pack("{s:o, s:i, s:i, s:i}", "targets", a, "ran", (int)r->ran,
                                 "skipped", (int)r->skipped, "failed", (int)r->failed));
        return;
    }
    if (c->quiet)
        return;
    printf("%zu ran, %zu skipped, %zu failed\n", r->ran, r->skipped, r->failed);
    for (size_t i = 0; i < r->count; i++) {
        const kb_bench_target_result *t = &r->targets[i];
        printf("  %-34s %-8s %s\n", t->target, bench_status(t->status),
               t->status == KB_BUILD_BUILT ? "" : (t->message ? t->message : ""));
        json_t *cases = t->cases ? json_loads(t->cases, 0, NULL) : NULL;
        for (size_t k = 0; k < json_array_size(cases); k++)
            print_case(json_array_get(cases, k));
        json_decref(cases);
    }
}

const cli_option cli_bench_options[] = {
    CLI_OPTION_GROUP(cli_target_filter_options),
    {'q', "quick", false, NULL, "small sizes (CI); the program's own --quick"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_bench(cli *c, int argc, char **argv)
{
    const char *dir = NULL;
    const char **targets = calloc((size_t)argc + 1, sizeof(*targets));
    size_t n = 0;
    unsigned flags = 0;
    int rc = targets ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_bench_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            targets[n++] = optarg;
        else if (opt == 'q')
            flags |= KB_BENCH_QUICK;
        else
            rc = cli_option_error(c, "bench", opt, g.longs, argv);
    }
    if (!rc && optind < argc)
        dir = argv[optind];
    if (!rc && optind + 1 < argc)
        rc = cli_usage_error(c, "bench", "one package folder only, got '%s' and '%s'", argv[optind],
                             argv[optind + 1]);
    kb_bench_result *r = NULL;
    if (!rc) {
        int err = kb_fetch_inputs(NULL, c->ctx, dir ? dir : ".");
        if (!err)
            err = kb_package_bench(&r, c->ctx, dir ? dir : ".", targets, n, flags);
        rc = err ? cli_fail(c, err) : 0;
    }
    if (r) {
        print_result(c, r);
        rc = r->failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        kb_bench_result_free(r);
    }
    free(targets);
    return rc;
}
