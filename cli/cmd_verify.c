/* kbpkg verify [org/name]: re-hash every installed file against its install record. */
#include "cli.h"

#include <stdio.h>

int cmd_verify(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "verify", cli_json_options, argc, argv);
    if (!rc && argc - first > 1)
        rc = cli_usage_error(c, "verify", "give at most one package name");
    if (rc)
        return rc;
    const char *name = first < argc ? argv[first] : NULL;
    kb_package_list *l = NULL;
    rc = kb_cache_verify(&l, c->ctx, name);
    if (!l)
        return name ? cli_fail_package(c, rc, name, CLI_SUGGEST_INSTALLED, NULL) : cli_fail(c, rc);
    size_t n = kb_package_list_count(l);
    if (name && n == 0) { /* nothing verified is not "ok": the name is wrong */
        kb_package_list_free(l);
        return cli_fail_not_installed(c, name, NULL);
    }
    json_t *arr = c->json ? json_array() : NULL;
    for (size_t i = 0; i < n; i++) {
        const kb_installed_pkg *p = kb_package_list_at(l, i);
        size_t issues = kb_package_list_issue_count(l, i);
        if (arr) {
            json_t *o = cli_installed_json(p);
            json_t *list = json_array();
            for (size_t k = 0; k < issues; k++)
                json_array_append_new(list, json_string(kb_package_list_issue(l, i, k)));
            json_object_set_new(o, "ok", json_boolean(issues == 0));
            json_object_set_new(o, "issues", list);
            json_array_append_new(arr, o);
            continue;
        }
        cli_say(c, "%s %s %s %s", issues ? "FAIL" : "ok  ", p->name, p->version, p->target);
        for (size_t k = 0; k < issues; k++)
            cli_eprint(c, "  %s", kb_package_list_issue(l, i, k));
    }
    json_t *report = arr ? json_pack("{s:b,s:o}", "ok", rc == 0, "packages", arr) : NULL;
    if (!arr && n == 0)
        cli_say(c, "nothing installed");
    kb_package_list_free(l);
    if (rc) /* one document: the packages and their issues, with the error */
        return cli_fail_report(c, rc, report);
    cli_json_print(report);
    return CLI_EXIT_OK;
}
