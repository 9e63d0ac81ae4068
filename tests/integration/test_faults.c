/* Network faults between the registry client and a real docker-registry, injected by a proxy. */
#include "fault_proxy.h"
#include "kbtest.h"
#include "registry/registry.h"
#include "registry_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define REPO "faults/blob"
#define BLOB_LEN ((size_t)300 * 1000 + 17)
#define TRIES 5

typedef struct fixture {
    kbt_registry srv;
    kbt_proxy *proxy;
    kb_ctx *ctx;
    kb_registry *reg;
    char *tmp;
    char *blob;
    size_t len;
    char *digest;
    char *url; /* the blob's URL through the proxy */
} fixture;

static void fill(char *data, size_t len, unsigned seed)
{
    for (size_t i = 0; i < len; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (char)(seed >> 16);
    }
}

static const char *msg(const fixture *f)
{
    return kb_ctx_last_error(f->ctx)->message;
}

/* Reopen the client with these settings (kb_registry_open reads them once). */
static void client_settings(fixture *f, const char *retries, const char *timeout_s)
{
    kb_registry_free(f->reg);
    f->reg = NULL;
    cr_assert_eq(kb_ctx_set(f->ctx, "net.retries", retries), 0);
    cr_assert_eq(kb_ctx_set(f->ctx, "net.timeout_s", timeout_s), 0);
    cr_assert_eq(kb_registry_open(&f->reg, f->ctx, kbt_proxy_url(f->proxy)), 0, "%s", msg(f));
}

/* A registry behind a proxy holding one pseudo-random blob; the proxy's log starts empty. */
static void fixture_open(fixture *f)
{
    memset(f, 0, sizeof(*f));
    if (!kbt_registry_available())
        kbt_skip_missing(KBT_DOCKER_REGISTRY " is not installed (apt-get install docker-registry)");
    kbt_registry_start(&f->srv, NULL, NULL);
    f->proxy = kbt_proxy_start(f->srv.port);
    f->ctx = kbt_ctx();
    f->tmp = kbt_mkdtemp();
    client_settings(f, "3", "5");
    f->len = BLOB_LEN;
    f->blob = malloc(f->len);
    cr_assert_not_null(f->blob);
    fill(f->blob, f->len, 7);
    cr_assert_eq(kbi_registry_blob_put_mem(&f->digest, f->reg, REPO, f->blob, f->len), 0, "%s",
                 msg(f));
    f->url = kbi_asprintf("%s/v2/%s/blobs/%s", kbt_proxy_url(f->proxy), REPO, f->digest);
    kbt_proxy_reset_log(f->proxy);
}

static void fixture_close(fixture *f)
{
    kb_registry_free(f->reg);
    kb_ctx_free(f->ctx);
    kbt_proxy_stop(f->proxy);
    kbt_registry_stop(&f->srv);
    kbt_rmtree(f->tmp);
    free(f->tmp);
    free(f->blob);
    free(f->digest);
    free(f->url);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *dest_path(const fixture *f, const char *what, int i)
{
    return kbi_asprintf("%s/%s-%d", f->tmp, what, i);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static bool part_exists(const char *dest)
{
    char *part = kbi_asprintf("%s.part", dest);
    bool e = exists(part);
    free(part);
    return e;
}

/* dest holds exactly the blob. */
static void expect_blob_at(const fixture *f, const char *dest)
{
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, dest, &b), 0, "no file at %s", dest);
    cr_expect_eq(b.len, f->len);
    cr_expect(b.len == f->len && memcmp(b.data, f->blob, f->len) == 0, "%s differs from the blob",
              dest);
    kbi_buf_free(&b);
}

static void add_rule(fixture *f, kbt_fault_rule rule)
{
    kbt_proxy_add_rule(f->proxy, &rule);
}

static void start_round(fixture *f)
{
    kbt_proxy_clear_rules(f->proxy);
    kbt_proxy_reset_log(f->proxy);
    kb_ctx_clear_error(f->ctx);
}

static unsigned blob_gets(fixture *f)
{
    return kbt_proxy_count(f->proxy, "GET", "/blobs/sha256:");
}

/* The offset a logged request resumed from ("bytes=N-"), or -1 without a Range. */
static long long range_from(const kbt_proxy_entry *e)
{
    unsigned long long n;
    if (sscanf(e->range, "bytes=%llu-", &n) != 1)
        return -1;
    return (long long)n;
}

/* ---- retries ---- */

Test(faults, server_errors_are_retried_with_backoff_then_succeed)
{
    fixture f;
    fixture_open(&f);
    static const int statuses[TRIES] = {500, 503, 429, 500, 503};
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        unsigned failures = 1 + (unsigned)(i % 3); /* 1..3 failures, within net.retries=3 */
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/sha256:",
                                      .nth = 1,
                                      .times = failures,
                                      .kind = KBT_FAULT_STATUS,
                                      .status = statuses[i]});
        char *dest = dest_path(&f, "blob", i);
        double t0 = now_s();
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        double elapsed = now_s() - t0;
        expect_blob_at(&f, dest);
        cr_expect_eq(blob_gets(&f), failures + 1, "round %d: %u GETs", i, blob_gets(&f));
        /* exponential backoff: 250 ms, then 500, then 1000 */
        double backoff = 0.25 * (double)((1u << failures) - 1);
        cr_expect(elapsed >= backoff - 0.02, "round %d: %.3f s < backoff %.3f s", i, elapsed,
                  backoff);
        cr_expect(!part_exists(dest));
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, retry_after_is_honoured)
{
    fixture f;
    fixture_open(&f);
    static const int statuses[TRIES] = {503, 429, 503, 429, 500};
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 1,
                                      .kind = KBT_FAULT_STATUS,
                                      .status = statuses[i],
                                      .retry_after = 1});
        char *dest = dest_path(&f, "blob", i);
        double t0 = now_s();
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        double elapsed = now_s() - t0;
        cr_expect(elapsed >= 1.0, "round %d: retried after %.3f s, Retry-After says 1", i, elapsed);
        cr_expect(elapsed < 3.0, "round %d: %.3f s", i, elapsed);
        cr_expect_eq(blob_gets(&f), 2);
        expect_blob_at(&f, dest);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, retry_budget_spent_gives_an_error_naming_url_and_last_failure)
{
    fixture f;
    fixture_open(&f);
    client_settings(&f, "2", "5");
    typedef struct round {
        kbt_fault_kind kind;
        int status;
        int code;
        const char *says; /* the last failure, in the message */
    } round;
    static const round rounds[TRIES] = {
        {KBT_FAULT_STATUS, 500, KB_ERR_HTTP, "500"},
        {KBT_FAULT_STATUS, 503, KB_ERR_HTTP, "503"},
        {KBT_FAULT_STATUS, 429, KB_ERR_HTTP, "429"},
        {KBT_FAULT_CUT, 0, KB_ERR_NETWORK, "GET "},
        {KBT_FAULT_TRUNCATE, 0, KB_ERR_NETWORK, "GET "},
    };
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .kind = rounds[i].kind,
                                      .status = rounds[i].status,
                                      .offset = 0});
        char *dest = dest_path(&f, "blob", i);
        int rc = kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0);
        cr_expect_eq(rc, rounds[i].code, "round %d: %s (%s)", i, kb_strerror(rc), msg(&f));
        cr_expect(strstr(msg(&f), f.url), "round %d: the message names the URL: %s", i, msg(&f));
        cr_expect(strstr(msg(&f), rounds[i].says), "round %d: %s", i, msg(&f));
        cr_expect(strstr(msg(&f), "after 3 attempts"), "round %d: says it gave up: %s", i, msg(&f));
        cr_expect_str_eq(kb_ctx_last_error(f.ctx)->url, f.url);
        cr_expect_eq(blob_gets(&f), 3, "round %d: 1 try + 2 retries, got %u", i, blob_gets(&f));
        cr_expect(!exists(dest), "nothing at dest after a failure");
        free(dest);
    }
    fixture_close(&f);
}

/* ---- cuts, truncation, Range ---- */

static const uint64_t cut_offsets[TRIES] = {1, 4095, 65536, 150001, BLOB_LEN - 1};

Test(faults, a_reset_mid_body_resumes_with_range)
{
    fixture f;
    fixture_open(&f);
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 1,
                                      .kind = KBT_FAULT_CUT,
                                      .offset = cut_offsets[i]});
        char *dest = dest_path(&f, "blob", i);
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        cr_assert_eq(kbt_proxy_entries(f.proxy), 2);
        kbt_proxy_entry first, second;
        kbt_proxy_entry_at(f.proxy, 0, &first);
        kbt_proxy_entry_at(f.proxy, 1, &second);
        cr_expect_eq(first.body_sent, cut_offsets[i]);
        /* a reset may drop bytes still in the client's socket buffer: resume from <= the cut */
        long long from = range_from(&second);
        cr_expect(from <= (long long)cut_offsets[i], "round %d: Range %s", i, second.range);
        if (from > 0) {
            cr_expect_eq(second.status, 206);
            cr_expect_eq(second.body_sent, f.len - (uint64_t)from, "only the rest is sent again");
        }
        cr_expect(kbt_proxy_body_bytes(f.proxy, "GET", "/blobs/") <= f.len + cut_offsets[i]);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, a_truncated_body_resumes_exactly_where_it_stopped)
{
    fixture f;
    fixture_open(&f);
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 1,
                                      .kind = KBT_FAULT_TRUNCATE,
                                      .offset = cut_offsets[i]});
        char *dest = dest_path(&f, "blob", i);
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        cr_assert_eq(kbt_proxy_entries(f.proxy), 2);
        kbt_proxy_entry second;
        kbt_proxy_entry_at(f.proxy, 1, &second);
        char want[64];
        snprintf(want, sizeof(want), "bytes=%llu-", (unsigned long long)cut_offsets[i]);
        cr_expect_str_eq(second.range, want);
        cr_expect_eq(second.status, 206);
        cr_expect_eq(kbt_proxy_body_bytes(f.proxy, "GET", "/blobs/"), f.len,
                     "round %d: every byte crossed once", i);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, truncation_without_retries_keeps_a_part_that_a_later_fetch_resumes)
{
    fixture f;
    fixture_open(&f);
    client_settings(&f, "0", "5");
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 1,
                                      .kind = KBT_FAULT_TRUNCATE,
                                      .offset = cut_offsets[i]});
        char *dest = dest_path(&f, "blob", i);
        int rc = kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0);
        cr_expect_eq(rc, KB_ERR_NETWORK, "%s", msg(&f));
        cr_expect(strstr(msg(&f), f.url), "%s", msg(&f));
        cr_expect(!exists(dest), "an unverified prefix is never at dest");
        cr_expect(part_exists(dest), "the verified-later prefix is kept for a resume");
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        cr_expect(!part_exists(dest));
        cr_expect_eq(kbt_proxy_body_bytes(f.proxy, "GET", "/blobs/"), f.len);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, a_server_ignoring_range_restarts_from_zero_and_verifies)
{
    fixture f;
    fixture_open(&f);
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 1,
                                      .kind = KBT_FAULT_TRUNCATE,
                                      .offset = cut_offsets[i]});
        add_rule(&f,
                 (kbt_fault_rule){
                     .method = "GET", .path = "/blobs/", .nth = 2, .kind = KBT_FAULT_IGNORE_RANGE});
        char *dest = dest_path(&f, "blob", i);
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        kbt_proxy_entry second;
        cr_assert(kbt_proxy_entry_at(f.proxy, 1, &second));
        cr_expect(range_from(&second) > 0, "the client asked for the rest: '%s'", second.range);
        cr_expect_eq(second.status, 200, "the server answered the whole blob");
        cr_expect_eq(second.body_sent, f.len);
        free(dest);
    }
    fixture_close(&f);
}

/* ---- corruption ---- */

Test(faults, a_flipped_byte_is_a_digest_error_and_leaves_nothing)
{
    fixture f;
    fixture_open(&f);
    static const uint64_t offsets[TRIES] = {0, 1, 4096, 200000, BLOB_LEN - 1};
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .kind = KBT_FAULT_FLIP,
                                      .offset = offsets[i]});
        char *dest = dest_path(&f, "blob", i);
        int rc = kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0);
        cr_expect_eq(rc, KB_ERR_DIGEST, "round %d: %s", i, kb_strerror(rc));
        cr_expect(strstr(msg(&f), f.digest), "names the expected digest: %s", msg(&f));
        cr_expect(strstr(msg(&f), "got sha256:"), "names the received digest: %s", msg(&f));
        cr_expect(!exists(dest), "round %d: nothing at dest", i);
        cr_expect(!part_exists(dest), "round %d: no .part kept", i);
        /* the next clean fetch starts from nothing and succeeds */
        kbt_proxy_clear_rules(f.proxy);
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, a_corrupt_prefix_kept_by_a_cut_is_not_trusted_by_the_next_fetch)
{
    fixture f;
    fixture_open(&f);
    client_settings(&f, "0", "5");
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        uint64_t cut = cut_offsets[i] > 1 ? cut_offsets[i] : 2;
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 1,
                                      .kind = KBT_FAULT_TRUNCATE,
                                      .offset = cut,
                                      .corrupt = true,
                                      .corrupt_at = cut / 2});
        char *dest = dest_path(&f, "blob", i);
        cr_expect_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), KB_ERR_NETWORK);
        cr_expect(part_exists(dest), "the (bad) prefix is kept: only a digest can tell");
        /* the resume fails verification; the client must then fetch the whole blob afresh */
        int rc = kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0);
        cr_expect_eq(rc, 0, "round %d: %s", i, msg(&f));
        expect_blob_at(&f, dest);
        cr_expect(!part_exists(dest));
        free(dest);
    }
    fixture_close(&f);
}

/* ---- stalls and slowness ---- */

Test(faults, a_stall_past_the_timeout_fails_in_bounded_time)
{
    fixture f;
    fixture_open(&f);
    client_settings(&f, "0", "1");
    typedef struct round {
        kbt_fault_kind kind;
        uint64_t offset;
    } round;
    static const round rounds[TRIES] = {
        {KBT_FAULT_STALL_HEADERS, 0},         {KBT_FAULT_STALL_BODY, 1},
        {KBT_FAULT_STALL_HEADERS, 0},         {KBT_FAULT_STALL_BODY, 100000},
        {KBT_FAULT_STALL_BODY, BLOB_LEN - 1},
    };
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 1,
                                      .kind = rounds[i].kind,
                                      .offset = rounds[i].offset,
                                      .ms = 6000});
        char *dest = dest_path(&f, "blob", i);
        double t0 = now_s();
        int rc = kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0);
        double elapsed = now_s() - t0;
        cr_expect(rc == KB_ERR_TIMEOUT || rc == KB_ERR_NETWORK, "round %d: %s (%s)", i,
                  kb_strerror(rc), msg(&f));
        cr_expect(elapsed >= 0.9 && elapsed < 3.5,
                  "round %d: gave up after %.2f s with "
                  "net.timeout_s=1",
                  i, elapsed);
        cr_expect(strstr(msg(&f), f.url), "%s", msg(&f));
        cr_expect(!exists(dest));
        /* without the stall the next fetch completes (resuming what arrived) */
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, a_stall_is_retried_and_a_short_stall_is_waited_out)
{
    fixture f;
    fixture_open(&f);
    client_settings(&f, "1", "1");
    /* stalls get their five offsets above; three rounds here keep the suite short */
    for (int i = 0; i < 3; i++) {
        start_round(&f);
        /* first GET stalls past the timeout; the second stalls, but for less than it */
        add_rule(&f,
                 (kbt_fault_rule){.method = "GET",
                                  .path = "/blobs/",
                                  .nth = 1,
                                  .kind = i % 2 ? KBT_FAULT_STALL_BODY : KBT_FAULT_STALL_HEADERS,
                                  .offset = cut_offsets[i],
                                  .ms = 5000});
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .nth = 2,
                                      .kind = KBT_FAULT_STALL_BODY,
                                      .offset = cut_offsets[(i + 2) % TRIES],
                                      .ms = 300});
        char *dest = dest_path(&f, "blob", i);
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        cr_expect_eq(blob_gets(&f), 2);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, a_slow_trickle_under_the_timeout_completes)
{
    fixture f;
    fixture_open(&f);
    client_settings(&f, "0", "1");
    static const size_t chunks[TRIES] = {4096, 10000, 32768, 65536, 150000};
    for (int i = 0; i < TRIES; i++) {
        start_round(&f);
        add_rule(&f, (kbt_fault_rule){.method = "GET",
                                      .path = "/blobs/",
                                      .kind = KBT_FAULT_TRICKLE,
                                      .chunk = chunks[i],
                                      .ms = 5});
        char *dest = dest_path(&f, "blob", i);
        cr_assert_eq(kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0), 0, "%s", msg(&f));
        expect_blob_at(&f, dest);
        cr_expect_eq(blob_gets(&f), 1);
        free(dest);
    }
    fixture_close(&f);
}

Test(faults, a_trickle_slower_than_the_timeout_is_abandoned)
{
    fixture f;
    fixture_open(&f);
    client_settings(&f, "0", "1");
    start_round(&f);
    /* one byte every 2.5 s: below the 1 byte/s floor for longer than net.timeout_s */
    add_rule(
        &f,
        (kbt_fault_rule){
            .method = "GET", .path = "/blobs/", .kind = KBT_FAULT_TRICKLE, .chunk = 1, .ms = 2500});
    char *dest = dest_path(&f, "blob", 0);
    double t0 = now_s();
    int rc = kbi_registry_blob_get_file(f.reg, REPO, f.digest, dest, 0);
    double elapsed = now_s() - t0;
    cr_expect(rc == KB_ERR_TIMEOUT || rc == KB_ERR_NETWORK, "%s (%s)", kb_strerror(rc), msg(&f));
    cr_expect(elapsed < 5.0, "gave up after %.2f s", elapsed);
    cr_expect(!exists(dest));
    free(dest);
    fixture_close(&f);
}
