/* The OCI referrers tag schema (distribution spec 1.1): an index tagged "sha256-<hex>" lists
 * the manifests whose subject is that digest, for registries without the referrers API. */
#include "registry/referrers.h"

#include <stdlib.h>
#include <string.h>

/* Writes of the index before giving up on concurrent writers undoing ours. */
#define REFERRERS_ROUNDS 8

char *kbi_referrers_tag(const char *subject_digest)
{
    const char *hex = kbi_digest_hex(subject_digest);
    return hex ? kbi_asprintf("sha256-%s", hex) : NULL;
}

int kbi_oci_referrer_manifest(kb_oci_manifest *m, kb_ctx *ctx, const char *artifact_type,
                              const kb_oci_descriptor *layer, const kb_registry_manifest *subject)
{
    m->artifact_type = kbi_strdup(artifact_type);
    m->subject = calloc(1, sizeof(*m->subject));
    int rc = m->artifact_type && m->subject ? 0 : KB_ERR_NOMEM;
    if (!rc)
        rc = kbi_oci_descriptor_empty_config(&m->config);
    if (!rc)
        rc = kbi_oci_manifest_add_layer(m, layer);
    if (!rc)
        rc = kbi_oci_descriptor_set(m->subject,
                                    subject->media_type ? subject->media_type : KB_MT_OCI_INDEX,
                                    subject->digest, subject->len);
    return rc == KB_ERR_NOMEM ? kbi_error_oom(ctx) : rc;
}

int kbi_registry_referrers(kb_oci_index *out, kb_registry *r, const char *repo,
                           const char *subject_digest)
{
    memset(out, 0, sizeof(*out));
    kb_ctx *ctx = r->ctx;
    char *tag = kbi_referrers_tag(subject_digest);
    if (!tag)
        return kbi_digest_hex(subject_digest)
                   ? kbi_error_oom(ctx)
                   : kbi_error_set(ctx, KB_ERR_INVALID, "invalid subject digest '%s'",
                                   subject_digest ? subject_digest : "");
    kb_registry_manifest *m = NULL;
    int rc = kbi_registry_manifest_get(&m, r, repo, tag);
    if (rc == KB_ERR_NOT_FOUND) { /* nothing refers to it yet */
        kb_ctx_clear_error(ctx);
        rc = 0;
    } else if (!rc) {
        rc = kbi_oci_index_parse(out, ctx, m->data, m->len, tag);
    }
    kbi_registry_manifest_free(m);
    free(tag);
    return rc;
}

static bool index_has(const kb_oci_index *ix, const char *digest)
{
    for (size_t i = 0; i < ix->manifest_count; i++)
        if (strcmp(ix->manifests[i].digest, digest) == 0)
            return true;
    return false;
}

/* Adds what ix lacks of descs; *added counts them. */
static int merge_into(size_t *added, kb_oci_index *ix, const kb_oci_descriptor *descs, size_t count)
{
    *added = 0;
    for (size_t i = 0; i < count; i++) {
        if (index_has(ix, descs[i].digest))
            continue;
        int rc = kbi_oci_index_add(ix, &descs[i]);
        if (rc)
            return rc;
        (*added)++;
    }
    return 0;
}

int kbi_registry_referrers_add(kb_registry *r, const char *repo, const char *subject_digest,
                               const kb_oci_descriptor *descs, size_t count)
{
    kb_ctx *ctx = r->ctx;
    char *tag = kbi_referrers_tag(subject_digest);
    int rc = tag ? 0 : kbi_error_oom(ctx);
    for (int round = 0; !rc; round++) {
        kb_oci_index ix;
        size_t added = 0;
        kb_buf doc = KB_BUF_INIT;
        rc = kbi_registry_referrers(&ix, r, repo, subject_digest);
        if (!rc)
            rc = merge_into(&added, &ix, descs, count) ? kbi_error_oom(ctx) : 0;
        if (!rc && added && round >= REFERRERS_ROUNDS)
            rc = kbi_error_set(ctx, KB_ERR_LOCKED,
                               "%s: the referrers index %s was rewritten by others %d times while "
                               "adding to it; the results stay under their own tags",
                               repo, tag, REFERRERS_ROUNDS);
        if (!rc && added)
            rc = kbi_oci_index_serialize(&doc, ctx, &ix);
        if (!rc && added)
            rc = kbi_registry_manifest_put(NULL, r, repo, tag, KB_MT_OCI_INDEX, doc.data, doc.len);
        kbi_buf_free(&doc);
        kbi_oci_index_clear(&ix);
        if (!added)
            break; /* every one of descs is in the index as it stands now */
    }
    free(tag);
    return rc;
}
