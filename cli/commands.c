/* The one table of kbpkg commands; `kbpkg help` is generated from it. */
#include "cli.h"

#include <string.h>

/* Keep sorted by name. Adding a command: one file in cli/, one row here. */
const cli_command cli_commands[] = {
    {"help", cmd_help, "show the commands, or one command's options", "kbpkg help [COMMAND]",
     ""},
    {"inspect", cmd_inspect, "show a library's or artifact's exports, libc needs and GPU code",
     "kbpkg inspect FILE [--json]",
     "FILE      an ELF shared library, or a .tar.zst artifact (its lib/*.so are inspected)\n"
     "--json    machine-readable output"},
};

const size_t cli_command_count = sizeof(cli_commands) / sizeof(cli_commands[0]);

const cli_command *cli_find_command(const char *name)
{
    for (size_t i = 0; i < cli_command_count; i++)
        if (strcmp(cli_commands[i].name, name) == 0)
            return &cli_commands[i];
    return NULL;
}
