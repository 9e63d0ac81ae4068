/* kbpkg-community/rmsnorm benchmark: rmsnorm_bf16 at square and odd widths against the measured
 * copy bandwidth of the same bytes (device memcpy on GPUs, memcpy on CPUs); --quick for CI. */
#include "../src/rmsnorm_cpu.h"

#include "kbpkg_bench.h"

typedef struct norm_call {
    int64_t n, d;
    void *x, *w, *out, *copy_dst;
    size_t copy_bytes;
} norm_call;

static int run_lib(void *p)
{
    norm_call *c = p;
    return rmsnorm_bf16(c->out, c->x, c->w, c->n, c->d, 1e-6f, NULL);
}

static int run_copy(void *p)
{
    norm_call *c = p;
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    return kbb_rt_d2d(c->copy_dst, c->x, c->copy_bytes) == KBC_RT_OK ? 0 : -1;
#else
    memcpy(c->copy_dst, c->x, c->copy_bytes);
    return 0;
#endif
}

int main(int argc, char **argv)
{
    int quick = kbb_quick(argc, argv);
    static const int64_t gpu[][2] = {{4096, 4096}, {4096, 4095}, {32768, 8192}, {1, 8192}};
    static const int64_t cpu[][2] = {{512, 4096}, {512, 4095}, {4096, 4096}, {4096, 4095}};
    static const int64_t small[][2] = {{64, 512}, {63, 511}};
    const int64_t(*set)[2] = quick ? small : kbb_on_gpu() ? gpu : cpu;
    size_t count = quick ? KB_COUNT(small) : kbb_on_gpu() ? KB_COUNT(gpu) : KB_COUNT(cpu);
    for (size_t i = 0; i < count; i++) {
        norm_call c = {set[i][0], set[i][1], NULL, NULL, NULL, NULL, 0};
        size_t elems = (size_t)c.n * c.d;
        uint16_t *h = kbc_xmalloc(elems * 2);
        for (size_t k = 0; k < elems; k++)
            h[k] = 0x3f80; /* bf16 1.0 */
        c.x = kbc_dev_alloc(elems * 2);
        c.out = kbc_dev_alloc(elems * 2);
        c.w = kbc_dev_alloc((size_t)c.d * 2);
        kbc_upload(c.x, h, elems * 2);
        kbc_upload(c.w, h, (size_t)c.d * 2);
        double bytes = (double)elems * 4; /* read x, write out (the weight stays in cache) */
        c.copy_bytes = elems * 2;
        c.copy_dst = kbc_dev_alloc(c.copy_bytes);
        double t = kbb_time(run_lib, &c, quick), bt = kbb_time(run_copy, &c, quick);
        char shape[64];
        snprintf(shape, sizeof shape, "%lldx%lld", (long long)c.n, (long long)c.d);
        kbb_emit("rmsnorm_bf16", shape, t, 0, bytes, "copy", bt, NULL);
        kbc_dev_free(c.x), kbc_dev_free(c.out), kbc_dev_free(c.w), kbc_dev_free(c.copy_dst);
        free(h);
    }
    return 0;
}
