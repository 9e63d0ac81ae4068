/* Registry: OCI JSON documents round-trip to the same canonical bytes and tolerate other tools. */
#include "kbtest.h"
#include "registry/oci.h"
#include "registry/registry.h"

#include <string.h>

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define D3 "sha256:3333333333333333333333333333333333333333333333333333333333333333"

Test(registry_oci, empty_config_descriptor_is_the_spec_one)
{
    kb_oci_descriptor d = {0};
    cr_assert_eq(kbi_oci_descriptor_empty_config(&d), 0);
    cr_expect_str_eq(d.media_type, "application/vnd.oci.empty.v1+json");
    cr_expect_str_eq(d.digest,
                     "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    cr_expect_eq(d.size, 2);
    kbi_oci_descriptor_clear(&d);
}

Test(registry_oci, manifest_round_trip_is_canonical)
{
    kb_ctx *ctx = kbt_ctx();
    kb_oci_manifest m = {0};
    m.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    kbi_oci_descriptor_set(&m.config, "application/vnd.kbpkg.config.v1+json", D1, 10);
    kb_oci_descriptor layer = {0};
    kbi_oci_descriptor_set(&layer, "application/vnd.kbpkg.layer.v1.tar+zstd", D2, 1234);
    kbi_oci_annotate(&layer.annotations, "org.opencontainers.image.title", "a.tar.zst");
    kbi_oci_manifest_add_layer(&m, &layer);
    kbi_oci_descriptor_clear(&layer);
    m.subject = calloc(1, sizeof(*m.subject));
    kbi_oci_descriptor_set(m.subject, KB_MT_OCI_INDEX, D3, 99);
    /* inserted out of order: the bytes are sorted anyway */
    kbi_oci_annotate(&m.annotations, "z.last", "2");
    kbi_oci_annotate(&m.annotations, "a.first", "1");
    kbi_oci_annotate(&m.annotations, "a.first", "one");

    kb_buf bytes = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_manifest_serialize(&bytes, ctx, &m), 0);
    cr_expect_str_eq(
        bytes.data,
        "{\"annotations\":{\"a.first\":\"one\",\"z.last\":\"2\"},"
        "\"artifactType\":\"application/vnd.kbpkg.artifact.v1\","
        "\"config\":{\"digest\":\"" D1 "\",\"mediaType\":\"application/vnd.kbpkg.config.v1+json\","
        "\"size\":10},"
        "\"layers\":[{\"annotations\":{\"org.opencontainers.image.title\":\"a.tar.zst\"},"
        "\"digest\":\"" D2 "\",\"mediaType\":\"application/vnd.kbpkg.layer.v1.tar+zstd\","
        "\"size\":1234}],"
        "\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"schemaVersion\":2,"
        "\"subject\":{\"digest\":\"" D3
        "\",\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
        "\"size\":99}}");

    kb_oci_manifest back = {0};
    cr_assert_eq(kbi_oci_manifest_parse(&back, ctx, bytes.data, bytes.len, "test"), 0);
    cr_expect_str_eq(back.artifact_type, "application/vnd.kbpkg.artifact.v1");
    cr_expect_eq(back.layer_count, 1);
    cr_expect_eq(back.layers[0].size, 1234);
    cr_expect_str_eq(
        kbi_oci_annotation(&back.layers[0].annotations, "org.opencontainers.image.title"),
        "a.tar.zst");
    cr_assert_not_null(back.subject);
    cr_expect_str_eq(back.subject->digest, D3);
    kb_buf again = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_manifest_serialize(&again, ctx, &back), 0);
    cr_expect_str_eq(again.data, bytes.data);
    kbi_buf_free(&again);
    kbi_buf_free(&bytes);
    kbi_oci_manifest_clear(&back);
    kbi_oci_manifest_clear(&m);
    kb_ctx_free(ctx);
}

Test(registry_oci, index_round_trip_with_platform_and_annotations)
{
    kb_ctx *ctx = kbt_ctx();
    kb_oci_index ix = {0};
    kb_oci_descriptor d = {0};
    kbi_oci_descriptor_set(&d, KB_MT_OCI_MANIFEST, D1, 500);
    d.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    d.platform_os = kbi_strdup("linux");
    d.platform_arch = kbi_strdup("amd64");
    kbi_oci_annotate(&d.annotations, "dev.kbpkg.target", "cuda13-sm_90-x86_64-linux");
    kbi_oci_index_add(&ix, &d);
    kbi_oci_descriptor_clear(&d);
    kb_buf bytes = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_index_serialize(&bytes, ctx, &ix), 0);
    cr_expect(strstr(bytes.data, "\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}"),
              "%s", bytes.data);
    kb_oci_index back = {0};
    cr_assert_eq(kbi_oci_index_parse(&back, ctx, bytes.data, bytes.len, "test"), 0);
    cr_assert_eq(back.manifest_count, 1);
    cr_expect_str_eq(back.manifests[0].platform_arch, "amd64");
    cr_expect_str_eq(kbi_oci_annotation(&back.manifests[0].annotations, "dev.kbpkg.target"),
                     "cuda13-sm_90-x86_64-linux");
    kb_buf again = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_index_serialize(&again, ctx, &back), 0);
    cr_expect_str_eq(again.data, bytes.data);
    kbi_buf_free(&again);
    kbi_buf_free(&bytes);
    kbi_oci_index_clear(&back);
    kbi_oci_index_clear(&ix);
    kb_ctx_free(ctx);
}

Test(registry_oci, unknown_fields_and_media_types_are_tolerated)
{
    kb_ctx *ctx = kbt_ctx();
    const char *doc = "{\"schemaVersion\":2,\"mediaType\":\"" KB_MT_OCI_INDEX "\","
                      "\"future\":{\"x\":1},\"manifests\":["
                      "{\"mediaType\":\"application/x-someday\",\"digest\":\"" D1 "\","
                      "\"size\":3,\"urls\":[\"u\"],\"annotations\":{\"n\":5,\"k\":\"v\"}}]}";
    kb_oci_index ix = {0};
    cr_assert_eq(kbi_oci_index_parse(&ix, ctx, doc, strlen(doc), "x"), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect_str_eq(ix.manifests[0].media_type, "application/x-someday");
    cr_expect_str_eq(kbi_oci_annotation(&ix.manifests[0].annotations, "k"), "v");
    cr_expect_null(kbi_oci_annotation(&ix.manifests[0].annotations, "n"));
    kbi_oci_index_clear(&ix);
    kb_ctx_free(ctx);
}

Test(registry_oci, bad_documents_name_the_problem)
{
    kb_ctx *ctx = kbt_ctx();
    kb_oci_manifest m = {0};
    const char *syntax = "{\"schemaVersion\":2,\n \"layers\": [,]}";
    cr_expect_eq(kbi_oci_manifest_parse(&m, ctx, syntax, strlen(syntax), "sha256:abc"),
                 KB_ERR_PARSE);
    cr_expect(kbi_str_starts(kb_ctx_last_error(ctx)->message, "sha256:abc:2:"), "%s",
              kb_ctx_last_error(ctx)->message);
    const char *bad_layer =
        "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"a\",\"digest\":\"" D1
        "\",\"size\":1},\"layers\":[{\"mediaType\":\"a\",\"digest\":\"" D2
        "\",\"size\":1},{\"mediaType\":\"a\",\"digest\":\"md5:x\",\"size\":1}]}";
    cr_expect_eq(kbi_oci_manifest_parse(&m, ctx, bad_layer, strlen(bad_layer), "m.json"),
                 KB_ERR_PARSE);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message, "m.json: layers[1] is missing or invalid");
    const char *v1 = "{\"schemaVersion\":1}";
    cr_expect_eq(kbi_oci_manifest_parse(&m, ctx, v1, strlen(v1), "old"), KB_ERR_PARSE);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message, "old: schemaVersion must be 2");
    const char *wrong = "{\"schemaVersion\":2,\"mediaType\":\"" KB_MT_OCI_INDEX "\"}";
    cr_expect_eq(kbi_oci_manifest_parse(&m, ctx, wrong, strlen(wrong), "w"), KB_ERR_PARSE);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "w: media type " KB_MT_OCI_INDEX " is not an image manifest");
    const char *dup = "{\"schemaVersion\":2,\"schemaVersion\":2}";
    cr_expect_eq(kbi_oci_manifest_parse(&m, ctx, dup, strlen(dup), "d"), KB_ERR_PARSE);
    kb_ctx_free(ctx);
}

Test(registry_oci, descriptor_sizes_are_non_negative_integers)
{
    kb_ctx *ctx = kbt_ctx();
    static const struct {
        const char *size;
        const char *message;
    } bad[] = {
        {"\"size\":-1", "ix: manifests[0] (" D1 "): size -1 is negative"},
        {"\"size\":3.5", "ix: manifests[0] (" D1 "): size 3.5 is not an integer"},
        {"\"size\":\"3\"", "ix: manifests[0] (" D1 "): size \"3\" is not an integer"},
        {"\"size\":{}", "ix: manifests[0] (" D1 "): size {} is not an integer"},
        {"\"n\":1", "ix: manifests[0] (" D1 ") has no size"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *doc = kbi_asprintf("{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"a\","
                                 "\"digest\":\"" D1 "\",%s}]}",
                                 bad[i].size);
        kb_oci_index ix = {0};
        cr_expect_eq(kbi_oci_index_parse(&ix, ctx, doc, strlen(doc), "ix"), KB_ERR_PARSE, "%s",
                     doc);
        cr_expect_eq(ix.manifest_count, 0, "a failed parse keeps nothing");
        cr_expect_str_eq(kb_ctx_last_error(ctx)->message, bad[i].message);
        free(doc);
    }
    const char *big = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"a\",\"digest\":\"" D1
                      "\",\"size\":9223372036854775807}]}";
    kb_oci_index ix = {0};
    cr_assert_eq(kbi_oci_index_parse(&ix, ctx, big, strlen(big), "ix"), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect_eq(ix.manifests[0].size, 9223372036854775807ULL);
    kbi_oci_index_clear(&ix);
    kb_ctx_free(ctx);
}
