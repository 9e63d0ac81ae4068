/* Man pages (roff) generated from the command table: `kbpkg help --man [COMMAND]`. */
#include "cli.h"

#include <stdio.h>
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
    roff_text(cmd->usage);
    printf("\n.fi\n.SH DESCRIPTION\n");
    roff_text(cmd->summary);
    printf(".\n");
    if (cmd->help && *cmd->help) {
        printf(".SH OPTIONS\n.nf\n");
        roff_text(cmd->help);
        printf("\n.fi\n");
    }
    printf(".PP\nThe global options of\n.BR kbpkg (1)\n(\\-\\-json, \\-q, \\-v, \\-\\-registry,"
           " \\-\\-device, \\-\\-cache, \\-\\-offline, \\-\\-set) apply too.\n"
           ".SH SEE ALSO\n.BR kbpkg (1)\n");
    return CLI_EXIT_OK;
}

int cli_print_man_index(void)
{
    man_header("kbpkg", "kbpkg - ahead-of-time GPU kernel packages");
    printf(".SH SYNOPSIS\n.B kbpkg\n[global options] COMMAND [ARGS]\n.SH DESCRIPTION\n"
           "Probe the machine, resolve, fetch, verify and load GPU kernel packages.\n"
           "Run \\fBkbpkg \\-\\-help\\fR for the global options.\n.SH COMMANDS\n");
    for (size_t i = 0; i < cli_command_count; i++) {
        printf(".TP\n.BR kbpkg\\-%s (1)\n", cli_commands[i].name);
        roff_text(cli_commands[i].summary);
        putchar('\n');
    }
    return CLI_EXIT_OK;
}
