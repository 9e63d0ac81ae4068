/* Safe extractor: the committed malicious corpus is refused entry by entry, and leaves nothing. */
#include "kbtest.h"

#include "archive/archive.h"
#include "archive/extract.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* How many names a folder holds (".", ".." aside). */
static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "opendir %s", dir);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(d);
    return n;
}

typedef struct bad_case {
    const char *file;
    int code;
    const char *message; /* a substring of the error message */
    uint64_t max_total, max_entries, max_ratio;
} bad_case;

static const bad_case corpus[] = {
    {"absolute_path", KB_ERR_UNSAFE, "entry '/tmp/kbpkg-evil' of", 0, 0, 0},
    {"dotdot", KB_ERR_UNSAFE, "entry '../kbpkg-evil' of", 0, 0, 0},
    {"nested_dotdot", KB_ERR_UNSAFE, "'lib/../../kbpkg-evil'", 0, 0, 0},
    {"symlink_out", KB_ERR_UNSAFE, "'lib/libx.so' of", 0, 0, 0},
    {"symlink_write_through", KB_ERR_UNSAFE, "'lib/d' of", 0, 0, 0},
    {"hardlink", KB_ERR_UNSAFE, "hard link to '/etc/passwd'", 0, 0, 0},
    {"char_device", KB_ERR_UNSAFE, "'lib/null' of", 0, 0, 0},
    {"block_device", KB_ERR_UNSAFE, "'lib/sda' of", 0, 0, 0},
    {"fifo", KB_ERR_UNSAFE, "'lib/pipe' of", 0, 0, 0},
    {"setuid", KB_ERR_UNSAFE, "mode 04755 has setuid", 0, 0, 0},
    {"setgid_dir", KB_ERR_UNSAFE, "mode 02755 has setuid, setgid", 0, 0, 0},
    {"duplicate", KB_ERR_UNSAFE, "'kbpkg.json' of", 0, 0, 0},
    {"not_allowed", KB_ERR_UNSAFE, "'bin/run.sh' of", 0, 0, 0},
    {"file_as_folder", KB_ERR_UNSAFE, "'lib' of", 0, 0, 0},
    {"bomb_total", KB_ERR_LIMIT, "max_total_bytes limit (1048576) at entry 'lib/b'", 1 << 20, 0, 0},
    {"bomb_entries", KB_ERR_LIMIT, "max_entries limit (100) at entry 'include/h100.h'", 0, 100, 0},
    {"bomb_ratio", KB_ERR_LIMIT, "max_ratio limit (200) at entry 'lib/libx.so'", 0, 0, 200},
    {"control_char", KB_ERR_UNSAFE, "'include/a\\x1b[31mb.h' of", 0, 0, 0},
    {"long_name", KB_ERR_UNSAFE, "name is 2211 bytes long (limit 1024)", 0, 0, 0},
    {"long_component", KB_ERR_UNSAFE, "component is longer than 255 bytes", 0, 0, 0},
    {"dot_component", KB_ERR_UNSAFE, "'include/./x.h' of", 0, 0, 0},
    {"not_a_tar", KB_ERR_ARCHIVE, "not_a_tar.tar.zst: Unrecognized archive format", 0, 0, 0},
    {"truncated", KB_ERR_ARCHIVE, "truncated.tar.zst", 0, 0, 0},
};

/* The reason each entry is refused, checked separately from where it is named. */
static const char *const reasons[][2] = {
    {"absolute_path", "absolute path"},
    {"dotdot", "'..' component"},
    {"nested_dotdot", "'..' component"},
    {"symlink_out", "symlink to '/etc/passwd'"},
    {"symlink_write_through", "symlink to '/tmp'"},
    {"char_device", "character device"},
    {"block_device", "block device"},
    {"fifo", "fifo"},
    {"duplicate", "duplicate entry"},
    {"not_allowed", "not part of the allowed layout"},
    {"file_as_folder", "not part of the allowed layout"},
    {"control_char", "control character"},
    {"dot_component", "empty or '.' component"},
};

static void expect_refused(const bad_case *c)
{
    char *rel = kbi_asprintf("archives/malicious/%s.tar.zst", c->file);
    char *archive = kbt_data(rel);
    char *parent = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kbi_extract_artifact_layout;
    if (c->max_total) {
        opts.limits.max_total_bytes = c->max_total;
        opts.limits.max_ratio = 0; /* let the total limit be the one that trips */
    }
    if (c->max_entries)
        opts.limits.max_entries = c->max_entries;
    char *dir = (char *)"untouched";
    int rc = kbi_extract_archive(&dir, ctx, archive, parent, &opts);
    const kb_error *e = kb_ctx_last_error(ctx);
    cr_expect_eq(rc, c->code, "%s: got %d (%s)", c->file, rc, e->message);
    cr_expect(strstr(e->message, c->message), "%s: message '%s' lacks '%s'", c->file, e->message,
              c->message);
    for (size_t i = 0; i < KB_ARRAY_LEN(reasons); i++)
        if (strcmp(reasons[i][0], c->file) == 0)
            cr_expect(strstr(e->message, reasons[i][1]), "%s: '%s' lacks '%s'", c->file, e->message,
                      reasons[i][1]);
    cr_expect_null(dir, "%s: no folder handed out", c->file);
    cr_expect_eq(count_entries(parent), 0, "%s: the parent must hold nothing new", c->file);
    cr_expect_not(kbi_path_exists("/tmp/kbpkg-evil"), "%s escaped", c->file);
    kb_ctx_free(ctx);
    kbt_rmtree(parent);
    free(parent), free(archive), free(rel);
}

Test(extract, malicious_corpus_is_refused_and_leaves_nothing)
{
    cr_assert_geq(KB_ARRAY_LEN(corpus), 14);
    for (size_t i = 0; i < KB_ARRAY_LEN(corpus); i++)
        expect_refused(&corpus[i]);
}

/* libarchive ends a name at a NUL (pax "path=kbpkg.json\0/../../x"): the hidden tail cannot be
 * seen, so the entry is judged, and written, by its visible prefix. Nothing escapes. */
Test(extract, nul_in_name_is_cut_by_libarchive_and_stays_inside)
{
    char *archive = kbt_data("archives/malicious/nul_in_name.tar.zst");
    char *parent = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kbi_extract_artifact_layout;
    char *dir = NULL;
    cr_assert_eq(kbi_extract_archive(&dir, ctx, archive, parent, &opts), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect_eq(count_entries(dir), 1);
    char *json = kbi_path_join(dir, "kbpkg.json");
    cr_expect(kbi_path_exists(json));
    cr_expect_not(kbi_path_exists("/tmp/kbpkg-evil"));
    kb_ctx_free(ctx);
    kbt_rmtree(parent);
    free(json), free(dir), free(parent), free(archive);
}

Test(extract, limits_per_file_and_missing_inputs)
{
    char *base = kbt_mkdtemp();
    kb_archive_blob blobs[] = {{"lib/libx.so", "0123456789", 10, true},
                               {"kbpkg.json", "{}", 2, false}};
    kb_buf mem = KB_BUF_INIT;
    kb_ctx *ctx = kbt_ctx();
    cr_assert_eq(kbi_archive_write_memory(&mem, NULL, ctx, blobs, 2, 0), 0);
    char *archive = kbi_path_join(base, "a.tar.zst"), *parent = kbi_path_join(base, "p");
    cr_assert_eq(kbi_write_file_atomic(ctx, archive, mem.data, mem.len, 0644), 0);
    cr_assert_eq(mkdir(parent, 0755), 0);
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.limits.max_file_bytes = 9;
    char *dir = NULL;
    cr_expect_eq(kbi_extract_archive(&dir, ctx, archive, parent, &opts), KB_ERR_LIMIT);
    cr_expect(
        strstr(kb_ctx_last_error(ctx)->message, "max_file_bytes limit (9) at entry 'lib/libx.so'"),
        "%s", kb_ctx_last_error(ctx)->message);
    cr_expect_eq(count_entries(parent), 0);
    opts.limits.max_file_bytes = 10;
    cr_expect_eq(kbi_extract_archive(&dir, ctx, archive, parent, &opts), 0);
    cr_expect_eq(count_entries(parent), 1);
    free(dir);
    char *missing = kbi_path_join(base, "missing.tar.zst");
    cr_expect_eq(kbi_extract_archive(&dir, ctx, missing, parent, &opts), KB_ERR_NOT_FOUND);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "missing.tar.zst"));
    kb_extract_opts old = opts;
    old.version = 0;
    cr_expect_eq(kbi_extract_archive(&dir, ctx, archive, parent, &old), KB_ERR_INVALID);
    kbi_buf_free(&mem);
    kb_ctx_free(ctx);
    free(missing), free(archive), free(parent);
    kbt_rmtree(base);
    free(base);
}

Test(extract, read_member_refuses_a_duplicated_member)
{
    char *archive = kbt_data("archives/malicious/duplicate.tar.zst");
    kb_ctx *ctx = kbt_ctx();
    kb_buf b = KB_BUF_INIT;
    cr_expect_eq(kbi_extract_read_member(&b, ctx, archive, "kbpkg.json", 4096), KB_ERR_UNSAFE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "'kbpkg.json' of"));
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "duplicate entry"));
    cr_expect_eq(b.len, 0, "nothing handed out");
    kbi_buf_free(&b);
    kb_ctx_free(ctx);
    free(archive);
}

/* Write an archive of blobs to base/name and return its path (owned). */
static char *write_archive(kb_ctx *ctx, const char *base, const char *name,
                           const kb_archive_blob *blobs, size_t n)
{
    kb_buf mem = KB_BUF_INIT;
    cr_assert_eq(kbi_archive_write_memory(&mem, NULL, ctx, blobs, n, 0), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char *archive = kbi_path_join(base, name);
    cr_assert_eq(kbi_write_file_atomic(ctx, archive, mem.data, mem.len, 0644), 0);
    kbi_buf_free(&mem);
    return archive;
}

static const kb_extract_file *find_extracted(const kb_extract_files *f, const char *path)
{
    for (size_t i = 0; i < f->len; i++)
        if (strcmp(f->items[i].path, path) == 0)
            return &f->items[i];
    return NULL;
}

/* The installer writes its record from these digests instead of reading every file again: each
 * must be the sha256 of the input bytes and of the file as it lies on disk. */
Test(extract, digests_taken_while_writing_match_the_input_and_the_files_on_disk)
{
    char *base = kbt_mkdtemp();
    kb_ctx *ctx = kbt_ctx();
    /* 20 MiB + 3: more than two writeback steps of 8 MiB, and not a multiple of any block */
    size_t big_len = (20u << 20) + 3;
    unsigned char *big = malloc(big_len);
    cr_assert_not_null(big);
    for (size_t i = 0; i < big_len; i++) /* compressible: zstd -19 of random bytes takes seconds */
        big[i] = (unsigned char)(i % 251 + i / 1000003);
    kb_archive_blob blobs[] = {{"lib/libx.so", big, big_len, true},
                               {"kbpkg.json", "{\"name\":\"x\"}", 12, false},
                               {"include/empty.h", "", 0, false},
                               {"include/deep/a.h", "int a;\n", 7, false},
                               {"LICENSE", "MIT\n", 4, false}};
    char *archive = write_archive(ctx, base, "a.tar.zst", blobs, KB_ARRAY_LEN(blobs));
    char *parent = kbi_path_join(base, "p");
    cr_assert_eq(mkdir(parent, 0755), 0);
    kb_extract_files files = KB_EXTRACT_FILES_INIT;
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kbi_extract_artifact_layout;
    opts.files = &files;
    opts.start_writeback = true;
    opts.limits.max_ratio = 0; /* the test data compresses far beyond 200:1 */
    char *dir = NULL;
    cr_assert_eq(kbi_extract_archive(&dir, ctx, archive, parent, &opts), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect_eq(files.len, KB_ARRAY_LEN(blobs), "regular files only, each once: %zu", files.len);
    for (size_t i = 0; i < KB_ARRAY_LEN(blobs); i++) {
        const kb_extract_file *f = find_extracted(&files, blobs[i].archive_path);
        cr_assert_not_null(f, "%s not listed", blobs[i].archive_path);
        char want[65], on_disk[65];
        kbi_sha256_hex(blobs[i].data, blobs[i].len, want);
        char *abs = kbi_path_join(dir, f->path);
        uint64_t size = 0;
        cr_assert_eq(kbi_sha256_file(ctx, abs, on_disk, &size), 0);
        cr_expect_str_eq(f->sha256, want, "%s", f->path);
        cr_expect_str_eq(f->sha256, on_disk, "%s", f->path);
        cr_expect_eq(f->size, blobs[i].len, "%s", f->path);
        cr_expect_eq(size, blobs[i].len, "%s", f->path);
        free(abs);
    }
    free(dir);

    /* a failed extraction hands back no list, and a later one does not add to an old list */
    opts.limits.max_file_bytes = 1 << 20;
    cr_expect_eq(kbi_extract_archive(&dir, ctx, archive, parent, &opts), KB_ERR_LIMIT);
    cr_expect_eq(files.len, 0);
    cr_expect_null(files.items);
    opts.limits.max_file_bytes = 0;
    cr_assert_eq(kbi_extract_archive(&dir, ctx, archive, parent, &opts), 0);
    cr_expect_eq(files.len, KB_ARRAY_LEN(blobs));
    kbi_extract_files_free(&files);
    free(dir);
    kb_ctx_free(ctx);
    free(big), free(archive), free(parent);
    kbt_rmtree(base);
    free(base);
}

/* A sparse entry (GNU tar -S, pax format) arrives as data blocks around a hole: it gets no digest
 * from the stream (sha256 ""), so the installer hashes the file from disk. */
Test(extract, a_sparse_entry_gets_no_streamed_digest)
{
    char *base = kbt_mkdtemp();
    char *cmd = kbi_asprintf(
        "cd '%s' && mkdir -p s/lib && printf '{}' > s/kbpkg.json && "
        "head -c 4096 /dev/urandom > s/lib/libs.so && "
        "head -c 4096 /dev/urandom | dd of=s/lib/libs.so bs=4096 seek=256 conv=notrunc "
        "status=none && tar --sparse --format=pax -C s -cf sparse.tar kbpkg.json lib/libs.so",
        base);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    free(cmd);
    kb_ctx *ctx = kbt_ctx();
    char *archive = kbi_path_join(base, "sparse.tar");
    kb_extract_files files = KB_EXTRACT_FILES_INIT;
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kbi_extract_artifact_layout;
    opts.files = &files;
    char *dir = NULL;
    cr_assert_eq(kbi_extract_archive(&dir, ctx, archive, base, &opts), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    const kb_extract_file *f = find_extracted(&files, "lib/libs.so");
    cr_assert_not_null(f);
    char *abs = kbi_path_join(dir, "lib/libs.so"), *orig = kbi_path_join(base, "s/lib/libs.so");
    char got[65], want[65];
    uint64_t size = 0;
    cr_assert_eq(kbi_sha256_file(ctx, abs, got, &size), 0);
    cr_assert_eq(kbi_sha256_file(ctx, orig, want, NULL), 0);
    cr_expect_str_eq(got, want, "the extracted file is whole, hole included");
    cr_expect_eq(size, 257 * 4096);
    cr_expect_str_eq(f->sha256, "", "a digest of the data blocks alone would be wrong");
    const kb_extract_file *json = find_extracted(&files, "kbpkg.json");
    cr_assert_not_null(json);
    kbi_sha256_hex("{}", 2, want);
    cr_expect_str_eq(json->sha256, want, "a plain entry of the same archive has its digest");
    kbi_extract_files_free(&files);
    kb_ctx_free(ctx);
    free(abs), free(orig), free(dir), free(archive);
    kbt_rmtree(base);
    free(base);
}
