/* kbpkg help [COMMAND]: the command list, or one command's usage and options. */
#include "cli.h"

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
    for (size_t i = 0; i < cli_global_option_count; i++) {
        char label[64];
        cli_global_option_label(&cli_global_options[i], label, sizeof(label));
        printf("  %-18s %s\n", label, cli_global_options[i].help);
    }
    printf("\n"
           "Progress goes to stderr: on a terminal, a live line per download or target being\n"
           "built (size, rate, ETA); otherwise one line when each ends. Results go to stdout.\n\n"
           "Run 'kbpkg help COMMAND' for a command's options.\n");
    return CLI_EXIT_OK;
}

/* kbpkg help --man [COMMAND]: the roff page build/man/ is generated from. */
static int help_man(cli *c, int argc, char **argv)
{
    if (argc < 2)
        return cli_print_man_index();
    const cli_command *cmd = cli_find_command(argv[1]);
    if (!cmd)
        return cli_usage_error(c, "help", "unknown command '%s'", argv[1]);
    return cli_print_man_page(cmd);
}

int cmd_help(cli *c, int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--man") == 0)
        return help_man(c, argc - 1, argv + 1);
    if (argc < 2) {
        if (c->json) {
            json_t *arr = json_array();
            for (size_t i = 0; i < cli_command_count; i++)
                json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "name", cli_commands[i].name,
                                                     "summary", cli_commands[i].summary, "usage",
                                                     cli_commands[i].usage));
            cli_json_print(json_pack("{s:o}", "commands", arr));
            return CLI_EXIT_OK;
        }
        return cli_print_general_help();
    }
    const cli_command *cmd = cli_find_command(argv[1]);
    if (!cmd) {
        const char *s = cli_suggest_command(argv[1]);
        if (s)
            return cli_usage_error(c, NULL, "unknown command '%s'; did you mean '%s'?", argv[1], s);
        return cli_usage_error(c, NULL, "unknown command '%s'", argv[1]);
    }
    if (c->json) {
        char *options = cmd->options ? cli_options_text(cmd) : NULL;
        if (cmd->options && !options)
            return cli_fail(c, KB_ERR_NOMEM);
        const char *help = options ? options : cmd->help ? cmd->help : "";
        cli_json_print(json_pack("{s:s,s:s,s:s,s:s}", "name", cmd->name, "summary", cmd->summary,
                                 "usage", cmd->usage, "help", help));
        free(options);
        return CLI_EXIT_OK;
    }
    return cli_print_command_help(cmd);
}
