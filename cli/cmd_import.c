/* kbpkg import PROJECT DIR: a Hugging Face kernel-builder project as a new kbpkg package. */
#include "cli.h"

#include <getopt.h>

const cli_option cli_import_options[] = {
    {'n', "name", false, "org/name",
     "the package name (default: kernels-community/<general.name>)"},
    CLI_OPTION_GROUP(cli_json_options),
    CLI_OPTIONS_END,
};

int cmd_import(cli *c, int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_build(&g, cli_import_options);
    const char *name = NULL;
    int opt;
    optind = 1;
    while ((opt = getopt_long(argc, argv, g.shorts, g.longs, NULL)) != -1) {
        if (opt == 'n')
            name = optarg;
        else
            return cli_option_error(c, "import", opt, g.longs, argv);
    }
    if (argc - optind != 2)
        return cli_usage_error(c, "import", "expected a kernel-builder project and a new folder");
    const char *project = argv[optind], *dir = argv[optind + 1];
    char **notes = NULL;
    size_t count = 0;
    int rc = kb_package_import(&notes, &count, c->ctx, project, dir, name);
    if (rc)
        return cli_fail(c, rc);
    if (c->json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < count; i++)
            json_array_append_new(arr, json_string(notes[i]));
        cli_json_print(
            json_pack("{s:s,s:s,s:o}", "project", project, "dir", dir, "not_carried_over", arr));
    } else {
        cli_say(c, "imported %s into %s (kernel.yaml, src/, include/)", project, dir);
        if (count)
            cli_say(c, "not carried over (%zu):", count);
        for (size_t i = 0; i < count; i++)
            cli_say(c, "  - %s", notes[i]);
        cli_say(c, "next: write the C-ABI wrappers, then kbpkg build %s", dir);
    }
    kb_strings_free(notes, count);
    return CLI_EXIT_OK;
}
