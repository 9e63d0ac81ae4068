/* The OCI referrers tag schema: which manifests name a given digest as their subject. */
#ifndef KB_REGISTRY_REFERRERS_H
#define KB_REGISTRY_REFERRERS_H

#include "registry/oci.h"
#include "registry/registry.h"

/* "sha256-<hex>": the tag of subject_digest's referrers index (distribution spec 1.1, for
 * registries without the referrers API, as docker-registry 2.8). Owned; NULL on OOM. */
char *kbi_referrers_tag(const char *subject_digest);

/* m becomes an artifact manifest of artifact_type referring to subject (a package's index): the
 * empty config, layer as its one layer, subject as "subject". The one shape of what kbpkg
 * attaches to a version (signatures, benchmark results). m must be zeroed; clear it after. */
int kbi_oci_referrer_manifest(kb_oci_manifest *m, kb_ctx *ctx, const char *artifact_type,
                              const kb_oci_descriptor *layer, const kb_registry_manifest *subject);

/* The referrers index of subject_digest in repo: an empty index when the tag is absent. */
int kbi_registry_referrers(kb_oci_index *out, kb_registry *r, const char *repo,
                           const char *subject_digest);

/* Add each of descs (manifests already pushed whose subject is subject_digest) to its
 * referrers index, keeping what it holds. The spec's schema is a read-modify-write that a
 * concurrent writer can undo, so the index is read back after each write and written again
 * until every one of descs is in it. */
int kbi_registry_referrers_add(kb_registry *r, const char *repo, const char *subject_digest,
                               const kb_oci_descriptor *descs, size_t count);

#endif
