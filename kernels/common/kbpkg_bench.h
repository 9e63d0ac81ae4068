/* Shared by the package benchmarks (tests/bench.c): timing, the vendor baselines reached by
 * dlopen at run time (cuBLAS, a CPU BLAS; never linked) and the one-JSON-line-per-case output
 * that `kbpkg bench` reads (docs/kernels.md). */
#ifndef KBPKG_BENCH_H
#define KBPKG_BENCH_H

#include <dlfcn.h>

#include "kbpkg_check.h"

#if defined(KBPKG_CHECK_CUDA)
#define kbb_rt_d2d(d, s, n) cudaMemcpy((d), (s), (n), cudaMemcpyDeviceToDevice)
#elif defined(KBPKG_CHECK_HIP)
#define kbb_rt_d2d(d, s, n) hipMemcpy((d), (s), (n), hipMemcpyDeviceToDevice)
#endif

/* --quick or KBPKG_BENCH_QUICK=1: small sizes and few repetitions (CI). */
static inline int kbb_quick(int argc, char **argv)
{
    const char *env = getenv("KBPKG_BENCH_QUICK");
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--quick") == 0)
            return 1;
    return env != NULL && strcmp(env, "1") == 0;
}

static inline int kbb_on_gpu(void)
{
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    return 1;
#else
    return 0;
#endif
}

static inline void kbb_sync(void)
{
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    if (kbc_rt_sync() != KBC_RT_OK)
        kbc_die("device error during the benchmark");
#endif
}

static inline double kbb_now(void)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC); /* C11: the packages build with -std=c11, no POSIX clocks */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int kbb_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef int (*kbb_fn)(void *arg);

/* Back-to-back calls that fill about 20 ms (2 ms quick), from the time of one warm call. */
static inline int kbb_calls_per_rep(double one, int quick)
{
    double target = quick ? 2e-3 : 20e-3;
    int iters = one > 0 && target / one < 1000 ? (int)(target / one) : 1000;
    return iters < 1 ? 1 : iters;
}

/* Median seconds per call: a warm-up call, a second call that sizes the repetitions, then
 * repetitions of enough back-to-back calls to fill about 20 ms (2 ms quick), each ended by a
 * device sync. The size comes from the warm call: the first one pays for loading the module
 * and first-use setup (tens of ms), which sized to one call per repetition, so every timed call
 * carried a device sync and whatever the sync undoes (a stream-ordered pool trimmed back to the
 * OS: a fresh allocation per call). A nonzero return aborts. */
static inline double kbb_time(kbb_fn fn, void *arg, int quick)
{
    if (fn(arg) != 0)
        kbc_die("the timed call failed");
    kbb_sync();
    double t0 = kbb_now();
    if (fn(arg) != 0)
        kbc_die("the timed call failed");
    kbb_sync();
    double t[15];
    int iters = kbb_calls_per_rep(kbb_now() - t0, quick), reps = quick ? 3 : 15;
    for (int r = 0; r < reps; r++) {
        double start = kbb_now();
        for (int i = 0; i < iters; i++)
            fn(arg);
        kbb_sync();
        t[r] = (kbb_now() - start) / iters;
    }
    qsort(t, (size_t)reps, sizeof t[0], kbb_cmp_double);
    return t[reps / 2];
}

/* One case, one line: rate is TFLOP/s when flops > 0, else GB/s of bytes. The baseline is
 * omitted when base_seconds <= 0, with the reason in base_note. */
static inline void kbb_emit(const char *name, const char *shape, double seconds, double flops,
                            double bytes, const char *base_name, double base_seconds,
                            const char *base_note)
{
    const char *unit = flops > 0 ? "tflops" : "gbps";
    double work = flops > 0 ? flops / 1e12 : bytes / 1e9;
    printf("{\"case\": \"%s\", \"shape\": \"%s\", \"seconds\": %.9g, \"%s\": %.6g", name, shape,
           seconds, unit, work / seconds);
    if (base_seconds > 0)
        printf(", \"baseline\": {\"name\": \"%s\", \"seconds\": %.9g, \"%s\": %.6g}", base_name,
               base_seconds, unit, work / base_seconds);
    else
        printf(", \"baseline\": null, \"baseline_note\": \"%s\"", base_note ? base_note : "");
    printf("}\n");
    fflush(stdout);
}

static inline void *kbb_dlopen_first(const char *const *names)
{
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (h)
            return h;
    }
    return NULL;
}

/* A CPU BLAS's cblas_sgemm (OpenBLAS first, then the system libblas), or NULL. */
typedef void (*kbb_sgemm_fn)(int order, int ta, int tb, int M, int N, int K, float alpha,
                             const float *A, int lda, const float *B, int ldb, float beta, float *C,
                             int ldc);
enum { KBB_ROW_MAJOR = 101, KBB_NO_TRANS = 111, KBB_TRANS = 112 };
static inline kbb_sgemm_fn kbb_cpu_sgemm(const char **name)
{
    static const char *const libs[] = {"libopenblas.so.0", "libblas.so.3", "libcblas.so.3", NULL};
    void *h = kbb_dlopen_first(libs);
    *name = "no CPU BLAS found (libopenblas.so.0, libblas.so.3)";
    if (!h)
        return NULL;
    kbb_sgemm_fn f = (kbb_sgemm_fn)(uintptr_t)dlsym(h, "cblas_sgemm");
    if (f)
        *name = dlsym(h, "openblas_get_num_threads") ? "openblas sgemm" : "cblas sgemm";
    /* OpenBLAS picks its kernels by CPU model at run time and falls back to older ones on
     * models it does not know (0.3.21 runs Haswell's AVX2 kernels on a Zen 5): the name says
     * which, since that, more than the library, sets the baseline */
    typedef const char *(*corename_fn)(void);
    corename_fn core = f ? (corename_fn)(uintptr_t)dlsym(h, "openblas_get_corename") : NULL;
    static char named[64];
    if (core && core())
        snprintf(named, sizeof named, "openblas sgemm (%s)", core()), *name = named;
    return f;
}

/* cuBLAS's cublasGemmEx (row-major through the column-major swap), or NULL. */
typedef int (*kbb_gemmex_fn)(void *h, int ta, int tb, int m, int n, int k, const void *alpha,
                             const void *A, int at, int lda, const void *B, int bt, int ldb,
                             const void *beta, void *C, int ct, int ldc, int compute, int algo);
typedef struct kbb_cublas {
    void *handle;
    kbb_gemmex_fn gemm_ex;
} kbb_cublas;
enum { KBB_CUDA_R_32F = 0, KBB_CUDA_R_16F = 2, KBB_CUDA_R_16BF = 14, KBB_COMPUTE_32F = 68 };
static inline int kbb_cublas_open(kbb_cublas *cb)
{
    static const char *const libs[] = {"libcublas.so.13", "libcublas.so.12", "libcublas.so", NULL};
    void *h = kbb_on_gpu() ? kbb_dlopen_first(libs) : NULL;
    typedef int (*create_fn)(void **);
    create_fn create = h ? (create_fn)(uintptr_t)dlsym(h, "cublasCreate_v2") : NULL;
    cb->gemm_ex = h ? (kbb_gemmex_fn)(uintptr_t)dlsym(h, "cublasGemmEx") : NULL;
    return create && cb->gemm_ex && create(&cb->handle) == 0 ? 0 : -1;
}

/* Row-major C[M,N] = A[M,K] B[K,N] (B_kmajor: B stored [N,K]) in cuBLAS, fp32 accumulation. */
static inline int kbb_cublas_gemm(kbb_cublas *cb, int type, int M, int N, int K, const void *A,
                                  const void *B, int b_kmajor, void *C)
{
    float one = 1.0f, zero = 0.0f;
    return cb->gemm_ex(cb->handle, b_kmajor ? 1 : 0, 0, N, M, K, &one, B, type, b_kmajor ? K : N, A,
                       type, K, &zero, C, type, N, KBB_COMPUTE_32F, -1);
}

#endif
