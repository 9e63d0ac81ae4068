/* Pieces of the hardware probe shared between the files of probe/ (not a contract). */
#ifndef KB_PROBE_INTERNAL_H
#define KB_PROBE_INTERNAL_H

#include "probe/probe.h"

/* Append a note; returns 0 or KB_ERR_NOMEM (with the error set). */
int kbi_probe_note_add(kb_ctx *ctx, kb_probe_report *r, const char *source, const char *fmt, ...)
    KB_PRINTF(4, 5);
/* Append a copy of d to r->host.devices. */
int kbi_probe_device_add(kb_ctx *ctx, kb_probe_report *r, const kb_device *d);

/* One entry point of a library opened with dlopen: its name, where its address goes in the
 * caller's struct of function pointers, and whether the library may lack it. */
typedef struct kbi_dl_symbol {
    const char *name;
    size_t offset;
    bool optional;
} kbi_dl_symbol;
/* Fills the struct api from lib by the table (absent optional ones NULL). NULL when every
 * required symbol is there, else the name of the first one lib lacks. */
const char *kbi_probe_load_symbols(void *api, void *lib, const kbi_dl_symbol *table, size_t n);

/* ---- running a driver call in a forked child, bounded in time (probe_child.c) ---- */

/* Filled by the child: stage markers say how far it got, result is copied back whole. */
typedef struct kb_probe_child_io kb_probe_child_io;
/* Called in the child before a call that may hang; a timeout then names the stage. */
void kbi_probe_child_stage(kb_probe_child_io *io, char stage);
typedef void (*kb_probe_child_fn)(kb_probe_child_io *io, void *result, const void *arg);

typedef enum kb_probe_child_status {
    KB_PROBE_CHILD_OK = 0,
    KB_PROBE_CHILD_TIMEOUT = 1, /* killed after timeout_ms; *stage is the last marker */
    KB_PROBE_CHILD_CRASHED = 2, /* died from a signal or exited without a result */
    KB_PROBE_CHILD_NO_FORK = 3, /* could not fork or create the pipe; errno_out says why */
} kb_probe_child_status;

typedef struct kb_probe_child_outcome {
    kb_probe_child_status status;
    char stage;    /* last stage marker seen, '\0' when none */
    int signal;    /* for CRASHED: the signal, 0 when it exited */
    int exit_code; /* for CRASHED without a signal */
    int errno_out; /* for NO_FORK */
    long elapsed_ms;
} kb_probe_child_outcome;

/* Run fn(io, result, arg) in a child; result (result_size bytes) comes back over a pipe. */
void kbi_probe_in_child(kb_probe_child_outcome *out, kb_probe_child_fn fn, const void *arg,
                        void *result, size_t result_size, unsigned timeout_ms);

/* ---- the probes; each adds devices and notes, and fails only on out-of-memory ---- */
int kbi_probe_cuda(kb_ctx *ctx, kb_probe_report *r, const char *lib, unsigned timeout_ms);
/* Reads <sysfs_root>/sys/class/kfd/kfd/topology. *found: GPUs it added. */
int kbi_probe_kfd(kb_ctx *ctx, kb_probe_report *r, const char *sysfs_root, size_t *found);
/* Fills r->hip_runtime and the runtime of ROCm devices; notes when absent. */
int kbi_probe_hip(kb_ctx *ctx, kb_probe_report *r, const char *lib, unsigned timeout_ms);
/* CPU level, arch, OS, glibc; cpu_override ("" for none) is validated here. */
int kbi_probe_cpu(kb_ctx *ctx, kb_probe_report *r, const char *cpu_override);

/* ---- pure helpers, exposed for tests ---- */
/* gfx_target_version (90010) -> "gfx90a"; false when it does not decode. */
bool kbi_probe_gfx_name(char *buf, size_t size, uint64_t gfx_target_version);
/* HIP_VERSION-style number 50221601 -> major 5, minor 2. */
void kbi_probe_hip_version_split(int v, unsigned *major, unsigned *minor);

#endif
