/* kbpkg public API: what the hardware probe found (GPUs, CPU level, OS) and why not more. */
#ifndef KBPKG_PROBE_H
#define KBPKG_PROBE_H

#include "kbpkg/common.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The result of one probe. The probe reads the settings probe.devices (KBPKG_DEVICES,
 * --device: replaces the GPU probe), probe.cpu, probe.sysfs_root, probe.cuda_lib,
 * probe.hip_lib and probe.timeout_ms. Missing hardware or drivers are not errors: each
 * reason becomes a note. Strings returned below are borrowed from the probe, never NULL
 * for a valid index ("" when unknown), and NULL for an index out of range.
 */
typedef struct kb_probe kb_probe;

/* Probe now. Fails only on a bad override (KB_ERR_CONFIG, KB_ERR_TARGET) or out of memory. */
KB_EXTERN int kb_probe_new(kb_probe **out, kb_ctx *ctx);
KB_EXTERN void kb_probe_free(kb_probe *probe);

/* ---- GPUs, in backend order (CUDA, then ROCm), each numbered within its backend ---- */
KB_EXTERN size_t kb_probe_device_count(const kb_probe *probe);
/* "cuda", "rocm", "metal", "cpu" */
KB_EXTERN const char *kb_probe_device_backend(const kb_probe *probe, size_t i);
/* "sm_90", "gfx90a" */
KB_EXTERN const char *kb_probe_device_arch(const kb_probe *probe, size_t i);
/* "NVIDIA H200"; "" for overrides */
KB_EXTERN const char *kb_probe_device_name(const kb_probe *probe, size_t i);
/* Device memory in bytes; 0 when unknown. */
KB_EXTERN uint64_t kb_probe_device_memory(const kb_probe *probe, size_t i);
/* PCI domain:bus:device.function, "0000:01:00.0"; "" when unknown. */
KB_EXTERN const char *kb_probe_device_pci_id(const kb_probe *probe, size_t i);
/* The runtime the device offers: CUDA driver version or HIP runtime, "12.4"; "any" for an
 * override that named none; "" when unknown. */
KB_EXTERN const char *kb_probe_device_runtime(const kb_probe *probe, size_t i);
/* The device's ordinal within its backend (what CUDA/HIP call device i); -1 out of range. */
KB_EXTERN int kb_probe_device_index(const kb_probe *probe, size_t i);

/* ---- host ---- */
KB_EXTERN const char *kb_probe_cpu_arch(const kb_probe *probe);  /* "x86_64", "aarch64" */
KB_EXTERN const char *kb_probe_cpu_level(const kb_probe *probe); /* "x86_64_v3", "aarch64" */
KB_EXTERN const char *kb_probe_os(const kb_probe *probe);        /* "linux", "darwin" */
KB_EXTERN const char *kb_probe_glibc(const kb_probe *probe);     /* "2.36"; "" without glibc */

/* ---- drivers: "major.minor", "" when not found ---- */
KB_EXTERN const char *kb_probe_cuda_driver(const kb_probe *probe);
KB_EXTERN const char *kb_probe_hip_runtime(const kb_probe *probe);
KB_EXTERN const char *kb_probe_hip_driver(const kb_probe *probe);

/* 1 when the devices came from probe.devices instead of the drivers. */
KB_EXTERN int kb_probe_overridden(const kb_probe *probe);

/* ---- notes: what was looked at and why it gave nothing ---- */
KB_EXTERN size_t kb_probe_note_count(const kb_probe *probe);
/* "cuda", "kfd", "hip", "cpu", "override" */
KB_EXTERN const char *kb_probe_note_source(const kb_probe *probe, size_t i);
/* "libcuda.so.1 not found (dlopen: ...)" */
KB_EXTERN const char *kb_probe_note_message(const kb_probe *probe, size_t i);

#ifdef __cplusplus
}
#endif
#endif
