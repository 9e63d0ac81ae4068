/* Registry: reference URLs, names, WWW-Authenticate challenges, OCI error bodies, open settings. */
#include "kbtest.h"
#include "registry/registry.h"

#include <stdlib.h>
#include <string.h>

Test(registry_parse, reference_urls_pick_the_transport)
{
    kb_ctx *ctx = kbt_ctx();
    kb_registry_url u;
    cr_assert_eq(kbi_registry_url_parse(&u, ctx, "file:///srv/hub/", false), 0);
    cr_expect(u.layout);
    cr_expect_str_eq(u.path, "/srv/hub");
    kbi_registry_url_free(&u);
    cr_assert_eq(kbi_registry_url_parse(&u, ctx, "./hub", false), 0);
    cr_expect(u.layout);
    kbi_registry_url_free(&u);
    cr_assert_eq(kbi_registry_url_parse(&u, ctx, "oci://ghcr.io/radeonflow", false), 0);
    cr_expect_not(u.layout);
    cr_expect_str_eq(u.base, "https://ghcr.io");
    cr_expect_str_eq(u.namespace, "radeonflow");
    kbi_registry_url_free(&u);
    cr_assert_eq(kbi_registry_url_parse(&u, ctx, "oci://127.0.0.1:5000/a/b/", false), 0);
    cr_expect_str_eq(u.base, "http://127.0.0.1:5000", "loopback speaks plain http");
    cr_expect_str_eq(u.namespace, "a/b");
    kbi_registry_url_free(&u);
    cr_assert_eq(kbi_registry_url_parse(&u, ctx, "oci://hub.lan:5000", true), 0);
    cr_expect_str_eq(u.base, "http://hub.lan:5000", "insecure allows http elsewhere");
    cr_expect_str_eq(u.namespace, "");
    kbi_registry_url_free(&u);
    cr_assert_eq(kbi_registry_url_parse(&u, ctx, "https://reg.example/ns", false), 0);
    cr_expect_str_eq(u.base, "https://reg.example");
    kbi_registry_url_free(&u);

    cr_expect_eq(kbi_registry_url_parse(&u, ctx, "http://reg.example/ns", false), KB_ERR_CONFIG);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "registry 'http://reg.example/ns': plain http is only allowed to loopback "
                     "(set insecure=true to allow it)");
    cr_expect_eq(kbi_registry_url_parse(&u, ctx, "ftp://x/y", false), KB_ERR_CONFIG);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "unknown scheme"));
    cr_expect_eq(kbi_registry_url_parse(&u, ctx, "oci:///ns", false), KB_ERR_CONFIG);
    cr_expect_eq(kbi_registry_url_parse(&u, ctx, "oci://h/Bad_NS", false), KB_ERR_CONFIG);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "registry 'oci://h/Bad_NS': invalid namespace 'Bad_NS'");
    kb_ctx_free(ctx);
}

Test(registry_parse, names_tags_and_digests)
{
    cr_expect(kbi_repo_valid("radeonflow/gemm"));
    cr_expect(kbi_repo_valid("a.b/c__d/e--f-g"));
    cr_expect_not(kbi_repo_valid("Radeonflow/gemm"));
    cr_expect_not(kbi_repo_valid("a//b"));
    cr_expect_not(kbi_repo_valid("/a"));
    cr_expect_not(kbi_repo_valid("a/b-"));
    cr_expect_not(kbi_repo_valid("a/b___c"));
    cr_expect_not(kbi_repo_valid("a..b"));
    cr_expect(kbi_tag_valid("1.0.0-rc.1"));
    cr_expect(kbi_tag_valid("sha256-abc.sig"));
    cr_expect(kbi_tag_valid("_x"));
    cr_expect_not(kbi_tag_valid(".x"));
    cr_expect_not(kbi_tag_valid("a:b"));
    cr_expect_not(kbi_tag_valid(""));
    cr_expect(kbi_digest_valid(
        "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"));
    cr_expect_not(kbi_digest_valid(
        "sha256:44136FA355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"));
    cr_expect_not(kbi_digest_valid("sha512:00"));
    cr_expect_not(kbi_digest_valid("sha256:0123"));
    cr_expect(kbi_host_is_loopback("localhost:5000"));
    cr_expect(kbi_host_is_loopback("127.0.0.1"));
    cr_expect(kbi_host_is_loopback("[::1]:80"));
    cr_expect_not(kbi_host_is_loopback("127example.com"));
    cr_expect_not(kbi_host_is_loopback("localhost.evil.com"));
}

Test(registry_parse, bearer_challenge)
{
    kb_auth_challenge c;
    cr_assert_eq(kbi_auth_challenge_parse(
                     &c, "Bearer realm=\"https://auth.example/token\",service=\"reg.example\","
                         "scope=\"repository:radeonflow/gemm:pull,push\""),
                 0);
    cr_expect_str_eq(c.scheme, "Bearer");
    cr_expect_str_eq(c.realm, "https://auth.example/token");
    cr_expect_str_eq(c.service, "reg.example");
    cr_expect_str_eq(c.scope, "repository:radeonflow/gemm:pull,push");
    kbi_auth_challenge_free(&c);

    cr_assert_eq(kbi_auth_challenge_parse(&c, "Bearer realm=\"r\\\"q\", error=\"invalid_token\", "
                                              "service=plain"),
                 0);
    cr_expect_str_eq(c.realm, "r\"q");
    cr_expect_str_eq(c.service, "plain");
    cr_expect_null(c.scope);
    kbi_auth_challenge_free(&c);

    cr_assert_eq(kbi_auth_challenge_parse(&c, "Basic realm=\"kbpkg-test\""), 0);
    cr_expect_str_eq(c.scheme, "Basic");
    cr_expect_str_eq(c.realm, "kbpkg-test");
    kbi_auth_challenge_free(&c);

    cr_expect_eq(kbi_auth_challenge_parse(&c, "Bearer realm=\"unterminated"), KB_ERR_PARSE);
    cr_expect_eq(kbi_auth_challenge_parse(&c, "Bearer realm"), KB_ERR_PARSE);
    cr_expect_eq(kbi_auth_challenge_parse(&c, ""), KB_ERR_PARSE);
}

Test(registry_parse, oci_error_bodies)
{
    const char *body = "{\"errors\":[{\"code\":\"MANIFEST_INVALID\",\"message\":\"manifest "
                       "invalid\",\"detail\":{}},{\"code\":\"X\"}]}";
    char *s = kbi_oci_error_summary(body, strlen(body));
    cr_expect_str_eq(s, "MANIFEST_INVALID: manifest invalid");
    free(s);
    s = kbi_oci_error_summary("{\"errors\":[{\"code\":\"DENIED\"}]}", 30);
    cr_expect_str_eq(s, "DENIED");
    free(s);
    cr_expect_null(kbi_oci_error_summary("<html>502</html>", 16));
    cr_expect_null(kbi_oci_error_summary("{\"errors\":[]}", 13));
    cr_expect_null(kbi_oci_error_summary(NULL, 0));
    /* fuzz_auth: an empty code is no code (it made an empty summary, or ": message") */
    cr_expect_null(kbi_oci_error_summary("{\"errors\":[{\"code\":\"\"}]}", 24));
    body = "{\"errors\":[{\"code\":\"\",\"message\":\"denied\"}]}";
    cr_expect_null(kbi_oci_error_summary(body, strlen(body)));
}

Test(registry_parse, offline_refuses_remote_before_any_connection)
{
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "offline", "true"), 0);
    kb_registry *r = (kb_registry *)1;
    /* port 9 (discard) on loopback: nothing is contacted, so no network error either */
    cr_expect_eq(kb_registry_open(&r, ctx, "oci://127.0.0.1:9/ns"), KB_ERR_OFFLINE);
    cr_expect_null(r);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message,
                     "registry oci://127.0.0.1:9/ns needs the network but offline mode is on");
    char *dir = kbt_mkdtemp();
    cr_expect_eq(kb_registry_open(&r, ctx, dir), 0, "a layout folder needs no network");
    kb_registry_free(r);
    kbt_rmtree(dir);
    free(dir);
    kb_ctx_free(ctx);
}

Test(registry_parse, connection_refused_is_a_network_error_naming_the_url)
{
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "net.retries", "0"), 0);
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, "http://127.0.0.1:9/ns"), 0);
    cr_expect_eq(kb_registry_check(r), KB_ERR_NETWORK);
    cr_expect(kbi_str_starts(kb_ctx_last_error(ctx)->message, "GET http://127.0.0.1:9/v2/: "), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->url, "http://127.0.0.1:9/v2/");
    kb_registry_free(r);
    kb_ctx_free(ctx);
}
