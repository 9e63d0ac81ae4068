/* kbpkg's package index on OCI: tag = version -> image index of per-target artifact manifests
 * and one source manifest (DESIGN.md "Registry = OCI"). */
#ifndef KB_REGISTRY_PKGINDEX_H
#define KB_REGISTRY_PKGINDEX_H

#include "core/internal.h"
#include "registry/registry.h"

#define KB_MT_KBPKG_ARTIFACT "application/vnd.kbpkg.artifact.v1"
#define KB_MT_KBPKG_SOURCE "application/vnd.kbpkg.source.v1"
#define KB_MT_KBPKG_CONFIG "application/vnd.kbpkg.config.v1+json"
#define KB_MT_KBPKG_LAYER "application/vnd.kbpkg.layer.v1.tar+zstd"
#define KB_ANN_TARGET "dev.kbpkg.target"
#define KB_ANN_SIGNATURES "dev.kbpkg.signatures" /* on the index: typed exports, JSON */
/* On the source's descriptor and the index: the targets the package declares, in the grammar of
 * kbi_declared_next (model/target.h); the resolver builds only those locally. */
#define KB_ANN_DECLARED "dev.kbpkg.declared-targets"
#define KB_ANN_BACKEND "dev.kbpkg.backend"
#define KB_ANN_ARCH "dev.kbpkg.arch"
#define KB_ANN_RUNTIME "dev.kbpkg.runtime"
#define KB_ANN_BUILD_KEY "dev.kbpkg.build-key"
/* "artifact" | "source": skopeo copy --all drops artifactType from index entries, this
 * annotation survives such a mirror. */
#define KB_ANN_KIND "dev.kbpkg.kind"
#define KB_SOURCE_TARGET "source"

/* Sizes a registry may announce for kbpkg's descriptors; anything else is refused when parsed,
 * since layer_size caps the download. A per-target manifest is at most what registries accept
 * (KB_MANIFEST_MAX); a config is kbpkg.json (publish refuses one over 1 MiB); a layer is a
 * .tar.zst whose content extraction caps at 4 GiB (archive/extract.h), so twice that is already
 * more than any installable artifact. */
#define KB_PKG_CONFIG_SIZE_MAX ((uint64_t)1024 * 1024)
#define KB_PKG_LAYER_SIZE_MAX ((uint64_t)8 << 30)

/* One entry of a package index: a target's artifact, or the source. */
typedef struct kb_pkg_entry {
    char *target;          /* target id, or "source" */
    char *manifest_digest; /* the per-target manifest */
    uint64_t manifest_size;
    char *build_key; /* may be NULL */
    bool is_source;
    /* Filled by kbi_pkg_entry_resolve (one GET of the per-target manifest): */
    char *layer_digest;
    uint64_t layer_size;
    char *config_digest;
    uint64_t config_size;
} kb_pkg_entry;

typedef struct kb_pkg_index {
    char *name;
    char *version;
    char *summary;
    char *signatures; /* dev.kbpkg.signatures: {"export": {returns, args}} as JSON, or NULL */
    char *declared;   /* dev.kbpkg.declared-targets, or NULL (published before it existed) */
    char *digest;     /* of the index itself */
    kb_pkg_entry *entries;
    size_t count;
} kb_pkg_index;

/* Parse an index's bytes. Entries that are not kbpkg artifacts (other tools' manifests,
 * unknown media types) are skipped, not errors; a kbpkg entry without a valid size (an integer,
 * 1 to KB_MANIFEST_MAX) is KB_ERR_PARSE naming what, the entry and its digest. */
int kbi_pkg_index_parse(kb_pkg_index **out, kb_ctx *ctx, const char *what, const char *data,
                        size_t len);
void kbi_pkg_index_free(kb_pkg_index *idx);
const kb_pkg_entry *kbi_pkg_index_find(const kb_pkg_index *idx, const char *target);

/* Versions of name in the registry: tags that parse as semver, highest first. */
int kbi_pkg_versions(kb_strv *out, kb_registry *r, const char *name);
/* The highest version matching constraint_text ("*" for any). KB_ERR_NOT_FOUND naming what the
 * registry has when none matches. */
int kbi_pkg_pick_version(char **out, kb_registry *r, const char *name, const char *constraint_text);
/* GET the index of name@version (verifying its digest when one is given). */
int kbi_pkg_index_fetch(kb_pkg_index **out, kb_registry *r, const char *name, const char *version,
                        const char *expect_digest);
/* GET an entry's manifest by digest and fill its layer/config descriptors. A layer size outside
 * 1..KB_PKG_LAYER_SIZE_MAX or a config size over KB_PKG_CONFIG_SIZE_MAX (or not an integer) is
 * KB_ERR_PARSE naming the registry, package, target and digests. */
int kbi_pkg_entry_resolve(kb_pkg_entry *e, kb_registry *r, const char *name);

/* Publishing. An artifact file is <org>-<name>-<version>-<target>.tar.zst holding kbpkg.json. */
typedef struct kb_publish_item {
    const char *path;        /* the .tar.zst */
    const char *target;      /* target id or "source" */
    const char *build_key;   /* may be NULL */
    const char *config_json; /* the kbpkg.json bytes (NUL-terminated) */
} kb_publish_item;

typedef enum kb_publish_status {
    KB_PUBLISH_NEW = 0,      /* pushed */
    KB_PUBLISH_SAME = 1,     /* the registry already had these exact bytes */
    KB_PUBLISH_REPLACED = 2, /* different bytes replaced (force) */
} kb_publish_status;

/* Push items for name@version, stage them and merge them into the version's index (creating
 * it), `latest` following the highest version: kbi_pkg_merge with these items as our own, so
 * concurrent publishers of one version lose nothing. Different bytes for a target that already
 * exists are refused (KB_ERR_EXISTS naming the target and both digests; nothing pushed) unless
 * force. statuses (may be NULL) receives one status per item. */
int kbi_pkg_publish(kb_registry *r, const char *name, const char *version, const char *summary,
                    const kb_publish_item *items, size_t count, bool force,
                    kb_publish_status *statuses, char **index_digest_out);

/* What one merge did. */
typedef struct kb_pkg_merge_result {
    char *index_digest;    /* the version's index once the merge saw it whole */
    bool written;          /* this merge wrote the version's index (else it already held all) */
    unsigned rounds;       /* reads of index and stages, the last one finding nothing to write */
    unsigned empty_rounds; /* rounds that found neither an index nor a stage */
    kb_strv conflicts; /* a line per staged target whose bytes differ from the index's: skipped */
} kb_pkg_merge_result;
void kbi_pkg_merge_result_free(kb_pkg_merge_result *m);

/* The staging tag of target of version ("kbstage-<version>--<target>"); target NULL gives the
 * prefix every staging tag of version starts with. KB_ERR_INVALID when it is not a valid tag. */
int kbi_pkg_stage_tag(char *out, size_t size, const char *version, const char *target);

/* Push items (blobs, manifests by digest) and point each one's staging tag at it; never the
 * version tag or `latest`. Items the index already holds with these bytes are not staged
 * (statuses KB_PUBLISH_SAME); different bytes are refused as kbi_pkg_publish does. */
int kbi_pkg_stage(kb_registry *r, const char *name, const char *version, const char *summary,
                  const kb_publish_item *items, size_t count, kb_publish_status *statuses);

/* The union of name@version's index and its staged targets, written only when it changed, then
 * `latest` pointed at the highest version; read again and repeated until a round finds nothing
 * to write. Correct with any number of concurrent merges and no lock. A staged target whose
 * bytes differ from the index's is a conflict: skipped, listed in out->conflicts, not an error. */
int kbi_pkg_merge(kb_pkg_merge_result *out, kb_registry *r, const char *name, const char *version);

#endif
