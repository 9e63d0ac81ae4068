/* Two builds of radeonflow/gemm's CPU library side by side: for each shape, rounds that time
 * build A, then build B (each the median of 15 calls after a warm one), a pause between, and the
 * median over rounds of each and of B's speed-up over A. For tuning the CPU kernel: build the
 * variants (e.g. the package's src/gemm_cpu.c before and after a change) as the builder does,
 *
 *   cc -O3 -march=x86-64-v4 -fPIC -shared -fvisibility=hidden -Ikernels/radeonflow/gemm/include \
 *      -Iinclude kernels/radeonflow/gemm/src/gemm_cpu.c -o /tmp/b.so
 *   build/bench/kbpkg_bench_gemm_ab /tmp/a.so /tmp/b.so "1,32,4096,4096;0,2048,2048,2048" [rounds]
 *
 * (built with the project, KBPKG_BENCH; by hand: cc -O2 -Ikernels/common bench/cpu/gemm_ab.c -ldl)
 *
 * A shape is "type,M,N,K": type 0 f32, 1 bf16, 2 f16, 3 FP8 block-scaled (unit scales).
 * Operands hold small integers / 8 (exact in every type); output GFLOP/s of each and B/A. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kbpkg_half.h"

typedef int (*gemm_fn)(int, int, int, float, const void *, int, const void *, int, float, void *,
                       int, void *);
typedef int (*fp8_fn)(int, int, int, const void *, const float *, const void *, const float *,
                      void *, void *);

typedef struct lib {
    gemm_fn typed[3];
    fp8_fn fp8;
} lib;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof v[0], cmp);
    return v[n / 2];
}

static void open_lib(lib *l, const char *path)
{
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "gemm_ab: %s\n", dlerror());
        exit(2);
    }
    static const char *const names[] = {"rf_gemm_f32", "rf_gemm_bf16", "rf_gemm_f16"};
    for (int t = 0; t < 3; t++)
        l->typed[t] = (gemm_fn)(uintptr_t)dlsym(h, names[t]);
    l->fp8 = (fp8_fn)(uintptr_t)dlsym(h, "rf_gemm_fp8_blockscale");
    if (!l->typed[0] || !l->typed[1] || !l->typed[2] || !l->fp8) {
        fprintf(stderr, "gemm_ab: %s lacks an rf_gemm export\n", path);
        exit(2);
    }
}

typedef struct problem {
    int type, M, N, K;
    void *A, *B, *C;
    float *scales;
} problem;

static void call(const lib *l, const problem *p)
{
    if (p->type == 3)
        l->fp8(p->M, p->N, p->K, p->A, p->scales, p->B, p->scales, p->C, NULL);
    else
        l->typed[p->type](p->M, p->N, p->K, 1.0f, p->A, p->K, p->B, p->N, 0.0f, p->C, p->N, NULL);
}

/* the median of 15 calls, after one */
static double time_calls(const lib *l, const problem *p)
{
    double t[15];
    call(l, p);
    for (int i = 0; i < 15; i++) {
        double t0 = now();
        call(l, p);
        t[i] = now() - t0;
    }
    return median(t, 15);
}

/* n elements of small integers / 8 (exact in f32, bf16 and f16), or e4m3 near 1 */
static void *operand(int type, size_t n)
{
    size_t es = type == 0 ? 4 : type == 3 ? 1 : 2;
    unsigned char *p = malloc(n * es + 1);
    if (p == NULL)
        exit(2);
    for (size_t i = 0; i < n; i++) {
        float f = (float)(rand() % 17 - 8) / 8.0f;
        if (type == 0) {
            memcpy(p + 4 * i, &f, 4);
        } else if (type == 3) {
            p[i] = (unsigned char)(0x30 + rand() % 8);
        } else {
            uint16_t h = type == 1 ? kbpkg_f32_to_bf16(f) : kbpkg_f32_to_f16(f);
            memcpy(p + 2 * i, &h, 2);
        }
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gemm_ab A.so B.so \"type,M,N,K;...\" [rounds]\n");
        return 2;
    }
    lib a, b;
    open_lib(&a, argv[1]);
    open_lib(&b, argv[2]);
    int rounds = argc > 4 ? (int)strtol(argv[4], NULL, 10) : 5;
    rounds = rounds < 1 ? 1 : rounds > 64 ? 64 : rounds;
    for (const char *s = argv[3]; s && *s;) {
        problem p = {0, 0, 0, 0, NULL, NULL, NULL, NULL};
        if (sscanf(s, "%d,%d,%d,%d", &p.type, &p.M, &p.N, &p.K) != 4 || p.type < 0 || p.type > 3 ||
            p.M < 1 || p.N < 1 || p.K < 1 || (p.type == 3 && p.K % 128)) {
            fprintf(stderr, "gemm_ab: bad shape at \"%s\"\n", s);
            return 2;
        }
        p.A = operand(p.type, (size_t)p.M * p.K);
        p.B = operand(p.type, (size_t)p.K * p.N);
        p.C = malloc((size_t)p.M * p.N * 4 + 4);
        size_t ns = (size_t)(p.M + p.N + 128) * (size_t)(p.K / 128 + 1);
        p.scales = malloc(ns * sizeof(float));
        if (!p.C || !p.scales)
            return 2;
        for (size_t i = 0; i < ns; i++)
            p.scales[i] = 1.0f;
        double ta[64], tb[64], ratio[64];
        for (int r = 0; r < rounds; r++) {
            struct timespec pause = {0, 50 * 1000 * 1000};
            ta[r] = time_calls(&a, &p);
            nanosleep(&pause, NULL);
            tb[r] = time_calls(&b, &p);
            nanosleep(&pause, NULL);
            ratio[r] = ta[r] / tb[r];
        }
        double flops = 2.0 * p.M * p.N * p.K, ma = median(ta, rounds), mb = median(tb, rounds);
        printf("type %d %dx%dx%d: A %.1f GFLOP/s, B %.1f GFLOP/s, B/A %.3f (median of %d rounds)\n",
               p.type, p.M, p.N, p.K, flops / ma / 1e9, flops / mb / 1e9, median(ratio, rounds),
               rounds);
        free(p.A), free(p.B), free(p.C), free(p.scales);
        s = strchr(s, ';');
        s = s ? s + 1 : NULL;
    }
    return 0;
}
