/* Hardware probe: CUDA driver and HIP runtime via dlopen, KFD sysfs, CPU, OS (probe/). */
#ifndef KB_PROBE_PROBE_H
#define KB_PROBE_PROBE_H

#include "model/target.h"

/* What the probe looked at and why it found nothing there, for `kbpkg probe`. */
typedef struct kb_probe_note {
    char source[32];   /* "cuda", "kfd", "hip", "cpu", "override" */
    char message[256]; /* "libcuda.so.1 not found (dlopen: ...)" */
} kb_probe_note;

typedef struct kb_probe_report {
    kb_host host;
    kb_probe_note *notes;
    size_t note_count, notes_cap;
    char cuda_driver[16]; /* "13.0", "" when none */
    char hip_runtime[16]; /* "5.2", "" when none */
    bool overridden;      /* devices came from probe.devices */
    char hip_driver[16];  /* hipDriverGetVersion as "major.minor", "" when none (added) */
} kb_probe_report;

/* Probe per the ctx settings (probe.devices, probe.cpu, probe.sysfs_root, probe.cuda_lib,
 * probe.hip_lib, probe.timeout_ms). Never fails for missing hardware: that is a note. */
int kbi_probe_run(kb_ctx *ctx, kb_probe_report *out);
void kbi_probe_report_free(kb_probe_report *r);

/* ---- GPU clocks through NVML (probe_nvml.c), read while a benchmark runs ----
 * NVML is dlopen'ed (setting probe.nvml_lib), never linked. No ctx: the bench's sampler thread
 * calls these, and a ctx belongs to one thread. */
typedef struct kbi_nvml kbi_nvml;
typedef struct kbi_clock_sample {
    unsigned sm_mhz, mem_mhz; /* 0: NVML could not say */
    int busy;                 /* 1: a kernel ran during NVML's last utilization period; 0: idle;
                               * -1: NVML cannot say (utilization not supported) */
} kbi_clock_sample;
/* NVML's view of dev: by its PCI bus id when the probe has one (CUDA's ordinals need not be
 * NVML's), else by dev->index. NULL with why set when NVML is absent, fails to start or has no
 * such device: clocks are then unknown, never an error. */
kbi_nvml *kbi_nvml_open(const char *lib, const kb_device *dev, char *why, size_t why_size);
/* One reading of the current clocks; false with why set when NVML answered nothing. */
bool kbi_nvml_sample(kbi_nvml *n, kbi_clock_sample *s, char *why, size_t why_size);
const char *kbi_nvml_driver(const kbi_nvml *n);  /* "580.159.04"; "" when NVML did not say */
unsigned kbi_nvml_max_sm_mhz(const kbi_nvml *n); /* the device's maximum SM clock; 0: unknown */
void kbi_nvml_close(kbi_nvml *n);

#endif
