/* kbpkg-community/activation benchmark: silu_and_mul and gelu_tanh against the measured copy
 * bandwidth of the same bytes (device memcpy on GPUs, memcpy on CPUs); --quick for CI sizes. */
#include "../src/activation_cpu.h"

#include "kbpkg_bench.h"

typedef struct act_call {
    int op; /* 0 silu_and_mul bf16, 1 gelu_tanh bf16 */
    int64_t n, d;
    void *in, *out, *copy_dst;
    size_t copy_bytes;
} act_call;

static int run_lib(void *p)
{
    act_call *c = p;
    return c->op == 0 ? act_silu_and_mul_bf16(c->out, c->in, c->n, c->d, NULL)
                      : act_gelu_tanh_bf16(c->out, c->in, c->n, c->d, NULL);
}

static int run_copy(void *p)
{
    act_call *c = p;
#if defined(KBPKG_CHECK_CUDA) || defined(KBPKG_CHECK_HIP)
    return kbb_rt_d2d(c->copy_dst, c->in, c->copy_bytes) == KBC_RT_OK ? 0 : -1;
#else
    memcpy(c->copy_dst, c->in, c->copy_bytes);
    return 0;
#endif
}

int main(int argc, char **argv)
{
    int quick = kbb_quick(argc, argv);
    static const int64_t gpu[][2] = {{4096, 4096}, {16384, 14336}, {4095, 4095}};
    static const int64_t cpu[][2] = {{512, 1024}, {511, 1023}, {4096, 4096}, {4095, 4095}};
    static const int64_t small[][2] = {{64, 256}, {63, 255}};
    const int64_t(*set)[2] = quick ? small : kbb_on_gpu() ? gpu : cpu;
    size_t count = quick ? KB_COUNT(small) : kbb_on_gpu() ? KB_COUNT(gpu) : KB_COUNT(cpu);
    for (int op = 0; op < 2; op++)
        for (size_t i = 0; i < count; i++) {
            act_call c = {op, set[i][0], set[i][1], NULL, NULL, NULL, 0};
            size_t in_elems = (size_t)c.n * c.d * (op == 0 ? 2 : 1), out_elems = (size_t)c.n * c.d;
            uint16_t *h = kbc_xmalloc(in_elems * 2);
            for (size_t k = 0; k < in_elems; k++)
                h[k] = 0x3f80; /* bf16 1.0 */
            c.in = kbc_dev_alloc(in_elems * 2);
            c.out = kbc_dev_alloc(out_elems * 2);
            kbc_upload(c.in, h, in_elems * 2);
            double bytes = (double)(in_elems + out_elems) * 2;
            /* a copy of half the bytes reads and writes as many bytes as the kernel moves */
            c.copy_bytes = (size_t)(bytes / 2);
            c.copy_dst = kbc_dev_alloc(c.copy_bytes);
            double t = kbb_time(run_lib, &c, quick), bt = kbb_time(run_copy, &c, quick);
            char shape[64];
            snprintf(shape, sizeof shape, "%lldx%lld", (long long)c.n, (long long)c.d);
            kbb_emit(op == 0 ? "act_silu_and_mul_bf16" : "act_gelu_tanh_bf16", shape, t, 0, bytes,
                     "copy", bt, NULL);
            kbc_dev_free(c.in), kbc_dev_free(c.out), kbc_dev_free(c.copy_dst);
            free(h);
        }
    return 0;
}
