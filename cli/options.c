/* Command tables made into getopt_long's tables, usage lines, help text and completion words. */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static void flatten(cli_option_list *out, const cli_option *options)
{
    for (const cli_option *o = options; o && (o->name || o->group); o++) {
        if (o->group)
            flatten(out, o->group);
        else if (out->count < CLI_OPTIONS_MAX)
            out->rows[out->count++] = o;
    }
}

void cli_options_flatten(cli_option_list *out, const cli_option *options)
{
    out->count = 0;
    flatten(out, options);
}

void cli_getopt_build(cli_getopt *g, const cli_option *options)
{
    memset(g, 0, sizeof(*g));
    cli_option_list all;
    cli_options_flatten(&all, options);
    size_t n = 0, s = 0;
    g->shorts[s++] = ':';
    for (size_t i = 0; i < all.count; i++) {
        const cli_option *o = all.rows[i];
        if (o->key >= CLI_KEY_GLOBAL)
            continue; /* main has taken it out of argv already */
        g->longs[n++] =
            (struct option){o->name, o->arg ? required_argument : no_argument, NULL, o->key};
        if (!o->short_form)
            continue;
        g->shorts[s++] = (char)o->key;
        if (o->arg)
            g->shorts[s++] = ':';
    }
}

int cli_parse_jobs(cli *c, const char *command, const char *num, unsigned *out)
{
    char *end = NULL;
    long j = strtol(num, &end, 10);
    if (!end || *end || j < 1 || j > 256)
        return cli_usage_error(c, command, "-j needs a number from 1 to 256, got '%s'", num);
    *out = (unsigned)j;
    return 0;
}

int cli_parse_none(int *first, cli *c, const char *command, const cli_option *options, int argc,
                   char **argv)
{
    cli_getopt g;
    cli_getopt_build(&g, options);
    optind = 1;
    int opt = getopt_long(argc, argv, g.shorts, g.longs, NULL);
    if (opt != -1)
        return cli_option_error(c, command, opt, g.longs, argv);
    *first = optind;
    return 0;
}

void cli_option_label(const cli_option *o, bool short_first, char *out, size_t size)
{
    const char *sp = o->arg ? " " : "", *arg = o->arg ? o->arg : "";
    if (!o->short_form)
        snprintf(out, size, "--%s%s%s", o->name, sp, arg);
    else if (short_first) /* "-q, --quiet": the global options' style */
        snprintf(out, size, "-%c, --%s%s%s", o->key, o->name, sp, arg);
    else
        snprintf(out, size, "--%s%s%s, -%c%s%s", o->name, sp, arg, o->key, sp, arg);
}

/* "kbpkg farm plan DIR... [--pools FILE] [--format F]" */
static void print_synopsis(FILE *out, const char *path, const cli_command *cmd)
{
    fprintf(out, "kbpkg %s", path);
    for (const cli_arg *a = cmd->args; a && a->name; a++)
        fprintf(out, " %s%s%s%s", a->flags & CLI_ARG_OPTIONAL ? "[" : "", a->name,
                a->flags & CLI_ARG_REPEAT ? "..." : "", a->flags & CLI_ARG_OPTIONAL ? "]" : "");
    cli_option_list all;
    cli_options_flatten(&all, cmd->options);
    for (size_t i = 0; i < all.count; i++) {
        const cli_option *o = all.rows[i];
        bool optional = !(o->flags & CLI_OPT_REQUIRED);
        fprintf(out, " %s--%s%s%s%s%s", optional ? "[" : "", o->name, o->arg ? " " : "",
                o->arg ? o->arg : "", optional ? "]" : "", o->flags & CLI_OPT_REPEAT ? "..." : "");
    }
}

static void print_usage(FILE *out, const cli_command *cmd)
{
    const char *sep = "";
    /* the command's own line, unless it only stands for its subcommands */
    if (!cmd->subcommands ||
        (cmd->run && ((cmd->args && cmd->args->name) || (cmd->options && cmd->options->name)))) {
        print_synopsis(out, cmd->name, cmd);
        sep = "\n       ";
    }
    for (const cli_command *s = cmd->subcommands; s && s->name; s++) {
        char path[64];
        snprintf(path, sizeof(path), "%s %s", cmd->name, s->name);
        fputs(sep, out);
        print_synopsis(out, path, s);
        sep = "\n       ";
    }
}

char *cli_usage_for(const char *path)
{
    const cli_command *cmd = cli_find_command(path);
    if (!cmd || !strchr(path, ' '))
        return cmd ? cli_usage_text(cmd) : NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    print_synopsis(f, path, cmd);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Text made by print(out, cmd) into a string, without its final newline. */
static char *text_of(void (*print)(FILE *out, const cli_command *cmd), const cli_command *cmd)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    print(f, cmd);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    if (len && text[len - 1] == '\n')
        text[len - 1] = '\0';
    return text;
}

char *cli_usage_text(const cli_command *cmd)
{
    return text_of(print_usage, cmd);
}

/* "  LABEL                help" with continuation lines under the first; indent 2 or 4. */
static void print_row(FILE *out, int indent, const char *label, const char *help)
{
    int width = 23 - indent;
    if ((int)strlen(label) > width - 1) /* the help starts on the next line */
        fprintf(out, "%*s%s\n%23s", indent, "", label, "");
    else
        fprintf(out, "%*s%-*s ", indent, "", width - 1, label);
    for (const char *p = help ? help : ""; *p; p++) {
        fputc(*p, out);
        if (*p == '\n')
            fprintf(out, "%23s", "");
    }
    fputc('\n', out);
}

/* The operands with a help line, then every option. */
static void print_rows(FILE *out, int indent, const cli_command *cmd)
{
    for (const cli_arg *a = cmd->args; a && a->name; a++)
        if (a->help)
            print_row(out, indent, a->name, a->help);
    cli_option_list all;
    cli_options_flatten(&all, cmd->options);
    for (size_t i = 0; i < all.count; i++) {
        char label[64];
        cli_option_label(all.rows[i], false, label, sizeof(label));
        print_row(out, indent, label, all.rows[i]->help);
    }
}

void cli_print_options(FILE *out, const cli_command *cmd)
{
    print_rows(out, 2, cmd);
    if (cmd->help && *cmd->help)
        fprintf(out, "%s\n", cmd->help);
    for (const cli_command *s = cmd->subcommands; s && s->name; s++) {
        char label[64];
        size_t len = (size_t)snprintf(label, sizeof(label), "%s", s->name);
        for (const cli_arg *a = s->args; a && a->name && len < sizeof(label); a++)
            len += (size_t)snprintf(label + len, sizeof(label) - len, " %s%s", a->name,
                                    a->flags & CLI_ARG_REPEAT ? "..." : "");
        print_row(out, 2, label, s->summary);
        print_rows(out, 4, s);
        if (s->help && *s->help)
            fprintf(out, "%s\n", s->help);
    }
}

char *cli_options_text(const cli_command *cmd)
{
    return text_of(cli_print_options, cmd);
}

void cli_option_words(const cli_command *cmd, void (*add)(const char *word, void *payload),
                      void *payload)
{
    cli_option_list all;
    cli_options_flatten(&all, cmd->options);
    for (size_t i = 0; i < all.count; i++) {
        const cli_option *o = all.rows[i];
        char word[48];
        snprintf(word, sizeof(word), "--%s", o->name);
        add(word, payload);
        snprintf(word, sizeof(word), "-%c", o->key);
        if (o->short_form)
            add(word, payload);
    }
}

int cli_subcommand_error(cli *c, const cli_command *cmd, int argc, char **argv)
{
    const char *names[16];
    size_t n = 0;
    char list[256] = "";
    size_t len = 0;
    for (const cli_command *s = cmd->subcommands; s && s->name && n < 16; s++) {
        names[n++] = s->name;
        if (len < sizeof(list))
            len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", n > 1 ? ", " : "",
                                    s->name);
    }
    int first = 1;
    if (argc >= 2 && argv[1][0] == '-') { /* an option before the subcommand: is it one? */
        int rc = cli_parse_none(&first, c, cmd->name, cmd->options, argc, argv);
        if (rc)
            return rc;
    }
    if (first >= argc)
        return cli_usage_error(c, cmd->name, "%s needs a subcommand (%s)", cmd->name, list);
    return cli_unknown_subcommand(c, cmd->name, argv[first], names, n);
}

int cli_run_command(cli *c, const cli_command *cmd, int argc, char **argv)
{
    for (const cli_command *s = cmd->subcommands; s && s->name && argc >= 2; s++) {
        if (strcmp(argv[1], s->name) != 0)
            continue;
        if (argc >= 3 && cli_is_help_flag(argv[2]))
            return cli_print_subcommand_help(cmd, s);
        return s->run(c, argc - 1, argv + 1);
    }
    if (cmd->run)
        return cmd->run(c, argc, argv);
    return cli_subcommand_error(c, cmd, argc, argv);
}
