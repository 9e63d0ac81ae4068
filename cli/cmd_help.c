/* kbpkg help [COMMAND [SUBCOMMAND]]: the command list, or one (sub)command's usage and options. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `kbpkg help` and `kbpkg --help`: the commands and the global options, from their tables. */
int cli_print_general_help(void)
{
    printf("usage: kbpkg [global options] COMMAND [ARGS]\n\n"
           "Ahead-of-time GPU kernel packages: probe, resolve, fetch, verify, load.\n\n"
           "commands:\n");
    for (size_t i = 0; i < cli_command_count; i++)
        printf("  %-12s %s\n", cli_commands[i].name, cli_commands[i].summary);
    printf("\nglobal options (before or after the command):\n");
    cli_option_list all;
    cli_options_flatten(&all, cli_global_options);
    for (size_t i = 0; i < all.count; i++) {
        char label[64];
        cli_option_label(all.rows[i], true, label, sizeof(label));
        printf("  %-18s %s\n", label, all.rows[i]->help);
    }
    printf("\n"
           "Progress goes to stderr: on a terminal, a live line per download or target being\n"
           "built (size, rate, ETA); otherwise one line when each ends. Results go to stdout.\n\n"
           "Run 'kbpkg help COMMAND' for a command's options.\n");
    return CLI_EXIT_OK;
}

/* kbpkg help --man [COMMAND]: the roff page build/man/ is generated from. */
static int help_man(cli *c, const char *name)
{
    if (!name)
        return cli_print_man_index();
    const cli_command *cmd = cli_find_command(name);
    if (!cmd)
        return cli_usage_error(c, "help", "unknown command '%s'", name);
    return cli_print_man_page(cmd);
}

/* A (sub)command's table as JSON: its operands, options and subcommands. */
static json_t *command_json(const cli_command *cmd, bool with_text)
{
    char *usage = cli_usage_text(cmd);
    json_t *o =
        json_pack("{s:s,s:s,s:s?}", "name", cmd->name, "summary", cmd->summary, "usage", usage);
    free(usage);
    if (with_text) {
        char *text = cli_options_text(cmd);
        json_object_set_new(o, "help", json_string(text ? text : ""));
        free(text);
    }
    json_t *args = json_array();
    for (const cli_arg *a = cmd->args; a && a->name; a++)
        json_array_append_new(args, json_pack("{s:s,s:b,s:b}", "name", a->name, "optional",
                                              (a->flags & CLI_ARG_OPTIONAL) != 0, "repeat",
                                              (a->flags & CLI_ARG_REPEAT) != 0));
    json_object_set_new(o, "arguments", args);
    if (cmd->options) { /* a command without a table shows none: tests/cli catch it */
        json_t *options = json_array();
        cli_option_list all;
        cli_options_flatten(&all, cmd->options);
        for (size_t i = 0; i < all.count; i++) {
            const cli_option *opt = all.rows[i];
            char short_name[3] = {'-', (char)opt->key, '\0'};
            json_t *row = json_pack("{s:s,s:b,s:s}", "name", opt->name, "repeat",
                                    (opt->flags & CLI_OPT_REPEAT) != 0, "help", opt->help);
            if (opt->short_form)
                json_object_set_new(row, "short", json_string(short_name));
            if (opt->arg)
                json_object_set_new(row, "arg", json_string(opt->arg));
            json_array_append_new(options, row);
        }
        json_object_set_new(o, "options", options);
    }
    if (cmd->subcommands) {
        json_t *subs = json_array();
        for (const cli_command *s = cmd->subcommands; s->name; s++)
            json_array_append_new(subs, command_json(s, false));
        json_object_set_new(o, "subcommands", subs);
    }
    return o;
}

/* kbpkg help COMMAND SUBCOMMAND: that row of the command's subcommand table; a word that names
 * none is the same usage error (with "did you mean") as on the command line. */
static int help_subcommand(cli *c, const cli_command *cmd, const char *word)
{
    if (!cmd->subcommands)
        return cli_usage_error(c, "help", "'%s' has no subcommands", cmd->name);
    for (const cli_command *s = cmd->subcommands; s->name; s++) {
        if (strcmp(s->name, word) != 0)
            continue;
        if (!c->json)
            return cli_print_subcommand_help(cmd, s);
        json_t *o = command_json(s, true);
        char path[64];
        snprintf(path, sizeof(path), "%s %s", cmd->name, s->name);
        char *usage = cli_usage_for(path); /* with the command's name, as on the line */
        if (usage)
            json_object_set_new(o, "usage", json_string(usage));
        free(usage);
        cli_json_print(o);
        return CLI_EXIT_OK;
    }
    char *argv[] = {(char *)cmd->name, (char *)word, NULL};
    return cli_subcommand_error(c, cmd, 2, argv);
}

const cli_option cli_help_options[] = {
    {'m', "man", false, NULL, "the roff man page (kbpkg(1), or kbpkg-COMMAND(1))"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_help(cli *c, int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_build(&g, cli_help_options);
    bool man = false;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'm')
            man = true;
        else
            return cli_option_error(c, "help", opt, g.longs, argv);
    }
    if (optind + 2 < argc)
        return cli_usage_error(c, "help", "unexpected argument '%s'", argv[optind + 2]);
    const char *name = optind < argc ? argv[optind] : NULL;
    const char *sub_name = optind + 1 < argc ? argv[optind + 1] : NULL;
    if (man)
        return help_man(c, name);
    if (!name) {
        if (c->json) {
            json_t *arr = json_array();
            for (size_t i = 0; i < cli_command_count; i++) {
                char *usage = cli_usage_text(&cli_commands[i]);
                json_array_append_new(arr, json_pack("{s:s,s:s,s:s?}", "name", cli_commands[i].name,
                                                     "summary", cli_commands[i].summary, "usage",
                                                     usage));
                free(usage);
            }
            cli_json_print(json_pack("{s:o}", "commands", arr));
            return CLI_EXIT_OK;
        }
        return cli_print_general_help();
    }
    const cli_command *cmd = cli_find_command(name);
    if (!cmd) {
        const char *s = cli_suggest_command(name);
        if (s)
            return cli_usage_error(c, NULL, "unknown command '%s'; did you mean '%s'?", name, s);
        return cli_usage_error(c, NULL, "unknown command '%s'", name);
    }
    if (sub_name)
        return help_subcommand(c, cmd, sub_name);
    if (c->json) {
        cli_json_print(command_json(cmd, true));
        return CLI_EXIT_OK;
    }
    return cli_print_command_help(cmd);
}
