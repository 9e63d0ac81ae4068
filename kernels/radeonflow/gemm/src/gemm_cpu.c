/* radeonflow/gemm on the CPU, also the reference the GPU checks compare against (itself checked
 * against fp64). The GotoBLAS/BLIS layout: a KC x NC panel of B and an MC x KC block of A are
 * converted to fp32 and packed into slivers once, then a register-blocked MR x NR micro-kernel
 * runs over them. The micro-kernel is written with GCC/Clang vector extensions, so each CPU
 * target's flags pick its vector width (-march=x86-64-v2: SSE, v3: AVX2+FMA, v4: AVX-512,
 * armv8-a: NEON) from one source. Large calls split C into one rectangle per core. */
#define _GNU_SOURCE /* kb_cpu.h: sched_getaffinity */
#include "gemm_cpu.h"

#include "kb_cpu.h"
#include "kbpkg_half.h"

/* bf16 GEMMs on x86-64 CPUs with AVX512-BF16 (Zen 4+, Cooper Lake, Sapphire Rapids) multiply
 * bf16 pairs with vdpbf16ps, twice the products per instruction of fp32 FMAs and half the bytes
 * packed. The extension is not part of x86-64-v4, so the v4 build compiles that kernel for it
 * alone and takes it when the CPU reports it (bf16_dot_usable). */
#if defined(__x86_64__) && defined(__AVX512F__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define RF_BF16_DOT 1
#endif

/* MR rows x NR = 2 vectors of columns of accumulators, sized to the register file: 12 x 2 of
 * AVX-512's 32 registers, 6 x 2 of AVX's or SSE's 16, 8 x 2 of NEON's 32, leaving room for the
 * two B vectors and the broadcast A value. */
#if defined(__AVX512F__)
enum { VW = KB_VW, MR = 12 };
#elif defined(__aarch64__)
enum { VW = KB_VW, MR = 8 };
#else
enum { VW = KB_VW, MR = 6 };
#endif
enum { NR = 2 * VW };
/* The row counts a tile can have, for the switches that give each kernel its constant rows. */
#define EACH_ROW_COUNT(CASE)                                                                       \
    CASE(1)                                                                                        \
    CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8) CASE(9) CASE(10) CASE(11) CASE(12)
_Static_assert(MR <= 12, "EACH_ROW_COUNT lists up to 12 rows");

/* KC x NR of B (a sliver) stays in L1 while MR-row slivers of the MC x KC block of A stream
 * from L2; NC bounds the fp32 panel and the C workspace. */
enum { KC = 256, MC = 240, NC = 1024 };

/* Calls of at most SKINNY_ROWS rows (per thread) take the skinny path. Its tiles of a K x N B
 * are SKINNY_KB rows deep (that many streams of B read at once); those of the FP8 contract's
 * N x K B are read down K, NR streams whatever the depth, so they are one scale block deep
 * (fewer, longer runs per column). */
enum { SKINNY_ROWS = 4 * MR, SKINNY_KB = 16, SKINNY_KB_KMAJOR = RF_FP8_BLOCK };

/* Each thread gets at least this many flops (tens of microseconds of a core's work). */
#define MIN_FLOPS_PER_THREAD 8.0e6

/* Every loop over a tile's rows unrolled, so its accumulators are registers, not an array. */
#define UNROLL_ROWS _Pragma("GCC unroll 12")

/* w[rows x NR] (row stride ldw) = or += the product of a rows x kc sliver of A (k-major, MR
 * values per k whatever `rows` is) and a kc x NR sliver of B. `rows` is a constant wherever
 * this is inlined, so the accumulators stay in registers. */
static inline __attribute__((always_inline)) void
tile_kernel(const int rows, int kc, const float *restrict a, const float *restrict b, size_t b_step,
            float *restrict w, size_t ldw, int accumulate)
{
    kb_vecf acc0[MR], acc1[MR];
    UNROLL_ROWS
    for (int r = 0; r < rows; r++)
        acc0[r] = acc1[r] = (kb_vecf){0};
    for (int k = 0; k < kc; k++, a += MR, b += b_step) {
        kb_vecf b0 = kb_vload(b), b1 = kb_vload(b + VW);
        UNROLL_ROWS
        for (int r = 0; r < rows; r++) {
            acc0[r] += a[r] * b0;
            acc1[r] += a[r] * b1;
        }
    }
    UNROLL_ROWS
    for (int r = 0; r < rows; r++, w += ldw) {
        if (accumulate) {
            acc0[r] += kb_vload(w);
            acc1[r] += kb_vload(w + VW);
        }
        kb_vstore(w, acc0[r]);
        kb_vstore(w + VW, acc1[r]);
    }
}

/* The tile kernel for 1..MR rows: the slivers are zero-padded to whole tiles, but the rows of
 * a partial sliver past the last are not computed (a decode call has one row of twelve). */
static void rows_kernel(int rows, int kc, const float *restrict a, const float *restrict b,
                        size_t b_step, float *restrict w, size_t ldw, int accumulate)
{
#define ROWS_CASE(r)                                                                               \
    case r:                                                                                        \
        if (r <= MR)                                                                               \
            tile_kernel(r <= MR ? r : MR, kc, a, b, b_step, w, ldw, accumulate);                   \
        return;
    switch (rows) {
        EACH_ROW_COUNT(ROWS_CASE)
    }
#undef ROWS_CASE
}

/* An operand as stored: rows of `ld` elements. The e4m3 operands carry an fp32 scale per
 * RF_FP8_BLOCK of K (their columns), one row of scales per `scale_rows` rows. */
typedef enum { T_F32, T_BF16, T_F16, T_E4M3 } elem_type;

typedef struct operand {
    const void *p;
    size_t ld;
    elem_type type;
    const float *scale;    /* e4m3 only */
    int kblocks;           /* scales per row of scales */
    int scale_rows;        /* 1 for A (a scale per 1 x 128), RF_FP8_BLOCK for B (per 128 x 128) */
    const float *lut;      /* e4m3 only: the 256 decoded values */
    const uint16_t *lut16; /* e4m3 only: the same as bf16 bits (exact: e4m3 fits bf16) */
} operand;

/* count elements of row `row` from column col0, as fp32 (e4m3 scaled), to out[i * step]:
 * written where the packed sliver wants them, with no copy in between. */
static void load_run(float *out, size_t step, const operand *s, size_t row, size_t col0, int count)
{
    size_t base = row * s->ld + col0;
    switch (s->type) {
    case T_F32:
        if (step == 1)
            memcpy(out, (const float *)s->p + base, sizeof(float) * (size_t)count);
        else
            for (int i = 0; i < count; i++)
                out[(size_t)i * step] = ((const float *)s->p)[base + i];
        return;
    case T_BF16:
        for (int i = 0; i < count; i++)
            out[(size_t)i * step] = kbpkg_bf16_to_f32(((const uint16_t *)s->p)[base + i]);
        return;
    case T_F16:
        for (int i = 0; i < count; i++)
            out[(size_t)i * step] = kbpkg_f16_to_f32(((const uint16_t *)s->p)[base + i]);
        return;
    case T_E4M3: { /* a scale per RF_FP8_BLOCK columns: one multiplier per stretch */
        const uint8_t *q = (const uint8_t *)s->p + base;
        const float *scales = s->scale + (row / (size_t)s->scale_rows) * (size_t)s->kblocks;
        for (int i = 0; i < count;) {
            size_t col = col0 + (size_t)i;
            int end = i + (int)(RF_FP8_BLOCK - col % RF_FP8_BLOCK);
            float scale = scales[col / RF_FP8_BLOCK];
            for (end = end < count ? end : count; i < end; i++)
                out[(size_t)i * step] = s->lut[q[i]] * scale;
        }
        return;
    }
    }
}

/* Rows [m0, m0 + mc) x columns [k0, k0 + kc) of A (M x K rows) into MR-row slivers, k-major;
 * rows past m_end are zeros. */
static void pack_a(float *dst, const operand *A, int m0, int mc, int m_end, int k0, int kc)
{
    for (int s = 0; s < mc; s += MR, dst += (size_t)MR * kc)
        for (int r = 0; r < MR; r++) {
            int m = m0 + s + r;
            if (m < m_end)
                load_run(dst + r, MR, A, (size_t)m, (size_t)k0, kc);
            else
                for (int k = 0; k < kc; k++)
                    dst[(size_t)k * MR + r] = 0.0f;
        }
}

/* Rows [k0, k0 + kc) x columns [n0, n0 + nc) of B into NR-column slivers, k-major; columns past
 * n_end are zeros. B is K x N rows, or N x K rows when k_major (the FP8 contract's layout). */
static void pack_b(float *dst, const operand *B, int k_major, int k0, int kc, int n0, int nc,
                   int n_end)
{
    for (int s = 0; s < nc; s += NR, dst += (size_t)NR * kc) {
        int width = n_end - (n0 + s) < NR ? n_end - (n0 + s) : NR;
        if (!k_major) {
            for (int k = 0; k < kc; k++) {
                float *row = dst + (size_t)k * NR;
                load_run(row, 1, B, (size_t)(k0 + k), (size_t)(n0 + s), width);
                for (int j = width; j < NR; j++)
                    row[j] = 0.0f;
            }
            continue;
        }
        for (int j = 0; j < NR; j++) {
            if (j < width)
                load_run(dst + j, NR, B, (size_t)(n0 + s + j), (size_t)k0, kc);
            else
                for (int k = 0; k < kc; k++)
                    dst[(size_t)k * NR + j] = 0.0f;
        }
    }
}

/* The bf16 pair layout of vdpbf16ps: a 32-bit word holds k and k + 1 (low half k) of one row
 * of A or one column of B, raw bf16 bits; a sliver has (kc + 1) / 2 words per row or column, an
 * odd kc's last word padded with a zero. */
static int pair_words(int kc)
{
    return (kc + 1) / 2;
}

/* The pair word of k and k + 1 of a K-contiguous e4m3 row (bf16 bits, unscaled); k + 1 past
 * the end (odd kc) reads as zero. */
static uint32_t e4m3_pair(const operand *s, const uint8_t *row, int k, int kc)
{
    return s->lut16[row[k]] | (k + 1 < kc ? (uint32_t)s->lut16[row[k + 1]] << 16 : 0u);
}

/* pack_a's slivers as pairs (A K-contiguous rows of bf16, or of e4m3 as bf16, unscaled). */
static void pack_a_pairs(uint32_t *dst, const operand *A, int m0, int mc, int m_end, int k0, int kc)
{
    int kp = pair_words(kc);
    for (int s = 0; s < mc; s += MR, dst += (size_t)MR * kp)
        for (int r = 0; r < MR; r++) {
            int m = m0 + s + r, whole = m < m_end ? kc / 2 : 0;
            if (A->type == T_E4M3) {
                const uint8_t *q = (const uint8_t *)A->p + (size_t)m * A->ld + (size_t)k0;
                for (int p = 0; p < kp; p++)
                    dst[(size_t)p * MR + r] = m < m_end ? e4m3_pair(A, q, 2 * p, kc) : 0u;
                continue;
            }
            const uint16_t *row =
                m < m_end ? (const uint16_t *)A->p + (size_t)m * A->ld + (size_t)k0 : NULL;
            for (int p = 0; p < whole; p++) /* a pair is one little-endian word (x86-64) */
                memcpy(&dst[(size_t)p * MR + r], row + 2 * p, sizeof(uint32_t));
            for (int p = whole; p < kp; p++) /* an odd kc's last k, or a row past m_end */
                dst[(size_t)p * MR + r] = row ? row[2 * p] : 0u;
        }
}

/* pack_b's slivers as pairs (B K x N rows of bf16, or the FP8 contract's N x K rows of e4m3 as
 * bf16, unscaled). */
static void pack_b_pairs(uint32_t *dst, const operand *B, int k0, int kc, int n0, int nc, int n_end)
{
    int kp = pair_words(kc);
    for (int s = 0; s < nc; s += NR, dst += (size_t)NR * kp) {
        int width = n_end - (n0 + s) < NR ? n_end - (n0 + s) : NR;
        if (B->type == T_E4M3) {
            for (int j = 0; j < NR; j++) {
                const uint8_t *q =
                    j < width ? (const uint8_t *)B->p + (size_t)(n0 + s + j) * B->ld + k0 : NULL;
                for (int p = 0; p < kp; p++)
                    dst[(size_t)p * NR + j] = q ? e4m3_pair(B, q, 2 * p, kc) : 0u;
            }
            continue;
        }
        for (int p = 0; p < kp; p++) {
            const uint16_t *lo = (const uint16_t *)B->p + (size_t)(k0 + 2 * p) * B->ld + n0 + s;
            const uint16_t *hi = 2 * p + 1 < kc ? lo + B->ld : NULL;
            uint32_t *out = dst + (size_t)p * NR;
            for (int j = 0; j < width; j++)
                out[j] = lo[j] | (hi ? (uint32_t)hi[j] << 16 : 0u);
            for (int j = width; j < NR; j++)
                out[j] = 0;
        }
    }
}

#ifdef RF_BF16_DOT
/* tile_kernel over bf16 pairs: kp words of an A sliver (MR per word step) and a B sliver (NR
 * per step, two vectors of 16 pairs), each step two k. */
__attribute__((target("avx512bf16"))) static inline __attribute__((always_inline)) void
pair_tile_kernel(const int rows, int kp, const uint32_t *restrict a, const uint32_t *restrict b,
                 float *restrict w, size_t ldw, int accumulate, const float *scale)
{
    __m512 acc0[MR], acc1[MR];
    UNROLL_ROWS
    for (int r = 0; r < rows; r++)
        acc0[r] = acc1[r] = _mm512_setzero_ps();
    for (int p = 0; p < kp; p++, a += MR, b += NR) {
        __m512bh b0 = (__m512bh)_mm512_loadu_si512(b), b1 = (__m512bh)_mm512_loadu_si512(b + 16);
        UNROLL_ROWS
        for (int r = 0; r < rows; r++) {
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[r]);
            acc0[r] = _mm512_dpbf16_ps(acc0[r], ar, b0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], ar, b1);
        }
    }
    UNROLL_ROWS
    for (int r = 0; r < rows; r++, w += ldw) {
        if (scale) { /* an FP8 block: its raw sum times the row's scales */
            acc0[r] = _mm512_mul_ps(acc0[r], _mm512_set1_ps(scale[r]));
            acc1[r] = _mm512_mul_ps(acc1[r], _mm512_set1_ps(scale[r]));
        }
        if (accumulate) {
            acc0[r] = _mm512_add_ps(acc0[r], _mm512_loadu_ps(w));
            acc1[r] = _mm512_add_ps(acc1[r], _mm512_loadu_ps(w + 16));
        }
        _mm512_storeu_ps(w, acc0[r]);
        _mm512_storeu_ps(w + 16, acc1[r]);
    }
}

/* The pair kernel for 1..MR rows; scale (NULL for bf16) multiplies row r's sums by scale[r]. */
__attribute__((target("avx512bf16"))) static void
pair_rows_kernel(int rows, int kp, const uint32_t *a, const uint32_t *b, float *w, size_t ldw,
                 int accumulate, const float *scale)
{
#define PAIR_CASE(r)                                                                               \
    case r:                                                                                        \
        pair_tile_kernel(r, kp, a, b, w, ldw, accumulate, scale);                                  \
        return;
    switch (rows) {
        EACH_ROW_COUNT(PAIR_CASE)
    }
#undef PAIR_CASE
}

/* The skinny path's bf16 B read where it lies, two rows (ldb apart) a step: AVX-512's 16-bit
 * unpacks interleave them into pairs, four columns of each 128-bit lane in turn, so the
 * accumulators hold the 32 columns in that order until the store puts them back. kc k's; an odd
 * kc's last step pairs its row with zeros. */
__attribute__((target("avx512bf16,avx512bw"))) static inline __attribute__((always_inline)) void
pair_direct_tile(const int rows, int kc, const uint32_t *restrict a, const uint16_t *restrict b,
                 size_t ldb, float *restrict w, size_t ldw, int accumulate)
{
    __m512 acc0[MR], acc1[MR];
    UNROLL_ROWS
    for (int r = 0; r < rows; r++)
        acc0[r] = acc1[r] = _mm512_setzero_ps();
    for (int k = 0; k < kc; k += 2, a += MR, b += 2 * ldb) {
        __m512i lo = _mm512_loadu_si512(b);
        __m512i hi = k + 1 < kc ? _mm512_loadu_si512(b + ldb) : _mm512_setzero_si512();
        __m512bh b0 = (__m512bh)_mm512_unpacklo_epi16(lo, hi);
        __m512bh b1 = (__m512bh)_mm512_unpackhi_epi16(lo, hi);
        UNROLL_ROWS
        for (int r = 0; r < rows; r++) {
            __m512bh ar = (__m512bh)_mm512_set1_epi32((int)a[r]);
            acc0[r] = _mm512_dpbf16_ps(acc0[r], ar, b0);
            acc1[r] = _mm512_dpbf16_ps(acc1[r], ar, b1);
        }
    }
    const __m512i first = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    const __m512i second =
        _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    UNROLL_ROWS
    for (int r = 0; r < rows; r++, w += ldw) {
        __m512 c0 = _mm512_permutex2var_ps(acc0[r], first, acc1[r]);
        __m512 c1 = _mm512_permutex2var_ps(acc0[r], second, acc1[r]);
        if (accumulate) {
            c0 = _mm512_add_ps(c0, _mm512_loadu_ps(w));
            c1 = _mm512_add_ps(c1, _mm512_loadu_ps(w + 16));
        }
        _mm512_storeu_ps(w, c0);
        _mm512_storeu_ps(w + 16, c1);
    }
}

__attribute__((target("avx512bf16,avx512bw"))) static void
pair_direct_rows(int rows, int kc, const uint32_t *a, const uint16_t *b, size_t ldb, float *w,
                 size_t ldw, int accumulate)
{
#define DIRECT_CASE(r)                                                                             \
    case r:                                                                                        \
        pair_direct_tile(r, kc, a, b, ldb, w, ldw, accumulate);                                    \
        return;
    switch (rows) {
        EACH_ROW_COUNT(DIRECT_CASE)
    }
#undef DIRECT_CASE
}
#endif

/* Whether this call's bf16 operands go through the pair kernel: built for it, and the CPU has
 * AVX512-BF16. */
static int bf16_dot_usable(void)
{
#ifdef RF_BF16_DOT
    return __builtin_cpu_supports("avx512bf16") != 0;
#else
    return 0;
#endif
}

/* C's element type and what the epilogue applies: C = alpha * AB + beta * C (C unread when
 * beta is 0, as BLAS). */
typedef struct result {
    void *p;
    size_t ld;
    elem_type type; /* T_F32, T_BF16 or T_F16 */
    float alpha, beta;
} result;

typedef struct gemm_job {
    operand A, B;
    int b_k_major;
    result C;
    int K;
    int m0, m1, n0, n1; /* this job's rectangle of C */
    int skinny;         /* few rows: run_skinny */
    int pairs;          /* bf16 A and B packed as pairs for the AVX512-BF16 kernel */
    float *w, *bp, *ap; /* its fp32 C workspace and packed panels (job_floats of them) */
} gemm_job;

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

/* A job's panels are NC columns wide at most, padded to whole NR-column slivers. */
static size_t panel_cols(const gemm_job *j)
{
    return round_up((size_t)(j->n1 - j->n0 < NC ? j->n1 - j->n0 : NC), NR);
}

/* Its fp32 C workspace (rows padded to whole MR-row slivers), then its packed B panel and
 * packed A block, in floats, each rounded to 16 floats so each starts 64-byte aligned. */
static size_t workspace_floats(const gemm_job *j)
{
    return round_up(round_up((size_t)(j->m1 - j->m0), MR) * panel_cols(j), 16);
}

static size_t bpanel_floats(const gemm_job *j)
{
    return round_up(j->skinny ? (size_t)SKINNY_KB_KMAJOR * NR : KC * panel_cols(j), 16);
}

/* The packed block of A: MC x KC, or all of A's rows and K on the skinny path. */
static size_t apanel_floats(const gemm_job *j)
{
    size_t rows = round_up((size_t)(j->m1 - j->m0), MR);
    return round_up(j->skinny ? rows * (size_t)j->K : (size_t)KC * MC, 16);
}

static size_t job_floats(const gemm_job *j)
{
    return workspace_floats(j) + bpanel_floats(j) + apanel_floats(j);
}

/* One row of C from the fp32 workspace: C = alpha * w + beta * C (C unread when beta is 0),
 * the type dispatched once per row so each loop is a plain vectorisable one. */
static void epilogue_row(const result *c, float *w, size_t base, int cols)
{
    float alpha = c->alpha, beta = c->beta;
    if (c->type == T_F32) {
        float *out = (float *)c->p + base;
        for (int j = 0; j < cols; j++)
            out[j] = beta != 0.0f ? alpha * w[j] + beta * out[j] : alpha * w[j];
        return;
    }
    uint16_t *out = (uint16_t *)c->p + base;
    int bf16 = c->type == T_BF16;
    if (beta != 0.0f) {
        for (int j = 0; j < cols; j++)
            w[j] =
                alpha * w[j] + beta * (bf16 ? kbpkg_bf16_to_f32(out[j]) : kbpkg_f16_to_f32(out[j]));
    } else {
        for (int j = 0; j < cols; j++)
            w[j] = alpha * w[j];
    }
    if (bf16)
        for (int j = 0; j < cols; j++)
            out[j] = kbpkg_f32_to_bf16(w[j]);
    else
        for (int j = 0; j < cols; j++)
            out[j] = kbpkg_f32_to_f16(w[j]);
}

static void epilogue(const result *c, float *w, size_t ldw, int m0, int rows, int n0, int cols)
{
    for (int i = 0; i < rows; i++)
        epilogue_row(c, w + (size_t)i * ldw, (size_t)(m0 + i) * c->ld + (size_t)n0, cols);
}

/* A job's packed A block and B panel hold fp32 values, or bf16 pair words when j->pairs; a
 * sliver row of kc k's is sliver_words of them. */
static int sliver_words(const gemm_job *j, int kc)
{
    return j->pairs ? pair_words(kc) : kc;
}

/* Where k0 starts in a sliver row: k0 is even wherever a pair layout is cut (KC, SKINNY_KB). */
static size_t k_offset(const gemm_job *j, int k0)
{
    return j->pairs ? (size_t)k0 / 2 : (size_t)k0;
}

static void pack_a_for(const gemm_job *j, float *dst, int m0, int mc, int k0, int kc)
{
    if (j->pairs)
        pack_a_pairs((uint32_t *)dst, &j->A, m0, mc, j->m1, k0, kc);
    else
        pack_a(dst, &j->A, m0, mc, j->m1, k0, kc);
}

static void pack_b_for(const gemm_job *j, float *dst, int k0, int kc, int n0, int nc, int n_end)
{
    if (j->pairs)
        pack_b_pairs((uint32_t *)dst, &j->B, k0, kc, n0, nc, n_end);
    else
        pack_b(dst, &j->B, j->b_k_major, k0, kc, n0, nc, n_end);
}

#ifdef RF_BF16_DOT
/* FP8 through the pair kernel, as the GPU kernels promote: each 128-deep scale block of the
 * tile summed raw (e4m3 products are exact in fp32), times scale_a of its row and scale_b of
 * its 128 columns (a 32-column sliver lies in one), added to w. m, n, k0: where the tile is. */
static void fp8_pair_blocks(const gemm_job *j, int m, int n, int k0, int rows, int kc,
                            const uint32_t *a, const uint32_t *b, float *w, size_t ldw,
                            int accumulate)
{
    int kblocks = j->A.kblocks;
    for (int k = 0; k < kc; k += RF_FP8_BLOCK) {
        int kb = (k0 + k) / RF_FP8_BLOCK;
        float scale[MR], sb = j->B.scale[(size_t)(n / RF_FP8_BLOCK) * kblocks + kb];
        for (int r = 0; r < rows; r++)
            scale[r] = j->A.scale[(size_t)(m + r) * kblocks + kb] * sb;
        pair_rows_kernel(rows, RF_FP8_BLOCK / 2, a + (size_t)(k / 2) * MR, b + (size_t)(k / 2) * NR,
                         w, ldw, accumulate || k > 0, scale);
    }
}
#endif

/* The tile at rows m.., columns n.., k0.. of C: rows x NR of w (or += when accumulate). */
static void tile_for(const gemm_job *j, int m, int n, int k0, int rows, int kc, const float *a,
                     const float *b, size_t b_step, float *w, size_t ldw, int accumulate)
{
#ifdef RF_BF16_DOT
    if (j->pairs && j->A.type == T_E4M3) {
        fp8_pair_blocks(j, m, n, k0, rows, kc, (const uint32_t *)a, (const uint32_t *)b, w, ldw,
                        accumulate);
        return;
    }
    if (j->pairs) {
        pair_rows_kernel(rows, pair_words(kc), (const uint32_t *)a, (const uint32_t *)b, w, ldw,
                         accumulate, NULL);
        return;
    }
#else
    (void)j, (void)m, (void)n, (void)k0; /* never pairs: bf16_dot_usable() is 0 */
#endif
    rows_kernel(rows, kc, a, b, b_step, w, ldw, accumulate);
}

/* One rectangle of C on this thread: for each NC-column panel, all of K into an fp32 workspace
 * (so 16-bit C is rounded once), then the epilogue. */
static void run_job(gemm_job *j)
{
    int rows = j->m1 - j->m0;
    size_t ldw = panel_cols(j);
    for (int n0 = j->n0; n0 < j->n1; n0 += NC) {
        int nc = j->n1 - n0 < NC ? j->n1 - n0 : NC;
        if (j->K == 0)
            memset(j->w, 0, sizeof(float) * workspace_floats(j));
        for (int k0 = 0; k0 < j->K; k0 += KC) {
            int kc = j->K - k0 < KC ? j->K - k0 : KC;
            size_t kw = (size_t)sliver_words(j, kc);
            pack_b_for(j, j->bp, k0, kc, n0, nc, n0 + nc);
            for (int i0 = 0; i0 < rows; i0 += MC) {
                int mc = rows - i0 < MC ? rows - i0 : MC;
                pack_a_for(j, j->ap, j->m0 + i0, mc, k0, kc);
                for (int jr = 0; jr < nc; jr += NR)
                    for (int ir = 0; ir < mc; ir += MR)
                        tile_for(j, j->m0 + i0 + ir, n0 + jr, k0, mc - ir < MR ? mc - ir : MR, kc,
                                 j->ap + (size_t)ir * kw, j->bp + (size_t)jr * kw, NR,
                                 j->w + (size_t)(i0 + ir) * ldw + (size_t)jr, ldw, k0 > 0);
            }
        }
        epilogue(&j->C, j->w, ldw, j->m0, rows, n0, nc);
    }
}

/* One kb x NR tile of B at (k0, n), packed and used at once by every row sliver; a whole tile
 * of an fp32 K x N B is read where it lies (its rows are the tile's rows), with no copy. */
static void skinny_tile(const gemm_job *j, int k0, int kb, int n, int n_end, float *w, size_t ldw)
{
    int kc = j->K - k0 < kb ? j->K - k0 : kb, rows = j->m1 - j->m0;
    size_t row_words = (size_t)sliver_words(j, j->K);
    const float *b = j->bp;
    size_t b_step = NR;
#ifdef RF_BF16_DOT
    if (j->pairs && j->B.type == T_BF16 && n_end - n >= NR) { /* B in place, no packing */
        const uint16_t *rows16 = (const uint16_t *)j->B.p + (size_t)k0 * j->B.ld + (size_t)n;
        for (int s = 0; s < rows; s += MR)
            pair_direct_rows(rows - s < MR ? rows - s : MR, kc,
                             (const uint32_t *)(j->ap + (size_t)s * row_words) +
                                 k_offset(j, k0) * MR,
                             rows16, j->B.ld, w + (size_t)s * ldw, ldw, k0 > 0);
        return;
    }
#endif
    if (j->B.type == T_F32 && !j->b_k_major && n_end - n >= NR) {
        b = (const float *)j->B.p + (size_t)k0 * j->B.ld + (size_t)n;
        b_step = j->B.ld;
    } else {
        pack_b_for(j, j->bp, k0, kc, n, NR, n_end);
    }
    for (int s = 0; s < rows; s += MR)
        tile_for(j, j->m0 + s, n, k0, rows - s < MR ? rows - s : MR, kc,
                 j->ap + (size_t)s * row_words + k_offset(j, k0) * MR, b, b_step,
                 w + (size_t)s * ldw, ldw, k0 > 0);
}

/* Few rows (decode-sized M), where reading B is the bound: all of A packed once, then B read
 * a small tile at a time and used while it is in L1, so the stream of B overlaps the arithmetic
 * instead of alternating with it (the packed path packs a whole KC x NC panel, then computes).
 * B's rows are read along their length: K x N B a k-block at a time across the columns, the
 * FP8 contract's N x K B a column sliver at a time down K. */
static void run_skinny(gemm_job *j)
{
    int rows = j->m1 - j->m0;
    size_t ldw = panel_cols(j);
    size_t row_words = (size_t)sliver_words(j, j->K);
    for (int s = 0; s < rows; s += MR)
        for (int k0 = 0; k0 < j->K; k0 += KC)
            pack_a_for(j, j->ap + (size_t)s * row_words + k_offset(j, k0) * MR, j->m0 + s,
                       rows - s < MR ? rows - s : MR, k0, j->K - k0 < KC ? j->K - k0 : KC);
    for (int n0 = j->n0; n0 < j->n1; n0 += NC) {
        int nc = j->n1 - n0 < NC ? j->n1 - n0 : NC;
        if (j->K == 0)
            memset(j->w, 0, sizeof(float) * workspace_floats(j));
        if (!j->b_k_major) {
            for (int k0 = 0; k0 < j->K; k0 += SKINNY_KB)
                for (int jr = 0; jr < nc; jr += NR)
                    skinny_tile(j, k0, SKINNY_KB, n0 + jr, n0 + nc, j->w + jr, ldw);
        } else {
            for (int jr = 0; jr < nc; jr += NR)
                for (int k0 = 0; k0 < j->K; k0 += SKINNY_KB_KMAJOR)
                    skinny_tile(j, k0, SKINNY_KB_KMAJOR, n0 + jr, n0 + nc, j->w + jr, ldw);
        }
        epilogue(&j->C, j->w, ldw, j->m0, rows, n0, nc);
    }
}

static void run_job_part(void *jobs, int index, int count)
{
    gemm_job *j = (gemm_job *)jobs + index;
    (void)count;
    if (j->skinny)
        run_skinny(j);
    else
        run_job(j);
}

/* Splits C into tm x tn rectangles (tm * tn = threads), the split that gives each thread the
 * least padded work plus packing (each thread packs its own panels of A and B). */
static void choose_grid(int M, int N, int threads, int *tm, int *tn)
{
    double best = -1;
    for (int a = 1; a <= threads; a++) {
        if (threads % a != 0)
            continue;
        int b = threads / a;
        double rows = (double)round_up((size_t)(M + a - 1) / (size_t)a, MR),
               cols = (double)round_up((size_t)(N + b - 1) / (size_t)b, NR);
        double cost = rows * cols + 16.0 * (rows + cols);
        if (best < 0 || cost < best) /* ties keep the smaller a: splitting N packs less A */
            best = cost, *tm = a, *tn = b;
    }
}

/* Where part i of count starts in [0, n): i * n / count, rounded down to a multiple of align
 * (the end, n, is never rounded). */
static int split_at(int n, int i, int count, int align)
{
    int at = (int)((long)n * i / count);
    return i == count ? n : at / align * align;
}

static int run_gemm(const operand *A, const operand *B, int b_k_major, const result *C, int M,
                    int N, int K)
{
    int threads = kb_cpu_threads(2.0 * M * N * (K > 0 ? K : 1), MIN_FLOPS_PER_THREAD);
    int pairs = ((A->type == T_BF16 && B->type == T_BF16 && !b_k_major) ||
                 (A->type == T_E4M3 && B->type == T_E4M3 && b_k_major)) &&
                bf16_dot_usable();
    int tm = 1, tn = 1;
    choose_grid(M, N, threads, &tm, &tn);
    /* FP8 pairs scale a 32-column sliver by one scale_b: the columns' split keeps the blocks */
    int col_align = pairs && A->type == T_E4M3 ? RF_FP8_BLOCK : 1;
    gemm_job jobs[64];
    int count = 0;
    size_t floats = 0;
    for (int a = 0; a < tm; a++)
        for (int b = 0; b < tn; b++) {
            int m0 = split_at(M, a, tm, 1), m1 = split_at(M, a + 1, tm, 1);
            int n0 = split_at(N, b, tn, col_align), n1 = split_at(N, b + 1, tn, col_align);
            if (m0 < m1 && n0 < n1) {
                jobs[count] = (gemm_job){.A = *A,
                                         .B = *B,
                                         .b_k_major = b_k_major,
                                         .C = *C,
                                         .K = K,
                                         .m0 = m0,
                                         .m1 = m1,
                                         .n0 = n0,
                                         .n1 = n1,
                                         .skinny = m1 - m0 <= SKINNY_ROWS,
                                         .pairs = pairs};
                floats += job_floats(&jobs[count++]);
            }
        }
    /* one allocation for every job's buffers, made and freed on the calling thread */
    float *mem = aligned_alloc(64, sizeof(float) * floats), *next = mem;
    if (mem == NULL)
        return KBPKG_KERNEL_EUNSUPPORTED;
    for (int t = 0; t < count; t++) {
        jobs[t].w = next;
        jobs[t].bp = jobs[t].w + workspace_floats(&jobs[t]);
        jobs[t].ap = jobs[t].bp + bpanel_floats(&jobs[t]);
        next += job_floats(&jobs[t]);
    }
    kb_cpu_parallel(run_job_part, jobs, count);
    free(mem);
    return KBPKG_KERNEL_OK;
}

static int gemm_typed(elem_type type, int M, int N, int K, float alpha, const void *A, int lda,
                      const void *B, int ldb, float beta, void *C, int ldc)
{
    int rc = rf_gemm_check_args(M, N, K, A, lda, B, ldb, C, ldc);
    if (rc != 0 || M == 0 || N == 0)
        return rc;
    operand a = {A, (size_t)lda, type, NULL, 0, 1, NULL, NULL};
    operand b = {B, (size_t)ldb, type, NULL, 0, 1, NULL, NULL};
    result c = {C, (size_t)ldc, type, alpha, beta};
    return run_gemm(&a, &b, 0, &c, M, N, K);
}

int rf_gemm_bf16_cpu(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                     const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc)
{
    return gemm_typed(T_BF16, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int rf_gemm_f16_cpu(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                    const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc)
{
    return gemm_typed(T_F16, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

int rf_gemm_f32_cpu(int M, int N, int K, float alpha, const float *A, int lda, const float *B,
                    int ldb, float beta, float *C, int ldc)
{
    return gemm_typed(T_F32, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

/* The FP8 contract. With AVX512-BF16: e4m3 as exact bf16 pairs, each 128-deep block summed raw
 * and scaled by scale_a * scale_b as it is added (fp8_pair_blocks, as the GPU kernels promote);
 * otherwise an fp32 GEMM of the dequantised operands (values times their block scales, packed as
 * any operand). */
int rf_gemm_fp8_blockscale_cpu(int M, int N, int K, const kbpkg_e4m3 *A, const float *scale_a,
                               const kbpkg_e4m3 *B, const float *scale_b, kbpkg_bf16 *C)
{
    int rc = rf_gemm_fp8_check_args(M, N, K, A, scale_a, B, scale_b, C);
    if (rc != 0 || M == 0 || N == 0)
        return rc;
    float lut[256];
    uint16_t lut16[256];
    for (int v = 0; v < 256; v++) {
        lut[v] = rf_e4m3_to_f32((uint8_t)v);
        lut16[v] = kbpkg_f32_to_bf16(lut[v]);
    }
    int kblocks = K / RF_FP8_BLOCK;
    operand a = {A, (size_t)K, T_E4M3, scale_a, kblocks, 1, lut, lut16};
    operand b = {B, (size_t)K, T_E4M3, scale_b, kblocks, RF_FP8_BLOCK, lut, lut16};
    result c = {C, (size_t)N, T_BF16, 1.0f, 0.0f};
    return run_gemm(&a, &b, 1, &c, M, N, K);
}

/* The CPU build's exports; the GPU checks compile this file with KBPKG_REFERENCE_ONLY. */
#ifndef KBPKG_REFERENCE_ONLY
KBPKG_DEFINE_KERNEL_INFO(KBPKG_BACKEND_CPU)

KBPKG_EXPORT int rf_gemm_bf16(int M, int N, int K, float alpha, const kbpkg_bf16 *A, int lda,
                              const kbpkg_bf16 *B, int ldb, float beta, kbpkg_bf16 *C, int ldc,
                              void *stream)
{
    (void)stream;
    return rf_gemm_bf16_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

KBPKG_EXPORT int rf_gemm_f16(int M, int N, int K, float alpha, const kbpkg_f16 *A, int lda,
                             const kbpkg_f16 *B, int ldb, float beta, kbpkg_f16 *C, int ldc,
                             void *stream)
{
    (void)stream;
    return rf_gemm_f16_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

KBPKG_EXPORT int rf_gemm_f32(int M, int N, int K, float alpha, const float *A, int lda,
                             const float *B, int ldb, float beta, float *C, int ldc, void *stream)
{
    (void)stream;
    return rf_gemm_f32_cpu(M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

KBPKG_EXPORT int rf_gemm_fp8_blockscale(int M, int N, int K, const kbpkg_e4m3 *A,
                                        const float *scale_a, const kbpkg_e4m3 *B,
                                        const float *scale_b, kbpkg_bf16 *C, void *stream)
{
    (void)stream;
    return rf_gemm_fp8_blockscale_cpu(M, N, K, A, scale_a, B, scale_b, C);
}
#endif
