/* gemm_demo: load radeonflow/gemm for this machine's device (installing it on a miss), run an
 * fp32 GEMM, check it against a CPU reference and say which target ran.
 * Build standalone: cc gemm_demo.c $(pkg-config --cflags --libs kbpkg) -ldl -lm -o gemm_demo */
#include <kbpkg/kbpkg.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*gemm_f32_fn)(int M, int N, int K, float alpha, const float *A, int lda,
                           const float *B, int ldb, float beta, float *C, int ldc, void *stream);

/* Device memory through the vendor runtime, loaded with dlopen so the demo runs anywhere. */
typedef struct device_api {
    void *lib;
    int (*alloc)(void **ptr, size_t bytes);
    int (*to_device)(void *dst, const void *src, size_t bytes);
    int (*to_host)(void *dst, const void *src, size_t bytes);
    int (*sync)(void);
    void (*release)(void *ptr);
} device_api;

/* CUDA driver API: cudart inside the artifact uses the primary context, so retain it here. */
typedef int (*cu_init_t)(unsigned);
typedef int (*cu_dev_get_t)(int *, int);
typedef int (*cu_retain_t)(void **, int);
typedef int (*cu_set_t)(void *);
typedef int (*cu_alloc_t)(unsigned long long *, size_t);
typedef int (*cu_copy_htod_t)(unsigned long long, const void *, size_t);
typedef int (*cu_copy_dtoh_t)(void *, unsigned long long, size_t);
typedef int (*cu_sync_t)(void);
typedef int (*cu_free_t)(unsigned long long);

static void *g_cuda; /* demo program state: the dlopen handle of libcuda */

static int cuda_alloc(void **ptr, size_t bytes)
{
    unsigned long long d = 0;
    int rc = ((cu_alloc_t)dlsym(g_cuda, "cuMemAlloc_v2"))(&d, bytes);
    *ptr = (void *)(uintptr_t)d;
    return rc;
}
static int cuda_to_device(void *dst, const void *src, size_t bytes)
{
    return ((cu_copy_htod_t)dlsym(g_cuda, "cuMemcpyHtoD_v2"))((uintptr_t)dst, src, bytes);
}
static int cuda_to_host(void *dst, const void *src, size_t bytes)
{
    return ((cu_copy_dtoh_t)dlsym(g_cuda, "cuMemcpyDtoH_v2"))(dst, (uintptr_t)src, bytes);
}
static int cuda_sync(void)
{
    return ((cu_sync_t)dlsym(g_cuda, "cuCtxSynchronize"))();
}
static void cuda_release(void *ptr)
{
    ((cu_free_t)dlsym(g_cuda, "cuMemFree_v2"))((uintptr_t)ptr);
}

static int open_cuda(device_api *api)
{
    g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!g_cuda)
        return -1;
    int dev = 0;
    void *ctx = NULL;
    if (((cu_init_t)dlsym(g_cuda, "cuInit"))(0) ||
        ((cu_dev_get_t)dlsym(g_cuda, "cuDeviceGet"))(&dev, 0) ||
        ((cu_retain_t)dlsym(g_cuda, "cuDevicePrimaryCtxRetain"))(&ctx, dev) ||
        ((cu_set_t)dlsym(g_cuda, "cuCtxSetCurrent"))(ctx))
        return -1;
    *api = (device_api){g_cuda, cuda_alloc, cuda_to_device, cuda_to_host, cuda_sync, cuda_release};
    return 0;
}

/* HIP runtime: hipMemcpy kinds 1 = host to device, 2 = device to host. */
static void *g_hip;
static int hip_alloc(void **ptr, size_t bytes)
{
    return ((int (*)(void **, size_t))dlsym(g_hip, "hipMalloc"))(ptr, bytes);
}
static int hip_copy(void *dst, const void *src, size_t bytes, int kind)
{
    return ((int (*)(void *, const void *, size_t, int))dlsym(g_hip, "hipMemcpy"))(dst, src, bytes,
                                                                                   kind);
}
static int hip_to_device(void *dst, const void *src, size_t bytes)
{
    return hip_copy(dst, src, bytes, 1);
}
static int hip_to_host(void *dst, const void *src, size_t bytes)
{
    return hip_copy(dst, src, bytes, 2);
}
static int hip_sync(void)
{
    return ((int (*)(void))dlsym(g_hip, "hipDeviceSynchronize"))();
}
static void hip_release(void *ptr)
{
    ((int (*)(void *))dlsym(g_hip, "hipFree"))(ptr);
}

static int open_hip(device_api *api)
{
    const char *names[] = {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"};
    for (size_t i = 0; i < 3 && !g_hip; i++)
        g_hip = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!g_hip)
        return -1;
    *api = (device_api){g_hip, hip_alloc, hip_to_device, hip_to_host, hip_sync, hip_release};
    return 0;
}

static void reference_gemm(int M, int N, int K, const float *A, const float *B, double *C)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double acc = 0;
            for (int k = 0; k < K; k++)
                acc += (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
            C[(size_t)i * N + j] = acc;
        }
}

static int run_gemm(gemm_f32_fn gemm, const char *target, int M, int N, int K, const float *A,
                    const float *B, float *C)
{
    size_t sa = (size_t)M * K * 4, sb = (size_t)K * N * 4, sc = (size_t)M * N * 4;
    if (strncmp(target, "cpu-", 4) == 0)
        return gemm(M, N, K, 1.0f, A, K, B, N, 0.0f, C, N, NULL);
    device_api api;
    int opened = strncmp(target, "cuda", 4) == 0 ? open_cuda(&api) : open_hip(&api);
    if (opened) {
        fprintf(stderr, "gemm_demo: cannot open the GPU runtime for %s\n", target);
        return -1;
    }
    void *dA = NULL, *dB = NULL, *dC = NULL;
    int rc = api.alloc(&dA, sa) || api.alloc(&dB, sb) || api.alloc(&dC, sc) ||
             api.to_device(dA, A, sa) || api.to_device(dB, B, sb) || api.to_device(dC, C, sc);
    if (!rc)
        rc = gemm(M, N, K, 1.0f, dA, K, dB, N, 0.0f, dC, N, NULL);
    if (!rc)
        rc = api.sync() || api.to_host(C, dC, sc);
    api.release(dA);
    api.release(dB);
    api.release(dC);
    return rc;
}

int main(int argc, char **argv)
{
    const char *ref = argc > 1 ? argv[1] : "radeonflow/gemm@^1";
    kb_ctx *ctx = NULL;
    if (kb_ctx_new(&ctx, NULL) != KB_OK)
        return 1;
    kb_kernel *k = NULL;
    int rc = kb_kernel_open(&k, ctx, ref, KB_OPEN_INSTALL | KB_OPEN_BUILD | KB_OPEN_ALLOW_UNSIGNED);
    if (rc) {
        fprintf(stderr, "gemm_demo: %s\n", kb_ctx_last_error(ctx)->message);
        kb_ctx_free(ctx);
        return 1;
    }
    gemm_f32_fn gemm = NULL;
    *(void **)&gemm = kb_kernel_sym(k, "rf_gemm_f32");
    const int M = 257, N = 193, K = 131; /* not tile multiples on purpose */
    float *A = malloc((size_t)M * K * 4), *B = malloc((size_t)K * N * 4);
    float *C = malloc((size_t)M * N * 4);
    double *R = malloc((size_t)M * N * 8);
    srand((unsigned)time(NULL));
    for (int i = 0; i < M * K; i++)
        A[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < K * N; i++)
        B[i] = (float)rand() / RAND_MAX - 0.5f;
    for (int i = 0; i < M * N; i++)
        C[i] = NAN; /* poison: every element must be written */
    int ok = gemm && run_gemm(gemm, kb_kernel_target(k), M, N, K, A, B, C) == 0;
    double num = 0, den = 0;
    if (ok) {
        reference_gemm(M, N, K, A, B, R);
        for (int i = 0; i < M * N; i++) {
            double d = (double)C[i] - R[i];
            num += d * d;
            den += R[i] * R[i];
            ok = ok && !isnan(C[i]);
        }
    }
    double relerr = den > 0 ? sqrt(num / den) : 1;
    ok = ok && relerr < 1e-4;
    printf("radeonflow/gemm %s ran on %s (%s)\n", kb_kernel_version(k), kb_kernel_target(k),
           kb_kernel_reason(k));
    printf("rf_gemm_f32 %dx%dx%d: relative error %.2e vs double reference: %s\n", M, N, K, relerr,
           ok ? "PASS" : "FAIL");
    free(A);
    free(B);
    free(C);
    free(R);
    kb_kernel_close(k);
    kb_ctx_free(ctx);
    return ok ? 0 : 1;
}
