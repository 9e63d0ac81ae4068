/* kbpkg config list|get KEY|set KEY VALUE: settings, their values and where they came from. */
#include "cli.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *entry_json(const char *key, const char *value, kb_config_origin origin,
                          const char *path)
{
    return json_pack("{s:s,s:s,s:s,s:o}", "key", key, "value", value, "origin",
                     kb_config_origin_name(origin), "path", path ? json_string(path) : json_null());
}

static int config_list(cli *c)
{
    json_t *all = c->json ? json_array() : NULL;
    const char *key, *value, *path;
    kb_config_origin origin;
    for (size_t i = 0; kb_config_entry(&key, &value, &origin, &path, c->ctx, i) == 0; i++) {
        if (all)
            json_array_append_new(all, entry_json(key, value, origin, path));
        else
            cli_say(c, "%-26s %-32s (%s%s%s)", key, value, kb_config_origin_name(origin),
                    path ? ": " : "", path ? path : "");
    }
    if (all)
        cli_json_print(all);
    return CLI_EXIT_OK;
}

static int config_get(cli *c, const char *want)
{
    const char *key, *value, *path;
    kb_config_origin origin;
    for (size_t i = 0; kb_config_entry(&key, &value, &origin, &path, c->ctx, i) == 0; i++) {
        if (strcmp(key, want) != 0)
            continue;
        if (c->json)
            cli_json_print(entry_json(key, value, origin, path));
        else
            printf("%s\n", value);
        return CLI_EXIT_OK;
    }
    return cli_failf(c, KB_ERR_CONFIG, "unknown configuration key '%s'", want);
}

/* The layer above `layer` that sets key (an environment variable, a flag, or a project file
 * over the user's): what was just written will not be what kbpkg uses here. */
static bool overridden(const char **value, kb_config_origin *origin, const char **path, cli *c,
                       const char *want, kb_config_origin layer)
{
    const char *key;
    for (size_t i = 0; kb_config_entry(&key, value, origin, path, c->ctx, i) == 0; i++)
        if (strcmp(key, want) == 0)
            return *origin > layer;
    return false;
}

static void report_set(cli *c, const char *key, const char *value, kb_config_origin layer,
                       const char *path)
{
    const char *o_value = NULL, *o_path = NULL;
    kb_config_origin o_origin = KB_CONFIG_BUILTIN;
    bool over = overridden(&o_value, &o_origin, &o_path, c, key, layer);
    if (c->json) {
        json_t *out = json_pack("{s:s,s:s,s:s,s:s}", "key", key, "value", value, "origin",
                                kb_config_origin_name(layer), "path", path);
        if (over)
            json_object_set_new(out, "overridden_by",
                                json_pack("{s:s,s:s,s:o}", "origin",
                                          kb_config_origin_name(o_origin), "value", o_value, "path",
                                          o_path ? json_string(o_path) : json_null()));
        cli_json_print(out);
        return;
    }
    cli_say(c, "%s = %s (%s: %s)", key, value, kb_config_origin_name(layer), path);
    if (over)
        cli_eprint(
            c, "kbpkg: %swarning%s: %s stays %s here: the %s setting%s%s%s overrides the %s file",
            cli_color(c, "33"), cli_color(c, "0"), key, o_value, kb_config_origin_name(o_origin),
            o_path ? " (" : "", o_path ? o_path : "", o_path ? ")" : "",
            kb_config_origin_name(layer));
}

static const cli_option set_options[] = {
    {'u', "user", false, NULL, "<config.dir>/config.yaml (the default)"},
    {'p', "project", false, NULL, "./kbpkg.yaml"},
    {'s', "system", false, NULL, "$KBPKG_SYSTEM_CONFIG or /etc/kbpkg/config.yaml"},
    CLI_OPTIONS_END,
};

static int config_set(cli *c, int argc, char **argv)
{
    kb_config_origin layer = KB_CONFIG_USER;
    cli_getopt g;
    cli_getopt_build(&g, set_options);
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'u')
            layer = KB_CONFIG_USER;
        else if (opt == 'p')
            layer = KB_CONFIG_PROJECT;
        else if (opt == 's')
            layer = KB_CONFIG_SYSTEM;
        else
            return cli_option_error(c, "config set", opt, g.longs, argv);
    }
    if (argc - optind != 2)
        return cli_usage_error(c, "config set", "config set takes KEY VALUE");
    const char *words[2] = {argv[optind], argv[optind + 1]};
    int rc = kb_config_write(c->ctx, layer, words[0], words[1]);
    if (rc)
        return cli_fail(c, rc);
    char *path = NULL;
    if (kb_config_file_path(&path, c->ctx, layer) == 0)
        report_set(c, words[0], words[1], layer, path);
    free(path);
    return CLI_EXIT_OK;
}

static int run_list(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "config list", cli_no_options, argc, argv);
    if (!rc && first < argc)
        rc = cli_usage_error(c, "config list", "unexpected argument '%s'", argv[first]);
    return rc ? rc : config_list(c);
}

static int run_get(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "config get", cli_no_options, argc, argv);
    if (!rc && argc - first != 1)
        rc = cli_usage_error(c, "config get", "config get takes one KEY");
    return rc ? rc : config_get(c, argv[first]);
}

const cli_command cli_config_subcommands[] = {
    {
        .name = "list",
        .run = run_list,
        .summary = "every setting, its value and its layer (and file); the default",
        .options = cli_no_options,
    },
    {
        .name = "get",
        .run = run_get,
        .summary = "one setting's value",
        .args = (const cli_arg[]){{"KEY", 0, NULL}, CLI_ARGS_END},
        .options = cli_no_options,
    },
    {
        .name = "set",
        .run = config_set,
        .summary = "write KEY into a config file (default: the user file)",
        .args = (const cli_arg[]){{"KEY", 0, NULL}, {"VALUE", 0, NULL}, CLI_ARGS_END},
        .options = set_options,
        .help = "    warns when a higher layer (project, env, flag) still overrides it",
    },
    {.name = NULL},
};

/* `kbpkg config` alone lists ("show or change settings"); any other word is a typo. */
int cmd_config(cli *c, int argc, char **argv)
{
    if (argc < 2)
        return config_list(c);
    return cli_subcommand_error(c, cli_find_command("config"), argc, argv);
}
