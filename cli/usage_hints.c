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

/* An unknown long option: the closest of the command's long options (its table's, shared
 * groups included) and the global ones, or NULL. */
static const char *closest_long_option(const struct option *long_opts, const char *name)
{
    const char *names[2 * CLI_OPTIONS_MAX];
    size_t n = 0;
    for (const struct option *o = long_opts; o->name && n < CLI_OPTIONS_MAX; o++)
        names[n++] = o->name;
    /* main takes the global ones anywhere, spelled out: "--jsn" meant --json */
    cli_option_list globals;
    cli_options_flatten(&globals, cli_global_options);
    for (size_t i = 0; i < globals.count && n < 2 * CLI_OPTIONS_MAX; i++)
        names[n++] = globals.rows[i]->name;
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
    const char *s = closest_long_option(long_opts, name);
    if (s)
        return cli_usage_error(c, command, "unknown option '--%s'; did you mean --%s?", name, s);
    return cli_usage_error(c, command, "unknown option '--%s'", name);
}
