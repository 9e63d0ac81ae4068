/* Installing into the cache: the record's digests describe the files as they lie on disk, whether
 * they come from the extraction's stream or, for a sparse entry, from a second read. */
#include "kbtest.h"

#include "cache/store.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define TARGET "cpu-x86_64_v2-x86_64-linux"

/* kbpkg.json, a sparse lib/libx.so (data, a 1 MiB hole, data), a header: a tar made by GNU tar
 * --sparse, whose libarchive reader hands out the data blocks around the hole. */
static char *sparse_artifact(const char *base)
{
    char *cmd = kbi_asprintf(
        "cd '%s' && mkdir -p s/lib s/include && "
        "printf '{\"name\":\"kbtest/x\",\"version\":\"1.0.0\",\"target\":\"%s\",\"exports\":[]}' "
        "> s/kbpkg.json && printf 'int x;\\n' > s/include/x.h && "
        "head -c 4096 /dev/urandom > s/lib/libx.so && "
        "head -c 4096 /dev/urandom | dd of=s/lib/libx.so bs=4096 seek=256 conv=notrunc "
        "status=none && printf '%s\\000' >> s/lib/libx.so && tar --sparse --format=pax -C s -cf "
        "a.tar kbpkg.json include lib",
        base, TARGET, TARGET);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    return kbi_path_join(base, "a.tar");
}

/* Put the artifact into the cache's blob store, as install does; returns its digest (owned). */
static char *store_blob(kb_cache *cache, const char *artifact)
{
    char hex[65];
    cr_assert_eq(kbi_sha256_file(NULL, artifact, hex, NULL), 0);
    char *digest = kbi_asprintf("sha256:%s", hex);
    char *blob = kbi_cache_blob_path(cache, digest);
    char *cmd = kbi_asprintf("cp '%s' '%s'", artifact, blob);
    cr_assert_eq(system(cmd), 0);
    free(cmd);
    free(blob);
    return digest;
}

static size_t count_dot_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s", dir);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] == '.' && strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
    closedir(d);
    return n;
}

Test(store, the_install_record_hashes_every_file_as_it_lies_on_disk)
{
    char *base = kbt_mkdtemp();
    char *cache_dir = kbi_path_join(base, "cache");
    char *artifact = sparse_artifact(base);
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", cache_dir), 0);
    kb_cache *cache = NULL;
    cr_assert_eq(kbi_cache_open(&cache, ctx), 0, "%s", kb_ctx_last_error(ctx)->message);
    char *digest = store_blob(cache, artifact);
    kb_install_info info = {"kbtest/x", "1.0.0", TARGET, digest, NULL, NULL, "test", false, NULL};
    char *dir = NULL;
    cr_assert_eq(kbi_cache_install_artifact(&dir, cache, artifact, &info), 0, "%s",
                 kb_ctx_last_error(ctx)->message);

    char *record_path = kbi_path_join(dir, KB_INSTALL_RECORD);
    json_error_t jerr;
    json_t *rec = json_load_file(record_path, 0, &jerr);
    cr_assert_not_null(rec, "%s", jerr.text);
    json_t *files = json_object_get(rec, "files");
    const char *rels[] = {"kbpkg.json", "include/x.h", "lib/libx.so"};
    cr_expect_eq(json_object_size(files), KB_ARRAY_LEN(rels), "files: %zu",
                 json_object_size(files));
    uint64_t total = 0;
    for (size_t i = 0; i < KB_ARRAY_LEN(rels); i++) {
        char *abs = kbi_path_join(dir, rels[i]);
        char hex[65];
        uint64_t size = 0;
        cr_assert_eq(kbi_sha256_file(ctx, abs, hex, &size), 0, "%s", abs);
        const char *recorded = json_string_value(json_object_get(files, rels[i]));
        cr_assert_not_null(recorded, "%s is not in the record", rels[i]);
        cr_expect_str_eq(recorded, hex, "%s", rels[i]);
        total += size;
        free(abs);
    }
    cr_expect_eq((uint64_t)json_integer_value(json_object_get(rec, "bytes")), total);
    cr_expect_eq(total,
                 257 * 4096 + sizeof(TARGET) + strlen("int x;\n") +
                     strlen("{\"name\":\"kbtest/x\",\"version\":\"1.0.0\",\"target\":\"" TARGET
                            "\",\"exports\":[]}"));

    kb_installed p;
    cr_assert_eq(kbi_cache_read_install(&p, cache, dir), 0);
    kb_strv issues = KB_STRV_INIT;
    cr_expect_eq(kbi_cache_verify_one(&issues, cache, &p), 0);
    cr_expect_eq(issues.len, 0, "verify: %s", issues.len ? issues.items[0] : "");
    /* nothing of the extraction is left beside the install */
    char *vdir = kbi_asprintf("%s/pkgs/kbtest/x/1.0.0", cache_dir);
    cr_expect_eq(count_dot_entries(vdir), 0);

    kbi_strv_free(&issues);
    kbi_installed_clear(&p);
    json_decref(rec);
    kbi_cache_close(cache);
    kb_ctx_free(ctx);
    free(vdir), free(record_path), free(dir), free(artifact), free(cache_dir), free(digest);
    kbt_rmtree(base);
    free(base);
}

/* A file that changes after the record was written is what verify is for: the record's digests
 * are the ones of the installed bytes, so one flipped byte is reported. */
Test(store, verify_reports_a_file_changed_after_the_install)
{
    char *base = kbt_mkdtemp();
    char *cache_dir = kbi_path_join(base, "cache");
    char *artifact = sparse_artifact(base);
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", cache_dir), 0);
    kb_cache *cache = NULL;
    cr_assert_eq(kbi_cache_open(&cache, ctx), 0);
    char *digest = store_blob(cache, artifact);
    kb_install_info info = {"kbtest/x", "1.0.0", TARGET, digest, NULL, NULL, "test", false, NULL};
    char *dir = NULL;
    cr_assert_eq(kbi_cache_install_artifact(&dir, cache, artifact, &info), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char *header = kbi_path_join(dir, "include/x.h");
    kbt_write(header, "int y;\n");
    kb_installed p;
    cr_assert_eq(kbi_cache_read_install(&p, cache, dir), 0);
    kb_strv issues = KB_STRV_INIT;
    cr_expect_eq(kbi_cache_verify_one(&issues, cache, &p), 0);
    cr_assert_eq(issues.len, 1);
    cr_expect(strstr(issues.items[0], "include/x.h: sha256 "), "%s", issues.items[0]);
    kbi_strv_free(&issues);
    kbi_installed_clear(&p);
    kbi_cache_close(cache);
    kb_ctx_free(ctx);
    free(header), free(dir), free(artifact), free(cache_dir), free(digest);
    kbt_rmtree(base);
    free(base);
}

/* An install in a fresh cache, for the tamper tests below. */
typedef struct installed_x {
    char *base, *cache_dir, *artifact, *digest, *dir;
    kb_ctx *ctx;
    kb_cache *cache;
} installed_x;

static void install_x(installed_x *x)
{
    x->base = kbt_mkdtemp();
    x->cache_dir = kbi_path_join(x->base, "cache");
    x->artifact = sparse_artifact(x->base);
    x->ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(x->ctx, "cache.dir", x->cache_dir), 0);
    cr_assert_eq(kbi_cache_open(&x->cache, x->ctx), 0);
    x->digest = store_blob(x->cache, x->artifact);
    kb_install_info info = {"kbtest/x", "1.0.0", TARGET, x->digest, NULL,
                            NULL,       "test",  false,  NULL};
    cr_assert_eq(kbi_cache_install_artifact(&x->dir, x->cache, x->artifact, &info), 0, "%s",
                 kb_ctx_last_error(x->ctx)->message);
}

static void installed_x_free(installed_x *x)
{
    kbi_cache_close(x->cache);
    kb_ctx_free(x->ctx);
    kbt_rmtree(x->base);
    free(x->base), free(x->cache_dir), free(x->artifact), free(x->digest), free(x->dir);
}

/* verify's issues joined by newlines (owned); verify itself must return 0. */
static char *verify_x(installed_x *x)
{
    kb_installed p;
    cr_assert_eq(kbi_cache_read_install(&p, x->cache, x->dir), 0);
    kb_strv issues = KB_STRV_INIT;
    cr_expect_eq(kbi_cache_verify_one(&issues, x->cache, &p), 0);
    kb_buf b = KB_BUF_INIT;
    kbi_buf_puts(&b, "");
    for (size_t i = 0; i < issues.len; i++)
        kbi_buf_printf(&b, "%s\n", issues.items[i]);
    kbi_strv_free(&issues);
    kbi_installed_clear(&p);
    return kbi_buf_detach(&b);
}

static void edit_record(installed_x *x, const char *jq_like_python)
{
    char *rec = kbi_path_join(x->dir, KB_INSTALL_RECORD);
    char *cmd = kbi_asprintf("python3 -c 'import json,sys; p=sys.argv[1]; r=json.load(open(p)); "
                             "%s; json.dump(r, open(p, \"w\"))' '%s'",
                             jq_like_python, rec);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    free(rec);
}

/* Issue 18 (3): the record is not the reference. Editing its digest for a changed file, or adding
 * an export, is found by comparing with the artifact blob. */
Test(store, verify_checks_the_files_against_the_artifact_not_the_editable_record)
{
    installed_x x;
    install_x(&x);
    char *issues = verify_x(&x);
    cr_expect_str_eq(issues, "", "a fresh install verifies");
    free(issues);

    char *header = kbi_path_join(x.dir, "include/x.h");
    kbt_write(header, "int y;\n");
    char hex[65];
    cr_assert_eq(kbi_sha256_file(NULL, header, hex, NULL), 0);
    char *py = kbi_asprintf(
        "r[\"files\"][\"include/x.h\"]=\"%s\"; r[\"exports\"].append(\"system\")", hex);
    edit_record(&x, py);
    issues = verify_x(&x);
    cr_expect(strstr(issues, "include/x.h: sha256 "), "%s", issues);
    cr_expect(strstr(issues, "the record exports system, which the artifact does not declare"),
              "%s", issues);
    free(issues);
    free(py);
    free(header);
    installed_x_free(&x);
}

/* Issue 18 (1): a blob altered in the cache after its download is not trusted for its name. */
Test(store, a_blob_altered_in_the_cache_is_refused_and_removed)
{
    installed_x x;
    install_x(&x);
    char *blob = kbi_cache_blob_path(x.cache, x.digest);
    cr_expect_eq(kbi_cache_blob_check(x.cache, blob, x.digest), 0);
    FILE *f = fopen(blob, "ab");
    cr_assert_not_null(f);
    fputs("tampered", f);
    fclose(f);
    cr_expect_eq(kbi_cache_blob_check(x.cache, blob, x.digest), KB_ERR_DIGEST);
    cr_expect(!kbi_path_exists(blob), "the altered blob is removed so it is fetched again");
    char *issues = verify_x(&x);
    cr_expect(strstr(issues, "is not in the cache"), "%s", issues);
    free(issues);
    free(blob);
    installed_x_free(&x);
}

/* Issue 18 (7): a FIFO or a symlink to /dev/zero in an install folder is reported, never read
 * (the test would hang, bounded by ctest's timeout, before). */
Test(store, verify_never_opens_a_fifo_or_a_device, .timeout = 20)
{
    installed_x x;
    install_x(&x);
    char *header = kbi_path_join(x.dir, "include/x.h");
    char *lib = kbi_path_join(x.dir, "lib/libx.so");
    cr_assert_eq(unlink(header), 0);
    cr_assert_eq(mkfifo(header, 0644), 0);
    cr_assert_eq(unlink(lib), 0);
    cr_assert_eq(symlink("/dev/zero", lib), 0);
    char *issues = verify_x(&x);
    cr_expect(strstr(issues, "include/x.h: not a regular file (a FIFO)"), "%s", issues);
    cr_expect(strstr(issues, "lib/libx.so: not a regular file (a symlink)"), "%s", issues);
    char hex[65];
    cr_expect_neq(kbi_sha256_file(x.ctx, header, hex, NULL), 0, "hashing refuses a FIFO");
    cr_expect_neq(kbi_sha256_file(x.ctx, lib, hex, NULL), 0, "and a device");
    free(issues);
    free(header);
    free(lib);
    installed_x_free(&x);
}
