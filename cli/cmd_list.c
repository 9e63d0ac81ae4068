/* kbpkg list [org/name]: installed packages. */
#include "cli.h"

#include <stdio.h>

json_t *cli_installed_json(const kb_installed_pkg *p)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:s?,s:s?,s:s?,s:s?,s:b,s:I}", "name", p->name, "version",
                     p->version, "target", p->target, "dir", p->dir, "artifact_digest",
                     p->artifact_digest, "index_digest", p->index_digest, "registry", p->registry,
                     "reason", p->reason, "local_build", p->local_build, "bytes",
                     (json_int_t)p->bytes);
}

int cmd_list(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "list", cli_json_options, argc, argv);
    if (!rc && argc - first > 1)
        rc = cli_usage_error(c, "list", "give at most one package name");
    if (rc)
        return rc;
    const char *name = first < argc ? argv[first] : NULL;
    kb_package_list *l = NULL;
    rc = kb_cache_list_installed(&l, c->ctx, name);
    if (rc) /* "cpu-add" without its org is invalid: the installed kbtest/cpu-add is suggested */
        return name ? cli_fail_package(c, rc, name, CLI_SUGGEST_INSTALLED, NULL) : cli_fail(c, rc);
    size_t n = kb_package_list_count(l);
    if (name && n == 0) { /* asked about one package: an empty list would read as success */
        kb_package_list_free(l);
        return cli_fail_not_installed(c, name, NULL);
    }
    if (c->json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, cli_installed_json(kb_package_list_at(l, i)));
        cli_json_print(json_pack("{s:s,s:o}", "cache", kb_cache_dir(c->ctx), "installed", arr));
    } else if (n == 0) {
        cli_say(c, "nothing installed in %s", kb_cache_dir(c->ctx));
    } else {
        for (size_t i = 0; i < n; i++) {
            const kb_installed_pkg *p = kb_package_list_at(l, i);
            printf("%-32s %-10s %-36s %8.1f MiB%s\n", p->name, p->version, p->target,
                   (double)p->bytes / (1024.0 * 1024.0), p->local_build ? "  (built here)" : "");
        }
    }
    kb_package_list_free(l);
    return CLI_EXIT_OK;
}
