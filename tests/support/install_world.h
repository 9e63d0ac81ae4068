/* A cache, a registry and a published CPU package for crash, concurrency and disk-full tests. */
#ifndef KBT_INSTALL_WORLD_H
#define KBT_INSTALL_WORLD_H

#include "kbtest.h"
#include "registry_harness.h"

#include <stddef.h>
#include <sys/types.h>

typedef struct kbt_world {
    char *tmp;
    char *hub;       /* layout registry folder */
    char *cache;     /* KBPKG_CACHE */
    char *artifact;  /* the built CPU artifact (lowest CPU level: fits any x86_64 host) */
    char *target;    /* its target id */
    char *env_cache; /* "KBPKG_CACHE=..." */
    char *env_reg;   /* "KBPKG_REGISTRY=..." (the hub unless kbt_world_use_registry) */
    char *env_cfg;   /* "KBPKG_CONFIG_DIR=..." */
} kbt_world;

/* Temp folders and the fixture tests/data/builder/vadd built once for its CPU targets. */
void kbt_world_init(kbt_world *w);
void kbt_world_free(kbt_world *w);
/* Point the CLI's KBPKG_REGISTRY at url instead of the hub. */
void kbt_world_use_registry(kbt_world *w, const char *url);

/* Repack the built artifact as name@version (its kbpkg.json rewritten), with pad_bytes of
 * base64 random text in include/pad.bin (the blob is about 3/4 of that), and publish it to registry
 * (a folder or URL). Returns the layer digest "sha256:<hex>" (owned). */
char *kbt_world_publish(kbt_world *w, const char *registry, const char *name, const char *version,
                        size_t pad_bytes);

/* Run the CLI with the world's env plus extra ("K=V", NULL-terminated, may be NULL). */
kbt_run kbt_world_kbpkg(kbt_world *w, const char *const *extra_env, const char *const *args);
/* Start the CLI in the background (stdout/stderr to /dev/null); returns its pid. */
pid_t kbt_world_spawn(kbt_world *w, const char *const *extra_env, const char *const *args);
/* waitpid and decode: the exit code, or 128 + signal. */
int kbt_world_wait(pid_t pid);

/* The installs the library lists, as "name@version target digest" lines sorted (owned).
 * Asserts that every listed install has its record and its library and lives in its final
 * folder (no .kbpkg-extract-* or .removing.* folder is ever listed). */
char *kbt_world_installed(kbt_world *w);
/* Leftover temporary files under the cache: .kbpkg-extract-*, *.removing.*, *.part, *.tmp*. */
size_t kbt_world_leftovers(kbt_world *w);
/* Lines of path that contain needle (e.g. GETs of a blob in a registry access log). */
size_t kbt_count_lines(const char *path, const char *needle);

/* Restart a started docker-registry with its access log on: registry.log then holds one line
 * per request ("GET /v2/... HTTP/1.1" 200 ...). */
void kbt_registry_enable_access_log(kbt_registry *reg);

#endif
