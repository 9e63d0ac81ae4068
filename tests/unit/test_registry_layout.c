/* Registry: the OCI layout transport (round trips, atomic tagging, concurrency, corruption). */
#include "kbtest.h"
#include "registry/oci.h"
#include "registry/registry.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
    char *dir;
    kb_ctx *ctx;
    kb_registry *reg;
} fixture;

static fixture open_layout(void)
{
    fixture f = {kbt_mkdtemp(), kbt_ctx(), NULL};
    char *hub = kbi_asprintf("file://%s/hub", f.dir);
    cr_assert_eq(kb_registry_open(&f.reg, f.ctx, hub), 0, "%s", kb_ctx_last_error(f.ctx)->message);
    free(hub);
    return f;
}

static void close_layout(fixture *f)
{
    kb_registry_free(f->reg);
    kb_ctx_free(f->ctx);
    kbt_rmtree(f->dir);
    free(f->dir);
}

static char *path_in(const fixture *f, const char *rel)
{
    return kbi_asprintf("%s/%s", f->dir, rel);
}

static char *push_manifest(fixture *f, const char *repo, const char *tag, const char *layer_text)
{
    char *layer_digest = NULL;
    cr_assert_eq(
        kbi_registry_blob_put_mem(&layer_digest, f->reg, repo, layer_text, strlen(layer_text)), 0,
        "%s", kb_ctx_last_error(f->ctx)->message);
    kb_oci_manifest m = {0};
    m.artifact_type = kbi_strdup("application/vnd.kbpkg.artifact.v1");
    cr_assert_eq(kbi_oci_descriptor_empty_config(&m.config), 0);
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, f->reg, repo, "{}", 2), 0);
    kb_oci_descriptor layer = {0};
    kbi_oci_descriptor_set(&layer, "application/vnd.kbpkg.layer.v1.tar+zstd", layer_digest,
                           strlen(layer_text));
    kbi_oci_manifest_add_layer(&m, &layer);
    kb_buf bytes = KB_BUF_INIT;
    cr_assert_eq(kbi_oci_manifest_serialize(&bytes, f->ctx, &m), 0);
    char *digest = NULL;
    cr_assert_eq(kbi_registry_manifest_put(&digest, f->reg, repo, tag, KB_MT_OCI_MANIFEST,
                                           bytes.data, bytes.len),
                 0, "%s", kb_ctx_last_error(f->ctx)->message);
    kbi_buf_free(&bytes);
    kbi_oci_descriptor_clear(&layer);
    kbi_oci_manifest_clear(&m);
    free(layer_digest);
    return digest;
}

Test(registry_layout, blob_round_trip_and_layout_files)
{
    fixture f = open_layout();
    const char *text = "kernel bytes";
    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&digest, f.reg, "radeonflow/gemm", text, strlen(text)),
                 0);
    char hex[65];
    kbi_sha256_hex(text, strlen(text), hex);
    cr_expect_str_eq(digest + 7, hex);
    uint64_t size = 0;
    cr_expect_eq(kbi_registry_blob_exists(&size, f.reg, "radeonflow/gemm", digest), 0);
    cr_expect_eq(size, strlen(text));

    char *dest = path_in(&f, "out.bin");
    cr_assert_eq(kbi_registry_blob_get_file(f.reg, "radeonflow/gemm", digest, dest, 0), 0);
    kb_buf got = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, dest, &got), 0);
    cr_expect_eq(got.len, strlen(text));
    cr_expect_eq(memcmp(got.data, text, got.len), 0);
    kbi_buf_free(&got);
    char *part = kbi_asprintf("%s.part", dest);
    cr_expect_not(kbi_path_exists(part), "the .part is renamed away");

    kb_buf mem = KB_BUF_INIT;
    cr_assert_eq(kbi_registry_blob_get_mem(&mem, f.reg, "radeonflow/gemm", digest, 1024), 0);
    cr_expect_str_eq(mem.data, text);
    kbi_buf_free(&mem);

    char *layout_file = path_in(&f, "hub/oci-layout");
    kb_buf lf = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, layout_file, &lf), 0);
    cr_expect_str_eq(lf.data, "{\"imageLayoutVersion\":\"1.0.0\"}");
    kbi_buf_free(&lf);
    char *blob = kbi_asprintf("%s/hub/blobs/sha256/%s", f.dir, hex);
    cr_expect(kbi_path_exists(blob));
    free(blob);
    free(layout_file);
    free(part);
    free(dest);
    free(digest);
    close_layout(&f);
}

Test(registry_layout, put_file_then_absent_blob_is_named)
{
    fixture f = open_layout();
    char *src = path_in(&f, "big.bin");
    kbt_write(src, "0123456789abcdef");
    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_file(&digest, f.reg, "a/b", src), 0);
    cr_expect_eq(kbi_registry_blob_exists(NULL, f.reg, "a/b", digest), 0);
    const char *missing = "sha256:0000000000000000000000000000000000000000000000000000000000000000";
    cr_expect_eq(kbi_registry_blob_exists(NULL, f.reg, "a/b", missing), KB_ERR_NOT_FOUND);
    cr_expect(strstr(kb_ctx_last_error(f.ctx)->message, missing) != NULL, "%s",
              kb_ctx_last_error(f.ctx)->message);
    free(digest);
    free(src);
    close_layout(&f);
}

Test(registry_layout, manifest_by_tag_and_digest_with_tags_and_catalog)
{
    fixture f = open_layout();
    char *d1 = push_manifest(&f, "radeonflow/gemm", "1.0.0", "one");
    char *d2 = push_manifest(&f, "radeonflow/gemm", "1.1.0", "two");
    char *d3 = push_manifest(&f, "acme/conv", "0.1.0", "three");

    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "radeonflow/gemm", "1.0.0"), 0);
    cr_expect_str_eq(m->digest, d1);
    cr_expect_str_eq(m->media_type, KB_MT_OCI_MANIFEST);
    kbi_registry_manifest_free(m);
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "radeonflow/gemm", d2), 0);
    cr_expect_str_eq(m->digest, d2);
    cr_expect_str_eq(m->media_type, KB_MT_OCI_MANIFEST, "read from the JSON's mediaType");
    kbi_registry_manifest_free(m);

    kb_strv tags = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_tags(&tags, f.reg, "radeonflow/gemm"), 0);
    cr_assert_eq(tags.len, 2);
    cr_expect_str_eq(tags.items[0], "1.0.0");
    cr_expect_str_eq(tags.items[1], "1.1.0");
    kbi_strv_free(&tags);
    kb_strv repos = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_catalog(&repos, f.reg), 0);
    cr_assert_eq(repos.len, 2);
    cr_expect_str_eq(repos.items[0], "acme/conv");
    cr_expect_str_eq(repos.items[1], "radeonflow/gemm");
    kbi_strv_free(&repos);

    cr_expect_eq(kbi_registry_manifest_get(&m, f.reg, "radeonflow/gemm", "9.9.9"),
                 KB_ERR_NOT_FOUND);
    cr_expect(strstr(kb_ctx_last_error(f.ctx)->message, "radeonflow/gemm:9.9.9 not found") != NULL,
              "%s", kb_ctx_last_error(f.ctx)->message);
    cr_expect_eq(kbi_registry_tags(&tags, f.reg, "nobody/here"), KB_ERR_NOT_FOUND);
    kbi_strv_free(&tags);
    free(d1);
    free(d2);
    free(d3);
    close_layout(&f);
}

Test(registry_layout, retag_replaces_and_keeps_foreign_entries)
{
    fixture f = open_layout();
    char *d0 = push_manifest(&f, "a/b", "1.0.0", "first");
    /* another tool's entries: unknown media type, extra annotation, top-level field */
    char *index_path = path_in(&f, "hub/index.json");
    kb_buf idx = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, index_path, &idx), 0);
    json_t *j = json_loadb(idx.data, idx.len, 0, NULL);
    kbi_buf_free(&idx);
    json_array_append_new(json_object_get(j, "manifests"),
                          json_pack("{s:s, s:s, s:i, s:{s:s, s:s}}", "mediaType",
                                    "application/x-future", "digest", d0, "size", 1, "annotations",
                                    KB_OCI_REF_NAME, "other/tool:v1", "com.example.note",
                                    "keep me"));
    json_object_set_new(j, "annotations", json_pack("{s:s}", "com.example.top", "yes"));
    char *text = json_dumps(j, 0);
    kbt_write(index_path, text);
    free(text);
    json_decref(j);

    char *d1 = push_manifest(&f, "a/b", "1.0.0", "second");
    cr_expect_str_neq(d0, d1);
    cr_assert_eq(kbi_read_file(NULL, index_path, &idx), 0);
    j = json_loadb(idx.data, idx.len, 0, NULL);
    cr_assert_not_null(j);
    json_t *manifests = json_object_get(j, "manifests");
    cr_expect_eq(json_array_size(manifests), 2, "one entry per ref.name: %s", idx.data);
    cr_expect(strstr(idx.data, "keep me") != NULL);
    cr_expect(strstr(idx.data, "com.example.top") != NULL);
    cr_expect(strstr(idx.data, d0) != NULL, "the foreign entry still names its digest");
    kbi_buf_free(&idx);
    json_decref(j);

    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "a/b", "1.0.0"), 0);
    cr_expect_str_eq(m->digest, d1);
    kbi_registry_manifest_free(m);
    kb_strv repos = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_catalog(&repos, f.reg), 0);
    cr_expect_eq(repos.len, 2);
    kbi_strv_free(&repos);
    free(index_path);
    free(d0);
    free(d1);
    close_layout(&f);
}

Test(registry_layout, concurrent_writers_lose_no_tag)
{
    fixture f = open_layout();
    char *d = push_manifest(&f, "a/b", "base", "shared");
    enum { WRITERS = 6, TAGS = 8 };
    kb_registry_manifest *m = NULL;
    cr_assert_eq(kbi_registry_manifest_get(&m, f.reg, "a/b", "base"), 0);
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        cr_assert(pids[w] >= 0);
        if (pids[w] == 0) {
            int failed = 0;
            for (int t = 0; t < TAGS; t++) {
                char tag[32];
                snprintf(tag, sizeof(tag), "w%d-t%d", w, t);
                failed |= kbi_registry_manifest_put(NULL, f.reg, "a/b", tag, m->media_type, m->data,
                                                    m->len) != 0;
            }
            _exit(failed);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        waitpid(pids[w], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", w);
    }
    kb_strv tags = KB_STRV_INIT;
    cr_assert_eq(kbi_registry_tags(&tags, f.reg, "a/b"), 0);
    cr_expect_eq(tags.len, WRITERS * TAGS + 1, "every writer's tags survive: got %zu", tags.len);
    kbi_strv_free(&tags);
    kbi_registry_manifest_free(m);
    free(d);
    close_layout(&f);
}

Test(registry_layout, corrupted_blob_is_refused_and_leaves_nothing)
{
    fixture f = open_layout();
    const char *text = "the real content";
    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&digest, f.reg, "a/b", text, strlen(text)), 0);
    char *blob = kbi_asprintf("%s/hub/blobs/sha256/%s", f.dir, digest + 7);
    kbt_write(blob, "the fake content");
    char *dest = path_in(&f, "got.bin");
    cr_expect_eq(kbi_registry_blob_get_file(f.reg, "a/b", digest, dest, 0), KB_ERR_DIGEST);
    const char *msg = kb_ctx_last_error(f.ctx)->message;
    char hex[65];
    kbi_sha256_hex("the fake content", 16, hex);
    cr_expect(strstr(msg, digest) != NULL, "names the expected digest: %s", msg);
    cr_expect(strstr(msg, hex) != NULL, "names the received digest: %s", msg);
    cr_expect_not(kbi_path_exists(dest));
    char *part = kbi_asprintf("%s.part", dest);
    cr_expect_not(kbi_path_exists(part));
    kb_buf mem = KB_BUF_INIT;
    cr_expect_eq(kbi_registry_blob_get_mem(&mem, f.reg, "a/b", digest, 100), KB_ERR_DIGEST);
    cr_expect_eq(mem.len, 0);
    kbi_buf_free(&mem);
    free(part);
    free(dest);
    free(blob);
    free(digest);
    close_layout(&f);
}

Test(registry_layout, corrupted_manifest_is_refused)
{
    fixture f = open_layout();
    char *d = push_manifest(&f, "a/b", "1.0.0", "x");
    char *blob = kbi_asprintf("%s/hub/blobs/sha256/%s", f.dir, d + 7);
    kbt_write(blob, "{\"schemaVersion\":2}");
    kb_registry_manifest *m = NULL;
    cr_expect_eq(kbi_registry_manifest_get(&m, f.reg, "a/b", "1.0.0"), KB_ERR_DIGEST);
    cr_expect(strstr(kb_ctx_last_error(f.ctx)->message, d) != NULL);
    cr_expect_null(m);
    free(blob);
    free(d);
    close_layout(&f);
}

Test(registry_layout, size_cap_keeps_prefix_and_resume_completes)
{
    fixture f = open_layout();
    char data[5000];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)('a' + i % 26);
    char *digest = NULL;
    cr_assert_eq(kbi_registry_blob_put_mem(&digest, f.reg, "a/b", data, sizeof(data)), 0);
    char *dest = path_in(&f, "blob");
    cr_expect_eq(kbi_registry_blob_get_file(f.reg, "a/b", digest, dest, 1000), KB_ERR_LIMIT);
    cr_expect(strstr(kb_ctx_last_error(f.ctx)->message, "larger than the allowed 1000 bytes"));
    char *part = kbi_asprintf("%s.part", dest);
    struct stat st;
    cr_assert_eq(stat(part, &st), 0, "the prefix is kept for a resume");
    cr_expect_eq(st.st_size, 1000);
    cr_expect_not(kbi_path_exists(dest));
    cr_assert_eq(kbi_registry_blob_get_file(f.reg, "a/b", digest, dest, 0), 0, "%s",
                 kb_ctx_last_error(f.ctx)->message);
    cr_assert_eq(stat(dest, &st), 0);
    cr_expect_eq(st.st_size, 5000);
    cr_expect_not(kbi_path_exists(part));
    free(part);
    free(dest);
    free(digest);
    close_layout(&f);
}

Test(registry_layout, bad_arguments_are_named)
{
    fixture f = open_layout();
    cr_expect_eq(kbi_registry_blob_put_mem(NULL, f.reg, "Bad/Name", "x", 1), KB_ERR_INVALID);
    cr_expect_str_eq(kb_ctx_last_error(f.ctx)->message,
                     "invalid repository name 'Bad/Name' (lowercase components separated by "
                     "'/')");
    cr_expect_eq(kbi_registry_blob_exists(NULL, f.reg, "a/b", "sha256:xyz"), KB_ERR_INVALID);
    cr_expect_str_eq(kb_ctx_last_error(f.ctx)->message,
                     "invalid digest 'sha256:xyz' (expected sha256:<64 lowercase hex>)");
    kb_registry_manifest *m = NULL;
    cr_expect_eq(kbi_registry_manifest_get(&m, f.reg, "a/b", "-bad"), KB_ERR_INVALID);
    cr_expect_str_eq(kb_ctx_last_error(f.ctx)->message, "invalid tag '-bad'");
    const char *wrong = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
    cr_expect_eq(kbi_registry_manifest_put(NULL, f.reg, "a/b", wrong, KB_MT_OCI_MANIFEST, "{}", 2),
                 KB_ERR_DIGEST);
    cr_expect(strstr(kb_ctx_last_error(f.ctx)->message, "hash to sha256:44136fa3"));
    close_layout(&f);
}

Test(registry_layout, bad_layout_version_is_refused)
{
    fixture f = open_layout();
    char *lf = path_in(&f, "hub/oci-layout");
    kbt_write(lf, "{\"imageLayoutVersion\":\"9.0.0\"}");
    cr_expect_eq(kb_registry_check(f.reg), KB_ERR_REGISTRY);
    cr_expect(strstr(kb_ctx_last_error(f.ctx)->message, "unsupported imageLayoutVersion '9.0.0'"));
    cr_expect_eq(kbi_registry_blob_put_mem(NULL, f.reg, "a/b", "x", 1), KB_ERR_REGISTRY);
    free(lf);
    close_layout(&f);
}

Test(registry_layout, public_list_api)
{
    fixture f = open_layout();
    char *d = push_manifest(&f, "a/b", "2.0.0", "x");
    char **list = NULL;
    size_t n = 0;
    cr_assert_eq(kb_registry_list_tags(&list, &n, f.reg, "a/b"), 0);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(list[0], "2.0.0");
    kb_strings_free(list, n);
    cr_assert_eq(kb_registry_list_repositories(&list, &n, f.reg), 0);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(list[0], "a/b");
    kb_strings_free(list, n);
    cr_expect_eq(kb_registry_check(f.reg), 0);
    free(d);
    close_layout(&f);
}

Test(registry_layout, concurrent_puts_of_one_blob_do_not_collide)
{
    fixture f = open_layout();
    static char data[1 << 20];
    for (size_t i = 0; i < sizeof(data); i++)
        data[i] = (char)(i * 7);
    char *src = path_in(&f, "same.bin");
    cr_assert_eq(kbi_write_file_atomic(NULL, src, data, sizeof(data), 0644), 0);
    /* create the layout first so every writer races on the blob itself */
    cr_assert_eq(kbi_registry_blob_put_mem(NULL, f.reg, "a/b", "{}", 2), 0);
    enum { WRITERS = 4 };
    pid_t pids[WRITERS];
    for (int w = 0; w < WRITERS; w++) {
        pids[w] = fork();
        cr_assert(pids[w] >= 0);
        if (pids[w] == 0) {
            kb_ctx *ctx = kbt_ctx();
            kb_registry *r = NULL;
            char *hub = kbi_asprintf("%s/hub", f.dir);
            int rc = kb_registry_open(&r, ctx, hub);
            /* bypass the exists check: every writer really writes */
            char hex[65], digest[72];
            kbi_sha256_hex(data, sizeof(data), hex);
            snprintf(digest, sizeof(digest), "sha256:%s", hex);
            for (int i = 0; !rc && i < 5; i++)
                rc = r->ops->blob_put(r, "a/b", digest, sizeof(data), src, NULL, NULL);
            _exit(rc ? 1 : 0);
        }
    }
    for (int w = 0; w < WRITERS; w++) {
        int status = 0;
        waitpid(pids[w], &status, 0);
        cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "writer %d failed", w);
    }
    char hex[65];
    kbi_sha256_hex(data, sizeof(data), hex);
    char *digest = kbi_asprintf("sha256:%s", hex);
    kb_buf got = KB_BUF_INIT;
    cr_expect_eq(kbi_registry_blob_get_mem(&got, f.reg, "a/b", digest, sizeof(data)), 0, "%s",
                 kb_ctx_last_error(f.ctx)->message);
    kbi_buf_free(&got);
    char *blobs = path_in(&f, "hub/blobs/sha256");
    kb_proc_result res = {0};
    const char *argv[] = {"ls", "-a", blobs, NULL};
    cr_assert_eq(kbi_proc_run(NULL, &res, argv, NULL, 10000), 0);
    cr_expect(strstr(res.output.data, ".tmp-") == NULL, "no temp files left: %s", res.output.data);
    kbi_proc_result_free(&res);
    free(blobs);
    free(digest);
    free(src);
    close_layout(&f);
}

/* A pid that no process has now: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0)
        _exit(0);
    cr_assert_eq(waitpid(pid, NULL, 0), pid);
    return pid;
}

static void plant(const char *path, time_t age)
{
    kbt_write(path, "half a blob");
    struct timespec t[2] = {{time(NULL) - age, 0}, {time(NULL) - age, 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0, "%s", path);
}

/* Issue 18 (9): publishes killed mid-write left their temp files in the layout forever. The
 * next tag write removes those of writers that are gone, and only those. */
Test(registry_layout, temp_files_of_dead_writers_are_removed_at_the_next_write)
{
    fixture f = open_layout();
    free(push_manifest(&f, "a/b", "1.0.0", "first"));
    /* the names the writers make carry their pid */
    char *dest = path_in(&f, "hub/blobs/sha256/probe");
    kb_blob_writer bw;
    cr_assert_eq(kbi_blob_writer_open(&bw, f.ctx, dest, 0, false), 0);
    cr_expect_eq(kbi_tmp_name_pid(strrchr(bw.part, '/') + 1), (long)getpid(), "%s", bw.part);
    kbi_blob_writer_close(&bw, false);
    char *name = kbi_asprintf("index.json.tmp.%ld", (long)getpid());
    cr_expect_eq(kbi_tmp_name_pid(name), (long)getpid());
    free(name);
    cr_expect_eq(kbi_tmp_name_pid("0123abcd"), -1, "a blob is no temp file");
    cr_expect_eq(kbi_tmp_name_pid("index.json.lock"), -1);

    long dead = (long)dead_pid();
    struct {
        char *path;
        time_t age;
        bool removed;
    } files[] = {
        {kbi_asprintf("%s/hub/blobs/sha256/aa.tmp-%ld-Xy12Zq", f.dir, dead), 3600, true},
        {kbi_asprintf("%s/hub/index.json.tmp.%ld", f.dir, dead), 3600, true},
        {kbi_asprintf("%s/hub/blobs/sha256/bb.tmp.%ld", f.dir, dead), 3600, true},
        {kbi_asprintf("%s/hub/blobs/sha256/cc.tmp-AbCdEf", f.dir), 2 * 86400, true},
        /* a live writer (this process), a fresh file (maybe a writer on another host) and an
         * old name without a pid younger than a day stay */
        {kbi_asprintf("%s/hub/blobs/sha256/dd.tmp.%ld", f.dir, (long)getpid()), 3600, false},
        {kbi_asprintf("%s/hub/blobs/sha256/ee.tmp.%ld", f.dir, dead), 10, false},
        {kbi_asprintf("%s/hub/blobs/sha256/ff.tmp-AbCdEf", f.dir), 3600, false},
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
        plant(files[i].path, files[i].age);
    /* the next publish: a handle of its own (each handle sweeps once, at its first tag write) */
    kb_registry_free(f.reg);
    char *hub = kbi_asprintf("file://%s/hub", f.dir);
    cr_assert_eq(kb_registry_open(&f.reg, f.ctx, hub), 0, "%s", kb_ctx_last_error(f.ctx)->message);
    free(hub);
    free(push_manifest(&f, "a/b", "1.0.1", "second"));
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        cr_expect_eq(access(files[i].path, F_OK) != 0, files[i].removed, "%s", files[i].path);
        free(files[i].path);
    }
    /* the layout still serves both tags */
    kb_registry_manifest *m = NULL;
    cr_expect_eq(kbi_registry_manifest_get(&m, f.reg, "a/b", "1.0.0"), 0);
    kbi_registry_manifest_free(m);
    free(dest);
    close_layout(&f);
}
