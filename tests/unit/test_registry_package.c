/* Registry: kbpkg package versions as OCI indexes (publish, merge, force, read back, versions,
 * latest, resolve entries, skip foreign content). */
#include "kbtest.h"
#include "registry/oci.h"
#include "registry/pkgindex.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *dir;
    kb_ctx *ctx;
    kb_registry *reg;
    char *sm90;
    char *gfx;
    char *src;
} fixture;

static const char *cfg = "{\"name\":\"radeonflow/gemm\"}";

static fixture setup(void)
{
    fixture f = {kbt_mkdtemp(), kbt_ctx(), NULL, NULL, NULL, NULL};
    char *hub = kbi_asprintf("%s/hub", f.dir);
    cr_assert_eq(kb_registry_open(&f.reg, f.ctx, hub), 0);
    free(hub);
    f.sm90 = kbi_asprintf("%s/sm90.tar.zst", f.dir);
    f.gfx = kbi_asprintf("%s/gfx.tar.zst", f.dir);
    f.src = kbi_asprintf("%s/src.tar.zst", f.dir);
    kbt_write(f.sm90, "cuda archive");
    kbt_write(f.gfx, "rocm archive");
    kbt_write(f.src, "source archive");
    return f;
}

static void teardown(fixture *f)
{
    kb_registry_free(f->reg);
    kb_ctx_free(f->ctx);
    kbt_rmtree(f->dir);
    free(f->dir);
    free(f->sm90);
    free(f->gfx);
    free(f->src);
}

static const char *msg(fixture *f)
{
    return kb_ctx_last_error(f->ctx)->message;
}

static char *publish(fixture *f, const char *version)
{
    kb_publish_item items[] = {
        {f->sm90, "cuda13-sm_90-x86_64-linux", "bk1", cfg},
        {f->gfx, "rocm5-gfx1030-x86_64-linux", "bk2", cfg},
        {f->src, "source", NULL, cfg},
    };
    char *digest = NULL;
    cr_assert_eq(kbi_pkg_publish(f->reg, "radeonflow/gemm", version, "Tiled GEMM", items, 3, false,
                                 NULL, &digest),
                 0, "%s", msg(f));
    return digest;
}

Test(registry_package, publish_read_back_and_fetch)
{
    fixture f = setup();
    char *digest = publish(&f, "1.0.0");
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "1.0.0", NULL), 0, "%s",
                 msg(&f));
    cr_expect_str_eq(ix->digest, digest);
    cr_expect_str_eq(ix->summary, "Tiled GEMM");
    cr_assert_eq(ix->count, 3);
    kb_pkg_entry *e = (kb_pkg_entry *)kbi_pkg_index_find(ix, "cuda13-sm_90-x86_64-linux");
    cr_assert_not_null(e);
    cr_expect_str_eq(e->build_key, "bk1");
    cr_expect_not(e->is_source);
    const kb_pkg_entry *s = kbi_pkg_index_find(ix, "source");
    cr_assert_not_null(s);
    cr_expect(s->is_source);
    cr_expect_null(kbi_pkg_index_find(ix, "metal3-apple-arm64-darwin"));

    cr_assert_eq(kbi_pkg_entry_resolve(e, f.reg, "radeonflow/gemm"), 0, "%s", msg(&f));
    char hex[65];
    kbi_sha256_hex("cuda archive", 12, hex);
    cr_expect_str_eq(e->layer_digest + 7, hex);
    cr_expect_eq(e->layer_size, 12);
    char *out = kbi_asprintf("%s/got", f.dir);
    cr_assert_eq(kbi_registry_blob_get_file(f.reg, "radeonflow/gemm", e->layer_digest, out, 0), 0);
    kb_buf b = KB_BUF_INIT;
    kbi_read_file(NULL, out, &b);
    cr_expect_str_eq(b.data, "cuda archive");
    kbi_buf_free(&b);

    /* the child manifest carries its config and type; the index its platform and kind */
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "radeonflow/gemm", e->manifest_digest), 0);
    kb_oci_manifest om = {0};
    cr_assert_eq(kbi_oci_manifest_parse(&om, f.ctx, m->data, m->len, "child"), 0);
    cr_expect_str_eq(om.artifact_type, KB_MT_KBPKG_ARTIFACT);
    cr_expect_str_eq(om.config.media_type, KB_MT_KBPKG_CONFIG);
    cr_expect_str_eq(om.layers[0].media_type, KB_MT_KBPKG_LAYER);
    kbi_oci_manifest_clear(&om);
    kbi_registry_manifest_free(m);
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "radeonflow/gemm", "1.0.0"), 0);
    cr_expect(strstr(m->data, "\"platform\":{\"architecture\":\"amd64\",\"os\":\"linux\"}"), "%s",
              m->data);
    cr_expect(strstr(m->data, "\"dev.kbpkg.kind\":\"source\""), "%s", m->data);
    cr_expect(strstr(m->data, "\"dev.kbpkg.arch\":\"gfx1030\""), "%s", m->data);
    cr_expect(strstr(m->data, "\"dev.kbpkg.runtime\":\"rocm5\""), "%s", m->data);
    kbi_registry_manifest_free(m);
    free(out);
    kbi_pkg_index_free(ix);
    free(digest);
    teardown(&f);
}

Test(registry_package, republish_same_bytes_is_a_no_op_and_more_targets_merge)
{
    fixture f = setup();
    kb_publish_item one[] = {{f.sm90, "cuda13-sm_90-x86_64-linux", "bk1", cfg}};
    kb_publish_status st[2];
    char *d1 = NULL, *d2 = NULL, *d3 = NULL;
    cr_assert_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0.0", NULL, one, 1, false, st, &d1),
                 0, "%s", msg(&f));
    cr_expect_eq(st[0], KB_PUBLISH_NEW);
    cr_assert_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0.0", NULL, one, 1, false, st, &d2),
                 0);
    cr_expect_eq(st[0], KB_PUBLISH_SAME);
    cr_expect_str_eq(d1, d2, "same bytes, same index");
    kb_publish_item two[] = {{f.gfx, "rocm5-gfx1030-x86_64-linux", "bk2", cfg}};
    cr_assert_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0.0", NULL, two, 1, false, st, &d3),
                 0);
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "1.0.0", NULL), 0);
    cr_expect_eq(ix->count, 2, "the second publish merged into the index");
    cr_expect_str_eq(ix->digest, d3);
    kbi_pkg_index_free(ix);
    free(d1);
    free(d2);
    free(d3);
    teardown(&f);
}

Test(registry_package, different_bytes_are_refused_unless_forced)
{
    fixture f = setup();
    char *d1 = publish(&f, "1.0.0");
    kbt_write(f.sm90, "rebuilt cuda archive");
    kb_publish_item one[] = {{f.sm90, "cuda13-sm_90-x86_64-linux", "bk1", cfg}};
    kb_publish_status st[1];
    cr_expect_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0.0", NULL, one, 1, false, st, NULL),
                 KB_ERR_EXISTS);
    cr_expect(strstr(msg(&f), "radeonflow/gemm@1.0.0 cuda13-sm_90-x86_64-linux is already "
                              "published with different bytes"),
              "%s", msg(&f));
    cr_expect(strstr(msg(&f), "--force"), "%s", msg(&f));
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "1.0.0", NULL), 0);
    cr_expect_str_eq(ix->digest, d1, "a refused publish changes nothing");
    kbi_pkg_index_free(ix);
    char *d2 = NULL;
    cr_assert_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0.0", NULL, one, 1, true, st, &d2),
                 0);
    cr_expect_eq(st[0], KB_PUBLISH_REPLACED);
    cr_expect_str_neq(d1, d2);
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "1.0.0", NULL), 0);
    cr_expect_eq(ix->count, 3, "forcing one target keeps the others");
    kbi_pkg_index_free(ix);
    free(d1);
    free(d2);
    teardown(&f);
}

Test(registry_package, versions_sorted_and_latest_is_highest_release)
{
    fixture f = setup();
    char *d100 = publish(&f, "1.0.0");
    char *d120 = publish(&f, "1.2.0");
    char *d110 = publish(&f, "1.1.0");
    char *drc = publish(&f, "2.0.0-rc.1");
    char *d10 = publish(&f, "1.10.0");
    /* a signature tag and another tool's tag are not versions */
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "radeonflow/gemm", "1.0.0"), 0);
    cr_assert_eq(kbi_registry_manifest_put(NULL, f.reg, "radeonflow/gemm", "sha256-abc.sig",
                                           m->media_type, m->data, m->len),
                 0);
    cr_assert_eq(kbi_registry_manifest_put(NULL, f.reg, "radeonflow/gemm", "nightly", m->media_type,
                                           m->data, m->len),
                 0);
    kbi_registry_manifest_free(m);

    kb_strv v = KB_STRV_INIT;
    cr_assert_eq(kbi_pkg_versions(&v, f.reg, "radeonflow/gemm"), 0);
    cr_assert_eq(v.len, 5);
    cr_expect_str_eq(v.items[0], "2.0.0-rc.1");
    cr_expect_str_eq(v.items[1], "1.10.0");
    cr_expect_str_eq(v.items[2], "1.2.0");
    cr_expect_str_eq(v.items[3], "1.1.0");
    cr_expect_str_eq(v.items[4], "1.0.0");
    kbi_strv_free(&v);
    char *picked = NULL;
    cr_assert_eq(kbi_pkg_pick_version(&picked, f.reg, "radeonflow/gemm", "^1.1"), 0);
    cr_expect_str_eq(picked, "1.10.0");
    free(picked);
    cr_assert_eq(kbi_pkg_pick_version(&picked, f.reg, "radeonflow/gemm", "*"), 0);
    cr_expect_str_eq(picked, "1.10.0", "a pre-release is not picked by '*'");
    free(picked);
    cr_expect_eq(kbi_pkg_pick_version(&picked, f.reg, "radeonflow/gemm", "^3"), KB_ERR_NOT_FOUND);
    cr_expect(strstr(msg(&f), "no version of radeonflow/gemm matches '^3' (the registry has "
                              "2.0.0-rc.1, 1.10.0"),
              "%s", msg(&f));
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "latest", NULL), 0);
    cr_expect_str_eq(ix->digest, d10, "latest is 1.10.0, not the pre-release");
    kbi_pkg_index_free(ix);
    free(d100);
    free(d120);
    free(d110);
    free(drc);
    free(d10);
    teardown(&f);
}

Test(registry_package, bad_versions_and_empty_publishes_are_refused)
{
    fixture f = setup();
    kb_publish_item a = {f.src, "cpu-x86_64_v3-x86_64-linux", NULL, cfg};
    cr_expect_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0", NULL, &a, 1, false, NULL, NULL),
                 KB_ERR_VERSION);
    cr_expect(kbi_str_starts(msg(&f), "radeonflow/gemm: cannot publish version '1.0': "), "%s",
              msg(&f));
    cr_expect_eq(
        kbi_pkg_publish(f.reg, "radeonflow/gemm", "01.0.0", NULL, &a, 1, false, NULL, NULL),
        KB_ERR_VERSION);
    cr_expect_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0.0", NULL, &a, 0, false, NULL, NULL),
                 KB_ERR_INVALID);
    cr_expect_eq(kbi_pkg_publish(f.reg, "Radeon/Gemm", "1.0.0", NULL, &a, 1, false, NULL, NULL),
                 KB_ERR_INVALID);
    a.path = "/nonexistent/a.tar.zst";
    cr_expect_eq(kbi_pkg_publish(f.reg, "radeonflow/gemm", "1.0.0", NULL, &a, 1, false, NULL, NULL),
                 KB_ERR_NOT_FOUND);
    cr_expect(strstr(msg(&f), "/nonexistent/a.tar.zst"), "%s", msg(&f));
    kb_strv tags = KB_STRV_INIT;
    cr_expect_eq(kbi_registry_tags(&tags, f.reg, "radeonflow/gemm"), KB_ERR_NOT_FOUND,
                 "nothing tagged after a failed publish");
    kbi_strv_free(&tags);
    teardown(&f);
}

Test(registry_package, foreign_manifests_in_an_index_are_skipped)
{
    fixture f = setup();
    const char *idx =
        "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\","
        "\"manifests\":["
        "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:"
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\",\"size\":10,"
        "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}},"
        "{\"mediaType\":\"application/x-unknown\",\"digest\":\"sha256:"
        "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\",\"size\":3,"
        "\"artifactType\":\"application/x-other\",\"annotations\":{\"dev.kbpkg.target\":\"x\"}},"
        "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:"
        "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\",\"size\":5,"
        "\"annotations\":{\"dev.kbpkg.target\":\"cpu-x86_64_v3-x86_64-linux\","
        "\"dev.kbpkg.kind\":\"artifact\",\"vendor.x\":\"y\"}},"
        "17,\"junk\"],\"annotations\":{\"dev.kbpkg.name\":\"a/b\"}}";
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_parse(&ix, f.ctx, "idx", idx, strlen(idx)), 0, "%s", msg(&f));
    cr_expect_eq(ix->count, 1, "only the kbpkg entry (found by its kind annotation) is kept");
    cr_expect_str_eq(ix->entries[0].target, "cpu-x86_64_v3-x86_64-linux");
    cr_expect_str_eq(ix->name, "a/b");
    kbi_pkg_index_free(ix);
    cr_expect_eq(kbi_pkg_index_parse(&ix, f.ctx, "idx", "[1]", 3), KB_ERR_PARSE);
    cr_expect_eq(kbi_pkg_index_parse(&ix, f.ctx, "idx", "{\"manifests\":3}", 15), KB_ERR_PARSE);
    cr_expect(strstr(msg(&f), "idx: an OCI index needs a 'manifests' array"), "%s", msg(&f));
    teardown(&f);
}

/* Found by fuzz_oci: the index's name and version annotations become cache folders. */
Test(registry_package, index_name_and_version_cannot_leave_the_cache)
{
    fixture f = setup();
    static const struct {
        const char *annotations;
        const char *message;
    } bad[] = {
        {"\"dev.kbpkg.name\":\"../../../tmp/x\"",
         "idx: annotation dev.kbpkg.name '../../../tmp/x' is not a package name (org/name)"},
        {"\"dev.kbpkg.name\":\"a/b/c\"",
         "idx: annotation dev.kbpkg.name 'a/b/c' is not a package name (org/name)"},
        {"\"dev.kbpkg.name\":\"ab\"",
         "idx: annotation dev.kbpkg.name 'ab' is not a package name (org/name)"},
        {"\"dev.kbpkg.name\":\"a/b\",\"dev.kbpkg.version\":\"../../x\"",
         "idx: annotation dev.kbpkg.version '../../x' is not a semantic version"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *doc = kbi_asprintf("{\"manifests\":[],\"annotations\":{%s}}", bad[i].annotations);
        kb_pkg_index *ix = NULL;
        cr_expect_eq(kbi_pkg_index_parse(&ix, f.ctx, "idx", doc, strlen(doc)), KB_ERR_PARSE, "%s",
                     doc);
        cr_expect_null(ix);
        cr_expect_str_eq(msg(&f), bad[i].message);
        free(doc);
    }
    const char *good = "{\"manifests\":[],\"annotations\":{\"dev.kbpkg.name\":\"a.b/c-d\","
                       "\"dev.kbpkg.version\":\"1.0.0-rc.1+b.2\"}}";
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_parse(&ix, f.ctx, "idx", good, strlen(good)), 0, "%s", msg(&f));
    cr_expect_str_eq(ix->version, "1.0.0-rc.1+b.2");
    kbi_pkg_index_free(ix);
    teardown(&f);
}

Test(registry_package, an_index_for_another_package_or_version_is_refused)
{
    fixture f = setup();
    char *d = publish(&f, "1.0.0");
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "radeonflow/gemm", "1.0.0"), 0);
    /* a registry serving gemm's index under another package's name, or another version's tag */
    cr_assert_eq(
        kbi_registry_manifest_put(NULL, f.reg, "evil/pkg", "1.0.0", m->media_type, m->data, m->len),
        0);
    cr_assert_eq(kbi_registry_manifest_put(NULL, f.reg, "radeonflow/gemm", "2.0.0", m->media_type,
                                           m->data, m->len),
                 0);
    kbi_registry_manifest_free(m);
    kb_pkg_index *ix = NULL;
    cr_expect_eq(kbi_pkg_index_fetch(&ix, f.reg, "evil/pkg", "1.0.0", NULL), KB_ERR_DIGEST);
    cr_expect(strstr(msg(&f), "the index names package 'radeonflow/gemm', not the one asked for"),
              "%s", msg(&f));
    cr_expect_null(ix);
    cr_expect_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "2.0.0", NULL), KB_ERR_DIGEST);
    cr_expect(strstr(msg(&f), "the index says version 1.0.0, not the tag's 2.0.0"), "%s", msg(&f));
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "latest", NULL), 0, "%s",
                 msg(&f));
    cr_expect_str_eq(ix->version, "1.0.0");
    kbi_pkg_index_free(ix);
    free(d);
    teardown(&f);
}

/* A registry's sizes become download caps: -1 cast to uint64 would be no cap at all. */
Test(registry_package, index_entry_sizes_must_be_byte_counts)
{
    fixture f = setup();
    static const struct {
        const char *size; /* JSON text of "size", or NULL for none */
        const char *message;
    } bad[] = {
        {"-1", "size -1 is negative"},
        {"-9223372036854775808", "size -9223372036854775808 is negative"},
        {"0", "size 0 is out of range (1 to 4194304 bytes)"},
        {"4194305", "size 4194305 is out of range (1 to 4194304 bytes)"},
        {"12.5", "size 12.5 is not an integer"},
        {"1e3", "size 1000.0 is not an integer"},
        {"\"12\"", "size \"12\" is not an integer"},
        {"null", "size null is not an integer"},
        {NULL, "has no size"},
    };
    const char *digest = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc";
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *size = bad[i].size ? kbi_asprintf(",\"size\":%s", bad[i].size) : kbi_strdup("");
        char *doc = kbi_asprintf(
            "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"application/vnd.oci.image."
            "manifest.v1+json\",\"artifactType\":\"%s\",\"digest\":\"%s\"%s,\"annotations\":{"
            "\"dev.kbpkg.target\":\"cpu-x86_64_v3-x86_64-linux\"}}]}",
            KB_MT_KBPKG_ARTIFACT, digest, size);
        kb_pkg_index *ix = NULL;
        cr_expect_eq(kbi_pkg_index_parse(&ix, f.ctx, "idx", doc, strlen(doc)), KB_ERR_PARSE, "%s",
                     doc);
        cr_expect_null(ix);
        char *want = kbi_asprintf("idx: manifests[0] (target cpu-x86_64_v3-x86_64-linux) (%s)%s%s",
                                  digest, bad[i].size ? ": " : " ", bad[i].message);
        cr_expect_str_eq(msg(&f), want);
        free(want);
        free(doc);
        free(size);
    }
    /* the largest manifest a registry accepts is fine; foreign entries' sizes are not ours */
    char *doc = kbi_asprintf(
        "{\"manifests\":[{\"artifactType\":\"%s\",\"digest\":\"%s\",\"size\":4194304,"
        "\"annotations\":{\"dev.kbpkg.target\":\"source\"}},{\"artifactType\":\"x/y\","
        "\"digest\":\"%s\",\"size\":-1,\"annotations\":{\"dev.kbpkg.target\":\"z\"}}]}",
        KB_MT_KBPKG_SOURCE, digest, digest);
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_parse(&ix, f.ctx, "idx", doc, strlen(doc)), 0, "%s", msg(&f));
    cr_assert_eq(ix->count, 1);
    cr_expect_eq(ix->entries[0].manifest_size, 4194304);
    kbi_pkg_index_free(ix);
    free(doc);
    teardown(&f);
}

/* Store an edited copy of the document held as digest in f's hub (a manifest or an index),
 * tagged tag, or untagged when tag is NULL; returns the copy's digest. */
static char *rewrite_manifest(fixture *f, const char *digest, const char *tag,
                              json_t *(*edit)(json_t *root))
{
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f->reg, "radeonflow/gemm", digest), 0, "%s", msg(f));
    json_t *root = json_loadb(m->data, m->len, 0, NULL);
    cr_assert_not_null(root);
    root = edit(root);
    char *bytes = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    char hex[65];
    kbi_sha256_hex(bytes, strlen(bytes), hex);
    char *out = kbi_asprintf("sha256:%s", hex);
    cr_assert_eq(kbi_registry_manifest_put(NULL, f->reg, "radeonflow/gemm", tag ? tag : out,
                                           m->media_type, bytes, strlen(bytes)),
                 0, "%s", msg(f));
    free(bytes);
    json_decref(root);
    kbi_registry_manifest_free(m);
    return out;
}

static json_t *layer_size_negative(json_t *root)
{
    json_object_set_new(json_array_get(json_object_get(root, "layers"), 0), "size",
                        json_integer(-1));
    return root;
}

static json_t *layer_size_huge(json_t *root)
{
    json_object_set_new(json_array_get(json_object_get(root, "layers"), 0), "size",
                        json_integer((json_int_t)KB_PKG_LAYER_SIZE_MAX + 1));
    return root;
}

static json_t *layer_size_real(json_t *root)
{
    json_object_set_new(json_array_get(json_object_get(root, "layers"), 0), "size",
                        json_real(12.0));
    return root;
}

static json_t *config_size_huge(json_t *root)
{
    json_object_set_new(json_object_get(root, "config"), "size",
                        json_integer((json_int_t)KB_PKG_CONFIG_SIZE_MAX + 1));
    return root;
}

Test(registry_package, manifest_layer_and_config_sizes_must_be_byte_counts)
{
    fixture f = setup();
    char *d = publish(&f, "1.0.0");
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "1.0.0", NULL), 0);
    const kb_pkg_entry *good = kbi_pkg_index_find(ix, "cuda13-sm_90-x86_64-linux");
    cr_assert_not_null(good);
    static const struct {
        json_t *(*edit)(json_t *);
        const char *message;
    } bad[] = {
        {layer_size_negative, "size -1 is negative"},
        {layer_size_huge, "size 8589934593 is out of range (1 to 8589934592 bytes)"},
        {layer_size_real, "size 12.0 is not an integer"},
        {config_size_huge, "size 1048577 is out of range (0 to 1048576 bytes)"},
    };
    char *hub = kbi_asprintf("%s/hub", f.dir);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *digest = rewrite_manifest(&f, good->manifest_digest, NULL, bad[i].edit);
        kb_pkg_entry e = {.target = "cuda13-sm_90-x86_64-linux", .manifest_digest = digest};
        cr_expect_eq(kbi_pkg_entry_resolve(&e, f.reg, "radeonflow/gemm"), KB_ERR_PARSE);
        cr_expect_null(e.layer_digest, "nothing is filled from a bad manifest");
        cr_expect_eq(e.layer_size, 0);
        char *want = kbi_asprintf(
            "%s: radeonflow/gemm cuda13-sm_90-x86_64-linux manifest %s: ", hub, digest);
        cr_expect(kbi_str_starts(msg(&f), want), "%s", msg(&f));
        cr_expect(strstr(msg(&f), bad[i].message), "%s", msg(&f));
        cr_expect(strstr(msg(&f), i < 3 ? "layers[0] (sha256:" : "config (sha256:"), "%s", msg(&f));
        free(want);
        free(digest);
    }
    free(hub);
    kbi_pkg_index_free(ix);
    free(d);
    teardown(&f);
}

/* The first entry of an index says -5 bytes; the index is version 1.0.1. */
static json_t *entry_size_negative(json_t *root)
{
    json_object_set_new(json_array_get(json_object_get(root, "manifests"), 0), "size",
                        json_integer(-5));
    json_object_set_new(json_object_get(root, "annotations"), "dev.kbpkg.version",
                        json_string("1.0.1"));
    return root;
}

Test(registry_package, a_fetched_index_with_a_negative_size_names_registry_and_digest)
{
    fixture f = setup();
    char *d = publish(&f, "1.0.0");
    char *bad = rewrite_manifest(&f, d, "1.0.1", entry_size_negative);
    kb_pkg_index *ix = NULL;
    cr_expect_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "1.0.1", NULL), KB_ERR_PARSE);
    cr_expect_null(ix);
    char *want =
        kbi_asprintf("%s/hub: radeonflow/gemm@1.0.1 index %s: manifests[0] (target ", f.dir, bad);
    cr_expect(kbi_str_starts(msg(&f), want), "%s", msg(&f));
    cr_expect(strstr(msg(&f), ": size -5 is negative"), "%s", msg(&f));
    free(want);
    /* the good version is untouched */
    cr_assert_eq(kbi_pkg_index_fetch(&ix, f.reg, "radeonflow/gemm", "1.0.0", NULL), 0, "%s",
                 msg(&f));
    cr_expect_str_eq(ix->digest, d);
    kbi_pkg_index_free(ix);
    free(bad);
    free(d);
    teardown(&f);
}
