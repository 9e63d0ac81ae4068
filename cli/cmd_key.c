/* kbpkg key generate|trust|list|revoke|export: the ed25519 keys that sign and verify indexes. */
#include "cli.h"

#include <getopt.h>
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

/* Parse a subcommand that takes no option of its own and exactly want operands. */
static int plain_args(cli *c, const char *sub, const cli_option *options, int want,
                      const char *what, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, sub, options, argc, argv);
    if (!rc && argc - first != want)
        rc = cli_usage_error(c, sub, "%s", what);
    return rc;
}

static const cli_option generate_options[] = {
    {'n', "name", false, "N", "a name to know the key by"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

static int key_generate(cli *c, int argc, char **argv)
{
    const char *name = NULL;
    cli_getopt g;
    cli_getopt_build(&g, generate_options);
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'n')
            name = optarg;
        else
            return cli_option_error(c, "key generate", opt, g.longs, argv);
    }
    if (optind < argc)
        return cli_usage_error(c, "key generate", "unexpected argument '%s'", argv[optind]);
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
    int rc =
        plain_args(c, "key trust", cli_no_options, 1, "key trust takes one PEM file", argc, argv);
    if (rc)
        return rc;
    const char *file = argv[optind];
    kb_trust_key *k = NULL;
    rc = kb_trust_key_import(&k, c->ctx, file);
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
    int rc =
        plain_args(c, "key list", cli_json_options, 0, "key list takes no argument", argc, argv);
    if (rc)
        return rc;
    kb_trust_key *keys = NULL;
    size_t n = 0;
    rc = kb_trust_key_list(&keys, &n, c->ctx);
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

static const cli_option revoke_options[] = {
    {'r', "reason", false, "R", "why (recorded with the revocation)"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

static int key_revoke(cli *c, int argc, char **argv)
{
    const char *reason = NULL;
    cli_getopt g;
    cli_getopt_build(&g, revoke_options);
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'r')
            reason = optarg;
        else
            return cli_option_error(c, "key revoke", opt, g.longs, argv);
    }
    if (optind >= argc)
        return cli_usage_error(c, "key revoke", "key revoke needs a key id");
    if (optind + 1 < argc)
        return cli_usage_error(c, "key revoke", "unexpected argument '%s' for key revoke",
                               argv[optind + 1]);
    const char *id = argv[optind];
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
    int rc =
        plain_args(c, "key export", cli_no_options, 1, "key export takes one key id", argc, argv);
    if (rc)
        return rc;
    const char *id = argv[optind];
    char *pem = NULL;
    rc = kb_trust_key_export(&pem, c->ctx, id);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s,s:s}", "id", id, "pem", pem));
    else
        fputs(pem, stdout);
    kb_string_free(pem);
    return CLI_EXIT_OK;
}

const cli_command cli_key_subcommands[] = {
    {
        .name = "generate",
        .run = key_generate,
        .summary = "a new ed25519 key; prints its id (the default when none is)",
        .options = generate_options,
    },
    {
        .name = "trust",
        .run = key_trust,
        .summary = "trust signatures by the ed25519 public key in a PEM file",
        .args = (const cli_arg[]){{"FILE", 0, NULL}, CLI_ARGS_END},
        .options = cli_no_options,
    },
    {
        .name = "list",
        .run = key_list,
        .summary = "every key: id, private/public, default, revoked",
        .options = cli_json_options,
    },
    {
        .name = "revoke",
        .run = key_revoke,
        .summary = "never trust ID again",
        .args = (const cli_arg[]){{"ID", 0, NULL}, CLI_ARGS_END},
        .options = revoke_options,
    },
    {
        .name = "export",
        .run = key_export,
        .summary = "print ID's public key (PEM) to share",
        .args = (const cli_arg[]){{"ID", 0, NULL}, CLI_ARGS_END},
        .options = cli_no_options,
    },
    {.name = NULL},
};
