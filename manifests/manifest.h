/* The kernel.yaml model and its parser (manifests/). */
#ifndef KB_MANIFESTS_MANIFEST_H
#define KB_MANIFESTS_MANIFEST_H

#include "core/internal.h"
#include "model/target.h"
#include "model/semver.h"

/* One source file, local (path) or remote (url + sha256). */
typedef struct kb_source {
    char *path;   /* relative to the package folder; for url sources the file name to store */
    char *url;    /* NULL for local files */
    char *sha256; /* required with url */
} kb_source;

typedef struct kb_backend_spec {
    kb_backend backend;
    bool present;
    kb_strv archs; /* cuda: sm_80...; rocm: gfx1030...; cpu: x86_64_v3... (may be empty:
                      cpu defaults to the host level, metal to "apple") */
    char *ptx;     /* cuda only: the compute_XY embedded as PTX, e.g. "sm_80" -> compute_80 */
    kb_source *sources;
    size_t source_count;
    kb_strv flags;       /* extra compiler flags */
    char ptx_target[40]; /* cuda with ptx: "compute_80", the PTX target's arch; else "" */
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
    kb_backend_spec backends[5]; /* indexed by kb_backend */
    char *test;                  /* tests/check.c, or NULL */
    char *license_file;          /* LICENSE file in the package folder, or NULL */
    char *version_text;          /* the version as written ("1.0.0-rc.1") */
} kb_manifest;

/* Parse and validate path (a kernel.yaml file or a folder holding one). Every error
 * names file:line:column and the key. check_files: also require sources/header/test to exist. */
int kb_manifest_load(kb_ctx *ctx, kb_manifest **out, const char *path, bool check_files);
/* Parse from memory; name is used in error messages. */
int kb_manifest_parse(kb_ctx *ctx, kb_manifest **out, const char *name, const char *text,
                      size_t len);
void kb_manifest_free(kb_manifest *m);

#endif
