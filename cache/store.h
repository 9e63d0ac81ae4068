/* The local cache: blob store, installed packages and their records (cache/store.c). */
#ifndef KB_CACHE_STORE_H
#define KB_CACHE_STORE_H

#include "core/internal.h"
#include "kbpkg/cache.h"
#include "model/admission.h"

/* Layout under cache.dir:
 *   blobs/sha256/<hex>                          downloaded blobs, verified
 *   pkgs/<org>/<name>/<version>/<target>/       installed artifacts (+ kbpkg-install.json)
 *   pkgs/.generation                            grows a byte per install/uninstall (below)
 *   builds/                                     local builds from source
 *   locks/                                      flock files, per blob and per install
 */
typedef struct kb_cache {
    kb_ctx *ctx;
    char *root;
} kb_cache;

int kbi_cache_open(kb_cache **out, kb_ctx *ctx);
void kbi_cache_close(kb_cache *c);

char *kbi_cache_blob_path(const kb_cache *c, const char *digest);
char *kbi_cache_pkg_dir(const kb_cache *c, const char *name, const char *version,
                        const char *target);
/* A lock file under locks/ for the given key (a digest or name@version/target). */
int kbi_cache_lock(kb_cache *c, kb_lock *lock, const char *kind, const char *key);
/* locks/cache.lock held shared by every process that may leave temporary files in the cache
 * (.part downloads, .kbpkg-extract-* folders, .removing.* folders) for as long as it may; gc
 * holds it exclusive, so every such file gc sees belongs to a process that died. */
int kbi_cache_hold(kb_cache *c, kb_lock *lock);

/* Test hook, compiled only into builds with the test suites (KBPKG_TESTS=ON defines
 * KBPKG_TEST_HOOKS; a release build has no such knob): when the environment variable
 * KBPKG_TEST_PAUSE_AT lists phase (comma-separated phase names, or "all"), sleep
 * KB_TEST_PAUSE_MS there so a crash test can land a SIGKILL in it. Phases: download, extract,
 * record, rename. */
#ifdef KBPKG_TEST_HOOKS
#define KB_TEST_PAUSE_MS 100
void kbi_cache_test_pause(const char *phase);
#else
#define kbi_cache_test_pause(phase) ((void)(phase))
#endif

/*
 * pkgs/.generation: one byte is appended (O_APPEND, no lock needed) after every change of what
 * is installed, once the rename that made the change is done. A process that resolved a ref
 * remembers the file's identity and size as they were before it listed the installs; one stat
 * then tells whether that answer may be stale (kb_kernel_open's per-ctx memo). Never truncated:
 * a size that went back could equal an old one. A byte per install or uninstall.
 */
#define KB_CACHE_GENERATION "pkgs/.generation"
typedef struct kb_cache_gen {
    uint64_t dev, ino, size;
    bool exists;
} kb_cache_gen;
void kbi_cache_bump_generation(kb_cache *c);
/* The state of the generation file at gen_path (absent: exists false). */
void kbi_cache_generation_read(kb_cache_gen *out, const char *gen_path);
bool kbi_cache_generation_equal(const kb_cache_gen *a, const kb_cache_gen *b);

/* Where an installed package came from; written as kbpkg-install.json beside it. */
typedef struct kb_install_info {
    const char *name;
    const char *version;
    const char *target;
    const char *artifact_digest; /* sha256:<hex> of the .tar.zst */
    const char *index_digest;    /* sha256:<hex> of the package index, or NULL */
    const char *registry;        /* where it came from, or NULL */
    const char *reason;          /* why this target was chosen */
    bool local_build;            /* built on this machine from source */
    /* What admitted the index (kb_trust_admission): kept in the record so that the policy in
     * force can be applied again at load and verify can check the signature offline. */
    const kb_trust_admission *admission; /* NULL: not checked */
} kb_install_info;

#define KB_INSTALL_RECORD "kbpkg-install.json"

/* Extract artifact_path into pkgs/<name>/<version>/<target>/ atomically (temp folder, fsync,
 * rename or exchange). Checks that kbpkg.json names the same package, version and target and
 * that lib/ holds the library. *out_dir (owned, may be NULL) is the installed folder. */
int kbi_cache_install_artifact(char **out_dir, kb_cache *c, const char *artifact_path,
                               const kb_install_info *info);

/* What install saw of the library file: a cheap identity the loader compares with fstat before
 * dlopen; anything different (a copy, a rewrite, a touch) costs one re-hash. */
typedef struct kb_file_id {
    bool known; /* false: an older record without it (always re-hashed) */
    uint64_t dev, ino, size;
    int64_t ctime_s, ctime_ns;
} kb_file_id;

/* One installed package. */
typedef struct kb_installed {
    char *name, *version, *target;
    char *dir;
    char *artifact_digest;
    char *index_digest;
    char *registry;
    char *reason;
    char *library; /* absolute path of lib/lib*.so */
    bool local_build;
    kb_strv exports;
    uint64_t bytes;
    kb_file_id lib_id;
    char lib_sha256[65];          /* "" when the record has no hash for the library */
    kb_trust_admission admission; /* how the index was admitted at install */
} kb_installed;

void kbi_installed_clear(kb_installed *p);
/* A deep copy; KB_ERR_NOMEM (dst cleared) when out of memory. */
int kbi_installed_copy(kb_installed *dst, const kb_installed *src);
/* Every installed package (name filter optional), sorted by name, version, target. */
int kbi_cache_list(kb_installed **out, size_t *count, kb_cache *c, const char *name_filter);
void kbi_installed_list_free(kb_installed *list, size_t count);
/* Load the record of one install folder. */
int kbi_cache_read_install(kb_installed *out, kb_cache *c, const char *dir);

/* The identity of an open file (fstat). */
int kbi_file_id_of_fd(kb_file_id *out, int fd);
bool kbi_file_id_equal(const kb_file_id *a, const kb_file_id *b);
/* The record's library, opened as a regular file and checked to be the bytes install verified:
 * cheap identity first, a re-hash when it differs (then p->lib_id is updated so the next check
 * is cheap again). Returns the fd, or a negative kb_err (KB_ERR_DIGEST naming the file). */
int kbi_cache_open_library(kb_installed *p, kb_ctx *ctx);
/* Check a blob already in the store against its digest (it may have been altered since it was
 * downloaded); a blob that does not match is removed so that it is fetched again. */
int kbi_cache_blob_check(kb_cache *c, const char *path, const char *digest);

/* Re-hash every installed file against the artifact blob the record names (which must hash to
 * its digest), compare the record's name, version, target and exports with the artifact's
 * kbpkg.json; problems are appended to issues. (The stored signature is judged again at load,
 * by runtime/, which may use trust/.) */
int kbi_cache_verify_one(kb_strv *issues, kb_cache *c, const kb_installed *p);
/* A check that a module above cache adds to each install's verification (install/ judges the
 * recorded admission with trust/, which cache may not use): problems appended to issues; a
 * negative kb_err only when the check could not run. */
typedef int (*kb_cache_verify_extra)(kb_strv *issues, kb_ctx *ctx, const kb_installed *p);
/* kb_cache_verify with one more check per install (extra may be NULL). */
int kbi_cache_verify_with(kb_package_list **out, kb_ctx *ctx, const char *name,
                          kb_cache_verify_extra extra);
/* Remove installs of name (version/target NULL: all). *removed counts folders. */
int kbi_cache_uninstall(size_t *removed, kb_cache *c, const char *name, const char *version,
                        const char *target);
/* Remove blobs that no install references and that keep (digests: lockfile pins, fetched
 * source artifacts) does not name, partial downloads (.part, .tmp-*), and what killed installs
 * and uninstalls left under pkgs/ (.kbpkg-extract-*, *.removing.*, empty folders). Waits for
 * running installs (kbi_cache_hold); *removed and *bytes_freed count blobs and leftovers. */
int kbi_cache_gc(size_t *removed, uint64_t *bytes_freed, kb_cache *c, const kb_strv *keep);

/* Blobs gc must keep: fetched source artifacts (sources/ records). */
int kbi_cache_kept_blobs(kb_strv *out, kb_cache *c);

/* Fetched source artifacts (cache/sources.c): sources/<org>/<name>/<version>.json. */
int kbi_sources_record(kb_cache *cache, const char *name, const char *version,
                       const char *source_digest, const char *index_digest, const char *registry);
/* The highest recorded version of name matching constraint; *version_out and *digest_out
 * owned. KB_ERR_NOT_FOUND naming what is there. */
int kbi_sources_find(char **version_out, char **digest_out, kb_cache *cache, const char *name,
                     const char *constraint_text);

#endif
