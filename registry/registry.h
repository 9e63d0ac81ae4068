/* Internal registry API: one interface over OCI registries (HTTP) and OCI layout folders. */
#ifndef KB_REGISTRY_REGISTRY_H
#define KB_REGISTRY_REGISTRY_H

#include "core/internal.h"
#include "model/ref.h"
#include "kbpkg/registry.h"

#include <stdbool.h>
#include <stdint.h>

/* OCI and Docker media types kbpkg reads and writes. */
#define KB_MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define KB_MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define KB_MT_OCI_EMPTY "application/vnd.oci.empty.v1+json"
#define KB_MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define KB_MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define KB_OCI_REF_NAME "org.opencontainers.image.ref.name"

/* Largest manifest or index accepted, as docker-registry 2.8 does. */
#define KB_MANIFEST_MAX ((size_t)4 * 1024 * 1024)
/* Blobs larger than this are uploaded in PATCH chunks of this size. */
#define KB_UPLOAD_CHUNK_DEFAULT ((uint64_t)8 * 1024 * 1024)

/*
 * Repositories are "org/name"; a remote registry opened as oci://host/ns
 * prefixes its namespace ("ns/org/name") itself, so callers never see it.
 */

/* A manifest or index as the registry holds it: exact bytes, type and digest. */
typedef struct kb_registry_manifest {
    char *data; /* NUL-terminated for convenience; len bytes */
    size_t len;
    char *media_type; /* from Content-Type / the layout index / the JSON */
    char *digest;     /* "sha256:<hex>" of data */
} kb_registry_manifest;

void kbi_registry_manifest_free(kb_registry_manifest *m);

/* Which transport serves r ("layout" or "remote") and its base ("/path", "http://h:p"). */
const char *kbi_registry_kind(const kb_registry *r);
/* The reference that reopens r (kb_registry_open): the layout folder, or "https://host/ns"
 * with the namespace; what install and source records keep, and what messages name. */
const char *kbi_registry_ref(const kb_registry *r);

/* Is the blob there? KB_ERR_NOT_FOUND (error set, naming the URL/path) when not. */
int kbi_registry_blob_exists(uint64_t *size_out, kb_registry *r, const char *repo,
                             const char *digest);

/*
 * Download a blob to dest: stream into "<dest>.part" while hashing, resume
 * a partial .part with Range, retry transient errors, and rename onto dest
 * only when the sha256 matches digest. max_size caps the bytes (0: no cap);
 * when exceeded the .part prefix is kept for a later resume and
 * KB_ERR_LIMIT returned. A mismatch deletes the .part: KB_ERR_DIGEST.
 * Two processes must not download to the same dest at once (lock per blob).
 */
int kbi_registry_blob_get_file(kb_registry *r, const char *repo, const char *digest,
                               const char *dest, uint64_t max_size);
/* How progress names a blob transfer: "<repo> <what>" (the target the blob holds), or
 * "<repo> sha256:<12 hex>" when what is NULL. Owned by the caller; NULL when out of memory. */
char *kbi_registry_progress_label(const char *repo, const char *digest, const char *what);
/* The same as kbi_registry_blob_get_file; its progress is named by
 * kbi_registry_progress_label(repo, digest, what). */
int kbi_registry_blob_get_file_for(kb_registry *r, const char *repo, const char *digest,
                                   const char *dest, uint64_t max_size, const char *what);
/* Fetch a small blob into memory (verified); max_size must be given. */
int kbi_registry_blob_get_mem(kb_buf *out, kb_registry *r, const char *repo, const char *digest,
                              size_t max_size);

/* Upload; skipped when the blob already exists. *digest_out ("sha256:...") may be NULL. */
int kbi_registry_blob_put_file(char **digest_out, kb_registry *r, const char *repo,
                               const char *path);
/* The same; its progress names the upload "<repo> <what>" (the target the blob holds) rather
 * than "<repo> sha256:<12 hex>" (what = NULL). */
int kbi_registry_blob_put_file_for(char **digest_out, kb_registry *r, const char *repo,
                                   const char *path, const char *what);
int kbi_registry_blob_put_mem(char **digest_out, kb_registry *r, const char *repo, const void *data,
                              size_t len);
/* Blobs above this size use the chunked (PATCH) upload; 0 restores the default. */
void kbi_registry_set_chunk_size(kb_registry *r, uint64_t chunk_size);

/* Fetch by tag or "sha256:..." digest; a digest reference is verified. */
int kbi_registry_manifest_get(kb_registry_manifest **out, kb_registry *r, const char *repo,
                              const char *reference);
/* Store under a tag or its digest. *digest_out may be NULL. */
int kbi_registry_manifest_put(char **digest_out, kb_registry *r, const char *repo,
                              const char *reference, const char *media_type, const void *data,
                              size_t len);

/* One tag to point at a manifest, for kbi_registry_tags_put. */
typedef struct kb_tag_put {
    const char *tag;
    const char *media_type;
    const char *data;
    size_t len;
} kb_tag_put;

/* Store each manifest by digest, then point each tag at it, in the order given. A layout folder
 * does it in one read-modify-write of index.json (so a publish costs one, whatever the hub's
 * size); a remote registry with one PUT per tag. Either way a tag is written only after the tags
 * before it: callers order a batch so that a crash between two PUTs loses nothing. */
int kbi_registry_tags_put(kb_registry *r, const char *repo, const kb_tag_put *puts, size_t n);

/* Tags of repo (sorted); repositories ("org/name", sorted). */
int kbi_registry_tags(kb_strv *out, kb_registry *r, const char *repo);
int kbi_registry_catalog(kb_strv *out, kb_registry *r);

/* ---- helpers shared by the transports (registry/util.c) ---- */

/* "sha256:<64 hex>" -> points at the hex; NULL when malformed. */
const char *kbi_digest_hex(const char *digest);
bool kbi_digest_valid(const char *digest);
/* A tag per the distribution spec: [A-Za-z0-9_][A-Za-z0-9._-]{0,127}. */
bool kbi_tag_valid(const char *tag);

/* The parsed registry reference (kb_registry_open). */
typedef struct kb_registry_url {
    bool layout;     /* a folder */
    char *path;      /* layout: the folder */
    char *base;      /* remote: "https://host:port" */
    char *host;      /* remote: "host" or "host:port" */
    char *namespace; /* remote: "" or "ns" (no slashes at the ends) */
    char *ref;       /* what reopens it: the folder, or base[/namespace] */
} kb_registry_url;
/* GET url (http, https, file) into dest, which appears only when its sha256 matches:
 * KB_ERR_DIGEST naming both digests otherwise, KB_ERR_OFFLINE when offline is set. */
int kbi_url_fetch_verified(kb_ctx *ctx, const char *url, const char *sha256, const char *dest);

int kbi_registry_url_parse(kb_registry_url *out, kb_ctx *ctx, const char *ref, bool insecure);
void kbi_registry_url_free(kb_registry_url *u);
bool kbi_host_is_loopback(const char *host);

/* WWW-Authenticate: Bearer realm="...",service="...",scope="..." */
typedef struct kb_auth_challenge {
    char *scheme; /* "Bearer", "Basic" */
    char *realm;
    char *service;
    char *scope;
} kb_auth_challenge;
int kbi_auth_challenge_parse(kb_auth_challenge *out, const char *header);
void kbi_auth_challenge_free(kb_auth_challenge *c);

/* OCI error body -> "CODE: message" of the first error; NULL when not one. Owned. */
char *kbi_oci_error_summary(const char *body, size_t len);

/* Verifying writer: a .part file hashed as it grows (registry/blobfile.c). */
typedef struct kb_blob_writer {
    kb_ctx *ctx;
    char *dest;
    char *part;
    int fd;
    struct kb_sha256 *hash;
    uint64_t written; /* bytes in .part, including a resumed prefix */
    uint64_t max_size;
    bool over_limit;
    const char *item;       /* progress item (the digest) */
    int error;              /* first write error */
    kb_buf *mem;            /* set: write into memory instead of a file */
    uint64_t writeback_off; /* data before this offset was handed to the disk (a hint) */
    /* progress: reported on every write when job is set (kbi_blob_writer_track) */
    uint64_t job;
    const char *label; /* borrowed: what the user sees, "org/name sha256:<12 hex>" */
    uint64_t expected; /* the blob's size when known (the index's, or the transport's) */
} kb_blob_writer;
int kbi_blob_writer_open_mem(kb_blob_writer *w, kb_ctx *ctx, kb_buf *mem, uint64_t max_size);
/*
 * resume: open <dest>.part, hash what it holds and append (callers serialize
 * downloads to one dest: the cache locks per blob). Otherwise a private
 * <dest>.tmp-XXXXXX, so concurrent writers of the same blob never collide.
 */
int kbi_blob_writer_open(kb_blob_writer *w, kb_ctx *ctx, const char *dest, uint64_t max_size,
                         bool resume);
/* Report this download's progress as a new job of w->ctx named label (borrowed: it must
 * outlive the writer's last report); reports the start at once. Returns KB_ERR_CANCELLED
 * when the callback cancels. */
int kbi_blob_writer_track(kb_blob_writer *w, const char *label, uint64_t expected);
/* Report where a tracked download stands (no-op when untracked); finished with status. Valid
 * after commit or close too: they keep written, job and label. */
int kbi_blob_writer_report(kb_blob_writer *w, bool finished, int status);
/* Start over (the server ignored the Range). */
int kbi_blob_writer_truncate(kb_blob_writer *w);
/* Returns 0, KB_ERR_LIMIT (the part holds exactly max_size bytes), or an IO error. */
int kbi_blob_writer_write(kb_blob_writer *w, const void *data, size_t len);
/* Verify against digest; rename into place, or delete the part on mismatch. */
int kbi_blob_writer_commit(kb_blob_writer *w, const char *digest, const char *what);
/* Close; keep_part: leave the .part for a resume, else delete it. */
void kbi_blob_writer_close(kb_blob_writer *w, bool keep_part);

/* ---- transports ---- */
typedef struct kb_registry_ops {
    const char *kind;
    int (*blob_exists)(uint64_t *size_out, kb_registry *r, const char *repo, const char *digest);
    int (*blob_get)(kb_registry *r, const char *repo, const char *digest, kb_blob_writer *w);
    /* exactly one of path / data is set; digest and size already computed */
    /* what: how progress names the upload (see kbi_registry_blob_put_file_for); may be NULL */
    int (*blob_put)(kb_registry *r, const char *repo, const char *digest, uint64_t size,
                    const char *path, const void *data, const char *what);
    int (*manifest_get)(kb_registry_manifest **out, kb_registry *r, const char *repo,
                        const char *reference);
    int (*manifest_put)(kb_registry *r, const char *repo, const char *reference,
                        const char *media_type, const void *data, size_t len, const char *digest);
    /* optional: every tag of the batch at once (digests[i] computed for puts[i]); the manifests
     * themselves are already stored */
    int (*tags_put)(kb_registry *r, const char *repo, const kb_tag_put *puts,
                    const char *const *digests, size_t n);
    int (*tags)(kb_strv *out, kb_registry *r, const char *repo);
    int (*catalog)(kb_strv *out, kb_registry *r);
    int (*ping)(kb_registry *r);
    void (*free)(kb_registry *r);
} kb_registry_ops;

struct kb_registry {
    kb_ctx *ctx;
    const kb_registry_ops *ops;
    kb_registry_url url;
    char *user;
    char *password;
    uint64_t chunk_size;
    void *impl; /* transport state */
};

int kbi_layout_init(kb_registry *r);
int kbi_remote_init(kb_registry *r);

#endif
