/* How far split-K pays where the tile table has few tiles and deep K: every TMA tile (rows 0..9
 * of kTsTiles) at every split count in a list up to 64, forced, against cuBLAS (cublasGemmEx,
 * fp32 compute) and the export, on the same rotating operand sets in interleaved rounds
 * (CUDA events, medians). Each variant is checked against cuBLAS first (C poisoned). Build with
 * -DRF_GEMM_MAX_SPLITS=64 (the package caps plans at 16 K parts otherwise). Each row is timed
 * with stream-K too ("sK": every block the same run of k-tiles, ts_stream_deal), and shapes with
 * M <= 64 with the swap-AB decode tile at K splits 1..16 (partials added in the kernel).
 * Prints per shape the export, cuBLAS and the five fastest plans; every plan to argv[1].
 * GEMM_SPLITS_SHAPES=MxNxK,... times those shapes instead of the built-in set, and
 * GEMM_SPLITS_TILES=5,7 only those rows of kTsTiles (the split's own cost: one tile at every
 * count over several K, bench/gpu/results/2026-12-05-h100-rms-odd-plans-split-cost.txt). */
#include <cublas_v2.h>

#include <cstring>

#include "../../kernels/radeonflow/gemm/src/gemm.cu"
#include "bench_common.h"

#include <algorithm>
#include <string>

struct probe {
    std::string name;
    rf::ts_plan plan; /* tile -1: the export */
    double ms, err;
};

static std::string plan_label(const rf::ts_plan &p)
{
    if (p.tile < 0)
        return "rf_gemm_bf16 (table)";
    if (p.tile == rf::TS_SWAP)
        return "swap-AB 64-col s" + std::to_string(p.splits);
    const rf::ts_tile &t = rf::kTsTiles[p.tile];
    char b[64];
    bench_plan_label(b, sizeof b, t, p.splits, false);
    return b;
}

/* t is in the comma-separated list of tile rows */
static bool tile_listed(const char *list, int t)
{
    for (const char *p = list; *p;) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p)
            return false;
        if (v == t)
            return true;
        p = *end == ',' ? end + 1 : end;
    }
    return false;
}

static void run_shape(cublasHandle_t h, FILE *log, int M, int N, int K, int sms)
{
    const int reps = 30;
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    bench_gemm_sets g = bench_gemm_sets_alloc(na, nb, nc, B_BF16);
    uint16_t *ref;
    CK(cudaMalloc(&ref, nc * 2));
    float alpha = 1.0f, beta = 0.0f;
    CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, g.B[0], CUDA_R_16BF, N, g.A[0],
                     CUDA_R_16BF, K, &beta, ref, CUDA_R_16BF, N, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT));
    /* the export's plan, for operands read where they are or from their 128-byte-row copies */
    rf::ts_plan pick = rf::ts_default_plan<true>(M, N, K, rf::ts_read_ld(g.A[0], K, K),
                                                 rf::ts_read_ld(g.B[0], N, N), sms);
    std::vector<probe> vs = {{"", {-1, 0}, 0, 0}};
    int ktiles = (K + rf::TS_BK - 1) / rf::TS_BK;
    const char *only = getenv("GEMM_SPLITS_TILES");
    for (int t = 0; t < rf::TS_NTILES; t++) {
        if (only && !tile_listed(only, t))
            continue;
        for (int s : {1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 28, 32, 33, 40, 48, 64}) {
            long long units = rf::ts_tiles(rf::kTsTiles[t], M, N) * s;
            if (s <= rf::TS_MAX_SPLITS && (s == 1 || (s <= ktiles / 2 && units <= 4LL * sms)))
                vs.push_back({"", {t, s}, 0, 0});
        }
        vs.push_back({"", {t, rf::TS_STREAM}, 0, 0}); /* stream-K, labelled sK */
    }
    if (M <= 64) /* the swap-AB decode tile (sm_90a), its K parts added in the kernel */
        for (int s : {1, 2, 3, 4, 6, 8, 16})
            if (s <= ktiles)
                vs.push_back({"", {rf::TS_SWAP, s}, 0, 0});
    auto launch = [&](const probe &v, int set) {
        const rf::ts_plan *p = v.plan.tile < 0 ? nullptr : &v.plan;
        if (p && p->tile == rf::TS_SWAP)
            return rf::launch_swap<kb_bf16_tag>(p->splits, M, N, K, alpha, g.A[set], K, g.B[set], N,
                                                beta, g.C[set], N, 0);
        return p ? rf::launch_tma_plan<kb_bf16_tag, true>(p, M, N, K, alpha, g.A[set], K, g.B[set],
                                                          N, beta, g.C[set], N, 0)
                 : rf_gemm_bf16(M, N, K, alpha, g.A[set], K, g.B[set], N, beta, g.C[set], N,
                                nullptr);
    };
    auto fail = [&](const probe &v, int rc) {
        fprintf(stderr, "%dx%dx%d %s: returned %d\n", M, N, K, plan_label(v.plan).c_str(), rc);
        exit(1);
    };
    auto call = [&](const probe &v, int set) {
        if (int rc = launch(v, set))
            fail(v, rc);
    };
    /* the TMA plans read A and B in 16-byte rows, copies of them where N or K is not a
     * multiple of 8; where a forced plan is refused because no copy is made (RF_GEMM_STAGE=0 or
     * no workspace), it is left out and the export's own path runs */
    int refused = 0;
    for (size_t i = 0; i < vs.size();) {
        probe &v = vs[i];
        v.name = plan_label(v.plan);
        CK(cudaMemset(g.C[0], 0xff, nc * 2)); /* NaN poison */
        int rc = launch(v, 0);
        if (rc == KBPKG_KERNEL_EUNSUPPORTED && v.plan.tile >= 0) {
            refused++;
            vs.erase(vs.begin() + i);
            continue;
        }
        if (rc != 0)
            fail(v, rc);
        CK(cudaDeviceSynchronize());
        v.err = bench_rel_err(g.C[0], ref, M, N, N, B_BF16);
        i++;
    }
    size_t nv = vs.size() + 1;
    auto one = [&](size_t v, int i) {
        int s = i % g.count;
        if (v == 0)
            CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, g.B[s], CUDA_R_16BF, N,
                             g.A[s], CUDA_R_16BF, K, &beta, g.C[s], CUDA_R_16BF, N,
                             CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        else
            call(vs[v - 1], s);
    };
    std::vector<double> med = bench_interleaved_median_ms(nv, reps, one);
    for (size_t v = 1; v < nv; v++)
        vs[v - 1].ms = med[v];
    double flop = 2.0 * M * N * K, tc = med[0];
    int wrong = 0;
    for (const auto &v : vs) {
        bool bad = !(v.err < 1e-2);
        wrong += bad;
        fprintf(log, "%dx%dx%d %-22s %9.4f ms %7.1f TF/s %.3f relerr %.1e%s\n", M, N, K,
                v.name.c_str(), v.ms, flop / v.ms / 1e9, tc / v.ms, v.err, bad ? " WRONG" : "");
    }
    std::vector<probe> sorted(vs.begin() + 1, vs.end());
    std::sort(sorted.begin(), sorted.end(),
              [](const probe &a, const probe &b) { return a.ms < b.ms; });
    std::string runs = rf::sw_default_shape(M, N) ? "swap-AB 64-col" : plan_label(pick);
    printf("%dx%dx%d bf16: cuBLAS %.1f TF/s | export %.3f (%s) | %d wrong |", M, N, K,
           flop / tc / 1e9, tc / vs[0].ms, runs.c_str(), wrong);
    if (refused)
        printf(" %d forced plans refused (rows not 16-byte aligned, not copied) |", refused);
    for (size_t i = 0; i < sorted.size() && i < 5; i++)
        printf(" %s %.3f%s", sorted[i].name.c_str(), tc / sorted[i].ms, i < 4 ? "," : "");
    printf("\n");
    CK(cudaFree(ref));
    bench_gemm_sets_free(g);
}

int main(int argc, char **argv)
{
    FILE *log = fopen(argc > 1 ? argv[1] : "gemm_splits.log", "w");
    if (!log)
        return 1;
    int sms = rf::sm_count();
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    printf("split-K probe, %d SMs, plans up to %d K parts\n", sms, rf::TS_MAX_SPLITS);
    const int shapes[][3] = {{256, 256, 65536},  {512, 512, 65536}, {1024, 1024, 32768},
                             {128, 4096, 14336}, {777, 1000, 3000}, {1000, 1000, 1000},
                             {256, 5120, 5120},  {64, 4096, 4096},  {128, 4096, 4096}};
    int rc = bench_each_shape("GEMM_SPLITS_SHAPES", shapes, sizeof shapes / sizeof shapes[0],
                              [&](int M, int N, int K) { run_shape(h, log, M, N, K, sms); });
    fclose(log);
    return rc;
}
