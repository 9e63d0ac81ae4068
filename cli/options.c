/* A command's option table made into getopt_long's tables, help lines and completion words. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

void cli_getopt_build(cli_getopt *g, const cli_option *options)
{
    memset(g, 0, sizeof(*g));
    size_t n = 0, s = 0;
    g->shorts[s++] = ':';
    for (const cli_option *o = options; o && o->name && n < CLI_OPTIONS_MAX; o++, n++) {
        g->longs[n] =
            (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
        if (!o->short_form)
            continue;
        g->shorts[s++] = (char)o->key;
        if (o->arg)
            g->shorts[s++] = ':';
    }
}

/* "--target T, -t T": how help names an option. */
static void option_label(const cli_option *o, char *out, size_t size)
{
    const char *sp = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
    if (o->short_form)
        snprintf(out, size, "--%s%s%s, -%c%s%s", o->name, sp, arg, o->key, sp, arg);
    else
        snprintf(out, size, "--%s%s%s", o->name, sp, arg);
}

void cli_print_options(FILE *out, const cli_command *cmd)
{
    for (const cli_option *o = cmd->options; o && o->name; o++) {
        char label[64];
        option_label(o, label, sizeof(label));
        fprintf(out, "  %-20s ", label);
        /* continuation lines line up under the first */
        for (const char *p = o->help; *p; p++) {
            fputc(*p, out);
            if (*p == '\n')
                fprintf(out, "%23s", "");
        }
        fputc('\n', out);
    }
    if (cmd->help && *cmd->help)
        fprintf(out, "%s\n", cmd->help);
}

char *cli_options_text(const cli_command *cmd)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    cli_print_options(f, cmd);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    if (len && text[len - 1] == '\n')
        text[len - 1] = '\0'; /* as the hand-written help strings: no final newline */
    return text;
}

static bool takes_trust_options(const char *command)
{
    for (size_t i = 0; i < cli_trust_command_count; i++)
        if (strcmp(cli_trust_commands[i], command) == 0)
            return true;
    return false;
}

void cli_option_words(const cli_command *cmd, void (*add)(const char *word, void *payload),
                      void *payload)
{
    for (const cli_option *o = cmd->options; o && o->name; o++) {
        char word[48];
        snprintf(word, sizeof(word), "--%s", o->name);
        add(word, payload);
        snprintf(word, sizeof(word), "-%c", o->key);
        if (o->short_form)
            add(word, payload);
    }
    for (size_t i = 0; takes_trust_options(cmd->name) && i < cli_trust_option_count; i++)
        add(cli_trust_options[i].name, payload);
}
