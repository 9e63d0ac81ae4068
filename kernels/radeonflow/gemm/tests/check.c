/* radeonflow/gemm check: every export against the CPU reference (and that against fp64) on
 * fresh random data, awkward shapes, strides, alpha/beta, and bad arguments. */
#define _POSIX_C_SOURCE 200809L /* setenv, strdup under -std=c11 */
#include "../src/gemm_cpu.h"

#include "kbpkg_check.h"

#ifdef KBPKG_CHECK_CUDA
#include <pthread.h>
#endif

typedef struct gemm_case {
    int M, N, K, lda_pad, ldb_pad, ldc_pad;
    float alpha, beta;
    int c_off; /* C starts this many elements into its allocation (unaligned C) */
} gemm_case;

/* Shapes chosen to hit full tiles, ragged edges in every dimension, K not a multiple of the
 * k-tile, odd leading dimensions (unaligned rows: copied on sm_90, scalar loads elsewhere),
 * vectors, beta. */
static const gemm_case cases[] = {
    {128, 128, 64, 0, 0, 0, 1.0f, 0.0f, 0},
    {257, 383, 1000, 0, 0, 0, 1.0f, 0.0f, 0},
    {95, 97, 37, 3, 5, 2, 0.5f, 0.0f, 0},
    {1, 300, 70, 0, 0, 0, 1.0f, 0.0f, 0},
    {300, 8, 513, 0, 0, 0, -1.0f, 0.0f, 0},
    {130, 66, 200, 8, 8, 8, 1.5f, -0.75f, 0},
    {33, 17, 0, 0, 0, 0, 1.0f, 2.0f, 0},
    {7, 1, 1, 1, 0, 1, 1.0f, 0.0f, 0},
    {640, 136, 96, 0, 0, 3, 1.0f, 1.0f, 0},
    /* 16-byte aligned rows (the TMA kernels on sm_90): more tiles than an H200 has SMs, so
     * persistent blocks take several tiles each; ragged M and N tiles; many k-tiles + tail */
    {1160, 3592, 24, 0, 0, 2, 1.0f, 0.5f, 0},
    {192, 264, 1032, 0, 0, 1, -1.0f, 0.0f, 0},
    /* few tiles, long K: split-K through the workspace; odd N with an aligned ldb */
    {16, 517, 1100, 4, 3, 1, 0.75f, -0.5f, 0},
    /* the tile table's classes (docs/perf.md): decode-sized M with a deep split, small M with
     * 64-row tiles, an odd aligned size, and shallow K with many tiles */
    {1, 1000, 2048, 0, 0, 0, 1.0f, 0.0f, 0},
    {3, 520, 4096, 8, 0, 1, -0.5f, 1.0f, 0},
    {64, 384, 1536, 0, 8, 0, 1.0f, 0.0f, 0},
    {120, 1000, 200, 0, 0, 0, 1.0f, 0.5f, 0},
    {520, 1040, 24, 0, 0, 0, 1.0f, 0.0f, 0},
    /* the same with C 8 bytes and 2 bytes past 16-byte alignment: the sm_90a staged epilogue
     * (TMA stores) needs 16-byte rows, so these take the stores from registers */
    {520, 1040, 24, 0, 0, 0, 1.0f, 0.0f, 4},
    {520, 1040, 24, 0, 0, 0, 1.0f, 0.0f, 1},
    /* the skinny kernel (M <= 64, B in 16-byte rows): every token-fragment count (M 1..8, 9..16,
     * 17..32, 33..64, each edge), N past a 64-column group and odd, K not a multiple of 16 and
     * odd, beta, padded strides, lda not a multiple of 8 (A read by scalar loads) */
    {1, 4100, 300, 0, 4, 0, 1.0f, 0.0f, 0},
    {3, 1001, 257, 1, 7, 3, 0.5f, -1.0f, 0},
    {8, 136, 1000, 3, 0, 0, -1.0f, 0.0f, 0},
    {9, 200, 520, 0, 8, 5, 1.0f, 0.5f, 0},
    {16, 72, 4000, 2, 0, 0, 1.0f, 0.0f, 0},
    {17, 333, 100, 0, 3, 0, 1.0f, 1.0f, 1},
    {33, 520, 600, 5, 8, 2, 1.5f, 0.25f, 0},
    {64, 130, 2000, 0, 6, 0, 1.0f, 0.0f, 0},
    /* the swap-AB decode tile by default on sm_90a (M <= 32, 64+ column groups, aligned A, B;
     * M 33..64 with 64..128 groups: the 64-token box) */
    {16, 4100, 1000, 0, 4, 3, 1.0f, 0.5f, 0},
    {48, 4100, 1000, 0, 4, 3, 1.0f, 0.5f, 0},
    /* A's rows not on 128-byte lines, deep K: 64 x 128 tiles in clusters of 2 x 2 by default on
     * sm_90a (ts_cluster_pick), the last cluster row's second tile past M, its last column's
     * past N */
    {130, 1096, 2104, 0, 0, 0, 1.0f, 0.0f, 0},
    /* rows the copy engine cannot read, copied into 128-byte rows on sm_90 (as are the odd
     * leading dimensions above): A with an odd lda (the copy loads 2 bytes at a time); then
     * A in 8-byte rows (lda % 8 == 4), B in 4-byte rows, beta, ldc > N */
    {160, 264, 1001, 0, 0, 0, 1.0f, 0.0f, 0},
    {200, 1000, 520, 4, 6, 2, 0.5f, -1.0f, 0},
    /* decode with B's rows off 16 bytes: the skinny kernel reads B in place in 2-byte loads
     * (odd ldb, M = 5), 4-byte (ldb % 8 == 2, with lda % 8 == 4 and beta) and 8-byte (ldb % 8 ==
     * 4, 64-token fragments, beta); an odd ldb past M = 8 is copied by default (M = 16 over 79
     * column groups; a 70-column B whose last group ends in a partial chunk), and read in place
     * where check_skinny_plans forces the skinny kernel */
    {5, 1001, 300, 0, 0, 0, 1.0f, 0.0f, 0},
    {16, 5003, 256, 0, 0, 0, 1.0f, 0.0f, 0},
    {12, 530, 777, 3, 0, 2, 0.5f, -1.0f, 0},
    {40, 1004, 520, 0, 0, 0, 1.0f, 0.5f, 0},
    {24, 70, 1000, 0, 1, 0, -1.0f, 0.0f, 0},
    /* the CPU kernel's paths: tall and thin (its threads split M), few rows in slivers of 12
     * (AVX-512) or 6 with the last one partial (the skinny path reads B a 16-row tile at a time:
     * K not a multiple of it), just above the skinny path's 48 rows */
    {2000, 40, 300, 0, 0, 0, 1.0f, 0.0f, 0},
    {45, 1100, 261, 2, 0, 1, 0.5f, 0.25f, 0},
    {49, 333, 700, 0, 0, 0, 1.0f, 0.0f, 0},
};

#ifdef KBPKG_CHECK_CUDA
/* On GPUs every row of the TMA kernels' tile table, unsplit and split, on shapes with ragged
 * tiles, a K tail, strides and beta: RF_GEMM_TMA_PLAN forces the plan (sm_90/sm_90a builds;
 * other builds ignore it and run these as more cases). */
static const gemm_case plan_cases[] = {
    {77, 300, 1000, 8, 4, 2, 0.5f, -1.0f, 0},
    {200, 136, 72, 0, 8, 0, 1.0f, 0.0f, 0},
    /* the sm_90a staged epilogue (beta == 0, 16-byte rows of C, N % 8 == 0): ragged tiles
     * clipped by the copy engine, ldc > N whose padding must stay untouched, alpha applied;
     * then what must fall back to stores from registers: N % 8 != 0 (TMA stores write whole
     * 16-byte chunks, so they would overwrite padding past N), beta != 0 with aligned rows, an
     * unaligned C */
    {77, 296, 1000, 8, 8, 16, -1.5f, 0.0f, 0},
    {77, 300, 1000, 8, 4, 12, -1.5f, 0.0f, 0},
    {200, 136, 72, 0, 8, 8, 1.0f, 0.5f, 0},
    {77, 296, 1000, 8, 8, 16, 1.0f, 0.0f, 4},
    /* in clusters of 2 x 2 the last cluster row's second tile lies past M and the last
     * column's past N; with row 9's 64 x 128 tiles, 160 blocks: more than an H100 or H200 has
     * SMs, so the grid walks the units */
    {520, 1800, 200, 0, 8, 0, 1.0f, 0.0f, 0},
    /* every row on a copy of A (odd lda; B's rows are aligned and read in place) */
    {77, 300, 999, 0, 4, 0, 1.0f, 0.5f, 0},
};
/* The default path on GPUs at shapes too large for the CPU reference in CI: A's rows not on
 * 128-byte lines, 40+ k-tiles and too many 64 x 128 blocks for clusters of 2 x 2 of them
 * (ts_cluster_pick): 128 x 128 tiles in clusters of 2 x 2 on sm_90a, the last cluster row's
 * second tile past M, the last column's past N */
static const gemm_case gpu_default_cases[] = {
    {130, 3841, 2600, 0, 0, 0, 1.0f, 0.0f, 0},
};
/* stream-K (splits 0) deals k-tiles out in runs that end inside tiles wherever a run is
 * shorter than a tile's 23 k-tiles (a prime, so no run length divides it; K's tail is half a
 * k-tile): on 132 SMs every row's runs are 4 to 19 k-tiles, so tiles take 3 to 7 partials
 * and runs span two tiles; padded strides, beta, a B copied into 128-byte rows (odd ldb).
 * Dealt to STREAM_SLOTS blocks instead (RF_GEMM_STREAM_SLOTS), a prime, there are more tiles
 * than blocks, as at large shapes: the last partial wave and one whole wave are dealt, in runs
 * longer than a tile (tiles whole inside a run, tiles finished from one other run's partial),
 * and the tiles after them in the walk run whole, grid stride. */
static const gemm_case stream_cases[] = {
    {150, 1000, 1440, 8, 4, 2, 0.5f, -1.0f, 0},
    {300, 1800, 1440, 0, 0, 0, 1.0f, 0.0f, 0},
};
#define STREAM_SLOTS "7"

/* row 10 forces the sm_90a swap-AB decode tile, which takes
 * M <= 64 with A and B in 16-byte rows: M = 1..64 at each token-box edge (8, 16, 32, 64), odd N,
 * K not a multiple of 64, padded strides whose padding must stay untouched, beta, an unaligned
 * C, more 64-column groups than an H200 has SMs (blocks take several), one k-tile; an odd lda
 * (not taken: the other kernels run it) */
static const gemm_case swap_cases[] = {
    {1, 300, 1000, 8, 4, 2, 0.5f, -1.0f, 0},
    {8, 517, 1100, 0, 3, 1, 0.75f, -0.5f, 0},
    {9, 130, 200, 8, 6, 5, 1.0f, 0.0f, 0},
    {16, 1000, 2048, 0, 0, 8, -1.5f, 0.0f, 0},
    {17, 333, 100, 0, 3, 0, 1.0f, 1.0f, 1},
    {32, 200, 520, 8, 8, 16, 1.0f, 0.5f, 0},
    {31, 64, 64, 0, 0, 0, 1.0f, 0.0f, 0},
    {5, 9000, 96, 0, 8, 0, 1.0f, 0.0f, 0},
    {24, 8200, 700, 0, 0, 3, 1.0f, 0.25f, 0},
    {12, 100, 300, 3, 4, 0, 1.0f, 0.0f, 0},
    /* the 64-token box (M 33..64): each edge, odd N, K tails, padded strides, beta, an
     * unaligned C, more column groups than SMs */
    {33, 517, 1100, 8, 3, 1, 0.75f, -0.5f, 0},
    {48, 1000, 2048, 0, 0, 8, -1.5f, 0.0f, 0},
    {64, 200, 520, 8, 8, 16, 1.0f, 0.5f, 0},
    {40, 333, 100, 0, 3, 0, 1.0f, 1.0f, 1},
    {63, 9000, 96, 0, 8, 0, 1.0f, 0.0f, 0},
    {64, 64, 64, 0, 0, 0, 1.0f, 0.0f, 0},
};
/* rows 4..7: rows 0..3 in clusters of 2 along M; 8 and 9: rows 1 and 3 in clusters of 2 x 2
 * (wgmma builds); SWAP_ROW: the swap-AB decode tile */
enum { SWAP_ROW = 10, PLAN_TILES = 11 };

static size_t run_case(kbc_rng *rng, kbc_dtype t, const gemm_case *c);

/* One plan forced over cases cs[0..n), bf16 and f16. */
static size_t check_plan(kbc_rng *rng, int tile, int splits, const gemm_case *cs, size_t n)
{
    char plan[16];
    snprintf(plan, sizeof plan, "%d,%d", tile, splits);
    setenv("RF_GEMM_TMA_PLAN", plan, 1);
    size_t bad = 0;
    for (int t = KBC_BF16; t <= KBC_F16; t++)
        for (size_t i = 0; i < n; i++)
            bad += run_case(rng, (kbc_dtype)t, &cs[i]);
    return bad;
}

/* Rows first..last of the plan table forced, unsplit, split 3 and (TMA rows) stream-K, over
 * their cases. */
static size_t check_plan_rows(kbc_rng *rng, int first_tile, int last_tile)
{
    size_t bad = 0;
    for (int tile = first_tile; tile <= last_tile && tile < PLAN_TILES; tile++) {
        if (tile == SWAP_ROW) {
            bad += check_plan(rng, tile, 1, swap_cases, KB_COUNT(swap_cases));
            bad += check_plan(rng, tile, 3, swap_cases, KB_COUNT(swap_cases));
            /* as many K parts as the package allows (fewer where K has fewer k-tiles): up to
             * 15 partials added by a group's last split */
            bad += check_plan(rng, tile, 16, swap_cases, KB_COUNT(swap_cases));
            continue;
        }
        bad += check_plan(rng, tile, 0, stream_cases, KB_COUNT(stream_cases));
        setenv("RF_GEMM_STREAM_SLOTS", STREAM_SLOTS, 1);
        bad += check_plan(rng, tile, 0, stream_cases, KB_COUNT(stream_cases));
        unsetenv("RF_GEMM_STREAM_SLOTS");
        bad += check_plan(rng, tile, 0, plan_cases, KB_COUNT(plan_cases));
        bad += check_plan(rng, tile, 1, plan_cases, KB_COUNT(plan_cases));
        bad += check_plan(rng, tile, 3, plan_cases, KB_COUNT(plan_cases));
    }
    unsetenv("RF_GEMM_TMA_PLAN");
    if (!bad)
        printf("check: ok   TMA tiles %d..%d forced, unsplit, split and stream-K\n", first_tile,
               last_tile);
    return bad;
}

/* Split-K where calls overlap: two threads, each with its own stream, issue CONC_CALLS split
 * calls back to back without waiting (the workspace pool is created by whichever comes first),
 * and one stream replays a captured graph of a split call (its workspace from the graph's own
 * allocations). The partials sum in split order, so every result must equal the single call's
 * bit for bit; a workspace shared between overlapping calls would not. */
enum { CONC_CALLS = 8, CONC_M = 16, CONC_N = 1000, CONC_K = 2048, GRAPH_REPLAYS = 3 };
typedef struct conc_job {
    const void *A, *B, *C0;
    void *C[CONC_CALLS];
    int rc;
} conc_job;

static int conc_call(const conc_job *j, void *C, cudaStream_t s)
{
    if (cudaMemcpyAsync(C, j->C0, (size_t)CONC_M * CONC_N * 2, cudaMemcpyDeviceToDevice, s) !=
        cudaSuccess)
        return -1;
    return rf_gemm_bf16(CONC_M, CONC_N, CONC_K, 0.75f, j->A, CONC_K, j->B, CONC_N, -0.5f, C, CONC_N,
                        s);
}

static void *conc_thread(void *arg)
{
    conc_job *j = arg;
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        j->rc = -1;
        return NULL;
    }
    for (int i = 0; i < CONC_CALLS && j->rc == 0; i++)
        j->rc = conc_call(j, j->C[i], s);
    if (cudaStreamSynchronize(s) != cudaSuccess && j->rc == 0)
        j->rc = -1;
    cudaStreamDestroy(s);
    return NULL;
}

/* A captured split call replayed: each replay's C against want. */
static size_t conc_graph(const conc_job *j, void *C, const void *want, void *got)
{
    size_t bytes = (size_t)CONC_M * CONC_N * 2, bad = 0;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
        kbc_die("cudaStreamCreate");
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
        kbc_die("cudaStreamBeginCapture");
    int rc = conc_call(j, C, s);
    if (cudaStreamEndCapture(s, &g) != cudaSuccess || rc != 0 ||
        cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
        fprintf(stderr, "check: FAIL split call captured into a graph: returned %d\n", rc);
        cudaStreamDestroy(s);
        return 1;
    }
    for (int r = 0; r < GRAPH_REPLAYS; r++) {
        if (cudaGraphLaunch(ge, s) != cudaSuccess || cudaStreamSynchronize(s) != cudaSuccess)
            kbc_die("cudaGraphLaunch");
        kbc_download(got, C, bytes);
        if (memcmp(got, want, bytes) != 0) {
            fprintf(stderr, "check: FAIL graph replay %d of a split call differs\n", r);
            bad++;
        }
    }
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaStreamDestroy(s);
    return bad;
}

/* env: the variable and value that force a split plan (the TMA kernels', or the skinny one's) */
static size_t check_concurrent_splits(kbc_rng *rng, const char *env, const char *value,
                                      const char *what)
{
    size_t na = (size_t)CONC_M * CONC_K, nb = (size_t)CONC_K * CONC_N, nc = (size_t)CONC_M * CONC_N;
    void *A = kbc_xmalloc(na * 2), *B = kbc_xmalloc(nb * 2), *C0 = kbc_xmalloc(nc * 2);
    void *want = kbc_xmalloc(nc * 2), *got = kbc_xmalloc(nc * 2);
    kbc_fill(rng, KBC_BF16, A, na, -1.0f, 1.0f);
    kbc_fill(rng, KBC_BF16, B, nb, -1.0f, 1.0f);
    kbc_fill(rng, KBC_BF16, C0, nc, -1.0f, 1.0f);
    conc_job jobs[2];
    void *dA = kbc_dev_alloc(na * 2), *dB = kbc_dev_alloc(nb * 2), *dC0 = kbc_dev_alloc(nc * 2);
    void *dref = kbc_dev_alloc(nc * 2);
    kbc_upload(dA, A, na * 2);
    kbc_upload(dB, B, nb * 2);
    kbc_upload(dC0, C0, nc * 2);
    size_t bad = 0;
    setenv(env, value, 1);
    for (int t = 0; t < 2; t++) {
        jobs[t] = (conc_job){dA, dB, dC0, {0}, 0};
        for (int i = 0; i < CONC_CALLS; i++)
            jobs[t].C[i] = kbc_dev_alloc(nc * 2);
    }
    if (conc_call(&jobs[0], dref, NULL) != 0 || kbc_rt_sync() != KBC_RT_OK) {
        fprintf(stderr, "check: FAIL split call on the default stream\n");
        bad++;
    }
    kbc_download(want, dref, nc * 2);
    pthread_t th[2];
    for (int t = 0; t < 2; t++)
        if (pthread_create(&th[t], NULL, conc_thread, &jobs[t]) != 0)
            kbc_die("pthread_create");
    for (int t = 0; t < 2; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].rc != 0) {
            fprintf(stderr, "check: FAIL concurrent split calls: thread %d returned %d\n", t,
                    jobs[t].rc);
            bad++;
            continue;
        }
        for (int i = 0; i < CONC_CALLS; i++) {
            kbc_download(got, jobs[t].C[i], nc * 2);
            if (memcmp(got, want, nc * 2) != 0) {
                fprintf(stderr, "check: FAIL concurrent split call %d of thread %d differs\n", i,
                        t);
                bad++;
            }
        }
    }
    bad += conc_graph(&jobs[0], jobs[0].C[0], want, got);
    unsetenv(env);
    for (int t = 0; t < 2; t++)
        for (int i = 0; i < CONC_CALLS; i++)
            kbc_dev_free(jobs[t].C[i]);
    kbc_dev_free(dA);
    kbc_dev_free(dB);
    kbc_dev_free(dC0);
    kbc_dev_free(dref);
    free(A), free(B), free(C0), free(want), free(got);
    if (!bad)
        printf("check: ok   %s: split calls on two threads' streams at once, graph replays\n",
               what);
    return bad;
}
#endif

#ifdef KBPKG_CHECK_CUDA
static size_t run_case(kbc_rng *rng, kbc_dtype t, const gemm_case *c);

/* The cases keep() takes, in bf16 and f16: the kernels an environment setting reaches. */
static size_t run_16bit_cases(kbc_rng *rng, int (*keep)(const gemm_case *))
{
    size_t bad = 0;
    for (int t = KBC_BF16; t <= KBC_F16; t++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (keep(&cases[i]))
                bad += run_case(rng, (kbc_dtype)t, &cases[i]);
    return bad;
}

static int decode_sized(const gemm_case *c)
{
    return c->M <= 64;
}

/* A or B in rows that do not start on 16 bytes (the check's allocations start aligned) */
static int rows_unaligned(const gemm_case *c)
{
    return (c->K + c->lda_pad) % 8 != 0 || (c->N + c->ldb_pad) % 8 != 0;
}

/* The skinny kernel (M <= 64) with its plan forced: K parts 1, 3, 16 and the default, 8 warps
 * and 3 (an odd count in the in-block reduction); then ("0") the M <= 64 cases with it turned
 * off (the kernels it replaced stay reachable through RF_GEMM_SKINNY=0). */
static size_t check_skinny_plans(kbc_rng *rng)
{
    static const char *const plans[] = {"64,1,8", "64,3,8", "64,16,3", "64,0,3", "0"};
    size_t bad = 0;
    for (size_t p = 0; p < sizeof plans / sizeof plans[0]; p++) {
        setenv("RF_GEMM_SKINNY", plans[p], 1);
        bad += run_16bit_cases(rng, decode_sized);
    }
    unsetenv("RF_GEMM_SKINNY");
    if (!bad)
        printf("check: ok   skinny kernel forced (K parts 1, 3, 16, default; 8 and 3 warps), and "
               "off\n");
    return bad;
}

/* Rows not 16-byte aligned: the TMA kernels read copies of them by default (the cases above);
 * with RF_GEMM_STAGE=0 no copy is made, so the kernels that read them in place run on every
 * such case as well. */
static size_t check_stage_off(kbc_rng *rng)
{
    setenv("RF_GEMM_STAGE", "0", 1);
    size_t bad = run_16bit_cases(rng, rows_unaligned);
    unsetenv("RF_GEMM_STAGE");
    if (!bad)
        printf("check: ok   unaligned rows read in place (RF_GEMM_STAGE=0)\n");
    return bad;
}
#endif

typedef int (*gemm_fn)(int, int, int, float, const void *, int, const void *, int, float, void *,
                       int, void *);

static int lib_bf16(int M, int N, int K, float al, const void *A, int lda, const void *B, int ldb,
                    float be, void *C, int ldc, void *s)
{
    return rf_gemm_bf16(M, N, K, al, A, lda, B, ldb, be, C, ldc, s);
}
static int lib_f16(int M, int N, int K, float al, const void *A, int lda, const void *B, int ldb,
                   float be, void *C, int ldc, void *s)
{
    return rf_gemm_f16(M, N, K, al, A, lda, B, ldb, be, C, ldc, s);
}
static int lib_f32(int M, int N, int K, float al, const void *A, int lda, const void *B, int ldb,
                   float be, void *C, int ldc, void *s)
{
    return rf_gemm_f32(M, N, K, al, A, lda, B, ldb, be, C, ldc, s);
}
static int ref_call(kbc_dtype t, int M, int N, int K, float al, const void *A, int lda,
                    const void *B, int ldb, float be, void *C, int ldc)
{
    if (t == KBC_BF16)
        return rf_gemm_bf16_cpu(M, N, K, al, A, lda, B, ldb, be, C, ldc);
    if (t == KBC_F16)
        return rf_gemm_f16_cpu(M, N, K, al, A, lda, B, ldb, be, C, ldc);
    return rf_gemm_f32_cpu(M, N, K, al, A, lda, B, ldb, be, C, ldc);
}

static const gemm_fn lib_fns[] = {lib_f32, lib_bf16, lib_f16};

/* fp64 result and the bound on fp32 accumulation error, sum |alpha a b| + |beta c|. */
/* n elements of x as doubles (at least one element allocated) */
static double *to_doubles(kbc_dtype t, const void *x, size_t n)
{
    double *d = kbc_xmalloc(sizeof(double) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        d[i] = kbc_get(t, x, i);
    return d;
}

/* The exact product and sum |a b| per output, in fp64. Row by row, k outer and n inner: B is
 * read along its rows (the column walk it replaced missed the cache on every element of the
 * larger cases), and each output still sums its products in k order. */
static void fp64_reference(kbc_dtype t, const gemm_case *c, const void *A, int lda, const void *B,
                           int ldb, const void *C0, int ldc, double *exact, double *absdot)
{
    double *a = to_doubles(t, A, (size_t)c->M * lda), *b = to_doubles(t, B, (size_t)c->K * ldb);
    for (int m = 0; m < c->M; m++) {
        double *s = exact + (size_t)m * c->N, *as = absdot + (size_t)m * c->N;
        for (int n = 0; n < c->N; n++)
            s[n] = as[n] = 0.0;
        for (int k = 0; k < c->K; k++) {
            const double av = a[(size_t)m * lda + k], *brow = b + (size_t)k * ldb;
            for (int n = 0; n < c->N; n++) {
                double p = av * brow[n];
                s[n] += p;
                as[n] += fabs(p);
            }
        }
        for (int n = 0; n < c->N; n++) {
            double cv = c->beta != 0.0f ? kbc_get(t, C0, (size_t)m * ldc + n) : 0.0;
            s[n] = c->alpha * s[n] + c->beta * cv;
            as[n] = fabs(c->alpha) * as[n] + fabs(c->beta * cv);
        }
    }
    free(a);
    free(b);
}

static size_t run_case(kbc_rng *rng, kbc_dtype t, const gemm_case *c)
{
    int lda = (c->K > 0 ? c->K : 1) + c->lda_pad, ldb = c->N + c->ldb_pad, ldc = c->N + c->ldc_pad;
    size_t es = kbc_size(t), na = (size_t)c->M * lda, nb = (size_t)(c->K ? c->K : 1) * ldb,
           nc = (size_t)c->M * ldc, mn = (size_t)c->M * c->N, off = (size_t)c->c_off * es;
    void *A = kbc_xmalloc(na * es), *B = kbc_xmalloc(nb * es), *C0 = kbc_xmalloc(nc * es);
    void *got = kbc_xmalloc(nc * es), *want = kbc_xmalloc(nc * es);
    kbc_fill(rng, t, A, na, -1.0f, 1.0f);
    kbc_fill(rng, t, B, nb, -1.0f, 1.0f);
    /* beta == 0 must not read C: poison it, and the padding must stay poisoned */
    if (c->beta != 0.0f) {
        kbc_poison(t, C0, nc);
        for (int m = 0; m < c->M; m++)
            kbc_fill(rng, t, (char *)C0 + (size_t)m * ldc * es, (size_t)c->N, -1.0f, 1.0f);
    } else {
        kbc_poison(t, C0, nc);
    }
    void *dA = kbc_dev_alloc(na * es), *dB = kbc_dev_alloc(nb * es),
         *dC_alloc = kbc_dev_alloc(nc * es + off), *dC = (char *)dC_alloc + off;
    kbc_upload(dA, A, na * es);
    kbc_upload(dB, B, nb * es);
    kbc_upload(dC, C0, nc * es);
    int rc = lib_fns[t](c->M, c->N, c->K, c->alpha, dA, lda, dB, ldb, c->beta, dC, ldc, NULL);
    kbc_download(got, dC, nc * es);
    memcpy(want, C0, nc * es);
    int rrc = ref_call(t, c->M, c->N, c->K, c->alpha, A, lda, B, ldb, c->beta, want, ldc);

    char what[160];
    char off_note[24] = "";
    if (c->c_off)
        snprintf(off_note, sizeof off_note, " C+%d", c->c_off);
    snprintf(what, sizeof what, "rf_gemm_%s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d a=%g b=%g%s",
             kbc_dtype_names[t], c->M, c->N, c->K, lda, ldb, ldc, c->alpha, c->beta, off_note);
    size_t bad = 0;
    if (rc != 0 || rrc != 0) {
        fprintf(stderr, "check: FAIL %s: returned %d (reference %d)\n", what, rc, rrc);
        bad = 1;
    }
    /* compact the MxN region, and require the padding columns to be untouched */
    size_t pad_bad = 0;
    void *g = kbc_xmalloc(mn * es + 1), *w = kbc_xmalloc(mn * es + 1),
         *ex = kbc_xmalloc(mn * es + 1);
    double *exact = kbc_xmalloc(sizeof(double) * (mn + 1)),
           *absdot = kbc_xmalloc(sizeof(double) * (mn + 1)),
           *tol = kbc_xmalloc(sizeof(double) * (mn + 1));
    for (int m = 0; m < c->M; m++) {
        memcpy((char *)g + (size_t)m * c->N * es, (char *)got + (size_t)m * ldc * es, c->N * es);
        memcpy((char *)w + (size_t)m * c->N * es, (char *)want + (size_t)m * ldc * es, c->N * es);
        for (int n = c->N; n < ldc; n++)
            if (!isnan(kbc_get(t, got, (size_t)m * ldc + n)))
                pad_bad++;
    }
    if (pad_bad) {
        fprintf(stderr, "check: FAIL %s: %zu padding elements beyond N were written\n", what,
                pad_bad);
        bad += pad_bad;
    }
    fp64_reference(t, c, A, lda, B, ldb, C0, ldc, exact, absdot);
    for (size_t i = 0; i < mn; i++) {
        kbc_set(t, ex, i, (float)exact[i]);
        /* two fp32 accumulations in different orders, each within K u sum|ab| */
        tol[i] = 2.0 * (c->K + 2) * 5.96e-8 * absdot[i];
    }
    /* the reference against fp64, then the library against the reference */
    char what_ref[200];
    snprintf(what_ref, sizeof what_ref, "reference vs fp64 (%s)", what);
    bad += kbc_compare(what_ref, t, w, ex, mn, kbc_ulp(t), 1e-30, tol);
    bad += kbc_compare(what, t, g, w, mn, kbc_ulp(t), 1e-30, tol);

    kbc_dev_free(dA);
    kbc_dev_free(dB);
    kbc_dev_free(dC_alloc);
    free(A), free(B), free(C0), free(got), free(want), free(g), free(w), free(ex);
    free(exact), free(absdot), free(tol);
    return bad;
}

/* NaN in, quiet NaN out, nothing else changed: the epilogues convert a fragment without NaN
 * with the bare instruction and patch only fragments that hold one (kb_any_nan), so one call
 * with a NaN in a row of A and in a column of B runs both paths. Every output off that row
 * and column must equal, bit for bit, the same call's output on the operands without the
 * NaNs (same shape, same plan, same order of sums); the row and the column must be quiet
 * NaNs. Shapes: the staged TMA epilogue (beta 0, aligned rows), stores from registers (beta),
 * a split through the reduce, the swap-AB and skinny decode kernels. */
static const gemm_case nan_cases[] = {
    {256, 512, 128, 0, 0, 0, 1.0f, 0.0f, 0},   {200, 136, 72, 0, 8, 8, 1.0f, 0.5f, 0},
    {16, 517, 1100, 4, 3, 1, 0.75f, -0.5f, 0}, {16, 4100, 1000, 0, 4, 3, 1.0f, 0.0f, 0},
    {3, 1001, 257, 1, 7, 3, 0.5f, 0.0f, 0},
};

static int quiet_nan_bits(kbc_dtype t, const void *p, size_t i)
{
    if (t == KBC_F32)
        return isnan(((const float *)p)[i]);
    uint16_t h = ((const uint16_t *)p)[i];
    return t == KBC_BF16 ? (h & 0x7f80u) == 0x7f80u && (h & 0x40u)
                         : (h & 0x7c00u) == 0x7c00u && (h & 0x200u);
}

static size_t check_nan_case(kbc_rng *rng, kbc_dtype t, const gemm_case *c)
{
    int lda = c->K + c->lda_pad, ldb = c->N + c->ldb_pad, ldc = c->N + c->ldc_pad;
    int nan_row = c->M / 2, nan_col = c->N - 1 - c->N / 3, nan_k = c->K / 3;
    size_t es = kbc_size(t), na = (size_t)c->M * lda, nb = (size_t)c->K * ldb,
           nc = (size_t)c->M * ldc;
    void *A = kbc_xmalloc(na * es), *B = kbc_xmalloc(nb * es), *C0 = kbc_xmalloc(nc * es);
    void *clean = kbc_xmalloc(nc * es), *got = kbc_xmalloc(nc * es);
    kbc_fill(rng, t, A, na, -1.0f, 1.0f);
    kbc_fill(rng, t, B, nb, -1.0f, 1.0f);
    kbc_fill(rng, t, C0, nc, -1.0f, 1.0f);
    void *dA = kbc_dev_alloc(na * es), *dB = kbc_dev_alloc(nb * es), *dC = kbc_dev_alloc(nc * es);
    int rc = 0;
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) { /* the same operands with one NaN in A's row and one in B's column */
            kbc_set(t, A, (size_t)nan_row * lda + nan_k, NAN);
            kbc_set(t, B, (size_t)(c->K - 1 - nan_k) * ldb + nan_col, NAN);
        }
        kbc_upload(dA, A, na * es);
        kbc_upload(dB, B, nb * es);
        kbc_upload(dC, C0, nc * es);
        rc |= lib_fns[t](c->M, c->N, c->K, c->alpha, dA, lda, dB, ldb, c->beta, dC, ldc, NULL);
        kbc_download(pass ? got : clean, dC, nc * es);
    }
    size_t bad = rc != 0, shown = 0;
    for (int m = 0; m < c->M; m++)
        for (int n = 0; n < c->N; n++) {
            size_t i = (size_t)m * ldc + n;
            int ok = m == nan_row || n == nan_col
                         ? quiet_nan_bits(t, got, i)
                         : memcmp((char *)got + i * es, (char *)clean + i * es, es) == 0;
            if (!ok && shown++ < 5)
                fprintf(stderr, "check: element (%d, %d): got %g, without the NaNs %g\n", m, n,
                        kbc_get(t, got, i), kbc_get(t, clean, i));
            bad += !ok;
        }
    if (bad)
        fprintf(stderr,
                "check: FAIL NaN propagation rf_gemm_%s M=%d N=%d K=%d b=%g: %zu wrong (rc %d)\n",
                kbc_dtype_names[t], c->M, c->N, c->K, c->beta, bad, rc);
    kbc_dev_free(dA);
    kbc_dev_free(dB);
    kbc_dev_free(dC);
    free(A), free(B), free(C0), free(clean), free(got);
    return bad;
}

static size_t check_nan_propagation(kbc_rng *rng)
{
    size_t bad = 0;
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof nan_cases / sizeof nan_cases[0]; i++)
            bad += check_nan_case(rng, (kbc_dtype)t, &nan_cases[i]);
    if (!bad)
        printf("check: ok   NaN in A and B: quiet NaN in their row and column, the rest "
               "unchanged bit for bit\n");
    return bad;
}

/* Bad arguments are refused with KBPKG_KERNEL_EINVAL and touch nothing. */
static size_t check_bad_args(void)
{
    size_t bad = 0;
    float dummy[4] = {0};
    struct {
        int M, N, K, lda, ldb, ldc;
        const char *why;
    } rows[] = {
        {-1, 4, 4, 4, 4, 4, "negative M"}, {4, 4, 4, 3, 4, 4, "lda < K"},
        {4, 4, 4, 4, 3, 4, "ldb < N"},     {4, 4, 4, 4, 4, 3, "ldc < N"},
        {4, -2, 4, 4, 4, 4, "negative N"}, {4, 4, -1, 4, 4, 4, "negative K"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        for (int t = 0; t < 3; t++) {
            int rc = lib_fns[t](rows[i].M, rows[i].N, rows[i].K, 1.0f, dummy, rows[i].lda, dummy,
                                rows[i].ldb, 0.0f, dummy, rows[i].ldc, NULL);
            if (rc != KBPKG_KERNEL_EINVAL) {
                fprintf(stderr, "check: FAIL rf_gemm_%s with %s: returned %d, want %d\n",
                        kbc_dtype_names[t], rows[i].why, rc, KBPKG_KERNEL_EINVAL);
                bad++;
            }
        }
    if (rf_gemm_f32(4, 4, 4, 1.0f, NULL, 4, dummy, 4, 0.0f, dummy, 4, NULL) !=
        KBPKG_KERNEL_EINVAL) {
        fprintf(stderr, "check: FAIL rf_gemm_f32 with A == NULL was accepted\n");
        bad++;
    }
    /* empty problems are no-ops that succeed */
    if (rf_gemm_bf16(0, 5, 5, 1.0f, NULL, 5, NULL, 5, 0.0f, NULL, 5, NULL) != 0) {
        fprintf(stderr, "check: FAIL rf_gemm_bf16 with M == 0 did not succeed\n");
        bad++;
    }
    if (!bad)
        printf("check: ok   bad arguments refused with KBPKG_KERNEL_EINVAL\n");
    return bad;
}

/* ---- rf_gemm_fp8_blockscale ---- */
typedef struct fp8_case {
    int M, N, K;
} fp8_case;

/* One K block, ragged M and N against the 128 scale blocks and the GPU tiles, several K
 * blocks, a single row, K = 0 (C is zeros), odd tile counts both ways at two tile heights (520 x
 * 300: 3 x 3 tiles of 192 x 128, 5 x 3 of 128 x 128), and more tiles than one wave of an H200. */
static const fp8_case fp8_cases[] = {
    {128, 128, 128},
    {257, 383, 384},
    {1, 300, 256},
    {300, 8, 512},
    {17, 129, 0},
    {65, 1, 128},
    {264, 520, 256},
    {520, 300, 384},
    {40, 200, 384}, /* the CPU kernel's skinny path: B read down K, one scale block a tile */
#if defined(KBPKG_CHECK_CUDA)
    /* GPU only (the fp64 reference takes seconds): more tiles than an H200 has SMs, more K
     * blocks than the sm_90a kernel has stages, an odd N (single-column stores); 192-row tiles
     * (the sm_90a rule's pick there) two rounds deep, so a block runs two of them; 256-row
     * tiles (the rule's pick on 114-132 SMs) two rounds deep, the last tile's second warpgroup
     * partly past M, stored from registers (odd N) and through the copy engine (N % 8 == 0) */
    {1500, 1502, 1024},
    {129, 1499, 896},
    {2304, 2048, 256},
    {1174, 5013, 256},
    {1174, 5016, 384},
#endif
};

/* Any e4m3 code but the two NaNs: subnormals, zeros of both signs and +-448 included. */
static void fp8_fill(kbc_rng *rng, kbpkg_e4m3 *p, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        kbpkg_e4m3 v;
        do
            v = (kbpkg_e4m3)(kbc_next(rng) >> 56);
        while ((v & 0x7f) == 0x7f);
        p[i] = v;
    }
}

/* Scales in [2^-12, 2^-4): the products of +-448 stay well inside bf16 and fp32. */
static void scale_fill(kbc_rng *rng, float *p, size_t count)
{
    for (size_t i = 0; i < count; i++)
        p[i] = ldexpf(1.0f + (float)(kbc_next(rng) >> 40) / 16777216.0f,
                      -12 + (int)(kbc_next(rng) >> 61));
}

/* What a GPU build may add to the fp32 bound, relative to sum |a b|: FP8 tensor cores (wgmma on
 * sm_90a, mma on sm_89) add each k32 group aligned to its largest exponent and keep about 13-14
 * bits (DeepSeek-V3 measured about 14 on Hopper), which is why the contract promotes to fp32
 * every 128 of K. Worst seen on an H200 over these cases: 2^-12.7; a wrong scale, index or K
 * block errs by a large fraction of the result, hundreds of times more. */
#if defined(KBPKG_CHECK_CUDA)
#define FP8_TENSOR_CORE_REL 0x1p-10
#else
#define FP8_TENSOR_CORE_REL 0.0
#endif

/* fp64 product of the dequantised inputs, the bound of two fp32 accumulations (tol) and of a
 * tensor-core accumulation (tol_dev). */
static void fp8_fp64_reference(const fp8_case *c, const kbpkg_e4m3 *A, const float *sa,
                               const kbpkg_e4m3 *B, const float *sb, double *exact, double *tol,
                               double *tol_dev)
{
    int kb = c->K / RF_FP8_BLOCK;
    for (int m = 0; m < c->M; m++)
        for (int n = 0; n < c->N; n++) {
            double s = 0, as = 0;
            for (int k = 0; k < c->K; k++) {
                double a = (double)rf_e4m3_to_f32(A[(size_t)m * c->K + k]) *
                           sa[(size_t)m * kb + k / RF_FP8_BLOCK];
                double b = (double)rf_e4m3_to_f32(B[(size_t)n * c->K + k]) *
                           sb[(size_t)(n / RF_FP8_BLOCK) * kb + k / RF_FP8_BLOCK];
                s += a * b;
                as += fabs(a * b);
            }
            exact[(size_t)m * c->N + n] = s;
            tol[(size_t)m * c->N + n] = 2.0 * (c->K + 2) * 5.96e-8 * as;
            tol_dev[(size_t)m * c->N + n] = tol[(size_t)m * c->N + n] + FP8_TENSOR_CORE_REL * as;
        }
}

static size_t run_fp8_case(kbc_rng *rng, const fp8_case *c)
{
    int kb = c->K / RF_FP8_BLOCK, nb = (c->N + RF_FP8_BLOCK - 1) / RF_FP8_BLOCK;
    size_t na = (size_t)c->M * c->K + 1, nbe = (size_t)c->N * c->K + 1, nsa = (size_t)c->M * kb + 1,
           nsb = (size_t)nb * kb + 1, mn = (size_t)c->M * c->N;
    kbpkg_e4m3 *A = kbc_xmalloc(na), *B = kbc_xmalloc(nbe);
    float *sa = kbc_xmalloc(nsa * 4), *sb = kbc_xmalloc(nsb * 4);
    kbpkg_bf16 *got = kbc_xmalloc(mn * 2 + 2), *want = kbc_xmalloc(mn * 2 + 2),
               *ex = kbc_xmalloc(mn * 2 + 2);
    double *exact = kbc_xmalloc(sizeof(double) * (mn + 1)),
           *tol = kbc_xmalloc(sizeof(double) * (mn + 1)),
           *tol_dev = kbc_xmalloc(sizeof(double) * (mn + 1));
    fp8_fill(rng, A, na);
    fp8_fill(rng, B, nbe);
    scale_fill(rng, sa, nsa);
    scale_fill(rng, sb, nsb);
    kbc_poison(KBC_BF16, got, mn);
    kbc_poison(KBC_BF16, want, mn);
    void *dA = kbc_dev_alloc(na), *dB = kbc_dev_alloc(nbe), *dsa = kbc_dev_alloc(nsa * 4),
         *dsb = kbc_dev_alloc(nsb * 4), *dC = kbc_dev_alloc(mn * 2 + 2);
    kbc_upload(dA, A, na);
    kbc_upload(dB, B, nbe);
    kbc_upload(dsa, sa, nsa * 4);
    kbc_upload(dsb, sb, nsb * 4);
    kbc_upload(dC, got, mn * 2 + 2);
    int rc = rf_gemm_fp8_blockscale(c->M, c->N, c->K, dA, dsa, dB, dsb, dC, NULL);
    kbc_download(got, dC, mn * 2);
    int rrc = rf_gemm_fp8_blockscale_cpu(c->M, c->N, c->K, A, sa, B, sb, want);

    char what[120];
    snprintf(what, sizeof what, "rf_gemm_fp8_blockscale M=%d N=%d K=%d", c->M, c->N, c->K);
    size_t bad = 0;
    if (rc != 0 || rrc != 0) {
        fprintf(stderr, "check: FAIL %s: returned %d (reference %d)\n", what, rc, rrc);
        bad = 1;
    }
    fp8_fp64_reference(c, A, sa, B, sb, exact, tol, tol_dev);
    for (size_t i = 0; i < mn; i++)
        kbc_set(KBC_BF16, ex, i, (float)exact[i]);
    char what_ref[160];
    snprintf(what_ref, sizeof what_ref, "reference vs fp64 (%s)", what);
    bad += kbc_compare(what_ref, KBC_BF16, want, ex, mn, kbc_ulp(KBC_BF16), 1e-30, tol);
    bad += kbc_compare(what, KBC_BF16, got, want, mn, kbc_ulp(KBC_BF16), 1e-30, tol_dev);
    kbc_dev_free(dA);
    kbc_dev_free(dB);
    kbc_dev_free(dsa);
    kbc_dev_free(dsb);
    kbc_dev_free(dC);
    free(A), free(B), free(sa), free(sb), free(got), free(want), free(ex), free(exact), free(tol),
        free(tol_dev);
    return bad;
}

/* e4m3 decoding is exact: spot values of the OCP table. */
static size_t check_e4m3_decode(void)
{
    static const struct {
        uint8_t bits;
        float want;
    } rows[] = {{0x00, 0.0f},      {0x80, -0.0f}, {0x01, 0.001953125f}, {0x07, 0.013671875f},
                {0x08, 0.015625f}, {0x38, 1.0f},  {0x3c, 1.5f},         {0x7e, 448.0f},
                {0xfe, -448.0f},   {0x40, 2.0f},  {0xb8, -1.0f},        {0x30, 0.5f}};
    size_t bad = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        float got = rf_e4m3_to_f32(rows[i].bits);
        if (got != rows[i].want || signbit(got) != signbit(rows[i].want)) {
            fprintf(stderr, "check: FAIL e4m3 0x%02x decodes to %g, want %g\n", rows[i].bits, got,
                    rows[i].want);
            bad++;
        }
    }
    if (!isnan(rf_e4m3_to_f32(0x7f)) || !isnan(rf_e4m3_to_f32(0xff))) {
        fprintf(stderr, "check: FAIL e4m3 0x7f/0xff must decode to NaN\n");
        bad++;
    }
    if (!bad)
        printf("check: ok   e4m3 decoding\n");
    return bad;
}

/* K not a multiple of 128, negative sizes and missing pointers are refused. */
static size_t check_fp8_bad_args(void)
{
    size_t bad = 0;
    uint8_t q[4] = {0};
    float s[4] = {0};
    kbpkg_bf16 c[4] = {0};
    struct {
        int M, N, K;
        const void *C;
        const float *sa;
        const char *why;
    } rows[] = {
        {4, 4, 100, c, s, "K = 100 (not a multiple of 128)"},
        {4, 4, 129, c, s, "K = 129"},
        {-1, 4, 128, c, s, "negative M"},
        {4, 4, 128, NULL, s, "C == NULL"},
        {4, 4, 128, c, NULL, "scale_a == NULL"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int rc = rf_gemm_fp8_blockscale(rows[i].M, rows[i].N, rows[i].K, q, rows[i].sa, q, s,
                                        (kbpkg_bf16 *)rows[i].C, NULL);
        if (rc != KBPKG_KERNEL_EINVAL) {
            fprintf(stderr, "check: FAIL rf_gemm_fp8_blockscale with %s: returned %d, want %d\n",
                    rows[i].why, rc, KBPKG_KERNEL_EINVAL);
            bad++;
        }
    }
    if (rf_gemm_fp8_blockscale(0, 4, 128, NULL, NULL, NULL, NULL, NULL, NULL) != 0) {
        fprintf(stderr, "check: FAIL rf_gemm_fp8_blockscale with M == 0 did not succeed\n");
        bad++;
    }
    if (!bad)
        printf("check: ok   rf_gemm_fp8_blockscale bad arguments refused\n");
    return bad;
}

/* C = A B on the host: type 0-2 as kbc_dtype (K x N B), 3 the FP8 contract (N x K B, the
 * scales of A then those of B in `scales`). */
static int cpu_gemm(int t, int M, int N, int K, void *A, void *B, float *scales, void *C)
{
    if (t == 3)
        return rf_gemm_fp8_blockscale_cpu(M, N, K, A, scales, B, scales + (size_t)M * (K / 128), C);
    if (t == KBC_F32)
        return rf_gemm_f32_cpu(M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    if (t == KBC_BF16)
        return rf_gemm_bf16_cpu(M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
    return rf_gemm_f16_cpu(M, N, K, 1.0f, A, K, B, N, 0.0f, C, N);
}

/* The CPU kernel splits C into one rectangle per thread but sums every element in the same
 * order whatever the split, so one thread (OMP_NUM_THREADS=1) and all of them agree bit for
 * bit, on each of its paths (packed, split by rows and by columns; skinny; FP8). */
static size_t check_cpu_threads(kbc_rng *rng)
{
    static const int shapes[][4] = {
        {0, 2000, 40, 300}, {1, 300, 1500, 520}, {2, 30, 3000, 300}, {3, 300, 700, 512}};
    const char *old = getenv("OMP_NUM_THREADS");
    char *saved = old ? strdup(old) : NULL;
    size_t bad = 0;
    for (size_t i = 0; i < KB_COUNT(shapes); i++) {
        int t = shapes[i][0], M = shapes[i][1], N = shapes[i][2], K = shapes[i][3];
        size_t es = t == 3 ? 1 : kbc_size((kbc_dtype)t), cs = t == 3 ? 2 : es, na = (size_t)M * K,
               nb = (size_t)K * N, ns = (size_t)(M + N) * (K / 128 + 1);
        unsigned char *A = kbc_xmalloc(na * es), *B = kbc_xmalloc(nb * es);
        unsigned char *C[2] = {kbc_xmalloc((size_t)M * N * cs), kbc_xmalloc((size_t)M * N * cs)};
        float *scales = kbc_xmalloc(ns * sizeof(float));
        if (t == 3) {
            fp8_fill(rng, A, na);
            fp8_fill(rng, B, nb);
            scale_fill(rng, scales, ns);
        } else {
            kbc_fill(rng, (kbc_dtype)t, A, na, -1.0f, 1.0f);
            kbc_fill(rng, (kbc_dtype)t, B, nb, -1.0f, 1.0f);
        }
        for (int run = 0; run < 2; run++) {
            if (run == 0)
                setenv("OMP_NUM_THREADS", "1", 1);
            else if (saved)
                setenv("OMP_NUM_THREADS", saved, 1);
            else
                unsetenv("OMP_NUM_THREADS");
            int rc = cpu_gemm(t, M, N, K, A, B, scales, C[run]);
            if (rc != 0) {
                fprintf(stderr, "check: FAIL CPU GEMM type %d %dx%dx%d returned %d\n", t, M, N, K,
                        rc);
                bad++;
            }
        }
        if (memcmp(C[0], C[1], (size_t)M * N * cs) != 0) {
            fprintf(stderr,
                    "check: FAIL CPU GEMM type %d %dx%dx%d: one thread and all of them differ\n", t,
                    M, N, K);
            bad++;
        }
        free(A), free(B), free(C[0]), free(C[1]), free(scales);
    }
    free(saved);
    if (!bad)
        printf("check: ok   CPU GEMM bit-identical on one thread and on all (%ld CPUs online)\n",
               sysconf(_SC_NPROCESSORS_ONLN));
    return bad;
}

int main(void)
{
    kbc_rng rng = kbc_rng_from_env_or_time();
    size_t bad = kbc_check_info("radeonflow/gemm");
#ifdef KBPKG_CHECK_CUDA
    /* RF_CHECK_PLAN_TILES="first,last": only those rows, and first (the device scripts run the
     * rows in parallel processes under a time limit: each plan's fp64 reference is computed on
     * the CPU, and the default path below is the same in every process) */
    int first_tile = 0, last_tile = PLAN_TILES - 1;
    const char *rows = getenv("RF_CHECK_PLAN_TILES");
    if (rows && sscanf(rows, "%d,%d", &first_tile, &last_tile) != 2) {
        first_tile = 0;
        last_tile = PLAN_TILES - 1;
    }
    if (rows)
        bad += check_plan_rows(&rng, first_tile, last_tile);
#endif
    bad += check_bad_args();
    for (int t = 0; t < 3; t++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            bad += run_case(&rng, (kbc_dtype)t, &cases[i]);
    bad += check_nan_propagation(&rng);
#ifdef KBPKG_CHECK_CUDA
    /* the TMA kernels' split (M = 16 takes them with the skinny kernel off: 8 tiles x 8 parts
     * of 4 k-tiles), then the skinny kernel's (4 parts of K) */
    setenv("RF_GEMM_SKINNY", "0", 1);
    bad += check_concurrent_splits(&rng, "RF_GEMM_TMA_PLAN", "3,8", "TMA split-K");
    bad += check_concurrent_splits(&rng, "RF_GEMM_TMA_PLAN", "3,0", "TMA stream-K");
    unsetenv("RF_GEMM_SKINNY");
    bad += check_concurrent_splits(&rng, "RF_GEMM_SKINNY", "64,4", "skinny split-K");
    bad += check_concurrent_splits(&rng, "RF_GEMM_TMA_PLAN", "10,4", "swap-AB split-K");
    /* 256 units: two grids of 128 blocks that do not fit the SMs at once, each split's last
     * block waiting on the lower blocks of its pass */
    bad += check_concurrent_splits(&rng, "RF_GEMM_TMA_PLAN", "10,16", "swap-AB split-K 16");
    bad += check_skinny_plans(&rng);
    bad += check_stage_off(&rng);
    for (int t = KBC_BF16; t <= KBC_F16; t++)
        for (size_t i = 0; i < KB_COUNT(gpu_default_cases); i++)
            bad += run_case(&rng, (kbc_dtype)t, &gpu_default_cases[i]);
    if (!rows)
        bad += check_plan_rows(&rng, first_tile, last_tile);
#endif
    bad += check_e4m3_decode();
    bad += check_fp8_bad_args();
    bad += check_cpu_threads(&rng);
    for (size_t i = 0; i < sizeof fp8_cases / sizeof fp8_cases[0]; i++)
        bad += run_fp8_case(&rng, &fp8_cases[i]);
    if (bad) {
        printf("check: FAILED (%zu problems)\n", bad);
        return 1;
    }
    printf("check: PASSED\n");
    return 0;
}
