/* Internal side of publishing: artifacts read back from disk, the signing hook, shared by
 * publish (publish/publish.c) and the farm (farm/farm.c). */
#ifndef KB_PUBLISH_PUBLISH_H
#define KB_PUBLISH_PUBLISH_H

#include "builder/builder.h"
#include "kbpkg/publish.h"
#include "registry/pkgindex.h"

/* One file ready for kbi_pkg_publish, with what its kbpkg.json says. */
typedef struct kb_pub_artifact {
    char *path;
    char *target;      /* target id or "source" */
    char *build_key;   /* NULL for the source */
    char *config_json; /* the config blob: kbpkg.json, or the source's small record */
    char *source_digest;
} kb_pub_artifact;

void kbi_pub_artifact_clear(kb_pub_artifact *a);

/* Read kbpkg.json of a built artifact and check it is name@version target. */
int kbi_pub_artifact_load(kb_pub_artifact *a, kb_ctx *ctx, const char *path, const char *name,
                          const char *version, const char *target);
/* Write <org>-<name>-<version>-source.tar.zst into out_dir (reproducible bytes) and describe it. */
int kbi_pub_source_artifact(kb_pub_artifact *a, kb_ctx *ctx, const kb_manifest *m,
                            const char *version, const char *source_digest, const char *out_dir);

/*
 * Signing hook: called once per publish (and per farmed package) right after the index of
 * name@version was written with digest index_digest, before anything is reported as
 * published. Today it signs nothing and returns 0; the trust module fills it in (the DESIGN's
 * `sha256-<index digest>.sig` tag). A non-zero return fails the publish with that error.
 */
int kbi_publish_sign_index(kb_ctx *ctx, kb_registry *r, const char *name, const char *version,
                           const char *index_digest);

#endif
