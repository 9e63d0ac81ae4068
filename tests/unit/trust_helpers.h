/* Test helpers for the trust suites: push a tiny package index, rewrite a signature manifest. */
#ifndef KBT_TRUST_HELPERS_H
#define KBT_TRUST_HELPERS_H

#include "kbtest.h"
#include "registry/oci.h"
#include "registry/registry.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define KBT_SIG_LAYER_TYPE "application/vnd.kbpkg.signature.v1+json"

static inline const char *kbt_msg(kb_ctx *ctx)
{
    return kb_ctx_last_error(ctx)->message;
}

/* One artifact manifest (unique per text) and an index over it tagged version; returns the
 * index digest (owned). */
static inline char *kbt_push_index(kb_registry *reg, kb_ctx *ctx, const char *package,
                                   const char *version)
{
    char *text = kbi_asprintf("artifact of %s@%s", package, version);
    char *layer_digest = NULL, *manifest_digest = NULL, *index_digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&layer_digest, reg, package, text, strlen(text)), 0,
                 "%s", kbt_msg(ctx));
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, reg, package, "{}", 2), 0, "%s", kbt_msg(ctx));
    kb_oci_manifest m = {0};
    m.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    kbi_oci_descriptor_empty_config(&m.config);
    kb_oci_descriptor layer = {0};
    kbi_oci_descriptor_set(&layer, "application/vnd.kbpkg.layer.v1.tar+zstd", layer_digest,
                           strlen(text));
    kbi_oci_manifest_add_layer(&m, &layer);
    kb_buf bytes = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_manifest_serialize(&bytes, ctx, &m), 0);
    char hex[65];
    kbi_sha256_hex(bytes.data, bytes.len, hex);
    char *by_digest = kbi_asprintf("sha256:%s", hex);
    cr_assert_eq(kbi_registry_manifest_put(&manifest_digest, reg, package, by_digest,
                                           KB_MT_OCI_MANIFEST, bytes.data, bytes.len),
                 0, "%s", kbt_msg(ctx));
    free(by_digest);
    kb_oci_index ix = {0};
    kb_oci_descriptor d = {0};
    kbi_oci_descriptor_set(&d, KB_MT_OCI_MANIFEST, manifest_digest, bytes.len);
    kbi_oci_index_add(&ix, &d);
    kb_buf ib = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_index_serialize(&ib, ctx, &ix), 0);
    cr_assert_eq(kbi_registry_manifest_put(&index_digest, reg, package, version, KB_MT_OCI_INDEX,
                                           ib.data, ib.len),
                 0, "%s", kbt_msg(ctx));
    kbi_buf_free(&ib);
    kbi_oci_index_clear(&ix);
    kbi_oci_descriptor_clear(&d);
    kbi_buf_free(&bytes);
    kbi_oci_descriptor_clear(&layer);
    kbi_oci_manifest_clear(&m);
    free(manifest_digest);
    free(layer_digest);
    free(text);
    return index_digest;
}

/* Push a signature manifest whose layer is layer_text, tagged for index_digest. */
static inline void kbt_put_signature(kb_registry *reg, kb_ctx *ctx, const char *package,
                                     const char *index_digest, const char *artifact_type,
                                     const char *layer_text)
{
    char *layer_digest = NULL;
    cr_assert_eq(
        kbi_registry_blob_put_mem(&layer_digest, reg, package, layer_text, strlen(layer_text)), 0,
        "%s", kbt_msg(ctx));
    kbi_registry_blob_put_mem(NULL, reg, package, "{}", 2);
    kb_oci_manifest m = {0};
    m.artifact_type = kbi_strdup(artifact_type);
    kbi_oci_descriptor_empty_config(&m.config);
    kb_oci_descriptor layer = {0};
    kbi_oci_descriptor_set(&layer, KBT_SIG_LAYER_TYPE, layer_digest, strlen(layer_text));
    kbi_oci_manifest_add_layer(&m, &layer);
    kb_buf bytes = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_manifest_serialize(&bytes, ctx, &m), 0);
    char *tag = kbi_asprintf("sha256-%s.sig", index_digest + 7);
    cr_assert_eq(kbi_registry_manifest_put(NULL, reg, package, tag, KB_MT_OCI_MANIFEST, bytes.data,
                                           bytes.len),
                 0, "%s", kbt_msg(ctx));
    free(tag);
    kbi_buf_free(&bytes);
    kbi_oci_descriptor_clear(&layer);
    kbi_oci_manifest_clear(&m);
    free(layer_digest);
}

/* The current signature layer of index_digest, parsed (caller decrefs). */
static inline json_t *kbt_get_signature_layer(kb_registry *reg, kb_ctx *ctx, const char *package,
                                              const char *index_digest)
{
    char *tag = kbi_asprintf("sha256-%s.sig", index_digest + 7);
    kb_registry_manifest *sig = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&sig, reg, package, tag), 0, "%s", kbt_msg(ctx));
    kb_oci_manifest m = {0};
    cr_assert_eq(kbi_oci_manifest_parse(&m, ctx, sig->data, sig->len, "sig"), 0);
    cr_assert_eq(m.layer_count, 1);
    kb_buf layer = KB_BUF_INIT;
    cr_assert_eq(kbi_registry_blob_get_mem(&layer, reg, package, m.layers[0].digest, 65536), 0);
    json_t *j = json_loadb(layer.data, layer.len, 0, NULL);
    cr_assert_not_null(j);
    kbi_buf_free(&layer);
    kbi_oci_manifest_clear(&m);
    kbi_registry_manifest_free(sig);
    free(tag);
    return j;
}

/* Replace the signature layer of index_digest by j (canonical bytes). */
static inline void kbt_replace_signature_layer(kb_registry *reg, kb_ctx *ctx, const char *package,
                                               const char *index_digest, const json_t *j)
{
    char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
    kbt_put_signature(reg, ctx, package, index_digest, "application/vnd.kbpkg.signature.v1", text);
    free(text);
}

#endif
