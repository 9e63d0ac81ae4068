/* kb_package_bench_results: the benchmark results published next to a version (docs/bench.md). */
#include "registry/oci.h"
#include "registry/referrers.h"
#include "registry/registry.h"
#include "kbpkg/build.h"
#include "kbpkg/info.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define BENCH_LAYER_MAX ((size_t)1024 * 1024)

/* The results layer of manifest m if it is a bench artifact about index_digest, else NULL (a
 * foreign or broken referrer is skipped with a warning: one bad result must not hide the rest). */
static json_t *read_result(kb_registry *r, const char *name, const kb_registry_manifest *m,
                           const char *index_digest)
{
    kb_ctx *ctx = r->ctx;
    kb_oci_manifest man;
    json_t *doc = NULL;
    if (kbi_oci_manifest_parse(&man, ctx, m->data, m->len, m->digest) != 0) {
        kb_ctx_clear_error(ctx);
        return NULL;
    }
    bool ours = man.artifact_type && strcmp(man.artifact_type, KB_BENCH_ARTIFACT_TYPE) == 0 &&
                man.subject && man.subject->digest &&
                strcmp(man.subject->digest, index_digest) == 0 && man.layer_count == 1;
    kb_buf layer = KB_BUF_INIT;
    if (ours &&
        kbi_registry_blob_get_mem(&layer, r, name, man.layers[0].digest, BENCH_LAYER_MAX) == 0)
        doc = json_loadb(layer.data, layer.len, 0, NULL);
    if (ours && !json_is_object(doc)) {
        kbi_log(ctx, KB_LOG_WARN, "%s: benchmark results %s are unreadable: skipped", name,
                m->digest);
        kb_ctx_clear_error(ctx);
        json_decref(doc);
        doc = NULL;
    }
    if (doc)
        json_object_set_new(doc, "digest", json_string(m->digest));
    kbi_buf_free(&layer);
    kbi_oci_manifest_clear(&man);
    return doc;
}

static bool seen(const kb_strv *digests, const char *digest)
{
    for (size_t i = 0; i < digests->len; i++)
        if (strcmp(digests->items[i], digest) == 0)
            return true;
    return false;
}

static void add_result(json_t *out, kb_strv *digests, kb_registry *r, const char *name,
                       const char *reference, const char *index_digest)
{
    kb_registry_manifest *m = NULL;
    if (kbi_registry_manifest_get(&m, r, name, reference) != 0) {
        kb_ctx_clear_error(r->ctx);
        return;
    }
    if (!seen(digests, m->digest)) {
        kbi_strv_push(digests, m->digest);
        json_t *doc = read_result(r, name, m, index_digest);
        if (doc)
            json_array_append_new(out, doc);
    }
    kbi_registry_manifest_free(m);
}

static const char *field(json_t *doc, const char *key)
{
    const char *s = json_string_value(json_object_get(doc, key));
    return s ? s : "";
}

/* By target, then newest first. */
static int by_target_then_newest(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int c = strcmp(field(x, "target"), field(y, "target"));
    return c ? c : strcmp(field(y, "created"), field(x, "created"));
}

KB_EXTERN int kb_package_bench_results(char **json_out, kb_registry *registry, const char *name,
                                       const char *version, const char *index_digest)
{
    *json_out = NULL;
    kb_ctx *ctx = registry->ctx;
    kb_oci_index ix;
    kb_strv tags = KB_STRV_INIT, digests = KB_STRV_INIT;
    json_t *out = json_array();
    char *prefix = kbi_asprintf("kbbench-%s-", version);
    int rc = out && prefix ? kbi_registry_referrers(&ix, registry, name, index_digest)
                           : kbi_error_oom(ctx);
    for (size_t i = 0; !rc && i < ix.manifest_count; i++)
        if (ix.manifests[i].artifact_type &&
            strcmp(ix.manifests[i].artifact_type, KB_BENCH_ARTIFACT_TYPE) == 0)
            add_result(out, &digests, registry, name, ix.manifests[i].digest, index_digest);
    if (!rc)
        kbi_oci_index_clear(&ix);
    /* each result also has a tag of its own: one a concurrent publish dropped from the referrers
     * index is still found */
    if (!rc)
        rc = kbi_registry_tags(&tags, registry, name);
    for (size_t i = 0; !rc && i < tags.len; i++)
        if (kbi_str_starts(tags.items[i], prefix))
            add_result(out, &digests, registry, name, tags.items[i], index_digest);
    if (!rc) {
        size_t n = json_array_size(out);
        json_t **items = calloc(n + 1, sizeof(*items));
        for (size_t i = 0; items && i < n; i++)
            items[i] = json_incref(json_array_get(out, i));
        if (items)
            qsort(items, n, sizeof(*items), by_target_then_newest);
        json_array_clear(out);
        for (size_t i = 0; items && i < n; i++)
            json_array_append_new(out, items[i]);
        free(items);
        *json_out = json_dumps(out, JSON_COMPACT);
        rc = *json_out ? 0 : kbi_error_oom(ctx);
    }
    json_decref(out);
    kbi_strv_free(&tags);
    kbi_strv_free(&digests);
    free(prefix);
    return rc;
}
