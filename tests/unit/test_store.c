/* Installing into the cache: the record's digests describe the files as they lie on disk, whether
 * they come from the extraction's stream or, for a sparse entry, from a second read. */
#include "kbtest.h"

#include "cache/store.h"

#include <dirent.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define TARGET "cpu-x86_64_v2-x86_64-linux"

/* kbpkg.json, a sparse lib/libx.so (data, a 1 MiB hole, data), a header: a tar made by GNU tar
 * --sparse, whose libarchive reader hands out the data blocks around the hole. */
static char *sparse_artifact(const char *base)
{
    char *cmd = kb_asprintf(
        "cd '%s' && mkdir -p s/lib s/include && "
        "printf '{\"name\":\"kbtest/x\",\"version\":\"1.0.0\",\"target\":\"%s\",\"exports\":[]}' "
        "> s/kbpkg.json && printf 'int x;\\n' > s/include/x.h && "
        "head -c 4096 /dev/urandom > s/lib/libx.so && "
        "head -c 4096 /dev/urandom | dd of=s/lib/libx.so bs=4096 seek=256 conv=notrunc "
        "status=none && tar --sparse --format=pax -C s -cf a.tar kbpkg.json include lib",
        base, TARGET);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    return kb_path_join(base, "a.tar");
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
    char *cache_dir = kb_path_join(base, "cache");
    char *artifact = sparse_artifact(base);
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", cache_dir), 0);
    kb_cache *cache = NULL;
    cr_assert_eq(kb_cache_open(&cache, ctx), 0, "%s", kb_ctx_last_error(ctx)->message);
    kb_install_info info = {"kbtest/x", "1.0.0", TARGET, "sha256:00", NULL, NULL, "test", false};
    char *dir = NULL;
    cr_assert_eq(kb_cache_install_artifact(&dir, cache, artifact, &info), 0, "%s",
                 kb_ctx_last_error(ctx)->message);

    char *record_path = kb_path_join(dir, KB_INSTALL_RECORD);
    json_error_t jerr;
    json_t *rec = json_load_file(record_path, 0, &jerr);
    cr_assert_not_null(rec, "%s", jerr.text);
    json_t *files = json_object_get(rec, "files");
    const char *rels[] = {"kbpkg.json", "include/x.h", "lib/libx.so"};
    cr_expect_eq(json_object_size(files), KB_ARRAY_LEN(rels), "files: %zu",
                 json_object_size(files));
    uint64_t total = 0;
    for (size_t i = 0; i < KB_ARRAY_LEN(rels); i++) {
        char *abs = kb_path_join(dir, rels[i]);
        char hex[65];
        uint64_t size = 0;
        cr_assert_eq(kb_sha256_file(ctx, abs, hex, &size), 0, "%s", abs);
        const char *recorded = json_string_value(json_object_get(files, rels[i]));
        cr_assert_not_null(recorded, "%s is not in the record", rels[i]);
        cr_expect_str_eq(recorded, hex, "%s", rels[i]);
        total += size;
        free(abs);
    }
    cr_expect_eq((uint64_t)json_integer_value(json_object_get(rec, "bytes")), total);
    cr_expect_eq(total,
                 257 * 4096 + strlen("int x;\n") +
                     strlen("{\"name\":\"kbtest/x\",\"version\":\"1.0.0\",\"target\":\"" TARGET
                            "\",\"exports\":[]}"));

    kb_installed p;
    cr_assert_eq(kb_cache_read_install(&p, cache, dir), 0);
    kb_strv issues = KB_STRV_INIT;
    cr_expect_eq(kb_cache_verify_one(&issues, cache, &p), 0);
    cr_expect_eq(issues.len, 0, "verify: %s", issues.len ? issues.items[0] : "");
    /* nothing of the extraction is left beside the install */
    char *vdir = kb_asprintf("%s/pkgs/kbtest/x/1.0.0", cache_dir);
    cr_expect_eq(count_dot_entries(vdir), 0);

    kb_strv_free(&issues);
    kb_installed_clear(&p);
    json_decref(rec);
    kb_cache_close(cache);
    kb_ctx_free(ctx);
    free(vdir), free(record_path), free(dir), free(artifact), free(cache_dir);
    kbt_rmtree(base);
    free(base);
}

/* A file that changes after the record was written is what verify is for: the record's digests
 * are the ones of the installed bytes, so one flipped byte is reported. */
Test(store, verify_reports_a_file_changed_after_the_install)
{
    char *base = kbt_mkdtemp();
    char *cache_dir = kb_path_join(base, "cache");
    char *artifact = sparse_artifact(base);
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kb_ctx_set(ctx, "cache.dir", cache_dir), 0);
    kb_cache *cache = NULL;
    cr_assert_eq(kb_cache_open(&cache, ctx), 0);
    kb_install_info info = {"kbtest/x", "1.0.0", TARGET, "sha256:00", NULL, NULL, "test", false};
    char *dir = NULL;
    cr_assert_eq(kb_cache_install_artifact(&dir, cache, artifact, &info), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char *header = kb_path_join(dir, "include/x.h");
    kbt_write(header, "int y;\n");
    kb_installed p;
    cr_assert_eq(kb_cache_read_install(&p, cache, dir), 0);
    kb_strv issues = KB_STRV_INIT;
    cr_expect_eq(kb_cache_verify_one(&issues, cache, &p), 0);
    cr_assert_eq(issues.len, 1);
    cr_expect(strstr(issues.items[0], "include/x.h: sha256 "), "%s", issues.items[0]);
    kb_strv_free(&issues);
    kb_installed_clear(&p);
    kb_cache_close(cache);
    kb_ctx_free(ctx);
    free(header), free(dir), free(artifact), free(cache_dir);
    kbt_rmtree(base);
    free(base);
}
