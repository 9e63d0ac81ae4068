/* kbpkg hub render: write a registry's packages as a static site anyone can browse offline. */
#include "cli.h"
#include "hub.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cli_option render_options[] = {
    {'o', "out", false, "DIR", "where the site goes (created; pages are replaced)",
     CLI_OPT_REQUIRED},
    CLI_OPTION_GROUP(cli_registry_options),
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

static int hub_render(cli *c, int argc, char **argv)
{
    const char *out = NULL;
    cli_getopt g;
    cli_getopt_build(&g, render_options);
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'o')
            out = optarg;
        else
            return cli_option_error(c, "hub render", opt, g.longs, argv);
    }
    if (optind < argc)
        return cli_usage_error(c, "hub render", "unexpected argument '%s'", argv[optind]);
    if (!out)
        return cli_usage_error(c, "hub render", "render needs --out DIR");
    size_t packages = 0;
    char *why = NULL;
    int rc = kbi_hub_render(&packages, &why, c->ctx, NULL, out, cli_on_event, c);
    if (rc) { /* the hub's own reason, or libkbpkg's in the ctx */
        int exit_code = why || rc == KB_ERR_NOMEM
                            ? cli_failf(c, rc, "%s", why ? why : kb_strerror(rc))
                            : cli_fail(c, rc);
        free(why);
        return exit_code;
    }
    if (c->json)
        cli_json_print(
            json_pack("{s:b,s:s,s:I}", "ok", 1, "out", out, "packages", (json_int_t)packages));
    else
        cli_say(c, "wrote %s/index.html and %zu package page%s", out, packages,
                packages == 1 ? "" : "s");
    return CLI_EXIT_OK;
}

const cli_command cli_hub_subcommands[] = {
    {
        .name = "render",
        .run = hub_render,
        .summary = "write DIR/index.html and one page per package",
        .options = render_options,
    },
    {.name = NULL},
};
