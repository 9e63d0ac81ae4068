/* kbpkg uninstall org/name[@version] [--target T]: remove installed packages. */
#include "cli.h"

#include <getopt.h>

const cli_option cli_uninstall_options[] = {
    {'t', "target", true, "T", "remove only the install of this target"},
    CLI_OPTIONS_END,
};

int cmd_uninstall(cli *c, int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_build(&g, cli_uninstall_options);
    const char *target = NULL;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 't')
            target = optarg;
        else
            return cli_option_error(c, "uninstall", opt, g.longs, argv);
    }
    if (optind >= argc)
        return cli_usage_error(c, "uninstall", "which package?");
    json_t *arr = c->json ? json_array() : NULL;
    for (int i = optind; i < argc; i++) {
        size_t removed = 0;
        int rc = kb_cache_remove(&removed, c->ctx, argv[i], target);
        if (rc) /* what was removed before stays in the report */
            return cli_fail_package(c, rc, argv[i], CLI_SUGGEST_INSTALLED,
                                    arr ? json_pack("{s:o}", "uninstalled", arr) : NULL);
        if (arr)
            json_array_append_new(
                arr, json_pack("{s:s,s:I}", "package", argv[i], "removed", (json_int_t)removed));
        cli_say(c, "removed %s (%zu install%s)", argv[i], removed, removed == 1 ? "" : "s");
    }
    if (arr)
        cli_json_print(json_pack("{s:b,s:o}", "ok", 1, "uninstalled", arr));
    return CLI_EXIT_OK;
}
