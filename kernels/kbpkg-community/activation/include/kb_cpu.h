/* What the packages' CPU builds share (plain C, GCC/Clang): the vector type each CPU target's
 * flags pick (-march=x86-64-v2: SSE, v3: AVX2, v4: AVX-512, armv8-a: NEON), e^x on a vector,
 * and a fork-join over the cores the caller may use. The including source defines _GNU_SOURCE
 * before any system header (sched_getaffinity, pthread_attr_setaffinity_np). */
#ifndef KB_CPU_H
#define KB_CPU_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kbpkg_half.h"

/* KB_VW floats per vector register. */
#if defined(__AVX512F__)
#define KB_VW 16
#elif defined(__AVX__)
#define KB_VW 8
#else
#define KB_VW 4
#endif

typedef float kb_vecf __attribute__((vector_size(KB_VW * sizeof(float))));
typedef int32_t kb_veci __attribute__((vector_size(KB_VW * sizeof(int32_t))));

static inline kb_vecf kb_vload(const float *p)
{
    kb_vecf v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void kb_vstore(float *p, kb_vecf v)
{
    memcpy(p, &v, sizeof v);
}

static inline kb_vecf kb_vsplat(float f)
{
    return (kb_vecf){0} + f;
}

/* mask ? a : b per lane, mask from a vector comparison (all ones or zero); C has no vector ?:. */
static inline kb_vecf kb_vselect(kb_veci mask, kb_vecf a, kb_vecf b)
{
    return (kb_vecf)((mask & (kb_veci)a) | (~mask & (kb_veci)b));
}

/* e^x per lane within 2 ulp of fp32, with libm's edges: +inf past 88.72, 0 below -103.97
 * (subnormal results in between), NaN for NaN. Cody-Waite reduction x = n ln2 + r, Cephes'
 * expf polynomial for e^r, and 2^n applied as two factors so subnormal results round once. */
static inline kb_vecf kb_vexp(kb_vecf x)
{
    kb_vecf c = kb_vselect(x > 88.8f, kb_vsplat(88.8f), x);
    c = kb_vselect(c < -104.0f, kb_vsplat(-104.0f), c);
    const kb_vecf round = kb_vsplat(12582912.0f); /* 1.5 * 2^23: adding it rounds to integer */
    kb_vecf n = (c * 1.44269504088896341f + round) - round;
    kb_vecf r = c - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    kb_vecf p = 1.9875691500e-4f * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * (r * r) + r + 1.0f;
    kb_veci ni = __builtin_convertvector(n, kb_veci), n1 = ni >> 1, n2 = ni - n1;
    kb_vecf e = p * (kb_vecf)((n1 + 127) << 23) * (kb_vecf)((n2 + 127) << 23);
    return kb_vselect(x != x, x, e);
}

/* The element types of the packages' exports, as their own enums number them (0, 1, 2). */
enum { KB_CPU_F32 = 0, KB_CPU_BF16 = 1, KB_CPU_F16 = 2 };

/* count elements of p from index i0 to fp32 in out; the type tested once, so each loop is a
 * plain one the compiler vectorises. */
static inline void kb_cpu_to_floats(int type, float *out, const void *p, int64_t i0, int count)
{
    if (type == KB_CPU_F32) {
        memcpy(out, (const float *)p + i0, sizeof(float) * (size_t)count);
    } else if (type == KB_CPU_BF16) {
        for (int i = 0; i < count; i++)
            out[i] = kbpkg_bf16_to_f32(((const uint16_t *)p)[i0 + i]);
    } else {
        for (int i = 0; i < count; i++)
            out[i] = kbpkg_f16_to_f32(((const uint16_t *)p)[i0 + i]);
    }
}

/* count fp32 values of in to p from index i0, rounded to the type (to nearest even). */
static inline void kb_cpu_from_floats(int type, void *p, int64_t i0, const float *in, int count)
{
    if (type == KB_CPU_F32) {
        memcpy((float *)p + i0, in, sizeof(float) * (size_t)count);
    } else if (type == KB_CPU_BF16) {
        for (int i = 0; i < count; i++)
            ((uint16_t *)p)[i0 + i] = kbpkg_f32_to_bf16(in[i]);
    } else {
        for (int i = 0; i < count; i++)
            ((uint16_t *)p)[i0 + i] = kbpkg_f32_to_f16(in[i]);
    }
}

/* The cores this process may run on, capped by OMP_NUM_THREADS when set (the knob users
 * already set for their BLAS and PyTorch) and by work / work_per_thread: a thread costs tens
 * of microseconds to start and join, so each must have that much to do. */
static inline int kb_cpu_threads(double work, double work_per_thread)
{
    int n = 1;
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        n = CPU_COUNT(&set);
#else
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    n = online > 0 ? (int)online : 1;
#endif
    const char *cap = getenv("OMP_NUM_THREADS");
    if (cap != NULL && *cap != '\0') {
        char *end = NULL;
        errno = 0;
        long v = strtol(cap, &end, 10);
        if (errno == 0 && end != cap && v > 0 && v < n)
            n = (int)v;
    }
    if (work / work_per_thread < n)
        n = (int)(work / work_per_thread);
    return n < 1 ? 1 : n > 64 ? 64 : n;
}

/* One part of a kb_cpu_parallel call: task(arg, index, count). */
typedef void (*kb_cpu_task)(void *arg, int index, int count);

typedef struct kb_cpu_part {
    kb_cpu_task task;
    void *arg;
    int index, count;
} kb_cpu_part;

static inline void *kb_cpu_part_run(void *p)
{
    kb_cpu_part *part = (kb_cpu_part *)p;
    part->task(part->arg, part->index, part->count);
    return NULL;
}

/* Starts part t (1..) on a thread. On Linux each is placed on its own allowed CPU, not the
 * caller's: left to the scheduler, a new thread is often queued on its parent's CPU and starts
 * only when the parent's part is done (measured on a two-core VM: 40-80 us to start when
 * placed, up to the parent's whole 650 us when not), which made two threads as slow as one. */
static inline int kb_cpu_start(pthread_t *tid, kb_cpu_part *part, int t)
{
#ifdef __linux__
    cpu_set_t allowed, one;
    int self = sched_getcpu(), seen = 0;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0 && self >= 0) {
        for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
            if (!CPU_ISSET(cpu, &allowed) || cpu == self || ++seen != t)
                continue;
            pthread_attr_t attr;
            if (pthread_attr_init(&attr) != 0)
                break;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            int ok = pthread_attr_setaffinity_np(&attr, sizeof one, &one) == 0 &&
                     pthread_create(tid, &attr, kb_cpu_part_run, part) == 0;
            pthread_attr_destroy(&attr);
            if (ok)
                return 1;
            break;
        }
    }
#endif
    (void)t;
    return pthread_create(tid, NULL, kb_cpu_part_run, part) == 0;
}

/* task(arg, i, count) for every i in [0, count) (count <= 64), part 0 on the calling thread,
 * the others on threads of their own; returns when all are done. A part whose thread cannot
 * start runs on the caller after its own. */
static inline void kb_cpu_parallel(kb_cpu_task task, void *arg, int count)
{
    kb_cpu_part parts[64];
    pthread_t tids[64];
    int started[64] = {0};
    count = count < 1 ? 1 : count > 64 ? 64 : count;
    for (int t = 0; t < count; t++)
        parts[t] = (kb_cpu_part){task, arg, t, count};
    for (int t = 1; t < count; t++)
        started[t] = kb_cpu_start(&tids[t], &parts[t], t);
    task(arg, 0, count);
    for (int t = 1; t < count; t++) {
        if (started[t])
            pthread_join(tids[t], NULL);
        else
            task(arg, t, count);
    }
}

#endif
