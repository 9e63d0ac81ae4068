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

#endif
