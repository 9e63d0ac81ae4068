/* Concurrent publishers of one version, on docker-registry and on a layout folder: every target
 * any of them published is in the index afterwards (each used to overwrite the others'), and
 * the staging/merge primitives the farm uses keep that promise too. */
#include "kbtest.h"
#include "registry/pkgindex.h"
#include "registry_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PKG "kbtest/race"
#define VERSION "1.0.0"

static const char *const targets[] = {
    "cuda13-sm_75-x86_64-linux",  "cuda13-sm_80-x86_64-linux",  "cuda13-sm_86-x86_64-linux",
    "cuda13-sm_89-x86_64-linux",  "cuda13-sm_90-x86_64-linux",  "rocm5-gfx1030-x86_64-linux",
    "rocm5-gfx1100-x86_64-linux", "cpu-x86_64_v3-x86_64-linux",
};
#define WORKERS (sizeof(targets) / sizeof(targets[0]))

typedef enum { MODE_PUBLISH, MODE_STAGE_MERGE } worker_mode;

/* A distinct artifact per target and round (the registry never checks what is inside). */
static char *write_artifact(const char *dir, size_t worker, int round)
{
    char *path = kbi_asprintf("%s/w%zu-r%d.tar.zst", dir, worker, round);
    char *text = kbi_asprintf("artifact %s round %d\n", targets[worker], round);
    kbt_write(path, text);
    free(text);
    return path;
}

/* One worker in a forked child: wait for the start signal, then publish its one target. */
static int worker(const char *ref, const char *art, size_t w, int start_fd, worker_mode mode)
{
    char go;
    if (read(start_fd, &go, 1) != 1)
        return 3;
    kb_ctx *ctx = kbt_ctx();
    kb_ctx_set(ctx, "net.retries", "2");
    kb_registry *r = NULL;
    int rc = kb_registry_open(&r, ctx, ref);
    kb_publish_item it = {art, targets[w], NULL, "{}"};
    if (!rc && mode == MODE_PUBLISH) {
        char *digest = NULL;
        rc = kbi_pkg_publish(r, PKG, VERSION, "race", &it, 1, false, NULL, &digest);
        free(digest);
    } else if (!rc) {
        rc = kbi_pkg_stage(r, PKG, VERSION, "race", &it, 1, NULL);
        kb_pkg_merge_result m;
        if (!rc)
            rc = kbi_pkg_merge(&m, r, PKG, VERSION);
        if (!rc)
            kbi_pkg_merge_result_free(&m);
    }
    if (rc)
        fprintf(stderr, "worker %zu: %s\n", w, kb_ctx_last_error(ctx)->message);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    return rc ? 1 : 0;
}

/* All workers start at once; returns how many targets the index lacks afterwards. */
static size_t one_round(const char *ref, const char *dir, int round, worker_mode mode)
{
    int pipefd[2];
    cr_assert_eq(pipe(pipefd), 0);
    pid_t pids[WORKERS];
    char *arts[WORKERS];
    for (size_t w = 0; w < WORKERS; w++)
        arts[w] = write_artifact(dir, w, round);
    for (size_t w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        cr_assert_neq(pids[w], -1);
        if (pids[w] == 0) {
            close(pipefd[1]);
            _exit(worker(ref, arts[w], w, pipefd[0], mode));
        }
    }
    close(pipefd[0]);
    char go[WORKERS];
    memset(go, 'g', sizeof(go));
    cr_assert_eq(write(pipefd[1], go, sizeof(go)), (ssize_t)sizeof(go));
    close(pipefd[1]);
    for (size_t w = 0; w < WORKERS; w++) {
        int status = 0;
        waitpid(pids[w], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "round %d worker %zu (%s) reported a failure", round, w, targets[w]);
        free(arts[w]);
    }
    kb_ctx *ctx = kbt_ctx();
    kb_registry *r = NULL;
    kb_pkg_index *idx = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, ref), 0);
    cr_assert_eq(kbi_pkg_index_fetch(&idx, r, PKG, VERSION, NULL), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    size_t lost = 0;
    for (size_t w = 0; w < WORKERS; w++)
        lost += kbi_pkg_index_find(idx, targets[w]) == NULL;
    kb_registry_manifest *latest = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&latest, r, PKG, "latest"), 0);
    cr_expect_str_eq(latest->digest, idx->digest, "latest follows the merged index");
    kbi_registry_manifest_free(latest);
    kbi_pkg_index_free(idx);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    return lost;
}

/* Rounds on fresh repositories (a new folder or namespace each): a round starts empty. */
static void race(const char *base_ref, const char *dir, int rounds, worker_mode mode)
{
    size_t lost = 0;
    for (int round = 0; round < rounds; round++) {
        char *ref = kbi_asprintf("%s/r%d", base_ref, round);
        size_t l = one_round(ref, dir, round, mode);
        cr_expect_eq(l, 0, "round %d: %zu of %zu targets lost", round, l, WORKERS);
        lost += l;
        free(ref);
    }
    cr_expect_eq(lost, 0, "%zu targets lost over %d rounds", lost, rounds);
}

Test(publish_concurrent, layout_publishers_lose_nothing)
{
    char *tmp = kbt_mkdtemp();
    race(tmp, tmp, 3, MODE_PUBLISH);
    kbt_rmtree(tmp);
    free(tmp);
}

Test(publish_concurrent, registry_publishers_lose_nothing)
{
    if (!kbt_registry_available())
        cr_skip_test("docker-registry is not installed (%s)", KBT_DOCKER_REGISTRY);
    kbt_registry srv;
    kbt_registry_start(&srv, NULL, NULL);
    char *tmp = kbt_mkdtemp();
    char *ref = kbi_asprintf("oci://127.0.0.1:%d/kbtest", srv.port);
    race(ref, tmp, 3, MODE_PUBLISH);
    kbt_registry_stop(&srv);
    kbt_rmtree(tmp);
    free(tmp);
    free(ref);
}

Test(publish_concurrent, registry_stage_and_merge_lose_nothing)
{
    if (!kbt_registry_available())
        cr_skip_test("docker-registry is not installed (%s)", KBT_DOCKER_REGISTRY);
    kbt_registry srv;
    kbt_registry_start(&srv, NULL, NULL);
    char *tmp = kbt_mkdtemp();
    char *ref = kbi_asprintf("oci://127.0.0.1:%d/kbtest", srv.port);
    race(ref, tmp, 2, MODE_STAGE_MERGE);
    kbt_registry_stop(&srv);
    kbt_rmtree(tmp);
    free(tmp);
    free(ref);
}

/* A staged target with other bytes than the index's is reported and skipped; a merge with
 * nothing new writes nothing; the stage never touches the version tag or latest. */
Test(publish_concurrent, merge_reports_conflict_and_writes_only_changes)
{
    char *tmp = kbt_mkdtemp();
    char *hub = kbi_asprintf("%s/hub", tmp);
    kb_ctx *ctx = kbt_ctx();
    kb_registry *r = NULL;
    cr_assert_eq(kb_registry_open(&r, ctx, hub), 0);
    char *a0 = write_artifact(tmp, 0, 0), *a1 = write_artifact(tmp, 1, 0);
    char *a0b = write_artifact(tmp, 0, 1);
    kb_publish_item first = {a0, targets[0], NULL, "{}"};
    cr_assert_eq(kbi_pkg_stage(r, PKG, VERSION, "race", &first, 1, NULL), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    kb_registry_manifest *m = NULL;
    cr_expect_eq(kbi_registry_manifest_get(&m, r, PKG, VERSION), KB_ERR_NOT_FOUND,
                 "staging writes no version tag");
    cr_expect_eq(kbi_registry_manifest_get(&m, r, PKG, "latest"), KB_ERR_NOT_FOUND,
                 "staging writes no latest");
    kb_pkg_merge_result res;
    cr_assert_eq(kbi_pkg_merge(&res, r, PKG, VERSION), 0, "%s", kb_ctx_last_error(ctx)->message);
    cr_expect(res.written);
    char *merged = kbi_strdup(res.index_digest);
    kbi_pkg_merge_result_free(&res);

    /* Other bytes staged for the same target (a second machine's build), plus a new target. */
    kb_ctx *other = kbt_ctx();
    kb_registry *r2 = NULL;
    cr_assert_eq(kb_registry_open(&r2, other, hub), 0);
    kb_publish_item changed = {a0b, targets[0], NULL, "{}"};
    cr_expect_eq(kbi_pkg_stage(r2, PKG, VERSION, "race", &changed, 1, NULL), KB_ERR_EXISTS,
                 "stage refuses other bytes for a published target");
    kb_publish_item second = {a1, targets[1], NULL, "{}"};
    cr_assert_eq(kbi_pkg_stage(r2, PKG, VERSION, "race", &second, 1, NULL), 0);
    /* Force a conflicting stage the way a worker that raced its check would have. */
    char tag[160];
    cr_assert_eq(kbi_pkg_stage_tag(tag, sizeof(tag), VERSION, targets[0]), 0);
    cr_assert_eq(kbi_pkg_stage_tag(tag, sizeof(tag), VERSION, targets[1]), 0);
    kb_registry_manifest *staged1 = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&staged1, r2, PKG, tag), 0);
    char *conflicting = kbi_strdup(staged1->data);
    char *tag0 = kbi_strdup(tag);
    cr_assert_eq(kbi_pkg_stage_tag(tag0, 160, VERSION, targets[0]), 0);
    kbi_registry_manifest_free(staged1);
    /* staged1 describes targets[1]; make it claim targets[0] with its (other) digest */
    char *at = strstr(conflicting, targets[1]);
    cr_assert(at);
    while ((at = strstr(conflicting, targets[1])) != NULL)
        memcpy(at, targets[0], strlen(targets[0])); /* same length */
    cr_assert_eq(kbi_registry_manifest_put(NULL, r2, PKG, tag0, KB_MT_OCI_INDEX, conflicting,
                                           strlen(conflicting)),
                 0);
    cr_assert_eq(kbi_pkg_merge(&res, r2, PKG, VERSION), 0, "%s", kb_ctx_last_error(other)->message);
    cr_expect(res.written, "the new target was merged");
    cr_expect_eq(res.conflicts.len, 1, "one conflict reported");
    if (res.conflicts.len)
        cr_expect(strstr(res.conflicts.items[0], targets[0]) != NULL, "%s", res.conflicts.items[0]);
    kbi_pkg_merge_result_free(&res);
    kb_pkg_index *idx = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&idx, r2, PKG, VERSION, NULL), 0);
    kb_pkg_index *before = NULL;
    cr_assert_eq(kbi_pkg_index_fetch(&before, r2, PKG, VERSION, merged), 0);
    cr_expect_str_eq(kbi_pkg_index_find(idx, targets[0])->manifest_digest,
                     kbi_pkg_index_find(before, targets[0])->manifest_digest,
                     "the conflicting stage did not replace the published target");
    cr_expect(kbi_pkg_index_find(idx, targets[1]) != NULL);
    kbi_pkg_index_free(before);

    cr_assert_eq(kbi_pkg_merge(&res, r2, PKG, VERSION), 0);
    cr_expect_not(res.written, "nothing new: nothing written");
    cr_expect_str_eq(res.index_digest, idx->digest);
    cr_expect_eq(res.rounds, 1);
    kbi_pkg_merge_result_free(&res);
    kbi_pkg_index_free(idx);
    free(conflicting);
    free(tag0);
    free(merged);
    free(a0);
    free(a1);
    free(a0b);
    kb_registry_free(r2);
    kb_ctx_free(other);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
    free(hub);
}
