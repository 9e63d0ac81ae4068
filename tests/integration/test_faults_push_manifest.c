/* Network faults during blob uploads and manifest fetches, injected by a proxy in front of a real
 * registry. */
#include "fault_proxy.h"
#include "kbtest.h"
#include "registry/registry.h"
#include "registry_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPO "faults/up"
#define TRIES 5
#define BLOB_LEN ((size_t)200 * 1000 + 3)
#define CHUNK ((uint64_t)64 * 1024)

typedef struct fixture {
    kbt_registry srv;
    kbt_proxy *proxy;
    kb_ctx *ctx;
    kb_registry *reg;    /* through the proxy */
    kb_registry *direct; /* straight to the registry: checks what it really holds */
    char *tmp;
} fixture;

static const char *msg(const fixture *f)
{
    return kb_ctx_last_error(f->ctx)->message;
}

static void fill(char *data, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (char)(seed >> 16);
    }
}

static void fixture_open(fixture *f)
{
    memset(f, 0, sizeof(*f));
    if (!kbt_registry_available())
        kbt_skip_missing(KBT_DOCKER_REGISTRY " is not installed (apt-get install docker-registry)");
    kbt_registry_start(&f->srv, NULL, NULL);
    f->proxy = kbt_proxy_start(f->srv.port);
    f->ctx = kbt_ctx();
    kb_ctx_set(f->ctx, "net.retries", "3");
    kb_ctx_set(f->ctx, "net.timeout_s", "2");
    cr_assert_eq(kb_registry_open(&f->reg, f->ctx, kbt_proxy_url(f->proxy)), 0, "%s", msg(f));
    cr_assert_eq(kb_registry_open(&f->direct, f->ctx, f->srv.url), 0, "%s", msg(f));
    f->tmp = kbt_mkdtemp();
}

static void fixture_close(fixture *f)
{
    kb_registry_free(f->reg);
    kb_registry_free(f->direct);
    kb_ctx_free(f->ctx);
    kbt_proxy_stop(f->proxy);
    kbt_registry_stop(&f->srv);
    kbt_rmtree(f->tmp);
    free(f->tmp);
}

static void start_round(fixture *f)
{
    kbt_proxy_clear_rules(f->proxy);
    kbt_proxy_reset_log(f->proxy);
    kb_ctx_clear_error(f->ctx);
}

static void add_rule(fixture *f, kbt_fault_rule rule)
{
    kbt_proxy_add_rule(f->proxy, &rule);
}

/* The registry (asked directly) holds exactly data under digest. */
static void expect_stored(fixture *f, const char *digest, const char *data, size_t len)
{
    kb_buf got = KB_BUF_INIT;
    cr_assert_eq(kbi_registry_blob_get_mem(&got, f->direct, REPO, digest, len + 1), 0, "%s",
                 msg(f));
    cr_expect_eq(got.len, len);
    cr_expect(got.len == len && memcmp(got.data, data, len) == 0);
    kbi_buf_free(&got);
}

/* A new blob per round, written to a file for kbi_registry_blob_put_file. */
static char *blob_file(fixture *f, int round, char *data, size_t len)
{
    fill(data, len, 100u + (unsigned)round);
    char *path = kbi_asprintf("%s/blob-%d", f->tmp, round);
    cr_assert_eq(kbi_write_file_atomic(NULL, path, data, len, 0644), 0);
    return path;
}

typedef struct upload_round {
    const char *method; /* the request that breaks */
    unsigned nth;
    kbt_fault_kind kind;
    uint64_t offset;
    int status;
} upload_round;

static void run_upload_rounds(fixture *f, const upload_round *rounds, bool chunked)
{
    kbi_registry_set_chunk_size(f->reg, chunked ? CHUNK : 0);
    char *data = malloc(BLOB_LEN);
    cr_assert_not_null(data);
    for (int i = 0; i < TRIES; i++) {
        start_round(f);
        char *path = blob_file(f, i + (chunked ? 100 : 0), data, BLOB_LEN);
        add_rule(f, (kbt_fault_rule){.method = rounds[i].method,
                                     .path = "/blobs/uploads/",
                                     .nth = rounds[i].nth,
                                     .kind = rounds[i].kind,
                                     .offset = rounds[i].offset,
                                     .status = rounds[i].status});
        char *digest = NULL;
        int rc = kbi_registry_blob_put_file(&digest, f->reg, REPO, path);
        if (rc || getenv("KBT_DEBUG"))
            kbt_proxy_dump(f->proxy);
        cr_assert_eq(rc, 0, "round %d (%s #%u kind %d): %s", i, rounds[i].method, rounds[i].nth,
                     rounds[i].kind, msg(f));
        cr_expect_geq(kbt_proxy_count(f->proxy, rounds[i].method, "/blobs/uploads/"), rounds[i].nth,
                      "round %d: the fault was reached", i);
        expect_stored(f, digest, data, BLOB_LEN);
        free(digest);
        free(path);
    }
    free(data);
}

Test(faults_upload, monolithic_put_survives_server_errors_cuts_and_lost_answers)
{
    fixture f;
    fixture_open(&f);
    static const upload_round rounds[TRIES] = {
        {"PUT", 1, KBT_FAULT_STATUS, 0, 500},
        {"POST", 1, KBT_FAULT_STATUS, 0, 503},
        {"PUT", 1, KBT_FAULT_CUT_REQUEST, 1000, 0},
        {"PUT", 1, KBT_FAULT_CUT_REQUEST, 150000, 0},
        {"PUT", 1, KBT_FAULT_CUT_AFTER_UPSTREAM, 0, 0},
    };
    run_upload_rounds(&f, rounds, false);
    fixture_close(&f);
}

Test(faults_upload, chunked_upload_survives_server_errors_cuts_and_lost_answers)
{
    fixture f;
    fixture_open(&f);
    static const upload_round rounds[TRIES] = {
        {"PATCH", 2, KBT_FAULT_STATUS, 0, 503},
        {"PATCH", 1, KBT_FAULT_CUT_REQUEST, 30000, 0},
        {"PATCH", 3, KBT_FAULT_CUT_AFTER_UPSTREAM, 0, 0},
        {"PUT", 1, KBT_FAULT_CUT_REQUEST, 100, 0},
        {"PUT", 1, KBT_FAULT_CUT_AFTER_UPSTREAM, 0, 0},
    };
    run_upload_rounds(&f, rounds, true);
    fixture_close(&f);
}

Test(faults_upload, an_upload_that_keeps_failing_names_the_url_and_stores_nothing)
{
    fixture f;
    fixture_open(&f);
    char *data = malloc(BLOB_LEN);
    char *path = blob_file(&f, 50, data, BLOB_LEN);
    kb_registry_free(f.reg);
    kb_ctx_set(f.ctx, "net.retries", "1");
    cr_assert_eq(kb_registry_open(&f.reg, f.ctx, kbt_proxy_url(f.proxy)), 0);
    start_round(&f);
    add_rule(&f, (kbt_fault_rule){.method = "PUT",
                                  .path = "/blobs/uploads/",
                                  .kind = KBT_FAULT_STATUS,
                                  .status = 500});
    int rc = kbi_registry_blob_put_file(NULL, f.reg, REPO, path);
    cr_expect_eq(rc, KB_ERR_HTTP, "%s", msg(&f));
    cr_expect(strstr(msg(&f), "PUT http://127.0.0.1:"), "%s", msg(&f));
    cr_expect(strstr(msg(&f), "/blobs/uploads/"), "%s", msg(&f));
    cr_expect(strstr(msg(&f), "500"), "%s", msg(&f));
    /* net.retries=1: each session tries its PUT twice; one new session, then it stops */
    cr_expect_eq(kbt_proxy_count(f.proxy, "POST", "/blobs/uploads/"), 2);
    cr_expect_eq(kbt_proxy_count(f.proxy, "PUT", "/blobs/uploads/"), 4);
    char hex[65];
    kbi_sha256_hex(data, BLOB_LEN, hex);
    char *digest = kbi_asprintf("sha256:%s", hex);
    uint64_t size = 0;
    cr_expect_eq(kbi_registry_blob_exists(&size, f.direct, REPO, digest), KB_ERR_NOT_FOUND);
    free(digest);
    free(path);
    free(data);
    fixture_close(&f);
}

/* ---- manifests ---- */

/* An artifact manifest whose blobs are in the registry; returns its bytes, tag "1.0.0". */
static char *push_manifest(fixture *f, char **digest_out)
{
    char *layer = NULL;
    const char *text = "kernel bytes for the manifest tests";
    cr_assert_eq(kbi_registry_blob_put_mem(&layer, f->direct, REPO, text, strlen(text)), 0);
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, f->direct, REPO, "{}", 2), 0);
    char *json = kbi_asprintf(
        "{\"schemaVersion\":2,\"mediaType\":\"" KB_MT_OCI_MANIFEST "\","
        "\"artifactType\":\"application/vnd.kbpkg.artifact.v1\","
        "\"config\":{\"mediaType\":\"" KB_MT_OCI_EMPTY "\",\"digest\":\"sha256:"
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\",\"size\":2},"
        "\"layers\":[{\"mediaType\":\"application/vnd.kbpkg.layer.v1.tar+zstd\","
        "\"digest\":\"%s\",\"size\":%zu}]}",
        layer, strlen(text));
    cr_assert_eq(kbi_registry_manifest_put(digest_out, f->direct, REPO, "1.0.0", KB_MT_OCI_MANIFEST,
                                           json, strlen(json)),
                 0, "%s", msg(f));
    free(layer);
    return json;
}

Test(faults_manifest, a_flipped_byte_in_a_manifest_is_a_digest_error)
{
    fixture f;
    fixture_open(&f);
    char *digest = NULL;
    char *json = push_manifest(&f, &digest);
    size_t len = strlen(json);
    const uint64_t offsets[TRIES] = {0, 1, len / 3, len / 2, len - 1};
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/manifests/",
                                      .kind = KBT_FAULT_FLIP,
                                      .offset = offsets[i]});
        const char *ref = i % 2 ? digest : "1.0.0";
        kb_registry_manifest *m = NULL;
        int rc = kbi_registry_manifest_get(&m, f.reg, REPO, ref);
        cr_expect_eq(rc, KB_ERR_DIGEST, "round %d (%s): %s", i, ref, kb_strerror(rc));
        cr_expect_null(m);
        cr_expect(strstr(msg(&f), digest), "names the expected digest: %s", msg(&f));
        cr_expect(strstr(msg(&f), "got sha256:"), "names the received digest: %s", msg(&f));
        cr_expect(strstr(msg(&f), "/manifests/"), "names the URL: %s", msg(&f));
        kbi_registry_manifest_free(m);
    }
    free(json);
    free(digest);
    fixture_close(&f);
}

Test(faults_manifest, manifest_fetches_are_retried_through_cuts_and_server_errors)
{
    fixture f;
    fixture_open(&f);
    char *digest = NULL;
    char *json = push_manifest(&f, &digest);
    size_t len = strlen(json);
    const kbt_fault_rule rules[TRIES] = {
        {.kind = KBT_FAULT_STATUS, .status = 503},       {.kind = KBT_FAULT_CUT, .offset = 1},
        {.kind = KBT_FAULT_TRUNCATE, .offset = len / 2}, {.kind = KBT_FAULT_STATUS, .status = 429},
        {.kind = KBT_FAULT_CUT, .offset = len - 1},
    };
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        kbt_fault_rule r = rules[i];
        r.method = "GET";
        r.path = "/manifests/";
        r.nth = 1;
        add_rule(&f, r);
        kb_registry_manifest *m = NULL;
        cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, REPO, i % 2 ? digest : "1.0.0"), 0,
                     "round %d: %s", i, msg(&f));
        cr_expect_eq(m->len, len);
        cr_expect_str_eq(m->data, json);
        cr_expect_str_eq(m->digest, digest);
        cr_expect_eq(kbt_proxy_count(f.proxy, "GET", "/manifests/"), 2);
        kbi_registry_manifest_free(m);
    }
    free(json);
    free(digest);
    fixture_close(&f);
}
