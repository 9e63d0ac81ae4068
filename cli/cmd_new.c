/* kbpkg new org/name [DIR]: scaffold a package that builds and tests on CPU as written. */
#include "cli.h"

#include <string.h>

int cmd_new(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "new", cli_no_options, argc, argv);
    if (!rc && (argc - first < 1 || argc - first > 2))
        rc = cli_usage_error(c, "new", "expected org/name and an optional folder");
    if (rc)
        return rc;
    const char *name = argv[first];
    const char *slash = strchr(name, '/');
    const char *dir = argc - first == 2 ? argv[first + 1] : slash ? slash + 1 : name;
    rc = kb_package_new(c->ctx, name, dir);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s, s:s}", "package", name, "dir", dir));
    else
        cli_say(c, "created %s in %s (try: kbpkg build %s --target cpu && kbpkg test %s)", name,
                dir, dir, dir);
    return CLI_EXIT_OK;
}
