/* kbpkg-community/activation and rmsnorm against the measured device-to-device copy bandwidth
 * (bytes read + bytes written). Links the built package libraries through their public API. */
#include "bench_common.h"
#include "kb_activation.h"
#include "kb_rmsnorm.h"

#include <cuda_fp16.h>

#include <cstring>

/* Rotating sets so consecutive runs never hit the 60 MB L2: each set is far larger anyway. */
static const int SETS = 2;

static double copy_gbps(size_t bytes)
{
    void *src[SETS], *dst[SETS];
    for (int s = 0; s < SETS; s++) {
        CK(cudaMalloc(&src[s], bytes));
        CK(cudaMalloc(&dst[s], bytes));
        bench_fill_random(src[s], bytes / 4, B_F32);
    }
    double ms = bench_median_ms(
        [&](int i) {
            CK(cudaMemcpyAsync(dst[i % SETS], src[i % SETS], bytes, cudaMemcpyDeviceToDevice));
        },
        5, 30);
    for (int s = 0; s < SETS; s++) {
        CK(cudaFree(src[s]));
        CK(cudaFree(dst[s]));
    }
    return 2.0 * bytes / ms / 1e6;
}

typedef int (*act_fn)(void *, const void *, int64_t, int64_t, void *);
typedef int (*rms_fn)(void *, const void *, const void *, int64_t, int64_t, float, void *);

static void report(const char *what, const char *t, int64_t n, int64_t d, double bytes, double ms,
                   double copy)
{
    double gbps = bytes / ms / 1e6;
    printf("%-14s %-5s n=%-6lld d=%-6lld %8.3f ms %8.1f GB/s  %5.1f%% of copy\n", what, t,
           (long long)n, (long long)d, ms, gbps, 100.0 * gbps / copy);
}

static void bench_act(const char *name, act_fn fn, int gated, int dtype, const char *t, int64_t n,
                      int64_t d, double copy)
{
    size_t es = dtype == B_F32 ? 4 : 2, nin = (size_t)(n * d * (gated ? 2 : 1)),
           nout = (size_t)(n * d);
    void *in[SETS], *out[SETS];
    for (int s = 0; s < SETS; s++) {
        CK(cudaMalloc(&in[s], nin * es));
        CK(cudaMalloc(&out[s], nout * es));
        bench_fill_random(in[s], nin, dtype, 4.0f);
    }
    double ms = bench_median_ms(
        [&](int i) {
            if (fn(out[i % SETS], in[i % SETS], n, d, 0) != 0) {
                fprintf(stderr, "%s failed\n", name);
                exit(1);
            }
        },
        5, 30);
    report(name, t, n, d, (double)(nin + nout) * es, ms, copy);
    for (int s = 0; s < SETS; s++) {
        CK(cudaFree(in[s]));
        CK(cudaFree(out[s]));
    }
}

static void bench_rms(rms_fn fn, int dtype, const char *t, int64_t n, int64_t d, double copy)
{
    size_t es = dtype == B_F32 ? 4 : 2, count = (size_t)(n * d);
    void *x[SETS], *out[SETS], *w;
    CK(cudaMalloc(&w, (size_t)d * es));
    bench_fill_random(w, (size_t)d, dtype);
    for (int s = 0; s < SETS; s++) {
        CK(cudaMalloc(&x[s], count * es));
        CK(cudaMalloc(&out[s], count * es));
        bench_fill_random(x[s], count, dtype, 3.0f);
    }
    double ms = bench_median_ms(
        [&](int i) {
            if (fn(out[i % SETS], x[i % SETS], w, n, d, 1e-6f, 0) != 0) {
                fprintf(stderr, "rmsnorm failed\n");
                exit(1);
            }
        },
        5, 30);
    report("rmsnorm", t, n, d, (double)(2 * count + (size_t)d) * es, ms, copy);
    for (int s = 0; s < SETS; s++) {
        CK(cudaFree(x[s]));
        CK(cudaFree(out[s]));
    }
    CK(cudaFree(w));
}

#define ACT(f) ((act_fn)(void *)(f))
#define RMS(f) ((rms_fn)(void *)(f))

int main(void)
{
    double copy = copy_gbps((size_t)1 << 30);
    printf("device-to-device copy, 1 GiB: %.1f GB/s (read + write)\n", copy);
    const int64_t n = 16384, d = 8192;
    bench_act("silu_and_mul", ACT(act_silu_and_mul_bf16), 1, B_BF16, "bf16", n, d, copy);
    bench_act("silu_and_mul", ACT(act_silu_and_mul_f16), 1, B_F16, "f16", n, d, copy);
    bench_act("silu_and_mul", ACT(act_silu_and_mul_f32), 1, B_F32, "f32", n, d, copy);
    bench_act("gelu_and_mul", ACT(act_gelu_and_mul_bf16), 1, B_BF16, "bf16", n, d, copy);
    bench_act("gelu_tanh", ACT(act_gelu_tanh_bf16), 0, B_BF16, "bf16", n, d, copy);
    bench_act("silu_and_mul", ACT(act_silu_and_mul_bf16), 1, B_BF16, "bf16", 64, 14336, copy);
    bench_rms(RMS(rmsnorm_bf16), B_BF16, "bf16", n, d, copy);
    bench_rms(RMS(rmsnorm_f16), B_F16, "f16", n, d, copy);
    bench_rms(RMS(rmsnorm_f32), B_F32, "f32", n, d, copy);
    bench_rms(RMS(rmsnorm_bf16), B_BF16, "bf16", 65536, 4096, copy);
    bench_rms(RMS(rmsnorm_bf16), B_BF16, "bf16", 64, 4096, copy);
    return 0;
}
