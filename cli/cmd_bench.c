/* kbpkg bench [DIR | org/name[@v]] [--target T]... [--quick] [--publish] [--json]: the package
 * benchmark per runnable target, of a package folder or of the installed artifacts. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* "on NVIDIA H200 (sm_90, driver 580.159.04, ...)": kb_bench_device_text's line. */
static void print_device(const char *device)
{
    char *text = kb_bench_device_text(device);
    if (text)
        printf("    on %s\n", text);
    kb_string_free(text);
}

static json_t *result_json(const kb_bench_result *r, char **published, size_t published_count)
{
    json_t *a = json_array(), *pub = json_array();
    for (size_t i = 0; i < r->count; i++) {
        const kb_bench_target_result *t = &r->targets[i];
        json_t *cases = t->cases ? json_loads(t->cases, 0, NULL) : NULL;
        json_t *device = t->device ? json_loads(t->device, 0, NULL) : NULL;
        json_array_append_new(a,
                              json_pack("{s:s, s:s, s:f, s:s?, s:o?, s:o?}", "target", t->target,
                                        "status", bench_status(t->status), "seconds", t->seconds,
                                        "message", t->message, "cases", cases, "device", device));
    }
    for (size_t i = 0; i < published_count; i++)
        json_array_append_new(pub, json_string(published[i]));
    return json_pack("{s:s, s:s, s:b, s:o, s:i, s:i, s:i, s:o}", "package", r->name, "version",
                     r->version, "installed", r->installed != 0, "targets", a, "ran", (int)r->ran,
                     "skipped", (int)r->skipped, "failed", (int)r->failed, "published", pub);
}

static void print_result(cli *c, const kb_bench_result *r, char **published, size_t published_count)
{
    if (c->json) {
        cli_json_print(result_json(r, published, published_count));
        return;
    }
    if (c->quiet)
        return;
    printf("%s %s (%s): %zu ran, %zu skipped, %zu failed\n", r->name, r->version,
           r->installed ? "installed" : "package folder", r->ran, r->skipped, r->failed);
    for (size_t i = 0; i < r->count; i++) {
        const kb_bench_target_result *t = &r->targets[i];
        printf("  %-34s %-8s %s\n", t->target, bench_status(t->status),
               t->status == KB_BUILD_BUILT ? "" : (t->message ? t->message : ""));
        print_device(t->device);
        json_t *cases = t->cases ? json_loads(t->cases, 0, NULL) : NULL;
        for (size_t k = 0; k < json_array_size(cases); k++)
            print_case(json_array_get(cases, k));
        json_decref(cases);
    }
    for (size_t i = 0; i < published_count; i++)
        printf("published %s\n", published[i]);
}

/* A folder (it exists, or names one by its path) is benched from source; anything else is a
 * package reference, benched from what is installed. */
static bool is_folder(const char *operand)
{
    struct stat st;
    return !operand || stat(operand, &st) == 0 || strchr(operand, '/') != strrchr(operand, '/') ||
           operand[0] == '.' || operand[0] == '/';
}

static int run_bench(cli *c, kb_bench_result **r, const char *operand, const char **targets,
                     size_t n, unsigned flags, const cli_trust *trust)
{
    if (!is_folder(operand)) {
        int err = kb_bench_installed(r, c->ctx, operand, targets, n, flags, trust->allow_unsigned);
        return err ? cli_fail_package(c, err, operand, CLI_SUGGEST_INSTALLED, NULL) : 0;
    }
    int err = kb_fetch_inputs(NULL, c->ctx, operand ? operand : ".");
    if (!err)
        err = kb_package_bench(r, c->ctx, operand ? operand : ".", targets, n, flags);
    return err ? cli_fail(c, err) : 0;
}

const cli_option cli_bench_options[] = {
    CLI_OPTION_GROUP(cli_target_filter_options),
    {'q', "quick", false, NULL, "small sizes (CI); the program's own --quick"},
    {'p', "publish", false, NULL,
     "publish the results to the registry (--registry R), next to the version's index"},
    CLI_OPTION_GROUP(cli_trust_options),
    CLI_OPTION_GROUP(cli_registry_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_bench(cli *c, int argc, char **argv)
{
    cli_trust trust = {0};
    const char *operand = NULL;
    const char **targets = calloc((size_t)argc + 1, sizeof(*targets));
    size_t n = 0;
    unsigned flags = 0;
    bool publish = false;
    int rc = targets ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_bench_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            targets[n++] = optarg;
        else if (opt == 'q')
            flags |= KB_BENCH_QUICK;
        else if (opt == 'p')
            publish = true;
        else if (!cli_trust_option(&trust, opt))
            rc = cli_option_error(c, "bench", opt, g.longs, argv);
    }
    if (!rc)
        cli_trust_warn(c, &trust);
    if (!rc && optind < argc)
        operand = argv[optind];
    if (!rc && optind + 1 < argc)
        rc = cli_usage_error(c, "bench", "one package folder or package only, got '%s' and '%s'",
                             argv[optind], argv[optind + 1]);
    kb_bench_result *r = NULL;
    if (!rc)
        rc = run_bench(c, &r, operand, targets, n, flags, &trust);
    char **published = NULL;
    size_t published_count = 0;
    if (r && publish) {
        int err =
            kb_bench_publish(&published, &published_count, c->ctx, r, NULL, trust.allow_unsigned);
        if (err) {
            /* what was measured stays visible: above the error, or as the --json report */
            if (!c->json)
                print_result(c, r, NULL, 0);
            rc = cli_fail_report(c, err, c->json ? result_json(r, NULL, 0) : NULL);
        }
    }
    if (r && !rc) {
        print_result(c, r, published, published_count);
        rc = r->failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    }
    kb_bench_result_free(r);
    kb_strings_free(published, published_count);
    free(targets);
    return rc;
}
