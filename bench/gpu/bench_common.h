/* Shared by the GPU benchmarks: error checks, fresh random fills, event timing with medians. */
#ifndef KB_BENCH_COMMON_H
#define KB_BENCH_COMMON_H

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <vector>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* for the benches that call cuBLAS (the macro needs cublas_v2.h only where it is used) */
#define CKB(call)                                                                                  \
    do {                                                                                           \
        cublasStatus_t s_ = (call);                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s: cublas status %d\n", __FILE__, __LINE__, #call, (int)s_);  \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* splitmix-style hash -> uniform [-1, 1), stored as 16-bit bits (bf16 or f16) or fp32. */
__device__ __forceinline__ float bench_uniform(uint64_t seed, uint64_t i)
{
    uint64_t z = seed + i * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (float)(z >> 40) / 8388608.0f - 1.0f;
}

enum bench_dtype { B_F32 = 0, B_BF16 = 1, B_F16 = 2 };

__global__ void bench_fill(void *p, size_t n, uint64_t seed, int dtype, float scale)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = bench_uniform(seed, i) * scale;
        if (dtype == B_F32)
            ((float *)p)[i] = v;
        else if (dtype == B_BF16) {
            uint32_t u = __float_as_uint(v);
            u += 0x7fffu + ((u >> 16) & 1u);
            ((uint16_t *)p)[i] = (uint16_t)(u >> 16);
        } else
            ((uint16_t *)p)[i] = __half_as_ushort(__float2half_rn(v));
    }
}

/* A 16-bit value (bf16 or f16 bits, as bench_fill stores them) widened to double. */
__device__ __forceinline__ double bench_load16(uint16_t v, int dtype)
{
    return dtype == B_BF16 ? (double)__uint_as_float((uint32_t)v << 16)
                           : (double)__half2float(__ushort_as_half(v));
}

/* ||x - y||^2 and ||y||^2 over rows x cols of two 16-bit matrices with leading dimension ld,
 * added into acc[0..1]; a NaN in x adds 1e300, so it fails any tolerance. */
__global__ void bench_rel_err_kernel(const uint16_t *x, const uint16_t *y, int rows, int cols,
                                     int ld, int dtype, double *acc)
{
    double num = 0, den = 0;
    size_t n = (size_t)rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t o = (i / cols) * ld + i % cols;
        double a = bench_load16(x[o], dtype), b = bench_load16(y[o], dtype);
        num += (a - b) * (a - b);
        den += b * b;
        if (a != a)
            num += 1e300;
    }
    atomicAdd(&acc[0], num);
    atomicAdd(&acc[1], den);
}

/* ||x - y|| / ||y|| of two 16-bit matrices (y the reference), computed on stream st. */
static inline double bench_rel_err(const uint16_t *x, const uint16_t *y, int rows, int cols, int ld,
                                   int dtype, cudaStream_t st = 0)
{
    double *acc, h[2];
    CK(cudaMalloc(&acc, 2 * sizeof(double)));
    CK(cudaMemsetAsync(acc, 0, 2 * sizeof(double), st));
    bench_rel_err_kernel<<<1024, 256, 0, st>>>(x, y, rows, cols, ld, dtype, acc);
    CK(cudaMemcpyAsync(h, acc, sizeof h, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    CK(cudaFree(acc));
    return std::sqrt(h[0] / (h[1] > 0 ? h[1] : 1));
}

/* The symbol sym of the shared library at path (dlopen'ed and kept open), or NULL with the
 * reason on stderr: how the benches time another build of a package beside this one. */
static inline void *bench_lib_symbol(const char *path, const char *sym)
{
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!so) {
        fprintf(stderr, "%s: %s\n", path, dlerror());
        return nullptr;
    }
    void *f = dlsym(so, sym);
    if (!f)
        fprintf(stderr, "%s: no %s\n", path, sym);
    return f;
}

static inline uint64_t bench_seed(void)
{
    static uint64_t counter = 0; /* benchmark program, not library code */
    return (uint64_t)time(NULL) * 0x2545f4914f6cdd1dull + (++counter) * 0x9e3779b97f4a7c15ull;
}

static inline void bench_fill_random(void *p, size_t n, int dtype, float scale = 1.0f)
{
    bench_fill<<<1024, 256>>>(p, n, bench_seed(), dtype, scale);
    CK(cudaGetLastError());
}

/* Runs fn(rep) warmup times, then times each of reps calls with events; returns the median ms. */
/* Operand sets of one 16-bit GEMM shape rotated between timed calls: enough (2..16) that no
 * call finds its operands in the 60 MB L2, each A, B and C filled with fresh random values. */
struct bench_gemm_sets {
    int count;
    std::vector<uint16_t *> A, B, C;
};
static inline bench_gemm_sets bench_gemm_sets_alloc(size_t na, size_t nb, size_t nc, int dtype)
{
    size_t set_bytes = (na + nb + nc) * 2;
    bench_gemm_sets g;
    g.count = (int)std::min<size_t>(16, std::max<size_t>(2, (3 * 60u << 20) / set_bytes + 1));
    g.A.resize(g.count), g.B.resize(g.count), g.C.resize(g.count);
    for (int s = 0; s < g.count; s++) {
        CK(cudaMalloc(&g.A[s], na * 2));
        CK(cudaMalloc(&g.B[s], nb * 2));
        CK(cudaMalloc(&g.C[s], nc * 2));
        bench_fill_random(g.A[s], na, dtype);
        bench_fill_random(g.B[s], nb, dtype);
        bench_fill_random(g.C[s], nc, dtype);
    }
    return g;
}
static inline void bench_gemm_sets_free(bench_gemm_sets &g)
{
    for (int s = 0; s < g.count; s++) {
        CK(cudaFree(g.A[s]));
        CK(cudaFree(g.B[s]));
        CK(cudaFree(g.C[s]));
    }
}

/* Microseconds per call of a graph that holds `calls` calls: `warm` untimed replays, then the
 * median of `reps` replays timed one by one with events on st. */
static inline double bench_graph_median_us(cudaGraphExec_t ge, cudaStream_t st, int calls, int warm,
                                           int reps)
{
    cudaEvent_t a, z;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&z));
    for (int i = 0; i < warm; i++)
        CK(cudaGraphLaunch(ge, st));
    CK(cudaStreamSynchronize(st));
    std::vector<double> t;
    for (int i = 0; i < reps; i++) {
        float ms;
        CK(cudaEventRecord(a, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(z, st));
        CK(cudaEventSynchronize(z));
        CK(cudaEventElapsedTime(&ms, a, z));
        t.push_back(ms * 1000.0 / calls);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(z));
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

/* A TMA tile row's clusters in the GEMM benchmarks' plan labels (radeonflow/gemm's kTsTiles:
 * cl blocks along M, cln along N): "", " cl2" or " cl2x2". */
template <typename Tile> static const char *bench_cluster_label(const Tile &t)
{
    return t.cl > 1 ? (t.cln > 1 ? " cl2x2" : " cl2") : "";
}

/* A TMA plan as the GEMM benches label it: "128x128 cl2 s3" (ctas: also "x1" after the tile),
 * "sK" for stream-K (splits 0, rf::TS_STREAM). */
template <typename Tile>
static void bench_plan_label(char *b, size_t n, const Tile &t, int splits, bool ctas)
{
    char k[16];
    if (splits == 0)
        snprintf(k, sizeof k, "sK");
    else
        snprintf(k, sizeof k, "s%d", splits);
    if (ctas)
        snprintf(b, n, "%dx%dx%d%s %s", t.bm, t.bn, t.ctas, bench_cluster_label(t), k);
    else
        snprintf(b, n, "%dx%d%s %s", t.bm, t.bn, bench_cluster_label(t), k);
}

/* Calls run(M, N, K) for each shape of the environment variable env ("MxNxK,MxNxK,..."), or for
 * each of the n built-in shapes when it is unset. 0, or 2 with the reason on stderr when the
 * list cannot be read. */
template <typename F>
static int bench_each_shape(const char *env, const int (*shapes)[3], size_t n, F run)
{
    const char *list = getenv(env);
    if (!list) {
        for (size_t i = 0; i < n; i++)
            run(shapes[i][0], shapes[i][1], shapes[i][2]);
        return 0;
    }
    for (const char *p = list; *p;) {
        int M, N, K, used = 0;
        if (sscanf(p, "%dx%dx%d%n", &M, &N, &K, &used) != 3 || M < 1 || N < 1 || K < 1) {
            fprintf(stderr, "%s: cannot read a shape MxNxK at '%s'\n", env, p);
            return 2;
        }
        run(M, N, K);
        p += used;
        p += *p == ',';
    }
    return 0;
}

template <typename F> static double bench_median_ms(F fn, int warmup, int reps)
{
    for (int i = 0; i < warmup; i++)
        fn(i);
    CK(cudaDeviceSynchronize());
    std::vector<cudaEvent_t> ev(2 * reps);
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    for (int i = 0; i < reps; i++) {
        CK(cudaEventRecord(ev[2 * i]));
        fn(warmup + i);
        CK(cudaEventRecord(ev[2 * i + 1]));
    }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    std::vector<double> ms(reps);
    for (int i = 0; i < reps; i++) {
        float t;
        CK(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]));
        ms[i] = t;
    }
    for (auto &e : ev)
        CK(cudaEventDestroy(e));
    std::sort(ms.begin(), ms.end());
    return ms[reps / 2];
}

/* Times nv variants interleaved: two untimed rounds, then reps rounds that call(v, i) each
 * variant once between its own events, so clock and power drift hit all of them alike. Call's
 * i picks the operand set (i % sets): it counts calls, so consecutive calls never share a set
 * and a set comes back only after `sets` calls. (It was round + variant: then the last call of
 * a round and the first of the next shared a set whenever nv - 2 was a multiple of the set
 * count, and the first variant, cuBLAS in the GEMM benches, read operands the call before had
 * just left in L2: 1x4096x4096 gave cuBLAS 12.0 us against 16.8 cold, docs/perf.md
 * "Seventeenth pass".) Medians in ms. */
template <typename F>
static std::vector<double> bench_interleaved_median_ms(size_t nv, int reps, F call)
{
    std::vector<cudaEvent_t> ev(2 * nv * reps);
    for (auto &e : ev)
        CK(cudaEventCreate(&e));
    int calls = 0;
    for (int i = 0; i < 2; i++)
        for (size_t v = 0; v < nv; v++)
            call(v, calls++);
    for (int i = 0; i < reps; i++)
        for (size_t v = 0; v < nv; v++) {
            CK(cudaEventRecord(ev[2 * (v * reps + i)]));
            call(v, calls++);
            CK(cudaEventRecord(ev[2 * (v * reps + i) + 1]));
        }
    CK(cudaDeviceSynchronize());
    CK(cudaGetLastError());
    std::vector<double> med(nv);
    for (size_t v = 0; v < nv; v++) {
        std::vector<double> ms(reps);
        for (int i = 0; i < reps; i++) {
            float t;
            CK(cudaEventElapsedTime(&t, ev[2 * (v * reps + i)], ev[2 * (v * reps + i) + 1]));
            ms[i] = t;
        }
        std::sort(ms.begin(), ms.end());
        med[v] = ms[reps / 2];
    }
    for (auto &e : ev)
        CK(cudaEventDestroy(e));
    return med;
}

#endif
