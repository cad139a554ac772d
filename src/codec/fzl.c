/*
 * fzl: quantise to multiples of 2eb, 1-D Lorenzo deltas, blocks of B deltas
 * with a bit-length byte, sign bits and fixed-length bit planes; independent
 * segments come from the framework. Format and guarantee: see fzl.h.
 *
 * This file holds the portable coder (any B in {8,16,32,64}); fzl_avx2.c
 * holds AVX2 kernels for B = 16 that produce the same bytes.
 */
#include <math.h>

#include "fzl.h"

void zc_fzl_qparams(double eb, fzl_q *q)
{
    q->eb = eb;
    q->two = 2.0 * eb;
    q->inv = 1.0 / q->two;
    q->twof = (float)q->two;
    q->invf = (float)q->inv;
    float ebf = (float)eb;
    if ((double)ebf > eb)
        ebf = nextafterf(ebf, 0.0f);
    q->ebf = ebf;
}

/* Quantises one value; returns 1 and the code if it reconstructs within eb. */
static inline int quant1(const fzl_q *p, zmpi_dtype dtype, const void *x, size_t i, int32_t *q)
{
    if (dtype == ZMPI_FLOAT) {
        float v = ((const float *)x)[i];
        float r = nearbyintf(v * p->invf);
        if (!(fabsf(r) < (float)FZL_QLIM))
            return 0;
        int32_t qi = (int32_t)r;
        float rec = (float)qi * p->twof;
        if (!(fabsf(v - rec) < p->ebf))
            return 0;
        *q = qi;
        return 1;
    }
    double v = ((const double *)x)[i];
    double r = nearbyint(v * p->inv);
    if (!(fabs(r) < FZL_QLIM))
        return 0;
    int32_t qi = (int32_t)r;
    double rec = (double)qi * p->two;
    if (!(fabs(v - rec) < p->eb))
        return 0;
    *q = qi;
    return 1;
}

static inline void put_mask(uint8_t *o, uint64_t m, unsigned B)
{
    for (unsigned j = 0; j < B / 8; j++)
        o[j] = (uint8_t)(m >> (8 * j));
}

int zc_fzl_block_scalar(fzl_enc *e, const fzl_q *qp, zmpi_dtype dtype, const void *x, size_t base,
                        unsigned m, unsigned B)
{
    uint32_t mag[64];
    uint64_t neg = 0, pos = 0;
    uint32_t all = 0;
    for (unsigned i = 0; i < B; i++) {
        int32_t d = 0;
        if (i < m) {
            int32_t qi;
            if (!quant1(qp, dtype, x, base + i, &qi)) {
                int rc = fzl_add_outlier(e, (uint32_t)(base + i),
                                         (const uint8_t *)x + (base + i) * e->es);
                if (rc)
                    return rc;
                qi = e->prev;
            }
            d = qi - e->prev; /* |q| < 2^30: no overflow */
            e->prev = qi;
        }
        mag[i] = d < 0 ? (uint32_t)(-(int64_t)d) : (uint32_t)d;
        neg |= (uint64_t)(d < 0) << i;
        pos |= (uint64_t)(d > 0) << i;
        all |= mag[i];
    }
    unsigned L = all ? 32u - (unsigned)__builtin_clz(all) : 0u;
    unsigned S = neg == 0 ? 1u : (pos == 0 ? 2u : 0u);
    size_t need = 1 + (L ? (S == 0 ? B / 8 : 0) + L * B / 8 : 0);
    if ((size_t)(e->orec - e->out) < need)
        return ZMPI_ERR_DST_TOO_SMALL;
    if (L == 0) {
        *e->out++ = 0;
        return 0;
    }
    *e->out++ = (uint8_t)(L | S << 6);
    if (S == 0) {
        put_mask(e->out, neg, B);
        e->out += B / 8;
    }
    for (unsigned k = 0; k < L; k++) {
        uint64_t plane = 0;
        for (unsigned i = 0; i < B; i++)
            plane |= (uint64_t)((mag[i] >> k) & 1u) << i;
        put_mask(e->out, plane, B);
        e->out += B / 8;
    }
    return 0;
}

static inline uint64_t get_mask(const uint8_t *p, unsigned B)
{
    uint64_t m = 0;
    for (unsigned j = 0; j < B / 8; j++)
        m |= (uint64_t)p[j] << (8 * j);
    return m;
}

/* Validates a block head; returns the block's byte size or ZMPI_ERR_CORRUPT. */
static inline ptrdiff_t block_size(uint8_t h, unsigned B)
{
    unsigned L = h & 63u, S = h >> 6;
    if (L > 31 || S == 3 || (L == 0 && h != 0))
        return ZMPI_ERR_CORRUPT;
    return (ptrdiff_t)(1 + (L ? (S == 0 ? B / 8 : 0) + L * B / 8 : 0));
}

ptrdiff_t zc_fzl_unblock_scalar(const uint8_t *p, size_t avail, const fzl_q *qp, zmpi_dtype dtype,
                                void *y, size_t base, unsigned m, unsigned B, uint32_t *prev)
{
    if (avail < 1)
        return ZMPI_ERR_CORRUPT;
    ptrdiff_t bs = block_size(p[0], B);
    if (bs < 0 || (size_t)bs > avail)
        return ZMPI_ERR_CORRUPT;
    unsigned L = p[0] & 63u, S = p[0] >> 6;
    const uint8_t *q = p + 1;
    uint64_t neg = 0;
    if (L && S == 0) {
        neg = get_mask(q, B);
        q += B / 8;
    }
    uint32_t mag[64] = {0};
    for (unsigned k = 0; k < L; k++) {
        uint64_t plane = get_mask(q, B);
        q += B / 8;
        for (unsigned i = 0; i < B; i++)
            mag[i] |= (uint32_t)((plane >> i) & 1u) << k;
    }
    uint32_t c = *prev;
    for (unsigned i = 0; i < m; i++) {
        int isneg = S == 2 || (S == 0 && ((neg >> i) & 1u));
        c += isneg ? (0u - mag[i]) : mag[i]; /* wraps on corrupt input: defined */
        int32_t qi = (int32_t)c;
        if (dtype == ZMPI_FLOAT)
            ((float *)y)[base + i] = (float)qi * qp->twof;
        else
            ((double *)y)[base + i] = (double)qi * qp->two;
    }
    *prev = c;
    return bs;
}

ptrdiff_t zc_fzl_encode_impl(const zc_seg *s, const void *src, uint8_t *dst, size_t cap, int simd)
{
    unsigned B = s->param;
    fzl_q qp;
    zc_fzl_qparams(s->eb, &qp);
    if (cap < 8)
        return ZMPI_ERR_DST_TOO_SMALL;
    fzl_enc e = {.out = dst + 8, .orec = dst + cap, .end = dst + cap,
                 .es = zmpi_dtype_size(s->dtype), .nout = 0, .prev = 0};
    int32_t q0 = 0;
    if (!quant1(&qp, s->dtype, src, 0, &q0))
        q0 = 0;
    e.prev = q0;
    size_t done = 0;
    (void)simd;
#ifdef ZMPI_HAVE_AVX2
    if (simd && B == 16 && zc_have_avx2()) {
        size_t nfull = s->n / 16;
        int rc = zc_fzl_encode16_avx2(&e, &qp, s->dtype, src, nfull);
        if (rc)
            return rc;
        done = nfull * 16;
    }
#endif
    for (; done < s->n; done += B) {
        unsigned m = s->n - done < B ? (unsigned)(s->n - done) : B;
        int rc = zc_fzl_block_scalar(&e, &qp, s->dtype, src, done, m, B);
        if (rc)
            return rc;
    }
    size_t olen = (size_t)(e.end - e.orec);
    memmove(e.out, e.orec, olen);
    zc_put_u32(dst, e.nout);
    zc_put_u32(dst + 4, (uint32_t)q0);
    return (ptrdiff_t)((size_t)(e.out - dst) + olen);
}

int zc_fzl_decode_impl(const zc_seg *s, const uint8_t *src, size_t size, void *dst, int simd)
{
    unsigned B = s->param;
    fzl_q qp;
    zc_fzl_qparams(s->eb, &qp);
    if (size < 8)
        return ZMPI_ERR_CORRUPT;
    uint32_t nout = zc_get_u32(src);
    uint32_t prev = zc_get_u32(src + 4);
    size_t es = zmpi_dtype_size(s->dtype), pos = 8, done = 0;
    (void)simd;
    if (nout > s->n)
        return ZMPI_ERR_CORRUPT;
#ifdef ZMPI_HAVE_AVX2
    if (simd && B == 16 && zc_have_avx2()) {
        size_t nfull = s->n / 16;
        ptrdiff_t r = zc_fzl_decode16_avx2(src + pos, size - pos, &qp, s->dtype, dst, nfull, &prev);
        if (r < 0)
            return (int)r;
        pos += (size_t)r;
        done = nfull * 16;
    }
#endif
    for (; done < s->n; done += B) {
        unsigned m = s->n - done < B ? (unsigned)(s->n - done) : B;
        ptrdiff_t r = zc_fzl_unblock_scalar(src + pos, size - pos, &qp, s->dtype, dst, done, m, B, &prev);
        if (r < 0)
            return (int)r;
        pos += (size_t)r;
    }
    size_t rs = 4 + es;
    if (size - pos != (size_t)nout * rs)
        return ZMPI_ERR_CORRUPT;
    uint64_t last = UINT64_MAX;
    for (uint32_t k = 0; k < nout; k++, pos += rs) {
        uint32_t at = zc_get_u32(src + pos);
        if (at >= s->n || (uint64_t)at >= last)
            return ZMPI_ERR_CORRUPT;
        last = at;
        memcpy((uint8_t *)dst + (size_t)at * es, src + pos + 4, es);
    }
    return ZMPI_OK;
}

static ptrdiff_t fzl_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap)
{
    return zc_fzl_encode_impl(s, src, dst, cap, 1);
}

static int fzl_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst)
{
    return zc_fzl_decode_impl(s, src, size, dst, 1);
}

static long long fzl_param(zmpi_dtype dtype, long long block)
{
    (void)dtype;
    if (block == 0)
        return 16;
    if (block != 8 && block != 16 && block != 32 && block != 64)
        return ZMPI_ERR_ARG;
    return block;
}

const zc_codec_ops zc_fzl_ops = {
    .id = ZMPI_CODEC_FZL, .name = "fzl",
    .description = "error-bounded, fZ-light class: quantise, 1-D Lorenzo, fixed-length bit planes",
    .kind = ZMPI_KIND_BOUNDED, .inter = 0,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = fzl_encode, .decode = fzl_decode, .param_check = fzl_param,
};
