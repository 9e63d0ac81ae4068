/* Bench: W workers stage (or publish) one target each of one version at once, then merge;
 * R rounds, each on a fresh repository. Reports targets lost (must be 0) and round times.
 *
 *   kbpkg_bench_farm_concurrency REGISTRY_BASE WORKERS ROUNDS stage|publish
 *
 * REGISTRY_BASE: a folder (layouts REGISTRY_BASE/rN) or oci://host:port/ns (namespaces nsN).
 * Links the static library on purpose: it drives the registry layer as the farm does. */
#include "kbpkg/kbpkg.h"
#include "registry/pkgindex.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_WORKERS 64

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void target_of(char *out, size_t size, int w)
{
    snprintf(out, size, "cuda13-sm_%d-x86_64-linux", 50 + w);
}

static int worker(const char *ref, const char *art, int w, int start_fd, bool stage)
{
    char go, target[64];
    if (read(start_fd, &go, 1) != 1)
        return 3;
    target_of(target, sizeof(target), w);
    kb_ctx *ctx = NULL;
    kb_ctx_new(&ctx, NULL);
    kb_registry *r = NULL;
    int rc = kb_registry_open(&r, ctx, ref);
    kb_publish_item it = {art, target, NULL, "{}"};
    if (!rc && stage) {
        rc = kbi_pkg_stage(r, "bench/race", "1.0.0", "race", &it, 1, NULL);
        kb_pkg_merge_result m;
        if (!rc && (rc = kbi_pkg_merge(&m, r, "bench/race", "1.0.0")) == 0)
            kbi_pkg_merge_result_free(&m);
    } else if (!rc) {
        char *d = NULL;
        rc = kbi_pkg_publish(r, "bench/race", "1.0.0", "race", &it, 1, false, NULL, &d);
        free(d);
    }
    if (rc)
        fprintf(stderr, "worker %d: %s\n", w, kb_ctx_last_error(ctx)->message);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    return rc ? 1 : 0;
}

static int lost_targets(const char *ref, int workers)
{
    kb_ctx *ctx = NULL;
    kb_ctx_new(&ctx, NULL);
    kb_registry *r = NULL;
    kb_pkg_index *idx = NULL;
    int lost = workers;
    if (kb_registry_open(&r, ctx, ref) == 0 &&
        kbi_pkg_index_fetch(&idx, r, "bench/race", "1.0.0", NULL) == 0) {
        lost = 0;
        for (int w = 0; w < workers; w++) {
            char target[64];
            target_of(target, sizeof(target), w);
            lost += kbi_pkg_index_find(idx, target) == NULL;
        }
    }
    kbi_pkg_index_free(idx);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    return lost;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: %s REGISTRY_BASE WORKERS ROUNDS stage|publish\n", argv[0]);
        return 2;
    }
    int workers = (int)strtol(argv[2], NULL, 10), rounds = (int)strtol(argv[3], NULL, 10);
    bool stage = strcmp(argv[4], "stage") == 0;
    if (workers < 1 || workers > MAX_WORKERS || rounds < 1)
        return 2;
    char tmpl[] = "/tmp/kbpkg-bench-race.XXXXXX";
    const char *dir = mkdtemp(tmpl);
    if (!dir)
        return 1;
    int total_lost = 0, failed_workers = 0;
    for (int round = 0; round < rounds; round++) {
        char ref[512], art[MAX_WORKERS][600];
        snprintf(ref, sizeof(ref), "%s/r%d", argv[1], round);
        for (int w = 0; w < workers; w++) {
            snprintf(art[w], sizeof(art[w]), "%s/w%d-r%d", dir, w, round);
            FILE *f = fopen(art[w], "w");
            if (!f)
                return 1;
            fprintf(f, "artifact %d round %d\n", w, round);
            fclose(f);
        }
        int fds[2];
        if (pipe(fds) != 0)
            return 1;
        pid_t pids[MAX_WORKERS];
        for (int w = 0; w < workers; w++) {
            if ((pids[w] = fork()) == 0) {
                close(fds[1]);
                _exit(worker(ref, art[w], w, fds[0], stage));
            }
        }
        close(fds[0]);
        double t0 = now_s();
        char go[MAX_WORKERS];
        memset(go, 'g', sizeof(go));
        if (write(fds[1], go, (size_t)workers) != workers)
            return 1;
        close(fds[1]);
        for (int w = 0; w < workers; w++) {
            int status = 0;
            waitpid(pids[w], &status, 0);
            failed_workers += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        }
        double secs = now_s() - t0;
        int lost = lost_targets(ref, workers);
        total_lost += lost;
        printf("round %d: %d workers, %d lost, %.3f s\n", round, workers, lost, secs);
        fflush(stdout);
    }
    printf("total: %d rounds x %d workers (%s): %d targets lost, %d workers failed\n", rounds,
           workers, stage ? "stage+merge" : "publish", total_lost, failed_workers);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return 1;
    return total_lost || failed_workers ? 1 : 0;
}
