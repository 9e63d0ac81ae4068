/* The trust options: one group, listed in the table of every command that applies the policy. */
#include "cli.h"

/* Every command that admits a package index through the trust policy (kb_trust_check) lists
 * this group in its option table; info and search only read what a registry holds and admit
 * nothing. */
const cli_option cli_trust_options[] = {
    {CLI_KEY_ALLOW_UNSIGNED, "allow-unsigned", false, NULL,
     "accept a package that has no signature (prints a warning); a bad,\n"
     "expired or foreign signature is refused all the same"},
    CLI_OPTIONS_END,
};

bool cli_trust_option(cli_trust *t, int key)
{
    if (key != CLI_KEY_ALLOW_UNSIGNED)
        return false;
    t->allow_unsigned = true;
    return true;
}

void cli_trust_warn(cli *c, const cli_trust *t)
{
    /* the same warning whichever command admits unsigned packages */
    if (t->allow_unsigned && !c->quiet && !c->json)
        cli_eprint(c,
                   "kbpkg: %swarning%s: --allow-unsigned: packages without a signature are "
                   "accepted (a bad, expired or foreign signature is still refused)",
                   cli_color(c, "33"), cli_color(c, "0"));
}
