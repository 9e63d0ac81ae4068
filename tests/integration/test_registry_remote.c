/* Registry: the OCI Distribution client against a real docker-registry on loopback. */
#include "kbtest.h"
#include "registry/oci.h"
#include "registry/pkgindex.h"
#include "registry/registry.h"
#include "registry_harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct session {
    kbt_registry srv;
    kb_ctx *ctx;
    kb_registry *reg;
    char *tmp;
    kb_buf log; /* debug log lines, one per line */
} session;

static void capture_log(kb_log_level level, const char *message, void *payload)
{
    kb_buf *b = payload;
    kbi_buf_printf(b, "%s\n", message);
}

static void open_session(session *s, const char *user, const char *password, const char *ns)
{
    memset(s, 0, sizeof(*s));
    kbt_registry_start(&s->srv, user, password);
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    o.log = capture_log;
    o.payload = &s->log;
    o.log_level = KB_LOG_DEBUG;
    cr_assert_eq(kb_ctx_new(&s->ctx, &o), 0);
    kb_ctx_set(s->ctx, "net.retries", "1");
    char *ref = kbi_asprintf("oci://127.0.0.1:%d/%s", s->srv.port, ns);
    cr_assert_eq(kb_registry_open(&s->reg, s->ctx, ref), 0, "%s",
                 kb_ctx_last_error(s->ctx)->message);
    free(ref);
    s->tmp = kbt_mkdtemp();
}

static void close_session(session *s)
{
    kb_registry_free(s->reg);
    kb_ctx_free(s->ctx);
    kbt_registry_stop(&s->srv);
    kbt_rmtree(s->tmp);
    free(s->tmp);
    kbi_buf_free(&s->log);
}

static const char *msg(const session *s)
{
    return kb_ctx_last_error(s->ctx)->message;
}

static void fill(char *data, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (char)(seed >> 16);
    }
}

/* An artifact manifest: empty config, one layer; returns its bytes. */
static void build_artifact(session *s, kb_buf *out, const char *repo, const char *layer_text)
{
    char *ld = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&ld, s->reg, repo, layer_text, strlen(layer_text)), 0,
                 "%s", msg(s));
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, s->reg, repo, "{}", 2), 0, "%s", msg(s));
    kb_oci_manifest m = {0};
    m.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    kbi_oci_descriptor_empty_config(&m.config);
    kb_oci_descriptor layer = {0};
    kbi_oci_descriptor_set(&layer, "application/vnd.kbpkg.layer.v1.tar+zstd", ld,
                           strlen(layer_text));
    kbi_oci_manifest_add_layer(&m, &layer);
    cr_assert_eq(kbi_oci_manifest_serialize(out, s->ctx, &m), 0);
    kbi_oci_descriptor_clear(&layer);
    kbi_oci_manifest_clear(&m);
    free(ld);
}

Test(registry_remote, monolithic_and_chunked_blob_uploads)
{
    session s;
    open_session(&s, NULL, NULL, "ns");
    cr_assert_eq(kb_registry_check(s.reg), 0, "%s", msg(&s));
    kbi_registry_set_chunk_size(s.reg, 4096);
    static char small[1000], big[10000];
    fill(small, sizeof(small), 1);
    fill(big, sizeof(big), 2);
    char *ds = NULL, *db = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&ds, s.reg, "radeonflow/gemm", small, sizeof(small)), 0,
                 "%s", msg(&s));
    char *src = kbi_asprintf("%s/big.bin", s.tmp);
    cr_assert_eq(kbi_write_file_atomic(NULL, src, big, sizeof(big), 0644), 0);
    cr_assert_eq(kbi_registry_blob_put_file(&db, s.reg, "radeonflow/gemm", src), 0, "%s", msg(&s));
    cr_expect(strstr(s.log.data, "PATCH ") != NULL, "the big blob went in chunks");
    cr_expect(strstr(s.log.data, "digest=sha256:") != NULL, "%s", s.log.data);

    uint64_t size = 0;
    cr_expect_eq(kbi_registry_blob_exists(&size, s.reg, "radeonflow/gemm", db), 0);
    cr_expect_eq(size, sizeof(big));
    char *dest = kbi_asprintf("%s/big.out", s.tmp);
    cr_assert_eq(kbi_registry_blob_get_file(s.reg, "radeonflow/gemm", db, dest, 0), 0, "%s",
                 msg(&s));
    kb_buf got = KB_BUF_INIT;
    kbi_read_file(NULL, dest, &got);
    cr_expect_eq(got.len, sizeof(big));
    cr_expect_eq(memcmp(got.data, big, sizeof(big)), 0);
    kbi_buf_free(&got);
    kb_buf mem = KB_BUF_INIT;
    cr_assert_eq(kbi_registry_blob_get_mem(&mem, s.reg, "radeonflow/gemm", ds, 4096), 0);
    cr_expect_eq(mem.len, sizeof(small));
    cr_expect_eq(memcmp(mem.data, small, sizeof(small)), 0);
    kbi_buf_free(&mem);

    /* a second push of the same blob is a HEAD and nothing else */
    s.log.len = 0;
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, s.reg, "radeonflow/gemm", small, sizeof(small)),
                 0);
    cr_expect(kbi_str_starts(s.log.data, "HEAD "), "%s", s.log.data);
    cr_expect(strstr(s.log.data, "POST ") == NULL, "%s", s.log.data);

    const char *missing = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    cr_expect_eq(kbi_registry_blob_exists(NULL, s.reg, "radeonflow/gemm", missing),
                 KB_ERR_NOT_FOUND);
    char *want = kbi_asprintf("HEAD %s/v2/ns/radeonflow/gemm/blobs/%s: 404", s.srv.url, missing);
    cr_expect(kbi_str_starts(msg(&s), want), "%s", msg(&s));
    free(want);
    free(dest);
    free(src);
    free(ds);
    free(db);
    close_session(&s);
}

Test(registry_remote, manifests_index_tags_and_catalog)
{
    session s;
    open_session(&s, NULL, NULL, "ns");
    const char *repo = "radeonflow/gemm";
    kb_buf a = KB_BUF_INIT, b = KB_BUF_INIT;
    build_artifact(&s, &a, repo, "sm_90 bytes");
    build_artifact(&s, &b, repo, "gfx1030 bytes");

    /* the index names children that are not there yet: refused */
    kb_oci_index ix = {0};
    kb_oci_descriptor d = {0};
    kbi_oci_descriptor_for(&d, KB_MT_OCI_MANIFEST, a.data, a.len);
    d.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    kbi_oci_annotate(&d.annotations, "dev.kbpkg.target", "cuda13-sm_90-x86_64-linux");
    kbi_oci_index_add(&ix, &d);
    kbi_oci_descriptor_clear(&d);
    kbi_oci_descriptor_for(&d, KB_MT_OCI_MANIFEST, b.data, b.len);
    kbi_oci_index_add(&ix, &d);
    kbi_oci_descriptor_clear(&d);
    kb_buf ib = KB_BUF_INIT;
    kbi_oci_index_serialize(&ib, s.ctx, &ix);
    int rc =
        kbi_registry_manifest_put(NULL, s.reg, repo, "1.0.0", KB_MT_OCI_INDEX, ib.data, ib.len);
    cr_expect_eq(rc, KB_ERR_REGISTRY, "%s", msg(&s));
    char *want = kbi_asprintf("PUT %s/v2/ns/radeonflow/gemm/manifests/1.0.0: 400 ", s.srv.url);
    cr_expect(kbi_str_starts(msg(&s), want), "%s", msg(&s));
    cr_expect(strstr(msg(&s), "MANIFEST_BLOB_UNKNOWN") || strstr(msg(&s), "MANIFEST_INVALID"), "%s",
              msg(&s));
    free(want);

    char *da = NULL, *db = NULL, *di = NULL;
    cr_assert_eq(kbi_registry_manifest_put(&da, s.reg, repo, "sha256:placeholder", "x", "", 0),
                 KB_ERR_INVALID);
    kbi_oci_descriptor_for(&d, "", a.data, a.len);
    cr_assert_eq(
        kbi_registry_manifest_put(&da, s.reg, repo, d.digest, KB_MT_OCI_MANIFEST, a.data, a.len), 0,
        "%s", msg(&s));
    kbi_oci_descriptor_clear(&d);
    cr_assert_eq(
        kbi_registry_manifest_put(&db, s.reg, repo, "child-b", KB_MT_OCI_MANIFEST, b.data, b.len),
        0, "%s", msg(&s));
    cr_assert_eq(
        kbi_registry_manifest_put(&di, s.reg, repo, "1.0.0", KB_MT_OCI_INDEX, ib.data, ib.len), 0,
        "%s", msg(&s));
    cr_assert_eq(
        kbi_registry_manifest_put(NULL, s.reg, repo, "latest", KB_MT_OCI_INDEX, ib.data, ib.len), 0,
        "%s", msg(&s));

    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, s.reg, repo, "1.0.0"), 0, "%s", msg(&s));
    cr_expect_str_eq(m->media_type, KB_MT_OCI_INDEX);
    cr_expect_str_eq(m->digest, di);
    cr_expect_eq(m->len, ib.len);
    cr_expect_eq(memcmp(m->data, ib.data, ib.len), 0, "the exact bytes come back");
    kb_oci_index back = {0};
    cr_assert_eq(kbi_oci_index_parse(&back, s.ctx, m->data, m->len, m->digest), 0);
    cr_expect_str_eq(kbi_oci_annotation(&back.manifests[0].annotations, "dev.kbpkg.target"),
                     "cuda13-sm_90-x86_64-linux");
    kbi_oci_index_clear(&back);
    kbi_registry_manifest_free(m);
    cr_assert_eq(kbi_registry_manifest_get(&m, s.reg, repo, da), 0, "%s", msg(&s));
    cr_expect_str_eq(m->media_type, KB_MT_OCI_MANIFEST);
    kbi_registry_manifest_free(m);

    cr_expect_eq(kbi_registry_manifest_get(&m, s.reg, repo, "9.9.9"), KB_ERR_NOT_FOUND);
    want = kbi_asprintf("GET %s/v2/ns/radeonflow/gemm/manifests/9.9.9: 404 MANIFEST_UNKNOWN: "
                        "manifest unknown",
                        s.srv.url);
    cr_expect_str_eq(msg(&s), want);
    free(want);

    kb_strv tags = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_tags(&tags, s.reg, repo), 0, "%s", msg(&s));
    cr_assert_eq(tags.len, 3);
    cr_expect_str_eq(tags.items[0], "1.0.0");
    cr_expect_str_eq(tags.items[1], "child-b");
    cr_expect_str_eq(tags.items[2], "latest");
    kbi_strv_free(&tags);
    cr_expect_eq(kbi_registry_tags(&tags, s.reg, "no/such"), KB_ERR_NOT_FOUND);
    cr_expect(strstr(msg(&s), "404 NAME_UNKNOWN"), "%s", msg(&s));
    kbi_strv_free(&tags);

    /* another namespace's repository is not ours to list */
    kb_registry *other = NULL;
    char *ref = kbi_asprintf("http://127.0.0.1:%d/elsewhere", s.srv.port);
    cr_assert_eq(kb_registry_open(&other, s.ctx, ref), 0);
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, other, "x/y", "{}", 2), 0);
    kb_buf ob = KB_BUF_INIT;
    kb_oci_manifest om = {0};
    kbi_oci_descriptor_empty_config(&om.config);
    kbi_oci_manifest_serialize(&ob, s.ctx, &om);
    cr_assert_eq(
        kbi_registry_manifest_put(NULL, other, "x/y", "1", KB_MT_OCI_MANIFEST, ob.data, ob.len), 0,
        "%s", msg(&s));
    kb_strv repos = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_catalog(&repos, s.reg), 0, "%s", msg(&s));
    cr_assert_eq(repos.len, 1);
    cr_expect_str_eq(repos.items[0], "radeonflow/gemm");
    kbi_strv_free(&repos);
    kbi_oci_manifest_clear(&om);
    kbi_buf_free(&ob);
    kb_registry_free(other);
    free(ref);

    kbi_oci_index_clear(&ix);
    kbi_buf_free(&ib);
    kbi_buf_free(&a);
    kbi_buf_free(&b);
    free(da);
    free(db);
    free(di);
    close_session(&s);
}

Test(registry_remote, oversized_manifest_is_refused_before_sending)
{
    session s;
    open_session(&s, NULL, NULL, "ns");
    size_t len = KB_MANIFEST_MAX + 1;
    char *big = malloc(len);
    memset(big, ' ', len);
    s.log.len = 0;
    cr_expect_eq(kbi_registry_manifest_put(NULL, s.reg, "a/b", "1", KB_MT_OCI_MANIFEST, big, len),
                 KB_ERR_LIMIT);
    cr_expect(strstr(msg(&s), "registries refuse more than 4194304"), "%s", msg(&s));
    cr_expect_eq(s.log.len, 0, "nothing was sent");
    free(big);
    close_session(&s);
}

Test(registry_remote, range_resume_after_a_cut)
{
    session s;
    open_session(&s, NULL, NULL, "");
    static char data[300000];
    fill(data, sizeof(data), 3);
    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&digest, s.reg, "a/b", data, sizeof(data)), 0, "%s",
                 msg(&s));
    char *dest = kbi_asprintf("%s/blob", s.tmp);
    char *part = kbi_asprintf("%s.part", dest);
    cr_expect_eq(kbi_registry_blob_get_file(s.reg, "a/b", digest, dest, 100000), KB_ERR_LIMIT);
    struct stat st;
    cr_assert_eq(stat(part, &st), 0);
    cr_expect_eq(st.st_size, 100000);
    s.log.len = 0;
    cr_assert_eq(kbi_registry_blob_get_file(s.reg, "a/b", digest, dest, 0), 0, "%s", msg(&s));
    char *want =
        kbi_asprintf("GET %s/v2/a/b/blobs/%s (Range: bytes=100000-) -> 206", s.srv.url, digest);
    cr_expect(strstr(s.log.data, want) != NULL, "resumed with Range: %s", s.log.data);
    kb_buf got = KB_BUF_INIT;
    kbi_read_file(NULL, dest, &got);
    cr_expect_eq(got.len, sizeof(data));
    cr_expect_eq(memcmp(got.data, data, sizeof(data)), 0);
    cr_expect_not(kbi_path_exists(part));
    kbi_buf_free(&got);
    free(want);
    free(part);
    free(dest);
    free(digest);
    close_session(&s);
}

Test(registry_remote, corrupt_blob_in_storage_is_refused_and_leaves_no_file)
{
    session s;
    open_session(&s, NULL, NULL, "");
    static char data[20000];
    fill(data, sizeof(data), 4);
    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&digest, s.reg, "a/b", data, sizeof(data)), 0);
    char *stored = kbt_registry_blob_data(&s.srv, digest);
    cr_assert(kbi_path_exists(stored), "storage layout changed? %s", stored);
    data[123] ^= 0x55;
    cr_assert_eq(kbi_write_file_atomic(NULL, stored, data, sizeof(data), 0644), 0);
    char hex[65];
    kbi_sha256_hex(data, sizeof(data), hex);
    char *dest = kbi_asprintf("%s/blob", s.tmp);
    cr_expect_eq(kbi_registry_blob_get_file(s.reg, "a/b", digest, dest, 0), KB_ERR_DIGEST);
    char *want =
        kbi_asprintf("digest mismatch for %s: expected %s, got sha256:%s", digest, digest, hex);
    cr_expect_str_eq(msg(&s), want);
    cr_expect_not(kbi_path_exists(dest));
    char *part = kbi_asprintf("%s.part", dest);
    cr_expect_not(kbi_path_exists(part));
    free(part);
    free(want);
    free(dest);
    free(stored);
    free(digest);
    close_session(&s);
}

Test(registry_remote, basic_auth_with_htpasswd)
{
    session s;
    open_session(&s, "alice", "s3cret-pw", "ns");
    cr_expect_eq(kb_registry_check(s.reg), KB_ERR_AUTH);
    char *want = kbi_asprintf("GET %s/v2/: 401 UNAUTHORIZED", s.srv.url);
    cr_expect(kbi_str_starts(msg(&s), want), "%s", msg(&s));
    free(want);
    cr_assert_eq(kb_registry_set_credentials(s.reg, "alice", "wrong"), 0);
    cr_expect_eq(kb_registry_check(s.reg), KB_ERR_AUTH);
    cr_assert_eq(kb_registry_set_credentials(s.reg, "alice", "s3cret-pw"), 0);
    cr_expect_eq(kb_registry_check(s.reg), 0, "%s", msg(&s));
    cr_expect_eq(kbi_registry_blob_put_mem(NULL, s.reg, "a/b", "hello", 5), 0, "%s", msg(&s));
    cr_expect(strstr(s.log.data, "s3cret") == NULL, "credentials never logged");

    /* from the environment, as the CLI passes them */
    setenv("KBPKG_REGISTRY_USER", "alice", 1);
    setenv("KBPKG_REGISTRY_PASSWORD", "s3cret-pw", 1);
    kb_registry *env_reg = NULL;
    char *ref = kbi_asprintf("%s/ns", s.srv.url);
    cr_assert_eq(kb_registry_open(&env_reg, s.ctx, ref), 0);
    unsetenv("KBPKG_REGISTRY_USER");
    unsetenv("KBPKG_REGISTRY_PASSWORD");
    cr_expect_eq(kb_registry_check(env_reg), 0, "%s", msg(&s));
    kb_registry_free(env_reg);
    free(ref);
    close_session(&s);
}

Test(registry_remote, package_version_round_trip)
{
    session s;
    open_session(&s, NULL, NULL, "hub");
    char *archive = kbi_asprintf("%s/a.tar.zst", s.tmp);
    kbt_write(archive, "sm_86 archive bytes");
    kb_publish_item item = {archive, "cuda13-sm_86-x86_64-linux", NULL, "{}"};
    char *digest = NULL;
    cr_assert_eq(
        kbi_pkg_publish(s.reg, "radeonflow/gemm", "0.3.0", NULL, &item, 1, false, NULL, &digest), 0,
        "%s", msg(&s));
    kb_pkg_index *ix = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&ix, s.reg, "radeonflow/gemm", "latest", NULL), 0, "%s",
                 msg(&s));
    cr_expect_str_eq(ix->digest, digest);
    cr_assert_eq(ix->count, 1);
    cr_assert_eq(kbi_pkg_entry_resolve(&ix->entries[0], s.reg, "radeonflow/gemm"), 0, "%s",
                 msg(&s));
    char *out = kbi_asprintf("%s/out", s.tmp);
    cr_assert_eq(
        kbi_registry_blob_get_file(s.reg, "radeonflow/gemm", ix->entries[0].layer_digest, out, 0),
        0, "%s", msg(&s));
    kb_buf b = KB_BUF_INIT;
    kbi_read_file(NULL, out, &b);
    cr_expect_str_eq(b.data, "sm_86 archive bytes");
    kbi_buf_free(&b);
    kb_strv v = KB_STRV_INIT;
    cr_assert_eq(kbi_pkg_versions(&v, s.reg, "radeonflow/gemm"), 0);
    cr_assert_eq(v.len, 1);
    cr_expect_str_eq(v.items[0], "0.3.0");
    kbi_strv_free(&v);
    kbi_pkg_index_free(ix);
    free(out);
    free(digest);
    free(archive);
    close_session(&s);
}
