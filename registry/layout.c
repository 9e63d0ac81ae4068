/* The OCI image layout transport: oci-layout, index.json (tags by ref.name), blobs/sha256/. */
#include "registry/registry.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LAYOUT_FILE "oci-layout"
#define LAYOUT_TEXT "{\"imageLayoutVersion\":\"1.0.0\"}"

typedef struct layout {
    char *root;
    char *index_path;
    char *lock_path;
    char *blob_dir;
} layout;

static layout *L(kb_registry *r)
{
    return r->impl;
}

static int io_fail(kb_ctx *ctx, const char *what, const char *path, int err)
{
    int code = err == ENOSPC || err == EDQUOT ? KB_ERR_NOSPACE
               : err == EFBIG                 ? KB_ERR_LIMIT /* RLIMIT_FSIZE */
                                              : KB_ERR_IO;
    return kb_error_set_path(ctx, code, path, 0, 0, "cannot %s %s: %s%s", what, path, strerror(err),
                             err == EFBIG ? " (file size limit reached)" : "");
}

static char *blob_path(kb_registry *r, const char *digest)
{
    return kb_asprintf("%s/%s", L(r)->blob_dir, kb_digest_hex(digest));
}

/* The layout must say it is one, in the version we understand. */
static int check_layout_file(kb_registry *r)
{
    char *path = kb_path_join(L(r)->root, LAYOUT_FILE);
    if (!path)
        return kb_error_oom(r->ctx);
    kb_buf b = KB_BUF_INIT;
    int rc = kb_read_file(r->ctx, path, &b);
    if (!rc) {
        json_error_t jerr;
        json_t *j = json_loadb(b.data, b.len, 0, &jerr);
        const char *v = json_string_value(json_object_get(j, "imageLayoutVersion"));
        if (!j)
            rc = kb_error_set_path(r->ctx, KB_ERR_PARSE, path, (unsigned)jerr.line,
                                   (unsigned)jerr.column, "%s: %s", path, jerr.text);
        else if (!v || strcmp(v, "1.0.0") != 0)
            rc = kb_error_set_path(r->ctx, KB_ERR_REGISTRY, path, 0, 0,
                                   "%s: unsupported imageLayoutVersion '%s' (expected 1.0.0)", path,
                                   v ? v : "");
        json_decref(j);
    }
    kb_buf_free(&b);
    free(path);
    return rc;
}

/* Create the layout on first write; leave an existing one alone. */
static int ensure_layout(kb_registry *r)
{
    int rc = kb_mkdir_p(r->ctx, L(r)->blob_dir, 0755);
    if (rc)
        return rc;
    char *path = kb_path_join(L(r)->root, LAYOUT_FILE);
    if (!path)
        return kb_error_oom(r->ctx);
    if (!kb_path_exists(path))
        rc = kb_write_file_atomic(r->ctx, path, LAYOUT_TEXT, strlen(LAYOUT_TEXT), 0644);
    else
        rc = check_layout_file(r);
    free(path);
    return rc;
}

static int layout_ping(kb_registry *r)
{
    if (!kb_is_dir(L(r)->root))
        return kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, L(r)->root, 0, 0,
                                 "no OCI layout folder at %s", L(r)->root);
    return check_layout_file(r);
}

/* index.json, or an empty index when the layout has none yet. */
static int load_index(json_t **out, kb_registry *r)
{
    *out = NULL;
    kb_buf b = KB_BUF_INIT;
    if (!kb_path_exists(L(r)->index_path)) {
        *out = json_pack("{s:i, s:s, s:[]}", "schemaVersion", 2, "mediaType", KB_MT_OCI_INDEX,
                         "manifests");
        return *out ? 0 : kb_error_oom(r->ctx);
    }
    int rc = kb_read_file(r->ctx, L(r)->index_path, &b);
    if (rc)
        return rc;
    json_error_t jerr;
    json_t *j = json_loadb(b.data, b.len, 0, &jerr);
    kb_buf_free(&b);
    if (!j)
        return kb_error_set_path(r->ctx, KB_ERR_PARSE, L(r)->index_path, (unsigned)jerr.line,
                                 (unsigned)jerr.column, "%s:%d:%d: %s", L(r)->index_path, jerr.line,
                                 jerr.column, jerr.text);
    json_t *manifests = json_object_get(j, "manifests");
    if (!manifests) {
        manifests = json_array();
        json_object_set_new(j, "manifests", manifests);
    }
    if (!json_is_object(j) || !json_is_array(manifests)) {
        json_decref(j);
        return kb_error_set_path(r->ctx, KB_ERR_PARSE, L(r)->index_path, 0, 0,
                                 "%s: not an OCI image index (no manifests array)",
                                 L(r)->index_path);
    }
    *out = j;
    return 0;
}

static const char *entry_ref_name(json_t *entry)
{
    return json_string_value(
        json_object_get(json_object_get(entry, "annotations"), KB_OCI_REF_NAME));
}

/* The index entry tagged "<repo>:<tag>", borrowed from index. */
static json_t *find_tag(json_t *index, const char *repo, const char *tag)
{
    size_t i;
    json_t *entry;
    size_t rlen = strlen(repo);
    json_array_foreach(json_object_get(index, "manifests"), i, entry)
    {
        const char *name = entry_ref_name(entry);
        if (name && strncmp(name, repo, rlen) == 0 && name[rlen] == ':' &&
            strcmp(name + rlen + 1, tag) == 0)
            return entry;
    }
    return NULL;
}

static int layout_blob_exists(uint64_t *size_out, kb_registry *r, const char *repo,
                              const char *digest)
{
    char *path = blob_path(r, digest);
    if (!path)
        return kb_error_oom(r->ctx);
    struct stat st;
    int rc = 0;
    if (stat(path, &st) != 0)
        rc = errno == ENOENT ? kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                                 "blob %s not found in %s", digest, L(r)->root)
                             : io_fail(r->ctx, "stat", path, errno);
    else
        *size_out = (uint64_t)st.st_size;
    free(path);
    return rc;
}

static int copy_fd_to_writer(kb_registry *r, int fd, const char *path, kb_blob_writer *w)
{
    char chunk[65536];
    if (w->written && lseek(fd, (off_t)w->written, SEEK_SET) < 0)
        return io_fail(r->ctx, "seek", path, errno);
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return io_fail(r->ctx, "read", path, errno);
        if (n == 0)
            return 0;
        int rc = kb_blob_writer_write(w, chunk, (size_t)n);
        if (rc)
            return rc;
    }
}

static int layout_blob_get(kb_registry *r, const char *repo, const char *digest, kb_blob_writer *w)
{
    char *path = blob_path(r, digest);
    if (!path)
        return kb_error_oom(r->ctx);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int rc;
    if (fd < 0) {
        rc = errno == ENOENT ? kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                                 "blob %s not found in %s", digest, L(r)->root)
                             : io_fail(r->ctx, "open", path, errno);
    } else {
        struct stat st;
        rc = 0;
        kb_log(r->ctx, KB_LOG_DEBUG, "read %s%s", path,
               w->written ? " (resuming a partial download)" : "");
        bool sized = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
        if (sized && !w->expected)
            w->expected = (uint64_t)st.st_size;
        /* a resumed prefix longer than the blob cannot be part of it */
        if (sized && w->written > (uint64_t)st.st_size)
            rc = kb_blob_writer_truncate(w);
        if (!rc)
            rc = copy_fd_to_writer(r, fd, path, w);
        close(fd);
    }
    free(path);
    return rc;
}

/* Copy a file into the blob store, checking it still hashes to digest. */
static int store_file_blob(kb_registry *r, const char *digest, const char *src)
{
    char *dest = blob_path(r, digest);
    if (!dest)
        return kb_error_oom(r->ctx);
    int fd = open(src, O_RDONLY | O_CLOEXEC);
    int rc;
    if (fd < 0) {
        rc = io_fail(r->ctx, "open", src, errno);
    } else {
        kb_blob_writer w;
        rc = kb_blob_writer_open(&w, r->ctx, dest, 0, false);
        if (!rc) {
            rc = copy_fd_to_writer(r, fd, src, &w);
            if (!rc)
                rc = kb_blob_writer_commit(&w, digest, src);
            else
                kb_blob_writer_close(&w, false);
        }
        close(fd);
    }
    free(dest);
    return rc;
}

static int layout_blob_put(kb_registry *r, const char *repo, const char *digest, uint64_t size,
                           const char *path, const void *data)
{
    int rc = ensure_layout(r);
    if (rc)
        return rc;
    if (path)
        return store_file_blob(r, digest, path);
    char *dest = blob_path(r, digest);
    if (!dest)
        return kb_error_oom(r->ctx);
    rc = kb_write_file_atomic(r->ctx, dest, data, (size_t)size, 0644);
    free(dest);
    return rc;
}

static int read_manifest_blob(kb_registry_manifest *m, kb_registry *r, const char *digest)
{
    char *path = blob_path(r, digest);
    if (!path)
        return kb_error_oom(r->ctx);
    struct stat st;
    int rc = 0;
    if (stat(path, &st) != 0)
        rc = errno == ENOENT ? kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, path, 0, 0,
                                                 "manifest %s not found in %s", digest, L(r)->root)
                             : io_fail(r->ctx, "stat", path, errno);
    else if ((uint64_t)st.st_size > KB_MANIFEST_MAX)
        rc = kb_error_set_path(r->ctx, KB_ERR_LIMIT, path, 0, 0,
                               "manifest %s is %lld bytes, more than the %zu allowed", digest,
                               (long long)st.st_size, KB_MANIFEST_MAX);
    kb_buf b = KB_BUF_INIT;
    if (!rc)
        rc = kb_read_file(r->ctx, path, &b);
    if (!rc && !kb_buf_grow(&b, 0)) {
        m->len = b.len;
        m->data = kb_buf_detach(&b);
    } else if (!rc) {
        rc = kb_error_oom(r->ctx);
    }
    kb_buf_free(&b);
    if (!rc) {
        char hex[65];
        kb_sha256_hex(m->data, m->len, hex);
        if (strcmp(hex, kb_digest_hex(digest)) != 0)
            rc = kb_error_set_path(r->ctx, KB_ERR_DIGEST, path, 0, 0,
                                   "digest mismatch for manifest %s: expected %s, got sha256:%s",
                                   path, digest, hex);
    }
    free(path);
    return rc;
}

/* The media type an index entry records, else the one the JSON declares. */
static char *manifest_media_type(json_t *entry, const kb_registry_manifest *m)
{
    const char *mt = json_string_value(json_object_get(entry, "mediaType"));
    if (mt)
        return kb_strdup(mt);
    json_t *j = json_loadb(m->data, m->len, 0, NULL);
    mt = json_string_value(json_object_get(j, "mediaType"));
    char *copy = kb_strdup(mt ? mt : KB_MT_OCI_MANIFEST);
    json_decref(j);
    return copy;
}

static int layout_manifest_get(kb_registry_manifest **out, kb_registry *r, const char *repo,
                               const char *reference)
{
    json_t *index = NULL;
    int rc = load_index(&index, r);
    if (rc)
        return rc;
    json_t *entry = NULL;
    const char *digest = reference;
    if (!kb_str_starts(reference, "sha256:")) {
        entry = find_tag(index, repo, reference);
        digest = json_string_value(json_object_get(entry, "digest"));
        if (!entry || !kb_digest_valid(digest)) {
            rc = kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, L(r)->index_path, 0, 0,
                                   "%s:%s not found in %s", repo, reference, L(r)->root);
            json_decref(index);
            return rc;
        }
    } else {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(index, "manifests"), i, e)
        {
            const char *d = json_string_value(json_object_get(e, "digest"));
            if (d && strcmp(d, reference) == 0)
                entry = e;
        }
    }
    kb_registry_manifest *m = calloc(1, sizeof(*m));
    rc = m ? read_manifest_blob(m, r, digest) : kb_error_oom(r->ctx);
    if (!rc && !(m->media_type = manifest_media_type(entry, m)))
        rc = kb_error_oom(r->ctx);
    json_decref(index);
    if (rc) {
        kb_registry_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

static int save_index(kb_registry *r, json_t *index)
{
    char *text = json_dumps(index, JSON_COMPACT);
    if (!text)
        return kb_error_oom(r->ctx);
    int rc = kb_write_file_atomic(r->ctx, L(r)->index_path, text, strlen(text), 0644);
    free(text);
    return rc;
}

/* Drop every entry named "<repo>:<tag>" (other tools may have written several). */
static void remove_tag(json_t *manifests, const char *repo, const char *tag)
{
    size_t rlen = strlen(repo);
    for (size_t i = json_array_size(manifests); i-- > 0;) {
        const char *name = entry_ref_name(json_array_get(manifests, i));
        if (name && strncmp(name, repo, rlen) == 0 && name[rlen] == ':' &&
            strcmp(name + rlen + 1, tag) == 0)
            json_array_remove(manifests, i);
    }
}

/* Point "<repo>:<tag>" at the descriptor, replacing any entry of that name. */
static int tag_manifest(kb_registry *r, const char *repo, const char *tag, const char *media_type,
                        const char *digest, size_t len)
{
    kb_lock lock;
    int rc = kb_lock_acquire(r->ctx, &lock, L(r)->lock_path);
    if (rc)
        return rc;
    json_t *index = NULL;
    rc = load_index(&index, r);
    char *name = kb_asprintf("%s:%s", repo, tag);
    if (!rc && !name)
        rc = kb_error_oom(r->ctx);
    if (!rc) {
        json_t *manifests = json_object_get(index, "manifests");
        remove_tag(manifests, repo, tag);
        json_t *entry =
            json_pack("{s:s, s:s, s:I, s:{s:s}}", "mediaType", media_type, "digest", digest, "size",
                      (json_int_t)len, "annotations", KB_OCI_REF_NAME, name);
        if (!entry || json_array_append_new(manifests, entry) != 0)
            rc = kb_error_oom(r->ctx);
        else
            rc = save_index(r, index);
    }
    free(name);
    json_decref(index);
    kb_lock_release(&lock);
    return rc;
}

static int layout_manifest_put(kb_registry *r, const char *repo, const char *reference,
                               const char *media_type, const void *data, size_t len,
                               const char *digest)
{
    int rc = layout_blob_put(r, repo, digest, len, NULL, data);
    if (rc || kb_str_starts(reference, "sha256:"))
        return rc;
    return tag_manifest(r, repo, reference, media_type, digest, len);
}

static int layout_tags(kb_strv *out, kb_registry *r, const char *repo)
{
    json_t *index = NULL;
    int rc = load_index(&index, r);
    if (rc)
        return rc;
    size_t i, rlen = strlen(repo);
    json_t *entry;
    json_array_foreach(json_object_get(index, "manifests"), i, entry)
    {
        const char *name = entry_ref_name(entry);
        if (!rc && name && strncmp(name, repo, rlen) == 0 && name[rlen] == ':' &&
            !kb_strv_contains(out, name + rlen + 1) && kb_strv_push(out, name + rlen + 1))
            rc = kb_error_oom(r->ctx);
    }
    json_decref(index);
    if (!rc && out->len == 0)
        rc = kb_error_set_path(r->ctx, KB_ERR_NOT_FOUND, L(r)->index_path, 0, 0,
                               "repository %s not found in %s", repo, L(r)->root);
    return rc;
}

static int layout_catalog(kb_strv *out, kb_registry *r)
{
    json_t *index = NULL;
    int rc = load_index(&index, r);
    if (rc)
        return rc;
    size_t i;
    json_t *entry;
    json_array_foreach(json_object_get(index, "manifests"), i, entry)
    {
        const char *name = entry_ref_name(entry);
        const char *colon = name ? strrchr(name, ':') : NULL;
        if (rc || !colon)
            continue; /* other tools' untagged or oddly named entries */
        char *repo = kb_strndup(name, (size_t)(colon - name));
        if (!repo)
            rc = kb_error_oom(r->ctx);
        else if (kb_repo_valid(repo) && !kb_strv_contains(out, repo))
            rc = kb_strv_push_owned(out, repo) ? kb_error_oom(r->ctx) : 0;
        else
            free(repo);
    }
    json_decref(index);
    return rc;
}

static void layout_free(kb_registry *r)
{
    layout *l = L(r);
    if (!l)
        return;
    free(l->root);
    free(l->index_path);
    free(l->lock_path);
    free(l->blob_dir);
    free(l);
    r->impl = NULL;
}

static const kb_registry_ops layout_ops = {
    .kind = "layout",
    .blob_exists = layout_blob_exists,
    .blob_get = layout_blob_get,
    .blob_put = layout_blob_put,
    .manifest_get = layout_manifest_get,
    .manifest_put = layout_manifest_put,
    .tags = layout_tags,
    .catalog = layout_catalog,
    .ping = layout_ping,
    .free = layout_free,
};

int kb_layout_init(kb_registry *r)
{
    layout *l = calloc(1, sizeof(*l));
    if (!l)
        return kb_error_oom(r->ctx);
    r->impl = l;
    r->ops = &layout_ops;
    l->root = kb_strdup(r->url.path);
    l->index_path = kb_path_join(r->url.path, "index.json");
    l->lock_path = kb_path_join(r->url.path, "index.json.lock");
    l->blob_dir = kb_path_join(r->url.path, "blobs/sha256");
    if (!l->root || !l->index_path || !l->lock_path || !l->blob_dir)
        return kb_error_oom(r->ctx);
    return 0;
}
