/* The trust options: one table, parsed the same way by every command that applies the policy. */
#include "cli.h"

#include <stddef.h>
#include <string.h>

/* Every command that admits a package index through the trust policy (kb_trust_check): each
 * takes every option below, and its usage and help show CLI_TRUST_USAGE and CLI_TRUST_HELP.
 * info and search only read what a registry holds and admit nothing. */
const char *const cli_trust_commands[] = {"bench", "fetch", "install", "lock", "resolve", "sync"};
const size_t cli_trust_command_count = sizeof(cli_trust_commands) / sizeof(cli_trust_commands[0]);

const cli_trust_option cli_trust_options[] = {
    {"--allow-unsigned", offsetof(cli_trust, allow_unsigned)},
};
const size_t cli_trust_option_count = sizeof(cli_trust_options) / sizeof(cli_trust_options[0]);

static const cli_trust_option *find_option(const char *arg)
{
    for (size_t i = 0; i < cli_trust_option_count; i++)
        if (strcmp(cli_trust_options[i].name, arg) == 0)
            return &cli_trust_options[i];
    return NULL;
}

void cli_trust_take(cli_trust *out, cli *c, int *argc, char **argv)
{
    memset(out, 0, sizeof(*out));
    int kept = 1;
    bool rest = false; /* after "--" every word is an operand */
    for (int i = 1; i < *argc; i++) {
        const cli_trust_option *o = rest ? NULL : find_option(argv[i]);
        rest = rest || strcmp(argv[i], "--") == 0;
        if (o)
            *(bool *)((char *)out + o->offset) = true;
        else
            argv[kept++] = argv[i];
    }
    argv[kept] = NULL;
    *argc = kept;
    /* the same warning whichever command admits unsigned packages */
    if (out->allow_unsigned && !c->quiet && !c->json)
        cli_eprint(c,
                   "kbpkg: %swarning%s: --allow-unsigned: packages without a signature are "
                   "accepted (a bad, expired or foreign signature is still refused)",
                   cli_color(c, "33"), cli_color(c, "0"));
}
