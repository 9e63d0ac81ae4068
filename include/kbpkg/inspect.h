/* kbpkg public API: inspect a built library or an artifact (exports, libc needs, GPU code). */
#ifndef KBPKG_INSPECT_H
#define KBPKG_INSPECT_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What kind of file was inspected. */
typedef enum kb_inspect_kind {
    KB_INSPECT_ELF = 1,     /* an ELF64 shared library or executable */
    KB_INSPECT_ARCHIVE = 2, /* a .tar.zst artifact: members, plus each lib/ *.so inspected */
} kb_inspect_kind;

/* The kind of one embedded GPU code object. */
typedef enum kb_gpu_code_kind {
    KB_GPU_CODE_UNKNOWN = 0,
    KB_GPU_CODE_SASS = 1,   /* CUDA cubin for one sm_XY */
    KB_GPU_CODE_PTX = 2,    /* CUDA PTX for compute_XY (JIT) */
    KB_GPU_CODE_AMDGCN = 3, /* AMD code object for one gfx target */
} kb_gpu_code_kind;

/* One embedded GPU code object; borrowed from its kb_inspect. */
typedef struct kb_gpu_code {
    kb_gpu_code_kind kind;
    const char *arch;   /* "sm_90", "sm_90a", "compute_80", "gfx1030", "gfx90a:xnack+" */
    const char *detail; /* offload bundle triple, or "" */
    int compressed;     /* 1 when the payload is compressed in the container */
} kb_gpu_code;

typedef struct kb_inspect kb_inspect;

/* Inspect path: an ELF64 file, or a .tar.zst artifact (every lib/ *.so inside is inspected).
 * Malformed input gives KB_ERR_ARCHIVE or KB_ERR_PARSE naming the file and offset. */
KB_EXTERN int kb_inspect_file(kb_inspect **out, kb_ctx *ctx, const char *path);
KB_EXTERN void kb_inspect_free(kb_inspect *inspect);

KB_EXTERN kb_inspect_kind kb_inspect_get_kind(const kb_inspect *inspect);
/* The path given, or for a library inside an archive its member name. */
KB_EXTERN const char *kb_inspect_name(const kb_inspect *inspect);

/* Defined, global or weak, default-visibility dynamic symbols, sorted. */
KB_EXTERN size_t kb_inspect_export_count(const kb_inspect *inspect);
KB_EXTERN const char *kb_inspect_export(const kb_inspect *inspect, size_t index);
/* Defined STB_GNU_UNIQUE symbols (they pin a library in memory; kbpkg refuses them). */
KB_EXTERN size_t kb_inspect_unique_count(const kb_inspect *inspect);
KB_EXTERN const char *kb_inspect_unique(const kb_inspect *inspect, size_t index);
/* The highest GLIBC_ / GLIBCXX_ version needed ("2.34", "3.4.30"), "" when none. */
KB_EXTERN const char *kb_inspect_glibc_needed(const kb_inspect *inspect);
KB_EXTERN const char *kb_inspect_glibcxx_needed(const kb_inspect *inspect);

/* Embedded GPU code, deduplicated, in container order. */
KB_EXTERN size_t kb_inspect_gpu_code_count(const kb_inspect *inspect);
KB_EXTERN const kb_gpu_code *kb_inspect_gpu_code(const kb_inspect *inspect, size_t index);
/* "SASS", "PTX", "AMDGCN", "unknown". */
KB_EXTERN const char *kb_gpu_code_kind_name(kb_gpu_code_kind kind);

/* Archives: member names (folders end with '/') and the inspected libraries (borrowed). */
KB_EXTERN size_t kb_inspect_member_count(const kb_inspect *inspect);
KB_EXTERN const char *kb_inspect_member(const kb_inspect *inspect, size_t index);
KB_EXTERN size_t kb_inspect_library_count(const kb_inspect *inspect);
KB_EXTERN const kb_inspect *kb_inspect_library(const kb_inspect *inspect, size_t index);

/* KB_OK when every name in required is exported, else KB_ERR_ABI naming the first missing. */
KB_EXTERN int kb_inspect_check_exports(kb_ctx *ctx, const kb_inspect *inspect,
                                       const char *const *required, size_t count);

#ifdef __cplusplus
}
#endif
#endif
