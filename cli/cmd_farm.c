/* kbpkg farm DIR... [-j N]: build and publish every target the registry does not hold yet. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_json(const kb_farm_report *r)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < kb_farm_report_count(r); i++) {
        const char *pkg, *ver, *target, *status, *msg;
        kb_farm_report_row(&pkg, &ver, &target, &status, &msg, r, i);
        json_array_append_new(rows,
                              json_pack("{s:s, s:s?, s:s, s:s, s:s?}", "package", pkg, "version",
                                        ver, "target", target, "status", status, "message", msg));
    }
    cli_json_print(json_pack(
        "{s:o, s:i, s:i, s:i, s:i}", "rows", rows, "published", (int)kb_farm_report_published(r),
        "already_there", (int)kb_farm_report_present(r), "skipped", (int)kb_farm_report_skipped(r),
        "failed", (int)kb_farm_report_failed(r)));
}

static void print_table(cli *c, const kb_farm_report *r)
{
    if (c->quiet)
        return;
    for (size_t i = 0; i < kb_farm_report_count(r); i++) {
        const char *pkg, *ver, *target, *status, *msg;
        kb_farm_report_row(&pkg, &ver, &target, &status, &msg, r, i);
        printf("%-24s %-10s %-34s %-13s", pkg, ver ? ver : "-", target, status);
        /* published/present rows carry a digest or build key; only reasons are worth a line */
        bool reason = strcmp(status, "skipped") == 0 || strcmp(status, "failed") == 0;
        if (reason && msg)
            printf(" %.*s", (int)strcspn(msg, "\n"), msg);
        printf("\n");
    }
    printf("%zu published, %zu already there, %zu skipped, %zu failed\n",
           kb_farm_report_published(r), kb_farm_report_present(r), kb_farm_report_skipped(r),
           kb_farm_report_failed(r));
}

static int parse_jobs(cli *c, const char *num, unsigned *out)
{
    char *end = NULL;
    long j = strtol(num, &end, 10);
    if (!end || *end || j < 1 || j > 256)
        return cli_usage_error(c, "farm", "-j needs a number from 1 to 256, got '%s'", num);
    *out = (unsigned)j;
    return 0;
}

int cmd_farm(cli *c, int argc, char **argv)
{
    const char **dirs = calloc((size_t)argc + 1, sizeof(*dirs));
    kb_farm_options o = KB_FARM_OPTIONS_INIT;
    size_t n = 0;
    int rc = dirs ? 0 : cli_fail(c, KB_ERR_NOMEM);
    for (int i = 1; i < argc && !rc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-j") == 0 && i + 1 < argc)
            rc = parse_jobs(c, argv[++i], &o.jobs);
        else if (strncmp(a, "-j", 2) == 0 && a[2])
            rc = parse_jobs(c, a + 2, &o.jobs);
        else if (strcmp(a, "--out") == 0 && i + 1 < argc)
            o.out_dir = argv[++i];
        else if (a[0] == '-')
            rc = cli_usage_error(c, "farm", "unknown or incomplete option '%s'", a);
        else
            dirs[n++] = a;
    }
    if (!rc && n == 0)
        rc = cli_usage_error(c, "farm", "which folders? (kbpkg farm DIR...)");
    kb_farm_report *r = NULL;
    if (!rc) {
        int err = kb_farm(c->ctx, &r, dirs, n, &o);
        if (err)
            rc = cli_fail(c, err);
    }
    if (r) {
        if (c->json)
            print_json(r);
        else
            print_table(c, r);
        rc = kb_farm_report_failed(r) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
        kb_farm_report_free(r);
    }
    free(dirs);
    return rc;
}
