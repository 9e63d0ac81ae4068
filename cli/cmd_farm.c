/* kbpkg farm DIR... [-j N]: build and publish every target the registry does not hold yet; and
 * kbpkg farm plan | build --stage | merge, the steps of a farm run by a job engine. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tally(const kb_farm_report *r, kb_status status)
{
    return (int)kb_farm_report_count_status(r, status);
}

static void print_json(const kb_farm_report *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < kb_farm_report_count(r); i++) {
        const kb_report_row *row;
        kb_farm_report_row(&row, r, i);
        json_array_append_new(rows,
                              json_pack("{s:s, s:s?, s:s, s:s, s:s?}", "package", row->package,
                                        "version", row->version, "target", row->target, "status",
                                        kb_status_name(row->status), "message", row->message));
    }
    cli_json_print(json_pack("{s:o, s:i, s:i, s:i, s:i}", "rows", rows, "published",
                             tally(r, KB_STATUS_PUBLISHED), "already_there",
                             tally(r, KB_STATUS_ALREADY_THERE), "skipped",
                             tally(r, KB_STATUS_SKIPPED), "failed", tally(r, KB_STATUS_FAILED)));
}

/* The statuses a farm report's rows can have, in the order the summary names them. */
static const kb_status summary_statuses[] = {
    KB_STATUS_PUBLISHED,     KB_STATUS_STAGED,  KB_STATUS_MERGED,   KB_STATUS_UNCHANGED,
    KB_STATUS_ALREADY_THERE, KB_STATUS_SKIPPED, KB_STATUS_CONFLICT, KB_STATUS_FAILED};

/* "3 staged, 1 skipped": every status that occurs, counted from the rows (farm build and merge
 * have rows the plain farm never makes); "nothing to do" for none. */
static void print_summary(const kb_farm_report *r)
{
    const char *sep = "";
    for (size_t k = 0; k < sizeof(summary_statuses) / sizeof(*summary_statuses); k++) {
        int n = tally(r, summary_statuses[k]);
        if (n)
            printf("%s%d %s", sep, n, kb_status_name(summary_statuses[k]));
        sep = n ? ", " : sep;
    }
    printf("%s\n", *sep ? "" : "nothing to do");
}

static void print_table(cli *c, const kb_farm_report *r)
{
    if (c->quiet)
        return;
    for (size_t i = 0; i < kb_farm_report_count(r); i++) {
        const kb_report_row *row;
        kb_farm_report_row(&row, r, i);
        const char *msg = row->message;
        printf("%-24s %-10s %-34s %-13s", row->package, row->version ? row->version : "-",
               row->target, kb_status_name(row->status));
        /* published/present rows carry a digest or build key; only reasons are worth a line */
        bool reason = row->status == KB_STATUS_SKIPPED || row->status == KB_STATUS_FAILED ||
                      row->status == KB_STATUS_CONFLICT;
        if (reason && msg)
            printf(" %.*s", (int)strcspn(msg, "\n"), msg);
        printf("\n");
    }
    print_summary(r);
}

/* Print a report and turn it into the exit status: 1 when a row failed or a merge met a
 * conflict (a staged target the index did not take: a job engine must see it, docs/farm.md). */
static int finish(cli *c, kb_farm_report *r)
{
    if (c->json)
        print_json(r);
    else
        print_table(c, r);
    int rc =
        tally(r, KB_STATUS_FAILED) || tally(r, KB_STATUS_CONFLICT) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    kb_farm_report_free(r);
    return rc;
}

/* GitHub Actions step outputs (for >> "$GITHUB_OUTPUT"): chunks=N, chunk<i>={"include":[...]}
 * of at most 256 jobs each (GitHub's limit per matrix), merges={"include":[...]}. */
static int print_github(cli *c, const char *plan_json)
{
    json_error_t jerr;
    json_t *plan = json_loads(plan_json, 0, &jerr);
    json_t *items = json_object_get(plan, "items");
    if (!json_is_array(items)) {
        json_decref(plan);
        return cli_fail(c, KB_ERR_NOMEM);
    }
    size_t n = json_array_size(items), chunks = (n + 255) / 256;
    printf("chunks=%zu\n", chunks);
    for (size_t k = 0; k < chunks; k++) {
        json_t *part = json_array();
        for (size_t i = k * 256; i < n && i < (k + 1) * 256; i++)
            json_array_append(part, json_array_get(items, i));
        json_t *m = json_pack("{s:o}", "include", part);
        char *text = json_dumps(m, JSON_COMPACT);
        printf("chunk%zu=%s\n", k, text ? text : "{}");
        free(text);
        json_decref(m);
    }
    json_t *merges = json_pack("{s:O}", "include", json_object_get(plan, "merges"));
    char *text = json_dumps(merges, JSON_COMPACT);
    printf("merges=%s\n", text ? text : "{}");
    free(text);
    json_decref(merges);
    json_decref(plan);
    return CLI_EXIT_OK;
}

static const cli_option plan_options[] = {
    {'p', "pools", false, "FILE", "the farm's pools and their toolchain ids (docs/farm.md)"},
    {'f', "format", false, "F",
     "json (default), or github: $GITHUB_OUTPUT lines chunks=N,\n"
     "chunk<i>= (matrices of at most 256 jobs), merges="},
    CLI_OPTIONS_END,
};

static int farm_plan(cli *c, int argc, char **argv)
{
    kb_farm_options o = KB_FARM_OPTIONS_INIT;
    const char **dirs = calloc((size_t)argc + 1, sizeof(*dirs));
    bool github = false;
    size_t n = 0;
    int rc = dirs ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, plan_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'p')
            o.pools = optarg;
        else if (opt == 'f' && strcmp(optarg, "github") == 0)
            github = true;
        else if (opt == 'f' && strcmp(optarg, "json") != 0)
            rc = cli_usage_error(c, "farm plan", "--format is json or github, not '%s'", optarg);
        else if (opt != 'f')
            rc = cli_option_error(c, "farm plan", opt, g.longs, argv);
    }
    for (int i = optind; !rc && i < argc; i++)
        dirs[n++] = argv[i];
    if (!rc && n == 0)
        rc = cli_usage_error(c, "farm plan", "which folders?");
    char *plan = NULL;
    int err = rc ? 0 : kb_farm_plan(&plan, c->ctx, dirs, n, &o);
    if (err)
        rc = cli_fail(c, err);
    else if (!rc && github)
        rc = print_github(c, plan);
    else if (!rc)
        printf("%s\n", plan);
    kb_farm_string_free(plan);
    free(dirs);
    return rc;
}

/* Where farm and farm build put their builds. */
static const cli_option out_options[] = {
    {'o', "out", false, "DIR", "where builds go (default: <cache>/farm)"},
    CLI_OPTIONS_END,
};

static const cli_option build_options[] = {
    {'t', "target", false, "T", "the one target to build", CLI_OPT_REQUIRED},
    {'s', "stage", false, NULL,
     "on a worker: push the target and its staging tag, never the\n"
     "version tag or latest (without --stage: merge too)"},
    CLI_OPTION_GROUP(cli_jobs_options),
    CLI_OPTION_GROUP(out_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

static int farm_build(cli *c, int argc, char **argv)
{
    kb_farm_options o = KB_FARM_OPTIONS_INIT;
    const char *dir = NULL, *target = NULL;
    int rc = 0, opt;
    cli_getopt g;
    cli_getopt_build(&g, build_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            target = optarg;
        else if (opt == 's')
            o.stage_only = 1;
        else if (opt == 'o')
            o.out_dir = optarg;
        else if (opt == 'j')
            rc = cli_parse_jobs(c, "farm build", optarg, &o.jobs);
        else
            rc = cli_option_error(c, "farm build", opt, g.longs, argv);
    }
    if (!rc && optind < argc)
        dir = argv[optind];
    if (!rc && optind + 1 < argc)
        rc = cli_usage_error(c, "farm build", "unexpected argument '%s'", argv[optind + 1]);
    if (!rc && (!dir || !target))
        rc = cli_usage_error(c, "farm build", "farm build needs a package folder and --target T");
    kb_farm_report *r = NULL;
    int err = rc ? 0 : kb_farm_build(&r, c->ctx, dir, target, &o);
    if (err)
        return cli_fail(c, err);
    return r ? finish(c, r) : rc;
}

static const cli_option merge_options[] = {
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

static int farm_merge(cli *c, int argc, char **argv)
{
    kb_farm_options o = KB_FARM_OPTIONS_INIT;
    kb_farm_report *r = NULL;
    int first = 0;
    int rc = cli_parse_none(&first, c, "farm merge", merge_options, argc, argv);
    for (int i = first; !rc && i < argc; i++) {
        int err = kb_farm_merge(&r, c->ctx, argv[i], &o);
        if (err < 0)
            rc = cli_fail(c, err);
        else if (err)
            rc = err;
        if (r)
            rc = finish(c, r) ? CLI_EXIT_FAILURE : rc;
        r = NULL;
    }
    if (!rc && first >= argc)
        rc = cli_usage_error(c, "farm merge", "which version? (org/name@version)");
    return rc;
}

const cli_command cli_farm_subcommands[] = {
    {
        .name = "plan",
        .run = farm_plan,
        .summary = "what to build (one item per target, with its pool) and merge",
        .args = (const cli_arg[]){{"DIR", CLI_ARG_REPEAT, NULL}, CLI_ARGS_END},
        .options = plan_options,
    },
    {
        .name = "build",
        .run = farm_build,
        .summary = "build one target of DIR and push it (a worker's job)",
        .args = (const cli_arg[]){{"DIR", 0, NULL}, CLI_ARGS_END},
        .options = build_options,
    },
    {
        .name = "merge",
        .run = farm_merge,
        .summary = "union of the version's index and its staged targets",
        .help = "    a target staged with other bytes is a conflict, reported and skipped",
        .args = (const cli_arg[]){{"org/name@version", CLI_ARG_REPEAT | CLI_ARG_PACKAGE, NULL},
                                  CLI_ARGS_END},
        .options = merge_options,
    },
    {.name = NULL},
};

const cli_option cli_farm_options[] = {
    CLI_OPTION_GROUP(cli_registry_options),
    CLI_OPTION_GROUP(cli_jobs_options),
    CLI_OPTION_GROUP(out_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_farm(cli *c, int argc, char **argv)
{
    const char **dirs = calloc((size_t)argc + 1, sizeof(*dirs));
    kb_farm_options o = KB_FARM_OPTIONS_INIT;
    size_t n = 0;
    int rc = dirs ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_farm_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'j')
            rc = cli_parse_jobs(c, "farm", optarg, &o.jobs);
        else if (opt == 'o')
            o.out_dir = optarg;
        else
            rc = cli_option_error(c, "farm", opt, g.longs, argv);
    }
    for (int i = optind; !rc && i < argc; i++)
        dirs[n++] = argv[i];
    if (!rc && n == 0)
        rc = cli_usage_error(c, "farm", "which folders?");
    kb_farm_report *r = NULL;
    if (!rc) {
        int err = kb_farm(&r, c->ctx, dirs, n, &o);
        if (err)
            rc = cli_fail(c, err);
    }
    if (r)
        rc = finish(c, r);
    free(dirs);
    return rc;
}
