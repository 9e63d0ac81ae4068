/* libFuzzer target: the archive reader (archive/extract.c). The input is written to a file and
 * extracted under a private parent with small limits. Invariants: on failure nothing is left
 * under the parent; on success the parent holds only the new folder, which holds only plain
 * files and folders. kbi_extract_list and kbi_extract_read_member run on the same bytes. */
#define _XOPEN_SOURCE 700 /* nftw */
#include "archive/extract.h"
#include "fuzz_common.h"

#include <dirent.h>
#include <ftw.h>
#include <sys/stat.h>

#define READ_MEMBER_MAX 65536

/* Entries directly under dir, and the one name when there is exactly one. */
static size_t count_entries(const char *dir, char *only, size_t only_size)
{
    DIR *d = opendir(dir);
    if (!d)
        abort();
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        if (n++ == 0 && only)
            snprintf(only, only_size, "%s", e->d_name);
    }
    closedir(d);
    return n;
}

static int check_plain(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    FUZZ_CHECK(type == FTW_F || type == FTW_D || type == FTW_DP, "%s is not a file or folder",
               path);
    FUZZ_CHECK(S_ISREG(st->st_mode) || S_ISDIR(st->st_mode), "%s: mode %o", path,
               (unsigned)st->st_mode);
    FUZZ_CHECK((st->st_mode & (S_ISUID | S_ISGID | S_ISVTX)) == 0, "%s keeps special bits", path);
    return 0;
}

static void check_extract(kb_ctx *ctx, const char *archive, const char *parent, bool layout)
{
    kb_extract_opts opts = KB_EXTRACT_OPTS_INIT;
    opts.allowed_top = layout ? kbi_extract_artifact_layout : NULL;
    opts.limits.max_total_bytes = 1 << 20;
    opts.limits.max_entries = 64;
    opts.limits.max_file_bytes = 256 << 10;
    opts.limits.max_path_len = 256;
    char *out_dir = NULL;
    int rc = kbi_extract_archive(&out_dir, ctx, archive, parent, &opts);
    char only[256] = "";
    size_t left = count_entries(parent, only, sizeof(only));
    if (rc) {
        fuzz_check_error(ctx, rc);
        FUZZ_CHECK(left == 0, "failed extraction (%s) left %zu entries, e.g. %s",
                   kb_ctx_last_error(ctx)->message, left, only);
        FUZZ_CHECK(out_dir == NULL, "failed extraction returned a folder");
        return;
    }
    FUZZ_CHECK(out_dir && left == 1, "extraction left %zu entries under the parent", left);
    char expected[4096];
    snprintf(expected, sizeof(expected), "%s/%s", parent, only);
    FUZZ_CHECK(strcmp(expected, out_dir) == 0, "new folder %s is not %s", out_dir, expected);
    FUZZ_CHECK(kbi_str_starts(only, ".kbpkg-extract-"), "new folder named %s", only);
    FUZZ_CHECK(nftw(out_dir, check_plain, 16, FTW_PHYS) == 0, "walk failed");
    FUZZ_CHECK(kbi_rm_rf(ctx, out_dir) == 0, "cannot remove %s", out_dir);
    free(out_dir);
}

static void check_list_and_read(kb_ctx *ctx, const char *archive)
{
    kb_strv names = KB_STRV_INIT;
    uint64_t *sizes = NULL;
    int rc = kbi_extract_list(&names, &sizes, ctx, archive);
    if (rc)
        fuzz_check_error(ctx, rc);
    for (size_t i = 0; !rc && i < names.len; i++)
        FUZZ_CHECK(names.items[i] != NULL, "NULL member name");
    kbi_strv_free(&names);
    free(sizes);

    kb_buf member = KB_BUF_INIT;
    rc = kbi_extract_read_member(&member, ctx, archive, "kbpkg.json", READ_MEMBER_MAX);
    if (rc)
        fuzz_check_error(ctx, rc);
    else
        FUZZ_CHECK(member.len <= READ_MEMBER_MAX, "read %zu bytes past the limit", member.len);
    kbi_buf_free(&member);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char root[512], archive[600], parent[600];
    if (!root[0]) {
        fuzz_tmpdir(root, sizeof(root));
        snprintf(archive, sizeof(archive), "%s/in.tar.zst", root);
        snprintf(parent, sizeof(parent), "%s/parent", root);
        if (mkdir(parent, 0700) != 0)
            abort();
    }
    fuzz_write(archive, data, size);
    kb_ctx *ctx = fuzz_ctx();
    check_extract(ctx, archive, parent, size % 2 == 0);
    FUZZ_CHECK(count_entries(root, NULL, 0) == 2, "extraction wrote beside its parent");
    check_list_and_read(ctx, archive);
    kb_ctx_free(ctx);
    return 0;
}
