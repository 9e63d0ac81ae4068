/* kbpkg key generate|trust|list|revoke|export: the ed25519 keys that sign and verify indexes. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *key_json(const kb_trust_key *k)
{
    json_t *o =
        json_pack("{s:s,s:s,s:b,s:b,s:b}", "id", k->id, "kind",
                  k->has_private ? "private" : "public", "trusted", k->has_public || k->has_private,
                  "default", k->is_default, "revoked", k->revoked);
    if (o) {
        json_object_set_new(o, "name", k->name ? json_string(k->name) : json_null());
        json_object_set_new(o, "revoked_reason",
                            k->revoked_reason ? json_string(k->revoked_reason) : json_null());
    }
    return o;
}

/* Value of "--flag V" or "--flag=V" at argv[*i]; NULL when argv[*i] is not that flag. */
static const char *flag_value(int argc, char **argv, int *i, const char *flag)
{
    size_t n = strlen(flag);
    if (strncmp(argv[*i], flag, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static int key_generate(cli *c, int argc, char **argv)
{
    const char *name = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = flag_value(argc, argv, &i, "--name");
        if (!v)
            return cli_usage_error(c, "key", "unknown argument '%s' for key generate", argv[i]);
        name = v;
    }
    kb_trust_key *k = NULL;
    int rc = kb_trust_key_generate(&k, c->ctx, name);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(key_json(k));
    else if (!c->quiet)
        printf("%s\n", k->id);
    kb_trust_key_free(k);
    return CLI_EXIT_OK;
}

static int key_trust(cli *c, int argc, char **argv)
{
    if (argc != 2)
        return cli_usage_error(c, "key", "key trust takes one PEM file");
    kb_trust_key *k = NULL;
    int rc = kb_trust_key_import(&k, c->ctx, argv[1]);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(key_json(k));
    else
        cli_say(c, "trusted key %s", k->id);
    kb_trust_key_free(k);
    return CLI_EXIT_OK;
}

static void print_key_line(const kb_trust_key *k)
{
    char flags[64];
    snprintf(flags, sizeof(flags), "%s%s", k->is_default ? "default " : "",
             k->revoked ? "revoked" : "");
    printf("%-16s  %-7s  %-15s  %s%s%s\n", k->id, k->has_private ? "private" : "public", flags,
           k->name ? k->name : "", k->revoked_reason ? "  " : "",
           k->revoked_reason ? k->revoked_reason : "");
}

static int key_list(cli *c, int argc, char **argv)
{
    if (argc != 1)
        return cli_usage_error(c, "key", "key list takes no argument, got '%s'", argv[1]);
    kb_trust_key *keys = NULL;
    size_t n = 0;
    int rc = kb_trust_key_list(&keys, &n, c->ctx);
    if (rc)
        return cli_fail(c, rc);
    if (c->json) {
        json_t *all = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(all, key_json(&keys[i]));
        cli_json_print(all);
    } else if (!c->quiet) {
        for (size_t i = 0; i < n; i++)
            print_key_line(&keys[i]);
        if (n == 0)
            cli_eprint(c, "no keys (create one with 'kbpkg key generate')");
    }
    kb_trust_key_list_free(keys, n);
    return CLI_EXIT_OK;
}

static int key_revoke(cli *c, int argc, char **argv)
{
    const char *id = NULL, *reason = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v = flag_value(argc, argv, &i, "--reason");
        if (v)
            reason = v;
        else if (argv[i][0] != '-' && !id)
            id = argv[i];
        else
            return cli_usage_error(c, "key", "unexpected argument '%s' for key revoke", argv[i]);
    }
    if (!id)
        return cli_usage_error(c, "key", "key revoke needs a key id");
    int rc = kb_trust_key_revoke(c->ctx, id, reason);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s,s:b}", "id", id, "revoked", 1));
    else
        cli_say(c, "revoked key %s", id);
    return CLI_EXIT_OK;
}

static int key_export(cli *c, int argc, char **argv)
{
    if (argc != 2)
        return cli_usage_error(c, "key", "key export takes one key id");
    char *pem = NULL;
    int rc = kb_trust_key_export(&pem, c->ctx, argv[1]);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s,s:s}", "id", argv[1], "pem", pem));
    else
        fputs(pem, stdout);
    kb_string_free(pem);
    return CLI_EXIT_OK;
}

int cmd_key(cli *c, int argc, char **argv)
{
    static const struct {
        const char *name;
        int (*run)(cli *c, int argc, char **argv);
    } subs[] = {{"export", key_export},
                {"generate", key_generate},
                {"list", key_list},
                {"revoke", key_revoke},
                {"trust", key_trust}};
    if (argc < 2)
        return cli_usage_error(c, "key",
                               "key needs a subcommand (generate, trust, list, revoke, "
                               "export)");
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        if (strcmp(argv[1], subs[i].name) == 0)
            return subs[i].run(c, argc - 1, argv + 1);
    const char *names[sizeof(subs) / sizeof(subs[0])];
    for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
        names[i] = subs[i].name;
    return cli_unknown_subcommand(c, "key", argv[1], names, sizeof(names) / sizeof(names[0]));
}
