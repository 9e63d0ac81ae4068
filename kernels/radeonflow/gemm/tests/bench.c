/* radeonflow/gemm benchmark: each export against the vendor GEMM (cuBLAS on CUDA, a CPU BLAS on
 * CPU, both by dlopen), one JSON line per case (docs/kernels.md); --quick for CI sizes. */
#include "../src/gemm_cpu.h"

#include "kbpkg_bench.h"

typedef struct gemm_call {
    int kind; /* 0 f32, 1 bf16, 2 f16, 3 fp8 block-scaled */
    int M, N, K;
    void *A, *B, *C, *sa, *sb;
    /* baseline */
    kbb_cublas *cb;
    kbb_sgemm_fn sgemm;
    float *fA, *fB, *fC;
} gemm_call;

static int run_lib(void *p)
{
    gemm_call *c = p;
    if (c->kind == 3)
        return rf_gemm_fp8_blockscale(c->M, c->N, c->K, c->A, c->sa, c->B, c->sb, c->C, NULL);
    if (c->kind == 1)
        return rf_gemm_bf16(c->M, c->N, c->K, 1.0f, c->A, c->K, c->B, c->N, 0.0f, c->C, c->N, NULL);
    if (c->kind == 2)
        return rf_gemm_f16(c->M, c->N, c->K, 1.0f, c->A, c->K, c->B, c->N, 0.0f, c->C, c->N, NULL);
    return rf_gemm_f32(c->M, c->N, c->K, 1.0f, c->A, c->K, c->B, c->N, 0.0f, c->C, c->N, NULL);
}

/* cuBLAS at the same shape: the same type, bf16 for the FP8 export (its dequantised peer). */
static int run_cublas(void *p)
{
    gemm_call *c = p;
    int type = c->kind == 0 ? KBB_CUDA_R_32F : c->kind == 2 ? KBB_CUDA_R_16F : KBB_CUDA_R_16BF;
    return kbb_cublas_gemm(c->cb, type, c->M, c->N, c->K, c->fA, c->fB, c->kind == 3, c->fC);
}

/* sgemm on fp32 copies of the inputs (B transposed for the FP8 layout). */
static int run_sgemm(void *p)
{
    gemm_call *c = p;
    c->sgemm(KBB_ROW_MAJOR, KBB_NO_TRANS, c->kind == 3 ? KBB_TRANS : KBB_NO_TRANS, c->M, c->N, c->K,
             1.0f, c->fA, c->K, c->fB, c->kind == 3 ? c->K : c->N, 0.0f, c->fC, c->N);
    return 0;
}

static void *dev_filled(kbc_rng *rng, size_t bytes)
{
    unsigned char *h = kbc_xmalloc(bytes + 1);
    for (size_t i = 0; i < bytes; i++) /* 0x38 +- small: e4m3 around 1, bf16/f32 bytes harmless */
        h[i] = (unsigned char)(0x30 + (kbc_next(rng) >> 61));
    void *d = kbc_dev_alloc(bytes + 1);
    kbc_upload(d, h, bytes + 1);
    free(h);
    return d;
}

static void bench_case(kbc_rng *rng, int kind, int M, int N, int K, int quick, kbb_cublas *cb,
                       kbb_sgemm_fn sgemm, const char *sgemm_name)
{
    static const char *const names[] = {"rf_gemm_f32", "rf_gemm_bf16", "rf_gemm_f16",
                                        "rf_gemm_fp8_blockscale"};
    size_t es = kind == 0   ? 4
                : kind == 3 ? 1
                            : 2,
           ks = (size_t)K / 128, nbk = (size_t)(N + 127) / 128;
    gemm_call c = {kind, M, N, K, NULL, NULL, NULL, NULL, NULL, cb, sgemm, NULL, NULL, NULL};
    c.A = dev_filled(rng, (size_t)M * K * es);
    c.B = dev_filled(rng, (size_t)K * N * es);
    c.C = kbc_dev_alloc((size_t)M * N * (kind == 3 ? 2 : es) + 1);
    float *ones = kbc_xmalloc(sizeof(float) * ((size_t)M * ks + nbk * ks + 1));
    for (size_t i = 0; i < (size_t)M * ks + nbk * ks + 1; i++)
        ones[i] = 1.0f;
    c.sa = kbc_dev_alloc(sizeof(float) * ((size_t)M * ks + 1));
    c.sb = kbc_dev_alloc(sizeof(float) * (nbk * ks + 1));
    kbc_upload(c.sa, ones, sizeof(float) * ((size_t)M * ks + 1));
    kbc_upload(c.sb, ones, sizeof(float) * (nbk * ks + 1));
    double t = kbb_time(run_lib, &c, quick), bt = 0;
    const char *bname = NULL, *note = NULL;
    if (kbb_on_gpu() && cb->gemm_ex) {
        size_t bes = kind == 0 ? 4 : 2; /* the FP8 export is compared with bf16 */
        c.fA = dev_filled(rng, (size_t)M * K * bes);
        c.fB = dev_filled(rng, (size_t)K * N * bes);
        c.fC = kbc_dev_alloc((size_t)M * N * bes + 1);
        bname = kind == 3 ? "cublas bf16" : "cublas";
        bt = kbb_time(run_cublas, &c, quick);
    } else if (!kbb_on_gpu() && sgemm) {
        c.fA = calloc((size_t)M * K + 1, 4), c.fB = calloc((size_t)K * N + 1, 4);
        c.fC = calloc((size_t)M * N + 1, 4);
        if (!c.fA || !c.fB || !c.fC)
            kbc_die("out of memory");
        bname = sgemm_name;
        bt = kbb_time(run_sgemm, &c, quick);
    } else {
        note = kbb_on_gpu() ? "cuBLAS not found (libcublas.so.13/.12)" : sgemm_name;
    }
    char shape[64];
    snprintf(shape, sizeof shape, "%dx%dx%d", M, N, K);
    kbb_emit(names[kind], shape, t, 2.0 * M * N * K, 0, bname, bt, note);
    kbc_dev_free(c.A), kbc_dev_free(c.B), kbc_dev_free(c.C), kbc_dev_free(c.sa);
    kbc_dev_free(c.sb);
    if (kbb_on_gpu() && c.fA)
        kbc_dev_free(c.fA), kbc_dev_free(c.fB), kbc_dev_free(c.fC);
    else
        free(c.fA), free(c.fB), free(c.fC);
    free(ones);
}

typedef struct shape {
    int kind, M, N, K;
} shape;

/* LLM-like shapes on GPUs (square, a 128-token projection, decode); on CPUs smaller squares,
 * an odd size, decode (1 and 16 rows: the CPU kernel's skinny path) and a 128-row projection. */
static const shape gpu_full[] = {
    {1, 4096, 4096, 4096}, {1, 128, 7168, 2048},  {1, 16, 4096, 4096},  {2, 4096, 4096, 4096},
    {0, 2048, 2048, 2048}, {3, 4096, 4096, 4096}, {3, 128, 7168, 2048}, {3, 4096, 7168, 2048}};
static const shape gpu_quick[] = {{1, 512, 512, 512}, {0, 256, 256, 256}, {3, 256, 512, 512}};
static const shape cpu_full[] = {{0, 512, 512, 512},    {1, 512, 512, 512},   {3, 256, 512, 512},
                                 {0, 2048, 2048, 2048}, {1, 777, 1000, 3000}, {0, 1, 4096, 4096},
                                 {1, 16, 4096, 4096},   {0, 128, 4096, 4096}, {3, 1024, 1024, 1024},
                                 {3, 16, 4096, 4096}};
static const shape cpu_quick[] = {{0, 64, 64, 64}, {1, 64, 96, 64}, {3, 32, 64, 128}};

int main(int argc, char **argv)
{
    int quick = kbb_quick(argc, argv);
    kbc_rng rng = {0x9e3779b97f4a7c15ull};
    kbb_cublas cb = {NULL, NULL};
    if (kbb_on_gpu() && kbb_cublas_open(&cb) != 0)
        cb.gemm_ex = NULL;
    const char *sgemm_name = NULL;
    kbb_sgemm_fn sgemm = kbb_on_gpu() ? NULL : kbb_cpu_sgemm(&sgemm_name);
    const shape *set =
        kbb_on_gpu() ? (quick ? gpu_quick : gpu_full) : (quick ? cpu_quick : cpu_full);
    size_t n = kbb_on_gpu() ? (quick ? KB_COUNT(gpu_quick) : KB_COUNT(gpu_full))
                            : (quick ? KB_COUNT(cpu_quick) : KB_COUNT(cpu_full));
    for (size_t i = 0; i < n; i++)
        bench_case(&rng, set[i].kind, set[i].M, set[i].N, set[i].K, quick, &cb, sgemm, sgemm_name);
    return 0;
}
