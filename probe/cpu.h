/* The host CPU's architecture and x86-64 level (cpuid), shared by the probe and the builder. */
#ifndef KB_PROBE_CPU_H
#define KB_PROBE_CPU_H

#include <stdbool.h>
#include <stddef.h>

/* x86-64 microarchitecture features, as cpuid reports them (OS state included). */
typedef struct kb_x86_features {
    bool cx16, lahf, popcnt, sse3, sse41, sse42, ssse3;
    bool avx, avx2, bmi1, bmi2, f16c, fma, lzcnt, movbe, xsave, os_ymm;
    bool avx512f, avx512bw, avx512cd, avx512dq, avx512vl, os_zmm;
} kb_x86_features;

/* 1..4: the highest x86-64 psABI level all of whose features are present. */
int kbi_x86_level(const kb_x86_features *f);

/* This machine's CPU as target ids spell it: arch "x86_64" and level "x86_64_v1".."x86_64_v4"
 * from cpuid (with the OS saving the wide registers); elsewhere arch = level = the machine
 * name of kbi_host_platform. */
void kbi_cpu_host(char *arch, size_t arch_size, char *level, size_t level_size);

/* The one host triple: this machine's arch and OS as target ids spell them ("x86_64", "linux";
 * arm64 is aarch64, amd64 is x86_64). The probe, the builder and the resolver all use it. */
void kbi_host_platform(char *arch, size_t arch_size, char *os, size_t os_size);

/* The CPU's model name and clock as /proc/cpuinfo gives them ("model name", "cpu MHz" of the
 * first processor): name "" and *mhz 0 where it does not say (other systems, some Arm CPUs).
 * cpuinfo: the file to read (NULL: /proc/cpuinfo). Benchmarks record what they ran on. */
void kbi_cpu_model(char *name, size_t name_size, double *mhz, const char *cpuinfo);

/* Is level a CPU level kbpkg knows: x86_64_v1..x86_64_v4 or aarch64? */
bool kbi_cpu_level_valid(const char *level);
/* The arch a valid level belongs to: "x86_64" or "aarch64". */
const char *kbi_cpu_level_arch(const char *level);

#endif
