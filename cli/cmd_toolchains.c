/* kbpkg toolchains: the compilers kbpkg found, their versions and the archs they build. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static json_t *toolchain_json(const kb_toolchain_info *t)
{
    json_t *archs = json_array();
    for (size_t i = 0; i < t->arch_count; i++)
        json_array_append_new(archs, json_string(t->archs[i]));
    return json_pack("{s:s, s:s, s:b, s:s?, s:s?, s:s?, s:s?, s:o}", "name", t->name, "backend",
                     t->backend, "found", t->found, "version", t->version, "path", t->path, "id",
                     t->id, "note", t->note, "archs", archs);
}

int cmd_toolchains(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "toolchains", cli_json_options, argc, argv);
    if (!rc && first < argc)
        rc = cli_usage_error(c, "toolchains", "unexpected argument '%s'", argv[first]);
    if (rc)
        return rc;
    kb_toolchain_list *list = NULL;
    rc = kb_toolchains_list(&list, c->ctx);
    if (rc)
        return cli_fail(c, rc);
    if (c->json) {
        json_t *a = json_array();
        for (size_t i = 0; i < list->count; i++)
            json_array_append_new(a, toolchain_json(&list->items[i]));
        cli_json_print(json_pack("{s:o}", "toolchains", a));
    } else if (!c->quiet) {
        for (size_t i = 0; i < list->count; i++) {
            const kb_toolchain_info *t = &list->items[i];
            if (!t->found) {
                printf("%-9s %-6s missing: %s\n", t->name, t->backend, t->note ? t->note : "");
                continue;
            }
            printf("%-9s %-6s %-12s %s\n", t->name, t->backend, t->version, t->path);
            printf("          archs:");
            for (size_t j = 0; j < t->arch_count; j++)
                printf(" %s", t->archs[j]);
            printf("\n");
            if (t->note)
                printf("          note: %s\n", t->note);
        }
    }
    kb_toolchain_list_free(list);
    return CLI_EXIT_OK;
}
