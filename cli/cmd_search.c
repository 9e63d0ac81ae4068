/* kbpkg search TERM: package names in the registry that contain TERM. */
#include "cli.h"

#include <stdio.h>

int cmd_search(cli *c, int argc, char **argv)
{
    if (argc > 2)
        return cli_usage_error(c, "search", "give one search term");
    char **names = NULL;
    size_t n = 0;
    int rc = kb_package_search(&names, &n, c->ctx, argc == 2 ? argv[1] : "", NULL);
    if (rc)
        return cli_fail(c, rc);
    if (c->json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, json_string(names[i]));
        cli_json_print(json_pack("{s:s,s:o}", "term", argc == 2 ? argv[1] : "", "packages", arr));
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", names[i]);
        if (n == 0)
            cli_say(c, "no package matches '%s'", argc == 2 ? argv[1] : "");
    }
    kb_strings_free(names, n);
    return n ? CLI_EXIT_OK : CLI_EXIT_NOT_FOUND;
}
