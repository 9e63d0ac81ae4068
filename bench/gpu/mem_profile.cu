/* The packages' memory-bound kernels at chosen shapes, for Nsight Compute and for a quick
 * before/after timing (bench/gpu/mem_profile.sh): loads librmsnorm.so and libactivation.so from
 * one or two folders (dlopen, like the loader), and a 16-byte copy kernel of the same output
 * bytes as the floor.
 *   mem_profile --once DIR SHAPE...       each shape's export then the copy, twice (a warm pass,
 *                                         then the pass to profile: ncu --launch-skip)
 *   mem_profile --time DIR [DIR2] SHAPE...  CUDA-graph replays, medians, us per call
 * SHAPE: op:dtype:rows:width, op silu|rms, dtype bf16|f16|f32. */
#include "bench_common.h" /* CK, bench_graph_median_us */

#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <string>
#include <vector>

__global__ void prof_copy16(uint4 *dst, const uint4 *src, int64_t units)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < units)
        dst[i] = src[i];
}

/* count values in [-3, 3) of the element type, from the host (no kernel launch: under ncu the
 * only kernels are the exports' and the copy's, so --launch-skip counts just those) */
static void fill(void *p, int64_t count, int esize, bool bf16, uint32_t seed)
{
    std::vector<uint8_t> h((size_t)(count * esize));
    uint32_t x = seed * 2654435761u + 1u;
    for (int64_t i = 0; i < count; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        float f = (float)(x & 0xffffff) / 16777216.0f * 6.0f - 3.0f;
        if (esize == 4) {
            memcpy(&h[i * 4], &f, 4);
        } else {
            uint16_t b;
            if (bf16) {
                uint32_t u;
                memcpy(&u, &f, 4);
                b = (uint16_t)(u >> 16);
            } else {
                b = __half_as_ushort(__float2half(f));
            }
            memcpy(&h[i * 2], &b, 2);
        }
    }
    CK(cudaMemcpy(p, h.data(), h.size(), cudaMemcpyHostToDevice));
}

typedef int (*act_fn)(void *, const void *, int64_t, int64_t, void *);
typedef int (*rms_fn)(void *, const void *, const void *, int64_t, int64_t, float, void *);

struct shape {
    std::string op, dtype;
    int64_t n, d;
    int esize() const
    {
        return dtype == "f32" ? 4 : 2;
    }
};

struct libs {
    void *act, *rms;
};

static libs open_libs(const char *dir)
{
    libs l;
    std::string a = std::string(dir) + "/libactivation.so", r = std::string(dir) + "/librmsnorm.so";
    l.act = dlopen(a.c_str(), RTLD_NOW | RTLD_LOCAL);
    l.rms = dlopen(r.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!l.act || !l.rms) {
        fprintf(stderr, "dlopen %s: %s\n", dir, dlerror());
        exit(1);
    }
    return l;
}

static const int SETS = 4;

/* Buffers of one shape: SETS input sets, one output, a weight, copy source sets. */
struct bufs {
    std::vector<void *> in, csrc;
    void *out, *w, *cdst;
    int64_t out_bytes;
};

static bufs make_bufs(const shape &s)
{
    bufs b;
    const int64_t in_elems = s.n * s.d * (s.op == "silu" ? 2 : 1);
    b.out_bytes = s.n * s.d * s.esize();
    for (int i = 0; i < SETS; i++) {
        void *p, *c;
        CK(cudaMalloc(&p, in_elems * s.esize()));
        if (i > 0 && in_elems * s.esize() > (64 << 20)) /* large: no cache reuse anyway */
            CK(cudaMemcpy(p, b.in[0], in_elems * s.esize(), cudaMemcpyDeviceToDevice));
        else
            fill(p, in_elems, s.esize(), s.dtype == "bf16", 17u * i + 1);
        CK(cudaMalloc(&c, b.out_bytes + 16));
        CK(cudaMemset(c, 0, b.out_bytes + 16));
        b.in.push_back(p);
        b.csrc.push_back(c);
    }
    CK(cudaMalloc(&b.out, b.out_bytes + 16));
    CK(cudaMalloc(&b.cdst, b.out_bytes + 16));
    CK(cudaMalloc(&b.w, s.d * s.esize()));
    fill(b.w, s.d, s.esize(), s.dtype == "bf16", 99u);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    return b;
}

static void free_bufs(bufs &b)
{
    for (int i = 0; i < SETS; i++) {
        cudaFree(b.in[i]);
        cudaFree(b.csrc[i]);
    }
    cudaFree(b.out);
    cudaFree(b.cdst);
    cudaFree(b.w);
}

static void call_ours(const libs &l, const shape &s, const bufs &b, int set, cudaStream_t st)
{
    std::string sym = (s.op == "silu" ? "act_silu_and_mul_" : "rmsnorm_") + s.dtype;
    void *f = dlsym(s.op == "silu" ? l.act : l.rms, sym.c_str());
    if (!f) {
        fprintf(stderr, "no %s\n", sym.c_str());
        exit(1);
    }
    int rc = s.op == "silu" ? ((act_fn)f)(b.out, b.in[set], s.n, s.d, st)
                            : ((rms_fn)f)(b.out, b.in[set], b.w, s.n, s.d, 1e-6f, st);
    if (rc != 0) {
        fprintf(stderr, "%s returned %d\n", sym.c_str(), rc);
        exit(1);
    }
}

static void call_copy(const bufs &b, int set, cudaStream_t st)
{
    const int64_t units = (b.out_bytes + 15) / 16;
    prof_copy16<<<(unsigned)((units + 255) / 256), 256, 0, st>>>((uint4 *)b.cdst,
                                                                 (const uint4 *)b.csrc[set], units);
}

/* us per call: a graph of K calls over the input sets, median of 15 timed replays */
template <typename F> static double time_us(F call, int64_t bytes, cudaStream_t st)
{
    const int K = bytes > (64 << 20) ? 4 : 40;
    cudaGraph_t g;
    cudaGraphExec_t ge;
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
    for (int k = 0; k < K; k++)
        call(k % SETS);
    CK(cudaStreamEndCapture(st, &g));
    CK(cudaGraphInstantiate(&ge, g, 0));
    const double us = bench_graph_median_us(ge, st, K, 3, 15);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    return us;
}

static shape parse(const char *arg)
{
    char op[8], dt[8];
    long long n, d;
    if (sscanf(arg, "%7[a-z]:%7[a-z0-9]:%lld:%lld", op, dt, &n, &d) != 4) {
        fprintf(stderr, "bad shape %s\n", arg);
        exit(2);
    }
    return shape{op, dt, (int64_t)n, (int64_t)d};
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s --once DIR SHAPE... | --time DIR [DIR2] SHAPE...\n", argv[0]);
        return 2;
    }
    const bool once = strcmp(argv[1], "--once") == 0;
    std::vector<libs> L{open_libs(argv[2])};
    int first = 3;
    if (!once && strchr(argv[3], ':') == NULL) {
        L.push_back(open_libs(argv[3]));
        first = 4;
    }
    std::vector<shape> shapes;
    for (int i = first; i < argc; i++)
        shapes.push_back(parse(argv[i]));
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    if (once) {
        std::vector<bufs> B;
        for (auto &s : shapes)
            B.push_back(make_bufs(s));
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = 0; i < shapes.size(); i++) {
                call_ours(L[0], shapes[i], B[i], 0, st);
                call_copy(B[i], 0, st);
                CK(cudaStreamSynchronize(st));
                CK(cudaGetLastError());
            }
        for (auto &b : B)
            free_bufs(b);
        printf("once: %zu shapes, 2 passes of (export, copy)\n", shapes.size());
        return 0;
    }
    printf("%-5s %-5s %13s %9s %9s %9s %9s %9s\n", "op", "dtype", "shape", "copy", "before",
           "after", "bef-copy", "aft-copy");
    for (auto &s : shapes) {
        bufs b = make_bufs(s);
        double c = time_us([&](int k) { call_copy(b, k, st); }, b.out_bytes, st);
        double t[2] = {0, 0};
        for (size_t j = 0; j < L.size(); j++)
            t[j] = time_us([&](int k) { call_ours(L[j], s, b, k, st); }, b.out_bytes, st);
        CK(cudaGetLastError());
        char sh[32];
        snprintf(sh, sizeof sh, "%lldx%lld", (long long)s.n, (long long)s.d);
        printf("%-5s %-5s %13s %9.2f %9.2f %9.2f %9.2f %9.2f\n", s.op.c_str(), s.dtype.c_str(), sh,
               c, t[0], t[1], t[0] - c, L.size() > 1 ? t[1] - c : 0.0);
        free_bufs(b);
    }
    return 0;
}
