/* GPU end-to-end check through the loader: for each first-party package, kb_kernel_open picks
 * the CUDA artifact for the probed GPU, and (with probe.devices=none) the CPU artifact, which
 * is the reference. Every export runs on fresh random data with NaN-poisoned outputs; the GPU
 * result must match the CPU one within bounds that fit the precision, with every element
 * written. Device memory comes from the CUDA driver API through dlopen. Exit 0 = all pass. */
#include <kbpkg/kbpkg.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- CUDA driver API (primary context, shared with the cudart inside the artifact) ---- */
typedef struct cuda {
    void *lib;
    int (*mem_alloc)(unsigned long long *, size_t);
    int (*mem_free)(unsigned long long);
    int (*htod)(unsigned long long, const void *, size_t);
    int (*dtoh)(void *, unsigned long long, size_t);
    int (*sync)(void);
} cuda;

static int cuda_open(cuda *c)
{
    c->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!c->lib)
        return -1;
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(c->lib, "cuInit");
    int (*dev_get)(int *, int) = (int (*)(int *, int))dlsym(c->lib, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(c->lib, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(c->lib, "cuCtxSetCurrent");
    *(void **)&c->mem_alloc = dlsym(c->lib, "cuMemAlloc_v2");
    *(void **)&c->mem_free = dlsym(c->lib, "cuMemFree_v2");
    *(void **)&c->htod = dlsym(c->lib, "cuMemcpyHtoD_v2");
    *(void **)&c->dtoh = dlsym(c->lib, "cuMemcpyDtoH_v2");
    *(void **)&c->sync = dlsym(c->lib, "cuCtxSynchronize");
    int dev = 0;
    void *ctx = NULL;
    if (!init || init(0) || dev_get(&dev, 0) || retain(&ctx, dev) || set(ctx))
        return -1;
    return 0;
}

static void *dev_upload(cuda *c, const void *host, size_t bytes)
{
    unsigned long long d = 0;
    if (c->mem_alloc(&d, bytes ? bytes : 1) || (bytes && c->htod(d, host, bytes)))
        return NULL;
    return (void *)(uintptr_t)d;
}

static int dev_download(cuda *c, void *host, const void *dev, size_t bytes)
{
    return c->sync() || c->dtoh(host, (uintptr_t)dev, bytes);
}

/* ---- element types ---- */
typedef enum { F32, BF16, F16 } dtype;
static const char *dtype_name[] = {"f32", "bf16", "f16"};
static size_t dsize(dtype t)
{
    return t == F32 ? 4 : 2;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void store(void *buf, size_t i, dtype t, float v)
{
    if (t == F32)
        ((float *)buf)[i] = v;
    else if (t == BF16)
        ((uint16_t *)buf)[i] = to_bf16(v);
    else {
        _Float16 h = (_Float16)v;
        memcpy((uint16_t *)buf + i, &h, 2);
    }
}

static float load(const void *buf, size_t i, dtype t)
{
    if (t == F32)
        return ((const float *)buf)[i];
    if (t == BF16)
        return from_bf16(((const uint16_t *)buf)[i]);
    _Float16 h;
    memcpy(&h, (const uint16_t *)buf + i, 2);
    return (float)h;
}

static void *random_buf(size_t n, dtype t, float scale)
{
    void *b = malloc(n * dsize(t) + 1);
    for (size_t i = 0; i < n; i++)
        store(b, i, t, scale * ((float)rand() / (float)RAND_MAX * 2.0f - 1.0f));
    return b;
}

static void *poisoned(size_t n, dtype t)
{
    void *b = malloc(n * dsize(t) + 1);
    for (size_t i = 0; i < n; i++)
        store(b, i, t, NAN);
    return b;
}

/* ||gpu - cpu|| / ||cpu||, or INFINITY when an element is NaN (unwritten or broken). */
static double relerr(const void *gpu, const void *cpu, size_t n, dtype t, size_t *bad)
{
    double num = 0, den = 0;
    *bad = 0;
    for (size_t i = 0; i < n; i++) {
        double g = load(gpu, i, t), c = load(cpu, i, t);
        if (isnan(g) || isnan(c)) {
            (*bad)++;
            continue;
        }
        num += (g - c) * (g - c);
        den += c * c;
    }
    return *bad ? INFINITY : den > 0 ? sqrt(num / den) : sqrt(num);
}

static double tolerance(dtype t, int is_gemm)
{
    if (t == F32)
        return is_gemm ? 1e-4 : 1e-5;
    return t == BF16 ? 1.5e-2 : 3e-3;
}

typedef struct run {
    int failures, checks;
} run;

static void report(run *r, const char *pkg, const char *fn, const char *shape, double err,
                   size_t bad, double tol, int rc_gpu, int rc_cpu)
{
    int ok = rc_gpu == 0 && rc_cpu == 0 && bad == 0 && err <= tol;
    r->checks++;
    r->failures += !ok;
    printf("%-4s %-26s %-28s %-16s relerr %.2e (bound %.0e) unwritten/NaN %zu rc %d/%d\n",
           ok ? "PASS" : "FAIL", pkg, fn, shape, err, tol, bad, rc_gpu, rc_cpu);
}

/* ---- per package ---- */
typedef int (*gemm_fn)(int, int, int, float, const void *, int, const void *, int, float, void *,
                       int, void *);

static void check_gemm(run *r, cuda *c, kb_kernel *g, kb_kernel *h)
{
    static const struct {
        int M, N, K;
    } shapes[] = {{1024, 1024, 1024}, {513, 259, 320}, {4095, 127, 1000}};
    for (int t = 0; t < 3; t++) {
        char name[32];
        snprintf(name, sizeof(name), "rf_gemm_%s", dtype_name[t]);
        gemm_fn fg = (gemm_fn)(uintptr_t)kb_kernel_sym(g, name);
        gemm_fn fh = (gemm_fn)(uintptr_t)kb_kernel_sym(h, name);
        for (size_t s = 0; s < 3 && fg && fh; s++) {
            int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
            size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
            void *A = random_buf(na, t, 1), *B = random_buf(nb, t, 1);
            void *C0 = random_buf(nc, t, 1); /* beta != 0 reads C */
            void *Cg = malloc(nc * dsize(t)), *Ch = malloc(nc * dsize(t));
            memcpy(Ch, C0, nc * dsize(t));
            void *dA = dev_upload(c, A, na * dsize(t)), *dB = dev_upload(c, B, nb * dsize(t));
            void *dC = dev_upload(c, C0, nc * dsize(t));
            int rg = fg(M, N, K, 0.5f, dA, K, dB, N, 0.25f, dC, N, NULL);
            dev_download(c, Cg, dC, nc * dsize(t));
            int rh = fh(M, N, K, 0.5f, A, K, B, N, 0.25f, Ch, N, NULL);
            size_t bad;
            double e = relerr(Cg, Ch, nc, t, &bad);
            char shape[32];
            snprintf(shape, sizeof(shape), "%dx%dx%d b=.25", M, N, K);
            report(r, "radeonflow/gemm", name, shape, e, bad, tolerance(t, 1), rg, rh);
            /* beta = 0 must not read C: poison it */
            void *P = poisoned(nc, t);
            c->htod((uintptr_t)dC, P, nc * dsize(t));
            rg = fg(M, N, K, 1.0f, dA, K, dB, N, 0.0f, dC, N, NULL);
            dev_download(c, Cg, dC, nc * dsize(t));
            memcpy(Ch, P, nc * dsize(t));
            rh = fh(M, N, K, 1.0f, A, K, B, N, 0.0f, Ch, N, NULL);
            e = relerr(Cg, Ch, nc, t, &bad);
            snprintf(shape, sizeof(shape), "%dx%dx%d b=0", M, N, K);
            report(r, "radeonflow/gemm", name, shape, e, bad, tolerance(t, 1), rg, rh);
            c->mem_free((uintptr_t)dA);
            c->mem_free((uintptr_t)dB);
            c->mem_free((uintptr_t)dC);
            free(A), free(B), free(C0), free(Cg), free(Ch), free(P);
        }
        if (!fg || !fh)
            report(r, "radeonflow/gemm", name, "missing symbol", INFINITY, 0, 0, -1, -1);
    }
}

typedef int (*act_fn)(void *, const void *, int64_t, int64_t, void *);

static void check_activation(run *r, cuda *c, kb_kernel *g, kb_kernel *h)
{
    static const char *ops[] = {"silu_and_mul", "gelu_and_mul", "gelu_tanh"};
    static const int64_t shapes[][2] = {{1000, 1536}, {37, 1001}};
    for (int o = 0; o < 3; o++)
        for (int t = 0; t < 3; t++) {
            char name[48];
            snprintf(name, sizeof(name), "act_%s_%s", ops[o], dtype_name[t]);
            act_fn fg = (act_fn)(uintptr_t)kb_kernel_sym(g, name);
            act_fn fh = (act_fn)(uintptr_t)kb_kernel_sym(h, name);
            for (size_t s = 0; s < 2 && fg && fh; s++) {
                int64_t n = shapes[s][0], d = shapes[s][1];
                size_t nin = (size_t)(n * d * (o < 2 ? 2 : 1)), nout = (size_t)(n * d);
                void *in = random_buf(nin, t, 4);
                void *og = poisoned(nout, t), *oh = poisoned(nout, t);
                void *din = dev_upload(c, in, nin * dsize(t)),
                     *dout = dev_upload(c, og, nout * dsize(t));
                int rg = fg(dout, din, n, d, NULL);
                dev_download(c, og, dout, nout * dsize(t));
                int rh = fh(oh, in, n, d, NULL);
                size_t bad;
                double e = relerr(og, oh, nout, t, &bad);
                char shape[32];
                snprintf(shape, sizeof(shape), "%ldx%ld", (long)n, (long)d);
                report(r, "kbpkg-community/activation", name, shape, e, bad, tolerance(t, 0), rg,
                       rh);
                c->mem_free((uintptr_t)din);
                c->mem_free((uintptr_t)dout);
                free(in), free(og), free(oh);
            }
            if (!fg || !fh)
                report(r, "kbpkg-community/activation", name, "missing symbol", INFINITY, 0, 0, -1,
                       -1);
        }
}

typedef int (*rms_fn)(void *, const void *, const void *, int64_t, int64_t, float, void *);

static void check_rmsnorm(run *r, cuda *c, kb_kernel *g, kb_kernel *h)
{
    static const int64_t shapes[][2] = {{1024, 4096}, {333, 1000}, {7, 8192}};
    for (int t = 0; t < 3; t++) {
        char name[32];
        snprintf(name, sizeof(name), "rmsnorm_%s", dtype_name[t]);
        rms_fn fg = (rms_fn)(uintptr_t)kb_kernel_sym(g, name);
        rms_fn fh = (rms_fn)(uintptr_t)kb_kernel_sym(h, name);
        for (size_t s = 0; s < 3 && fg && fh; s++) {
            int64_t n = shapes[s][0], d = shapes[s][1];
            size_t nx = (size_t)(n * d);
            void *x = random_buf(nx, t, 3), *w = random_buf((size_t)d, t, 1);
            void *og = poisoned(nx, t), *oh = poisoned(nx, t);
            void *dx = dev_upload(c, x, nx * dsize(t)),
                 *dw = dev_upload(c, w, (size_t)d * dsize(t));
            void *dout = dev_upload(c, og, nx * dsize(t));
            int rg = fg(dout, dx, dw, n, d, 1e-6f, NULL);
            dev_download(c, og, dout, nx * dsize(t));
            int rh = fh(oh, x, w, n, d, 1e-6f, NULL);
            size_t bad;
            double e = relerr(og, oh, nx, t, &bad);
            char shape[32];
            snprintf(shape, sizeof(shape), "%ldx%ld", (long)n, (long)d);
            report(r, "kbpkg-community/rmsnorm", name, shape, e, bad, tolerance(t, 0), rg, rh);
            c->mem_free((uintptr_t)dx);
            c->mem_free((uintptr_t)dw);
            c->mem_free((uintptr_t)dout);
            free(x), free(w), free(og), free(oh);
        }
    }
}

static kb_kernel *open_with(kb_ctx *ctx, const char *ref)
{
    kb_kernel *k = NULL;
    if (kb_kernel_open(&k, ctx, ref, 0) != KB_OK) {
        fprintf(stderr, "open_check: %s: %s\n", ref, kb_ctx_last_error(ctx)->message);
        return NULL;
    }
    printf("opened %s %s as %s (%s)\n", ref, kb_kernel_version(k), kb_kernel_target(k),
           kb_kernel_reason(k));
    return k;
}

int main(void)
{
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    printf("seed %u\n", seed);
    cuda c;
    if (cuda_open(&c)) {
        printf("SKIP: no usable CUDA driver/GPU here\n");
        return 77;
    }
    kb_ctx *gpu = NULL, *cpu = NULL;
    kb_ctx_new(&gpu, NULL);
    kb_ctx_new(&cpu, NULL);
    kb_ctx_set(cpu, "probe.devices", "none");
    static const char *pkgs[] = {"radeonflow/gemm", "kbpkg-community/activation",
                                 "kbpkg-community/rmsnorm"};
    void (*checks[])(run *, cuda *, kb_kernel *, kb_kernel *) = {check_gemm, check_activation,
                                                                 check_rmsnorm};
    run r = {0, 0};
    for (int p = 0; p < 3; p++) {
        kb_kernel *g = open_with(gpu, pkgs[p]), *h = open_with(cpu, pkgs[p]);
        if (!g || !h || strncmp(kb_kernel_target(g), "cuda", 4) != 0 ||
            strncmp(kb_kernel_target(h), "cpu-", 4) != 0) {
            printf("FAIL %s: expected a cuda and a cpu target\n", pkgs[p]);
            r.failures++;
        } else
            checks[p](&r, &c, g, h);
        kb_kernel_close(g);
        kb_kernel_close(h);
    }
    printf("open_check: %d checks, %d failed\n", r.checks, r.failures);
    kb_ctx_free(gpu);
    kb_ctx_free(cpu);
    return r.failures ? 1 : 0;
}
