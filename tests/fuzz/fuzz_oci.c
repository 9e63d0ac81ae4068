/* libFuzzer target: OCI image manifest and image index JSON parsers (registry/oci.c), plus the
 * invariant that what parses serializes to canonical bytes that parse to the same thing. */
#include "fuzz_common.h"
#include "registry/oci.h"
#include "registry/package_index.h"

static void check_descriptor_same(const kb_oci_descriptor *a, const kb_oci_descriptor *b)
{
    FUZZ_CHECK(strcmp(a->media_type, b->media_type) == 0, "mediaType changed");
    FUZZ_CHECK(strcmp(a->digest, b->digest) == 0, "digest changed");
    FUZZ_CHECK(a->size == b->size, "size changed");
    FUZZ_CHECK(a->annotations.keys.len == b->annotations.keys.len, "annotation count changed");
    for (size_t i = 0; i < a->annotations.keys.len; i++) {
        const char *v = kb_oci_annotation(&b->annotations, a->annotations.keys.items[i]);
        FUZZ_CHECK(v && strcmp(v, a->annotations.values.items[i]) == 0, "annotation %s changed",
                   a->annotations.keys.items[i]);
    }
}

/* What kb_package_index_get reads from each entry: must be safe on any descriptor. */
static void read_entry_annotations(const kb_oci_descriptor *d)
{
    static const char *const keys[] = {KB_ANN_KIND,   KB_ANN_TARGET,  KB_ANN_BACKEND,
                                       KB_ANN_ARCH,   KB_ANN_RUNTIME, KB_ANN_BUILD_KEY,
                                       KB_ANN_VERSION};
    for (size_t i = 0; i < KB_ARRAY_LEN(keys); i++) {
        const char *v = kb_oci_annotation(&d->annotations, keys[i]);
        FUZZ_CHECK(!v || strlen(v) < (size_t)-1, "unreachable");
    }
}

static void fuzz_manifest(kb_ctx *ctx, const uint8_t *data, size_t size)
{
    kb_oci_manifest m;
    int rc = kb_oci_manifest_parse(&m, ctx, (const char *)data, size, "fuzz-manifest");
    if (rc) {
        fuzz_check_error(ctx, rc);
        return;
    }
    kb_buf bytes = KB_BUF_INIT;
    FUZZ_CHECK(kb_oci_manifest_serialize(&bytes, ctx, &m) == 0, "manifest does not serialize");
    kb_oci_manifest again;
    FUZZ_CHECK(kb_oci_manifest_parse(&again, ctx, bytes.data, bytes.len, "again") == 0,
               "serialized manifest does not parse: %s", bytes.data);
    check_descriptor_same(&m.config, &again.config);
    FUZZ_CHECK(m.layer_count == again.layer_count, "layer count changed");
    for (size_t i = 0; i < m.layer_count; i++)
        check_descriptor_same(&m.layers[i], &again.layers[i]);
    FUZZ_CHECK(!m.subject == !again.subject, "subject appeared or vanished");
    kb_buf twice = KB_BUF_INIT;
    FUZZ_CHECK(kb_oci_manifest_serialize(&twice, ctx, &again) == 0, "reserialize failed");
    FUZZ_CHECK(twice.len == bytes.len && memcmp(twice.data, bytes.data, bytes.len) == 0,
               "canonical bytes are not stable");
    kb_buf_free(&twice);
    kb_buf_free(&bytes);
    kb_oci_manifest_clear(&again);
    kb_oci_manifest_clear(&m);
}

static void fuzz_index(kb_ctx *ctx, const uint8_t *data, size_t size)
{
    kb_oci_index ix;
    int rc = kb_oci_index_parse(&ix, ctx, (const char *)data, size, "fuzz-index");
    if (rc) {
        fuzz_check_error(ctx, rc);
        return;
    }
    for (size_t i = 0; i < ix.manifest_count; i++)
        read_entry_annotations(&ix.manifests[i]);
    kb_buf bytes = KB_BUF_INIT;
    FUZZ_CHECK(kb_oci_index_serialize(&bytes, ctx, &ix) == 0, "index does not serialize");
    kb_oci_index again;
    FUZZ_CHECK(kb_oci_index_parse(&again, ctx, bytes.data, bytes.len, "again") == 0,
               "serialized index does not parse: %s", bytes.data);
    FUZZ_CHECK(ix.manifest_count == again.manifest_count, "manifest count changed");
    for (size_t i = 0; i < ix.manifest_count; i++)
        check_descriptor_same(&ix.manifests[i], &again.manifests[i]);
    kb_buf twice = KB_BUF_INIT;
    FUZZ_CHECK(kb_oci_index_serialize(&twice, ctx, &again) == 0, "reserialize failed");
    FUZZ_CHECK(twice.len == bytes.len && memcmp(twice.data, bytes.data, bytes.len) == 0,
               "canonical bytes are not stable");
    kb_buf_free(&twice);
    kb_buf_free(&bytes);
    kb_oci_index_clear(&again);
    kb_oci_index_clear(&ix);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kb_ctx *ctx = fuzz_ctx();
    fuzz_manifest(ctx, data, size);
    fuzz_index(ctx, data, size);
    kb_ctx_free(ctx);
    return 0;
}
