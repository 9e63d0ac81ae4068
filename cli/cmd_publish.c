/* kbpkg publish DIR [--out D] [--force] [--target T]...: push a package's artifacts and source. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_json(const kb_publish_report *r)
{
    json_t *items = json_array();
    for (size_t i = 0; i < kb_publish_report_count(r); i++) {
        const kb_report_row *row;
        kb_publish_report_row(&row, r, i);
        json_array_append_new(items,
                              json_pack("{s:s, s:s, s:s?, s:s?}", "target", row->target, "status",
                                        kb_status_name(row->status), "manifest_digest", row->digest,
                                        "message", row->message));
    }
    cli_json_print(json_pack(
        "{s:s, s:s, s:s, s:s, s:b, s:o}", "package", kb_publish_report_package(r), "version",
        kb_publish_report_version(r), "registry", kb_publish_report_registry(r), "index_digest",
        kb_publish_report_index_digest(r), "built", kb_publish_report_built(r), "items", items));
}

static const char *status_words(kb_status status)
{
    if (status == KB_STATUS_UNCHANGED)
        return "already there (same bytes)";
    if (status == KB_STATUS_REPLACED)
        return "replaced (--force)";
    return kb_status_name(status);
}

static void print_text(cli *c, const kb_publish_report *r)
{
    if (c->quiet)
        return;
    printf("%s %s -> %s\n", kb_publish_report_package(r), kb_publish_report_version(r),
           kb_publish_report_registry(r));
    for (size_t i = 0; i < kb_publish_report_count(r); i++) {
        const kb_report_row *row;
        kb_publish_report_row(&row, r, i);
        printf("  %-34s %s", row->target, status_words(row->status));
        if (row->message)
            printf(": %s", row->message);
        printf("\n");
    }
    printf("index %s\n", kb_publish_report_index_digest(r));
}

const cli_option cli_publish_options[] = {
    CLI_OPTION_GROUP(cli_registry_options),
    {'o', "out", false, "DIR",
     "where built artifacts are (default: DIR/dist, as kbpkg build);\n"
     "when none of this version is there (or they are stale), builds"},
    {'f', "force", false, NULL, "replace a target published with different bytes"},
    CLI_OPTION_GROUP(cli_target_filter_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_publish(cli *c, int argc, char **argv)
{
    const char *dir = NULL;
    const char **targets = calloc((size_t)argc + 1, sizeof(*targets));
    kb_publish_options o = KB_PUBLISH_OPTIONS_INIT;
    size_t n = 0;
    int rc = targets ? 0 : cli_fail(c, KB_ERR_NOMEM), opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_publish_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            targets[n++] = optarg;
        else if (opt == 'o')
            o.out_dir = optarg;
        else if (opt == 'f')
            o.force = 1;
        else
            rc = cli_option_error(c, "publish", opt, g.longs, argv);
    }
    if (!rc && optind < argc)
        dir = argv[optind];
    if (!rc && optind + 1 < argc)
        rc = cli_usage_error(c, "publish", "one package folder only, got '%s' and '%s'", dir,
                             argv[optind + 1]);
    if (!rc && !dir)
        rc = cli_usage_error(c, "publish", "which package folder?");
    kb_publish_report *r = NULL;
    if (!rc) {
        o.targets = targets;
        o.target_count = n;
        int err = kb_publish(&r, c->ctx, dir, &o);
        if (err)
            rc = cli_fail(c, err);
    }
    if (r) {
        if (c->json)
            print_json(r);
        else
            print_text(c, r);
        kb_publish_report_free(r);
    }
    free(targets);
    return rc;
}
