/* kbpkg search TERM: package names in the registry that contain TERM. */
#include "cli.h"

#include <stdio.h>

int cmd_search(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "search", cli_json_options, argc, argv);
    if (!rc && argc - first > 1)
        rc = cli_usage_error(c, "search", "give one search term");
    if (rc)
        return rc;
    const char *term = first < argc ? argv[first] : "";
    char **names = NULL;
    size_t n = 0;
    rc = kb_package_search(&names, &n, c->ctx, term, NULL);
    if (rc)
        return cli_fail(c, rc);
    if (c->json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, json_string(names[i]));
        cli_json_print(json_pack("{s:s,s:o}", "term", term, "packages", arr));
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", names[i]);
        if (n == 0)
            cli_say(c, "no package matches '%s'", term);
    }
    kb_strings_free(names, n);
    return n ? CLI_EXIT_OK : CLI_EXIT_NOT_FOUND;
}
