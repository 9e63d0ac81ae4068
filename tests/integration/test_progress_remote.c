/* Progress and missing-package reports against a real docker-registry: an upload and a
 * download are one job each with their size known, and an unknown repository reads as a
 * missing package named with the registry's URL. */
#include "kbtest.h"
#include "registry/pkgindex.h"
#include "registry/registry.h"
#include "registry_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct report {
    char task[16];
    char label[96];
    uint64_t job, done, total;
    int finished, status;
} report;

typedef struct recorder {
    report items[2048];
    size_t count;
} recorder;

static int record(const kb_progress *p, void *payload)
{
    recorder *r = payload;
    if (r->count < sizeof(r->items) / sizeof(r->items[0])) {
        report *x = &r->items[r->count++];
        snprintf(x->task, sizeof(x->task), "%s", p->task);
        snprintf(x->label, sizeof(x->label), "%s", p->label);
        x->job = p->job;
        x->done = p->done;
        x->total = p->total;
        x->finished = p->finished;
        x->status = p->status;
    }
    return 0;
}

/* Every report of rec is one job of task with label, sizes never past total. */
static void expect_one_job(const recorder *rec, const char *task, const char *label, uint64_t size)
{
    cr_assert_geq(rec->count, 2, "a start and an end: %zu reports", rec->count);
    uint64_t job = rec->items[0].job;
    cr_expect_neq(job, 0);
    cr_expect_eq(rec->items[0].done, 0);
    for (size_t i = 0; i < rec->count; i++) {
        const report *x = &rec->items[i];
        cr_expect_str_eq(x->task, task);
        cr_expect_str_eq(x->label, label);
        cr_expect_eq(x->job, job);
        cr_expect_eq(x->total, size, "%s report %zu: total %llu", x->task, i,
                     (unsigned long long)x->total);
        cr_expect_leq(x->done, size);
        cr_expect_eq(x->finished, i + 1 == rec->count);
    }
    cr_expect_eq(rec->items[rec->count - 1].done, size);
    cr_expect_eq(rec->items[rec->count - 1].status, 0);
}

Test(progress_remote, upload_and_download_are_jobs_with_their_size)
{
    if (!kbt_registry_available())
        kbt_skip_missing("docker-registry is not installed (%s)", KBT_DOCKER_REGISTRY);
    kbt_registry srv;
    kbt_registry_start(&srv, NULL, NULL);
    recorder *rec = calloc(1, sizeof(*rec));
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.no_config_files = 1;
    o.progress = record;
    o.payload = rec;
    kb_ctx *ctx = NULL;
    cr_assert_eq(kb_ctx_new(&ctx, &o), 0);
    kb_registry *reg = NULL;
    char *ref = kbi_asprintf("oci://127.0.0.1:%d/ns", srv.port);
    cr_assert_eq(kb_registry_open(&reg, ctx, ref), 0, "%s", kb_ctx_last_error(ctx)->message);
    /* chunked: three PATCHes and the PUT */
    kbi_registry_set_chunk_size(reg, 100 * 1000);
    char *tmp = kbt_mkdtemp();
    char *src = kbi_asprintf("%s/blob", tmp);
    size_t size = 350 * 1000;
    char *data = malloc(size);
    for (size_t i = 0; i < size; i++)
        data[i] = (char)(i * 7 + i / 1000);
    FILE *f = fopen(src, "wb");
    fwrite(data, 1, size, f);
    fclose(f);
    free(data);

    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_file(&digest, reg, "org/name", src), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char label[96];
    snprintf(label, sizeof(label), "org/name sha256:%.12s", digest + 7);
    expect_one_job(rec, "upload", label, size);
    uint64_t upload_job = rec->items[0].job;

    /* the size from Content-Length when the caller gives none */
    rec->count = 0;
    char *dest = kbi_asprintf("%s/got", tmp);
    cr_assert_eq(kbi_registry_blob_get_file(reg, "org/name", digest, dest, 0), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_geq(rec->count, 2);
    cr_expect_eq(rec->items[0].total, 0, "unknown before the answer");
    size_t before = 0; /* the start and the ticks before the headers */
    for (; before < rec->count && rec->items[before].done == 0; before++) {
        cr_expect_eq(rec->items[before].total, 0);
        rec->items[before].total = size;
    }
    cr_expect_lt(before, rec->count);
    expect_one_job(rec, "download", label, size);
    cr_expect_gt(rec->items[0].job, upload_job);

    /* and from the index when the caller has it */
    rec->count = 0;
    char *dest2 = kbi_asprintf("%s/got2", tmp);
    cr_assert_eq(kbi_registry_blob_get_file(reg, "org/name", digest, dest2, size), 0);
    expect_one_job(rec, "download", label, size);

    /* an install or a publish names the job by the target the blob holds */
    f = fopen(src, "ab");
    fputs("another blob", f);
    fclose(f);
    rec->count = 0;
    char *digest2 = NULL;
    cr_assert_eq(kbi_registry_blob_put_file_for(&digest2, reg, "org/name", src,
                                                "cpu-x86_64_v2-x86_64-linux"),
                 0, "%s", kb_ctx_last_error(ctx)->message);
    expect_one_job(rec, "upload", "org/name cpu-x86_64_v2-x86_64-linux", size + 12);
    rec->count = 0;
    char *dest3 = kbi_asprintf("%s/got3", tmp);
    cr_assert_eq(kbi_registry_blob_get_file_for(reg, "org/name", digest2, dest3, size + 12,
                                                "cpu-x86_64_v2-x86_64-linux"),
                 0);
    expect_one_job(rec, "download", "org/name cpu-x86_64_v2-x86_64-linux", size + 12);
    free(dest3);
    free(digest2);

    /* small blobs from memory are not reported */
    rec->count = 0;
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, reg, "org/name", "{}", 2), 0);
    cr_expect_eq(rec->count, 0);

    /* an unknown repository is a missing package, named with the registry's URL */
    kb_strv versions = KB_STRV_INIT;
    cr_expect_eq(kbi_pkg_versions(&versions, reg, "no/such"), KB_ERR_NOT_FOUND);
    char *want = kbi_asprintf("no package no/such in %s/ns", srv.url);
    cr_expect_str_eq(kb_ctx_last_error(ctx)->message, want);
    cr_expect(kb_ctx_last_error(ctx)->url && strstr(kb_ctx_last_error(ctx)->url, "/tags/list"),
              "the URL that said so is kept");
    kbi_strv_free(&versions);

    free(want);
    free(dest);
    free(dest2);
    free(digest);
    free(src);
    free(ref);
    kbt_rmtree(tmp);
    free(tmp);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    free(rec);
    kbt_registry_stop(&srv);
}
