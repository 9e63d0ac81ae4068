/* kbpkg sync [--file F] [--allow-unsigned]: install exactly what kbpkg.lock pins. */
#define _GNU_SOURCE
#include "cli.h"

#include <getopt.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void print_json(const kb_sync_report *r)
{
    json_t *items = json_array();
    for (size_t i = 0; i < kb_sync_report_count(r); i++) {
        const kb_report_row *row;
        kb_sync_report_row(&row, r, i);
        json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:s, s:s?, s:s}", "name",
                                               row->package, "version", row->version, "target",
                                               row->target, "status", kb_status_name(row->status),
                                               "dir", row->dir, "artifact_digest", row->digest));
    }
    cli_json_print(json_pack("{s:o}", "packages", items));
}

static void print_text(cli *c, const kb_sync_report *r)
{
    if (c->quiet)
        return;
    for (size_t i = 0; i < kb_sync_report_count(r); i++) {
        const kb_report_row *row;
        kb_sync_report_row(&row, r, i);
        printf("%s %s %s: %s (%.19s)\n", row->package, row->version, row->target,
               kb_status_name(row->status), row->digest);
    }
}

/* No lockfile where sync looked: name the file (with the folder, for the default relative name)
 * and say what writes one. The path stays in --json's error.path. */
static int fail_no_lockfile(cli *c, const char *file)
{
    char *cwd = file[0] == '/' ? NULL : getcwd(NULL, 0);
    char *msg = NULL;
    if (asprintf(&msg,
                 "no lockfile: %s%s%s does not exist; run 'kbpkg lock org/name[@constraint]...' "
                 "first to write one (or give --file PATH)",
                 cwd ? cwd : "", cwd ? "/" : "", file) < 0)
        msg = NULL;
    kb_ctx_clear_error(c->ctx);
    cli_error_copy e = {.code = KB_ERR_NOT_FOUND, .message = msg, .path = strdup(file)};
    int exit_code = cli_fail_saved(c, &e, NULL, NULL);
    cli_error_copy_free(&e);
    free(cwd);
    return exit_code;
}

const cli_option cli_sync_options[] = {
    {'f', "file", false, "F", "read F instead of ./kbpkg.lock"},
    CLI_OPTION_GROUP(cli_offline_options),
    CLI_OPTION_GROUP(cli_trust_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_sync(cli *c, int argc, char **argv)
{
    const char *file = KB_LOCKFILE_NAME;
    kb_sync_options o = KB_SYNC_OPTIONS_INIT;
    cli_trust trust = {0};
    int rc = 0, opt;
    cli_getopt g;
    cli_getopt_build(&g, cli_sync_options);
    optind = 1;
    while (!rc && (opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'f')
            file = optarg;
        else if (!cli_trust_option(&trust, opt))
            rc = cli_option_error(c, "sync", opt, g.longs, argv);
    }
    if (!rc)
        cli_trust_warn(c, &trust);
    o.allow_unsigned = trust.allow_unsigned;
    if (!rc && optind < argc)
        rc = cli_usage_error(c, "sync", "unexpected argument '%s'", argv[optind]);
    kb_lockfile *lock = NULL;
    kb_sync_report *r = NULL;
    if (!rc) {
        int err = kb_lockfile_load(&lock, c->ctx, file);
        if (err == KB_ERR_NOT_FOUND && access(file, F_OK) != 0 && errno == ENOENT)
            rc = fail_no_lockfile(c, file);
        else if (!err)
            err = kb_sync(&r, c->ctx, lock, &o);
        if (err && !rc)
            rc = cli_fail(c, err);
    }
    if (r && c->json)
        print_json(r);
    else if (r)
        print_text(c, r);
    kb_sync_report_free(r);
    kb_lockfile_free(lock);
    return rc;
}
