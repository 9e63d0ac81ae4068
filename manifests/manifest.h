/* The kernel.yaml model and its parser (manifests/). */
#ifndef KB_MANIFESTS_MANIFEST_H
#define KB_MANIFESTS_MANIFEST_H

#include "core/internal.h"
#include "model/target.h"
#include "model/semver.h"
#include "manifests/signature.h"

/* One source file, local (path) or remote (url + sha256). */
typedef struct kb_source {
    char *path;    /* relative to the package folder; for url sources the file name to store */
    char *url;     /* NULL for local files */
    char *sha256;  /* required with url */
    kb_strv flags; /* this source's own flags (its `flags:` and `defines:` as -D), after the
                      backend's: one source compiled twice with different defines gives two
                      objects (two precisions from one file) */
} kb_source;

/* Flags for the archs matching a pattern (fnmatch: "gfx9*", "sm_90a"): an arch-family switch. */
typedef struct kb_arch_flags {
    char *pattern;
    kb_strv flags;
} kb_arch_flags;

/* A header-only dependency: one file or an archive (tar.gz, tar.zst, tar.xz, zip) fetched by
 * url, verified by sha256, kept in the cache as <cache.dir>/deps/<sha256>/. */
typedef struct kb_dependency {
    char *name; /* for messages and -I mapping ("cutlass") */
    char *url;
    char *sha256;
    bool archive;    /* unpacked (by the URL's suffix, or `archive:`); else one file */
    char *file;      /* not an archive: the file's name in its folder (URL's last segment) */
    kb_strv include; /* folders inside the unpacked tree put on the include path; default "." */
} kb_dependency;

/* A toolchain version requirement per backend (requires: {cuda: {min: "12.4"}}). */
typedef struct kb_requirement {
    char *min; /* "12.4", NULL when none */
} kb_requirement;

typedef struct kb_backend_spec {
    kb_backend backend;
    bool present;
    kb_strv archs; /* cuda: sm_80...; rocm: gfx1030...; cpu: x86_64_v3... (may be empty:
                      cpu defaults to the host level, metal to "apple") */
    char *ptx;     /* cuda only: the compute_XY embedded as PTX, e.g. "sm_80" -> compute_80 */
    kb_source *sources;
    size_t source_count, sources_cap;
    kb_strv flags;    /* extra compiler flags; -l/-L/-Wl go after the objects */
    kb_strv includes; /* package-relative include folders (-I) */
    kb_strv defines;  /* NAME or NAME=VALUE (-D) */
    kb_arch_flags *arch_flags;
    size_t arch_flag_count, arch_flags_cap;
    kb_strv export_patterns; /* names or fnmatch patterns selecting this backend's exports */
    bool exports_selected;   /* export_patterns was given (else: every top-level export) */
    char ptx_target[40];     /* cuda with ptx: "compute_80", the PTX target's arch; else "" */
} kb_backend_spec;

typedef struct kb_manifest {
    char *path; /* the kernel.yaml file */
    char *dir;  /* its folder */
    char *name; /* org/name */
    kb_semver version;
    char *summary;
    char *license;
    unsigned abi;
    char *header; /* include/rf_gemm.h */
    kb_strv exports;
    kb_export_sig *export_sigs; /* parallel to exports; returns NULL where none is declared */
    size_t export_sigs_cap;
    kb_backend_spec backends[5]; /* indexed by kb_backend */
    char *test;                  /* tests/check.c, or NULL */
    char *bench;                 /* tests/bench.c, or NULL: `kbpkg bench` (docs/kernels.md) */
    char *license_file;          /* LICENSE file in the package folder, or NULL */
    char *version_text;          /* the version as written ("1.0.0-rc.1") */
    kb_strv includes;            /* top-level include folders, for every backend and the test */
    kb_strv defines;             /* top-level defines, for every backend and the test */
    kb_strv files;               /* extra files and globs carried by the source artifact */
    kb_dependency *deps;
    size_t dep_count, deps_cap;
    kb_requirement requires[5]; /* indexed by kb_backend */
} kb_manifest;

/* The exports one backend provides: the top-level exports its `exports:` selection matches
 * (all of them without one), in top-level order. */
int kbi_manifest_backend_exports(const kb_manifest *m, kb_backend b, kb_strv *out);
/* Every target m declares, in the index's grammar (kbi_declared_format): "cuda-sm_90a",
 * "cuda-compute_80", "rocm-gfx942", "cpu" (no archs: any level). Comma-joined into *out
 * (owned); KB_ERR_NOMEM. */
int kbi_manifest_declared_targets(char **out, const kb_manifest *m);
/* The C++ sources decide the link: true when any source of the backend is C++. */
bool kbi_source_is_cxx(const char *path);
/* What a flag may not be: an absolute or escaping path (-I/x, -L/x, -isystem /x, -I../x) makes
 * a build that no other machine reproduces. prev: the flag before it (for "-I" "/x"). NULL when
 * fine, else a static reason. */
const char *kbi_flag_unportable(const char *prev, const char *flag);

/* Parse and validate path (a kernel.yaml file or a folder holding one). Every error
 * names file:line:column and the key. check_files: also require sources/header/test to exist. */
int kbi_manifest_load(kb_ctx *ctx, kb_manifest **out, const char *path, bool check_files);
/* Parse from memory; name is used in error messages. */
int kbi_manifest_parse(kb_ctx *ctx, kb_manifest **out, const char *name, const char *text,
                       size_t len);
void kb_manifest_free(kb_manifest *m);

#endif
