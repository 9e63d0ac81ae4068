/* Internal side of installing: the result struct shared by install, resolve, lock and sync. */
#ifndef KB_CACHE_INSTALL_H
#define KB_CACHE_INSTALL_H

#include "cache/store.h"
#include "core/target.h"
#include "kbpkg/install.h"
#include "kbpkg/trust.h" /* kb_trust_registry_open: how cache operations reach a registry */
#include "registry/pkgindex.h"

typedef struct kb_candidate {
    char *target;
    kb_compat compat;
    bool taken;
    bool local_build; /* "build from source for <target>" */
} kb_candidate;

struct kb_install_result {
    char *name;
    char *version;
    char *target;
    char *reason;
    char *dir;
    char *index_digest;
    char *artifact_digest;
    bool local_build;
    bool was_installed;
    kb_trust_admission admission; /* what admitted the index: goes into the install record */
    kb_candidate *candidates;
    size_t candidate_count;
};

/* Install one exact entry (pinned by a lockfile or chosen by the resolver). */
int kb_install_entry(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                     const kb_pkg_index *idx, kb_pkg_entry *entry, const char *reason,
                     const char *expect_layer_digest);

const char *kb_fit_name(kb_fit fit);

/* name@version target is installed from the artifact layer_digest and its library is still the
 * one install checked (kb_cache_open_library); a tampered install is not current. */
bool kb_install_is_current(kb_cache *cache, const char *name, const char *version,
                           const char *target, const char *layer_digest);

/* Download an entry's layer into blobs/ (locked per digest, verified while streaming);
 * *path_out owned. A blob already present is hashed again before it is used (the cache may
 * have been altered since it was downloaded) and fetched again when it does not match. */
int kb_install_fetch_layer(char **path_out, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                           const char *name, kb_pkg_entry *e);

/* Fetched source artifacts (cache/sources.c): sources/<org>/<name>/<version>.json. */
int kb_sources_record(kb_cache *cache, const char *name, const char *version,
                      const char *source_digest, const char *index_digest, const char *registry);
/* The highest recorded version of name matching constraint; *version_out and *digest_out
 * owned. KB_ERR_NOT_FOUND naming what is there. */
int kb_sources_find(char **version_out, char **digest_out, kb_cache *cache, const char *name,
                    const char *constraint_text);
/* Build and install from a source artifact blob already in the cache. */
int kb_local_build_from_blob(kb_install_result *res, kb_ctx *ctx, kb_cache *cache, const char *name,
                             const char *version, const char *source_blob, const char *target_id,
                             const char *reason, const char *registry);

/* Local builds (cache/local_build.c). The target this host would build for itself (its best
 * GPU with a toolchain, else its CPU); KB_ERR_TOOLCHAIN with why when nothing can build. */
int kb_local_build_target(char **target_out, char *why, size_t why_size, kb_ctx *ctx,
                          const kb_host *host);
/* Fetch (or find in the cache) the source artifact, build target_id, install it marked as a
 * local build. */
int kb_local_build_install(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                           const kb_pkg_index *idx, kb_pkg_entry *source, const char *target_id,
                           const char *reason);

#endif
