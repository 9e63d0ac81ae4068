/* The registry front: open by URL scheme, validate arguments, and dispatch to a transport. */
#include "registry/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

KB_EXTERN int kb_registry_open(kb_registry **out, kb_ctx *ctx, const char *ref)
{
    *out = NULL;
    kb_registry *r = calloc(1, sizeof(*r));
    if (!r)
        return kbi_error_oom(ctx);
    r->ctx = ctx;
    r->chunk_size = KB_UPLOAD_CHUNK_DEFAULT;
    int rc = kbi_registry_url_parse(&r->url, ctx, ref, kbi_config_bool(ctx, "insecure"));
    if (rc) {
        free(r);
        return rc;
    }
    if (!r->url.layout && kbi_config_bool(ctx, "offline")) {
        rc = kbi_error_set_url(ctx, KB_ERR_OFFLINE, r->url.base,
                               "registry %s needs the network but offline mode is on", ref);
        kb_registry_free(r);
        return rc;
    }
    const char *user = getenv("KBPKG_REGISTRY_USER");
    const char *password = getenv("KBPKG_REGISTRY_PASSWORD");
    if (user && *user)
        rc = kb_registry_set_credentials(r, user, password ? password : "");
    if (!rc)
        rc = r->url.layout ? kbi_layout_init(r) : kbi_remote_init(r);
    if (rc) {
        kb_registry_free(r);
        return rc;
    }
    *out = r;
    return 0;
}

KB_EXTERN void kb_registry_free(kb_registry *r)
{
    if (!r)
        return;
    if (r->ops && r->ops->free)
        r->ops->free(r);
    kbi_registry_url_free(&r->url);
    free(r->user);
    if (r->password)
        memset(r->password, 0, strlen(r->password)); /* do not leave it in freed memory */
    free(r->password);
    free(r);
}

KB_EXTERN int kb_registry_set_credentials(kb_registry *r, const char *user, const char *password)
{
    char *u = user ? kbi_strdup(user) : NULL;
    char *p = password ? kbi_strdup(password) : NULL;
    if ((user && !u) || (password && !p)) {
        free(u);
        free(p);
        return kbi_error_oom(r->ctx);
    }
    free(r->user);
    if (r->password)
        memset(r->password, 0, strlen(r->password));
    free(r->password);
    r->user = u;
    r->password = p;
    return 0;
}

const char *kbi_registry_kind(const kb_registry *r)
{
    return r->ops->kind;
}

const char *kbi_registry_ref(const kb_registry *r)
{
    return r->url.ref;
}

void kbi_registry_set_chunk_size(kb_registry *r, uint64_t chunk_size)
{
    r->chunk_size = chunk_size ? chunk_size : KB_UPLOAD_CHUNK_DEFAULT;
}

void kbi_registry_manifest_free(kb_registry_manifest *m)
{
    if (!m)
        return;
    free(m->data);
    free(m->media_type);
    free(m->digest);
    free(m);
}

static int check_repo(kb_registry *r, const char *repo)
{
    if (!kbi_repo_valid(repo))
        return kbi_error_set(r->ctx, KB_ERR_INVALID,
                             "invalid repository name '%s' (lowercase components "
                             "separated by '/')",
                             repo ? repo : "");
    return 0;
}

static int check_digest(kb_registry *r, const char *digest)
{
    if (!kbi_digest_valid(digest))
        return kbi_error_set(r->ctx, KB_ERR_INVALID,
                             "invalid digest '%s' (expected sha256:<64 lowercase hex>)",
                             digest ? digest : "");
    return 0;
}

static int check_reference(kb_registry *r, const char *reference)
{
    if (kbi_str_starts(reference ? reference : "", "sha256:"))
        return check_digest(r, reference);
    if (!kbi_tag_valid(reference))
        return kbi_error_set(r->ctx, KB_ERR_INVALID, "invalid tag '%s'",
                             reference ? reference : "");
    return 0;
}

KB_EXTERN int kb_registry_check(kb_registry *r)
{
    return r->ops->ping(r);
}

int kbi_registry_blob_exists(uint64_t *size_out, kb_registry *r, const char *repo,
                             const char *digest)
{
    uint64_t size = 0;
    int rc = check_repo(r, repo);
    if (!rc)
        rc = check_digest(r, digest);
    if (!rc)
        rc = r->ops->blob_exists(&size, r, repo, digest);
    if (size_out)
        *size_out = rc ? 0 : size;
    return rc;
}

char *kbi_registry_progress_label(const char *repo, const char *digest, const char *what)
{
    return what ? kbi_asprintf("%s %s", repo, what)
                : kbi_asprintf("%s sha256:%.12s", repo, kbi_digest_hex(digest));
}

/* One download into <dest>.part, resuming what it holds; *resumed says whether it held any. */
static int fetch_into_part(bool *resumed, kb_registry *r, const char *repo, const char *digest,
                           const char *dest, uint64_t max_size, const char *what)
{
    kb_blob_writer w;
    int rc = kbi_blob_writer_open(&w, r->ctx, dest, max_size, true);
    if (rc)
        return rc;
    *resumed = w.written > 0;
    w.item = digest;
    char *label = kbi_registry_progress_label(repo, digest, what);
    rc = label ? kbi_blob_writer_track(&w, label, max_size) : kbi_error_oom(r->ctx);
    if (!rc)
        rc = r->ops->blob_get(r, repo, digest, &w);
    if (!rc) {
        rc = kbi_blob_writer_commit(&w, digest, digest);
    } else {
        /* a cut or a cap leaves a valid prefix worth resuming; anything else does not */
        bool resumable = rc == KB_ERR_LIMIT || rc == KB_ERR_NETWORK || rc == KB_ERR_TIMEOUT ||
                         rc == KB_ERR_CANCELLED;
        kbi_blob_writer_close(&w, resumable);
    }
    kbi_blob_writer_report(&w, true, rc); /* the outcome: its cancel request comes too late */
    free(label);
    return rc;
}

int kbi_registry_blob_get_file(kb_registry *r, const char *repo, const char *digest,
                               const char *dest, uint64_t max_size)
{
    return kbi_registry_blob_get_file_for(r, repo, digest, dest, max_size, NULL);
}

int kbi_registry_blob_get_file_for(kb_registry *r, const char *repo, const char *digest,
                                   const char *dest, uint64_t max_size, const char *what)
{
    int rc = check_repo(r, repo);
    if (!rc)
        rc = check_digest(r, digest);
    if (rc)
        return rc;
    bool resumed = false;
    rc = fetch_into_part(&resumed, r, repo, digest, dest, max_size, what);
    if (rc == KB_ERR_DIGEST && resumed) {
        /* the kept prefix was never verified: it may be what went wrong, so fetch it all once
         * more (the mismatch deleted the part) */
        kbi_log(r->ctx, KB_LOG_DEBUG, "%s: resumed download did not verify; fetching it whole",
                digest);
        kb_ctx_clear_error(r->ctx);
        rc = fetch_into_part(&resumed, r, repo, digest, dest, max_size, what);
    }
    return rc;
}

int kbi_registry_blob_get_mem(kb_buf *out, kb_registry *r, const char *repo, const char *digest,
                              size_t max_size)
{
    int rc = check_repo(r, repo);
    if (!rc)
        rc = check_digest(r, digest);
    if (!rc && max_size == 0)
        rc = kbi_error_set(r->ctx, KB_ERR_INVALID, "a size cap is required to read %s into memory",
                           digest);
    if (rc)
        return rc;
    kb_blob_writer w;
    out->len = 0;
    rc = kbi_blob_writer_open_mem(&w, r->ctx, out, max_size);
    if (rc)
        return rc;
    w.item = digest;
    rc = r->ops->blob_get(r, repo, digest, &w);
    if (!rc)
        rc = kbi_blob_writer_commit(&w, digest, digest);
    else
        kbi_blob_writer_close(&w, false);
    if (!rc)
        rc = kbi_buf_grow(out, 0) ? kbi_error_oom(r->ctx) : 0;
    if (rc)
        out->len = 0;
    return rc;
}

static int finish_put(char **digest_out, kb_registry *r, const char *digest, int rc)
{
    if (digest_out)
        *digest_out = NULL;
    if (rc || !digest_out)
        return rc;
    *digest_out = kbi_strdup(digest);
    return *digest_out ? 0 : kbi_error_oom(r->ctx);
}

static int put_blob(char **digest_out, kb_registry *r, const char *repo, const char *digest,
                    uint64_t size, const char *path, const void *data, const char *what)
{
    uint64_t have = 0;
    int rc = r->ops->blob_exists(&have, r, repo, digest);
    if (rc == 0) {
        kbi_log(r->ctx, KB_LOG_DEBUG, "blob %s already in %s", digest, repo);
        return finish_put(digest_out, r, digest, 0);
    }
    if (rc != KB_ERR_NOT_FOUND)
        return rc;
    kb_ctx_clear_error(r->ctx);
    rc = r->ops->blob_put(r, repo, digest, size, path, data, what);
    return finish_put(digest_out, r, digest, rc);
}

int kbi_registry_blob_put_file(char **digest_out, kb_registry *r, const char *repo,
                               const char *path)
{
    return kbi_registry_blob_put_file_for(digest_out, r, repo, path, NULL);
}

int kbi_registry_blob_put_file_for(char **digest_out, kb_registry *r, const char *repo,
                                   const char *path, const char *what)
{
    if (digest_out)
        *digest_out = NULL;
    int rc = check_repo(r, repo);
    if (rc)
        return rc;
    char hex[65], digest[72];
    uint64_t size = 0;
    rc = kbi_sha256_file(r->ctx, path, hex, &size);
    if (rc)
        return rc;
    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    return put_blob(digest_out, r, repo, digest, size, path, NULL, what);
}

int kbi_registry_blob_put_mem(char **digest_out, kb_registry *r, const char *repo, const void *data,
                              size_t len)
{
    if (digest_out)
        *digest_out = NULL;
    int rc = check_repo(r, repo);
    if (rc)
        return rc;
    char hex[65], digest[72];
    kbi_sha256_hex(data, len, hex);
    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    return put_blob(digest_out, r, repo, digest, len, NULL, data ? data : "", NULL);
}

/* A manifest fetched by digest must hash to it; by tag, its digest is computed. */
static int settle_manifest_digest(kb_registry *r, kb_registry_manifest *m, const char *reference)
{
    char hex[65];
    kbi_sha256_hex(m->data, m->len, hex);
    char *computed = kbi_asprintf("sha256:%s", hex);
    if (!computed)
        return kbi_error_oom(r->ctx);
    if (kbi_str_starts(reference, "sha256:") && strcmp(reference, computed) != 0) {
        int rc = kbi_error_set(r->ctx, KB_ERR_DIGEST,
                               "digest mismatch for manifest %s: expected %s, got %s", reference,
                               reference, computed);
        free(computed);
        return rc;
    }
    free(m->digest);
    m->digest = computed;
    return 0;
}

int kbi_registry_manifest_get(kb_registry_manifest **out, kb_registry *r, const char *repo,
                              const char *reference)
{
    *out = NULL;
    int rc = check_repo(r, repo);
    if (!rc)
        rc = check_reference(r, reference);
    kb_registry_manifest *m = NULL;
    if (!rc)
        rc = r->ops->manifest_get(&m, r, repo, reference);
    if (!rc)
        rc = settle_manifest_digest(r, m, reference);
    if (rc) {
        kbi_registry_manifest_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

int kbi_registry_manifest_put(char **digest_out, kb_registry *r, const char *repo,
                              const char *reference, const char *media_type, const void *data,
                              size_t len)
{
    if (digest_out)
        *digest_out = NULL;
    int rc = check_repo(r, repo);
    if (!rc)
        rc = check_reference(r, reference);
    if (rc)
        return rc;
    if (!media_type || !*media_type)
        return kbi_error_set(r->ctx, KB_ERR_INVALID, "manifest for %s:%s has no media type", repo,
                             reference);
    if (len > KB_MANIFEST_MAX)
        return kbi_error_set(r->ctx, KB_ERR_LIMIT,
                             "manifest for %s:%s is %zu bytes; registries refuse more than %zu",
                             repo, reference, len, KB_MANIFEST_MAX);
    char hex[65], digest[72];
    kbi_sha256_hex(data, len, hex);
    snprintf(digest, sizeof(digest), "sha256:%s", hex);
    if (kbi_str_starts(reference, "sha256:") && strcmp(reference, digest) != 0)
        return kbi_error_set(r->ctx, KB_ERR_DIGEST,
                             "manifest pushed as %s but its bytes hash to %s", reference, digest);
    rc = r->ops->manifest_put(r, repo, reference, media_type, data, len, digest);
    return finish_put(digest_out, r, digest, rc);
}

/* Check and hash each manifest of a batch; the digests go to the transport. */
static int check_tag_puts(kb_registry *r, const char *repo, const kb_tag_put *puts, size_t n,
                          char (*digests)[72])
{
    int rc = check_repo(r, repo);
    for (size_t i = 0; !rc && i < n; i++) {
        rc = check_reference(r, puts[i].tag);
        if (!rc && kbi_str_starts(puts[i].tag, "sha256:"))
            rc = kbi_error_set(r->ctx, KB_ERR_INVALID, "%s: '%s' is a digest, not a tag", repo,
                               puts[i].tag);
        if (!rc && puts[i].len > KB_MANIFEST_MAX)
            rc = kbi_error_set(r->ctx, KB_ERR_LIMIT,
                               "manifest for %s:%s is %zu bytes; registries refuse more than %zu",
                               repo, puts[i].tag, puts[i].len, KB_MANIFEST_MAX);
        char hex[65];
        kbi_sha256_hex(puts[i].data, puts[i].len, hex);
        snprintf(digests[i], sizeof(digests[i]), "sha256:%s", hex);
    }
    return rc;
}

int kbi_registry_tags_put(kb_registry *r, const char *repo, const kb_tag_put *puts, size_t n)
{
    if (!r->ops->tags_put) {
        int rc = 0;
        for (size_t i = 0; !rc && i < n; i++)
            rc = kbi_registry_manifest_put(NULL, r, repo, puts[i].tag, puts[i].media_type,
                                           puts[i].data, puts[i].len);
        return rc;
    }
    char(*digests)[72] = calloc(n + 1, sizeof(*digests));
    const char **dv = calloc(n + 1, sizeof(*dv));
    int rc = (!digests || !dv) ? kbi_error_oom(r->ctx) : check_tag_puts(r, repo, puts, n, digests);
    for (size_t i = 0; !rc && i < n; i++) {
        dv[i] = digests[i];
        rc = kbi_registry_manifest_put(NULL, r, repo, digests[i], puts[i].media_type, puts[i].data,
                                       puts[i].len);
    }
    if (!rc)
        rc = r->ops->tags_put(r, repo, puts, dv, n);
    free(digests);
    free(dv);
    return rc;
}

int kbi_registry_tags(kb_strv *out, kb_registry *r, const char *repo)
{
    int rc = check_repo(r, repo);
    if (!rc)
        rc = r->ops->tags(out, r, repo);
    if (!rc)
        kbi_strv_sort(out);
    return rc;
}

int kbi_registry_catalog(kb_strv *out, kb_registry *r)
{
    int rc = r->ops->catalog(out, r);
    if (!rc)
        kbi_strv_sort(out);
    return rc;
}

static int strv_to_list(char ***out, size_t *count_out, kb_strv *v)
{
    *out = v->items;
    *count_out = v->len;
    v->items = NULL;
    v->len = v->cap = 0;
    return 0;
}

KB_EXTERN int kb_registry_list_tags(char ***out, size_t *count_out, kb_registry *r,
                                    const char *repository)
{
    *out = NULL;
    *count_out = 0;
    kb_strv v = KB_STRV_INIT;
    int rc = kbi_registry_tags(&v, r, repository);
    if (rc) {
        kbi_strv_free(&v);
        return rc;
    }
    return strv_to_list(out, count_out, &v);
}

KB_EXTERN int kb_registry_list_repositories(char ***out, size_t *count_out, kb_registry *r)
{
    *out = NULL;
    *count_out = 0;
    kb_strv v = KB_STRV_INIT;
    int rc = kbi_registry_catalog(&v, r);
    if (rc) {
        kbi_strv_free(&v);
        return rc;
    }
    return strv_to_list(out, count_out, &v);
}
