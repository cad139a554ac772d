/*
 * linpred.c - error-bounded linear-predictive codecs (four linear predictors over reconstructed values):
 *   linpred-byte: one symbol byte per value (predictor id or "unpredictable"),
 *                 unpredictable values appended bit-exactly;
 *   linpred-bit:  bit-wise: a 3-bit predictor code, or the value with its
 *                 mantissa cut to the fewest bits that keep it within eb.
 *
 * Predictors work on the previously reconstructed values d[] (what the
 * decoder outputs), in the arithmetic of the element type (float data in
 * float, double data in double):
 *   p0 = d1
 *   p1 = d1 + D1                     (= 2d1 - d2)
 *   p2 = d1 + ((D1 + D1) - D2)       (= 3d1 - 3d2 + d3)
 *   p3 = d1 + ((t + (t + t)) + D3)   (= 4d1 - 6d2 + 4d3 - d4), t = D1 - D2
 * with d1 = d[i-1], ..., D1 = d1 - d2, D2 = d2 - d3, D3 = d3 - d4, and
 * missing history (before the segment start) taken as 0. A prediction is
 * thus already the value the decoder writes, and that is the value compared
 * with x.
 *
 * The guarantee: every value the encoder emits lossily is reconstructed in
 * the encoder with the same operations as in the decoder and accepted only if
 * |x - x'| <= eb holds exactly (lp_within: a rounded difference plus an exact
 * TwoSum tie-break), so the bound holds in exact arithmetic, hence also when
 * checked in double or long double. A value no predictor reaches falls back
 * to a representation whose error is bounded by construction, with no
 * arithmetic: its raw bits (linpred-byte), or its own mantissa cut
 * (linpred-bit x-field, below; also re-checked, and should that check ever
 * fail the encoder returns ZMPI_ERR_DST_TOO_SMALL so that the framework
 * stores the segment raw). NaN (any payload) and +-Inf are always stored
 * bit-exactly. The build must use IEEE-754 float/double arithmetic without
 * excess precision or fast-math (checked below), with gradual underflow (no
 * FTZ/DAZ at run time); the arithmetic is written with additions and
 * subtractions only, so FMA contraction cannot alter it.
 *
 * Segment payloads (all multi-byte fields little-endian):
 *
 * linpred-byte:  n symbol bytes, then the raw elements (4 or 8 bytes each) of
 *   the unpredictable values in order. Symbol k in 0..3: x' = predictor k;
 *   symbol 4: x' = next raw element. Other symbol values are invalid. The
 *   payload size is exactly n + (number of 4-symbols) * element size.
 *
 * linpred-bit:  byte mode (0 = offset, 1 = signed); mode 0 only: the offset c
 *   (one element, finite: the segment minimum); then a bit stream written
 *   LSB-first (bit j of the stream is bit j%8 of byte j/8; a k-bit field
 *   stores its least significant bit first), zero-padded to a whole byte.
 *   Per element: 1 flag bit F.
 *     F = 0: 2-bit predictor id k; x' = predictor k.
 *     F = 1, mode 1: an x-field (below).
 *     F = 1, mode 0: EB-bit exponent field E of y = x - c (y >= 0, no sign);
 *            E < Emax: b(E) bits: the top b(E) bits of y's mantissa field;
 *                      y' = E, those bits, then 1 0 0 ... 0 (nothing when
 *                      b = W); x' = y' + c in the element type
 *                      (the rounding is checked by the encoder)
 *            E = Emax: escape, an x-field follows.
 *   x-field: sign (1 bit), E (EB bits); E < Emax: b(E) top mantissa bits,
 *            padded with 1 0 ... 0 as above; E = Emax: the full W-bit
 *            mantissa (NaN payloads and Inf bit-exact).
 *   Float: EB = 8, W = 23, Emax = 255; double: EB = 11, W = 52, Emax = 2047.
 *   b(E) = clamp(m + nb - 1, 0, W) with m = max(E, 1) - bias (the binade of
 *   the value, denormals as the lowest binade) and nb = 1 - e where
 *   eb = f * 2^e, 0.5 <= f < 1 (frexp), i.e. 2^-nb <= eb < 2^(-nb+1).
 *   Cutting to b bits and padding with the mid-point gives an error of at
 *   most 2^(m-b-1) <= 2^-nb <= eb (0 when b = W; 2^(m-1) <= 2^(-nb-1) when
 *   b is clamped to 0): one bit fewer than the published b = m + nb, which
 *   would keep the cut within eb/2. In mode 0 the rounding of x - c and
 *   y' + c is checked per value; a miss takes the escape.
 *
 * Encoder mode choice (linpred-bit): the offset mode (subtract the segment
 * minimum, no sign bits) is used unless an estimate of the cut-value bits
 * says the signed mode is cheaper (e.g. data centred on zero, or a bound
 * below the data's float resolution where y = x - c loses bits).
 */
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "linpred.c needs IEEE float/double arithmetic without excess precision (e.g. SSE2, not x87)"
#endif
#if defined(__FAST_MATH__)
#error "linpred.c must not be compiled with -ffast-math (the error-bound check needs exact IEEE rounding)"
#endif

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#if defined(__GNUC__)
#define LP_AI static inline __attribute__((always_inline))
#else
#define LP_AI static inline
#endif

enum { LP_SYM_RAW = 4, LP_MODE_OFFSET = 0, LP_MODE_SIGNED = 1 };

/* ---- element format (dbl: 0 = float, 1 = double; a compile-time constant
 * in every instantiation below) ---- */

#define LP_W(dbl) ((dbl) ? 52u : 23u)
#define LP_EB(dbl) ((dbl) ? 11u : 8u)
#define LP_EMAX(dbl) ((dbl) ? 2047u : 255u)
#define LP_BIAS(dbl) ((dbl) ? 1023 : 127)
#define LP_ESZ(dbl) ((dbl) ? 8u : 4u)

LP_AI uint64_t lp_load(const void *p, size_t i, int dbl)
{
    if (dbl) {
        uint64_t u;
        memcpy(&u, (const uint8_t *)p + 8 * i, 8);
        return u;
    }
    uint32_t v;
    memcpy(&v, (const uint8_t *)p + 4 * i, 4);
    return v;
}

LP_AI void lp_store(void *p, size_t i, uint64_t u, int dbl)
{
    if (dbl) {
        memcpy((uint8_t *)p + 8 * i, &u, 8);
    } else {
        uint32_t v = (uint32_t)u;
        memcpy((uint8_t *)p + 4 * i, &v, 4);
    }
}

LP_AI unsigned lp_expo(uint64_t u, int dbl) { return (unsigned)(u >> LP_W(dbl)) & LP_EMAX(dbl); }

LP_AI int lp_finite_bits(uint64_t u, int dbl) { return lp_expo(u, dbl) != LP_EMAX(dbl); }

LP_AI float lp_u2f(uint64_t u)
{
    uint32_t v = (uint32_t)u;
    float f;
    memcpy(&f, &v, 4);
    return f;
}
LP_AI uint64_t lp_f2u(float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    return v;
}
LP_AI double lp_u2d(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}
LP_AI uint64_t lp_d2u(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* 1 iff |x - r| <= eb holds exactly (eb > 0 finite). s = RN(x - r):
 * |s| < eb implies |x - r| <= eb and |s| > eb implies |x - r| > eb (rounding
 * is monotone and eb is representable); only |s| == eb needs the exact
 * residual, from Knuth's TwoSum. NaN and Inf fail. */
LP_AI int lp_within(double x, double r, double eb)
{
    double s = x - r;
    double a = fabs(s);
    if (a < eb) return 1;
    if (!(a == eb)) return 0;
    double nr = -r;
    double bv = s - x;
    double av = s - bv;
    double e = (x - av) + (nr - bv);
    if (!isfinite(e)) return 0;
    return s > 0 ? e <= 0 : e >= 0;
}

/* ---- predictors, in the element type ----
 * Float data are predicted in float arithmetic and double data in double
 * arithmetic, so a prediction is already the value the decoder writes: there
 * is no narrowing conversion anywhere (GCC 12 with -mavx was seen to drop a
 * (double)(float) rounding pair when SLP-vectorising; we avoid the pattern).
 * Additions only (no products), so FMA contraction cannot change a result:
 * t + t and t + (t + t) are the correctly rounded 2t and 3t. */
#define LP_DEFINE_TYPED(T, S)                                                                 \
    typedef struct lp_hist_##S {                                                              \
        T d1, d2, d3, d4;                                                                     \
    } lp_hist_##S;                                                                            \
    LP_AI void lp_push_##S(lp_hist_##S *h, T v) {                                            \
        h->d4 = h->d3;                                                                        \
        h->d3 = h->d2;                                                                        \
        h->d2 = h->d1;                                                                        \
        h->d1 = v;                                                                            \
    }                                                                                         \
    LP_AI T lp_p1_##S(const lp_hist_##S *h) { return h->d1 + (h->d1 - h->d2); }              \
    LP_AI T lp_p2_##S(const lp_hist_##S *h) {                                                \
        T D1 = h->d1 - h->d2, D2 = h->d2 - h->d3;                                             \
        return h->d1 + ((D1 + D1) - D2);                                                      \
    }                                                                                         \
    LP_AI T lp_p3_##S(const lp_hist_##S *h) {                                                \
        T D1 = h->d1 - h->d2, D2 = h->d2 - h->d3, D3 = h->d3 - h->d4;                         \
        T t = D1 - D2;                                                                        \
        return h->d1 + ((t + (t + t)) + D3);                                                  \
    }                                                                                         \
    LP_AI T lp_pred_##S(const lp_hist_##S *h, unsigned k) {                                  \
        switch (k) {                                                                          \
        case 0: return h->d1;                                                                 \
        case 1: return lp_p1_##S(h);                                                          \
        case 2: return lp_p2_##S(h);                                                          \
        default: return lp_p3_##S(h);                                                         \
        }                                                                                     \
    }                                                                                         \
    /* Best predictor for finite x: its id, the value in *out; -1 if none is                 \
     * within eb. Smallest error wins, ties go to the lower id. */                            \
    LP_AI int lp_choose_##S(const lp_hist_##S *h, T x, double eb, T *out) {                  \
        T r0 = h->d1, r1 = lp_p1_##S(h), r2 = lp_p2_##S(h), r3 = lp_p3_##S(h);                \
        double xd = (double)x;                                                                \
        int best = -1;                                                                        \
        double be = 0.0;                                                                      \
        T rb = 0;                                                                             \
        for (unsigned k = 0; k < 4; k++) {                                                    \
            T r = k == 0 ? r0 : k == 1 ? r1 : k == 2 ? r2 : r3;                               \
            double e = fabs(xd - (double)r);                                                  \
            if (e <= eb && lp_within(xd, (double)r, eb) && (best < 0 || e < be)) {           \
                best = (int)k;                                                                \
                be = e;                                                                       \
                rb = r;                                                                       \
            }                                                                                 \
        }                                                                                     \
        *out = rb;                                                                            \
        return best;                                                                          \
    }

LP_DEFINE_TYPED(float, f)
LP_DEFINE_TYPED(double, d)

/* The history of either type, fed and read through element bits. */
typedef struct lp_hist {
    lp_hist_f f;
    lp_hist_d d;
} lp_hist;

LP_AI void lp_push(lp_hist *h, uint64_t u, int dbl)
{
    if (dbl)
        lp_push_d(&h->d, lp_u2d(u));
    else
        lp_push_f(&h->f, lp_u2f(u));
}

/* Best predictor for x (raw bits u): id and the reconstructed bits, or -1. */
LP_AI int lp_choose(const lp_hist *h, uint64_t u, double eb, int dbl, uint64_t *out)
{
    if (!lp_finite_bits(u, dbl)) return -1;
    int k;
    if (dbl) {
        double r;
        k = lp_choose_d(&h->d, lp_u2d(u), eb, &r);
        *out = lp_d2u(r);
    } else {
        float r;
        k = lp_choose_f(&h->f, lp_u2f(u), eb, &r);
        *out = lp_f2u(r);
    }
    return k;
}

LP_AI uint64_t lp_pred(const lp_hist *h, unsigned k, int dbl)
{
    return dbl ? lp_d2u(lp_pred_d(&h->d, k)) : lp_f2u(lp_pred_f(&h->f, k));
}

/* ---- bit writer / reader (64-bit accumulator, LSB-first) ---- */

typedef struct lp_bw {
    uint8_t *p;
    size_t pos, cap;
    uint64_t acc;
    unsigned nb; /* bits held in acc, < 32 between calls */
    int full;    /* sticky: capacity exceeded */
} lp_bw;

/* Appends the k low bits of v (k <= 32, v < 2^k). */
LP_AI void lp_put(lp_bw *w, uint64_t v, unsigned k)
{
    w->acc |= v << w->nb;
    w->nb += k;
    if (w->nb >= 32) {
        if (w->cap - w->pos < 4)
            w->full = 1; /* the caller stops at the end of this element */
        else
            zc_put_u32(w->p + w->pos, (uint32_t)w->acc), w->pos += 4;
        w->acc >>= 32;
        w->nb -= 32;
    }
}

/* k <= 64 bits. */
LP_AI void lp_putn(lp_bw *w, uint64_t v, unsigned k)
{
    if (k > 32) {
        lp_put(w, v & 0xffffffffu, 32);
        lp_put(w, v >> 32, k - 32);
    } else {
        lp_put(w, v, k);
    }
}

/* Writes the remaining bits; returns 0, or -1 if the capacity was exceeded. */
static int lp_flush(lp_bw *w)
{
    if (w->full) return -1;
    unsigned bytes = (w->nb + 7) / 8;
    if (w->cap - w->pos < bytes) return -1;
    for (unsigned j = 0; j < bytes; j++) w->p[w->pos++] = (uint8_t)(w->acc >> (8 * j));
    w->acc = 0;
    w->nb = 0;
    return 0;
}

typedef struct lp_br {
    const uint8_t *p;
    size_t pos, size;
    uint64_t acc; /* only the low nb bits are meaningful, the rest are 0 */
    unsigned nb;  /* <= 63 */
} lp_br;

LP_AI void lp_refill(lp_br *r)
{
    if (r->size - r->pos >= 8) {
        uint64_t w = zc_get_u64(r->p + r->pos);
        unsigned take = (63 - r->nb) >> 3;
        r->acc |= w << r->nb;
        r->pos += take;
        r->nb += 8 * take;
        r->acc &= (UINT64_C(1) << r->nb) - 1;
    } else {
        while (r->nb < 56 && r->pos < r->size) {
            r->acc |= (uint64_t)r->p[r->pos++] << r->nb;
            r->nb += 8;
        }
    }
}

/* Reads k <= 32 bits into *v; returns 0, or -1 if the stream is exhausted. */
LP_AI int lp_get(lp_br *r, unsigned k, uint64_t *v)
{
    if (r->nb < k) {
        lp_refill(r);
        if (r->nb < k) return -1;
    }
    *v = r->acc & ((UINT64_C(1) << k) - 1);
    r->acc >>= k;
    r->nb -= k;
    return 0;
}

/* k <= 64 bits. */
LP_AI int lp_getn(lp_br *r, unsigned k, uint64_t *v)
{
    if (k > 32) {
        uint64_t lo, hi;
        if (lp_get(r, 32, &lo) || lp_get(r, k - 32, &hi)) return -1;
        *v = lo | (hi << 32);
        return 0;
    }
    return lp_get(r, k, v);
}

/* ---- mantissa cut ---- */

static int lp_bound_ok(double eb) { return isfinite(eb) && eb > 0.0; }

/* b(E) for every exponent field value below Emax. */
static void lp_btab(double eb, int dbl, uint8_t *btab)
{
    int e;
    (void)frexp(eb, &e); /* eb = f 2^e, 0.5 <= f < 1 */
    long nb = 1L - e;    /* 2^-nb <= eb < 2^(-nb+1) */
    long W = (long)LP_W(dbl);
    for (unsigned E = 0; E < LP_EMAX(dbl); E++) {
        long m = (long)(E ? E : 1u) - LP_BIAS(dbl);
        long b = m + nb - 1;
        btab[E] = (uint8_t)(b < 0 ? 0 : b > W ? W : b);
    }
}

/* Keeps the top b mantissa bits of u (sign and exponent as they are) and
 * pads the dropped ones with 1 0 ... 0: the mid-point of the cut interval. */
LP_AI uint64_t lp_cut_recon(uint64_t u, unsigned b, int dbl)
{
    unsigned drop = LP_W(dbl) - b;
    if (drop == 0) return u;
    uint64_t mask = (UINT64_C(1) << drop) - 1;
    return (u & ~mask) | (UINT64_C(1) << (drop - 1));
}

/* Offset mode: y = x - c in the element type, cut to b(E_y) bits (no sign),
 * x' = y' + c in the element type. Returns 1 and fills *E, *kept and *out
 * (bits of x') if x' is within eb of x, 0 if the value must be escaped.
 * u: bits of a finite x; cu: bits of c. */
LP_AI int lp_offset_try(uint64_t u, uint64_t cu, double eb, const uint8_t *btab, int dbl,
                        unsigned *E, uint64_t *kept, uint64_t *out)
{
    const unsigned W = LP_W(dbl);
    uint64_t yu, xr;
    double xd, xrd;
    if (dbl) {
        double x = lp_u2d(u), c = lp_u2d(cu), y = x - c;
        if (y == 0.0) y = 0.0; /* -0 -> +0 (x = -0, c = +0) */
        yu = lp_d2u(y);
        if (!lp_finite_bits(yu, 1) || (yu >> 63)) return 0; /* Inf; negative cannot happen */
        unsigned e = lp_expo(yu, 1);
        double x2 = lp_u2d(lp_cut_recon(yu, btab[e], 1)) + c;
        xr = lp_d2u(x2);
        xd = x;
        xrd = x2;
    } else {
        float x = lp_u2f(u), c = lp_u2f(cu), y = x - c;
        if (y == 0.0f) y = 0.0f;
        yu = lp_f2u(y);
        if (!lp_finite_bits(yu, 0) || (yu >> 31)) return 0;
        unsigned e = lp_expo(yu, 0);
        float x2 = lp_u2f(lp_cut_recon(yu, btab[e], 0)) + c;
        xr = lp_f2u(x2);
        xd = (double)x;
        xrd = (double)x2;
    }
    if (!lp_within(xd, xrd, eb)) return 0;
    unsigned e = lp_expo(yu, dbl), b = btab[e];
    *E = e;
    *kept = (yu & ((UINT64_C(1) << W) - 1)) >> (W - b);
    *out = xr;
    return 1;
}

/* Decoder side of the offset path: x' bits from E < Emax and the kept bits. */
LP_AI uint64_t lp_offset_recon(unsigned e, uint64_t kept, uint64_t cu, const uint8_t *btab,
                               int dbl)
{
    const unsigned W = LP_W(dbl), b = btab[e];
    uint64_t yu = lp_cut_recon(((uint64_t)e << W) | (kept << (W - b)), b, dbl);
    if (dbl) return lp_d2u(lp_u2d(yu) + lp_u2d(cu));
    return lp_f2u(lp_u2f(yu) + lp_u2f(cu));
}

/* ============================ linpred-byte ============================ */

LP_AI ptrdiff_t lp_byte_enc(const zc_seg *s, const void *src, uint8_t *dst, size_t cap, int dbl)
{
    const double eb = s->eb;
    const size_t n = s->n, esz = LP_ESZ(dbl);
    if (!lp_bound_ok(eb)) return ZMPI_ERR_BOUND;
    if (cap < n) return ZMPI_ERR_DST_TOO_SMALL;
    size_t rpos = n;
    lp_hist h;
    memset(&h, 0, sizeof h);
    for (size_t i = 0; i < n; i++) {
        uint64_t u = lp_load(src, i, dbl), out;
        int k = lp_choose(&h, u, eb, dbl, &out);
        if (k >= 0) {
            dst[i] = (uint8_t)k;
        } else {
            if (cap - rpos < esz) return ZMPI_ERR_DST_TOO_SMALL;
            dst[i] = LP_SYM_RAW;
            lp_store(dst + rpos, 0, u, dbl);
            rpos += esz;
            out = u;
        }
        lp_push(&h, out, dbl);
    }
    return (ptrdiff_t)rpos;
}

LP_AI int lp_byte_dec(const zc_seg *s, const uint8_t *src, size_t size, void *dst, int dbl)
{
    const size_t n = s->n, esz = LP_ESZ(dbl);
    if (size < n) return ZMPI_ERR_CORRUPT;
    size_t rpos = n;
    lp_hist h;
    memset(&h, 0, sizeof h);
    for (size_t i = 0; i < n; i++) {
        unsigned sym = src[i];
        uint64_t out;
        if (sym < LP_SYM_RAW) {
            out = lp_pred(&h, sym, dbl);
        } else if (sym == LP_SYM_RAW) {
            if (size - rpos < esz) return ZMPI_ERR_CORRUPT;
            out = lp_load(src + rpos, 0, dbl);
            rpos += esz;
        } else {
            return ZMPI_ERR_CORRUPT;
        }
        lp_store(dst, i, out, dbl);
        lp_push(&h, out, dbl);
    }
    return rpos == size ? ZMPI_OK : ZMPI_ERR_CORRUPT;
}

static ptrdiff_t lp_byte_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap)
{
    if (s->dtype == ZMPI_FLOAT) return lp_byte_enc(s, src, dst, cap, 0);
    if (s->dtype == ZMPI_DOUBLE) return lp_byte_enc(s, src, dst, cap, 1);
    return ZMPI_ERR_DTYPE;
}

static int lp_byte_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst)
{
    if (s->dtype == ZMPI_FLOAT) return lp_byte_dec(s, src, size, dst, 0);
    if (s->dtype == ZMPI_DOUBLE) return lp_byte_dec(s, src, size, dst, 1);
    return ZMPI_ERR_CORRUPT;
}

/* ============================ linpred-bit ============================= */

/* Bits of an x-field for raw bits u (mode estimate). */
LP_AI unsigned lp_xfield_bits(uint64_t u, const uint8_t *btab, int dbl)
{
    unsigned e = lp_expo(u, dbl);
    return 1u + LP_EB(dbl) + (e == LP_EMAX(dbl) ? LP_W(dbl) : btab[e]);
}

LP_AI double lp_val(uint64_t u, int dbl) { return dbl ? lp_u2d(u) : (double)lp_u2f(u); }

/* Writes an x-field for raw bits u; *out gets the reconstructed bits.
 * Returns 0, or -1 if the reconstruction misses the bound (impossible by
 * construction; the caller then gives up and the segment is stored raw). */
LP_AI int lp_put_xfield(lp_bw *w, uint64_t u, double eb, const uint8_t *btab, int dbl,
                        uint64_t *out)
{
    const unsigned W = LP_W(dbl), EBITS = LP_EB(dbl);
    unsigned e = lp_expo(u, dbl);
    uint64_t sign = u >> (W + EBITS);
    uint64_t mant = u & ((UINT64_C(1) << W) - 1);
    lp_put(w, sign | ((uint64_t)e << 1), 1 + EBITS);
    if (e == LP_EMAX(dbl)) { /* NaN / Inf: exact */
        lp_putn(w, mant, W);
        *out = u;
        return 0;
    }
    unsigned b = btab[e];
    lp_putn(w, mant >> (W - b), b);
    *out = lp_cut_recon(u, b, dbl);
    return lp_within(lp_val(u, dbl), lp_val(*out, dbl), eb) ? 0 : -1;
}

/* Reads an x-field; *ub gets the reconstructed bits. */
LP_AI int lp_get_xfield(lp_br *r, const uint8_t *btab, int dbl, uint64_t *ub)
{
    const unsigned W = LP_W(dbl), EBITS = LP_EB(dbl);
    uint64_t se, m;
    if (lp_get(r, 1 + EBITS, &se)) return -1;
    unsigned e = (unsigned)(se >> 1);
    uint64_t hi = ((se & 1) << (W + EBITS)) | ((uint64_t)e << W);
    if (e == LP_EMAX(dbl)) {
        if (lp_getn(r, W, &m)) return -1;
        *ub = hi | m;
        return 0;
    }
    unsigned b = btab[e];
    if (lp_getn(r, b, &m)) return -1;
    *ub = lp_cut_recon(hi | (m << (W - b)), b, dbl);
    return 0;
}

LP_AI ptrdiff_t lp_bit_enc(const zc_seg *s, const void *src, uint8_t *dst, size_t cap, int dbl)
{
    const double eb = s->eb;
    const size_t n = s->n, esz = LP_ESZ(dbl);
    const unsigned EBITS = LP_EB(dbl);
    if (!lp_bound_ok(eb)) return ZMPI_ERR_BOUND;
    uint8_t btab[2048];
    lp_btab(eb, dbl, btab);

    /* Segment minimum of the finite values. */
    int have = 0;
    double cmin = 0.0;
    uint64_t cu = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = lp_load(src, i, dbl);
        if (!lp_finite_bits(u, dbl)) continue;
        double x = lp_val(u, dbl);
        if (!have || x < cmin) {
            cmin = x;
            cu = u;
            have = 1;
        }
    }

    /* Mode choice: estimated bits of the cut values in either mode (every
     * value counted as cut; predicted values cost the same in both). */
    int mode = LP_MODE_SIGNED;
    if (have) {
        uint64_t bits_signed = 0, bits_offset = 8u * esz;
        for (size_t i = 0; i < n; i++) {
            uint64_t u = lp_load(src, i, dbl), kept, xr;
            unsigned xb = lp_xfield_bits(u, btab, dbl), e;
            bits_signed += xb;
            if (lp_finite_bits(u, dbl) && lp_offset_try(u, cu, eb, btab, dbl, &e, &kept, &xr))
                bits_offset += EBITS + btab[e];
            else
                bits_offset += EBITS + xb;
        }
        if (bits_offset <= bits_signed) mode = LP_MODE_OFFSET;
    }

    size_t hdr = 1 + (mode == LP_MODE_OFFSET ? esz : 0);
    if (cap < hdr) return ZMPI_ERR_DST_TOO_SMALL;
    dst[0] = (uint8_t)mode;
    if (mode == LP_MODE_OFFSET) lp_store(dst + 1, 0, cu, dbl);

    lp_bw w = {dst + hdr, 0, cap - hdr, 0, 0, 0};
    lp_hist h;
    memset(&h, 0, sizeof h);
    const uint64_t esc = 1u | ((uint64_t)LP_EMAX(dbl) << 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t u = lp_load(src, i, dbl), out, kept;
        unsigned e;
        int k = lp_choose(&h, u, eb, dbl, &out);
        if (k >= 0) {
            lp_put(&w, (uint64_t)k << 1, 3);
        } else if (mode == LP_MODE_OFFSET && lp_finite_bits(u, dbl) &&
                   lp_offset_try(u, cu, eb, btab, dbl, &e, &kept, &out)) {
            lp_put(&w, 1u | ((uint64_t)e << 1), 1 + EBITS);
            lp_putn(&w, kept, btab[e]);
        } else {
            if (mode == LP_MODE_OFFSET)
                lp_put(&w, esc, 1 + EBITS);
            else
                lp_put(&w, 1, 1);
            if (lp_put_xfield(&w, u, eb, btab, dbl, &out)) return ZMPI_ERR_DST_TOO_SMALL;
        }
        if (w.full) return ZMPI_ERR_DST_TOO_SMALL;
        lp_push(&h, out, dbl);
    }
    if (lp_flush(&w)) return ZMPI_ERR_DST_TOO_SMALL;
    return (ptrdiff_t)(hdr + w.pos);
}

LP_AI int lp_bit_dec(const zc_seg *s, const uint8_t *src, size_t size, void *dst, int dbl)
{
    const double eb = s->eb;
    const size_t n = s->n, esz = LP_ESZ(dbl);
    const unsigned EBITS = LP_EB(dbl);
    if (!lp_bound_ok(eb) || size < 1) return ZMPI_ERR_CORRUPT;
    unsigned mode = src[0];
    size_t hdr = 1;
    uint64_t cu = 0;
    if (mode == LP_MODE_OFFSET) {
        if (size < 1 + esz) return ZMPI_ERR_CORRUPT;
        cu = lp_load(src + 1, 0, dbl);
        if (!lp_finite_bits(cu, dbl)) return ZMPI_ERR_CORRUPT;
        hdr += esz;
    } else if (mode != LP_MODE_SIGNED) {
        return ZMPI_ERR_CORRUPT;
    }
    size_t avail = size - hdr;
    if (avail <= SIZE_MAX / 8 && n > avail * 8 / 3) return ZMPI_ERR_CORRUPT; /* >= 3 bits each */

    uint8_t btab[2048];
    lp_btab(eb, dbl, btab);
    lp_br r = {src + hdr, 0, avail, 0, 0};
    lp_hist h;
    memset(&h, 0, sizeof h);
    for (size_t i = 0; i < n; i++) {
        uint64_t f, v, out;
        if (lp_get(&r, 1, &f)) return ZMPI_ERR_CORRUPT;
        if (f == 0) {
            if (lp_get(&r, 2, &v)) return ZMPI_ERR_CORRUPT;
            out = lp_pred(&h, (unsigned)v, dbl);
        } else {
            int xfield = 1;
            if (mode == LP_MODE_OFFSET) {
                if (lp_get(&r, EBITS, &v)) return ZMPI_ERR_CORRUPT;
                unsigned e = (unsigned)v;
                if (e != LP_EMAX(dbl)) {
                    uint64_t m;
                    if (lp_getn(&r, btab[e], &m)) return ZMPI_ERR_CORRUPT;
                    out = lp_offset_recon(e, m, cu, btab, dbl);
                    xfield = 0;
                }
            }
            if (xfield && lp_get_xfield(&r, btab, dbl, &out)) return ZMPI_ERR_CORRUPT;
        }
        lp_store(dst, i, out, dbl);
        lp_push(&h, out, dbl);
    }
    /* Exactly size bytes: nothing left but the zero padding of the last byte. */
    lp_refill(&r);
    if (r.pos != r.size || r.nb >= 8 || r.acc != 0) return ZMPI_ERR_CORRUPT;
    return ZMPI_OK;
}

static ptrdiff_t lp_bit_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap)
{
    if (s->dtype == ZMPI_FLOAT) return lp_bit_enc(s, src, dst, cap, 0);
    if (s->dtype == ZMPI_DOUBLE) return lp_bit_enc(s, src, dst, cap, 1);
    return ZMPI_ERR_DTYPE;
}

static int lp_bit_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst)
{
    if (s->dtype == ZMPI_FLOAT) return lp_bit_dec(s, src, size, dst, 0);
    if (s->dtype == ZMPI_DOUBLE) return lp_bit_dec(s, src, size, dst, 1);
    return ZMPI_ERR_CORRUPT;
}

const zc_codec_ops zc_linpred_byte_ops = {
    .id = ZMPI_CODEC_LINPRED_BYTE, .name = "linpred-byte",
    .description = "error-bounded, linear predictors, one symbol byte per value",
    .kind = ZMPI_KIND_BOUNDED, .inter = 0,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = lp_byte_encode, .decode = lp_byte_decode,
    .hist_update = NULL, .hist_elem_size = NULL, .param_check = NULL,
};

const zc_codec_ops zc_linpred_bit_ops = {
    .id = ZMPI_CODEC_LINPRED_BIT, .name = "linpred-bit",
    .description = "error-bounded, linear predictors, bit-wise, mantissa cut",
    .kind = ZMPI_KIND_BOUNDED, .inter = 0,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = lp_bit_encode, .decode = lp_bit_decode,
    .hist_update = NULL, .hist_elem_size = NULL, .param_check = NULL,
};
