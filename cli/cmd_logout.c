/* kbpkg logout REGISTRY: forget the credentials stored for a registry's host. */
#include "cli.h"

#include <string.h>

int cmd_logout(cli *c, int argc, char **argv)
{
    if (argc != 2 || argv[1][0] == '-')
        return cli_usage_error(c, "logout", "logout takes one registry");
    int rc = kb_trust_credentials_remove(c->ctx, argv[1]);
    if (rc)
        return cli_fail(c, rc);
    if (c->json)
        cli_json_print(json_pack("{s:s,s:b}", "registry", argv[1], "ok", 1));
    else
        cli_say(c, "logged out of %s", argv[1]);
    return CLI_EXIT_OK;
}
