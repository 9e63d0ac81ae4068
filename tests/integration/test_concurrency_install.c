/* 16 kbpkg install processes at once into one cache: all succeed, the cache verifies, and each
 * artifact blob is downloaded from docker-registry exactly once (counted by the test proxy). */
#include "fault_proxy.h"
#include "install_world.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PROCESSES = 16 };

/* Start every install before waiting for any; returns how many exited 0. */
static int run_parallel(kbt_world *w, const char *const *refs, size_t nrefs)
{
    pid_t pids[PROCESSES];
    for (int i = 0; i < PROCESSES; i++) {
        const char *args[] = {"install", refs[(size_t)i % nrefs], "--allow-unsigned", NULL};
        pids[i] = kbt_world_spawn(w, NULL, args);
    }
    int ok = 0;
    for (int i = 0; i < PROCESSES; i++) {
        int code = kbt_world_wait(pids[i]);
        cr_expect_eq(code, 0, "install %d of %s exited %d", i, refs[(size_t)i % nrefs], code);
        ok += code == 0;
    }
    return ok;
}

static void verify_ok(kbt_world *w)
{
    const char *args[] = {"verify", NULL};
    kbt_run r = kbt_world_kbpkg(w, NULL, args);
    cr_expect_eq(r.exit_code, 0, "verify: %s%s", r.out, r.err);
    kbt_run_free(&r);
}

static size_t blob_gets(kbt_proxy *p, const char *name, const char *digest)
{
    char *path = kbi_asprintf("/v2/%s/blobs/%s", name, digest);
    size_t n = kbt_proxy_count(p, "GET", path);
    free(path);
    return n;
}

static size_t count_char(const char *s, char c)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == c;
    return n;
}

Test(concurrency, parallel_installs_download_each_blob_once)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed");
    kbt_world w;
    kbt_world_init(&w);
    kbt_registry reg;
    kbt_registry_start(&reg, NULL, NULL);
    /* packages are published straight to the registry; installs go through the proxy */
    kbt_proxy *proxy = kbt_proxy_start(reg.port);
    kbt_world_use_registry(&w, kbt_proxy_url(proxy));

    /* one package, 16 processes; a 2 MiB artifact keeps the download window open */
    char *digest = kbt_world_publish(&w, reg.url, "kbtest/vec-add", "0.5.0", 2 << 20);
    const char *one[] = {"kbtest/vec-add"};
    int ok = run_parallel(&w, one, 1);
    cr_expect_eq(ok, PROCESSES);
    verify_ok(&w);
    char *state = kbt_world_installed(&w);
    cr_expect_eq(count_char(state, '\n'), 1, "one install: %s", state);
    size_t gets_one = blob_gets(proxy, "kbtest/vec-add", digest);
    cr_expect_eq(gets_one, 1, "the blob was downloaded %zu times", gets_one);
    free(state);
    cr_expect_eq(kbt_world_leftovers(&w), 0, "no temporary files after all finished");

    /* four packages, four processes each, into the same cache */
    const char *names[] = {"kbtest/para-a", "kbtest/para-b", "kbtest/para-c", "kbtest/para-d"};
    char *digests[4];
    for (int i = 0; i < 4; i++)
        digests[i] = kbt_world_publish(&w, reg.url, names[i], "1.0.0", 1 << 20);
    int ok4 = run_parallel(&w, names, 4);
    cr_expect_eq(ok4, PROCESSES);
    verify_ok(&w);
    state = kbt_world_installed(&w);
    cr_expect_eq(count_char(state, '\n'), 5, "vec-add and four more: %s", state);
    size_t gets[4];
    for (int i = 0; i < 4; i++) {
        cr_expect(strstr(state, names[i]), "%s missing from %s", names[i], state);
        gets[i] = blob_gets(proxy, names[i], digests[i]);
        cr_expect_eq(gets[i], 1, "%s: blob downloaded %zu times", names[i], gets[i]);
    }
    cr_expect_eq(kbt_world_leftovers(&w), 0);
    fprintf(stderr,
            "concurrency: 16 x one package: %d exit 0, %zu blob GET; 16 x four packages: %d exit "
            "0, blob GETs %zu %zu %zu %zu\n",
            ok, gets_one, ok4, gets[0], gets[1], gets[2], gets[3]);
    free(state);
    for (int i = 0; i < 4; i++)
        free(digests[i]);
    free(digest);
    kbt_proxy_stop(proxy);
    kbt_registry_stop(&reg);
    kbt_world_free(&w);
}
