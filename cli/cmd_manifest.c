/* kbpkg manifest check PATH...: validate kernel.yaml files and report each one. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static json_t *result_json(const char *path, const kb_manifest *m, const kb_error *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(path));
    json_object_set_new(o, "ok", json_boolean(m != NULL));
    json_object_set_new(o, "name", m ? json_string(kb_manifest_name(m)) : json_null());
    json_object_set_new(o, "version", m ? json_string(kb_manifest_version(m)) : json_null());
    if (m)
        json_object_set_new(o, "error", json_null());
    else
        json_object_set_new(o, "error",
                            json_pack("{s:s,s:i,s:i}", "message", e->message, "line", (int)e->line,
                                      "column", (int)e->column));
    return o;
}

/* Check one path; returns true when valid. */
static bool check_one(cli *c, const char *path, json_t *results)
{
    kb_manifest *m = NULL;
    int rc = kb_manifest_open(&m, c->ctx, path);
    const kb_error *e = kb_ctx_last_error(c->ctx);
    if (rc)
        cli_eprint(c, "kbpkg: %s", *e->message ? e->message : kb_strerror(rc));
    else
        cli_say(c, "ok  %s %s (%s)", kb_manifest_name(m), kb_manifest_version(m), path);
    if (results)
        json_array_append_new(results, result_json(path, m, e));
    kb_manifest_free(m);
    kb_ctx_clear_error(c->ctx);
    return rc == 0;
}

static int manifest_check(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "manifest check", cli_json_options, argc, argv);
    if (!rc && first >= argc)
        rc = cli_usage_error(c, "manifest check", "manifest check needs at least one PATH");
    if (rc)
        return rc;
    json_t *results = c->json ? json_array() : NULL;
    bool all_ok = true;
    for (int i = first; i < argc; i++)
        all_ok = check_one(c, argv[i], results) && all_ok;
    if (results)
        cli_json_print(results);
    return all_ok ? CLI_EXIT_OK : CLI_EXIT_INVALID_INPUT;
}

const cli_command cli_manifest_subcommands[] = {
    {
        .name = "check",
        .run = manifest_check,
        .summary = "validate each kernel.yaml (or folder holding one)",
        .args = (const cli_arg[]){{"PATH", CLI_ARG_REPEAT, NULL}, CLI_ARGS_END},
        .options = cli_json_options,
        .help = "    exit 5 when any is invalid",
    },
    {.name = NULL},
};
