/* rkmath: a header-only helper library, served to the layernorm fixture as a tar.gz/zip by
 * URL (a stand-in for CUTLASS-style header trees). Plain C, usable from CUDA device code. */
#ifndef RKMATH_REDUCE_H
#define RKMATH_REDUCE_H

#if defined(__CUDACC__) || defined(__HIPCC__)
#define RKMATH_HD __host__ __device__
#else
#define RKMATH_HD
#endif

/* Welford's running mean/variance: one pass, no cancellation. */
typedef struct rkmath_welford {
    float mean, m2;
    float count;
} rkmath_welford;

static inline RKMATH_HD void rkmath_welford_add(rkmath_welford *w, float x)
{
    w->count += 1.0f;
    float delta = x - w->mean;
    w->mean += delta / w->count;
    w->m2 += delta * (x - w->mean);
}

#endif
