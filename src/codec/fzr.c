/*
 * fzr: the ratio stage. fzl's quantiser (codes q = rint(x / 2eb), checked on
 * the value the decoder will produce, see fzl.h), a predictor chosen per
 * block of 64 values, and the residuals entropy-coded as one byte per value:
 * canonical Huffman codes (huff.h; the codec parameter 0, the default) or a
 * zstd frame at the parameter's level (ZMPI_P_LEVEL set).
 *
 * Predictors (all in wrapping 32-bit arithmetic, so any code difference is
 * exact; p(j) is the prediction of q[j] inside the segment):
 *   0  order-1 Lorenzo   q[j-1]
 *   1  order-2 Lorenzo   2 q[j-1] - q[j-2]
 *   2  2-D Lorenzo       q[j-1] + q[j-R] - q[j-R-1]        (R = row length hint)
 *   3  3-D Lorenzo       the 7-term 3-D stencil over R and P (P = plane size hint)
 * A predictor that would read before the segment's start falls back to the
 * next lower one at that element (3 -> 2 -> 0, 1 -> 0; before element 0 the
 * prediction is 0). The encoder picks, per block, the predictor whose
 * zigzagged residuals z need the fewest bits, estimated as the sum of
 * log2(min(z, 4095) + 1) (2 and 3 only with their hints; a block already at
 * about a bit a value under order 1 keeps it).
 *
 * Residual r = q[j] - p(j) (mod 2^32), zigzag z = (r << 1) ^ (r >> 31).
 * Symbol byte: z if z < 255, else 255 and z goes to the escape list.
 *
 * Segment payload (after the framework's mode byte):
 *   u32 R, u32 P       the hints used (0 = none)
 *   u32 nesc           escapes
 *   u32 nout           outliers
 *   u32 slen           bytes of the symbol frame
 *   u32 xlen           bytes of the side frame
 *   symbol frame       the n symbol bytes, Huffman-coded (huff.h) or a zstd frame
 *   side frame         zstd frame of ceil(n/64) predictor bytes, then the
 *                      nesc escapes as four byte planes (lowest first)
 *   outliers           nout records {u32 position, raw element}, positions
 *                      strictly increasing; an outlier's code is the previous
 *                      code (q[j-1], 0 at j = 0) and its value is stored exactly
 *
 * Guarantee: as fzl, |x - x'| <= eb for every element that is not an
 * outlier, outliers (NaN, Inf, codes beyond 2^30) are bit-exact.
 */
#include <math.h>
#include <stdlib.h>

#include "fzl.h"
#include "huff.h"

#define FZR_B 64u
#define FZR_HEAD 24u
#define FZR_CHUNK (64u * FZR_B) /* values the encoder works on at once */

static inline uint32_t zz(uint32_t r)
{
    return (r << 1) ^ (uint32_t)-(int32_t)(r >> 31);
}

static inline uint32_t unzz(uint32_t z)
{
    return (z >> 1) ^ (uint32_t)-(int32_t)(z & 1u);
}

/* Codes of n values: q[j] (wrapping u32 of the int32 code), and the number
 * of values that are not within eb of their code's value (NaN, Inf, codes
 * beyond 2^30); ok[j] = 0 marks them. Branch-free so that it vectorises
 * (this file is built with -fno-trapping-math). Rounding adds and removes
 * 2^23 (2^52 for double): round-half-even below it; beyond it the code may
 * be off by one, which the check then rejects (only for bounds below 2^-23
 * of the values). */
static size_t quantise(const fzl_q *p, zmpi_dtype dtype, const void *x, size_t n, uint32_t *restrict q,
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
static size_t full_from(unsigned k, size_t R, size_t P)
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
static uint32_t block_z(const uint32_t *restrict q, size_t b, size_t e, unsigned k, size_t R, size_t P,
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

/* The decoder's working memory: codes, escape positions, symbols, side
 * data (about 5 bytes a value, against the encoder's 18). */
static int decode_alloc(fzr_scratch *s, size_t n, size_t nblk, size_t nesc)
{
    s->mem = malloc(n * 5 + nesc * 8 + nblk);
    if (!s->mem)
        return ZMPI_ERR_NOMEM;
    uint8_t *m = s->mem;
    s->q = (uint32_t *)m;
    s->esc = (uint32_t *)(m + n * 4);
    s->sym = m + n * 4 + nesc * 4;
    s->side = s->sym + n;
    s->opos = NULL;
    s->ok = NULL;
    return ZMPI_OK;
}

static int scratch_alloc(fzr_scratch *s, size_t n)
{
    size_t nblk = (n + FZR_B - 1) / FZR_B;
    s->mem = malloc(n * 12 + n + n + nblk + 4 * n);
    if (!s->mem)
        return ZMPI_ERR_NOMEM;
    uint8_t *m = s->mem;
    s->q = (uint32_t *)m;
    s->esc = (uint32_t *)(m + n * 4);
    s->opos = (uint32_t *)(m + n * 8);
    s->sym = m + n * 12;
    s->ok = m + n * 13;
    s->side = m + n * 14;
    return ZMPI_OK;
}

/* Symbol bytes of m residuals; escapes appended at esc + *nesc. */
static void block_symbols(const uint32_t *restrict z, size_t m, uint8_t *restrict sym,
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
 * predictor, symbols and escapes. (An AVX2 clone of this function measured
 * no faster on the development machine: the portable SSE2 loops stay.) */
static void code_chunk(const fzl_q *qp, zmpi_dtype dtype, const void *src, size_t c0, size_t c1, size_t n,
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

static ptrdiff_t code_symbols(const zc_seg *s, const uint8_t *sym, size_t n, uint8_t *dst, size_t cap)
{
    if (s->param == 0)
        return zc_huff_encode(sym, n, dst, cap);
    return zc_zstd_compress(sym, n, dst, cap, (int)s->param);
}

static ptrdiff_t fzr_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap)
{
    size_t n = s->n, es = zmpi_dtype_size(s->dtype);
    size_t R = s->dim_r, P = s->dim_p;
    if (n > UINT32_MAX)
        return ZMPI_ERR_TOO_LARGE;
    if (R >= n)
        R = 0; /* a hint beyond the segment cannot help */
    if (P >= n || R == 0)
        P = 0;
    if (cap < FZR_HEAD)
        return ZMPI_ERR_DST_TOO_SMALL;
    fzl_q qp;
    zc_fzl_qparams(s->eb, &qp);
    fzr_scratch w;
    int rc = scratch_alloc(&w, n);
    if (rc)
        return rc;

    unsigned kmax = P ? 3u : R ? 2u : 1u;
    size_t nblk = (n + FZR_B - 1) / FZR_B, nesc = 0, nout = 0;
    for (size_t c0 = 0; c0 < n; c0 += FZR_CHUNK)
        code_chunk(&qp, s->dtype, src, c0, n - c0 < FZR_CHUNK ? n : c0 + FZR_CHUNK, n, kmax, R, P, &w,
                   &nout, &nesc);
    uint8_t *planes = w.side + nblk;
    for (size_t i = 0; i < nesc; i++)
        for (unsigned k = 0; k < 4; k++)
            planes[k * nesc + i] = (uint8_t)(w.esc[i] >> (8 * k));

    /* 3. the two codings and the outliers */
    size_t pos = FZR_HEAD, rs = 4 + es;
    ptrdiff_t slen = code_symbols(s, w.sym, n, dst + pos, cap - pos), xlen = 0;
    if (slen >= 0) {
        pos += (size_t)slen;
        xlen = zc_zstd_compress(w.side, nblk + 4 * nesc, dst + pos, cap - pos, 1);
    }
    if (slen < 0 || xlen < 0) {
        free(w.mem);
        return slen < 0 ? slen : xlen;
    }
    pos += (size_t)xlen;
    if (cap - pos < nout * rs) {
        free(w.mem);
        return ZMPI_ERR_DST_TOO_SMALL;
    }
    for (size_t i = 0; i < nout; i++, pos += rs) {
        zc_put_u32(dst + pos, w.opos[i]);
        memcpy(dst + pos + 4, (const uint8_t *)src + (size_t)w.opos[i] * es, es);
    }
    zc_put_u32(dst, (uint32_t)R);
    zc_put_u32(dst + 4, (uint32_t)P);
    zc_put_u32(dst + 8, (uint32_t)nesc);
    zc_put_u32(dst + 12, (uint32_t)nout);
    zc_put_u32(dst + 16, (uint32_t)slen);
    zc_put_u32(dst + 20, (uint32_t)xlen);
    free(w.mem);
    return (ptrdiff_t)pos;
}

/* Codes from residuals, block by block: the recurrences run on the
 * residuals r[] (already unzigzagged) in place. */
static void reconstruct(uint32_t *q, size_t b, size_t e, unsigned k, size_t R, size_t P)
{
    if (b < full_from(k, R, P) || (k >= 2 && R + 1 < FZR_B) || (k == 3 && P < FZR_B + R + 1)) {
        /* neighbours may lie inside the block, or fall-backs apply: one by one */
        for (size_t j = b; j < e; j++)
            q[j] += predict(q, j, k, R, P);
        return;
    }
    switch (k) {
    case 0:
        for (size_t j = b; j < e; j++)
            q[j] += q[j - 1];
        break;
    case 1:
        for (size_t j = b; j < e; j++)
            q[j] += 2u * q[j - 1] - q[j - 2];
        break;
    case 2: /* the row above lies before the block: add it first (vectorises) */
        for (size_t j = b; j < e; j++)
            q[j] += q[j - R] - q[j - R - 1];
        for (size_t j = b; j < e; j++)
            q[j] += q[j - 1];
        break;
    default:
        for (size_t j = b; j < e; j++)
            q[j] += q[j - R] + q[j - P] - q[j - R - 1] - q[j - P - 1] - q[j - P - R] + q[j - P - R - 1];
        for (size_t j = b; j < e; j++)
            q[j] += q[j - 1];
        break;
    }
}

static int fzr_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst)
{
    size_t n = s->n, es = zmpi_dtype_size(s->dtype);
    if (size < FZR_HEAD)
        return ZMPI_ERR_CORRUPT;
    size_t R = zc_get_u32(src), P = zc_get_u32(src + 4), nesc = zc_get_u32(src + 8);
    size_t nout = zc_get_u32(src + 12), slen = zc_get_u32(src + 16), xlen = zc_get_u32(src + 20);
    size_t nblk = (n + FZR_B - 1) / FZR_B, rs = 4 + es;
    if (R >= n || P >= n || (P && !R) || nesc > n || nout > n || slen > size - FZR_HEAD ||
        xlen > size - FZR_HEAD - slen || size - FZR_HEAD - slen - xlen != nout * rs)
        return ZMPI_ERR_CORRUPT;
    unsigned kmax = P ? 3u : R ? 2u : 1u;
    fzr_scratch w;
    int rc = decode_alloc(&w, n, nblk, nesc);
    if (rc)
        return rc;
    rc = ZMPI_ERR_CORRUPT;
    const uint8_t *p = src + FZR_HEAD;
    int drc = s->param == 0 ? zc_huff_decode(p, slen, w.sym, n) : zc_zstd_decompress(p, slen, w.sym, n);
    if (drc != ZMPI_OK || zc_zstd_decompress(p + slen, xlen, w.side, nblk + 4 * nesc) != ZMPI_OK)
        goto out;
    /* escape positions first (esc[] is free while decoding), then block by
     * block: residuals, escapes, prediction, values, all in the L1 cache */
    const uint8_t *planes = w.side + nblk;
    uint32_t *q = w.q, *epos = w.esc;
    size_t e = 0;
    for (const uint8_t *f = w.sym; (f = memchr(f, 255, n - (size_t)(f - w.sym))) != NULL; f++) {
        if (e == nesc)
            goto out;
        epos[e++] = (uint32_t)(f - w.sym);
    }
    if (e != nesc)
        goto out;
    fzl_q qp;
    zc_fzl_qparams(s->eb, &qp);
    e = 0;
    for (size_t bi = 0; bi < nblk; bi++) {
        size_t b = bi * FZR_B, end = b + FZR_B < n ? b + FZR_B : n;
        if (w.side[bi] > kmax)
            goto out;
        for (size_t j = b; j < end; j++)
            q[j] = unzz(w.sym[j]);
        for (; e < nesc && epos[e] < end; e++)
            q[epos[e]] = unzz((uint32_t)planes[e] | (uint32_t)planes[nesc + e] << 8 |
                              (uint32_t)planes[2 * nesc + e] << 16 | (uint32_t)planes[3 * nesc + e] << 24);
        reconstruct(q, b, end, w.side[bi], R, P);
        if (s->dtype == ZMPI_FLOAT) {
            float *y = dst;
            for (size_t j = b; j < end; j++)
                y[j] = (float)(int32_t)q[j] * qp.twof;
        } else {
            double *y = dst;
            for (size_t j = b; j < end; j++)
                y[j] = (double)(int32_t)q[j] * qp.two;
        }
    }
    const uint8_t *o = p + slen + xlen;
    uint64_t last = 0;
    for (size_t i = 0; i < nout; i++, o += rs) {
        uint32_t at = zc_get_u32(o);
        if (at >= n || (i && at <= last))
            goto out;
        last = at;
        memcpy((uint8_t *)dst + (size_t)at * es, o + 4, es);
    }
    rc = ZMPI_OK;
out:
    free(w.mem);
    return rc;
}

static long long fzr_param(zmpi_dtype dtype, long long level)
{
    if (level == 0)
        return 0; /* Huffman */
    return zc_zstd_ops.param_check(dtype, level);
}

const zc_codec_ops zc_fzr_ops = {
    .id = ZMPI_CODEC_FZR, .name = "fzr",
    .description = "error-bounded, ratio stage: fzl's quantiser, a predictor per 64 values "
                   "(1-D order 1/2; 2-D/3-D Lorenzo with shape hints), Huffman-coded residual bytes",
    .kind = ZMPI_KIND_BOUNDED, .inter = 0,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = fzr_encode, .decode = fzr_decode, .param_check = fzr_param,
};
