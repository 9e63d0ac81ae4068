/* What the library reports through the progress callback: one job per blob download and per
 * target built, each with a start, its bytes, and one finished report with the outcome; all on
 * the caller's thread; a callback can cancel. */
#include "kbtest.h"
#include "registry/registry.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct seen {
    kb_progress ev; /* strings copied below */
    char *task, *item, *label, *unit;
    bool caller_thread;
} seen;

typedef struct recorder {
    seen items[4096];
    size_t count;
    pthread_t caller;
    size_t cancel_at;             /* 1-based report number to cancel at; 0: never */
    const char *cancel_task_unit; /* only count reports with this unit ("bytes") */
} recorder;

static int record(const kb_progress *p, void *payload)
{
    recorder *r = payload;
    if (r->count < sizeof(r->items) / sizeof(r->items[0])) {
        seen *s = &r->items[r->count++];
        s->ev = *p;
        s->task = kbi_strdup(p->task);
        s->item = kbi_strdup(p->item);
        s->label = kbi_strdup(p->label);
        s->unit = kbi_strdup(p->unit);
        s->caller_thread = pthread_equal(pthread_self(), r->caller);
    }
    return r->cancel_at && r->count == r->cancel_at;
}

static kb_ctx *recording_ctx(recorder *r)
{
    memset(r, 0, sizeof(*r));
    r->caller = pthread_self();
    kb_ctx_options o = KB_CTX_OPTIONS_INIT;
    o.progress = record;
    o.payload = r;
    o.no_config_files = 1;
    kb_ctx *ctx = NULL;
    cr_assert_eq(kb_ctx_new(&ctx, &o), 0);
    return ctx;
}

static void recorder_free(recorder *r)
{
    for (size_t i = 0; i < r->count; i++) {
        free(r->items[i].task);
        free(r->items[i].item);
        free(r->items[i].label);
        free(r->items[i].unit);
    }
}

/* A blob of n pseudo-random bytes pushed to a layout hub; returns its digest (owned). */
static char *push_blob(kb_registry *reg, const char *repo, size_t n, unsigned seed)
{
    char *data = malloc(n);
    cr_assert_not_null(data);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        data[i] = (char)(seed >> 16);
    }
    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&digest, reg, repo, data, n), 0);
    free(data);
    return digest;
}

Test(progress_reports, layout_download_is_one_job_from_start_to_outcome)
{
    char *tmp = kbt_mkdtemp();
    recorder *rec = calloc(1, sizeof(*rec));
    kb_ctx *ctx = recording_ctx(rec);
    kb_registry *reg = NULL;
    char *hub = kbi_asprintf("%s/hub", tmp);
    cr_assert_eq(kb_registry_open(&reg, ctx, hub), 0);
    size_t size = 300 * 1000; /* several 64 KiB reads */
    char *digest = push_blob(reg, "radeonflow/gemm", size, 1);
    char *other = push_blob(reg, "radeonflow/gemm", 1000, 2);
    rec->count = 0; /* the pushes from memory report nothing anyway */
    char *dest = kbi_asprintf("%s/blob", tmp);
    cr_assert_eq(kbi_registry_blob_get_file(reg, "radeonflow/gemm", digest, dest, size), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_geq(rec->count, 3, "a start, progress and the end: %zu reports", rec->count);
    char label[64];
    snprintf(label, sizeof(label), "radeonflow/gemm sha256:%.12s", digest + 7);
    const seen *first = &rec->items[0], *last = &rec->items[rec->count - 1];
    cr_expect_neq(first->ev.job, 0);
    cr_expect_eq(first->ev.done, 0);
    cr_expect_eq(first->ev.finished, 0);
    uint64_t prev = 0;
    for (size_t i = 0; i < rec->count; i++) {
        const seen *s = &rec->items[i];
        cr_expect_eq(s->ev.job, first->ev.job, "one job id for every report of the download");
        cr_expect_str_eq(s->task, "download");
        cr_expect_str_eq(s->item, digest);
        cr_expect_str_eq(s->label, label);
        cr_expect_str_eq(s->unit, "bytes");
        cr_expect_eq(s->ev.total, size, "the size is known from the start");
        cr_expect_geq(s->ev.done, prev, "bytes only grow");
        cr_expect_eq(s->ev.finished, i == rec->count - 1 ? 1 : 0);
        cr_expect(s->caller_thread);
        prev = s->ev.done;
    }
    cr_expect_eq(last->ev.done, size);
    cr_expect_eq(last->ev.status, 0);

    /* the next download is another job */
    uint64_t job1 = first->ev.job;
    recorder_free(rec);
    rec->count = 0;
    char *dest2 = kbi_asprintf("%s/blob2", tmp);
    cr_assert_eq(kbi_registry_blob_get_file(reg, "radeonflow/gemm", other, dest2, 1000), 0);
    cr_assert_geq(rec->count, 2);
    cr_expect_gt(rec->items[0].ev.job, job1);

    /* a blob that does not match its digest: the job ends with that status */
    recorder_free(rec);
    rec->count = 0;
    char *blob_file = kbi_asprintf("%s/blobs/sha256/%s", hub, other + 7);
    kbt_write(blob_file, "tampered");
    char *dest3 = kbi_asprintf("%s/blob3", tmp);
    cr_expect_eq(kbi_registry_blob_get_file(reg, "radeonflow/gemm", other, dest3, 1000),
                 KB_ERR_DIGEST);
    cr_assert_geq(rec->count, 2);
    cr_expect_eq(rec->items[rec->count - 1].ev.finished, 1);
    cr_expect_eq(rec->items[rec->count - 1].ev.status, KB_ERR_DIGEST);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "digest mismatch"),
              "the finished report leaves the error alone: %s", kb_ctx_last_error(ctx)->message);
    cr_expect_not(kbi_path_exists(dest3));

    recorder_free(rec);
    free(rec);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
    free(hub);
    free(digest);
    free(other);
    free(dest);
    free(dest2);
    free(dest3);
    free(blob_file);
}

Test(progress_reports, callback_cancels_a_download_and_the_part_is_kept)
{
    char *tmp = kbt_mkdtemp();
    recorder *rec = calloc(1, sizeof(*rec));
    kb_ctx *ctx = recording_ctx(rec);
    kb_registry *reg = NULL;
    char *hub = kbi_asprintf("%s/hub", tmp);
    cr_assert_eq(kb_registry_open(&reg, ctx, hub), 0);
    size_t size = 400 * 1000;
    char *digest = push_blob(reg, "org/name", size, 3);
    rec->count = 0;
    rec->cancel_at = 3; /* the start, one read, then cancel on the second read */
    char *dest = kbi_asprintf("%s/blob", tmp);
    cr_expect_eq(kbi_registry_blob_get_file(reg, "org/name", digest, dest, size), KB_ERR_CANCELLED);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "download of org/name sha256:"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect_not(kbi_path_exists(dest));
    char *part = kbi_asprintf("%s.part", dest);
    cr_expect(kbi_path_exists(part), "a cancelled download keeps its part for a resume");
    cr_assert_eq(rec->count, 4);
    cr_expect_eq(rec->items[3].ev.finished, 1);
    cr_expect_eq(rec->items[3].ev.status, KB_ERR_CANCELLED);
    uint64_t kept = rec->items[3].ev.done;
    cr_expect_gt(kept, 0);

    /* the resume starts where the part ends, and reports that as its start */
    recorder_free(rec);
    rec->count = 0;
    rec->cancel_at = 0;
    cr_assert_eq(kbi_registry_blob_get_file(reg, "org/name", digest, dest, size), 0);
    cr_expect_eq(rec->items[0].ev.done, kept);
    cr_expect_eq(rec->items[rec->count - 1].ev.done, size);
    cr_expect_not(kbi_path_exists(part));

    recorder_free(rec);
    free(rec);
    kb_registry_free(reg);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(tmp);
    free(hub);
    free(digest);
    free(dest);
    free(part);
}

/* The builder fixture with two CPU targets. */
static char *two_target_fixture(const char *tmp)
{
    char *src = kbt_data("builder/vadd");
    char *dir = kbi_asprintf("%s/pkg", tmp);
    char *cmd = kbi_asprintf("cp -r '%s' '%s'", src, dir);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(src);
    char *yaml = kbi_asprintf("%s/kernel.yaml", dir);
    kb_buf y = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, yaml, &y), 0);
    char *p = strstr(y.data, "cpu: { sources: [src/vadd_cpu.c] }");
    cr_assert_not_null(p);
    char *two = kbi_asprintf("%.*scpu: { archs: [x86_64_v2, x86_64_v3], sources: "
                             "[src/vadd_cpu.c] }\n",
                             (int)(p - y.data), y.data);
    kbt_write(yaml, two);
    kbi_buf_free(&y);
    free(two);
    free(yaml);
    return dir;
}

static kb_build_result *build_two(kb_ctx *ctx, const char *dir, const char *tmp, unsigned jobs)
{
    const char *filters[] = {"cpu"};
    kb_build_options o = KB_BUILD_OPTIONS_INIT;
    o.targets = filters;
    o.target_count = 1;
    o.jobs = jobs;
    o.no_source_artifact = 1;
    char *work = kbi_asprintf("%s/work", tmp), *out = kbi_asprintf("%s/out", tmp);
    o.work_dir = work;
    o.out_dir = out;
    kb_build_result *r = NULL;
    cr_assert_eq(kb_build(&r, ctx, dir, &o), 0, "%s", kb_ctx_last_error(ctx)->message);
    free(work);
    free(out);
    return r;
}

Test(progress_reports, parallel_build_reports_each_target_as_a_job)
{
    char *tmp = kbt_mkdtemp();
    char *dir = two_target_fixture(tmp);
    recorder *rec = calloc(1, sizeof(*rec));
    kb_ctx *ctx = recording_ctx(rec);
    kb_build_result *r = build_two(ctx, dir, tmp, 2);
    cr_assert_eq(r->count, 2);
    cr_assert_eq(r->built, 2);
    uint64_t overall = 0;
    for (size_t t = 0; t < r->count; t++) {
        char label[128];
        snprintf(label, sizeof(label), "kbtest/vec-add %s", r->targets[t].target);
        size_t reports = 0, finished = 0;
        const seen *start = NULL, *end = NULL;
        for (size_t i = 0; i < rec->count; i++) {
            const seen *s = &rec->items[i];
            if (strcmp(s->label, label) != 0)
                continue;
            reports++;
            if (!start)
                start = s;
            if (s->ev.finished)
                finished++, end = s;
            cr_expect_eq(s->ev.job, start->ev.job, "one id per target");
            cr_expect_str_eq(s->task, "build");
            cr_expect_str_eq(s->item, r->targets[t].target);
        }
        cr_assert_not_null(start, "no report for %s", label);
        cr_assert_not_null(end);
        cr_expect_eq(finished, 1);
        cr_expect_eq(start->ev.finished, 0, "a start before the end");
        cr_expect_eq(end->ev.done, r->targets[t].size, "the end carries the artifact's size");
        cr_expect_eq(end->ev.status, 0);
        cr_expect_geq(reports, 2);
    }
    const seen *a = NULL, *b = NULL;
    for (size_t i = 0; i < rec->count; i++) {
        const seen *s = &rec->items[i];
        cr_expect(s->caller_thread, "reports come on the caller's thread only");
        if (strcmp(s->unit, "targets") == 0) {
            cr_expect_str_eq(s->label, "kbtest/vec-add");
            cr_expect_eq(s->ev.total, 2);
            overall = overall ? overall : s->ev.job;
            cr_expect_eq(s->ev.job, overall);
        } else if (!a) {
            a = s;
        } else if (s->ev.job != a->ev.job && !b) {
            b = s;
        }
    }
    cr_assert_not_null(b, "two target jobs");
    cr_expect_neq(a->ev.job, b->ev.job);
    cr_expect_neq(overall, a->ev.job);
    const seen *lastc = NULL;
    for (size_t i = 0; i < rec->count; i++)
        if (strcmp(rec->items[i].unit, "targets") == 0)
            lastc = &rec->items[i];
    cr_expect(lastc && lastc->ev.done == 2 && lastc->ev.finished);
    kb_build_result_free(r);
    recorder_free(rec);
    free(rec);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}

Test(progress_reports, cancelling_a_build_stops_targets_not_yet_started)
{
    char *tmp = kbt_mkdtemp();
    char *dir = two_target_fixture(tmp);
    recorder *rec = calloc(1, sizeof(*rec));
    kb_ctx *ctx = recording_ctx(rec);
    rec->cancel_at = 2; /* the overall count, then the first target's start */
    kb_build_result *r = build_two(ctx, dir, tmp, 1);
    cr_assert_eq(r->count, 2);
    cr_expect_eq(r->built, 1, "the running target finishes");
    cr_expect_eq(r->failed, 1);
    for (size_t i = 0; i < r->count; i++)
        if (r->targets[i].status == KB_BUILD_FAILED)
            cr_expect_str_eq(r->targets[i].message, "cancelled before it started");
    const seen *last = &rec->items[rec->count - 1];
    cr_expect_str_eq(last->unit, "targets");
    cr_expect_eq(last->ev.done, 2);
    cr_expect_eq(last->ev.finished, 1);
    kb_build_result_free(r);
    recorder_free(rec);
    free(rec);
    kb_ctx_free(ctx);
    kbt_rmtree(tmp);
    free(dir);
    free(tmp);
}
