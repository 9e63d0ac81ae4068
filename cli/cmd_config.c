/* kbpkg config list|get KEY|set KEY VALUE: settings, their values and where they came from. */
#include "cli.h"

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

/* --user (default), --project or --system; returns -1 for anything else. */
static int layer_flag(const char *arg, kb_config_origin *layer)
{
    if (strcmp(arg, "--user") == 0)
        *layer = KB_CONFIG_USER;
    else if (strcmp(arg, "--project") == 0)
        *layer = KB_CONFIG_PROJECT;
    else if (strcmp(arg, "--system") == 0)
        *layer = KB_CONFIG_SYSTEM;
    else
        return -1;
    return 0;
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

static int config_set(cli *c, int argc, char **argv)
{
    kb_config_origin layer = KB_CONFIG_USER;
    const char *words[2];
    int n = 0;
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1] && layer_flag(argv[i], &layer))
            return cli_usage_error(c, "config", "unknown option '%s'", argv[i]);
        else if (argv[i][0] != '-' || !argv[i][1]) {
            if (n == 2)
                return cli_usage_error(c, "config", "config set takes KEY VALUE");
            words[n++] = argv[i];
        }
    }
    if (n != 2)
        return cli_usage_error(c, "config", "config set takes KEY VALUE");
    int rc = kb_config_write(c->ctx, layer, words[0], words[1]);
    if (rc)
        return cli_fail(c, rc);
    char *path = NULL;
    if (kb_config_file_path(&path, c->ctx, layer) == 0)
        report_set(c, words[0], words[1], layer, path);
    free(path);
    return CLI_EXIT_OK;
}

int cmd_config(cli *c, int argc, char **argv)
{
    static const char *const subcommands[] = {"list", "get", "set"};
    if (argc < 2)
        return config_list(c); /* "show or change settings": plain `kbpkg config` shows them */
    if (strcmp(argv[1], "list") != 0 && strcmp(argv[1], "get") != 0 && strcmp(argv[1], "set") != 0)
        return cli_unknown_subcommand(c, "config", argv[1], subcommands, 3);
    if (strcmp(argv[1], "list") == 0 && argc == 2)
        return config_list(c);
    if (strcmp(argv[1], "get") == 0 && argc == 3)
        return config_get(c, argv[2]);
    if (strcmp(argv[1], "set") == 0)
        return config_set(c, argc - 1, argv + 1);
    return cli_usage_error(c, "config", "bad config command");
}
