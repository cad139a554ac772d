/*
 * fzr's encoder kernels (format and guarantee: fzr.c), shared by the
 * portable build in fzr.c and the AVX2 build in fzr_avx2.c; both files are
 * compiled with -fno-trapping-math, under which the quantiser's compares
 * vectorise (results do not change: zmpi never reads the floating-point
 * exception flags). Everything here is inlined into fzr_code_chunk, so each
 * build has its own copy.
 */
#ifndef ZMPI_CODEC_FZR_H
#define ZMPI_CODEC_FZR_H

#include <math.h>

#include "fzl.h"

#define FZR_B 64u
#define FZR_CHUNK (64u * FZR_B) /* values the encoder works on at once */
#define ZC_FZR_INLINE static inline __attribute__((always_inline))

static inline uint32_t zz(uint32_t r)
{
    return (r << 1) ^ (uint32_t)-(int32_t)(r >> 31);
}

/* Codes of n values: q[j] (wrapping u32 of the int32 code), and the number
 * of values that are not within eb of their code's value (NaN, Inf, codes
 * beyond 2^30); ok[j] = 0 marks them. Branch-free so that it vectorises
 * (under -fno-trapping-math). Rounding adds and removes 2^23 (2^52 for
 * double): round-half-even below it; beyond it the code may be off by one,
 * which the check then rejects (only for bounds below 2^-23 of the values). */
ZC_FZR_INLINE size_t quantise(const fzl_q *p, zmpi_dtype dtype, const void *x, size_t n, uint32_t *restrict q,
                       uint8_t *restrict ok)
{
    size_t bad = 0;
    if (dtype == ZMPI_FLOAT) {
        const float *restrict v = x;
        const float big = 8388608.0f, lim = (float)FZL_QLIM, invf = p->invf, twof = p->twof,
                    ebf = p->ebf;
        for (size_t j = 0; j < n; j++) {
            float t = v[j] * invf;
            float m = t < 0.0f ? -big : big;
            float r = (t + m) - m, rc;
            uint32_t inr = fabsf(r) < lim, rb;
            memcpy(&rb, &r, 4);
            rb &= 0u - inr; /* out of range (NaN, Inf, |r| >= 2^30): 0 */
            memcpy(&rc, &rb, 4);
            int32_t qi = (int32_t)rc;
            uint32_t good = inr & (uint32_t)(fabsf(v[j] - (float)qi * twof) < ebf);
            q[j] = (uint32_t)qi;
            ok[j] = (uint8_t)good;
            bad += good ^ 1u;
        }
    } else {
        const double *restrict v = x;
        const double big = 4503599627370496.0, lim = FZL_QLIM, inv = p->inv, two = p->two, eb = p->eb;
        for (size_t j = 0; j < n; j++) {
            double t = v[j] * inv;
            double m = t < 0.0 ? -big : big;
            double r = (t + m) - m, rc;
            uint64_t inr = fabs(r) < lim, rb;
            memcpy(&rb, &r, 8);
            rb &= 0u - inr;
            memcpy(&rc, &rb, 8);
            int32_t qi = (int32_t)rc;
            uint32_t good = (uint32_t)inr & (uint32_t)(fabs(v[j] - (double)qi * two) < eb);
            q[j] = (uint32_t)qi;
            ok[j] = (uint8_t)good;
            bad += good ^ 1u;
        }
    }
    return bad;
}

/* Prediction of q[j] by predictor k, with the fall-backs near the segment start. */
static inline uint32_t predict(const uint32_t *q, size_t j, unsigned k, size_t R, size_t P)
{
    if (k == 3 && j >= P + R + 1)
        return q[j - 1] + q[j - R] + q[j - P] - q[j - R - 1] - q[j - P - 1] - q[j - P - R] +
               q[j - P - R - 1];
    if (k >= 2 && j >= R + 1)
        return q[j - 1] + q[j - R] - q[j - R - 1];
    if (k == 1 && j >= 2)
        return 2u * q[j - 1] - q[j - 2];
    return j ? q[j - 1] : 0u;
}

/* The smallest index from which predictor k needs no fall-back. */
static inline size_t full_from(unsigned k, size_t R, size_t P)
{
    return k == 3 ? P + R + 1 : k == 2 ? R + 1 : k == 1 ? 2 : 1;
}

/* The cost of a residual: about 8 log2(min(z, 4095) + 1), from the exponent
 * and top mantissa bits of a float (signed compares: SSE2 has no unsigned
 * 32-bit min; vectorises). */
static inline uint32_t clamp_cost(uint32_t z)
{
    int32_t t = (int32_t)z;
    t = t < 0 ? 4095 : t;
    t = t > 4095 ? 4095 : t;
    float f = (float)(t + 1);
    uint32_t u;
    memcpy(&u, &f, 4);
    return (u >> 20) - (127u << 3); /* eighths of a bit */
}

/* Zigzagged residuals z[0..e-b) of block [b, e) under predictor k, and
 * their cost: the sum of clamp_cost (eighths of a bit; no overflow over 64 values). */
ZC_FZR_INLINE uint32_t block_z(const uint32_t *restrict q, size_t b, size_t e, unsigned k, size_t R, size_t P,
                        uint32_t *restrict z)
{
    const uint32_t *x = q + b;
    uint32_t c = 0;
    if (b < full_from(k, R, P) || e - b != FZR_B) {
        for (size_t j = b; j < e; j++) {
            z[j - b] = zz(q[j] - predict(q, j, k, R, P));
            c += clamp_cost(z[j - b]);
        }
    } else if (k == 0) { /* x1 = x - 1 etc.: every neighbour of the block lies in q */
        const uint32_t *x1 = x - 1;
        for (size_t i = 0; i < FZR_B; i++) {
            z[i] = zz(x[i] - x1[i]);
            c += clamp_cost(z[i]);
        }
    } else if (k == 1) {
        const uint32_t *x1 = x - 1, *x2 = x - 2;
        for (size_t i = 0; i < FZR_B; i++) {
            z[i] = zz(x[i] - 2u * x1[i] + x2[i]);
            c += clamp_cost(z[i]);
        }
    } else if (k == 2) {
        const uint32_t *x1 = x - 1, *u = x - R, *u1 = x - R - 1;
        for (size_t i = 0; i < FZR_B; i++) {
            z[i] = zz(x[i] - x1[i] - u[i] + u1[i]);
            c += clamp_cost(z[i]);
        }
    } else {
        const uint32_t *x1 = x - 1, *u = x - R, *u1 = x - R - 1, *v = x - P, *v1 = x - P - 1;
        const uint32_t *w = x - P - R, *w1 = x - P - R - 1;
        for (size_t i = 0; i < FZR_B; i++) {
            z[i] = zz(x[i] - x1[i] - u[i] + u1[i] - v[i] + v1[i] + w[i] - w1[i]);
            c += clamp_cost(z[i]);
        }
    }
    return c;
}

typedef struct fzr_scratch {
    uint32_t *q;     /* n codes */
    uint32_t *esc;   /* escapes */
    uint32_t *opos;  /* outlier positions */
    uint8_t *sym;    /* n symbols */
    uint8_t *ok;     /* n flags */
    uint8_t *side;   /* nblk predictor bytes, then 4 * nesc escape bytes */
    void *mem;
} fzr_scratch;

/* Symbol bytes of m residuals; escapes appended at esc + *nesc. */
ZC_FZR_INLINE void block_symbols(const uint32_t *restrict z, size_t m, uint8_t *restrict sym,
                          uint32_t *restrict esc, size_t *nesc)
{
    uint32_t top = 0;
    for (size_t i = 0; i < m; i++) {
        sym[i] = (uint8_t)(z[i] < 255u ? z[i] : 255u);
        top |= z[i] >= 255u ? 1u : 0u;
    }
    if (top)
        for (size_t i = 0; i < m; i++)
            if (z[i] >= 255u)
                esc[(*nesc)++] = z[i];
}

/* The encoder's work on values [c0, c1) (a chunk kept in the L1 cache):
 * 1. codes, an outlier taking the previous code; 2. per block the cheapest
 * predictor, symbols and escapes. Compiled twice: portable (SSE2) in fzr.c
 * and for AVX2 in fzr_avx2.c (1.3x faster: twice the lanes in the
 * quantiser and the residual loops). */
ZC_FZR_INLINE void fzr_code_chunk(const fzl_q *qp, zmpi_dtype dtype, const void *src, size_t c0, size_t c1, size_t n,
                       unsigned kmax, size_t R, size_t P, fzr_scratch *w, size_t *nout, size_t *nesc)
{
    size_t es = zmpi_dtype_size(dtype);
    if (quantise(qp, dtype, (const uint8_t *)src + c0 * es, c1 - c0, w->q + c0, w->ok + c0)) {
        /* the outliers, in order (an outlier's code may be the previous one's) */
        const uint8_t *f = w->ok + c0, *end = w->ok + c1;
        for (; (f = memchr(f, 0, (size_t)(end - f))) != NULL; f++) {
            size_t j = (size_t)(f - w->ok);
            w->opos[(*nout)++] = (uint32_t)j;
            w->q[j] = j ? w->q[j - 1] : 0u;
        }
    }
    for (size_t b = c0; b < c1; b += FZR_B) {
        size_t e = b + FZR_B < n ? b + FZR_B : n;
        uint32_t z[2][FZR_B], *bz = z[0];
        uint32_t bc = block_z(w->q, b, e, 0, R, P, z[0]);
        unsigned best = 0;
        /* at about a bit a value already, the other predictors cannot gain much */
        for (unsigned k = 1; k <= kmax && bc > 8 * FZR_B; k++) {
            uint32_t *t = bz == z[0] ? z[1] : z[0];
            uint32_t c = block_z(w->q, b, e, k, R, P, t);
            if (c < bc)
                bc = c, best = k, bz = t;
        }
        w->side[b / FZR_B] = (uint8_t)best;
        block_symbols(bz, e - b, w->sym + b, w->esc, nesc);
    }
}

/* The encoder; simd = 0 forces the portable kernels (tests compare both). */
ptrdiff_t zc_fzr_encode_impl(const zc_seg *s, const void *src, uint8_t *dst, size_t cap, int simd);

#ifdef ZMPI_HAVE_AVX2
/* fzr_code_chunk built with AVX2 (fzr_avx2.c; call only if zc_have_avx2()). */
void zc_fzr_code_chunk_avx2(const fzl_q *qp, zmpi_dtype dtype, const void *src, size_t c0, size_t c1, size_t n,
                            unsigned kmax, size_t R, size_t P, fzr_scratch *w, size_t *nout, size_t *nesc);
#endif

#endif
