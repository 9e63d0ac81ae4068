/* kbpkg public API: toolchains, building packages per target, package tests, scaffolding. */
#ifndef KBPKG_BUILD_H
#define KBPKG_BUILD_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- toolchains ---- */

/* One compiler kbpkg knows how to drive, found or not. */
typedef struct kb_toolchain_info {
    char *name;    /* "nvcc", "hipcc", "cc", "metal" */
    char *backend; /* "cuda", "rocm", "cpu", "metal" */
    int found;     /* 1 when usable */
    char *version; /* "13.0", "5.2.21153", "12.2.0"; NULL when not found */
    char *path;    /* the executable; NULL when not found */
    char *id;      /* name-version-<12 hex of sha256(path)>: goes into build keys */
    char *note;    /* why it is missing, or a remark (gfx1100 via overlay); may be NULL */
    char **archs;  /* archs it can build: sm_75.., compute_75.., gfx1030.., x86_64_v2.. */
    size_t arch_count;
} kb_toolchain_info;

typedef struct kb_toolchain_list {
    kb_toolchain_info *items;
    size_t count;
} kb_toolchain_list;

/* Discover nvcc, hipcc, cc (and xcrun metal on macOS). Missing ones are listed with a note. */
KB_EXTERN int kb_toolchains_list(kb_toolchain_list **out, kb_ctx *ctx);
KB_EXTERN void kb_toolchain_list_free(kb_toolchain_list *list);

/* ---- building ---- */

typedef enum kb_build_status {
    KB_BUILD_BUILT = 0,
    KB_BUILD_SKIPPED = 1, /* no toolchain for it on this host; message says why */
    KB_BUILD_FAILED = 2,  /* compile or verification failed; message has the compiler tail */
} kb_build_status;

typedef struct kb_build_target_result {
    char *target; /* cuda13-sm_80-x86_64-linux */
    kb_build_status status;
    char *artifact;  /* path of the .tar.zst, NULL unless built */
    char *sha256;    /* hex sha256 of the artifact, NULL unless built */
    uint64_t size;   /* bytes of the artifact */
    double seconds;  /* wall time of compile + package + verify */
    char *build_key; /* sha256(source digest, target, toolchain id, flags); NULL if skipped */
    char *message;   /* skip reason or failure (trimmed compiler output); NULL when built */
} kb_build_target_result;

typedef struct kb_build_result {
    char *package; /* org/name */
    char *version;
    char *source_artifact; /* <org>-<name>-<version>-source.tar.zst, NULL when not written */
    char *source_sha256;   /* hex sha256 of source_artifact, NULL when not written */
    char *source_digest;   /* digest of the canonical source listing (input of build keys) */
    kb_build_target_result *targets;
    size_t count;
    size_t built, skipped, failed;
} kb_build_result;

#define KB_BUILD_OPTIONS_VERSION 1
typedef struct kb_build_options {
    unsigned int version; /* KB_BUILD_OPTIONS_VERSION */
    const char *const
        *targets; /* filters: full ids or prefixes ("cpu", "cuda13-sm_80"); NULL: all */
    size_t target_count;
    unsigned int jobs;      /* parallel targets; 0: setting build.jobs, then one per core */
    const char *out_dir;    /* where artifacts go; NULL: <dir>/dist */
    const char *work_dir;   /* build folders; NULL: <cache.dir>/builds */
    int no_source_artifact; /* 1: do not write the source artifact */
} kb_build_options;

#define KB_BUILD_OPTIONS_INIT                                                                      \
    {                                                                                              \
        KB_BUILD_OPTIONS_VERSION, NULL, 0, 0, NULL, NULL, 0                                        \
    }

/*
 * Build every declared target of the package in dir (a folder with kernel.yaml) whose
 * toolchain exists, in parallel. Returns 0 when the plan ran, even if targets failed
 * (see (*out)->failed); a negative kb_err when nothing could run (bad manifest, bad filter).
 */
KB_EXTERN int kb_build(kb_build_result **out, kb_ctx *ctx, const char *dir,
                       const kb_build_options *options);
KB_EXTERN void kb_build_result_free(kb_build_result *result);

/*
 * Fetch what the package in dir needs from the network before it builds: its url sources
 * (written into the folder under the names the manifest gives them) and its header-only
 * dependencies (kept in <cache.dir>/deps/<sha256>/, archives unpacked). Each is verified
 * against its sha256; what the cache already holds is not fetched again, so a fetched package
 * builds offline. *fetched (may be NULL) counts downloads. kb_build does not fetch: call this
 * first (`kbpkg build` and `kbpkg fetch DIR` do).
 */
KB_EXTERN int kb_fetch_inputs(size_t *fetched, kb_ctx *ctx, const char *dir);
KB_EXTERN const char *kb_build_status_name(kb_build_status status);

/* ---- package tests ---- */

typedef struct kb_test_target_result {
    char *target;
    kb_build_status status; /* BUILT = passed, SKIPPED = cannot run here, FAILED */
    char *message;          /* skip reason, or the output tail on failure */
    char *output;           /* full output of the test program, NULL if it did not run */
    double seconds;
} kb_test_target_result;

typedef struct kb_test_result {
    kb_test_target_result *targets;
    size_t count;
    size_t passed, skipped, failed;
} kb_test_result;

/* Build and run the package test (manifest `test:`) for every declared target runnable on
 * this machine: CPU levels the host has; GPU targets only where probe.devices names a
 * matching device. Filters as in kb_build_options. 0 when the tests ran (see failed). */
KB_EXTERN int kb_package_test(kb_test_result **out, kb_ctx *ctx, const char *dir,
                              const char *const *targets, size_t target_count);
KB_EXTERN void kb_test_result_free(kb_test_result *result);

/* One target's benchmark: cases is a JSON array (text) of the lines the bench program printed
 * (docs/kernels.md: case, shape, seconds, tflops or gbps, baseline), NULL unless it ran. */
typedef struct kb_bench_target_result {
    char *target;
    kb_build_status status; /* BUILT: it ran; SKIPPED: cannot run here; FAILED */
    char *message;          /* why skipped or failed */
    double seconds;
    char *cases;
    /* What it ran on, JSON {"backend", "name", "arch", "driver", "clock_mhz", "memory_bytes"}
     * (what the probe knows; for CPUs the model and clock of /proc/cpuinfo), on CUDA devices
     * with the clocks sampled through NVML during the run and NVML's driver version
     * (docs/json/bench.json: "driver_version", "clock_*"); NULL unless it ran */
    char *device;
} kb_bench_target_result;

typedef struct kb_bench_result {
    kb_bench_target_result *targets;
    size_t count, ran, skipped, failed;
    char *name;     /* org/name */
    char *version;  /* the manifest's, or the installed version's */
    char *registry; /* kb_bench_installed: where the package was installed from; else NULL */
    int installed;  /* 1: the installed artifacts ran (kb_bench_installed) */
} kb_bench_result;

#define KB_BENCH_QUICK 1u /* small sizes (the program's --quick): CI */

/* A device of a benchmark result (kb_bench_target_result.device, or one published) in one
 * line: "NVIDIA H200 (sm_90, driver 580.159.04, CUDA 13.0, SM 1980 MHz median of 42 samples,
 * mem 3201 MHz)" or "AMD EPYC 9654 (x86_64_v4, 2400 MHz)". NULL when device_json is not a
 * JSON object (or out of memory); free with kb_string_free. */
KB_EXTERN char *kb_bench_device_text(const char *device_json);

/* Build and run the package benchmark (manifest `bench:`) for every declared target runnable
 * on this machine, like kb_package_test. 0 when the benchmarks ran (see failed). */
KB_EXTERN int kb_package_bench(kb_bench_result **out, kb_ctx *ctx, const char *dir,
                               const char *const *targets, size_t target_count, unsigned flags);
KB_EXTERN void kb_bench_result_free(kb_bench_result *result);

/* Benchmark the installed "org/name[@constraint]" (highest installed version that matches):
 * for every installed target this machine runs (targets: only those whose id is or starts
 * with one of them), the package's bench program from its source artifact (found in the cache
 * or fetched from the registry setting, admitted by the trust policy as `kbpkg
 * fetch --source` does) is compiled against the installed artifact's header and linked to its
 * library, so the artifact that kb_kernel_open loads is what is timed, not a rebuild.
 * KB_ERR_NOT_FOUND when nothing of it is installed; KB_ERR_MANIFEST when it declares no bench. */
KB_EXTERN int kb_bench_installed(kb_bench_result **out, kb_ctx *ctx, const char *ref,
                                 const char *const *targets, size_t target_count, unsigned flags,
                                 int allow_unsigned);

/* The OCI artifactType (and layer media type) of published benchmark results. */
#define KB_BENCH_ARTIFACT_TYPE "application/vnd.kbpkg.bench.v1+json"

/* Publish each target that ran in result to the registry (NULL: the ctx's setting) as an OCI
 * artifact whose subject is the package index of result->name@result->version, found through
 * the OCI referrers tag schema (tag "sha256-<index hex>", docs/bench.md). The registry is
 * opened and the index admitted as publish and install do (stored credentials, the trust
 * policy; allow_unsigned as there). Earlier results of the version are kept. *digests_out
 * (may be NULL; free with kb_strings_free) gets one manifest digest per target published. */
KB_EXTERN int kb_bench_publish(char ***digests_out, size_t *count_out, kb_ctx *ctx,
                               const kb_bench_result *result, const char *registry,
                               int allow_unsigned);

/* ---- scaffolding ---- */

/* Write a new package org/name into dir (created; must not hold a kernel.yaml) that builds
 * and tests on CPU out of the box. */
KB_EXTERN int kb_package_new(kb_ctx *ctx, const char *name, const char *dir);

/* Import a Hugging Face kernel-builder project (project/build.toml) as a new package in dir
 * (created; must not hold a kernel.yaml): kernel.yaml, the kernels' sources and headers copied
 * under src/ as they sit in the project, LICENSE, and a starter header for the C-ABI wrappers.
 * name: org/name, NULL for "kernels-community/<general.name>". *notes_out (free with
 * kb_strings_free) lists, one line each, what was not carried over (the torch bindings,
 * kernel-builder's dependencies, unknown keys). build.toml errors are KB_ERR_PARSE naming
 * file:line:col; nothing is written unless the generated kernel.yaml parses. */
KB_EXTERN int kb_package_import(char ***notes_out, size_t *note_count, kb_ctx *ctx,
                                const char *project, const char *dir, const char *name);

#ifdef __cplusplus
}
#endif
#endif
