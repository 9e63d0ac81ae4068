/* Where a radeonflow/gemm call's time goes at decode and split shapes (bf16): the export of two
 * builds of the package (GEMM_BASELINE_LIB "before", GEMM_NEW_LIB "after", both loaded with
 * dlopen), the new build with RF_GEMM_PDL=0 (its split reduce launched plainly), and cuBLAS,
 * timed four ways on the same rotating inputs:
 *   ev     each call between its own events, variants interleaved per round (as gemm_shapes)
 *   sync   the same with the queue drained before each call (the host's enqueue time shows)
 *   graph  20 calls captured in one CUDA graph, replayed (GPU time and gaps only)
 *   host   host microseconds to enqueue one call (200 calls, no sync between them)
 * Then forced plans of the new build (RF_GEMM_TMA_PLAN="tile,splits", per shape below) the same
 * ways, as leads for the plan table.
 * Every variant is checked against cuBLAS first, C poisoned with NaN (relerr; NaN fails).
 * Usage: GEMM_BASELINE_LIB=... GEMM_NEW_LIB=... gemm_launch [logfile] */
#include <cublas_v2.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <string>

#include "bench_common.h"

typedef int (*gemm_fn)(int, int, int, float, const void *, int, const void *, int, float, void *,
                       int, void *);

static gemm_fn load(const char *env)
{
    const char *p = getenv(env);
    if (!p)
        return nullptr;
    gemm_fn f = (gemm_fn)bench_lib_symbol(p, "rf_gemm_bf16");
    if (!f)
        exit(1);
    return f;
}

int main(int argc, char **argv)
{
    FILE *log = argc > 1 ? fopen(argv[1], "w") : stdout;
    gemm_fn base = load("GEMM_BASELINE_LIB"), neu = load("GEMM_NEW_LIB");
    if (!base || !neu) {
        fprintf(stderr, "need GEMM_BASELINE_LIB and GEMM_NEW_LIB\n");
        return 1;
    }
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    CKB(cublasSetStream(h, st));
    void *cws;
    CK(cudaMalloc(&cws, 32 << 20));
    CKB(cublasSetWorkspace(h, cws, 32 << 20));
    struct shape {
        int M, N, K;
        std::vector<const char *> plans; /* forced plans of the new build */
    };
    /* GEMM_LAUNCH_SHAPES=swap: the decode shapes with the swap-AB tile (plan row 10, the default
     * there since swap-22) forced with 1, 2 or 4 K parts, and the TMA tiles' split plans that
     * main picked (with RF_GEMM_TMA_PLAN set, the swap default is off) */
    std::vector<shape> swap_shapes = {{16, 4096, 4096, {"10,1", "10,2", "10,4", "3,4"}},
                                      {16, 5120, 5120, {"10,1", "10,2", "3,3"}},
                                      {16, 8192, 8192, {"10,1", "3,2"}},
                                      {16, 28672, 8192, {"10,1", "2,1"}},
                                      {32, 8192, 28672, {"10,1", "10,2", "3,2"}},
                                      {1, 8192, 8192, {"10,1", "10,2"}},
                                      {8, 4096, 4096, {"10,1", "10,2"}}};
    /* GEMM_LAUNCH_SHAPES=swap64: the 64-token box (M 33..64, row 10 forced with 1, 2 or 4 K
     * parts against main's pick as "before"), and 16-row shapes under 64 column groups (N <
     * 4096, where the swap default does not apply) */
    std::vector<shape> swap64_shapes = {
        {64, 4096, 4096, {"10,1", "10,2", "10,4"}}, {48, 4096, 4096, {"10,1", "10,2"}},
        {64, 8192, 8192, {"10,1", "10,2"}},         {64, 14336, 4096, {"10,1", "10,2"}},
        {40, 5120, 5120, {"10,1", "10,2"}},         {16, 2048, 4096, {"10,1", "10,2", "10,4"}},
        {16, 1000, 4096, {"10,1", "10,2", "10,4"}}};
    const char *which = getenv("GEMM_LAUNCH_SHAPES");
    std::vector<shape> all_shapes = {{16, 4096, 4096, {"3,4", "3,8", "2,4"}},
                                     {16, 5120, 5120, {"3,3", "3,13", "3,2"}},
                                     {16, 8192, 8192, {"3,2", "3,4", "2,2"}},
                                     {16, 28672, 8192, {"2,1", "3,1", "2,7"}},
                                     {32, 8192, 28672, {"3,2", "2,4", "3,4"}},
                                     {64, 4096, 4096, {"3,1", "3,2", "3,4"}},
                                     {777, 1000, 3000, {"7,1", "5,2", "7,2", "1,2"}},
                                     {256, 256, 65536, {"7,15", "5,16", "7,8"}},
                                     {128, 4096, 14336, {"7,2", "7,3"}},
                                     {1024, 1024, 32768, {"4,4", "4,2"}},
                                     {256, 5120, 5120, {"1,1", "5,1", "3,1", "7,1"}},
                                     {8192, 8192, 256, {"0,1", "4,1", "1,1"}},
                                     {4096, 4096, 4096, {}}};
    std::vector<shape> &shapes = which && !strcmp(which, "swap")     ? swap_shapes
                                 : which && !strcmp(which, "swap64") ? swap64_shapes
                                                                     : all_shapes;
    const char *fixed[] = {"cuBLAS", "before", "after", "after PDL=0"};
    printf("%-18s | %-27s | %-27s | %-27s | %-27s\n", "bf16 M x N x K",
           "ev us: cuBLAS/bef/aft/noPDL", "sync us", "graph us", "host us/call");
    for (auto &sh : shapes) {
        int M = sh.M, N = sh.N, K = sh.K;
        std::vector<std::string> names(fixed, fixed + 4);
        for (const char *pl : sh.plans)
            names.push_back(std::string("plan ") + pl);
        const int NV = (int)names.size();
        size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
        bench_gemm_sets g = bench_gemm_sets_alloc(na, nb, nc, B_BF16);
        int sets = g.count;
        uint16_t *ref;
        CK(cudaMalloc(&ref, nc * 2));
        float alpha = 1.0f, beta = 0.0f;
        auto call = [&](int v, int s) {
            if (v == 3)
                setenv("RF_GEMM_PDL", "0", 1);
            if (v >= 4)
                setenv("RF_GEMM_TMA_PLAN", sh.plans[v - 4], 1);
            int rc = 0;
            if (v == 0)
                CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, g.B[s], CUDA_R_16BF,
                                 N, g.A[s], CUDA_R_16BF, K, &beta, g.C[s], CUDA_R_16BF, N,
                                 CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
            else
                rc = (v == 1 ? base : neu)(M, N, K, alpha, g.A[s], K, g.B[s], N, beta, g.C[s], N,
                                           st);
            if (v == 3)
                unsetenv("RF_GEMM_PDL");
            if (v >= 4)
                unsetenv("RF_GEMM_TMA_PLAN");
            if (rc != 0) {
                fprintf(stderr, "%s failed: %d\n", names[v].c_str(), rc);
                exit(1);
            }
        };
        /* correctness: reference from cuBLAS on set 0, then every variant over poisoned C */
        call(0, 0);
        CK(cudaMemcpyAsync(ref, g.C[0], nc * 2, cudaMemcpyDeviceToDevice, st));
        std::vector<double> err(NV, 0.0);
        for (int v = 1; v < NV; v++) {
            CK(cudaMemsetAsync(g.C[0], 0xff, nc * 2, st));
            call(v, 0);
            err[v] = bench_rel_err(g.C[0], ref, M, N, N, B_BF16, st);
        }
        const int reps = M * (size_t)N * K > (1ull << 33) ? 15 : 40;
        std::vector<std::vector<float>> tev(NV), tsync(NV);
        std::vector<cudaEvent_t> ev(2 * NV * reps);
        for (auto &e : ev)
            CK(cudaEventCreate(&e));
        for (int i = 0; i < 2; i++)
            for (int v = 0; v < NV; v++)
                call(v, i % sets);
        /* every variant in every round, rotated sets; drain: the queue emptied before each call
         * (launch cost exposed), else calls queued back to back */
        auto rounds = [&](bool drain, std::vector<std::vector<float>> &out) {
            for (int i = 0; i < reps; i++)
                for (int v = 0; v < NV; v++) {
                    if (drain)
                        CK(cudaStreamSynchronize(st));
                    CK(cudaEventRecord(ev[2 * (v * reps + i)], st));
                    /* sets counted per call: consecutive calls never share one (round +
                     * variant let a round's last call warm L2 for the next round's first
                     * whenever NV - 2 was a multiple of sets; bench_common.h) */
                    call(v, (i * NV + v) % sets);
                    CK(cudaEventRecord(ev[2 * (v * reps + i) + 1], st));
                }
            CK(cudaStreamSynchronize(st));
            for (int v = 0; v < NV; v++)
                for (int i = 0; i < reps; i++) {
                    float t;
                    CK(cudaEventElapsedTime(&t, ev[2 * (v * reps + i)],
                                            ev[2 * (v * reps + i) + 1]));
                    out[v].push_back(t * 1000);
                }
        };
        rounds(false, tev);
        rounds(true, tsync);
        for (auto &e : ev)
            CK(cudaEventDestroy(e));
        std::vector<double> med_ev(NV), med_sync(NV), graph(NV), host(NV);
        for (int v = 0; v < NV; v++) {
            std::sort(tev[v].begin(), tev[v].end());
            std::sort(tsync[v].begin(), tsync[v].end());
            med_ev[v] = tev[v][reps / 2];
            med_sync[v] = tsync[v][reps / 2];
            /* graph of 20 calls over the rotating sets */
            cudaGraph_t gr;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < 20; i++)
                call(v, i % sets);
            CK(cudaStreamEndCapture(st, &gr));
            CK(cudaGraphInstantiate(&ge, gr, 0));
            graph[v] = bench_graph_median_us(ge, st, 20, 2, reps > 20 ? 9 : 5);
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(gr));
            /* host enqueue cost: 200 calls with the GPU behind */
            CK(cudaStreamSynchronize(st));
            auto t0 = std::chrono::steady_clock::now();
            int n = 200;
            for (int i = 0; i < n; i++)
                call(v, i % sets);
            auto t1 = std::chrono::steady_clock::now();
            CK(cudaStreamSynchronize(st));
            host[v] = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
        }
        /* the graph replays checked too: the last capture ran on every set; recheck set 0 */
        CK(cudaGetLastError());
        char lbl[64];
        snprintf(lbl, sizeof lbl, "%dx%dx%d", M, N, K);
        for (int v = 0; v < NV; v++)
            fprintf(log,
                    "%-18s %-12s ev %8.2f us  sync %8.2f us  graph %8.2f us  host %6.2f us  "
                    "relerr %.1e\n",
                    lbl, names[v].c_str(), med_ev[v], med_sync[v], graph[v], host[v], err[v]);
        fflush(log);
        bool bad = false;
        for (int v = 1; v < NV; v++)
            bad |= !(err[v] < 1e-2);
        printf("%-18s | %6.1f %6.1f %6.1f %6.1f | %6.1f %6.1f %6.1f %6.1f | %6.1f %6.1f %6.1f "
               "%6.1f | %5.1f %5.1f %5.1f %5.1f%s\n",
               lbl, med_ev[0], med_ev[1], med_ev[2], med_ev[3], med_sync[0], med_sync[1],
               med_sync[2], med_sync[3], graph[0], graph[1], graph[2], graph[3], host[0], host[1],
               host[2], host[3], bad ? "  WRONG" : "");
        if (NV > 4) {
            printf("  forced (ev/graph us):");
            for (int v = 4; v < NV; v++)
                printf("  %s %.1f/%.1f", sh.plans[v - 4], med_ev[v], graph[v]);
            printf("\n");
        }
        fflush(stdout);
        bench_gemm_sets_free(g);
        CK(cudaFree(ref));
    }
    return 0;
}
