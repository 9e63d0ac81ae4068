/* kbpkg fetch --source org/name[@c]: keep a package's sources for offline builds.
 * kbpkg fetch [DIR]: download a package folder's url sources and dependencies. */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>

/* A package folder: its url sources and header-only dependencies, into the cache. */
static int fetch_inputs(cli *c, const char *dir, int args)
{
    if (args > 1)
        return cli_usage_error(c, "fetch", "one package folder only (or --source PKG...)");
    size_t fetched = 0;
    int rc = kb_fetch_inputs(&fetched, c->ctx, dir);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:b,s:s,s:i}", "ok", 1, "dir", dir, "downloaded", (int)fetched));
    else
        cli_say(c, "%s: url sources and dependencies in the cache (%zu downloaded)", dir, fetched);
    return CLI_EXIT_OK;
}

const cli_option cli_fetch_options[] = {
    {'s', "source", false, NULL,
     "the source artifact of each package (what 'install --offline'\nbuilds from)"},
    CLI_OPTION_GROUP(cli_trust_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_fetch(cli *c, int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_build(&g, cli_fetch_options);
    bool source = false;
    cli_trust trust = {0};
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 's')
            source = true;
        else if (!cli_trust_option(&trust, opt))
            return cli_option_error(c, "fetch", opt, g.longs, argv);
    }
    cli_trust_warn(c, &trust);
    if (!source)
        return fetch_inputs(c, optind < argc ? argv[optind] : ".", argc - optind);
    if (optind >= argc)
        return cli_usage_error(c, "fetch", "which package?");
    json_t *arr = c->json ? json_array() : NULL;
    for (int i = optind; i < argc; i++) {
        char *version = NULL;
        int rc = kb_fetch_source(&version, c->ctx, argv[i], NULL, trust.allow_unsigned);
        if (rc) /* what was fetched before stays in the report */
            return cli_fail_package(c, rc, argv[i], CLI_SUGGEST_REGISTRY,
                                    arr ? json_pack("{s:o}", "fetched", arr) : NULL);
        if (arr)
            json_array_append_new(arr,
                                  json_pack("{s:s,s:s}", "package", argv[i], "version", version));
        cli_say(c, "fetched the source of %s %s (offline installs can build it)", argv[i], version);
        free(version);
    }
    if (arr)
        cli_json_print(json_pack("{s:b,s:o}", "ok", 1, "fetched", arr));
    return CLI_EXIT_OK;
}
