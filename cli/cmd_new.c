/* kbpkg new org/name [DIR]: scaffold a package that builds and tests on CPU as written. */
#include "cli.h"

#include <string.h>

int cmd_new(cli *c, int argc, char **argv)
{
    if (argc < 2 || argc > 3)
        return cli_usage_error(c, "new", "expected org/name and an optional folder");
    const char *name = argv[1];
    const char *slash = strchr(name, '/');
    const char *dir = argc == 3 ? argv[2] : slash ? slash + 1 : name;
    int rc = kb_package_new(c->ctx, name, dir);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s, s:s}", "package", name, "dir", dir));
    else
        cli_say(c, "created %s in %s (try: kbpkg build %s --target cpu && kbpkg test %s)", name,
                dir, dir, dir);
    return CLI_EXIT_OK;
}
