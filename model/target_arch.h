/* Decoded GPU/CPU arch names shared by the target parser and the compatibility rules. */
#ifndef KB_MODEL_TARGET_ARCH_H
#define KB_MODEL_TARGET_ARCH_H

#include "model/target.h"

/* A ROCm target feature as LLVM's target-id states it: absent (any), on (+) or off (-). */
typedef enum kb_feature {
    KB_FEATURE_ANY = 0,
    KB_FEATURE_ON = 1,
    KB_FEATURE_OFF = 2,
} kb_feature;

typedef struct kb_arch_info {
    kb_backend backend;
    /* CUDA: sm_86 -> number 86 (major 8, minor 6); ptx for compute_XY; specific for the 'a'. */
    unsigned cuda_number;
    bool cuda_ptx;
    bool cuda_specific;
    /* ROCm: processor without features, generic targets, xnack/sramecc as stated. */
    char gfx[24];
    bool rocm_generic;
    kb_feature xnack;
    kb_feature sramecc;
    /* CPU: x86-64 level 1..4 (0 for aarch64). */
    unsigned cpu_level;
    bool cpu_aarch64;
} kb_arch_info;

/* Decode an arch for a backend. A device arch (is_device) is a concrete chip: no PTX,
 * no 'a' suffix, no generic target; older CUDA chips are allowed since they exist.
 * Returns false with a one-line reason in why. */
bool kbi_arch_decode(kb_arch_info *out, kb_backend backend, const char *arch, bool is_device,
                     char *why, size_t why_size);

/* The canonical spelling of a decoded arch (ROCm features in alphabetical order). */
void kbi_arch_format(const kb_arch_info *a, char *buf, size_t size);

/* Does the generic ROCm target (gfx11-generic) cover the processor (gfx1100)? */
bool kbi_rocm_generic_covers(const char *generic, const char *gfx);

/* The host arch family: arm64 and aarch64 are the same CPU. */
bool kbi_host_arch_equal(const char *a, const char *b);

#endif
