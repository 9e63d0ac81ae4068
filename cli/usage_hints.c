/* Bad command lines that read as typos: an unknown subcommand or option gets the closest valid
 * one ("did you mean ...?"), through cli_usage_error like every other usage error. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

int cli_unknown_subcommand(cli *c, const char *command, const char *word,
                           const char *const *subcommands, size_t count)
{
    const char *s = cli_closest(word, subcommands, count);
    if (s)
        return cli_usage_error(c, command, "unknown %s subcommand '%s'; did you mean '%s'?",
                               command, word, s);
    return cli_usage_error(c, command, "unknown %s subcommand '%s'", command, word);
}

/* The long options whose name starts with prefix (getopt_long takes unique abbreviations). */
static size_t prefix_matches(const struct option *long_opts, const char *prefix, size_t len)
{
    size_t n = 0;
    for (const struct option *o = long_opts; o->name; o++)
        n += strncmp(o->name, prefix, len) == 0;
    return n;
}

/* An unknown long option: the closest long option's name (the command's own, and the trust
 * options for a command that takes them: cli_trust_take has removed those from argv), or NULL. */
static const char *closest_long_option(const char *command, const struct option *long_opts,
                                       const char *name)
{
    const char *names[32];
    size_t n = 0;
    for (const struct option *o = long_opts; o->name && n < 32; o++)
        names[n++] = o->name;
    for (size_t i = 0; i < cli_trust_command_count; i++)
        for (size_t k = 0;
             strcmp(cli_trust_commands[i], command) == 0 && k < cli_trust_option_count && n < 32;
             k++)
            names[n++] = cli_trust_options[k].name + 2; /* without "--" */
    return cli_closest(name, names, n);
}

int cli_option_error(cli *c, const char *command, int opt, const struct option *long_opts,
                     char **argv)
{
    /* getopt has moved past the word it could not take (opterr is 0: it printed nothing) */
    const char *word = argv[optind - 1];
    int len = (int)strcspn(word, "=");
    if (opt == ':')
        return cli_usage_error(c, command, "option '%.*s' needs a value", len, word);
    if (optopt && strncmp(word, "--", 2) == 0)
        return cli_usage_error(c, command, "option '%.*s' takes no value", len, word);
    if (optopt)
        return cli_usage_error(c, command, "unknown option '-%c'", optopt);
    if (strncmp(word, "--", 2) != 0)
        return cli_usage_error(c, command, "unknown option '%.*s'", len, word);
    char name[64];
    snprintf(name, sizeof(name), "%.*s", len - 2, word + 2);
    if (prefix_matches(long_opts, name, strlen(name)) > 1)
        return cli_usage_error(c, command, "option '--%s' is ambiguous", name);
    const char *s = closest_long_option(command, long_opts, name);
    if (s)
        return cli_usage_error(c, command, "unknown option '--%s'; did you mean --%s?", name, s);
    return cli_usage_error(c, command, "unknown option '--%s'", name);
}
