/* rmsnorm's launch plans side by side on one device, no torch: for each shape and dtype, the
 * export's own plan, the rows kernel forced to other shapes (capped grid as the export launches
 * it, and uncapped: one block per piece of work, later blocks start as earlier ones finish),
 * and the pipelined kernel for aligned rows (rms_pipe_kernel) at several lane counts, units per
 * lane, block sizes and rows per group; at few rows of up to 2048 elements, the element kernel
 * (rms_elem_kernel) at 1-8 elements per thread, strided and adjacent; beside a cudaMemcpyAsync
 * and a 16-byte copy kernel of the same bytes. Each is checked against an fp64 reference on
 * NaN-poisoned output, then timed as a CUDA graph of K calls rotating over input sets (at least
 * ~480 MB of x in all, so no set is read from L2 twice in a row), events around 7 replays, median
 * per call.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -I include
 *   -I kernels/kbpkg-community/rmsnorm/include -I kernels/kbpkg-community/rmsnorm/src
 *   bench/gpu/rms_plans.cu -o rms_plans
 * Run: rms_plans [--dtypes bf16,f16,f32] [--shapes 4096x1000,...] */
#include "rmsnorm_cpu.h"

#include "kb_gpu_compat.h"
#include "rmsnorm_kernels.cuh"

#include "bench_common.h"
#include "mem_common.h"

#include <cmath>
#include <cstring>
#include <string>

typedef void (*launch_fn)(void *out, const void *x, const void *w, int64_t n, int64_t d,
                          cudaStream_t s);

/* ---- the reference: one block per row, fp64 sum ---- */
template <typename T>
__global__ void ref_kernel(float *ref, const typename kb_type<T>::storage *x,
                           const typename kb_type<T>::storage *w, int64_t n, int64_t d, float eps)
{
    __shared__ double part[256];
    const int64_t row = blockIdx.x;
    double s = 0.0;
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        double f = kb_type<T>::load(x[row * d + c]);
        s += f * f;
    }
    part[threadIdx.x] = s;
    __syncthreads();
    for (int o = blockDim.x / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o)
            part[threadIdx.x] += part[threadIdx.x + o];
        __syncthreads();
    }
    const double inv = 1.0 / sqrt(part[0] / (double)d + (double)eps);
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x)
        ref[row * d + c] = (float)((double)kb_type<T>::load(x[row * d + c]) * inv *
                                   (double)kb_type<T>::load(w[c]));
}

template <typename T>
__global__ void cmp_kernel(unsigned long long *bad, const typename kb_type<T>::storage *got,
                           const float *ref, size_t count, float rtol, float atol)
{
    unsigned long long b = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float g = kb_type<T>::load(got[i]), r = ref[i];
        if (!(fabsf(g - r) <= rtol * fabsf(r) + atol))
            b++;
    }
    if (b)
        atomicAdd(bad, b);
}

__global__ void copy16_k(uint4 *dst, const uint4 *src, int64_t units)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < units)
        dst[i] = src[i];
}

/* ---- candidates ---- */
struct cand {
    std::string name;
    int kind; /* 0 export, 1 rows kernel forced, 2 pipe, 3 memcpy, 4 copy kernel, 5 elem kernel,
               * 6 unit kernel */
    int path, vecs, threads, lanes, rows_m, block, wkeep;
    int64_t grid; /* blocks; 0: capped by occupancy (persistent); pipe, -1: a block per row */
};

static int g_sms = 0;

/* what rmsnorm.cu asks before it lets the pipelined kernel take a call */
template <typename T>
static bool aligned_call(const void *out, const void *x, const void *w, int64_t d)
{
    return d % rms::row_geo<T>::V == 0 &&
           (((uintptr_t)out | (uintptr_t)x | (uintptr_t)w) & 15u) == 0;
}

template <typename K> static int occ(K k, int threads)
{
    int per = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per, k, threads, 0));
    return per;
}

template <typename T, int R, bool BLOCK, bool WK>
static void launch_pipe(const cand &c, void *out, const void *x, const void *w, int64_t n,
                        int64_t d, cudaStream_t s)
{
    typedef typename kb_type<T>::storage S;
    auto k = rms::rms_pipe_kernel<T, R, BLOCK, WK>;
    static int cache[33]; /* occupancy per block size (32-thread steps) */
    int &per = cache[(c.threads / 32) % 33];
    if (per <= 0)
        per = occ(k, c.threads);
    int64_t most = (int64_t)per * g_sms, g = c.grid > 0 ? c.grid : most;
    if (g > most)
        g = most;
    if (c.grid < 0) /* uncapped: a block (or group) per row, as the export's many-row block plan */
        g = (n + c.threads / c.lanes - 1) / (c.threads / c.lanes);
    if (g < 1)
        g = 1;
    k<<<(unsigned)g, c.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, c.lanes);
}

template <typename T>
static void run_pipe(const cand &c, void *out, const void *x, const void *w, int64_t n, int64_t d,
                     cudaStream_t s)
{
#define PIPE(R, B, W)                                                                              \
    if (c.vecs == R && c.block == B && c.wkeep == W)                                               \
        return launch_pipe<T, R, B, W>(c, out, x, w, n, d, s);
    PIPE(1, 0, 1)
    PIPE(2, 0, 1)
    PIPE(4, 0, 1)
    PIPE(8, 0, 1)
    PIPE(8, 0, 0)
    PIPE(1, 1, 1)
    PIPE(2, 1, 1)
    PIPE(4, 1, 1)
    PIPE(4, 1, 0)
    PIPE(8, 1, 1)
    PIPE(8, 1, 0)
#undef PIPE
    fprintf(stderr, "no pipe instance R%d B%d W%d\n", c.vecs, c.block, c.wkeep);
    exit(1);
}

/* the rows kernel with an explicit grid (c.grid > 0: uncapped) or rms::run's capped grid */
template <typename T>
static void run_rows(const cand &c, void *out, const void *x, const void *w, int64_t n, int64_t d,
                     cudaStream_t s)
{
    typedef typename kb_type<T>::storage S;
    rms::plan p = rms::choose<T>(n, d, g_sms);
    p.path = c.path;
    p.vecs = c.vecs;
    p.threads = c.threads;
    p.lanes = c.lanes;
    p.rows = c.rows_m;
    p.uncapped = false; /* the capped candidates: rows_grid's grid, whatever the export's plan */
    const int64_t groups = c.path == rms::PATH_BLOCK ? 1 : c.threads / c.lanes;
    p.blocks_needed = (n + groups * c.rows_m - 1) / (groups * c.rows_m);
    if (c.grid == 0) {
        rms::run<T>(p, (S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, s);
        return;
    }
    /* uncapped: every piece of work its own block */
    const unsigned g = (unsigned)p.blocks_needed;
    if (p.path == rms::PATH_BLOCK) {
        if (p.vecs == 2)
            rms::rms_rows_kernel<T, 2, rms::SHAPE_BLOCK, 1><<<g, p.threads, 0, s>>>(
                (S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
        else if (p.vecs == 4)
            rms::rms_rows_kernel<T, 4, rms::SHAPE_BLOCK, 1><<<g, p.threads, 0, s>>>(
                (S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
        else if (p.vecs == 8)
            rms::rms_rows_kernel<T, 8, rms::SHAPE_BLOCK, 1><<<g, p.threads, 0, s>>>(
                (S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
        else
            rms::rms_rows_kernel<T, 16, rms::SHAPE_BLOCK, 1><<<g, p.threads, 0, s>>>(
                (S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
    } else if (p.vecs == 1) {
        if (p.rows > 1)
            rms::rms_rows_kernel<T, 1, rms::SHAPE_GROUP,
                                 rms::rows_at_once<T, 1, rms::SHAPE_GROUP>::value>
                <<<g, p.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, n, d, 1e-6f,
                                         p.lanes);
        else
            rms::rms_rows_kernel<T, 1, rms::SHAPE_GROUP, 1><<<g, p.threads, 0, s>>>(
                (S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
    } else if (p.vecs == 2) {
        rms::rms_rows_kernel<T, 2, rms::SHAPE_WARP, rms::rows_at_once<T, 2, rms::SHAPE_WARP>::value>
            <<<g, p.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
    } else if (p.vecs == 4) {
        rms::rms_rows_kernel<T, 4, rms::SHAPE_WARP, rms::rows_at_once<T, 4, rms::SHAPE_WARP>::value>
            <<<g, p.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
    } else if (p.vecs == 8) {
        rms::rms_rows_kernel<T, 8, rms::SHAPE_WARP, 1>
            <<<g, p.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
    } else {
        rms::rms_rows_kernel<T, 16, rms::SHAPE_WARP, 1>
            <<<g, p.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, p.lanes);
    }
}

/* the element kernel, a block per row; LOOP: the form the export launches on a capped grid */
template <typename T, bool CONTIG, bool LOOP>
static void launch_elem(const cand &c, void *out, const void *x, const void *w, int64_t n,
                        int64_t d, cudaStream_t s)
{
    typedef typename kb_type<T>::storage S;
    const unsigned g = (unsigned)n;
    if (c.vecs == 1)
        rms::rms_elem_kernel<T, 1, CONTIG, LOOP>
            <<<g, c.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, (int)n, (int)d, 1e-6f);
    else if (c.vecs == 2)
        rms::rms_elem_kernel<T, 2, CONTIG, LOOP>
            <<<g, c.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, (int)n, (int)d, 1e-6f);
    else if (c.vecs == 4)
        rms::rms_elem_kernel<T, 4, CONTIG, LOOP>
            <<<g, c.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, (int)n, (int)d, 1e-6f);
    else
        rms::rms_elem_kernel<T, 8, CONTIG, LOOP>
            <<<g, c.threads, 0, s>>>((S *)out, (const S *)x, (const S *)w, (int)n, (int)d, 1e-6f);
}

/* the unit kernel (few aligned rows): a group of c.lanes lanes per row, or a block per row */
template <typename T, bool BLOCK>
static void launch_unit(const cand &c, void *out, const void *x, const void *w, int64_t n,
                        int64_t d, cudaStream_t s)
{
    typedef typename kb_type<T>::storage S;
    const int groups = BLOCK ? 1 : c.threads / c.lanes;
    const unsigned g = (unsigned)((n + groups - 1) / groups);
#define UNIT(R)                                                                                    \
    if (c.vecs == R)                                                                               \
        return rms::rms_unit_kernel<T, R, BLOCK><<<g, c.threads, 0, s>>>(                          \
            (S *)out, (const S *)x, (const S *)w, (int)n, (int)d, 1e-6f, c.lanes);
    UNIT(1)
    UNIT(2)
    UNIT(4)
#undef UNIT
    fprintf(stderr, "no unit instance R%d\n", c.vecs);
    exit(1);
}

template <typename T>
static void run_cand(const cand &c, void *out, const void *x, const void *w, int64_t n, int64_t d,
                     cudaStream_t s)
{
    typedef typename kb_type<T>::storage S;
    const int64_t bytes = n * d * (int64_t)sizeof(S);
    switch (c.kind) {
    case 0: {
        rms::plan p = rms::choose<T>(n, d, g_sms, aligned_call<T>(out, x, w, d));
        rms::run<T>(p, (S *)out, (const S *)x, (const S *)w, n, d, 1e-6f, s);
        break;
    }
    case 1:
        run_rows<T>(c, out, x, w, n, d, s);
        break;
    case 2:
        run_pipe<T>(c, out, x, w, n, d, s);
        break;
    case 3:
        CK(cudaMemcpyAsync(out, x, bytes, cudaMemcpyDeviceToDevice, s));
        break;
    case 4:
        copy16_k<<<(unsigned)((bytes / 16 + 255) / 256), 256, 0, s>>>((uint4 *)out,
                                                                      (const uint4 *)x, bytes / 16);
        break;
    case 5: /* rms_elem_kernel: a block per row, vecs elements per thread (block: adjacent;
             * wkeep: the row loop the export launches on a capped grid) */
        if (c.wkeep)
            launch_elem<T, false, true>(c, out, x, w, n, d, s);
        else if (c.block)
            launch_elem<T, true, false>(c, out, x, w, n, d, s);
        else
            launch_elem<T, false, false>(c, out, x, w, n, d, s);
        break;
    case 6:
        if (c.block)
            launch_unit<T, true>(c, out, x, w, n, d, s);
        else
            launch_unit<T, false>(c, out, x, w, n, d, s);
        break;
    }
}

template <typename T> static std::vector<cand> candidates(int64_t n, int64_t d)
{
    const int V = rms::row_geo<T>::V;
    const int64_t units = d / V;
    std::vector<cand> v;
    const bool aligned = d % V == 0; /* the pipelined kernel takes aligned rows only */
    rms::plan e = rms::choose<T>(n, d, g_sms, aligned);
    const bool few = n <= 4 * (int64_t)g_sms;
    char buf[128];
    snprintf(buf, sizeof buf, "export p%d R%d M%d T%d L%d", e.path, e.vecs, e.rows, e.threads,
             e.lanes);
    v.push_back({buf, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    v.push_back({"memcpy", 3, 0, 0, 0, 0, 0, 0, 0, 0});
    v.push_back({"copy16 kernel", 4, 0, 0, 0, 0, 0, 0, 0, 0});
    if (getenv("RMS_PLANS_EXPORT_ONLY")) /* the export beside the copies: another build's plan */
        return v;
    if (e.path == rms::PATH_WARP ||
        e.path == rms::PATH_BLOCK) { /* the export's plan, uncapped grid */
        cand c = {
            "export plan, uncapped grid", 1, e.path, e.vecs, e.threads, e.lanes, e.rows, 0, 0, 1};
        v.push_back(c);
    }
    /* few rows of up to 2048 elements, any alignment: the element kernel at 1, 2, 4, 8 per
     * thread (at most 1024 threads), strided and adjacent */
    for (int e = 1; few && e <= 8; e *= 2) {
        const int64_t thr = rms::row_block_threads(d, e);
        if (thr > 1024 || d > 2048)
            continue;
        for (int contig = 0; contig <= (e > 1); contig++) {
            snprintf(buf, sizeof buf, "elem E%d T%d%s", e, (int)thr, contig ? " adjacent" : "");
            v.push_back({buf, 5, 0, e, (int)thr, 0, 0, contig, 0, 0});
        }
        if (e == 4) {
            snprintf(buf, sizeof buf, "elem E%d T%d row loop", e, (int)thr);
            v.push_back({buf, 5, 0, e, (int)thr, 0, 0, 0, 1, 0});
        }
    }
    /* the rows kernel's block of R = 2, 4, 8 units per thread (weight early at R <= 4) */
    for (int r = 2; r <= 8; r *= 2) {
        int64_t thr = rms::row_block_threads(units, r);
        if (thr > 512 || (r == 8 && thr > 256) || thr < 32)
            continue;
        for (int capped = 1; capped >= 0; capped--) {
            snprintf(buf, sizeof buf, "rows block R%d T%d %s", r, (int)thr,
                     capped ? "capped" : "uncapped");
            v.push_back({buf, 1, rms::PATH_BLOCK, r, (int)thr, (int)thr, 1, 0, 0, capped ? 0 : 1});
        }
    }
    if (!aligned)
        return v;
    /* few aligned rows: the unit kernel, a group of L lanes of R units per row in blocks of 32-128
     * threads (rows of up to 32 units), or a block per row of R units per thread */
    for (int r = 1; few && r <= 4; r *= 2) {
        const int64_t L = rms::pow2_at_least((units + r - 1) / r);
        if (L <= 32 && (r == 1 || L >= 4)) {
            for (int bt = 32; bt <= 128; bt *= 2) {
                snprintf(buf, sizeof buf, "unit L%d R%d T%d", (int)L, r, bt);
                v.push_back({buf, 6, 0, r, bt, (int)L, 1, 0, 0, 0});
            }
        }
        const int64_t thr = rms::row_block_threads(units, r);
        if (thr > 32 && thr <= 512) { /* the kernel's launch bounds */
            snprintf(buf, sizeof buf, "unit block R%d T%d", r, (int)thr);
            v.push_back({buf, 6, 0, r, (int)thr, (int)thr, 1, 1, 0, 0});
        }
    }
    /* the pipelined kernel, group shape: lanes L, R = units / L (a power of two <= 8) */
    for (int L = 4; L <= 32; L *= 2) {
        const int r = rms::pow2_at_least((units + L - 1) / L);
        if (r > 8 || L > units)
            continue;
        /* few rows (at most 4 per SM): blocks of one or two warps too, so that the rows
         * spread over more SMs (torch.compile's kernel takes a warp per row there) */
        for (int bt = few ? 32 : 128; bt <= 256; bt *= 2) {
            const int64_t groups = bt / L;
            if (groups < 1)
                continue;
            for (int rpg : {1, 2, 4, 0}) {
                if (few && rpg == 4)
                    continue;
                const int64_t g = rpg ? (n + groups * rpg - 1) / (groups * rpg) : 0;
                for (int wk = 1; wk >= (r == 8 ? 0 : 1); wk--) {
                    snprintf(buf, sizeof buf, "pipe L%d R%d T%d rpg%d%s", L, r, bt, rpg,
                             wk ? "" : " w-per-row");
                    v.push_back({buf, 2, 0, r, bt, L, 1, 0, wk, g});
                }
            }
        }
    }
    /* the pipelined kernel, block shape: R = 1 (few rows), 2, 4, 8 units per thread, a row per
     * block */
    for (int r = few ? 1 : 2; r <= 8; r *= 2) {
        int64_t thr = rms::row_block_threads(units, r);
        if (thr > 512 || thr <= 32)
            continue;
        for (int rpg : {1, 2, 4, 0, -1}) {
            if (few && rpg == 4)
                continue;
            const int64_t g = rpg > 0 ? (n + rpg - 1) / rpg : rpg;
            for (int wk = 1; wk >= (r >= 4 ? 0 : 1); wk--) {
                snprintf(buf, sizeof buf, "pipe block R%d T%d %s%d%s", r, (int)thr,
                         rpg < 0 ? "uncapped" : "rpg", rpg < 0 ? 1 : rpg, wk ? "" : " w-per-row");
                v.push_back({buf, 2, 0, r, (int)thr, (int)thr, 1, 1, wk, g});
            }
        }
    }
    return v;
}

/* ---- one shape ---- */
struct timing {
    double us;
    unsigned long long bad;
};

template <typename T> static void run_shape(const char *tname, int dtype, int64_t n, int64_t d)
{
    typedef typename kb_type<T>::storage S;
    const size_t es = sizeof(S), xb = (size_t)n * d * es;
    const size_t moved = 2 * xb + d * es;
    const int sets = (int)std::min<size_t>(32, std::max<size_t>(1, (480u << 20) / xb + 1));
    std::vector<void *> xs(sets);
    for (auto &p : xs) {
        CK(cudaMalloc(&p, xb));
        bench_fill_random(p, (size_t)n * d, dtype, 2.0f);
    }
    void *w, *out;
    float *ref;
    unsigned long long *bad;
    CK(cudaMalloc(&w, d * es));
    CK(cudaMalloc(&out, xb));
    CK(cudaMalloc(&ref, (size_t)n * d * 4));
    CK(cudaMalloc(&bad, 8));
    bench_fill<<<64, 256>>>(w, d, bench_seed(), dtype, 0.5f); /* in [-0.5, 0.5) */
    CK(cudaGetLastError());
    ref_kernel<T><<<(unsigned)n, 256>>>(ref, (const S *)xs[0], (const S *)w, n, d, 1e-6f);
    CK(cudaGetLastError());
    /* the fills and the reference ran on the legacy stream, which the non-blocking stream below
     * does not wait for (the first run of this bench checked its first candidate too early) */
    CK(cudaDeviceSynchronize());
    const float ulp = dtype == B_F32 ? 5.96e-8f : dtype == B_BF16 ? 3.9e-3f : 4.9e-4f;
    const float rtol = 2 * ulp + (d + 16) * 2 * 5.96e-8f, atol = 1e-5f;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    std::vector<cand> cs = candidates<T>(n, d);
    double export_us = 0, copy_us = 1e30;
    for (const cand &c : cs) {
        unsigned long long nbad = 0;
        const bool copy = c.kind == 3 || c.kind == 4;
        if (!copy) {
            CK(cudaMemset(out, 0xff, xb)); /* NaN in every type */
            CK(cudaMemset(bad, 0, 8));
            CK(cudaDeviceSynchronize());
            run_cand<T>(c, out, xs[0], w, n, d, s);
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(s));
            cmp_kernel<T><<<1024, 256, 0, s>>>(bad, (const S *)out, ref, (size_t)n * d, rtol, atol);
            CK(cudaGetLastError());
            CK(cudaMemcpy(&nbad, bad, 8, cudaMemcpyDeviceToHost));
        }
        /* rough time per call, then K calls per graph (~300 us, a multiple of sets) */
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        run_cand<T>(c, out, xs[0], w, n, d, s);
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < 3; i++)
            run_cand<T>(c, out, xs[i % sets], w, n, d, s);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        const double est = std::max(0.5, ms * 1000.0 / 3);
        int k = std::max(sets, std::min(256, (int)(300.0 / est)));
        k = (k + sets - 1) / sets * sets;
        cudaGraph_t gr;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < k; i++)
            run_cand<T>(c, out, xs[i % sets], w, n, d, s);
        CK(cudaStreamEndCapture(s, &gr));
        CK(cudaGraphInstantiate(&ge, gr, 0));
        const double us = bench_graph_median_us(ge, s, k, 1, 7);
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(gr));
        CK(cudaEventDestroy(a));
        CK(cudaEventDestroy(b));
        if (c.kind == 0)
            export_us = us;
        if (copy)
            copy_us = std::min(copy_us, us);
        printf("%-4s %6lld x %5lld  %-34s %9.2f us %6.0f GB/s  x%.3f vs export  %s\n", tname,
               (long long)n, (long long)d, c.name.c_str(), us, moved / us / 1e3,
               export_us > 0 ? export_us / us : 0.0,
               copy   ? ""
               : nbad ? "FAIL"
                      : "ok");
        if (nbad)
            printf("     %llu elements wrong\n", nbad);
    }
    printf("%-4s %6lld x %5lld  best copy %.2f us\n", tname, (long long)n, (long long)d, copy_us);
    fflush(stdout);
    mem_free(s, xs, {w, out, ref, bad});
}

int main(int argc, char **argv)
{
    const mem_args a =
        mem_parse_args(argc, argv, "4096x1000,4096x2048,4096x128,32768x128,4096x16384");
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    g_sms = p.multiProcessorCount;
    printf("device %s, %d SMs, L2 %d MiB\n", p.name, g_sms, p.l2CacheSize >> 20);
    mem_for_each(a, [](auto tag, const char *tname, int dtype, int64_t n, int64_t d) {
        run_shape<decltype(tag)>(tname, dtype, n, d);
    });
    return 0;
}
