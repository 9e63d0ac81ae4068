/* libFuzzer target: a layout registry's index.json (registry/layout.c). The bytes become
 * index.json; tags of "a/b" and the manifest of a known digest, looked up through the fast
 * scanner or its jansson fallback, must be what jansson reading the whole file gives:
 * the same tags (sorted), the same media type, KB_ERR_PARSE exactly when it is no index. */
#include "fuzz_common.h"
#include "registry/registry.h"

#include <jansson.h>
#include <sys/stat.h>

#define BLOB_TEXT "{\"schemaVersion\":2,\"mediaType\":\"application/x-blob\"}"

static char dir[512], index_path[600];
static char digest[72];

static void setup_once(void)
{
    if (dir[0])
        return;
    fuzz_tmpdir(dir, sizeof(dir));
    char path[700], hex[65];
    snprintf(path, sizeof(path), "%s/oci-layout", dir);
    fuzz_write(path, (const uint8_t *)"{\"imageLayoutVersion\":\"1.0.0\"}", 30);
    snprintf(path, sizeof(path), "%s/blobs", dir);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/blobs/sha256", dir);
    mkdir(path, 0755);
    kbi_sha256_hex(BLOB_TEXT, strlen(BLOB_TEXT), hex);
    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    snprintf(path, sizeof(path), "%s/blobs/sha256/%s", dir, hex);
    fuzz_write(path, (const uint8_t *)BLOB_TEXT, strlen(BLOB_TEXT));
    snprintf(index_path, sizeof(index_path), "%s/index.json", dir);
}

/* jansson's reading: NULL when the file is not an index (kbpkg then says KB_ERR_PARSE). */
static json_t *reference(const uint8_t *data, size_t size)
{
    json_t *root = json_loadb((const char *)data, size, 0, NULL);
    json_t *manifests = json_object_get(root, "manifests");
    if (!json_is_object(root) || (manifests && !json_is_array(manifests))) {
        json_decref(root);
        return NULL;
    }
    return root;
}

static void check_tags(kb_registry *r, kb_ctx *ctx, json_t *root)
{
    kb_strv want = KB_STRV_INIT, got = KB_STRV_INIT;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "manifests"), i, e)
    {
        const char *name =
            json_string_value(json_object_get(json_object_get(e, "annotations"), KB_OCI_REF_NAME));
        if (name && strncmp(name, "a/b:", 4) == 0 && !kbi_strv_contains(&want, name + 4))
            kbi_strv_push(&want, name + 4);
    }
    kbi_strv_sort(&want);
    int rc = kbi_registry_tags(&got, r, "a/b");
    if (!root)
        FUZZ_CHECK(rc == KB_ERR_PARSE, "tags of a file that is no index: rc %d", rc);
    else if (!want.len)
        FUZZ_CHECK(rc == KB_ERR_NOT_FOUND, "no a/b tags, yet rc %d (%zu tags)", rc, got.len);
    else
        FUZZ_CHECK(rc == 0 && got.len == want.len, "rc %d, %zu tags, jansson says %zu", rc, got.len,
                   want.len);
    if (rc)
        fuzz_check_error(ctx, rc);
    for (i = 0; !rc && i < got.len; i++)
        FUZZ_CHECK(strcmp(got.items[i], want.items[i]) == 0, "tag %s, jansson says %s",
                   got.items[i], want.items[i]);
    kbi_strv_free(&want);
    kbi_strv_free(&got);
}

static void check_digest(kb_registry *r, kb_ctx *ctx, json_t *root)
{
    const char *want = "application/x-blob"; /* the blob's own, unless an entry says */
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "manifests"), i, e)
    {
        const char *d = json_string_value(json_object_get(e, "digest"));
        const char *mt = json_string_value(json_object_get(e, "mediaType"));
        if (d && strcmp(d, digest) == 0) /* the last entry of that digest */
            want = mt ? mt : "application/x-blob";
    }
    kb_registry_manifest *m = NULL;
    int rc = kbi_registry_manifest_get(&m, r, "a/b", digest);
    if (!root) {
        FUZZ_CHECK(rc == KB_ERR_PARSE, "manifest from a file that is no index: rc %d", rc);
        fuzz_check_error(ctx, rc);
    } else {
        FUZZ_CHECK(rc == 0, "manifest by digest: rc %d", rc);
        FUZZ_CHECK(strcmp(m->media_type, want) == 0, "media type %s, jansson says %s",
                   m->media_type, want);
    }
    kbi_registry_manifest_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup_once();
    fuzz_write(index_path, data, size);
    kb_ctx *ctx = fuzz_ctx();
    kb_registry *r = NULL;
    if (kb_registry_open(&r, ctx, dir) != 0)
        abort();
    json_t *root = reference(data, size);
    check_tags(r, ctx, root);
    check_digest(r, ctx, root);
    json_decref(root);
    kb_registry_free(r);
    kb_ctx_free(ctx);
    return 0;
}
