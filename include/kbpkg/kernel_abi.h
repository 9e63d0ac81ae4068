/* The kbpkg kernel ABI v1: the contract between a package library and the loader (info struct,
 * export macro, status codes, element types). One header, installed with libkbpkg, passed to
 * every package build by the builder and shipped in every artifact's include/kbpkg/. */
#ifndef KBPKG_KERNEL_ABI_H
#define KBPKG_KERNEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KBPKG_KERNEL_ABI 1

/* The builder passes these with -D; defaults keep a hand build working. */
#ifndef KBPKG_TARGET
#define KBPKG_TARGET "unknown"
#endif
#ifndef KBPKG_NAME
#define KBPKG_NAME "unknown"
#endif
#ifndef KBPKG_VERSION
#define KBPKG_VERSION "0.0.0"
#endif

/* Only the package's exports and kbpkg_kernel_info are visible; build with
 * -fvisibility=hidden so everything else stays inside the library. */
#if defined(_WIN32)
#define KBPKG_EXPORT __declspec(dllexport)
#else
#define KBPKG_EXPORT __attribute__((visibility("default")))
#endif

/* Return codes of every exported function: 0 or one of these (never renumbered). */
enum {
    KBPKG_KERNEL_OK = 0,
    KBPKG_KERNEL_EINVAL = -1,      /* a size, leading dimension or pointer is invalid */
    KBPKG_KERNEL_ELAUNCH = -2,     /* the GPU runtime refused the launch */
    KBPKG_KERNEL_EUNSUPPORTED = -3 /* this build cannot run the call (e.g. missing feature) */
};

typedef enum kbpkg_kernel_backend {
    KBPKG_BACKEND_CPU = 0,
    KBPKG_BACKEND_CUDA = 1,
    KBPKG_BACKEND_ROCM = 2,
    KBPKG_BACKEND_METAL = 3
} kbpkg_kernel_backend;

typedef struct kbpkg_kernel_info_t {
    int abi;             /* KBPKG_KERNEL_ABI */
    const char *name;    /* "radeonflow/gemm" */
    const char *version; /* "1.0.0" */
    const char *target;  /* "cuda13-sm_90-x86_64-linux", baked at build time */
    int backend;         /* kbpkg_kernel_backend */
} kbpkg_kernel_info_t;

/* Every package library exports this; the loader checks abi/name/version/target. */
KBPKG_EXPORT const kbpkg_kernel_info_t *kbpkg_kernel_info(void);

/* 16-bit and 8-bit floats cross the C ABI as their raw bits. The FP8 kinds are OCP's e4m3
 * (no infinities, max 448) and e5m2, and AMD CDNA3's fnuz variants (no negative zero, bias one
 * higher). */
typedef uint16_t kbpkg_bf16;
typedef uint16_t kbpkg_f16;
typedef uint8_t kbpkg_e4m3;
typedef uint8_t kbpkg_e5m2;
typedef uint8_t kbpkg_e4m3fnuz;
typedef uint8_t kbpkg_e5m2fnuz;

#ifdef __cplusplus
}
#endif

/* Defines kbpkg_kernel_info() in exactly one source file of a package. */
#define KBPKG_DEFINE_KERNEL_INFO(backend_)                                                         \
    KBPKG_EXPORT const kbpkg_kernel_info_t *kbpkg_kernel_info(void)                                \
    {                                                                                              \
        static const kbpkg_kernel_info_t info = {KBPKG_KERNEL_ABI, KBPKG_NAME, KBPKG_VERSION,      \
                                                 KBPKG_TARGET, (backend_)};                        \
        return &info;                                                                              \
    }

#endif
