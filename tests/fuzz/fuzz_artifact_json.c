/* libFuzzer target: an artifact's kbpkg.json as publish reads it (publish/publish.c:
 * kbi_pub_artifact_load), the bytes stored as the kbpkg.json member of a tar archive.
 * Invariants: a refusal is a negative code with a message and leaves nothing to free; an
 * accepted file says exactly the expected name, version and target, and the loaded artifact
 * keeps the file's bytes as its config. */
#include "fuzz_common.h"
#include "publish/publish.h"

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>

static char dir[4096];

static void write_tar(const char *path, const uint8_t *data, size_t size)
{
    struct archive *a = archive_write_new();
    struct archive_entry *e = archive_entry_new();
    if (!a || !e || archive_write_set_format_pax_restricted(a) != ARCHIVE_OK ||
        archive_write_open_filename(a, path) != ARCHIVE_OK)
        abort();
    archive_entry_set_pathname(e, "kbpkg.json");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, (la_int64_t)size);
    if (archive_write_header(a, e) != ARCHIVE_OK ||
        (size && archive_write_data(a, data, size) != (la_ssize_t)size) ||
        archive_write_close(a) != ARCHIVE_OK)
        abort();
    archive_entry_free(e);
    archive_write_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        fuzz_tmpdir(dir, sizeof(dir));
    char path[4200];
    snprintf(path, sizeof(path), "%s/artifact.tar", dir);
    write_tar(path, data, size);
    kb_ctx *ctx = fuzz_ctx();
    kb_pub_artifact a;
    int rc =
        kbi_pub_artifact_load(&a, ctx, path, "org/gemm", "1.2.0", "cpu-x86_64_v3-x86_64-linux");
    if (rc) {
        fuzz_check_error(ctx, rc);
        FUZZ_CHECK(!a.path && !a.config_json, "a refused artifact kept its fields");
    } else {
        json_t *root = json_loadb((const char *)data, size, 0, NULL);
        FUZZ_CHECK(root, "accepted kbpkg.json is not JSON");
        const char *name = json_string_value(json_object_get(root, "name"));
        const char *version = json_string_value(json_object_get(root, "version"));
        const char *target = json_string_value(json_object_get(root, "target"));
        FUZZ_CHECK(name && strcmp(name, "org/gemm") == 0 && version &&
                       strcmp(version, "1.2.0") == 0 && target &&
                       strcmp(target, "cpu-x86_64_v3-x86_64-linux") == 0,
                   "accepted kbpkg.json names another artifact");
        FUZZ_CHECK(a.config_json && strlen(a.config_json) <= size &&
                       memcmp(a.config_json, data, strlen(a.config_json)) == 0,
                   "config is not the file's bytes");
        json_decref(root);
        kbi_pub_artifact_clear(&a);
    }
    kb_ctx_free(ctx);
    return 0;
}
