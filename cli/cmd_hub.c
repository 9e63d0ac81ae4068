/* kbpkg hub render: write a registry's packages as a static site anyone can browse offline. */
#include "cli.h"
#include "hub.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cmd_hub(cli *c, int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "render") != 0)
        return cli_usage_error(c, "hub",
                               argc < 2 ? "missing subcommand" : "unknown subcommand '%s'",
                               argc < 2 ? "" : argv[1]);
    const char *out = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strncmp(argv[i], "--out=", 6) == 0)
            out = argv[i] + 6;
        else if (strcmp(argv[i], "--out") == 0)
            return cli_usage_error(c, "hub", "--out needs a folder");
        else
            return cli_usage_error(c, "hub", "unexpected argument '%s'", argv[i]);
    }
    if (!out)
        return cli_usage_error(c, "hub", "render needs --out DIR");
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
