/* kbpkg info org/name[@c]: versions, summary and targets in the registry, and what is installed. */
#include "cli.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The declared exports, "name(args) -> returns" per line, in the index's (sorted) order. */
static void print_signatures(kb_ctx *ctx, const kb_package_info *info)
{
    const char *sigs = kb_package_info_signatures(info);
    json_t *root = sigs ? json_loads(sigs, 0, NULL) : NULL;
    const char *key;
    json_t *v;
    if (json_object_size(root))
        printf("exports:\n");
    json_object_foreach(root, key, v)
    {
        char *text = NULL;
        if (kb_signature_text(&text, ctx, sigs, key) == 0)
            printf("  %s\n", text);
        free(text);
    }
    json_decref(root);
}

static json_t *info_json(const kb_package_info *info, const kb_package_list *installed)
{
    json_t *versions = json_array(), *targets = json_array(), *inst = json_array();
    for (size_t i = 0; i < kb_package_info_version_count(info); i++)
        json_array_append_new(versions, json_string(kb_package_info_version_at(info, i)));
    for (size_t i = 0; i < kb_package_info_target_count(info); i++) {
        const char *t, *bk, *md;
        kb_package_info_target(&t, &bk, &md, info, i);
        json_array_append_new(targets, json_pack("{s:s,s:s?,s:s}", "target", t, "build_key", bk,
                                                 "manifest_digest", md));
    }
    for (size_t i = 0; i < kb_package_list_count(installed); i++)
        json_array_append_new(inst, cli_installed_json(kb_package_list_at(installed, i)));
    const char *sigs = kb_package_info_signatures(info);
    json_t *signatures = sigs ? json_loads(sigs, 0, NULL) : NULL;
    if (!json_is_object(signatures)) {
        json_decref(signatures);
        signatures = json_object();
    }
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o}", "name", kb_package_info_name(info),
                     "version", kb_package_info_version(info), "summary",
                     kb_package_info_summary(info), "index_digest",
                     kb_package_info_index_digest(info), "versions", versions, "targets", targets,
                     "installed", inst, "signatures", signatures);
}

int cmd_info(cli *c, int argc, char **argv)
{
    int first = 0, rc = cli_parse_none(&first, c, "info", cli_json_options, argc, argv);
    if (!rc && argc - first != 1)
        rc = cli_usage_error(c, "info", "give one package, e.g. radeonflow/gemm");
    if (rc)
        return rc;
    const char *ref = argv[first];
    kb_package_info *info = NULL;
    rc = kb_package_info_get(&info, c->ctx, ref, NULL);
    if (rc)
        return cli_fail_package(c, rc, ref, CLI_SUGGEST_REGISTRY | CLI_SUGGEST_INSTALLED, NULL);
    kb_package_list *installed = NULL;
    rc = kb_cache_list_installed(&installed, c->ctx, kb_package_info_name(info));
    if (rc) {
        kb_package_info_free(info);
        return cli_fail(c, rc);
    }
    if (c->json) {
        cli_json_print(info_json(info, installed));
    } else {
        printf("%s %s\n", kb_package_info_name(info), kb_package_info_version(info));
        if (*kb_package_info_summary(info))
            printf("  %s\n", kb_package_info_summary(info));
        printf("versions:");
        for (size_t i = 0; i < kb_package_info_version_count(info); i++)
            printf(" %s", kb_package_info_version_at(info, i));
        printf("\nindex %s\ntargets:\n", kb_package_info_index_digest(info));
        for (size_t i = 0; i < kb_package_info_target_count(info); i++) {
            const char *t, *bk, *md;
            kb_package_info_target(&t, &bk, &md, info, i);
            printf("  %-36s %.19s\n", t, md);
        }
        print_signatures(c->ctx, info);
        for (size_t i = 0; i < kb_package_list_count(installed); i++) {
            const kb_installed_pkg *p = kb_package_list_at(installed, i);
            printf("installed: %s %s in %s\n", p->version, p->target, p->dir);
        }
    }
    kb_package_list_free(installed);
    kb_package_info_free(info);
    return CLI_EXIT_OK;
}
