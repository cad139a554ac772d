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
#include <stdlib.h>

#include "fzr.h"
#include "huff.h"

#define FZR_HEAD 24u

static inline uint32_t unzz(uint32_t z)
{
    return (z >> 1) ^ (uint32_t)-(int32_t)(z & 1u);
}

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

static void code_chunk(int avx2, const fzl_q *qp, zmpi_dtype dtype, const void *src, size_t c0, size_t c1,
                       size_t n, unsigned kmax, size_t R, size_t P, fzr_scratch *w, size_t *nout, size_t *nesc)
{
    (void)avx2;
#ifdef ZMPI_HAVE_AVX2
    if (avx2) {
        zc_fzr_code_chunk_avx2(qp, dtype, src, c0, c1, n, kmax, R, P, w, nout, nesc);
        return;
    }
#endif
    fzr_code_chunk(qp, dtype, src, c0, c1, n, kmax, R, P, w, nout, nesc);
}

static ptrdiff_t code_symbols(const zc_seg *s, const uint8_t *sym, size_t n, uint8_t *dst, size_t cap)
{
    if (s->param == 0)
        return zc_huff_encode(sym, n, dst, cap);
    return zc_zstd_compress(sym, n, dst, cap, (int)s->param);
}

ptrdiff_t zc_fzr_encode_impl(const zc_seg *s, const void *src, uint8_t *dst, size_t cap, int simd)
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
#ifdef ZMPI_HAVE_AVX2
    int avx2 = simd && zc_have_avx2();
#else
    int avx2 = 0;
    (void)simd;
#endif
    for (size_t c0 = 0; c0 < n; c0 += FZR_CHUNK)
        code_chunk(avx2, &qp, s->dtype, src, c0, n - c0 < FZR_CHUNK ? n : c0 + FZR_CHUNK, n, kmax, R, P, &w,
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

static ptrdiff_t fzr_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap)
{
    return zc_fzr_encode_impl(s, src, dst, cap, 1);
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
