/* kbpkg build DIR [--target T]... [-j N] [--out DIR]: compile, verify and package targets. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *target_json(const kb_build_target_result *t)
{
    json_t *o = json_pack("{s:s, s:s, s:f}", "target", t->target, "status",
                          kb_build_status_name(t->status), "seconds", t->seconds);
    if (t->artifact)
        json_object_set_new(o, "artifact", json_string(t->artifact));
    if (t->sha256) {
        json_object_set_new(o, "sha256", json_string(t->sha256));
        json_object_set_new(o, "size", json_integer((json_int_t)t->size));
    }
    if (t->build_key)
        json_object_set_new(o, "build_key", json_string(t->build_key));
    if (t->message)
        json_object_set_new(o, "message", json_string(t->message));
    return o;
}

static void print_json(const kb_build_result *r)
{
    json_t *targets = json_array();
    for (size_t i = 0; i < r->count; i++)
        json_array_append_new(targets, target_json(&r->targets[i]));
    json_t *o = json_pack("{s:s, s:s, s:s?, s:s?, s:o, s:i, s:i, s:i}", "package", r->package,
                          "version", r->version, "source_artifact", r->source_artifact,
                          "source_digest", r->source_digest, "targets", targets, "built",
                          (int)r->built, "skipped", (int)r->skipped, "failed", (int)r->failed);
    cli_json_print(o);
}

static void print_table(cli *c, const kb_build_result *r)
{
    if (c->quiet)
        return;
    printf("%s %s: %zu built, %zu skipped, %zu failed\n", r->package, r->version, r->built,
           r->skipped, r->failed);
    for (size_t i = 0; i < r->count; i++) {
        const kb_build_target_result *t = &r->targets[i];
        printf("  %-34s %-8s", t->target, kb_build_status_name(t->status));
        if (t->status == KB_BUILD_BUILT)
            printf(" %.12s %10llu bytes %6.1fs\n", t->sha256, (unsigned long long)t->size,
                   t->seconds);
        else
            printf(" %s\n", t->message ? t->message : "");
    }
    if (r->source_artifact)
        printf("  source: %s\n", r->source_artifact);
}

const cli_option cli_build_options[] = {
    CLI_OPTION_GROUP(cli_target_filter_options),
    CLI_OPTION_GROUP(cli_jobs_options),
    {'o', "out", false, "DIR", "where artifacts go (default: DIR/dist)"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_build(cli *c, int argc, char **argv)
{
    const char *dir = ".";
    const char **targets = calloc((size_t)argc + 1, sizeof(*targets));
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    size_t n = 0;
    int rc = targets ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_build_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            targets[n++] = optarg;
        else if (opt == 'j')
            rc = cli_parse_jobs(c, "build", optarg, &o.jobs);
        else if (opt == 'o')
            o.out_dir = optarg;
        else
            rc = cli_option_error(c, "build", opt, g.longs, argv);
    }
    if (!rc && optind < argc)
        dir = argv[optind];
    if (!rc && optind + 1 < argc)
        rc = cli_usage_error(c, "build", "one package folder only, got '%s' and '%s'", dir,
                             argv[optind + 1]);
    kb_build_result *r = NULL;
    if (!rc) {
        o.targets = targets;
        o.target_count = n;
        /* url sources and dependencies first: a no-op once the cache has them */
        size_t fetched = 0;
        int err = kb_fetch_inputs(&fetched, c->ctx, dir);
        if (!err && fetched)
            cli_say(c, "fetched %zu url source(s) and dependenc(ies) of %s", fetched, dir);
        if (!err)
            err = kb_build(&r, c->ctx, dir, &o);
        if (err)
            rc = cli_fail(c, err);
    }
    if (r) {
        if (c->json)
            print_json(r);
        else
            print_table(c, r);
        /* Nothing built is a failure too: "0 built, 1 skipped" produced no artifact. */
        rc = r->failed || (r->built == 0 && r->count > 0) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        if (!r->failed && r->built == 0 && r->count > 0)
            fprintf(stderr,
                    "kbpkg: %s: no target was built (%zu skipped: no toolchain here "
                    "builds them)\n",
                    r->package, r->skipped);
        kb_build_result_free(r);
    }
    free(targets);
    return rc;
}
