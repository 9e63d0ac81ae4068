/* radeonflow/gemm over LLM-inference shapes against cuBLAS (cublasGemmEx, fp32 compute) in one
 * process: the exported rf_gemm_bf16/f16 as users call it (twice: the spread between the two is
 * the noise), the same exports of a baseline build of the package (GEMM_BASELINE_LIB, a
 * libgemm.so from an older revision, loaded with dlopen: "before" in the same run), the table's
 * split plans unsplit, the sm_90 (mma.sync) choice, and every TMA tile at its own split; at
 * M <= 64 also the skinny kernel alone (its default plan; every plan with
 * GEMM_SHAPES_SKINNY_SWEEP=1) beside the TMA kernels' picks (what the exports ran before it);
 * with GEMM_SHAPES_STREAM=1 every tile in stream-K too (M > 64);
 * with GEMM_SHAPES_CALIBRATE=1 also every tile at splits 1..16 for the bf16 shapes outside the
 * large classes (the cost model's data). Side by side on the same rotating inputs (CUDA events,
 * medians); each checked against cuBLAS (C poisoned first). A correctness sweep forces every
 * tile and split on ragged shapes, strides, alpha and beta. Prints per shape the ratios, then
 * geomean and minimum, per class too. */
#include <cublas_v2.h>

#include <cstring>

#include "../../kernels/radeonflow/gemm/src/gemm.cu"
#include "bench_common.h"

#include <algorithm>
#include <cmath>
#include <string>

struct shape {
    const char *cls;
    int M, N, K;
};

/* The bench's error check for the package's 16-bit type T. */
template <typename T>
static double rel_err(const uint16_t *x, const uint16_t *y, int rows, int cols, int ld)
{
    return bench_rel_err(x, y, rows, cols, ld,
                         std::is_same<T, kb_bf16_tag>::value ? B_BF16 : B_F16);
}

/* Every padding element of C (columns N..ldc) still holds the poison byte pattern. */
static bool padding_intact(const uint16_t *C, int M, int N, int ldc)
{
    if (ldc == N)
        return true;
    std::vector<uint16_t> h((size_t)M * ldc);
    CK(cudaMemcpy(h.data(), C, h.size() * 2, cudaMemcpyDeviceToHost));
    for (int m = 0; m < M; m++)
        for (int n = N; n < ldc; n++)
            if (h[(size_t)m * ldc + n] != 0xffff)
                return false;
    return true;
}

static cudaDataType_t cuda_type(bool bf16)
{
    return bf16 ? CUDA_R_16BF : CUDA_R_16F;
}

/* A variant: a name and how to call it (plan: a row of the table and a split, or the table's
 * own choice; which consumer; or the export). */
enum vkind {
    V_EXPORT,   /* rf_gemm_bf16/f16 */
    V_AGAIN,    /* the same, timed again */
    V_BASELINE, /* the baseline library's export (before) */
    V_AFTERLIB, /* GEMM_AFTER_LIB's export (after), loaded as the baseline is */
    V_PLAN,     /* a forced plan, wgmma */
    V_UNSPLIT,  /* the table's tile, unsplit */
    V_SM90,     /* the table's plan, mma.sync consumers (the sm_90 build) */
    V_CAL,      /* calibration: a forced plan, wgmma */
    V_TMA_PICK, /* the TMA table's plan, wgmma: the sm_90a export before the skinny kernel */
    V_TMA_SM90, /* the TMA table's plan, mma.sync: the sm_90 export before the skinny kernel */
    V_CPASYNC,  /* the cp.async mma.sync kernel the sm_80..sm_89 builds run at M <= 64 */
    V_SKINNY,   /* the skinny kernel with a forced plan (M <= 64) */
};
struct variant {
    std::string name;
    vkind kind;
    rf::ts_plan plan;
    rf::sk_plan sk;
};

/* The staging width the package does not default to (the sweep checks both). */
constexpr int kAltEpi = RF_GEMM_EPI_COLS == 256 ? 128 : 256;

typedef int (*gemm_export)(int, int, int, float, const void *, int, const void *, int, float,
                           void *, int, void *);
static gemm_export g_base[2]; /* bf16, f16 of the baseline library; null without one */
/* the same of GEMM_AFTER_LIB: before and after both through dlopen, so neither is the copy
 * compiled into this binary (at M = 1 that copy timed 4-7% off the library's on unchanged
 * code, docs/perf.md "Fifth pass") */
static gemm_export g_after[2];

template <typename T>
static int call_variant(const variant &v, int M, int N, int K, float al, const uint16_t *A, int lda,
                        const uint16_t *B, int ldb, float be, uint16_t *C, int ldc)
{
    bool bf16 = std::is_same<T, kb_bf16_tag>::value;
    switch (v.kind) {
    case V_EXPORT:
    case V_AGAIN:
        if (bf16)
            return rf_gemm_bf16(M, N, K, al, A, lda, B, ldb, be, C, ldc, nullptr);
        return rf_gemm_f16(M, N, K, al, A, lda, B, ldb, be, C, ldc, nullptr);
    case V_BASELINE:
        return g_base[bf16 ? 0 : 1](M, N, K, al, A, lda, B, ldb, be, C, ldc, nullptr);
    case V_AFTERLIB:
        return g_after[bf16 ? 0 : 1](M, N, K, al, A, lda, B, ldb, be, C, ldc, nullptr);
    case V_SM90: /* what the sm_90 build's export runs: the skinny kernel up to its M */
        if (M <= rf::SK_MAX_M_SM90) {
            int rc = rf::launch_skinny<T>(nullptr, M, N, K, al, A, lda, B, ldb, be, C, ldc, 0);
            if (rc != KBPKG_KERNEL_EUNSUPPORTED)
                return rc;
        }
        return rf::launch_tma<T, false>(M, N, K, al, A, lda, B, ldb, be, C, ldc, 0);
    case V_TMA_PICK:
        return rf::launch_tma<T, true>(M, N, K, al, A, lda, B, ldb, be, C, ldc, 0);
    case V_TMA_SM90:
        return rf::launch_tma<T, false>(M, N, K, al, A, lda, B, ldb, be, C, ldc, 0);
    case V_CPASYNC:
        return rf::launch_mma<T, 128, 128, 64, 3>(M, N, K, al, A, lda, B, ldb, be, C, ldc, 0);
    case V_SKINNY:
        return rf::launch_skinny<T>(&v.sk, M, N, K, al, A, lda, B, ldb, be, C, ldc, 0);
    default:
        return rf::launch_tma_plan<T, true>(&v.plan, M, N, K, al, A, lda, B, ldb, be, C, ldc, 0);
    }
}

static std::string plan_name(const rf::ts_plan &p)
{
    const rf::ts_tile &t = rf::kTsTiles[p.tile];
    char b[64];
    bench_plan_label(b, sizeof b, t, p.splits, true);
    return b;
}

/* Geometric mean and minimum of a set of ratios to cuBLAS (0: a wrong result). */
struct tally {
    double lg = 0, min = 1e9;
    int n = 0;
    std::string min_name;
    void add(double r, const std::string &name)
    {
        lg += std::log(std::max(r, 1e-9));
        n++;
        if (r < min) {
            min = r;
            min_name = name;
        }
    }
    double geomean() const
    {
        return n ? std::exp(lg / n) : 0.0;
    }
    std::string str() const
    {
        char b[160];
        snprintf(b, sizeof b, "geomean %.3f over %d, min %.3f (%s)", geomean(), n, n ? min : 0.0,
                 min_name.c_str());
        return b;
    }
    std::string brief() const
    {
        char b[48];
        snprintf(b, sizeof b, "%.3f (%.3f)", geomean(), n ? min : 0.0);
        return b;
    }
};

struct result {
    double ratio_default, ratio_best, ratio_sm90, ratio_base, ratio_again, ratio_unsplit;
    double ratio_after; /* GEMM_AFTER_LIB's export, 0 without one */
    /* M <= 64 (else 0): skinny, the TMA picks, the cp.async kernel of sm_80..sm_89 builds */
    double ratio_skinny, ratio_tma, ratio_sm90_tma, ratio_cpasync;
};

static std::string skinny_name(const rf::sk_plan &p)
{
    char b[64];
    snprintf(b, sizeof b, "skinny s%d w%d%s", p.splits, p.warps ? p.warps : 8,
             p.hint ? " L2::256B" : "");
    return b;
}

/* GEMM_SHAPES_SKINNY_SWEEP=1: every K split and warp count of the skinny kernel too */
static bool skinny_sweep()
{
    const char *e = getenv("GEMM_SHAPES_SKINNY_SWEEP");
    return e && *e == '1';
}

/* GEMM_SHAPES_STREAM=1: every row of the table in stream-K too (splits rf::TS_STREAM) */
static bool stream_sweep()
{
    const char *e = getenv("GEMM_SHAPES_STREAM");
    return e && *e == '1';
}

/* GEMM_SHAPES_TILES=n: time and sweep only the table's first n rows (e.g. 4: no clusters) */
static int table_rows()
{
    const char *e = getenv("GEMM_SHAPES_TILES");
    int n = e && *e ? (int)strtol(e, nullptr, 10) : rf::TS_NTILES;
    return n >= 1 && n <= rf::TS_NTILES ? n : rf::TS_NTILES;
}

static bool calibrating(const shape &sh, bool bf16)
{
    const char *e = getenv("GEMM_SHAPES_CALIBRATE");
    return e && *e == '1' && bf16 && strcmp(sh.cls, "large") && strcmp(sh.cls, "shallow");
}

template <typename T>
static result run_shape(cublasHandle_t h, const shape &sh, const char *tname, int sms, FILE *log)
{
    bool bf16 = std::is_same<T, kb_bf16_tag>::value;
    int M = sh.M, N = sh.N, K = sh.K, lda = K, ldb = N, ldc = N;
    size_t na = (size_t)M * lda, nb = (size_t)K * ldb, nc = (size_t)M * ldc;
    bench_gemm_sets g = bench_gemm_sets_alloc(na, nb, nc, bf16 ? B_BF16 : B_F16);
    const int sets = g.count;
    const std::vector<uint16_t *> &A = g.A, &B = g.B, &C = g.C;
    uint16_t *ref;
    CK(cudaMalloc(&ref, nc * 2));
    float alpha = 1.0f, beta = 0.0f;
    double flop = 2.0 * M * N * K;
    cudaDataType_t ct = cuda_type(bf16);
    auto cublas = [&](int i) {
        int s = i % sets;
        CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B[s], ct, ldb, A[s], ct, lda,
                         &beta, C[s], ct, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    };
    double t_probe = bench_median_ms(cublas, 3, 5);
    /* about 25 ms of timed calls per variant, 10..50 calls */
    int reps = (int)std::max(10.0, std::min(50.0, 25.0 / std::max(t_probe, 1e-3)));
    cublas(0);
    CK(cudaMemcpy(ref, C[0], nc * 2, cudaMemcpyDeviceToDevice));

    /* the sm_90a export's plan (the sm_90 build's is its plain row) */
    rf::ts_plan pick = rf::ts_default_plan<true>(M, N, K, lda, ldb, sms);
    std::vector<variant> vs;
    /* what the export runs (A and B rows here are 16-byte aligned): the swap-AB decode tile
     * where its default takes the shape, else the skinny kernel up to its M, else the pick */
    std::string runs = rf::sw_default_shape(M, N) ? std::string("swap-AB 64-col")
                       : M <= rf::SK_MAX_M_SM90A  ? std::string("skinny")
                                                  : plan_name(pick);
    vs.push_back({bf16 ? "rf_gemm_bf16 " + runs : "rf_gemm_f16 " + runs, V_EXPORT, pick});
    if (g_base[0])
        vs.push_back({"baseline export", V_BASELINE, pick});
    if (g_after[0])
        vs.push_back({"after library export", V_AFTERLIB, pick});
    vs.push_back({bf16 ? "rf_gemm_bf16 again" : "rf_gemm_f16 again", V_AGAIN, pick});
    if (pick.splits > 1)
        vs.push_back({"pick unsplit " + plan_name({pick.tile, 1}), V_UNSPLIT, {pick.tile, 1}});
    vs.push_back({M <= rf::SK_MAX_M_SM90 ? std::string("sm_90 build (skinny)")
                                         : "sm_90 build (mma.sync) " + plan_name(pick),
                  V_SM90, pick});
    if (M <= rf::SK_MAX_M) {
        vs.push_back({"TMA pick (wgmma) " + plan_name(pick), V_TMA_PICK, pick});
        vs.push_back({"TMA pick (mma.sync) " + plan_name(pick), V_TMA_SM90, pick});
        vs.push_back({"cp.async mma 128x128 (sm_80..89)", V_CPASYNC, pick});
        vs.push_back({"skinny (default plan)", V_SKINNY, pick, {0, 0, false}});
        if (skinny_sweep()) {
            for (int sp : {1, 2, 4, 8, 16})
                vs.push_back({skinny_name({sp, 8, false}), V_SKINNY, pick, {sp, 8, false}});
            vs.push_back({skinny_name({0, 4, false}), V_SKINNY, pick, {0, 4, false}});
            vs.push_back({skinny_name({0, 8, true}), V_SKINNY, pick, {0, 8, true}});
        }
    }
    int ktiles = (K + 63) / 64;
    if (calibrating(sh, bf16)) {
        for (int t = 0; t < table_rows(); t++)
            for (int s : {1, 2, 3, 4, 6, 8, 12, 16})
                if (s == 1 || s <= ktiles / 4)
                    vs.push_back({"cal " + plan_name({t, s}), V_CAL, {t, s}});
    } else {
        for (int t = 0; t < table_rows(); t++) {
            rf::ts_plan p = {t, rf::ts_best_splits(t, M, N, K, sms)};
            vs.push_back({"tile " + plan_name(p), V_PLAN, p});
            if (stream_sweep() && M > 64)
                vs.push_back({"tile " + plan_name({t, rf::TS_STREAM}), V_PLAN, {t, rf::TS_STREAM}});
        }
    }

    char label[64];
    snprintf(label, sizeof label, "%dx%dx%d", M, N, K);
    /* correctness first (C poisoned), dropping variants that cannot run here */
    std::vector<double> errs;
    std::vector<variant> run;
    for (const auto &v : vs) {
        CK(cudaMemset(C[0], 0xff, nc * 2)); /* NaN poison: unwritten outputs show as error */
        int rc = call_variant<T>(v, M, N, K, alpha, A[0], lda, B[0], ldb, beta, C[0], ldc);
        if (rc == KBPKG_KERNEL_EUNSUPPORTED) {
            fprintf(log, "%-8s %-18s %-4s %-36s unsupported (unaligned rows)\n", sh.cls, label,
                    tname, v.name.c_str());
            continue;
        }
        if (rc != 0) {
            fprintf(stderr, "%s %s %s: returned %d\n", label, tname, v.name.c_str(), rc);
            exit(1);
        }
        CK(cudaDeviceSynchronize());
        errs.push_back(rel_err<T>(C[0], ref, M, N, ldc));
        run.push_back(v);
    }
    /* then timing, interleaved: each round calls cuBLAS and every variant once, so clock and
     * power drift over the run hits all of them alike; medians per variant */
    size_t nv = run.size() + 1;
    auto call = [&](size_t v, int i) {
        int s = i % sets;
        if (v == 0) {
            CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &alpha, B[s], ct, ldb, A[s], ct,
                             lda, &beta, C[s], ct, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        } else if (call_variant<T>(run[v - 1], M, N, K, alpha, A[s], lda, B[s], ldb, beta, C[s],
                                   ldc) != 0) {
            fprintf(stderr, "%s failed to launch\n", run[v - 1].name.c_str());
            exit(1);
        }
    };
    std::vector<double> med = bench_interleaved_median_ms(nv, reps, call);
    double t_cublas = med[0];
    fprintf(log, "%-8s %-18s %-4s %-36s %9.4f ms %7.1f TF/s  1.000\n", sh.cls, label, tname,
            "cuBLAS", t_cublas, flop / t_cublas / 1e9);
    result r = {0, 0, 0, 0, 0, 0};
    r.ratio_unsplit = -1; /* -1: not timed (the plan is unsplit) */
    std::string best_name = "-";
    double t_skinny = 0;
    for (size_t v = 1; v < nv; v++) {
        const variant &var = run[v - 1];
        double t = med[v], ratio = t_cublas / t, err = errs[v - 1];
        bool wrong = !(err < 1e-2);
        fprintf(log, "%-8s %-18s %-4s %-36s %9.4f ms %7.1f TF/s  %.3f  relerr %.1e%s\n", sh.cls,
                label, tname, var.name.c_str(), t, flop / t / 1e9, ratio, err,
                wrong ? "  WRONG" : "");
        if (wrong) {
            fprintf(stderr, "WRONG: %s %s %s relerr %.3e\n", label, tname, var.name.c_str(), err);
            ratio = 0;
        }
        if (var.kind == V_EXPORT)
            r.ratio_default = ratio;
        if (var.kind == V_SM90)
            r.ratio_sm90 = ratio;
        if (var.kind == V_BASELINE)
            r.ratio_base = ratio;
        if (var.kind == V_AFTERLIB)
            r.ratio_after = ratio;
        if (var.kind == V_AGAIN)
            r.ratio_again = ratio;
        if (var.kind == V_UNSPLIT)
            r.ratio_unsplit = ratio;
        if (var.kind == V_SKINNY && var.sk.splits == 0 && var.sk.warps == 0)
            r.ratio_skinny = ratio, t_skinny = t;
        if (var.kind == V_TMA_PICK)
            r.ratio_tma = ratio;
        if (var.kind == V_TMA_SM90)
            r.ratio_sm90_tma = ratio;
        if (var.kind == V_CPASYNC)
            r.ratio_cpasync = ratio;
        if (var.kind != V_BASELINE && var.kind != V_AFTERLIB && var.kind != V_SM90 &&
            var.kind != V_TMA_SM90 && var.kind != V_CPASYNC && ratio > r.ratio_best) {
            r.ratio_best = ratio;
            best_name = var.name;
        }
    }
    printf("%-8s %-18s %-4s cuBLAS %6.1f TF/s | before %.3f | rf_gemm %.3f (again %.3f) %s | "
           "unsplit %.3f | sm_90 %.3f | best %.3f %s\n",
           sh.cls, label, tname, flop / t_cublas / 1e9, r.ratio_base, r.ratio_default,
           r.ratio_again, runs.c_str(), r.ratio_unsplit, r.ratio_sm90, r.ratio_best,
           best_name.c_str());
    if (t_skinny > 0) /* B (the weight) is what the skinny kernel streams: its bytes per second */
        printf("  skinny %-18s %-4s skinny %.3f (B at %.2f TB/s) | TMA pick wgmma %.3f | TMA "
               "mma.sync %.3f | cp.async %.3f | cuBLAS B at %.2f TB/s | best %s\n",
               label, tname, r.ratio_skinny, 2.0 * K * N / t_skinny / 1e9, r.ratio_tma,
               r.ratio_sm90_tma, r.ratio_cpasync, 2.0 * K * N / t_cublas / 1e9, best_name.c_str());
    fflush(stdout);
    fflush(log); /* a run cut short keeps what it timed */
    bench_gemm_sets_free(g);
    CK(cudaFree(ref));
    return r;
}

/* Every table row, forced, with and without a split, both consumers (wgmma with both staging
 * widths), on ragged shapes with padded strides, alpha and beta (C read) and beta = 0 over
 * poisoned C: against cuBLAS. */
template <typename T> static int sweep(cublasHandle_t h, FILE *log)
{
    bool bf16 = std::is_same<T, kb_bf16_tag>::value;
    struct c {
        int M, N, K, pa, pb, pc;
        float alpha, beta;
    } cases[] = {
        /* ragged M, N and K tiles; TMA needs 16-byte rows, so lda and ldb are padded to 8 */
        {77, 300, 1000, 8, 4, 2, 0.5f, -1.0f},
        {200, 136, 72, 0, 8, 0, 1.0f, 0.0f},
        {1, 520, 4096, 0, 0, 0, 1.0f, 0.0f},
        {130, 1030, 130, 6, 2, 1, -1.0f, 0.25f},
        {513, 264, 1100, 4, 0, 3, 1.0f, 0.0f},
        {16, 4104, 2048, 0, 8, 0, 1.0f, 1.0f},
        /* the staged epilogue (beta == 0, ldc and N % 8 == 0): clipped at M and N, padding
         * kept; N % 8 != 0 or beta != 0 with the same strides: stores from registers */
        {77, 296, 1000, 8, 8, 16, -1.5f, 0.0f},
        {77, 300, 1000, 8, 4, 12, -1.5f, 0.0f},
        {200, 136, 72, 0, 8, 8, 1.0f, 0.5f},
    };
    int bad = 0, runs = 0;
    cudaDataType_t ct = cuda_type(bf16);
    const std::string alt = "wgmma staging " + std::to_string(kAltEpi);
    const char *kind[] = {"mma.sync", "wgmma", alt.c_str()};
    for (const auto &cs : cases) {
        int lda = cs.K + cs.pa, ldb = cs.N + cs.pb, ldc = cs.N + cs.pc;
        size_t na = (size_t)cs.M * lda, nb = (size_t)cs.K * ldb, nc = (size_t)cs.M * ldc;
        uint16_t *A, *B, *C0, *Cr, *Co;
        CK(cudaMalloc(&A, na * 2));
        CK(cudaMalloc(&B, nb * 2));
        CK(cudaMalloc(&C0, nc * 2));
        CK(cudaMalloc(&Cr, nc * 2));
        CK(cudaMalloc(&Co, nc * 2));
        bench_fill_random(A, na, bf16 ? B_BF16 : B_F16);
        bench_fill_random(B, nb, bf16 ? B_BF16 : B_F16);
        CK(cudaMemset(C0, 0xff, nc * 2));
        if (cs.beta != 0.0f) /* rows of random values, the padding stays poisoned */
            for (int m = 0; m < cs.M; m++)
                bench_fill_random(C0 + (size_t)m * ldc, cs.N, bf16 ? B_BF16 : B_F16);
        CK(cudaMemcpy(Cr, C0, nc * 2, cudaMemcpyDeviceToDevice));
        CKB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, cs.N, cs.M, cs.K, &cs.alpha, B, ct, ldb, A,
                         ct, lda, &cs.beta, Cr, ct, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        for (int wg = 0; wg < 3; wg++)
            for (int t = 0; t < table_rows(); t++)
                for (int s : {1, 3, 16, rf::TS_STREAM}) {
                    rf::ts_plan p = {t, s};
                    CK(cudaMemcpy(Co, C0, nc * 2, cudaMemcpyDeviceToDevice));
                    int rc =
                        wg == 2   ? rf::launch_tma_plan<T, true, kAltEpi>(&p, cs.M, cs.N, cs.K,
                                                                        cs.alpha, A, lda, B, ldb,
                                                                        cs.beta, Co, ldc, 0)
                        : wg == 1 ? rf::launch_tma_plan<T, true>(&p, cs.M, cs.N, cs.K, cs.alpha, A,
                                                                 lda, B, ldb, cs.beta, Co, ldc, 0)
                                  : rf::launch_tma_plan<T, false>(&p, cs.M, cs.N, cs.K, cs.alpha, A,
                                                                  lda, B, ldb, cs.beta, Co, ldc, 0);
                    CK(cudaDeviceSynchronize());
                    double err = rc ? 1.0 : rel_err<T>(Co, Cr, cs.M, cs.N, ldc);
                    bool pad = padding_intact(Co, cs.M, cs.N, ldc);
                    runs++;
                    if (rc != 0 || !(err < 1e-2) || !pad) {
                        bad++;
                        fprintf(stderr,
                                "sweep FAIL %s %dx%dx%d ld %d/%d/%d %s %s: rc %d relerr %.2e%s\n",
                                bf16 ? "bf16" : "f16", cs.M, cs.N, cs.K, lda, ldb, ldc, kind[wg],
                                plan_name(p).c_str(), rc, err, pad ? "" : " padding written");
                    }
                    fprintf(log, "sweep %s %dx%dx%d %s %s relerr %.2e\n", bf16 ? "bf16" : "f16",
                            cs.M, cs.N, cs.K, kind[wg], plan_name(p).c_str(), err);
                }
        /* the skinny kernel: K parts 1, 3 and 16 (the workspace), 8 warps and 3 */
        for (int sp : {1, 3, 16})
            for (int w : {8, 3}) {
                if (cs.M > rf::SK_MAX_M)
                    break;
                rf::sk_plan p = {sp, w, false};
                CK(cudaMemcpy(Co, C0, nc * 2, cudaMemcpyDeviceToDevice));
                int rc = rf::launch_skinny<T>(&p, cs.M, cs.N, cs.K, cs.alpha, A, lda, B, ldb,
                                              cs.beta, Co, ldc, 0);
                if (rc == KBPKG_KERNEL_EUNSUPPORTED) /* ldb not a multiple of 8 */
                    continue;
                CK(cudaDeviceSynchronize());
                double err = rc ? 1.0 : rel_err<T>(Co, Cr, cs.M, cs.N, ldc);
                bool pad = padding_intact(Co, cs.M, cs.N, ldc);
                runs++;
                if (rc != 0 || !(err < 1e-2) || !pad) {
                    bad++;
                    fprintf(stderr, "sweep FAIL %s %dx%dx%d ld %d/%d/%d %s: rc %d relerr %.2e%s\n",
                            bf16 ? "bf16" : "f16", cs.M, cs.N, cs.K, lda, ldb, ldc,
                            skinny_name(p).c_str(), rc, err, pad ? "" : " padding written");
                }
                fprintf(log, "sweep %s %dx%dx%d %s relerr %.2e\n", bf16 ? "bf16" : "f16", cs.M,
                        cs.N, cs.K, skinny_name(p).c_str(), err);
            }
        CK(cudaFree(A));
        CK(cudaFree(B));
        CK(cudaFree(C0));
        CK(cudaFree(Cr));
        CK(cudaFree(Co));
    }
    printf("sweep %s: %d forced plans, %d failed\n", bf16 ? "bf16" : "f16", runs, bad);
    return bad;
}

/* env names a build of the package to time beside this one: its rf_gemm_bf16/f16 into
 * out[0..1] (dlopen'ed, kept open). Unset: nothing to do. False with the reason printed. */
static bool load_exports(const char *env, gemm_export out[2], const char *label)
{
    const char *lib = getenv(env);
    if (!lib)
        return true;
    out[0] = (gemm_export)bench_lib_symbol(lib, "rf_gemm_bf16");
    out[1] = out[0] ? (gemm_export)bench_lib_symbol(lib, "rf_gemm_f16") : nullptr;
    if (!out[1])
        return false;
    printf("%s: %s\n", label, lib);
    return true;
}

int main(int argc, char **argv)
{
    const char *log_path = argc > 1 ? argv[1] : "gemm_shapes.log";
    FILE *log = fopen(log_path, "w");
    if (!log) {
        perror(log_path);
        return 1;
    }
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device %s, %d SMs, L2 %d MB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
    cublasHandle_t h;
    CKB(cublasCreate(&h));
    if (!load_exports("GEMM_BASELINE_LIB", g_base, "baseline") ||
        !load_exports("GEMM_AFTER_LIB", g_after, "after library"))
        return 1;
    int bad = sweep<kb_bf16_tag>(h, log) + sweep<kb_f16_tag>(h, log);
    /* LLM inference: M tokens against hidden sizes 4096 (8B), 5120 (13B), 8192 (70B) and the
     * MLP widths 14336, 28672; odd sizes; shallow and deep K */
    const shape shapes[] = {
        {"decode", 1, 4096, 4096},     {"decode", 1, 14336, 4096},   {"decode", 1, 8192, 8192},
        {"decode", 1, 4096, 14336},    {"decode", 16, 4096, 4096},   {"decode", 16, 5120, 5120},
        {"decode", 16, 8192, 8192},    {"decode", 16, 28672, 8192},  {"decode", 32, 8192, 28672},
        {"small", 64, 4096, 4096},     {"small", 64, 14336, 4096},   {"small", 64, 8192, 8192},
        {"small", 128, 4096, 4096},    {"small", 128, 8192, 8192},   {"small", 128, 28672, 8192},
        {"small", 128, 4096, 14336},   {"mid", 256, 5120, 5120},     {"mid", 256, 14336, 4096},
        {"mid", 512, 8192, 8192},      {"mid", 512, 4096, 14336},    {"mid", 1024, 4096, 4096},
        {"mid", 1024, 28672, 8192},    {"mid", 2048, 5120, 5120},    {"large", 4096, 4096, 4096},
        {"large", 4096, 14336, 4096},  {"large", 4096, 4096, 14336}, {"large", 8192, 8192, 8192},
        {"large", 8192, 28672, 8192},  {"large", 16384, 8192, 8192}, {"large", 16384, 5120, 5120},
        {"large", 16384, 14336, 4096}, {"odd", 1000, 1000, 1000},    {"odd", 3000, 5000, 2000},
        {"odd", 4095, 4097, 1000},     {"odd", 777, 1000, 3000},     {"shallow", 16384, 16384, 512},
        {"shallow", 8192, 8192, 256},  {"deep", 256, 256, 65536},    {"deep", 1024, 1024, 32768},
        {"deep", 4096, 4096, 32768},
    };
    fprintf(log, "%-8s %-18s %-4s %-36s %12s %12s  %s\n", "class", "shape", "type", "kernel",
            "median", "rate", "vs cuBLAS");
    /* per variant: overall ([0]) and per class, in the order the classes first appear */
    std::vector<std::string> classes = {"all"};
    std::vector<tally> def(1), base(1), again(1), best(1), sm90(1), split_vs_un(1), after(1);
    tally sk, sk_tma, sk_tma90, sk_def, sk_sm90, sk_cp; /* the M <= 64 shapes */
    std::vector<double> spread;
    int at85 = 0, base85 = 0, after85 = 0, pairs = 0;
    const char *maxm_env = getenv("GEMM_SHAPES_MAXM"); /* time only shapes with M <= this */
    long maxm = maxm_env && *maxm_env ? strtol(maxm_env, nullptr, 10) : 1L << 30;
    for (const auto &sh : shapes) {
        if (sh.M > maxm)
            continue;
        size_t c = std::find(classes.begin(), classes.end(), sh.cls) - classes.begin();
        if (c == classes.size()) {
            classes.push_back(sh.cls);
            for (auto *t : {&def, &base, &again, &best, &sm90, &split_vs_un, &after})
                t->emplace_back();
        }
        for (int t = 0; t < 2; t++) {
            result r = t == 0 ? run_shape<kb_bf16_tag>(h, sh, "bf16", p.multiProcessorCount, log)
                              : run_shape<kb_f16_tag>(h, sh, "f16", p.multiProcessorCount, log);
            std::string name = std::to_string(sh.M) + "x" + std::to_string(sh.N) + "x" +
                               std::to_string(sh.K) + (t ? " f16" : " bf16");
            pairs++;
            at85 += r.ratio_default >= 0.85;
            base85 += r.ratio_base >= 0.85;
            after85 += r.ratio_after >= 0.85;
            for (size_t k : {(size_t)0, c}) {
                def[k].add(r.ratio_default, name);
                if (g_base[0])
                    base[k].add(r.ratio_base, name);
                if (g_after[0])
                    after[k].add(r.ratio_after, name);
                again[k].add(r.ratio_again, name);
                best[k].add(r.ratio_best, name);
                if (r.ratio_sm90 > 0) /* 0: unaligned rows, no TMA kernel */
                    sm90[k].add(r.ratio_sm90, name);
                /* the table's split plans against the same tile unsplit */
                if (r.ratio_unsplit > 0)
                    split_vs_un[k].add(r.ratio_default / r.ratio_unsplit, name);
            }
            if (r.ratio_skinny > 0) {
                sk.add(r.ratio_skinny, name);
                sk_tma.add(r.ratio_tma, name);
                sk_tma90.add(r.ratio_sm90_tma, name);
                sk_def.add(r.ratio_default, name);
                sk_sm90.add(r.ratio_sm90, name);
                sk_cp.add(r.ratio_cpasync, name);
            }
            if (r.ratio_default > 0 && r.ratio_again > 0)
                spread.push_back(std::fabs(r.ratio_again / r.ratio_default - 1));
        }
    }
    std::sort(spread.begin(), spread.end());
    printf("rf_gemm (sm_90a build, as exported): %s; %d of %d at >= 0.85\n", def[0].str().c_str(),
           at85, pairs);
    if (g_base[0])
        printf("baseline library (before):           %s; %d of %d at >= 0.85\n",
               base[0].str().c_str(), base85, pairs);
    if (g_after[0])
        printf("after library (dlopen):              %s; %d of %d at >= 0.85\n",
               after[0].str().c_str(), after85, pairs);
    printf("  the same export timed again:       %s; |again/first - 1| median %.3f, max %.3f\n",
           again[0].str().c_str(), spread.empty() ? 0.0 : spread[spread.size() / 2],
           spread.empty() ? 0.0 : spread.back());
    printf("split plans, split / unsplit:        %s\n", split_vs_un[0].str().c_str());
    printf("best variant per shape (oracle):     %s\n", best[0].str().c_str());
    printf("sm_90 table (mma.sync), aligned:     %s\n", sm90[0].str().c_str());
    if (sk.n) {
        printf("M <= 64, skinny kernel (default plan): %s\n", sk.str().c_str());
        printf("M <= 64, TMA pick wgmma (sm_90a before): %s\n", sk_tma.str().c_str());
        printf("M <= 64, TMA pick mma.sync (sm_90 before): %s\n", sk_tma90.str().c_str());
        printf("M <= 64, sm_90a export:                %s\n", sk_def.str().c_str());
        printf("M <= 64, sm_90 export:                 %s\n", sk_sm90.str().c_str());
        printf("M <= 64, cp.async (sm_80..89 before):  %s\n", sk_cp.str().c_str());
    }
    printf("per class, geomean (min):\n  %-8s %-3s %-13s %-13s %-13s %-13s %-13s\n", "class", "n",
           "before", "rf_gemm", "split/unspl", "sm_90", "after lib");
    for (size_t c = 1; c < classes.size(); c++)
        printf("  %-8s %-3d %-13s %-13s %-13s %-13s %-13s\n", classes[c].c_str(), def[c].n,
               base[c].brief().c_str(), def[c].brief().c_str(), split_vs_un[c].brief().c_str(),
               sm90[c].brief().c_str(), after[c].brief().c_str());
    CKB(cublasDestroy(h));
    fclose(log);
    return bad ? 1 : 0;
}
