/* silu_and_mul where the flat kernel cannot go (odd widths), side by side on one device, no
 * torch: the any-width kernel as main launches it (act::launch_any), the element kernel
 * (act::launch_elem) at E = 1, 2, 4, 8 elements per thread and blocks of 128 or 256, the
 * export's own pick (act::launch), and a 16-byte copy kernel and cudaMemcpyAsync of the output's
 * bytes, and the odd-width kernel (act::launch_odd: aligned 16-byte loads shifted in registers).
 * Main's pick is timed first and is the x column's reference. Each kernel is checked against an
 * fp64 reference on NaN-poisoned output, then timed as a CUDA graph of K calls rotating over input
 * sets (at least ~480 MB in all); the graphs are replayed interleaved, 9 rounds, median per call.
 * Build: nvcc -std=c++17 -O3 -gencode arch=compute_90,code=sm_90 -I include -I
 * kernels/kbpkg-community/activation/include -I kernels/kbpkg-community/activation/src -I bench/gpu
 * bench/gpu/act_odd.cu -o act_odd Run: act_odd
 * [--dtypes bf16,f16,f32] [--shapes 7x4095,...] */
#include "activation.cu"

#include "bench_common.h"
#include "mem_common.h"

#include <cmath>
#include <cstring>
#include <string>

template <typename T>
__global__ void ref_kernel(double *ref, const typename kb_type<T>::storage *in, int64_t n,
                           int64_t d)
{
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n * d;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = i / d, c = i % d;
        const double x = kb_type<T>::load(in[r * 2 * d + c]),
                     u = kb_type<T>::load(in[r * 2 * d + d + c]);
        ref[i] = x / (1.0 + exp(-x)) * u;
    }
}

template <typename T>
__global__ void cmp_kernel(unsigned long long *bad, const typename kb_type<T>::storage *got,
                           const double *ref, int64_t count, double rtol, double atol)
{
    unsigned long long b = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < count;
         i += (int64_t)gridDim.x * blockDim.x) {
        const double g = kb_type<T>::load(got[i]), r = ref[i];
        if (!(fabs(g - r) <= rtol * fabs(r) + atol))
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

struct cand {
    std::string name;
    int kind; /* 0 export, 1 any (main), 2 elem, 3 memcpy, 4 copy kernel, 5 flat U4 capped grid
               * (main's aligned launch), 6 flat U1 a block per 256 units (aligned rows only), 7 odd
               * (act::launch_odd: d >= V), 8 any U1 uncapped, 9 flat U1 loop-free (32-bit) */
    int e, threads;
};

template <typename T>
static void run_cand(const cand &c, void *out, const void *in, int64_t n, int64_t d, cudaStream_t s)
{
    typedef typename kb_type<T>::storage S;
    const int64_t bytes = (n * d * (int64_t)sizeof(S) + 15) / 16 * 16;
    switch (c.kind) {
    case 0:
        if (act::launch<T, ACT_SILU_AND_MUL>((S *)out, (const S *)in, n, d, s) != 0) {
            fprintf(stderr, "export refused\n");
            exit(1);
        }
        break;
    case 1:
        act::launch_any<T, ACT_SILU_AND_MUL>((S *)out, (const S *)in, n, d, s);
        break;
    case 2:
        if (c.e == 1)
            act::launch_elem<T, ACT_SILU_AND_MUL, 1>((S *)out, (const S *)in, n, d, c.threads, s);
        else if (c.e == 2)
            act::launch_elem<T, ACT_SILU_AND_MUL, 2>((S *)out, (const S *)in, n, d, c.threads, s);
        else if (c.e == 4)
            act::launch_elem<T, ACT_SILU_AND_MUL, 4>((S *)out, (const S *)in, n, d, c.threads, s);
        else
            act::launch_elem<T, ACT_SILU_AND_MUL, 8>((S *)out, (const S *)in, n, d, c.threads, s);
        break;
    case 3:
        CK(cudaMemcpyAsync(out, in, bytes, cudaMemcpyDeviceToDevice, s));
        break;
    case 4:
        copy16_k<<<(unsigned)((bytes / 16 + 255) / 256), 256, 0, s>>>(
            (uint4 *)out, (const uint4 *)in, bytes / 16);
        break;
    case 7:
        if (!act::act_can_odd(out, n, d, 16 / (int)sizeof(S))) {
            fprintf(stderr, "odd kernel cannot take this shape\n");
            exit(1);
        }
        act::launch_odd<T, ACT_SILU_AND_MUL>((S *)out, (const S *)in, n, d, s);
        break;
    case 8: { /* the any-width kernel at one unit per thread, uncapped (main's launch, no cap) */
        const int V = 16 / (int)sizeof(S);
        const int64_t units = n * d / V, tail = n * d - units * V;
        act::act_any_kernel<T, ACT_SILU_AND_MUL, 1><<<(unsigned)((units + 255) / 256), 256, 0, s>>>(
            (S *)out, (const S *)in, n, d, units, 0, (int)tail, act::make_fastdiv((uint32_t)d));
        break;
    }
    case 9: { /* blocks of c.threads (0: 256, the export's) */
        const int V = 16 / (int)sizeof(S), bt = c.threads ? c.threads : 256;
        const uint32_t total = (uint32_t)(n * (d / V));
        act::act_flat_kernel<T, ACT_SILU_AND_MUL, 1, false>
            <<<(unsigned)((total + bt - 1) / bt), bt, 0, s>>>(
                (S *)out, (const S *)in, total, act::make_fastdiv((uint32_t)(d / V)), d);
        break;
    }
    case 5:
    case 6: {
        const int V = 16 / (int)sizeof(S);
        const uint32_t total = (uint32_t)(n * (d / V));
        const int64_t needed = ((int64_t)total + 255) / 256;
        const act::fastdiv upr = act::make_fastdiv((uint32_t)(d / V));
        if (c.kind == 6)
            act::act_flat_kernel<T, ACT_SILU_AND_MUL, 1>
                <<<(unsigned)needed, 256, 0, s>>>((S *)out, (const S *)in, total, upr, d);
        else
            act::act_flat_kernel<T, ACT_SILU_AND_MUL, 4>
                <<<act::fill_grid(act::act_flat_kernel<T, ACT_SILU_AND_MUL, 4>, 256, needed), 256,
                   0, s>>>((S *)out, (const S *)in, total, upr, d);
        break;
    }
    }
}

template <typename T> static void run_shape(const char *tname, int dtype, int64_t n, int64_t d)
{
    typedef typename kb_type<T>::storage S;
    const size_t es = sizeof(S), ib = (size_t)n * 2 * d * es, ob = (size_t)n * d * es + 16;
    const double moved = (double)ib + (double)n * d * es;
    const int sets = (int)std::min<size_t>(32, std::max<size_t>(1, (480u << 20) / ib + 1));
    std::vector<void *> ins(sets);
    for (auto &p : ins) {
        CK(cudaMalloc(&p, ib));
        bench_fill_random(p, (size_t)n * 2 * d, dtype, 8.0f);
    }
    void *out;
    double *ref;
    unsigned long long *bad;
    CK(cudaMalloc(&out, ob));
    CK(cudaMalloc(&ref, (size_t)n * d * 8));
    CK(cudaMalloc(&bad, 8));
    ref_kernel<T><<<1024, 256>>>(ref, (const S *)ins[0], n, d);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    const double ulp = dtype == B_F32 ? 5.96e-8 : dtype == B_BF16 ? 3.9e-3 : 4.9e-4;
    /* f16 results below 2^-14 are subnormal: half a step of 2^-24 absolute */
    const double rtol = ulp + 16 * 5.96e-8, atol = dtype == B_F16 ? 3e-8 : 1e-37;
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* aligned rows: main's flat launch first, the reference of the x column */
    const bool aligned = d % (16 / (int64_t)es) == 0;
    std::vector<cand> cs;
    if (aligned) {
        cs = {{"flat U4 capped (main)", 5, 0, 0},
              {"export", 0, 0, 0},
              {"flat U1 uncapped", 6, 0, 0},
              {"flat U1 loop-free", 9, 0, 0},
              /* smaller blocks spread few units over more SMs */
              {"flat U1 loop-free T128", 9, 0, 128},
              {"flat U1 loop-free T64", 9, 0, 64},
              {"any", 1, 0, 0},
              /* few rows: a launch is one thread's chain, shorter per element than per unit */
              {"elem E1 T256", 2, 1, 256},
              {"elem E2 T256", 2, 2, 256},
              {"elem E1 T128", 2, 1, 128},
              {"elem E2 T128", 2, 2, 128},
              {"elem E1 T64", 2, 1, 64}};
        if (act::act_can_odd(out, n, d, 16 / (int)es))
            cs.push_back({"odd", 7, 0, 0});
    } else if (n * d > (1 << 21)) /* main's pick: the any-width kernel */
        cs = {{"export (main)", 0, 0, 0},
              {"odd", 7, 0, 0},
              {"any", 1, 0, 0},
              {"any U1 uncapped", 8, 0, 0},
              {"elem E1 T256", 2, 1, 256}};
    else { /* main's pick: the element kernel, 16-bit past 2^18 elements two per thread */
        const int e = es == 2 && n * d > (1 << 18) ? 2 : 1;
        cs = {{e == 2 ? "elem E2 T256 (main)" : "elem E1 T256 (main)", 2, e, 256},
              {"export", 0, 0, 0},
              {"odd", 7, 0, 0},
              {"any", 1, 0, 0},
              {e == 2 ? "elem E1 T256" : "elem E2 T256", 2, 3 - e, 256},
              {"elem E1 T128", 2, 1, 128},
              {"elem E1 T64", 2, 1, 64}};
    }
    cs.push_back({"memcpy (out bytes)", 3, 0, 0});
    cs.push_back({"copy16 kernel (out bytes)", 4, 0, 0});
    /* check each, capture each as a graph of k calls, then replay the graphs interleaved
     * (bench_interleaved_median_ms: drift hits every candidate alike) */
    std::vector<unsigned long long> nbad(cs.size(), 0);
    std::vector<int> calls(cs.size());
    std::vector<cudaGraphExec_t> ge(cs.size());
    for (size_t ci = 0; ci < cs.size(); ci++) {
        const cand &c = cs[ci];
        if (c.kind <= 2 || c.kind >= 7) {
            CK(cudaMemset(out, 0xff, ob));
            CK(cudaMemset(bad, 0, 8));
            CK(cudaDeviceSynchronize());
            run_cand<T>(c, out, ins[0], n, d, s);
            CK(cudaGetLastError());
            CK(cudaStreamSynchronize(s));
            cmp_kernel<T><<<1024, 256, 0, s>>>(bad, (const S *)out, ref, n * d, rtol, atol);
            CK(cudaGetLastError());
            CK(cudaMemcpy(&nbad[ci], bad, 8, cudaMemcpyDeviceToHost));
        }
        cudaEvent_t a, b;
        CK(cudaEventCreate(&a));
        CK(cudaEventCreate(&b));
        run_cand<T>(c, out, ins[0], n, d, s);
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < 3; i++)
            run_cand<T>(c, out, ins[i % sets], n, d, s);
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        CK(cudaEventDestroy(a));
        CK(cudaEventDestroy(b));
        const double est = std::max(0.5, ms * 1000.0 / 3);
        int k = std::max(sets, std::min(256, (int)(300.0 / est)));
        k = (k + sets - 1) / sets * sets;
        calls[ci] = k;
        cudaGraph_t gr;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        for (int i = 0; i < k; i++)
            run_cand<T>(c, out, ins[i % sets], n, d, s);
        CK(cudaStreamEndCapture(s, &gr));
        CK(cudaGraphInstantiate(&ge[ci], gr, 0));
        CK(cudaGraphDestroy(gr));
    }
    const std::vector<double> med = bench_interleaved_median_ms(
        cs.size(), 9, [&](size_t v, int) { CK(cudaGraphLaunch(ge[v], 0)); });
    const double main_us = med[0] * 1000.0 / calls[0]; /* the first candidate is main's pick */
    for (size_t ci = 0; ci < cs.size(); ci++) {
        const cand &c = cs[ci];
        const double us = med[ci] * 1000.0 / calls[ci];
        CK(cudaGraphExecDestroy(ge[ci]));
        printf("silu %-4s %6lld x %5lld  %-26s %9.2f us %6.0f GB/s  x%.3f vs main  %s\n", tname,
               (long long)n, (long long)d, c.name.c_str(), us, moved / us / 1e3, main_us / us,
               (c.kind >= 3 && c.kind <= 6) ? ""
               : nbad[ci]                   ? "FAIL"
                                            : "ok");
        if (nbad[ci])
            printf("     %llu elements wrong\n", nbad[ci]);
    }
    fflush(stdout);
    mem_free(s, ins, {out, ref, bad});
}

int main(int argc, char **argv)
{
    const mem_args a = mem_parse_args(argc, argv, "1x4095,7x4095,64x4095,512x4095,4096x4095");
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, 0));
    printf("device %s, %d SMs, L2 %d MiB\n", p.name, p.multiProcessorCount, p.l2CacheSize >> 20);
    mem_for_each(a, [](auto tag, const char *tname, int dtype, int64_t n, int64_t d) {
        run_shape<decltype(tag)>(tname, dtype, n, d);
    });
    return 0;
}
