/* Builder internals: toolchains, build plans, compile commands, packaging, verification. */
#ifndef KB_BUILDER_BUILDER_H
#define KB_BUILDER_BUILDER_H

#include "core/internal.h"
#include "model/target.h"
#include "kbpkg/build.h"
#include "manifests/manifest.h"
#include "probe/cpu.h" /* kbi_host_platform */
#include "probe/probe.h"

#include "archive/archive.h"
#include "archive/inspect.h"

/* ---- toolchains (builder/toolchain.c) ---- */

/* One discovered compiler. Indexed by backend in kb_toolchains, plus the second HIP one. */
typedef struct kb_toolchain {
    kb_backend backend;
    const char *name; /* static: "nvcc", "hipcc", "hip-clang", "cc", "metal" */
    bool found;
    char *path;    /* the executable */
    char *version; /* "13.0" */
    char *id;      /* name-version-<12 hex>: kbi_toolchain_identity */
    char *note;    /* why missing, or a remark */
    kb_strv archs; /* buildable archs, sorted */
    /* ROCm (hipcc, hip-clang) only */
    unsigned hip_major;    /* the HIP runtime its libraries need: libamdhip64.so.<hip_major> */
    char *clang;           /* the clang that compiles the device code (makes overlay bitcode) */
    char *device_libs;     /* the ROCm device-library folder (oclc_*.bc) */
    kb_strv overlay_archs; /* archs whose oclc_isa_version_*.bc the overlay generates */
    bool overlay_abi6;     /* the overlay generates oclc_abi_version_600.bc (code object v6) */
    bool hip_stub;         /* links against the overlay's libamdhip64.so.<hip_major> stub */
    char *objdump;         /* llvm-objdump that disassembles its code objects; NULL: none */
    char *hip_headers;     /* hip-clang: the HIP headers' version ("5.2"), what requires.rocm
                              is checked against */
} kb_toolchain;

typedef struct kb_toolchains {
    kb_toolchain tc[5]; /* indexed by kb_backend; tc[0] unused */
    /* clang >= 19 driving HIP itself (Debian 12's clang-19): the ROCm 6 ABI through a stub
     * libamdhip64.so.6, and the gfx archs hipcc 5.2 stops before (gfx942, gfx1151, gfx12,
     * generic targets). tc[KB_BACKEND_ROCM] stays hipcc, which builds the rocm5 targets. */
    kb_toolchain hip_clang;
} kb_toolchains;

/* Discover every toolchain per the settings build.nvcc, build.hipcc, build.cc (empty: search). */
int kbi_toolchains_discover(kb_ctx *ctx, kb_toolchains *out);
/* Only the backends whose bit (1u << kb_backend) is set; the others stay found = false. */
int kbi_toolchains_discover_some(kb_ctx *ctx, kb_toolchains *out, unsigned backend_mask);
void kbi_toolchains_free(kb_toolchains *t);
bool kbi_toolchain_can_build(const kb_toolchain *tc, const char *arch);
/* Why tc cannot build arch, as one line (names the missing package or clang version); owned. */
char *kbi_toolchain_cannot_build(const kb_toolchain *tc, const char *arch);
/* The gfx archs a clang of this major builds HIP code for (LLVM's processors and generic
 * targets that kbpkg knows), appended to out. */
int kbi_hip_clang_archs(unsigned clang_major, kb_strv *out);
/* A ROCm target whose HIP runtime is 5 can exist for arch: a concrete gfx older than gfx1150
 * (ROCm 5 never supported gfx115x, gfx12 or the generic targets). */
bool kbi_rocm5_era_arch(const char *arch);
/* Set tc->id to "<name>-<version>-<12 hex>" from tc's `--version` output (never its path, so
 * one toolchain installed in two places on two workers has one id and gives one build key).
 * name and version must be set. KB_ERR_NOMEM only. */
int kbi_toolchain_identity(kb_toolchain *tc, const char *version_output);

/* Pure parsers of `--version` outputs (tested on fake outputs). */
bool kbi_parse_nvcc_version(const char *text, char *out, size_t size);  /* "13.0" */
bool kbi_parse_hipcc_version(const char *text, char *out, size_t size); /* "5.2.21153" */
/* hipcc's clang: major version and InstalledDir ("15", "/usr/bin"). */
bool kbi_parse_hipcc_clang(const char *text, unsigned *major, char *dir, size_t dir_size);
bool kbi_parse_cc_version(const char *text, char *out, size_t size); /* "12.2.0" */
/* Tokens sm_XY / compute_XY of `nvcc --list-gpu-code/--list-gpu-arch`, appended to out. */
int kbi_parse_nvcc_arch_list(const char *text, kb_strv *out);
/* Add sm_XYa / compute_XYa for every listed sm_XY / compute_XY with XY >= 90. */
int kbi_nvcc_add_arch_specific(kb_strv *archs);
/* The CUDA archs a given nvcc major builds when it cannot list them (CUDA 13: sm_75+). */
int kbi_nvcc_default_archs(unsigned major, kb_strv *out);
/* gfx archs from the device-lib file names (oclc_isa_version_1030.bc -> gfx1030), plus the
 * gfx11 archs clang >= 15 knows whose isa-version file is missing (-> overlay). */
int kbi_rocm_archs_from_libs(const kb_strv *file_names, unsigned clang_major, kb_strv *archs,
                             kb_strv *overlay);
/* CPU levels cc can target on a host arch: x86_64 -> x86_64_v2..v4; aarch64 -> aarch64. */
int kbi_cpu_levels(const char *host_arch, kb_strv *out);
/* The host's best CPU level (probe.cpu setting wins): x86_64_v3, aarch64. */
void kbi_host_cpu_level(const kb_ctx *ctx, char *out, size_t size);

/* ---- ROCm device-lib overlay (builder/rocm_overlay.c) ---- */

/* A folder under cache_dir holding symlinks to every original device library plus the
 * generated oclc_isa_version_<N>.bc for each overlay arch, oclc_abi_version_600.bc when the
 * toolchain needs it, and (hip_stub) a libamdhip64.so.<hip_major> exporting the launch API;
 * *out owned. */
int kbi_rocm_overlay(kb_ctx *ctx, char **out, const kb_toolchain *hip, const char *cache_dir);
/* "gfx1100" -> 11000 (__oclc_ISA_version), "gfx11-generic" -> 11000 (its first member);
 * false for names it cannot read. */
bool kbi_gfx_isa_version(const char *arch, unsigned *out);
/* The HIP functions the stub libamdhip64.so.<N> exports: what clang's kernel launches and the
 * kernels' own error and attribute calls need. NULL-terminated. */
extern const char *const kbi_hip_stub_symbols[];

/* ---- build plan (builder/plan.c) ---- */

typedef struct kb_plan_item {
    char target[96]; /* cuda13-sm_80-x86_64-linux */
    kb_backend backend;
    char arch[48];          /* sm_80, compute_80, gfx1030, x86_64_v3, apple */
    const kb_toolchain *tc; /* NULL when skipped */
    char *skip;             /* why it cannot be built here, NULL when it can */
} kb_plan_item;

typedef struct kb_plan {
    kb_plan_item *items;
    size_t count, cap;
} kb_plan;

typedef struct kb_plan_host {
    const char *arch;      /* x86_64 */
    const char *os;        /* linux */
    const char *cpu_level; /* x86_64_v3 */
} kb_plan_host;

/* Every target the manifest declares, each with its toolchain or a skip reason, filtered by
 * ids/prefixes (none: all). A filter matching nothing is KB_ERR_TARGET naming it. */
int kbi_plan_make(kb_ctx *ctx, kb_plan *out, const kb_manifest *m, const kb_toolchains *tcs,
                  const kb_plan_host *host, const char *const *filters, size_t filter_count);
void kbi_plan_free(kb_plan *p);
/* "cuda13-sm_80" matches "cuda13-sm_80-x86_64-linux"; "cpu" matches every cpu target. */
bool kbi_target_matches(const char *target, const char *filter);

/* ---- compile (builder/compile.c) ---- */

/* "radeonflow/gemm" -> "gemm"; '-' and '.' -> '_' ("rms.norm-x" -> "rms_norm_x"). */
void kbi_lib_name(const char *package, char *out, size_t size);
/* How a recorded flag names a dependency's folder: "-I@deps/<name>/<include>" (no package
 * path starts with '@'); the compile resolves it to <deps_root>/<sha256>/<include>. */
#define KB_DEPS_PREFIX "@deps/"

/* Where one target compiles: fixed-name folders, so nothing random reaches the binary. */
typedef struct kb_compile_env {
    const char *work_dir;    /* objects go to <work_dir>/obj/ */
    const char *overlay_dir; /* ROCm device-lib overlay, or NULL */
    const char *deps_root;   /* <cache.dir>/deps: fetched dependencies by sha256, or NULL */
} kb_compile_env;

/* The path-independent flags of one target (recorded in kbpkg.json and the build key):
 * backend flags, defines, includes, flags, per-arch flags, KBPKG_* defines, per-source flags as
 * "src/x.cu:-DT=float", then the libraries. */
int kbi_compile_flags(const kb_manifest *m, const kb_plan_item *item, kb_strv *out);
/* Compile each source of the item's backend into <work_dir>/obj/ (with its own flags, and
 * extra after the target's), appending the object paths to objects. Each compile writes a
 * -MD dependency list next to its object (<obj>.d). */
int kbi_compile_sources(kb_ctx *ctx, kb_strv *objects, const kb_manifest *m,
                        const kb_plan_item *item, const kb_compile_env *env, const kb_strv *extra,
                        kb_buf *log);
/* Link objects into output: the target's flags, the objects, extra, then the libraries (a
 * library named before the objects that need it is dropped by the linker). */
int kbi_link(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item, const kb_compile_env *env,
             const kb_strv *objects, const kb_strv *extra, const char *output, bool executable,
             kb_buf *log);
/* Compile one more file (a package test) with the target's flags, src_flags and extra. */
int kbi_compile_file(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                     const kb_compile_env *env, const char *src, const kb_strv *src_flags,
                     const kb_strv *extra, const char *obj, kb_buf *log);
/* The kernel ABI header (builder/abi_header.c): include_root/kbpkg/kernel_abi.h, and the -I
 * (plus a file-prefix map) that lets a compile in work_dir include <kbpkg/kernel_abi.h>. */
int kbi_abi_header_write(kb_ctx *ctx, const char *include_root);
int kbi_abi_include_flags(kb_ctx *ctx, kb_strv *argv, const char *work_dir, bool nvcc);
/* Compile and link the target's library into lib_path. On failure KB_ERR_BUILD with the
 * trimmed compiler output; *log gets the command lines and all output. */
int kbi_compile_target(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                       const kb_compile_env *env, const char *lib_path, kb_buf *log);
/* Every file the compiles of <work_dir>/obj/ read from inside the package (their -MD lists)
 * is carried by the source artifact, and none comes from beside the package: else
 * KB_ERR_MANIFEST naming the source and the file. */
int kbi_check_dependency_lists(kb_ctx *ctx, const kb_manifest *m, const char *work_dir,
                               const char *deps_root);
/* Keep the first max_lines lines that matter (errors first) of compiler output; owned. */
char *kbi_trim_compiler_output(const char *text, size_t max_lines);
/* A failed test's output for the error message: its last tail_lines lines, preceded by up to
 * 10 earlier lines that name a failure ("FAIL"), so a failure reported early (stderr is not
 * buffered, stdout is) is not cut off by the tail. Owned by the caller; NULL on OOM. */
char *kbi_test_output_excerpt(const char *text, size_t tail_lines);

/* Shared by the package test and the package benchmark (builder/pkgtest.c, pkgbench.c). */
int kbi_pkgtest_plan(kb_ctx *ctx, kb_manifest **m, kb_toolchains *tcs, kb_plan *plan,
                     const char *dir, const char *const *targets, size_t count, char *level,
                     size_t level_size, kb_probe_report *probe, bool bench);
char *kbi_pkgtest_not_runnable(const kb_plan_item *item, const char *host_level,
                               const kb_probe_report *probe);
/* program (m->test or m->bench) with the CPU reference sources, linked against the target's
 * library, as exe: the installed artifact's (libdir: its folder, lib/ and include/ inside), or
 * one built into work for GPU targets (libdir NULL; CPU targets then compile the CPU sources
 * into the program itself). */
int kbi_pkgtest_build_program(kb_ctx *ctx, const kb_manifest *m, const kb_plan_item *item,
                              const char *work, const char *program, const char *libdir,
                              const char *exe, kb_buf *output);

/* One target's run of a package program (builder/pkgrun.c), the loop test and bench share. */
typedef struct kbi_pkgrun_row {
    char *target;
    kb_build_status status;
    char *message;
    double seconds;
    char *output; /* the program's output, NULL unless it ran */
    char *device; /* bench: JSON of the device it ran on (kb_bench_target_result) */
} kbi_pkgrun_row;

typedef struct kbi_pkgrun {
    bool bench;                 /* m->bench, else m->test */
    unsigned flags;             /* KB_BENCH_QUICK */
    const char *const *libdirs; /* NULL, or per targets[i] its installed artifact's folder: only
                                   those targets run, against those libraries */
} kbi_pkgrun;

/* Plan dir's targets (filtered by targets), skip what cannot run here, build and run the
 * program for the rest; *rows (count *row_count) owned, free with kbi_pkgrun_rows_free.
 * *m_out (may be NULL) gets the manifest. Errors only for what stops every target. */
int kbi_pkgrun_targets(kbi_pkgrun_row **rows, size_t *row_count, kb_manifest **m_out, kb_ctx *ctx,
                       const char *dir, const char *const *targets, size_t count,
                       const kbi_pkgrun *how);
void kbi_pkgrun_rows_free(kbi_pkgrun_row *rows, size_t count);

/* ---- the GPU clocks a benchmark ran at (builder/bench_clocks.c) ---- */
typedef struct kbi_clock_summary {
    size_t samples; /* the samples kept; 0: clocks unknown, note says why */
    bool busy_only; /* only those NVML called busy were kept (else all) */
    double sm_median, sm_min, sm_max, mem_median; /* MHz of the kept samples; 0: unknown */
    unsigned device_max_mhz;                      /* the device's maximum SM clock; 0: unknown */
    char driver[96];                              /* NVML's driver version, "" when unknown */
    char note[256];                               /* why there are no clocks */
} kbi_clock_summary;
typedef struct kbi_clock_sampler kbi_clock_sampler;
/* A thread sampling dev's clocks through NVML (probe.nvml_lib) every interval_ms until
 * kbi_clock_sampler_stop; NULL when it cannot start (out of memory, no thread). */
kbi_clock_sampler *kbi_clock_sampler_start(const char *nvml_lib, const kb_device *dev,
                                           unsigned interval_ms);
/* Stop the thread (s may be NULL) and summarise what it read into *out; frees s. */
void kbi_clock_sampler_stop(kbi_clock_sampler *s, kbi_clock_summary *out);
/* Median, min and max of the samples (the busy ones when NVML said which): fills samples,
 * busy_only and the MHz fields of *out, leaving the rest. */
void kbi_clock_summarise(kbi_clock_summary *out, const kbi_clock_sample *s, size_t n);
/* Add the clock keys (docs/json/bench.json) to a device object; KB_ERR_NOMEM. */
struct json_t;
int kbi_clock_summary_json(struct json_t *device, const kbi_clock_summary *c);

/* kb_package_bench, with installed libraries (kbi_pkgrun.libdirs) when libdirs is set. */
int kbi_package_bench_run(kb_bench_result **out, kb_ctx *ctx, const char *dir,
                          const char *const *targets, size_t count, unsigned flags,
                          const char *const *libdirs);

/* ---- packaging (builder/package.c) ---- */

/* The files of the source artifact: kernel.yaml, include/, src/, tests/, LICENSE, README*,
 * as package-relative paths, sorted. url sources must already be in the folder. */
int kbi_source_files(kb_ctx *ctx, kb_strv *out, const kb_manifest *m);
/* sha256 over "path\0size\0sha256\n" of every source file: the canonical listing digest. */
int kbi_source_digest(kb_ctx *ctx, char hex[65], const kb_manifest *m);
/* The same listing digest over the files a build reads (the source files less README*): the
 * build key's input, so an edit no target reads rebuilds nothing. */
int kbi_build_inputs_digest(kb_ctx *ctx, char hex[65], const kb_manifest *m);
/* sha256 of "source:<digest>\ntarget:<t>\ntoolchain:<id>\nflags:<f1> <f2>...\n". */
void kbi_build_key(char hex[65], const char *source_digest, const char *target,
                   const char *toolchain_id, const kb_strv *flags);
/* The one way a target's build key is computed, by the builder and by the farm before building,
 * from kbi_build_inputs_digest (not the source digest: README edits rebuild nothing), the
 * target's compile flags (kept in *flags_out when not NULL) and kbi_build_key over them. */
int kbi_target_build_key(char hex[65], kb_strv *flags_out, const kb_manifest *m,
                         const kb_plan_item *item, const char *inputs_digest);
/* "<org>-<name>-<version>-<suffix>.tar.zst" */
char *kbi_artifact_name(const kb_manifest *m, const char *suffix);

/* What kbpkg.json records about one built target. */
typedef struct kb_pkg_meta {
    const kb_manifest *manifest;
    const char *target;
    const kb_toolchain *toolchain;
    const kb_strv *flags;
    const char *source_digest;
    const char *build_key;
    const char *glibc;   /* highest GLIBC_ version needed, NULL/"" when none */
    const char *glibcxx; /* highest GLIBCXX_ version needed */
    kb_backend backend;  /* kbpkg.json lists this backend's exports */
} kb_pkg_meta;

int kbi_write_kbpkg_json(kb_ctx *ctx, const char *path, const kb_pkg_meta *meta);
/* Fill staging with kbpkg.json, lib/lib<name>.so, include/<header>, LICENSE. */
int kbi_stage_artifact(kb_ctx *ctx, const char *staging, const kb_pkg_meta *meta,
                       const char *lib_path);
/* Write <org>-<name>-<version>-source.tar.zst of kbi_source_files into out_dir, or keep the one
 * there when its sidecar (<artifact>.key) says it was written from the same source digest,
 * epoch, exec bits and writer settings and its sha256 still matches: level 19 over a large
 * source costs seconds a republish need not pay. */
int kbi_write_source_artifact(kb_ctx *ctx, char **out_path, char hex[65], uint64_t *size,
                              const kb_manifest *m, const char *out_dir, const char *source_digest,
                              int64_t epoch);

/* ---- typed exports (builder/signature_check.c) ---- */

/* Compile a generated file assigning each typed export of m to a pointer of its declared C
 * type, against m's header, with -Werror. KB_ERR_MANIFEST names the exports that differ. */
int kbi_signature_check(kb_ctx *ctx, const kb_manifest *m, const kb_toolchains *tcs,
                        const char *work_dir);
/* One declaration line of that file (also what docs and tests show). */
int kbi_export_sig_c_decl(kb_buf *b, const kb_export_sig *sig);

/* ---- verification (builder/verify.c) ---- */

/* Every name in required is a defined, default-visibility dynamic symbol; no STB_GNU_UNIQUE. */
int kbi_verify_exports(kb_ctx *ctx, const char *lib, const kb_strv *required);
/* Highest GLIBC_/GLIBCXX_ versions the library needs ("" when none). */
int kbi_verify_glibc_needs(kb_ctx *ctx, const char *lib, char glibc[16], char glibcxx[16]);
/* The embedded GPU code is exactly the target's: SASS sm_XY, PTX compute_XY or one gfx; none
 * for CPU. A mismatch names what was found. */
int kbi_verify_gpu_code(kb_ctx *ctx, const char *lib, const kb_plan_item *item);
/* A ROCm library needs exactly the HIP runtime of its target: DT_NEEDED names
 * libamdhip64.so.<runtime major> and no other libamdhip64. */
int kbi_verify_hip_runtime(kb_ctx *ctx, const char *lib, const kb_plan_item *item);
/* Each AMD code object disassembles for its arch: `objdump -d --mcpu=<gfx>` exits 0, prints no
 * <unknown> instruction and ends its kernels with s_endpgm. */
int kbi_verify_disassembly(kb_ctx *ctx, const char *lib, const kb_plan_item *item,
                           const char *objdump);
/* The library loads in a clean process (env -i, nothing preloaded): the host's ld.so resolves
 * every NEEDED entry and every symbol (LD_BIND_NOW). A missing library or an undefined symbol
 * is KB_ERR_BUILD naming it; a GPU runtime library absent from a build host is a warning. */
int kbi_verify_loads(kb_ctx *ctx, const char *lib, const kb_plan_item *item, kb_strv *warnings);
/* All of the above for one target: kbpkg_kernel_info and the backend's exports, no stray
 * C++-mangled export, the GPU code, the clean load; warnings (may be NULL) gets what is
 * worth saying but not failing (imports of exit/_exit/abort). */
int kbi_verify_library(kb_ctx *ctx, const char *lib, const kb_manifest *m, const kb_plan_item *item,
                       char glibc[16], char glibcxx[16], kb_strv *warnings);

/* ---- one target, end to end (builder/build.c) ---- */

/* kb_build with toolchains the caller discovered (NULL: discover them): the farm discovers
 * once for all its packages, since probing nvcc and hipcc costs a second each time. */
int kbi_build_with(kb_ctx *ctx, kb_build_result **out, const char *dir, const kb_build_options *o,
                   const kb_toolchains *tcs);

/* Build one target of the package in package_dir (a folder or unpacked source artifact) into
 * out_dir; *artifact_path owned. For the fetcher's cache-miss builds. */
int kbi_build_target(kb_ctx *ctx, char **artifact_path, const char *package_dir,
                     const char *target_id, const char *out_dir);

#endif
