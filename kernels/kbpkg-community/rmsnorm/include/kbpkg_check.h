/* Helpers for a package's tests/check.c: device memory per backend, seeded random data,
 * NaN poisoning and tolerance-aware comparison against the CPU reference. Plain C. */
#ifndef KBPKG_CHECK_H
#define KBPKG_CHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kbpkg_half.h"
#include <kbpkg/kernel_abi.h>

/* elements of an array (the checks' and the benchmarks' case tables) */
#define KB_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The builder compiles check.c with -DKBPKG_CHECK_CUDA or -DKBPKG_CHECK_HIP for GPU targets
 * (C API of the runtime: cuda_runtime_api.h / hip_runtime_api.h), nothing for CPU targets. */
#if defined(KBPKG_CHECK_CUDA)
#include <cuda_runtime_api.h>
#define KBC_BACKEND_NAME "cuda"
#define KBC_EXPECT_BACKEND KBPKG_BACKEND_CUDA
#define kbc_rt_malloc(p, n) cudaMalloc((p), (n))
#define kbc_rt_free(p) cudaFree(p)
#define kbc_rt_h2d(d, s, n) cudaMemcpy((d), (s), (n), cudaMemcpyHostToDevice)
#define kbc_rt_d2h(d, s, n) cudaMemcpy((d), (s), (n), cudaMemcpyDeviceToHost)
#define kbc_rt_sync() cudaDeviceSynchronize()
#define kbc_rt_errstr(e) cudaGetErrorString(e)
#define KBC_RT_OK cudaSuccess
#elif defined(KBPKG_CHECK_HIP)
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>
#define KBC_BACKEND_NAME "rocm"
#define KBC_EXPECT_BACKEND KBPKG_BACKEND_ROCM
#define kbc_rt_malloc(p, n) hipMalloc((p), (n))
#define kbc_rt_free(p) hipFree(p)
#define kbc_rt_h2d(d, s, n) hipMemcpy((d), (s), (n), hipMemcpyHostToDevice)
#define kbc_rt_d2h(d, s, n) hipMemcpy((d), (s), (n), hipMemcpyDeviceToHost)
#define kbc_rt_sync() hipDeviceSynchronize()
#define kbc_rt_errstr(e) hipGetErrorString(e)
#define KBC_RT_OK hipSuccess
#else
#define KBC_BACKEND_NAME "cpu"
#define KBC_EXPECT_BACKEND KBPKG_BACKEND_CPU
#endif

typedef enum kbc_dtype { KBC_F32 = 0, KBC_BF16 = 1, KBC_F16 = 2 } kbc_dtype;

static const char *const kbc_dtype_names[] = {"f32", "bf16", "f16"};

static inline size_t kbc_size(kbc_dtype t)
{
    return t == KBC_F32 ? 4 : 2;
}

static inline float kbc_get(kbc_dtype t, const void *p, size_t i)
{
    if (t == KBC_BF16)
        return kbpkg_bf16_to_f32(((const uint16_t *)p)[i]);
    if (t == KBC_F16)
        return kbpkg_f16_to_f32(((const uint16_t *)p)[i]);
    return ((const float *)p)[i];
}

static inline void kbc_set(kbc_dtype t, void *p, size_t i, float v)
{
    if (t == KBC_BF16)
        ((uint16_t *)p)[i] = kbpkg_f32_to_bf16(v);
    else if (t == KBC_F16)
        ((uint16_t *)p)[i] = kbpkg_f32_to_f16(v);
    else
        ((float *)p)[i] = v;
}

/* Relative size of one unit in the last place of the type: rounding two nearly equal fp32
 * results to it can land them one ulp apart. */
static inline double kbc_ulp(kbc_dtype t)
{
    return t == KBC_BF16 ? 1.0 / 128 : t == KBC_F16 ? 1.0 / 1024 : 1.0 / 8388608;
}

static inline void kbc_die(const char *what)
{
    fprintf(stderr, "check: FAIL: %s\n", what);
    exit(1);
}

static inline void *kbc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL)
        kbc_die("out of host memory");
    return p;
}

/* ---- device memory (host memory on CPU targets) ---- */
static inline void *kbc_dev_alloc(size_t n)
{
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    void *p = NULL;
    if (kbc_rt_malloc(&p, n ? n : 1) != KBC_RT_OK)
        kbc_die("device allocation failed");
    return p;
#else
    return kbc_xmalloc(n);
#endif
}

static inline void kbc_dev_free(void *p)
{
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    kbc_rt_free(p);
#else
    free(p);
#endif
}

static inline void kbc_upload(void *dev, const void *host, size_t n)
{
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    if (kbc_rt_h2d(dev, host, n) != KBC_RT_OK)
        kbc_die("copy to device failed");
#else
    memcpy(dev, host, n);
#endif
}

/* Waits for the device and fails on any error a kernel left behind. */
static inline void kbc_download(void *host, const void *dev, size_t n)
{
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    int e = (int)kbc_rt_sync();
    if (e != (int)KBC_RT_OK) {
        fprintf(stderr, "check: FAIL: device error after kernel: %s\n",
                kbc_rt_errstr(kbc_rt_sync()));
        exit(1);
    }
    if (kbc_rt_d2h(host, dev, n) != KBC_RT_OK)
        kbc_die("copy from device failed");
#else
    memcpy(host, dev, n);
#endif
}

/* ---- random data: xorshift64*, seeded from the clock (KBPKG_CHECK_SEED reproduces) ---- */
typedef struct kbc_rng {
    uint64_t s;
} kbc_rng;

static inline kbc_rng kbc_rng_from_env_or_time(void)
{
    kbc_rng r;
    const char *env = getenv("KBPKG_CHECK_SEED");
    if (env != NULL && *env != '\0')
        r.s = strtoull(env, NULL, 0);
    else
        r.s =
            (uint64_t)time(NULL) * 6364136223846793005ull ^ (uint64_t)getpid() ^ (uint64_t)clock();
    if (r.s == 0)
        r.s = 0x9e3779b97f4a7c15ull;
    printf("check: backend %s, seed %llu (KBPKG_CHECK_SEED=%llu reproduces)\n", KBC_BACKEND_NAME,
           (unsigned long long)r.s, (unsigned long long)r.s);
    return r;
}

static inline uint64_t kbc_next(kbc_rng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 2685821657736338717ull;
}

/* Uniform in [lo, hi), stored (rounded) in type t. */
static inline void kbc_fill(kbc_rng *r, kbc_dtype t, void *p, size_t count, float lo, float hi)
{
    for (size_t i = 0; i < count; i++) {
        float u = (float)(kbc_next(r) >> 40) / 16777216.0f;
        kbc_set(t, p, i, lo + (hi - lo) * u);
    }
}

/* Fills with NaN so an element the kernel never writes cannot pass. */
static inline void kbc_poison(kbc_dtype t, void *p, size_t count)
{
    for (size_t i = 0; i < count; i++)
        kbc_set(t, p, i, NAN);
}

/*
 * Compares got with want element by element: |got - want| <= rtol*|want| + atol + extra[i]
 * (extra may be NULL). NaN in got fails (unwritten or poisoned). Prints the first few
 * mismatches with their index; returns the number of failing elements.
 */
static inline size_t kbc_compare(const char *what, kbc_dtype t, const void *got, const void *want,
                                 size_t count, double rtol, double atol, const double *extra)
{
    size_t bad = 0, nans = 0;
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        double g = kbc_get(t, got, i), w = kbc_get(t, want, i);
        double allowed = rtol * fabs(w) + atol + (extra ? extra[i] : 0.0);
        double err = fabs(g - w);
        if (isnan(g) || isnan(w) || !(err <= allowed)) {
            if (isnan(g))
                nans++;
            if (bad < 5)
                fprintf(stderr, "check: %s: element %zu: got %.9g, want %.9g (allowed +-%.3g)\n",
                        what, i, g, w, allowed);
            bad++;
        } else if (allowed > 0 && err / allowed > worst) {
            worst = err / allowed;
        }
    }
    if (bad)
        fprintf(stderr, "check: FAIL %s: %zu of %zu elements wrong (%zu NaN)\n", what, bad, count,
                nans);
    else
        printf("check: ok   %s: %zu elements, worst error %.2f of allowed\n", what, count, worst);
    return bad;
}

/* Confirms the library is the kind of build this check was compiled for. */
static inline int kbc_check_info(const char *want_name)
{
    const kbpkg_kernel_info_t *info = kbpkg_kernel_info();
    if (info == NULL || info->abi != KBPKG_KERNEL_ABI || strcmp(info->name, want_name) != 0 ||
        info->backend != KBC_EXPECT_BACKEND) {
        fprintf(stderr, "check: FAIL kbpkg_kernel_info: want abi %d, %s, backend %d; got %s\n",
                KBPKG_KERNEL_ABI, want_name, KBC_EXPECT_BACKEND, info ? info->name : "(null)");
        return 1;
    }
    printf("check: library %s %s target %s\n", info->name, info->version, info->target);
    return 0;
}

#endif
