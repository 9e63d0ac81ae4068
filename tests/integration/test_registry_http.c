/* Registry HTTP behaviour against scripted servers: bearer tokens, credential scoping, retries,
 * cuts, pages. */
#include "kbtest.h"
#include "registry/registry.h"
#include "registry_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct token_state {
    char realm_host[64]; /* the host the challenge names for the token service */
    int port;
} token_state;

/* "alice:pw" */
#define ALICE_BASIC "Basic YWxpY2U6cHc="

static void token_registry(int fd, const kbt_http_request *req, void *state)
{
    token_state *st = state;
    char auth[256];
    const char *a = kbt_http_header(req, "Authorization", auth, sizeof(auth));
    if (kbi_str_starts(req->path, "/token")) {
        bool scoped = strstr(req->path, "service=fake") &&
                      strstr(req->path, "scope=repository%3Aa%2Fb%3Apull");
        if (a && strcmp(a, ALICE_BASIC) == 0 && scoped)
            kbt_http_reply(fd, "200 OK", "Content-Type: application/json\r\n",
                           "{\"token\":\"good-token\"}");
        else
            kbt_http_reply(fd, "401 Unauthorized", "", "{\"details\":\"bad credentials\"}");
        return;
    }
    if (a && strcmp(a, "Bearer good-token") == 0) {
        kbt_http_reply(fd, "200 OK", "Content-Type: application/json\r\n",
                       "{\"name\":\"a/b\",\"tags\":[\"1.0.0\"]}");
        return;
    }
    char challenge[512];
    snprintf(challenge, sizeof(challenge),
             "WWW-Authenticate: Bearer realm=\"http://%s:%d/token\",service=\"fake\","
             "scope=\"repository:a/b:pull\"\r\nContent-Type: application/json\r\n",
             st->realm_host, st->port);
    kbt_http_reply(fd, "401 Unauthorized", challenge,
                   "{\"errors\":[{\"code\":\"UNAUTHORIZED\",\"message\":\"authentication "
                   "required\"}]}");
}

static kb_ctx *quiet_ctx(void)
{
    kb_ctx *ctx = kbt_ctx();
    kb_ctx_set(ctx, "net.retries", "0");
    return ctx;
}

static void start_token_registry(kbt_http_server *srv, const char *realm_host)
{
    /* the handler needs the port before the server has one: pick it, then serve on it */
    token_state st = {{0}, 0};
    snprintf(st.realm_host, sizeof(st.realm_host), "%s", realm_host);
    for (int attempt = 0; attempt < 20; attempt++) {
        st.port = kbt_free_port();
        kbt_http_start_on(srv, st.port, token_registry, &st);
        if (srv->pid > 0)
            return;
    }
    cr_assert_fail("could not start the token server");
}

Test(registry_http, bearer_token_flow_with_basic_credentials)
{
    kbt_http_server srv;
    start_token_registry(&srv, "127.0.0.1");
    kb_ctx *ctx = quiet_ctx();
    kb_registry *r = NULL;
    char *ref = kbi_asprintf("%s/", srv.url);
    cr_assert_eq(kb_registry_open(&r, ctx, ref), 0);
    kb_strv tags = KB_STRV_INIT;
    cr_expect_eq(kbi_registry_tags(&tags, r, "a/b"), KB_ERR_AUTH, "no credentials, no token");
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "token request refused: GET "), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_assert_eq(kb_registry_set_credentials(r, "alice", "pw"), 0);
    cr_assert_eq(kbi_registry_tags(&tags, r, "a/b"), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_eq(tags.len, 1);
    cr_expect_str_eq(tags.items[0], "1.0.0");
    kbi_strv_free(&tags);
    kb_registry_free(r);
    free(ref);
    kb_ctx_free(ctx);
    kbt_http_stop(&srv);
}

Test(registry_http, credentials_never_go_to_another_host)
{
    kbt_http_server srv;
    /* the challenge sends us to "localhost": same machine, different host name */
    start_token_registry(&srv, "localhost");
    kb_ctx *ctx = quiet_ctx();
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, srv.url), 0);
    cr_assert_eq(kb_registry_set_credentials(r, "alice", "pw"), 0);
    kb_strv tags = KB_STRV_INIT;
    cr_expect_eq(kbi_registry_tags(&tags, r, "a/b"), KB_ERR_AUTH);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "http://localhost:"), "%s",
              kb_ctx_last_error(ctx)->message);
    kbi_strv_free(&tags);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbt_http_stop(&srv);
}

typedef struct flaky_state {
    int fails_left; /* the child's copy counts down */
} flaky_state;

static void flaky_registry(int fd, const kbt_http_request *req, void *state)
{
    flaky_state *st = state;
    if (st->fails_left-- > 0) {
        kbt_http_reply(fd, "503 Service Unavailable", "Retry-After: 1\r\n", "busy");
        return;
    }
    kbt_http_reply(fd, "200 OK", "", "{}");
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

Test(registry_http, retries_honour_retry_after)
{
    flaky_state st = {1};
    kbt_http_server srv;
    kbt_http_start(&srv, flaky_registry, &st);
    kb_ctx *ctx = kbt_ctx();
    kb_ctx_set(ctx, "net.retries", "2");
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, srv.url), 0);
    double t0 = now_s();
    cr_expect_eq(kb_registry_check(r), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect(now_s() - t0 >= 0.9, "waited for Retry-After: 1");
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbt_http_stop(&srv);

    st.fails_left = 100;
    kbt_http_start(&srv, flaky_registry, &st);
    ctx = kbt_ctx();
    kb_ctx_set(ctx, "net.retries", "0");
    cr_assert_eq(kb_registry_open(&r, ctx, srv.url), 0);
    cr_expect_eq(kb_registry_check(r), KB_ERR_HTTP);
    char *want = kbi_asprintf("GET %s/v2/: 503 Service Unavailable", srv.url);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message, want);
    free(want);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbt_http_stop(&srv);
}

static void paged_catalog(int fd, const kbt_http_request *req, void *state)
{
    if (strstr(req->path, "last=")) {
        kbt_http_reply(fd, "200 OK", "", "{\"repositories\":[\"ns/c/d\",\"other/e/f\"]}");
        return;
    }
    kbt_http_reply(fd, "200 OK", "Link: </v2/_catalog?last=ns%2Fa%2Fb&n=100>; rel=\"next\"\r\n",
                   "{\"repositories\":[\"ns/a/b\",\"zz/x\"]}");
}

Test(registry_http, catalog_follows_link_pages_and_strips_the_namespace)
{
    kbt_http_server srv;
    kbt_http_start(&srv, paged_catalog, NULL);
    kb_ctx *ctx = quiet_ctx();
    kb_registry *r = NULL;
    char *ref = kbi_asprintf("%s/ns", srv.url);
    cr_assert_eq(kb_registry_open(&r, ctx, ref), 0);
    kb_strv repos = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_catalog(&repos, r), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_assert_eq(repos.len, 2);
    cr_expect_str_eq(repos.items[0], "a/b");
    cr_expect_str_eq(repos.items[1], "c/d");
    kbi_strv_free(&repos);
    kb_registry_free(r);
    free(ref);
    kb_ctx_free(ctx);
    kbt_http_stop(&srv);
}

/* Serves a 64 KiB blob, but the first answer stops halfway and drops the connection. */
typedef struct cut_state {
    int cuts_left;
} cut_state;

static void blob_bytes(char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)(i * 31 + 7);
}

#define CUT_BLOB_SIZE 65536

static void cutting_registry(int fd, const kbt_http_request *req, void *state)
{
    cut_state *st = state;
    static char blob[CUT_BLOB_SIZE];
    blob_bytes(blob, sizeof(blob));
    char range[64], head[256];
    uint64_t from = 0;
    if (kbt_http_header(req, "Range", range, sizeof(range)) && kbi_str_starts(range, "bytes=")) {
        char *dash = strchr(range, '-');
        *dash = '\0';
        kbi_parse_u64(range + 6, &from);
    }
    int n;
    if (from)
        n = snprintf(head, sizeof(head),
                     "HTTP/1.1 206 Partial Content\r\nConnection: close\r\nContent-Length: %llu\r\n"
                     "Content-Range: bytes %llu-%d/%d\r\n\r\n",
                     (unsigned long long)(CUT_BLOB_SIZE - from), (unsigned long long)from,
                     CUT_BLOB_SIZE - 1, CUT_BLOB_SIZE);
    else
        n = snprintf(head, sizeof(head),
                     "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n\r\n",
                     CUT_BLOB_SIZE);
    size_t body = CUT_BLOB_SIZE - (size_t)from;
    if (st->cuts_left-- > 0)
        body /= 2; /* then close: the client sees a partial transfer */
    if (write(fd, head, (size_t)n) < 0 || write(fd, blob + from, body) < 0)
        return;
}

static void log_into(kb_log_level level, const char *message, void *payload)
{
    kbi_buf_printf(payload, "%s\n", message);
}

Test(registry_http, a_cut_download_resumes_with_range_on_retry)
{
    cut_state st = {1};
    kbt_http_server srv;
    kbt_http_start(&srv, cutting_registry, &st);
    kb_buf log = KB_BUF_INIT;
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    o.log = log_into;
    o.payload = &log;
    o.log_level = KB_LOG_DEBUG;
    kb_ctx *ctx = NULL;
    cr_assert_eq(kb_ctx_new(&ctx, &o), 0);
    kb_ctx_set(ctx, "net.retries", "2");
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, srv.url), 0);
    static char blob[CUT_BLOB_SIZE];
    blob_bytes(blob, sizeof(blob));
    char hex[65];
    kbi_sha256_hex(blob, sizeof(blob), hex);
    char *digest = kbi_asprintf("sha256:%s", hex);
    char *dir = kbt_mkdtemp();
    char *dest = kbi_asprintf("%s/blob", dir);
    cr_assert_eq(kbi_registry_blob_get_file(r, "a/b", digest, dest, 0), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char *want = kbi_asprintf("(Range: bytes=%d-) -> 206", CUT_BLOB_SIZE / 2);
    cr_expect(strstr(log.data, want) != NULL, "%s", log.data);
    cr_expect(strstr(log.data, "retrying") != NULL, "%s", log.data);
    kb_buf got = KB_BUF_INIT;
    kbi_read_file(NULL, dest, &got);
    cr_expect_eq(got.len, sizeof(blob));
    cr_expect_eq(memcmp(got.data, blob, sizeof(blob)), 0);
    kbi_buf_free(&got);
    free(want);
    free(dest);
    kbt_rmtree(dir);
    free(dir);
    free(digest);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbi_buf_free(&log);
    kbt_http_stop(&srv);
}
