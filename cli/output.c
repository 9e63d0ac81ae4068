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

int cli_fail_saved(cli *c, const cli_error_copy *e, const char *suggestion)
{
    const char *msg = e->message ? e->message : kb_strerror(e->code);
    cli_eprint(c, "kbpkg: %s", msg);
    if (suggestion)
        cli_eprint(c, "kbpkg: did you mean %s?", suggestion);
    if (c->json) {
        json_t *err = json_pack("{s:i,s:s,s:s}", "code", e->code, "kind", kb_strerror(e->code),
                                "message", msg);
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
        cli_json_print(json_pack("{s:b,s:o}", "ok", 0, "error", err));
    }
    return cli_exit_code(e->code);
}

int cli_fail(cli *c, int code)
{
    cli_error_copy e;
    cli_error_save(&e, c, code);
    int exit_code = cli_fail_saved(c, &e, NULL);
    cli_error_copy_free(&e);
    return exit_code;
}

int cli_error(cli *c, int exit_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    int n = vasprintf(&msg, fmt, ap);
    va_end(ap);
    if (n >= 0)
        cli_eprint(c, "kbpkg: %s", msg);
    free(msg);
    return exit_code;
}

int cli_usage_error(cli *c, const char *command, const char *fmt, ...)
{
    (void)c;
    va_list ap;
    va_start(ap, fmt);
    fputs("kbpkg: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    const cli_command *cmd = command ? cli_find_command(command) : NULL;
    if (cmd)
        fprintf(stderr, "usage: %s\n", cmd->usage);
    else
        fprintf(stderr, "Run 'kbpkg help' for the list of commands.\n");
    return CLI_EXIT_USAGE;
}

void cli_json_print(json_t *value)
{
    if (!value)
        return;
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
