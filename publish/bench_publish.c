/* kb_bench_publish: benchmark results as OCI artifacts whose subject is the package index. */
#include "publish/publish.h"
#include "registry/oci.h"
#include "registry/referrers.h"
#include "registry/registry.h"
#include "kbpkg/build.h"
#include "kbpkg/trust.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Results are small; a layer this large is not one. */
#define BENCH_LAYER_MAX ((size_t)1024 * 1024)

/* The layer of one target's results (docs/bench.md), canonical JSON. Owned; NULL on OOM. */
static char *results_layer(const kb_bench_result *res, const kb_bench_target_result *t,
                           const char *index_digest, const char *created)
{
    json_t *cases = json_loads(t->cases ? t->cases : "[]", 0, NULL);
    json_t *device = t->device ? json_loads(t->device, 0, NULL) : NULL;
    json_t *doc =
        json_pack("{s:i, s:s, s:s, s:s, s:s, s:o, s:o, s:s, s:s, s:s}", "schema", 1, "package",
                  res->name, "version", res->version, "index_digest", index_digest, "target",
                  t->target, "device", device ? device : json_object(), "cases",
                  cases ? cases : json_array(), "kbpkg_version", kb_version(), "created", created,
                  "source", res->installed ? "installed" : "package folder");
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(doc);
    return text;
}

static const char *device_name(const kb_bench_target_result *t, json_t **hold)
{
    *hold = t->device ? json_loads(t->device, 0, NULL) : NULL;
    const char *name = json_string_value(json_object_get(*hold, "name"));
    return name ? name : "unknown";
}

/* Push one target's results: the layer, the empty config, the manifest under its own tag
 * "kbbench-<version>-<16 hex of the layer>" (so it stays reachable whatever happens to the
 * referrers index). *desc gets its descriptor for the referrers index. */
static int push_one(kb_oci_descriptor *desc, kb_registry *r, const kb_bench_result *res,
                    const kb_bench_target_result *t, const kb_registry_manifest *index,
                    const char *created)
{
    kb_ctx *ctx = r->ctx;
    kb_oci_manifest m = {0};
    kb_oci_descriptor layer = {0};
    kb_buf doc = KB_BUF_INIT;
    json_t *hold = NULL;
    char *text = results_layer(res, t, index->digest, created), *tag = NULL, *digest = NULL;
    int rc = text ? 0 : kbi_error_oom(ctx);
    if (!rc && strlen(text) > BENCH_LAYER_MAX)
        rc = kbi_error_set(ctx, KB_ERR_LIMIT, "%s %s: %zu bytes of results (at most %zu)",
                           res->name, t->target, strlen(text), BENCH_LAYER_MAX);
    if (!rc)
        rc = kbi_oci_descriptor_for(&layer, KB_BENCH_ARTIFACT_TYPE, text, strlen(text));
    if (!rc)
        rc = kbi_registry_blob_put_mem(NULL, r, res->name, text, strlen(text));
    if (!rc)
        rc = kbi_registry_blob_put_mem(NULL, r, res->name, "{}", 2);
    if (!rc)
        rc = kbi_oci_referrer_manifest(&m, ctx, KB_BENCH_ARTIFACT_TYPE, &layer, index);
    const char *dev = device_name(t, &hold);
    if (!rc)
        rc = kbi_oci_annotate(&m.annotations, "dev.kbpkg.target", t->target) ||
                     kbi_oci_annotate(&m.annotations, "dev.kbpkg.device", dev) ||
                     kbi_oci_annotate(&m.annotations, "org.opencontainers.image.created", created)
                 ? kbi_error_oom(ctx)
                 : 0;
    if (!rc)
        rc = kbi_oci_manifest_serialize(&doc, ctx, &m);
    if (!rc) {
        tag = kbi_asprintf("kbbench-%s-%.16s", res->version, kbi_digest_hex(layer.digest));
        rc = tag ? kbi_registry_manifest_put(&digest, r, res->name, tag, KB_MT_OCI_MANIFEST,
                                             doc.data, doc.len)
                 : kbi_error_oom(ctx);
    }
    if (!rc)
        rc = kbi_oci_descriptor_for(desc, KB_MT_OCI_MANIFEST, doc.data, doc.len);
    if (!rc) {
        desc->artifact_type = kbi_strdup(KB_BENCH_ARTIFACT_TYPE);
        rc = !desc->artifact_type ||
                     kbi_oci_annotate(&desc->annotations, "dev.kbpkg.target", t->target) ||
                     kbi_oci_annotate(&desc->annotations, "dev.kbpkg.device", dev) ||
                     kbi_oci_annotate(&desc->annotations, "org.opencontainers.image.created",
                                      created)
                 ? kbi_error_oom(ctx)
                 : 0;
    }
    if (!rc)
        kbi_event_emit(ctx, KB_EVENT_PUBLISHED, res->name, "%s %s bench results %s", res->version,
                       t->target, digest);
    json_decref(hold);
    kbi_buf_free(&doc);
    kbi_oci_descriptor_clear(&layer);
    kbi_oci_manifest_clear(&m);
    free(text);
    free(tag);
    free(digest);
    return rc;
}

/* The version's index, admitted by the trust policy as an install would admit it. */
static int admitted_index(kb_registry_manifest **index, kb_ctx *ctx, kb_registry *r,
                          const kb_bench_result *res, int allow_unsigned)
{
    int rc = kbi_registry_manifest_get(index, r, res->name, res->version);
    if (rc == KB_ERR_NOT_FOUND)
        kbi_error_prefix(ctx, "%s@%s is not published in %s (publish the package first)", res->name,
                         res->version, kbi_registry_ref(r));
    if (!rc)
        rc = kb_trust_check(ctx, r, res->name, res->version, (*index)->digest, allow_unsigned != 0);
    return rc;
}

KB_EXTERN int kb_bench_publish(char ***digests_out, size_t *count_out, kb_ctx *ctx,
                               const kb_bench_result *res, const char *registry, int allow_unsigned)
{
    if (digests_out)
        *digests_out = NULL;
    if (count_out)
        *count_out = 0;
    if (!res->ran)
        return kbi_error_set(ctx, KB_ERR_NOT_FOUND,
                             "no target of %s ran on this machine: nothing to publish", res->name);
    kb_registry *r = NULL;
    kb_registry_manifest *index = NULL;
    kb_oci_descriptor *descs = calloc(res->count + 1, sizeof(*descs));
    size_t n = 0;
    char created[32];
    time_t now = time(NULL);
    struct tm tm;
    strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
    int rc = descs ? kb_trust_registry_open(&r, ctx, registry) : kbi_error_oom(ctx);
    if (!rc)
        rc = admitted_index(&index, ctx, r, res, allow_unsigned);
    for (size_t i = 0; !rc && i < res->count; i++)
        if (res->targets[i].status == KB_BUILD_BUILT)
            rc = push_one(&descs[n++], r, res, &res->targets[i], index, created);
    if (!rc)
        rc = kbi_registry_referrers_add(r, res->name, index->digest, descs, n);
    char **digests = rc || !digests_out ? NULL : calloc(n + 1, sizeof(*digests));
    if (!rc && digests_out && !digests)
        rc = kbi_error_oom(ctx);
    for (size_t i = 0; digests && i < n; i++)
        if (!(digests[i] = kbi_strdup(descs[i].digest)))
            rc = kbi_error_oom(ctx);
    if (!rc && digests_out) {
        *digests_out = digests;
        if (count_out)
            *count_out = n;
    } else {
        kb_strings_free(digests, n);
    }
    for (size_t i = 0; i < n; i++)
        kbi_oci_descriptor_clear(&descs[i]);
    free(descs);
    kbi_registry_manifest_free(index);
    kb_registry_free(r);
    return rc;
}
