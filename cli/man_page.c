/* Man pages (roff) generated from the command table: `kbpkg help --man [COMMAND]`. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Write text as roff: backslashes and dashes escaped, a leading '.' or '\'' neutralised. */
static void roff_text(const char *text)
{
    bool line_start = true;
    for (const char *p = text ? text : ""; *p; p++) {
        if (line_start && (*p == '.' || *p == '\''))
            fputs("\\&", stdout);
        if (*p == '\\')
            fputs("\\e", stdout);
        else if (*p == '-')
            fputs("\\-", stdout);
        else
            putchar(*p);
        line_start = *p == '\n';
    }
}

static void roff_upper(const char *s)
{
    for (; *s; s++)
        putchar(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s);
}

static void man_header(const char *page, const char *name_line)
{
    printf(".TH ");
    roff_upper(page);
    printf(" 1 \"\" \"kbpkg %s\" \"kbpkg manual\"\n.SH NAME\n", kb_version());
    roff_text(name_line);
    putchar('\n');
}

int cli_print_man_page(const cli_command *cmd)
{
    char page[64], name_line[512];
    snprintf(page, sizeof(page), "kbpkg-%s", cmd->name);
    snprintf(name_line, sizeof(name_line), "%s - %s", page, cmd->summary);
    man_header(page, name_line);
    printf(".SH SYNOPSIS\n.nf\n");
    char *usage = cli_usage_text(cmd);
    roff_text(usage ? usage : cmd->name);
    free(usage);
    printf("\n.fi\n.SH DESCRIPTION\n");
    roff_text(cmd->summary);
    printf(".\n");
    char *options = cli_options_text(cmd);
    if (options && *options) {
        printf(".SH OPTIONS\n.nf\n");
        roff_text(options);
        printf("\n.fi\n");
    }
    free(options);
    printf(".PP\nThe global options of\n.BR kbpkg (1)\n(");
    cli_option_list all;
    cli_options_flatten(&all, cli_global_options);
    for (size_t i = 0; i < all.count; i++) {
        char name[48];
        snprintf(name, sizeof(name), "--%s", all.rows[i]->name);
        printf("%s", i ? ", " : "");
        roff_text(name);
    }
    printf(") apply too.\n.SH SEE ALSO\n.BR kbpkg (1)\n");
    return CLI_EXIT_OK;
}

int cli_print_man_index(void)
{
    man_header("kbpkg", "kbpkg - ahead-of-time GPU kernel packages");
    printf(".SH SYNOPSIS\n.B kbpkg\n[global options] COMMAND [ARGS]\n.SH DESCRIPTION\n"
           "Probe the machine, resolve, fetch, verify and load GPU kernel packages.\n"
           ".SH OPTIONS\nThese global options go before or after the command.\n");
    cli_option_list all;
    cli_options_flatten(&all, cli_global_options);
    for (size_t i = 0; i < all.count; i++) {
        const cli_option *o = all.rows[i];
        /* the option bold, its value italic: .BI "\-\-registry " R */
        printf(".TP\n%s\"", o->arg ? ".BI " : ".B ");
        if (o->short_form)
            printf("\\-%c, ", o->key);
        printf("\\-\\-");
        roff_text(o->name);
        printf("%s\"", o->arg ? " " : "");
        if (o->arg) {
            putchar(' ');
            roff_text(o->arg);
        }
        putchar('\n');
        roff_text(o->help);
        putchar('\n');
    }
    printf(".SH COMMANDS\n");
    for (size_t i = 0; i < cli_command_count; i++) {
        printf(".TP\n.BR kbpkg\\-%s (1)\n", cli_commands[i].name);
        roff_text(cli_commands[i].summary);
        putchar('\n');
    }
    printf(".SH OUTPUT\n"
           "Results go to stdout (with \\-\\-json, one JSON document); messages, errors and "
           "progress go to stderr.\n"
           ".PP\n"
           "On a terminal, each running download, upload or target being compiled has a line "
           "of its own with its size, rate and time left, redrawn in place at most ten times a "
           "second within the terminal's width; when one ends, its line becomes a summary "
           "(\\(lqfetched radeonflow/gemm sha256:3f2a9c1d0b4e 3.1 MiB in 0.4 s, "
           "7.8 MiB/s\\(rq). Anywhere else (a pipe, a file, TERM=dumb) only the summaries are "
           "printed, without escape codes. \\-q and \\-\\-json print no progress.\n"
           ".PP\n"
           "A package name that is not found is followed by \\(lqdid you mean org/name?\\(rq "
           "when a close one exists (in \\-\\-json: error.suggestion).\n"
           ".SH ENVIRONMENT\n"
           ".TP\n.B NO_COLOR\nWhen set and not empty, no colors (as \\-\\-no\\-color).\n"
           ".TP\n.B COLUMNS\nThe width of progress lines when the terminal does not say.\n"
           ".TP\n.B TERM\n\\(lqdumb\\(rq: plain progress lines, no cursor moves.\n");
    return CLI_EXIT_OK;
}
