/* Archive writer: byte-identical output whatever the disk says, round trips, refused inputs. */
#include "kbtest.h"

#include "archive/archive.h"
#include "archive/extract.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utime.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader: the window of a frame */
#include <zstd.h>

static void set_mtime(const char *path, time_t t)
{
    struct utimbuf u = {t, t};
    cr_assert_eq(utime(path, &u), 0, "utime %s", path);
}

/* The same content created in a different order, with different modes and times. */
static char *make_staging(const char *base, const char *name, bool reversed, time_t mtime,
                          mode_t umask_value)
{
    mode_t old = umask(umask_value);
    char *root = kbi_path_join(base, name);
    char *json = kbi_asprintf("%s/kbpkg.json", root), *so = kbi_asprintf("%s/lib/libx.so", root);
    char *hdr = kbi_asprintf("%s/include/x.h", root), *lic = kbi_asprintf("%s/LICENSE", root);
    const char *files[4] = {json, so, hdr, lic};
    const char *texts[4] = {"{\"name\":\"x\"}\n", "\177ELF fake\n", "int x(void);\n", "MIT\n"};
    for (int k = 0; k < 4; k++) {
        int i = reversed ? 3 - k : k;
        kbt_write(files[i], texts[i]);
    }
    chmod(lic, reversed ? 0600 : 0664);
    for (int i = 0; i < 4; i++)
        set_mtime(files[i], mtime);
    free(json), free(so), free(hdr), free(lic);
    umask(old);
    return root;
}

static char *slurp(const char *path)
{
    kb_buf b = KB_BUF_INIT;
    cr_assert_eq(kbi_read_file(NULL, path, &b), 0, "read %s", path);
    return kbi_buf_detach(&b);
}

Test(archive, same_bytes_whatever_mtimes_order_and_umask)
{
    char *base = kbt_mkdtemp();
    char *a = make_staging(base, "a", false, 1000, 022);
    char *b = make_staging(base, "b", true, 2000000000, 077);
    char *out_a = kbi_path_join(base, "a.tar.zst"), *out_b = kbi_path_join(base, "b.tar.zst");
    kb_ctx *ctx = kbt_ctx();
    kb_archive_result ra, rb;
    cr_assert_eq(kbi_archive_write_dir(&ra, ctx, out_a, a, 1700000000), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_assert_eq(kbi_archive_write_dir(&rb, ctx, out_b, b, 1700000000), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    cr_expect_str_eq(ra.sha256, rb.sha256);
    cr_expect_eq(ra.size, rb.size);
    char hex[65];
    uint64_t size = 0;
    cr_assert_eq(kbi_sha256_file(ctx, out_a, hex, &size), 0);
    cr_expect_str_eq(hex, ra.sha256, "the returned digest is the file's");
    cr_expect_eq(size, ra.size);
    /* a different epoch must change the bytes: the test can tell archives apart */
    kb_archive_result rc_;
    cr_assert_eq(kbi_archive_write_dir(&rc_, ctx, out_b, b, 1700000001), 0);
    cr_expect_str_neq(rc_.sha256, ra.sha256);
    kb_ctx_free(ctx);
    free(a), free(b), free(out_a), free(out_b);
    kbt_rmtree(base);
    free(base);
}

Test(archive, entries_sorted_and_normalized)
{
    char *base = kbt_mkdtemp();
    char *root = make_staging(base, "s", true, 12345, 002);
    char *out = kbi_path_join(base, "x.tar.zst");
    kb_ctx *ctx = kbt_ctx();
    kb_archive_result r;
    cr_assert_eq(kbi_archive_write_dir(&r, ctx, out, root, 1600000000), 0);
    struct archive *a = archive_read_new();
    archive_read_support_filter_zstd(a);
    archive_read_support_format_tar(a);
    cr_assert_eq(archive_read_open_filename(a, out, 4096), ARCHIVE_OK);
    struct archive_entry *e;
    const char *expected[] = {"LICENSE",    "include/", "include/x.h",
                              "kbpkg.json", "lib/",     "lib/libx.so"};
    const unsigned modes[] = {0644, 0755, 0644, 0644, 0755, 0755};
    size_t n = 0;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        cr_assert_lt(n, 6);
        cr_expect_str_eq(archive_entry_pathname(e), expected[n]);
        cr_expect_eq(archive_entry_perm(e), modes[n], "%s mode %o", expected[n],
                     archive_entry_perm(e));
        cr_expect_eq(archive_entry_mtime(e), 1600000000);
        cr_expect_eq(archive_entry_uid(e), 0);
        cr_expect_eq(archive_entry_gid(e), 0);
        const char *uname = archive_entry_uname(e);
        cr_expect(!uname || !*uname, "uname %s", uname);
        cr_expect_eq(archive_entry_atime_is_set(e), 0);
        cr_expect_eq(archive_entry_ctime_is_set(e), 0);
        cr_expect_eq(archive_entry_xattr_count(e), 0);
        n++;
    }
    cr_expect_eq(n, 6);
    cr_expect_eq(archive_filter_code(a, 0), ARCHIVE_FILTER_ZSTD);
    archive_read_free(a);
    kb_ctx_free(ctx);
    free(root), free(out);
    kbt_rmtree(base);
    free(base);
}

Test(archive, round_trip_through_the_extractor)
{
    char *base = kbt_mkdtemp();
    char *root = make_staging(base, "s", false, 5, 022);
    char *out = kbi_path_join(base, "x.tar.zst"), *dest = kbi_path_join(base, "dest");
    cr_assert_eq(mkdir(dest, 0755), 0);
    kb_ctx *ctx = kbt_ctx();
    kb_archive_result r;
    cr_assert_eq(kbi_archive_write_dir(&r, ctx, out, root, 0), 0);
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = kbi_extract_artifact_layout;
    char *dir = NULL;
    cr_assert_eq(kbi_extract_archive(&dir, ctx, out, dest, &opts), 0, "%s",
                 kb_ctx_last_error(ctx)->message);
    char *so = kbi_path_join(dir, "lib/libx.so");
    char *text = slurp(so);
    cr_expect_str_eq(text, "\177ELF fake\n");
    struct stat st;
    cr_assert_eq(stat(so, &st), 0);
    cr_expect_eq(st.st_mode & 07777, 0755);
    free(text);
    kb_buf json = KB_BUF_INIT;
    cr_assert_eq(kbi_extract_read_member(&json, ctx, out, "kbpkg.json", 1024), 0);
    cr_expect_str_eq(json.data, "{\"name\":\"x\"}\n");
    kbi_buf_free(&json);
    cr_expect_eq(kbi_extract_read_member(&json, ctx, out, "nope.json", 1024), KB_ERR_NOT_FOUND);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "no member 'nope.json'"));
    cr_expect_eq(kbi_extract_read_member(&json, ctx, out, "kbpkg.json", 4), KB_ERR_LIMIT);
    kbi_buf_free(&json);
    kb_strv names = KB_STRV_INIT;
    uint64_t *sizes = NULL;
    cr_assert_eq(kbi_extract_list(&names, &sizes, ctx, out), 0);
    cr_assert_eq(names.len, 6);
    cr_expect_str_eq(names.items[5], "lib/libx.so");
    cr_expect_eq(sizes[5], strlen("\177ELF fake\n"));
    kbi_strv_free(&names);
    free(sizes);
    kb_ctx_free(ctx);
    free(so), free(dir), free(root), free(out), free(dest);
    kbt_rmtree(base);
    free(base);
}

Test(archive, refuses_symlinks_in_staging_naming_the_file)
{
    char *base = kbt_mkdtemp();
    char *root = make_staging(base, "s", false, 5, 022);
    char *link = kbi_path_join(root, "lib/libx.so.1");
    cr_assert_eq(symlink("libx.so", link), 0);
    char *out = kbi_path_join(base, "x.tar.zst");
    kb_ctx *ctx = kbt_ctx();
    kb_archive_result r;
    cr_expect_eq(kbi_archive_write_dir(&r, ctx, out, root, 0), KB_ERR_UNSAFE);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "lib/libx.so.1: it is a symlink"), "%s",
              kb_ctx_last_error(ctx)->message);
    cr_expect_not(kbi_path_exists(out), "nothing written on failure");
    kb_ctx_free(ctx);
    free(link), free(root), free(out);
    kbt_rmtree(base);
    free(base);
}

Test(archive, members_and_memory_variants_agree)
{
    char *base = kbt_mkdtemp();
    char *f1 = kbi_path_join(base, "one"), *f2 = kbi_path_join(base, "two");
    kbt_write(f1, "first\n");
    kbt_write(f2, "second\n");
    kb_archive_member members[] = {{"src/b.cu", f2}, {"kernel.yaml", f1}};
    char *out = kbi_path_join(base, "m.tar.zst");
    kb_ctx *ctx = kbt_ctx();
    kb_archive_result rm, rmem;
    cr_assert_eq(kbi_archive_write_members(&rm, ctx, out, members, 2, 42), 0);
    kb_archive_blob blobs[] = {{"kernel.yaml", "first\n", 6, false},
                               {"src/b.cu", "second\n", 7, false}};
    kb_buf mem = KB_BUF_INIT;
    cr_assert_eq(kbi_archive_write_memory(&mem, &rmem, ctx, blobs, 2, 42), 0);
    cr_expect_str_eq(rm.sha256, rmem.sha256);
    cr_expect_eq(mem.len, rm.size);
    kb_archive_member bad[] = {{"../evil", f1}};
    cr_expect_eq(kbi_archive_write_members(&rm, ctx, out, bad, 1, 42), KB_ERR_INVALID);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "'../evil'"));
    kb_archive_blob dup[] = {{"a", "x", 1, false}, {"a", "y", 1, false}};
    cr_expect_eq(kbi_archive_write_memory(&mem, NULL, ctx, dup, 2, 42), KB_ERR_INVALID);
    cr_expect(strstr(kb_ctx_last_error(ctx)->message, "'a' is given twice"));
    cr_expect_eq(kbi_archive_write_memory(&mem, NULL, ctx, blobs, 2, -1), KB_ERR_INVALID);
    kbi_buf_free(&mem);
    kb_ctx_free(ctx);
    free(f1), free(f2), free(out);
    kbt_rmtree(base);
    free(base);
}

/* The zstd frame of an archive: its declared content size and window. */
static void frame_of(const kb_buf *b, unsigned long long *content, unsigned long long *window)
{
    ZSTD_frameHeader h;
    cr_assert_eq(ZSTD_getFrameHeader(&h, b->data, b->len), 0, "a whole zstd frame header");
    *content = h.frameContentSize;
    *window = h.windowSize;
}

/* A few KB archive pledges its size: the frame says how long the tar is and its window (what
 * the compressor had to hold) fits it. Unpledged, level 19 used an 8 MiB window and an 89.5 MiB
 * context for any input. */
Test(archive, a_small_archive_pledges_its_size_and_gets_a_small_window)
{
    kb_archive_blob blobs[] = {{"kbpkg.json", "{\"name\":\"x\"}\n", 13, false},
                               {"lib/libx.so", "\177ELF fake\n", 10, true}};
    kb_ctx *ctx = kbt_ctx();
    kb_buf mem = KB_BUF_INIT;
    cr_assert_eq(kbi_archive_write_memory(&mem, NULL, ctx, blobs, 2, 42), 0);
    unsigned long long content, window;
    frame_of(&mem, &content, &window);
    cr_expect_neq(content, ZSTD_CONTENTSIZE_UNKNOWN, "the tar size is in the frame header");
    void *tar = malloc(content + 1);
    cr_assert(tar);
    cr_expect_eq(ZSTD_decompress(tar, content + 1, mem.data, mem.len), content, "the real size");
    free(tar);
    cr_expect_leq(window, 64 * 1024, "window %llu for a %llu-byte tar", window, content);
    kbi_buf_free(&mem);
    kb_ctx_free(ctx);
}

/* Above KB_ARCHIVE_ZSTD_SMALL the level drops (the context and the time stay bounded); the
 * bytes are still a function of the input alone, and the archive reads back whole. */
Test(archive, a_large_archive_is_reproducible_and_reads_back)
{
    size_t len = KB_ARCHIVE_ZSTD_SMALL + 300000;
    unsigned char *data = malloc(len);
    cr_assert(data);
    uint32_t x = 12345;
    for (size_t i = 0; i < len; i++) {
        x = x * 1103515245u + 12345u;
        data[i] = (unsigned char)((x >> 16) % 7); /* compressible, not trivially */
    }
    kb_archive_blob blobs[] = {{"lib/libbig.so", data, len, true}};
    kb_ctx *ctx = kbt_ctx();
    kb_buf one = KB_BUF_INIT, two = KB_BUF_INIT;
    kb_archive_result r1, r2;
    cr_assert_eq(kbi_archive_write_memory(&one, &r1, ctx, blobs, 1, 7), 0);
    cr_assert_eq(kbi_archive_write_memory(&two, &r2, ctx, blobs, 1, 7), 0);
    cr_expect_str_eq(r1.sha256, r2.sha256);
    unsigned long long content, window;
    frame_of(&one, &content, &window);
    cr_expect_gt(content, len, "the tar holds the file and its headers");
    cr_expect_leq(window, 4ull << 20, "window %llu", window);
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    archive_read_support_filter_zstd(a);
    cr_assert_eq(archive_read_open_memory(a, one.data, one.len), ARCHIVE_OK);
    struct archive_entry *e;
    bool found = false;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        if (strcmp(archive_entry_pathname(e), "lib/libbig.so") != 0)
            continue;
        unsigned char *back = malloc(len + 1);
        cr_assert(back);
        cr_expect_eq(archive_read_data(a, back, len + 1), (la_ssize_t)len);
        cr_expect(memcmp(back, data, len) == 0, "the file reads back as written");
        free(back);
        found = true;
    }
    cr_expect(found);
    archive_read_free(a);
    kbi_buf_free(&one);
    kbi_buf_free(&two);
    free(data);
    kb_ctx_free(ctx);
}
