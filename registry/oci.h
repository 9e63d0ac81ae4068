/* OCI JSON: descriptors, image manifests and image indexes, built and parsed with jansson. */
#ifndef KB_REGISTRY_OCI_H
#define KB_REGISTRY_OCI_H

#include "core/internal.h"

#include <stdint.h>

struct json_t;

/* Annotations in insertion order; serialized sorted (canonical bytes). */
typedef struct kb_oci_annotations {
    kb_strv keys;
    kb_strv values;
} kb_oci_annotations;

/* Set (or replace) key; borrowed lookup returns NULL when absent. */
int kbi_oci_annotate(kb_oci_annotations *a, const char *key, const char *value);
const char *kbi_oci_annotation(const kb_oci_annotations *a, const char *key);
void kbi_oci_annotations_clear(kb_oci_annotations *a);

typedef struct kb_oci_descriptor {
    char *media_type;
    char *digest; /* "sha256:<hex>" */
    uint64_t size;
    char *artifact_type; /* optional */
    char *platform_os;   /* optional; index entries */
    char *platform_arch;
    kb_oci_annotations annotations;
} kb_oci_descriptor;

int kbi_oci_descriptor_set(kb_oci_descriptor *d, const char *media_type, const char *digest,
                           uint64_t size);
/* The descriptor of bytes: digest and size computed. */
int kbi_oci_descriptor_for(kb_oci_descriptor *d, const char *media_type, const void *data,
                           size_t len);
/* application/vnd.oci.empty.v1+json, "{}": the config of artifacts without one. */
int kbi_oci_descriptor_empty_config(kb_oci_descriptor *d);
int kbi_oci_descriptor_copy(kb_oci_descriptor *dst, const kb_oci_descriptor *src);
void kbi_oci_descriptor_clear(kb_oci_descriptor *d);

/* The "size" of descriptor object desc: an integer in min..max. A missing, non-integer,
 * negative or out-of-range size is KB_ERR_PARSE naming what, field and the descriptor's digest
 * (a registry's JSON must not turn -1 into a 16 EiB download cap). */
int kbi_oci_descriptor_size(uint64_t *out, kb_ctx *ctx, const struct json_t *desc, uint64_t min,
                            uint64_t max, const char *what, const char *field);

typedef struct kb_oci_manifest {
    char *artifact_type; /* optional */
    kb_oci_descriptor config;
    kb_oci_descriptor *layers;
    size_t layer_count, layers_cap;
    kb_oci_descriptor *subject; /* optional */
    kb_oci_annotations annotations;
} kb_oci_manifest;

/* Appends a copy of d. */
int kbi_oci_manifest_add_layer(kb_oci_manifest *m, const kb_oci_descriptor *d);
/* Canonical bytes (compact, sorted keys): the same manifest always hashes the same. */
int kbi_oci_manifest_serialize(kb_buf *out, kb_ctx *ctx, const kb_oci_manifest *m);
/* what names the document in errors (a digest, a path). Unknown fields are ignored. */
int kbi_oci_manifest_parse(kb_oci_manifest *out, kb_ctx *ctx, const char *data, size_t len,
                           const char *what);
void kbi_oci_manifest_clear(kb_oci_manifest *m);

typedef struct kb_oci_index {
    char *artifact_type; /* optional */
    kb_oci_descriptor *manifests;
    size_t manifest_count, manifests_cap;
    kb_oci_annotations annotations;
} kb_oci_index;

int kbi_oci_index_add(kb_oci_index *ix, const kb_oci_descriptor *d);
int kbi_oci_index_serialize(kb_buf *out, kb_ctx *ctx, const kb_oci_index *ix);
int kbi_oci_index_parse(kb_oci_index *out, kb_ctx *ctx, const char *data, size_t len,
                        const char *what);
void kbi_oci_index_clear(kb_oci_index *ix);

#endif
