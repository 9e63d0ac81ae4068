/* libFuzzer target: kbpkg.lock (lock/lockfile.c: kb_lockfile_load), which pins what a registry
 * served. Invariants: a refusal is a negative code with a message and no lockfile; what loads
 * has every package and artifact readable through the public accessors, writes, reloads, and
 * writes again to the same bytes (the file is canonical); its pinned blobs are digests. */
#include "fuzz_common.h"
#include "lock/lockfile.h"
#include "registry/registry.h"

static char dir[4096];

static void check_readable(const kb_lockfile *lock)
{
    FUZZ_CHECK(kb_lockfile_registry(lock) != NULL, "no registry");
    for (size_t i = 0; i < kb_lockfile_package_count(lock); i++) {
        const char *name, *constraint, *version, *index_digest;
        size_t artifacts = 0;
        FUZZ_CHECK(kb_lockfile_package(&name, &constraint, &version, &index_digest, &artifacts,
                                       lock, i) == 0,
                   "package %zu unreadable", i);
        FUZZ_CHECK(name && constraint && version && index_digest, "package %zu lacks a field", i);
        for (size_t j = 0; j < artifacts; j++) {
            const char *target, *manifest_digest, *layer_digest;
            uint64_t size = 0;
            FUZZ_CHECK(kb_lockfile_artifact(&target, &manifest_digest, &layer_digest, &size, lock,
                                            i, j) == 0,
                       "artifact %zu/%zu unreadable", i, j);
            FUZZ_CHECK(target && manifest_digest && layer_digest, "artifact lacks a field");
        }
    }
    kb_strv blobs = KB_STRV_INIT;
    FUZZ_CHECK(kbi_lockfile_pinned_blobs(&blobs, lock) == 0, "pinned blobs failed");
    for (size_t i = 0; i < blobs.len; i++)
        FUZZ_CHECK(kbi_digest_valid(blobs.items[i]), "pinned blob '%s'", blobs.items[i]);
    kbi_strv_free(&blobs);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    kb_buf b = KB_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        kbi_buf_append(&b, chunk, n);
    fclose(f);
    *len = b.len;
    kbi_buf_grow(&b, 0);
    return kbi_buf_detach(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        fuzz_tmpdir(dir, sizeof(dir));
    char in[4200], once[4200], twice[4200];
    snprintf(in, sizeof(in), "%s/in.lock", dir);
    snprintf(once, sizeof(once), "%s/once.lock", dir);
    snprintf(twice, sizeof(twice), "%s/twice.lock", dir);
    fuzz_write(in, data, size);
    kb_ctx *ctx = fuzz_ctx();
    kb_lockfile *lock = NULL;
    int rc = kb_lockfile_load(&lock, ctx, in);
    if (rc) {
        fuzz_check_error(ctx, rc);
        FUZZ_CHECK(!lock, "a refused lockfile was returned");
        kb_ctx_free(ctx);
        return 0;
    }
    check_readable(lock);
    FUZZ_CHECK(kb_lockfile_write(ctx, lock, once) == 0, "write failed: %s",
               kb_ctx_last_error(ctx)->message);
    kb_lockfile *again = NULL;
    FUZZ_CHECK(kb_lockfile_load(&again, ctx, once) == 0, "written lockfile refused: %s",
               kb_ctx_last_error(ctx)->message);
    FUZZ_CHECK(kb_lockfile_write(ctx, again, twice) == 0, "rewrite failed");
    size_t n1, n2;
    char *b1 = slurp(once, &n1), *b2 = slurp(twice, &n2);
    FUZZ_CHECK(n1 == n2 && memcmp(b1, b2, n1) == 0, "lockfile bytes are not stable:\n%s\n%s", b1,
               b2);
    free(b1);
    free(b2);
    kb_lockfile_free(again);
    kb_lockfile_free(lock);
    kb_ctx_free(ctx);
    return 0;
}
