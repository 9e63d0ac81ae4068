/* Loader figures on the GPU machine: cold kb_kernel_open (probe with driver init included),
 * warm kb_kernel_open/close cycles, and plain dlopen+dlsym of the same library, as medians. */
#define _GNU_SOURCE
#include <kbpkg/kbpkg.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define N 500

int main(int argc, char **argv)
{
    const char *ref = argc > 1 ? argv[1] : "radeonflow/gemm";
    const char *sym = argc > 2 ? argv[2] : "rf_gemm_bf16";
    kb_ctx *ctx = NULL;
    double t0 = now_us();
    kb_ctx_new(&ctx, NULL);
    kb_kernel *k = NULL;
    if (kb_kernel_open(&k, ctx, ref, 0)) {
        fprintf(stderr, "loader_timing: %s\n", kb_ctx_last_error(ctx)->message);
        return 1;
    }
    double cold = now_us() - t0;
    char lib[4096];
    snprintf(lib, sizeof(lib), "%s/lib/lib%s.so", kb_kernel_path(k), strrchr(ref, '/') + 1);
    printf("target %s\n", kb_kernel_target(k));
    static double warm[N], plain[N];
    for (int i = 0; i < N; i++) {
        kb_kernel *w = NULL;
        double s = now_us();
        int rc = kb_kernel_open(&w, ctx, ref, 0);
        void *f = rc ? NULL : kb_kernel_sym(w, sym);
        warm[i] = now_us() - s;
        if (!f)
            return 1;
        kb_kernel_close(w);
    }
    for (int i = 0; i < N; i++) {
        double s = now_us();
        void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
        void *f = h ? dlsym(h, sym) : NULL;
        plain[i] = now_us() - s;
        if (!f)
            return 1;
        dlclose(h);
    }
    double mw = median(warm, N), mp = median(plain, N);
    printf("cold kb_kernel_open (ctx + probe incl. driver init + load): %.0f us\n", cold);
    printf("warm kb_kernel_open+sym (median of %d, library kept loaded by k): %.1f us\n", N, mw);
    printf("dlopen+dlsym same library (median of %d, refcounted): %.1f us\n", N, mp);
    printf("ratio warm open / dlopen: %.1f\n", mp > 0 ? mw / mp : 0);
    kb_kernel_close(k);
    kb_ctx_free(ctx);
    return 0;
}
