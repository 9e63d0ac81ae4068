/* Issue 18: a hostile registry on loopback (the fault proxy answering by itself): credentials
 * stay on the registry's own origin, a trickling manifest meets a deadline, tag lists are bounded
 * and de-duplicated in linear time, and a password in the registry URL is refused unprinted. */
#define _GNU_SOURCE
#include "fault_proxy.h"
#include "kbtest.h"
#include "registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Nothing listens on the discard port: a request no rule answers fails loudly. */
#define NO_UPSTREAM 9

static kb_registry *open_remote(kb_ctx *ctx, const kbt_proxy *p, bool with_login)
{
    char *url = kbi_asprintf("oci://127.0.0.1:%d/ns", kbt_proxy_port(p));
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, url), 0, "%s", kb_ctx_last_error(ctx)->message);
    if (with_login)
        cr_assert_eq(kb_registry_set_credentials(r, "alice", "s3cret"), 0);
    free(url);
    return r;
}

static void answer(kbt_proxy *p, const char *method, const char *path, int status,
                   const char *headers, const char *body)
{
    kbt_fault_rule f = {.method = method,
                        .path = path,
                        .kind = KBT_FAULT_ANSWER,
                        .status = status,
                        .headers = headers,
                        .body = body};
    kbt_proxy_add_rule(p, &f);
}

static unsigned with_auth(kbt_proxy *p)
{
    unsigned n = 0;
    kbt_proxy_entry e;
    for (size_t i = 0; kbt_proxy_entry_at(p, i, &e); i++)
        n += e.auth[0] != 0;
    return n;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Issue 18 (4): a tags page whose Link names another origin, and an upload Location elsewhere,
 * get no credentials. */
Test(hostile_registry, credentials_never_leave_the_registry_origin)
{
    kbt_proxy *home = kbt_proxy_start(NO_UPSTREAM);
    kbt_proxy *elsewhere = kbt_proxy_start(NO_UPSTREAM);
    char *link = kbi_asprintf("Link: <%s/v2/ns/kbtest/x/tags/list?n=100&last=a>; rel=\"next\"\r\n",
                              kbt_proxy_url(elsewhere));
    answer(home, "GET", "/tags/list", 200, link, "{\"tags\":[\"1.0.0\"]}");
    answer(elsewhere, "GET", "/tags/list", 200, NULL, "{\"tags\":[\"2.0.0\"]}");
    char *location =
        kbi_asprintf("Location: %s/v2/ns/kbtest/x/blobs/uploads/u1\r\n", kbt_proxy_url(elsewhere));
    answer(home, "HEAD", "/blobs/", 404, NULL, "");
    answer(home, "POST", "/blobs/uploads/", 202, location, "");
    answer(elsewhere, "PUT", "/blobs/uploads/", 201, NULL, "");
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "net.retries", "0"), 0);
    kb_registry *r = open_remote(ctx, home, true);
    kb_strv tags = KB_STRV_INIT;
    kbi_registry_tags(&tags, r, "kbtest/x");
    char *digest = NULL;
    kbi_registry_blob_put_mem(&digest, r, "kbtest/x", "hello", 5);
    cr_expect_gt(with_auth(home), 0, "the registry itself gets the login");
    cr_expect_gt(kbt_proxy_count(elsewhere, NULL, NULL), 1, "the other origin was asked");
    cr_expect_eq(with_auth(elsewhere), 0, "credentials were sent to another origin");
    free(digest);
    kbi_strv_free(&tags);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    free(link);
    free(location);
    kbt_proxy_stop(home);
    kbt_proxy_stop(elsewhere);
}

/* Issue 18 (8): a manifest trickled at 1 byte per 0.5 s meets net.deadline_s. */
Test(hostile_registry, a_trickled_manifest_meets_the_deadline, .timeout = 60)
{
    kbt_proxy *p = kbt_proxy_start(NO_UPSTREAM);
    kbt_fault_rule f = {.method = "GET",
                        .path = "/manifests/",
                        .kind = KBT_FAULT_ANSWER,
                        .headers = "Content-Type: application/vnd.oci.image.index.v1+json\r\n",
                        .body = "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image."
                                "index.v1+json\",\"manifests\":[]}",
                        .chunk = 1,
                        .ms = 500};
    kbt_proxy_add_rule(p, &f);
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "net.retries", "0"), 0);
    cr_assert_eq(kb_ctx_set(ctx, "net.deadline_s", "2"), 0);
    kb_registry *r = open_remote(ctx, p, false);
    kb_registry_manifest *m = NULL;
    double t0 = now_s();
    int rc = kbi_registry_manifest_get(&m, r, "kbtest/x", "1.0.0");
    double took = now_s() - t0;
    cr_expect_eq(rc, KB_ERR_TIMEOUT, "%d %s", rc, kb_ctx_last_error(ctx)->message);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "net.deadline_s"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect(took < 6, "took %.1f s", took);
    kbi_registry_manifest_free(m);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbt_proxy_stop(p);
}

/* Issue 18 (8): a tags page that links to itself ends at once, not after 10,000 requests. */
Test(hostile_registry, a_self_linking_tags_page_ends_at_once)
{
    kbt_proxy *p = kbt_proxy_start(NO_UPSTREAM);
    answer(p, "GET", "/tags/list", 200, "Link: </v2/ns/kbtest/x/tags/list?n=100>; rel=\"next\"\r\n",
           "{\"tags\":[\"1.0.0\"]}");
    kb_ctx *ctx = kbt_ctx();
    kb_registry *r = open_remote(ctx, p, false);
    kb_strv tags = KB_STRV_INIT;
    cr_expect_neq(kbi_registry_tags(&tags, r, "kbtest/x"), 0);
    cr_expect_leq(kbt_proxy_count(p, "GET", "/tags/list"), 2, "requests: %u",
                  kbt_proxy_count(p, "GET", "/tags/list"));
    kbi_strv_free(&tags);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbt_proxy_stop(p);
}

/* Issue 18 (8): 100,000 tags (two pages) are de-duplicated in linear time (64 s before). */
Test(hostile_registry, a_hundred_thousand_tags_are_listed_quickly)
{
    kbt_proxy *p = kbt_proxy_start(NO_UPSTREAM);
    kb_buf page1 = KB_BUF_INIT, page2 = KB_BUF_INIT;
    kbi_buf_puts(&page1, "{\"tags\":[");
    kbi_buf_puts(&page2, "{\"tags\":[");
    for (int i = 0; i < 100000; i++)
        kbi_buf_printf(i < 50000 ? &page1 : &page2, "%s\"%d\"", i % 50000 ? "," : "", i);
    kbi_buf_puts(&page1, "]}");
    kbi_buf_puts(&page2, "]}");
    answer(p, "GET", "last=p1", 200, NULL, page2.data);
    answer(p, "GET", "/tags/list", 200,
           "Link: </v2/ns/kbtest/x/tags/list?n=100&last=p1>; rel=\"next\"\r\n", page1.data);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *r = open_remote(ctx, p, false);
    kb_strv tags = KB_STRV_INIT;
    double t0 = now_s();
    cr_assert_eq(kbi_registry_tags(&tags, r, "kbtest/x"), 0, "%s", kb_ctx_last_error(ctx)->message);
    double took = now_s() - t0;
    cr_expect_eq(tags.len, 100000);
    cr_expect(took < 5, "took %.1f s", took);
    kbi_strv_free(&tags);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbi_buf_free(&page1);
    kbi_buf_free(&page2);
    kbt_proxy_stop(p);
}

/* Issue 18 (5): a password in the registry URL is refused, pointing at kbpkg login, and never
 * printed. */
Test(hostile_registry, a_password_in_the_registry_url_is_refused_unprinted)
{
    const char *args[] = {
        "search", "gemm", "--json", "-v", "--registry", "oci://alice:s3cret@127.0.0.1:9/ns", NULL};
    kbt_run r = kbt_kbpkg(NULL, args);
    cr_expect_neq(r.exit_code, 0);
    cr_expect(!strstr(r.out, "s3cret") && !strstr(r.err, "s3cret"), "%s%s", r.out, r.err);
    cr_expect(strstr(r.out, "kbpkg login") || strstr(r.err, "kbpkg login"), "%s%s", r.out, r.err);
    kbt_run_free(&r);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *reg = NULL;
    cr_expect_eq(kb_registry_open(&reg, ctx, "https://bob:pw@example.com/ns"), KB_ERR_CONFIG);
    cr_expect(!strstr(kb_ctx_last_error(ctx)->message, "pw@"), "%s",
              kb_ctx_last_error(ctx)->message);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
}
