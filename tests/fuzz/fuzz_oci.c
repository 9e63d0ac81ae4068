/* libFuzzer target: OCI image manifest and image index JSON parsers (registry/oci.c) and the
 * package-index reader (registry/pkgindex.c) on the same bytes. Invariants: what oci.c parses
 * serializes to canonical bytes that parse to the same thing; what pkgindex.c keeps is safe to
 * use as cache path components (kbi_cache_pkg_dir joins name, version and target), and its
 * sizes are byte counts a manifest can have (a negative one must not become a huge cap). */
#include "fuzz_common.h"
#include "registry/oci.h"
#include "model/semver.h"
#include "model/target.h"
#include "registry/pkgindex.h"

static void check_descriptor_same(const kb_oci_descriptor *a, const kb_oci_descriptor *b)
{
    FUZZ_CHECK(strcmp(a->media_type, b->media_type) == 0, "mediaType changed");
    FUZZ_CHECK(strcmp(a->digest, b->digest) == 0, "digest changed");
    FUZZ_CHECK(a->size == b->size, "size changed");
    FUZZ_CHECK(a->annotations.keys.len == b->annotations.keys.len, "annotation count changed");
    for (size_t i = 0; i < a->annotations.keys.len; i++) {
        const char *v = kbi_oci_annotation(&b->annotations, a->annotations.keys.items[i]);
        FUZZ_CHECK(v && strcmp(v, a->annotations.values.items[i]) == 0, "annotation %s changed",
                   a->annotations.keys.items[i]);
    }
}

static void fuzz_manifest(kb_ctx *ctx, const uint8_t *data, size_t size)
{
    kb_oci_manifest m;
    int rc = kbi_oci_manifest_parse(&m, ctx, (const char *)data, size, "fuzz-manifest");
    if (rc) {
        fuzz_check_error(ctx, rc);
        return;
    }
    kb_buf bytes = KB_BUF_INIT;
    FUZZ_CHECK(kbi_oci_manifest_serialize(&bytes, ctx, &m) == 0, "manifest does not serialize");
    kb_oci_manifest again;
    FUZZ_CHECK(kbi_oci_manifest_parse(&again, ctx, bytes.data, bytes.len, "again") == 0,
               "serialized manifest does not parse: %s", bytes.data);
    check_descriptor_same(&m.config, &again.config);
    FUZZ_CHECK(m.layer_count == again.layer_count, "layer count changed");
    for (size_t i = 0; i < m.layer_count; i++)
        check_descriptor_same(&m.layers[i], &again.layers[i]);
    FUZZ_CHECK(!m.subject == !again.subject, "subject appeared or vanished");
    kb_buf twice = KB_BUF_INIT;
    FUZZ_CHECK(kbi_oci_manifest_serialize(&twice, ctx, &again) == 0, "reserialize failed");
    FUZZ_CHECK(twice.len == bytes.len && memcmp(twice.data, bytes.data, bytes.len) == 0,
               "canonical bytes are not stable");
    kbi_buf_free(&twice);
    kbi_buf_free(&bytes);
    kbi_oci_manifest_clear(&again);
    kbi_oci_manifest_clear(&m);
}

static void fuzz_index(kb_ctx *ctx, const uint8_t *data, size_t size)
{
    kb_oci_index ix;
    int rc = kbi_oci_index_parse(&ix, ctx, (const char *)data, size, "fuzz-index");
    if (rc) {
        fuzz_check_error(ctx, rc);
        return;
    }
    kb_buf bytes = KB_BUF_INIT;
    FUZZ_CHECK(kbi_oci_index_serialize(&bytes, ctx, &ix) == 0, "index does not serialize");
    kb_oci_index again;
    FUZZ_CHECK(kbi_oci_index_parse(&again, ctx, bytes.data, bytes.len, "again") == 0,
               "serialized index does not parse: %s", bytes.data);
    FUZZ_CHECK(ix.manifest_count == again.manifest_count, "manifest count changed");
    for (size_t i = 0; i < ix.manifest_count; i++)
        check_descriptor_same(&ix.manifests[i], &again.manifests[i]);
    kb_buf twice = KB_BUF_INIT;
    FUZZ_CHECK(kbi_oci_index_serialize(&twice, ctx, &again) == 0, "reserialize failed");
    FUZZ_CHECK(twice.len == bytes.len && memcmp(twice.data, bytes.data, bytes.len) == 0,
               "canonical bytes are not stable");
    kbi_buf_free(&twice);
    kbi_buf_free(&bytes);
    kbi_oci_index_clear(&again);
    kbi_oci_index_clear(&ix);
}

/* A path component from a registry: no '/', not "." or "..", not empty. */
static bool safe_component(const char *s)
{
    return s && *s && !strchr(s, '/') && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static void fuzz_pkgindex(kb_ctx *ctx, const uint8_t *data, size_t size)
{
    kb_pkg_index *idx = NULL;
    int rc = kbi_pkg_index_parse(&idx, ctx, "fuzz-pkgindex", (const char *)data, size);
    if (rc) {
        fuzz_check_error(ctx, rc);
        FUZZ_CHECK(idx == NULL, "failed parse returned an index");
        return;
    }
    if (idx->name) {
        const char *slash = strchr(idx->name, '/');
        FUZZ_CHECK(slash && strchr(slash + 1, '/') == NULL, "index name '%s' is not org/name",
                   idx->name);
        char org[256];
        snprintf(org, sizeof(org), "%.*s", (int)(slash - idx->name), idx->name);
        FUZZ_CHECK(safe_component(org) && safe_component(slash + 1),
                   "index name '%s' escapes the cache", idx->name);
    }
    kb_semver v;
    FUZZ_CHECK(!idx->version || kbi_semver_parse(ctx, &v, idx->version) == 0,
               "index version '%s' is not a version", idx->version);
    for (size_t i = 0; i < idx->count; i++) {
        const kb_pkg_entry *e = &idx->entries[i];
        FUZZ_CHECK(e->target && e->manifest_digest, "entry %zu lacks target or digest", i);
        FUZZ_CHECK(e->manifest_size >= 1 && e->manifest_size <= KB_MANIFEST_MAX,
                   "entry %s kept size %llu", e->target, (unsigned long long)e->manifest_size);
        FUZZ_CHECK(kbi_pkg_index_find(idx, e->target) != NULL, "entry %s not found", e->target);
        kb_target t;
        if (kbi_target_parse(ctx, &t, e->target) == 0)
            FUZZ_CHECK(safe_component(e->target), "target '%s' escapes the cache", e->target);
    }
    kbi_pkg_index_free(idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    kb_ctx *ctx = fuzz_ctx();
    fuzz_manifest(ctx, data, size);
    fuzz_index(ctx, data, size);
    fuzz_pkgindex(ctx, data, size);
    kb_ctx_free(ctx);
    return 0;
}
