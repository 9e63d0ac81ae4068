/* Output helpers for commands: errors to stderr, exit codes, JSON and plain lines to stdout. */
#define _GNU_SOURCE
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

void cli_eprint(cli *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *line = NULL;
    int n = vasprintf(&line, fmt, ap);
    va_end(ap);
    if (n >= 0)
        cli_progress_print(c ? c->progress : NULL, stderr, line);
    free(line);
}

void cli_error_save(cli_error_copy *out, cli *c, int code)
{
    const kb_error *e = kb_ctx_last_error(c->ctx);
    bool ours = e->code == code;
    out->code = code;
    out->message = strdup(ours && e->message && *e->message ? e->message : kb_strerror(code));
    out->path = ours && e->path ? strdup(e->path) : NULL;
    out->url = ours && e->url ? strdup(e->url) : NULL;
    out->line = ours ? e->line : 0;
    out->column = ours ? e->column : 0;
}

void cli_error_copy_free(cli_error_copy *e)
{
    free(e->message);
    free(e->path);
    free(e->url);
    memset(e, 0, sizeof(*e));
}

/* The "error" object of a failed command: the kb_err code, its kind, the message, what the error
 * names (file:line:column, URL), and the suggestion or usage line when there is one.
 * docs/json.md, docs/json/error.json. */
static json_t *error_json(const cli_error_copy *e, const char *msg, const char *suggestion,
                          const char *usage)
{
    json_t *err =
        json_pack("{s:i,s:s,s:s}", "code", e->code, "kind", kb_strerror(e->code), "message", msg);
    if (err && e->path)
        json_object_set_new(err, "path", json_string(e->path));
    if (err && e->line)
        json_object_set_new(err, "line", json_integer(e->line));
    if (err && e->column)
        json_object_set_new(err, "column", json_integer(e->column));
    if (err && e->url)
        json_object_set_new(err, "url", json_string(e->url));
    if (err && suggestion)
        json_object_set_new(err, "suggestion", json_string(suggestion));
    if (err && usage)
        json_object_set_new(err, "usage", json_string(usage));
    return err;
}

/* Every failure ends here. stderr gets "kbpkg: <message>" (then "kbpkg: did you mean X?" or
 * "usage: ..."), above the progress display; under --json stdout gets one document: report (or
 * an empty object) with "ok": false and "error" set. report is owned. */
static int report_failure(cli *c, const cli_error_copy *e, const char *suggestion,
                          const char *usage, json_t *report)
{
    const char *msg = e->message ? e->message : kb_strerror(e->code);
    cli_eprint(c, "kbpkg: %s", msg);
    if (suggestion)
        cli_eprint(c, "kbpkg: did you mean %s?", suggestion);
    if (usage)
        cli_eprint(c, "usage: %s", usage);
    if (c->json) {
        json_t *doc = report ? report : json_object();
        if (doc) {
            json_object_set_new(doc, "ok", json_false());
            json_object_set_new(doc, "error", error_json(e, msg, suggestion, usage));
        }
        cli_json_print(doc);
    } else
        json_decref(report);
    return cli_exit_code(e->code);
}

int cli_fail_saved(cli *c, const cli_error_copy *e, const char *suggestion, json_t *report)
{
    return report_failure(c, e, suggestion, NULL, report);
}

int cli_fail_report(cli *c, int code, json_t *report)
{
    cli_error_copy e;
    cli_error_save(&e, c, code);
    int exit_code = report_failure(c, &e, NULL, NULL, report);
    cli_error_copy_free(&e);
    return exit_code;
}

int cli_fail(cli *c, int code)
{
    return cli_fail_report(c, code, NULL);
}

/* A message of ours for code: no path or URL, which would be stale (ctx's last error). */
static int fail_message(cli *c, int code, const char *usage, const char *fmt, va_list ap)
{
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        msg = NULL; /* kb_strerror(code) is said instead */
    kb_ctx_clear_error(c->ctx);
    cli_error_copy e = {.code = code, .message = msg};
    int exit_code = report_failure(c, &e, NULL, usage, NULL);
    cli_error_copy_free(&e);
    return exit_code;
}

int cli_failf(cli *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int exit_code = fail_message(c, code, NULL, fmt, ap);
    va_end(ap);
    return exit_code;
}

int cli_usage_error(cli *c, const char *command, const char *fmt, ...)
{
    char *usage = command ? cli_usage_for(command) : NULL;
    va_list ap;
    va_start(ap, fmt);
    int exit_code = fail_message(c, KB_ERR_INVALID, usage, fmt, ap);
    va_end(ap);
    if (!usage)
        cli_eprint(c, "Run 'kbpkg help' for the list of commands.");
    free(usage);
    return exit_code; /* CLI_EXIT_USAGE */
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

static const char *sgr_code(bool on, const char *sgr)
{
    if (!on)
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

const char *cli_color(cli *c, const char *sgr)
{
    return sgr_code(c->color, sgr);
}

const char *cli_color_out(cli *c, const char *sgr)
{
    return sgr_code(c->color_out, sgr);
}

bool cli_is_help_flag(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

/* "usage: <the usage of path>", the row's summary and its operands and options. */
static int print_help(const char *path, const cli_command *row)
{
    char *usage = cli_usage_for(path);
    char *text = cli_options_text(row);
    printf("usage: %s\n\n%s\n", usage ? usage : path, row->summary);
    if (text && *text)
        printf("\n%s\n", text);
    free(text);
    free(usage);
    return CLI_EXIT_OK;
}

int cli_print_subcommand_help(const cli_command *cmd, const cli_command *sub)
{
    char path[64];
    snprintf(path, sizeof(path), "%s %s", cmd->name, sub->name);
    return print_help(path, sub);
}

int cli_print_command_help(const cli_command *cmd)
{
    return print_help(cmd->name, cmd);
}
