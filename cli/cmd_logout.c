/* kbpkg logout REGISTRY: forget the credentials stored for a registry's host. */
#include "cli.h"

#include <string.h>

int cmd_logout(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "logout", cli_no_options, argc, argv);
    if (!rc && argc - first != 1)
        rc = cli_usage_error(c, "logout", "logout takes one registry");
    if (rc)
        return rc;
    const char *registry = argv[first];
    rc = kb_trust_credentials_remove(c->ctx, registry);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s,s:b}", "registry", registry, "ok", 1));
    else
        cli_say(c, "logged out of %s", registry);
    return CLI_EXIT_OK;
}
