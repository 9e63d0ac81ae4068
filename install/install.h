/* Internal side of installing: the result struct shared by install, resolve, lock and sync. */
#ifndef KB_INSTALL_INSTALL_H
#define KB_INSTALL_INSTALL_H

#include "cache/store.h"
#include "resolve/resolve.h"
#include "model/target.h"
#include "kbpkg/install.h"
#include "kbpkg/trust.h" /* kb_trust_registry_open: how cache operations reach a registry */
#include "registry/pkgindex.h"

/* Install one exact entry (pinned by a lockfile or chosen by the resolver). */
int kbi_install_entry(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                      const kb_pkg_index *idx, kb_pkg_entry *entry, const char *reason,
                      const char *expect_layer_digest);

/* Download an entry's layer into blobs/ (locked per digest, verified while streaming);
 * *path_out owned. A blob already present is hashed again before it is used (the cache may
 * have been altered since it was downloaded) and fetched again when it does not match. */
int kbi_install_fetch_layer(char **path_out, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                            const char *name, kb_pkg_entry *e);

/* name@version target is installed from the artifact layer_digest and its library is still the
 * one install checked (kbi_cache_open_library); a tampered install is not current. */
bool kbi_install_is_current(kb_cache *cache, const char *name, const char *version,
                            const char *target, const char *layer_digest);

/* Build and install from a source artifact blob already in the cache. */
int kbi_local_build_from_blob(kb_install_result *res, kb_ctx *ctx, kb_cache *cache,
                              const char *name, const char *version, const char *source_blob,
                              const char *target_id, const char *reason, const char *registry);

/* Local builds (install/local_build.c). */
/* Fetch (or find in the cache) the source artifact, build target_id, install it marked as a
 * local build. */
int kbi_local_build_install(kb_install_result *res, kb_ctx *ctx, kb_registry *r, kb_cache *cache,
                            const kb_pkg_index *idx, kb_pkg_entry *source, const char *target_id,
                            const char *reason);

#endif
