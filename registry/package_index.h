/* kbpkg package indexes on OCI: one image index per version, one artifact manifest per target. */
#ifndef KB_REGISTRY_PACKAGE_INDEX_H
#define KB_REGISTRY_PACKAGE_INDEX_H

#include "registry/registry.h"

#define KB_ARTIFACT_TYPE "application/vnd.kbpkg.artifact.v1"
#define KB_SOURCE_TYPE "application/vnd.kbpkg.source.v1"
#define KB_MT_KBPKG_CONFIG "application/vnd.kbpkg.config.v1+json"
#define KB_MT_KBPKG_LAYER "application/vnd.kbpkg.layer.v1.tar+zstd"
#define KB_ANN_KIND                                                                                \
    "dev.kbpkg.kind" /* "artifact" | "source": survives tools that drop artifactType */
#define KB_ANN_TARGET "dev.kbpkg.target"
#define KB_ANN_BACKEND "dev.kbpkg.backend"
#define KB_ANN_ARCH "dev.kbpkg.arch"
#define KB_ANN_RUNTIME "dev.kbpkg.runtime"
#define KB_ANN_BUILD_KEY "dev.kbpkg.build-key"
#define KB_ANN_VERSION "dev.kbpkg.version"

/* One artifact to publish. */
typedef struct kb_package_artifact {
    const char *target;  /* target id; NULL: the source artifact */
    const char *backend; /* annotations; NULL ones are left out */
    const char *arch;
    const char *runtime;
    const char *build_key;
    const void *config; /* kbpkg.json bytes; NULL: the empty config */
    size_t config_len;
    const char *archive_path; /* the .tar.zst */
} kb_package_artifact;

/*
 * Push blobs, a manifest per artifact (children first: registries refuse an
 * index before them), the index tagged <version>, and point `latest` at the
 * highest release version (pre-releases only when there is no release).
 */
int kb_package_push(char **index_digest_out, kb_registry *r, const char *package,
                    const char *version, const kb_package_artifact *artifacts, size_t count);

typedef struct kb_package_entry {
    bool is_source;
    char *target; /* NULL for the source */
    char *backend;
    char *arch;
    char *runtime;
    char *build_key;
    char *manifest_digest;
    uint64_t manifest_size;
} kb_package_entry;

typedef struct kb_package_index {
    char *package;
    char *reference; /* the tag or digest it was read by */
    char *digest;    /* the index's digest */
    kb_package_entry *entries;
    size_t count;
} kb_package_index;

/* Read the index of a version (or tag, or index digest): one GET. */
int kb_package_index_get(kb_package_index **out, kb_registry *r, const char *package,
                         const char *reference);
void kb_package_index_free(kb_package_index *ix);
/* The source entry, or the entry of target; NULL when absent. Borrowed. */
const kb_package_entry *kb_package_index_find(const kb_package_index *ix, const char *target);

/* Download an entry's archive to dest (verified, resumable; max_size 0: the manifest's size). */
int kb_package_fetch(kb_registry *r, const char *package, const kb_package_entry *e,
                     const char *dest, uint64_t max_size);

/* Tags that are semantic versions, oldest first. */
int kb_package_versions(kb_strv *out, kb_registry *r, const char *package);

#endif
