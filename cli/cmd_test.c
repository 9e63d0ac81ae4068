/* kbpkg test DIR [--target T]...: build and run the package test per runnable target. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *test_status(kb_build_status s)
{
    return s == KB_BUILD_BUILT ? "passed" : s == KB_BUILD_SKIPPED ? "skipped" : "failed";
}

static void print_result(cli *c, const kb_test_result *r)
{
    if (c->json) {
        json_t *a = json_array();
        for (size_t i = 0; i < r->count; i++) {
            const kb_test_target_result *t = &r->targets[i];
            json_array_append_new(a,
                                  json_pack("{s:s, s:s, s:f, s:s?, s:s?}", "target", t->target,
                                            "status", test_status(t->status), "seconds", t->seconds,
                                            "message", t->message, "output", t->output));
        }
        cli_json_print(json_pack("{s:o, s:i, s:i, s:i}", "targets", a, "passed", (int)r->passed,
                                 "skipped", (int)r->skipped, "failed", (int)r->failed));
        return;
    }
    if (c->quiet)
        return;
    printf("%zu passed, %zu skipped, %zu failed\n", r->passed, r->skipped, r->failed);
    for (size_t i = 0; i < r->count; i++) {
        const kb_test_target_result *t = &r->targets[i];
        printf("  %-34s %-8s", t->target, test_status(t->status));
        if (t->status == KB_BUILD_BUILT)
            printf(" %.1fs\n", t->seconds);
        else
            printf(" %s\n", t->message ? t->message : "");
    }
}

const cli_option cli_test_options[] = {
    CLI_OPTION_GROUP(cli_target_filter_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_test(cli *c, int argc, char **argv)
{
    const char *dir = NULL;
    const char **targets = calloc((size_t)argc + 1, sizeof(*targets));
    size_t n = 0;
    int rc = targets ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_test_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            targets[n++] = optarg;
        else
            rc = cli_option_error(c, "test", opt, g.longs, argv);
    }
    if (!rc && optind < argc)
        dir = argv[optind];
    if (!rc && optind + 1 < argc)
        rc = cli_usage_error(c, "test", "one package folder only, got '%s' and '%s'", argv[optind],
                             argv[optind + 1]);
    kb_test_result *r = NULL;
    if (!rc) {
        int err = kb_fetch_inputs(NULL, c->ctx, dir ? dir : ".");
        if (!err)
            err = kb_package_test(&r, c->ctx, dir ? dir : ".", targets, n);
        rc = err ? cli_fail(c, err) : 0;
    }
    if (r) {
        print_result(c, r);
        rc = r->failed ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        kb_test_result_free(r);
    }
    free(targets);
    return rc;
}
