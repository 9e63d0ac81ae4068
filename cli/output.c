/* Output helpers for commands: errors to stderr, exit codes, JSON and plain lines to stdout. */
#include "cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cli_exit_code(int kb_code)
{
    switch (kb_code) {
    case KB_OK:
        return CLI_EXIT_OK;
    case KB_ERR_INVALID:
        return CLI_EXIT_USAGE;
    case KB_ERR_NOT_FOUND:
    case KB_ERR_INCOMPATIBLE:
        return CLI_EXIT_NOT_FOUND;
    case KB_ERR_DIGEST:
    case KB_ERR_SIGNATURE:
    case KB_ERR_ABI:
        return CLI_EXIT_VERIFY;
    case KB_ERR_PARSE:
    case KB_ERR_MANIFEST:
    case KB_ERR_VERSION:
    case KB_ERR_TARGET:
    case KB_ERR_CONFIG:
    case KB_ERR_ARCHIVE:
    case KB_ERR_UNSAFE:
        return CLI_EXIT_INVALID_INPUT;
    default:
        return CLI_EXIT_FAILURE;
    }
}

/* The "error" object of a failed command: the kb_err code, its kind, the message and what the
 * ctx's last error names (file:line:column, URL) when it is this code's. docs/json.md. */
static json_t *error_json(cli *c, int code, const char *msg)
{
    const kb_error *e = kb_ctx_last_error(c->ctx);
    bool same = e->code == code;
    json_t *err =
        json_pack("{s:i,s:s,s:s}", "code", code, "kind", kb_strerror(code), "message", msg);
    if (err && same && e->path)
        json_object_set_new(err, "path", json_string(e->path));
    if (err && same && e->line)
        json_object_set_new(err, "line", json_integer(e->line));
    if (err && same && e->column)
        json_object_set_new(err, "column", json_integer(e->column));
    if (err && same && e->url)
        json_object_set_new(err, "url", json_string(e->url));
    return err;
}

/* stderr always gets "kbpkg: <message>"; under --json stdout gets one document: report (or an
 * empty object) with "ok": false and "error" set. */
static int fail_with(cli *c, int code, const char *msg, json_t *report)
{
    fprintf(stderr, "kbpkg: %s\n", msg);
    if (c->json) {
        json_t *doc = report ? report : json_object();
        if (doc) {
            json_object_set_new(doc, "ok", json_false());
            json_object_set_new(doc, "error", error_json(c, code, msg));
        }
        cli_json_print(doc);
    } else
        json_decref(report);
    return cli_exit_code(code);
}

static const char *fail_message(cli *c, int code)
{
    const kb_error *e = kb_ctx_last_error(c->ctx);
    return e->code == code && e->message && *e->message ? e->message : kb_strerror(code);
}

int cli_fail(cli *c, int code)
{
    return fail_with(c, code, fail_message(c, code), NULL);
}

int cli_fail_report(cli *c, int code, json_t *report)
{
    return fail_with(c, code, fail_message(c, code), report);
}

int cli_failf(cli *c, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    kb_ctx_clear_error(c->ctx); /* the message is ours: no stale path or URL in the object */
    return fail_with(c, code, msg, NULL);
}

int cli_usage_error(cli *c, const char *command, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "kbpkg: %s\n", msg);
    const cli_command *cmd = command ? cli_find_command(command) : NULL;
    if (cmd)
        fprintf(stderr, "usage: %s\n", cmd->usage);
    else
        fprintf(stderr, "Run 'kbpkg help' for the list of commands.\n");
    if (c->json) {
        json_t *err = json_pack("{s:i,s:s,s:s}", "code", KB_ERR_INVALID, "kind",
                                kb_strerror(KB_ERR_INVALID), "message", msg);
        if (err && cmd)
            json_object_set_new(err, "usage", json_string(cmd->usage));
        cli_json_print(json_pack("{s:b,s:o}", "ok", 0, "error", err));
    }
    return CLI_EXIT_USAGE;
}

void cli_json_print(json_t *value)
{
    if (!value)
        return;
    /* Every top-level object says which JSON schema version it follows, first (docs/json.md). */
    if (json_is_object(value)) {
        json_t *doc = json_pack("{s:i}", "kbpkg_json", CLI_JSON_VERSION);
        if (doc && json_object_update(doc, value) == 0) {
            json_decref(value);
            value = doc;
        } else
            json_decref(doc);
    }
    char *s = json_dumps(value, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (s) {
        puts(s);
        free(s);
    }
    json_decref(value);
}

void cli_say(cli *c, const char *fmt, ...)
{
    if (c->quiet || c->json)
        return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

const char *cli_color(cli *c, const char *sgr)
{
    if (!c->color)
        return "";
    if (strcmp(sgr, "0") == 0)
        return "\033[0m";
    if (strcmp(sgr, "1") == 0)
        return "\033[1m";
    if (strcmp(sgr, "2") == 0)
        return "\033[2m";
    if (strcmp(sgr, "31") == 0)
        return "\033[31m";
    if (strcmp(sgr, "32") == 0)
        return "\033[32m";
    if (strcmp(sgr, "33") == 0)
        return "\033[33m";
    return "";
}

bool cli_is_help_flag(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_print_command_help(const cli_command *cmd)
{
    printf("usage: %s\n\n%s\n", cmd->usage, cmd->summary);
    if (cmd->help && *cmd->help)
        printf("\n%s\n", cmd->help);
    return CLI_EXIT_OK;
}
