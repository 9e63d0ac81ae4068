/* Targets, devices and the compatibility rules between them (pure functions, model/target*.c). */
#ifndef KB_MODEL_TARGET_H
#define KB_MODEL_TARGET_H

#include "core/internal.h"

typedef enum kb_backend {
    KB_BACKEND_NONE = 0,
    KB_BACKEND_CUDA = 1,  /* runtime "cudaNN" */
    KB_BACKEND_ROCM = 2,  /* runtime "rocmN" */
    KB_BACKEND_METAL = 3, /* runtime "metalN" */
    KB_BACKEND_CPU = 4,   /* runtime "cpu" */
} kb_backend;

/* A parsed target id: BACKEND-ARCH-HOST, e.g. cuda13-sm_90-x86_64-linux. */
typedef struct kb_target {
    kb_backend backend;
    unsigned runtime_major; /* 13 for cuda13, 5 for rocm5, 3 for metal3; 0 for cpu */
    char arch[48];          /* sm_90, sm_90a, compute_80, gfx1030, gfx90a:xnack+, gfx11-generic,
                               apple, x86_64_v3, aarch64 */
    char host_arch[16];     /* x86_64, aarch64, arm64 */
    char host_os[16];       /* linux, darwin */
} kb_target;

/* Parse/format target ids. Errors name the id and what is wrong with it. */
int kbi_target_parse(kb_ctx *ctx, kb_target *out, const char *id);
/* Writes the canonical id into buf (>= 96 bytes recommended). */
void kbi_target_format(const kb_target *t, char *buf, size_t size);
const char *kbi_backend_name(kb_backend b); /* "cuda", "rocm", "metal", "cpu" */
kb_backend kbi_backend_from_name(const char *name);

/* Validate an arch name for a backend as written in kernel.yaml (sm_80, gfx1030, ...).
 * Returns true, or false with a one-line reason in why. */
bool kbi_arch_valid(kb_backend backend, const char *arch, char *why, size_t why_size);

/* A device a target may run on, from the probe or an override (KBPKG_DEVICES). */
typedef struct kb_device {
    kb_backend backend;     /* CUDA, ROCM, METAL or CPU */
    char arch[48];          /* sm_86, gfx1031:xnack-, apple, x86_64_v3 */
    unsigned runtime_major; /* CUDA driver's major version, HIP runtime major */
    unsigned runtime_minor;
    bool runtime_any; /* an override that named no runtime: any is new enough */
    char name[128];   /* "NVIDIA H200", "" for overrides */
    uint64_t memory_bytes;
    char pci_id[32];            /* 0000:01:00.0 */
    int index;                  /* device ordinal within its backend */
    bool runtime_minor_unknown; /* an override that named only a major ("gfx1100@rocm6") */
} kb_device;

/* The host the resolver works for: CPU level and OS, plus the GPUs found. */
typedef struct kb_host {
    char cpu_arch[16];  /* x86_64, aarch64 */
    char cpu_level[16]; /* x86_64_v2/v3/v4, or aarch64 */
    char os[16];        /* linux, darwin */
    char glibc[16];     /* "2.36", "" when not glibc */
    kb_device *devices;
    size_t device_count, devices_cap;
} kb_host;

/* Parse an override list "sm_86,gfx1031@rocm5.2,sm_90@cuda12.4" or "none". */
int kbi_devices_parse(kb_ctx *ctx, kb_device **out, size_t *count, const char *spec);
/* Free what kbi_devices_parse returned (NULL is fine). */
void kbi_devices_free(kb_device *devices);

/* How well a target fits; higher is better. Values leave room between the ranks of DESIGN.md. */
typedef enum kb_fit {
    KB_FIT_NONE = 0,         /* refused */
    KB_FIT_CPU = 10,         /* CPU fallback */
    KB_FIT_LOCAL_BUILD = 20, /* build from source for the device (the resolver's, not a target's) */
    KB_FIT_PTX = 30,         /* PTX JIT */
    KB_FIT_ALIAS = 35,       /* another gfx's code through an opt-in alias (rocm.aliases) */
    KB_FIT_GENERIC = 40,     /* gfx11-generic and friends */
    KB_FIT_FAMILY = 50,      /* same-major SASS; closer minor scores higher within the rank */
    KB_FIT_EXACT = 60,       /* exact arch */
} kb_fit;

typedef struct kb_compat {
    kb_fit fit;
    int score;        /* total order among fits: fit*100 + closeness */
    char reason[256]; /* one line, for --explain */
} kb_compat;

/* Options that change compatibility: opt-in ROCm aliases (gfx1031=gfx1030), CPU fallback. */
typedef struct kb_compat_opts {
    const char *rocm_aliases; /* "gfx1031=gfx1030,gfx1032=gfx1030" or NULL */
    bool allow_cpu_with_gpu;  /* CPU targets also fit when a usable GPU exists */
} kb_compat_opts;

/* Can target t run on device d? Fills out->fit/score/reason. Pure. */
void kbi_compat_check(kb_compat *out, const kb_target *t, const kb_device *d,
                      const kb_compat_opts *opts);
/* Can target t run on this host (any device, or the CPU)? Picks the best device. */
void kbi_compat_check_host(kb_compat *out, const kb_target *t, const kb_host *host,
                           const kb_compat_opts *opts);

/* Check an alias list "gfx1031=gfx1030,..." (kb_compat_opts.rocm_aliases, setting
 * rocm.aliases): each side a known concrete gfx. False with the bad entry named in why. */
bool kbi_rocm_aliases_valid(const char *aliases, char *why, size_t why_size);

/* The one ranking of fitting targets, used by install, sync and the loader alike: <0 when
 * target_a (with result a) ranks above target_b: the higher score first, then the smaller id. */
int kbi_target_rank_cmp(const char *target_a, const kb_compat *a, const char *target_b,
                        const kb_compat *b);

void kbi_host_free(kb_host *host);

/* A package's declared targets as its index records them (annotation
 * dev.kbpkg.declared-targets): a comma-separated list of "backend-arch" ("cuda-sm_90a",
 * "cuda-compute_80", "rocm-gfx942") or a bare backend ("cpu") for any arch of it. These two
 * are the grammar's one owner. Format one entry into out; false when it does not fit. */
bool kbi_declared_format(char *out, size_t size, kb_backend backend, const char *arch);
/* Read the entry at *pos of list (advancing *pos past it and its comma). False at the end; an
 * entry naming no known backend is skipped. *arch is "" for a bare backend. */
bool kbi_declared_next(kb_backend *backend, char *arch, size_t arch_size, const char *list,
                       size_t *pos);

#endif
