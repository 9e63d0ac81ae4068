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

/* The version's published benchmark results (kb_package_bench_results) as JSON; NULL with
 * *why set (owned) when the registry could not say. */
static json_t *bench_results(char **why, kb_ctx *ctx, const kb_package_info *info)
{
    *why = NULL;
    kb_registry *r = NULL;
    char *text = NULL;
    int rc = kb_trust_registry_open(&r, ctx, NULL);
    if (!rc)
        rc = kb_package_bench_results(&text, r, kb_package_info_name(info),
                                      kb_package_info_version(info),
                                      kb_package_info_index_digest(info));
    json_t *doc = rc ? NULL : json_loads(text, 0, NULL);
    if (rc)
        *why = strdup(kb_ctx_last_error(ctx)->message);
    kb_ctx_clear_error(ctx);
    kb_string_free(text);
    kb_registry_free(r);
    return doc;
}

/* One line per case: device, shape, median time, rate and the baseline ratio. */
static void print_bench(json_t *results, const char *why)
{
    if (!results) {
        printf("benchmarks: unavailable (%s)\n", why ? why : "unknown error");
        return;
    }
    if (json_array_size(results) == 0) {
        printf("benchmarks: none published (kbpkg bench PACKAGE --publish)\n");
        return;
    }
    printf("benchmarks:\n");
    size_t i;
    json_t *res;
    json_array_foreach(results, i, res)
    {
        char *dev_json = json_dumps(json_object_get(res, "device"), JSON_COMPACT);
        char *dev = kb_bench_device_text(dev_json);
        printf("  %s on %s, %s\n", json_string_value(json_object_get(res, "target")),
               dev ? dev : "an unknown device", json_string_value(json_object_get(res, "created")));
        kb_string_free(dev);
        free(dev_json);
        size_t k;
        json_t *c;
        json_array_foreach(json_object_get(res, "cases"), k, c)
        {
            const char *unit = json_object_get(c, "tflops") ? "tflops" : "gbps";
            double rate = json_number_value(json_object_get(c, unit));
            json_t *base = json_object_get(c, "baseline");
            double brate = json_number_value(json_object_get(base, unit));
            printf("    %-24s %-16s %10.3f ms %9.2f %s",
                   json_string_value(json_object_get(c, "case")),
                   json_string_value(json_object_get(c, "shape")),
                   json_number_value(json_object_get(c, "seconds")) * 1e3, rate,
                   unit[0] == 't' ? "TFLOP/s" : "GB/s");
            if (json_is_object(base) && brate > 0)
                printf("   %.2fx %s\n", rate / brate,
                       json_string_value(json_object_get(base, "name")));
            else
                printf("   no baseline\n");
        }
    }
}

static json_t *info_json(const kb_package_info *info, const kb_package_list *installed,
                         json_t *bench, const char *bench_error)
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
    return json_pack("{s:s,s:s,s:s,s:s,s:o,s:o,s:o,s:o,s:O?,s:s?}", "name",
                     kb_package_info_name(info), "version", kb_package_info_version(info),
                     "summary", kb_package_info_summary(info), "index_digest",
                     kb_package_info_index_digest(info), "versions", versions, "targets", targets,
                     "installed", inst, "signatures", signatures, "benchmarks", bench,
                     "benchmarks_error", bench_error);
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
    char *bench_error = NULL;
    json_t *bench = bench_results(&bench_error, c->ctx, info);
    if (c->json) {
        cli_json_print(info_json(info, installed, bench, bench_error));
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
        print_bench(bench, bench_error);
    }
    json_decref(bench);
    free(bench_error);
    kb_package_list_free(installed);
    kb_package_info_free(info);
    return CLI_EXIT_OK;
}
