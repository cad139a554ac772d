/*
 * trunc.c - fixed-precision lossy codecs (DP-Lossy_N and double -> float, from the 2008 CAM study), no error bound.
 *
 * trunc (DP-Lossy_N): drop the N = param low bits of each bit pattern
 *   (double: N = 1..52, default 32; float: N = 1..23, default 16); the
 *   receiver appends N zero bits.
 * dp2sp (DP-SP): double -> float (round to nearest in the default FP mode).
 * trunc-inter / dp2sp-inter: the same working values, XORed with the
 *   previous message's working values (s->hist) and LZn-coded (xorcore.h).
 *
 * Exceptions (reproduced bit-exactly from a per-segment list):
 *   trunc: NaN whose dropped bits are not all zero (otherwise the payload,
 *          or the NaN-ness itself, would be lost). +-Inf and NaN with zero
 *          dropped bits survive truncation unchanged.
 *   dp2sp: NaN (any payload) and finite x with |x| > FLT_MAX. Their float
 *          slot holds the fixed pattern DP_CANON. +-Inf casts exactly.
 *
 * Working value w(x) (what is packed / XORed, K bits):
 *   trunc: w = bits(x) >> N, K = width - N.  dp2sp: w = bits((float)x) or
 *   DP_CANON for exceptions, K = 32.
 * hist (inter): trunc-inter keeps bits(x) with the N low bits cleared (dtype
 *   size); dp2sp-inter keeps w (4 bytes). Both are functions of x alone, and
 *   w(decoded x) == w(x), so hist_update may be given either the original or
 *   the reconstructed elements.
 *
 * Segment payload:
 *   exception list (xorcore.h: LEB128 E, E x u32 position, E x raw element)
 *   then
 *   trunc:       n fields of K bits (w), LSB-first, zero-padded to a byte
 *   dp2sp:       n x float32 LE (w)
 *   trunc-inter: n LZn codes of w XOR (h >> N), K = width - N
 *   dp2sp-inter: n LZn codes of w XOR h, K = 32
 */
#include "xorcore.h"

#define DP_FLTMAX_BITS UINT64_C(0x47EFFFFFE0000000) /* (double)FLT_MAX */
#define DP_ABS_MASK UINT64_C(0x7FFFFFFFFFFFFFFF)
#define DP_INF_BITS UINT64_C(0x7FF0000000000000)
#define DP_CANON UINT32_C(0x7FC00000) /* float slot of a dp2sp exception */

#if defined(__GNUC__) || defined(__clang__)
#define TR_INLINE static inline __attribute__((always_inline))
#else
#define TR_INLINE static inline
#endif

typedef struct tr_geom {
    size_t esz;    /* bytes per input element (8 for dp2sp) */
    unsigned N;    /* dropped bits (trunc) */
    unsigned K;    /* bits of the working value */
    uint64_t drop; /* mask of the dropped bits */
    uint64_t expm; /* exponent mask */
} tr_geom;

/* 0, or the error to return (bad dtype / parameter). */
static int tr_geom_init(const zc_seg *s, int dp, tr_geom *g, int err_dtype, int err_param) {
    if (dp) {
        if (s->dtype != ZMPI_DOUBLE) return err_dtype;
        g->esz = 8; g->N = 0; g->K = 32; g->drop = 0; g->expm = DP_INF_BITS;
        return 0;
    }
    unsigned maxn;
    if (s->dtype == ZMPI_DOUBLE) { g->esz = 8; maxn = 52; g->expm = DP_INF_BITS; }
    else if (s->dtype == ZMPI_FLOAT) { g->esz = 4; maxn = 23; g->expm = 0x7F800000u; }
    else return err_dtype;
    if (s->param < 1 || s->param > maxn) return err_param;
    g->N = s->param;
    g->K = (unsigned)(8 * g->esz) - g->N;
    g->drop = (UINT64_C(1) << g->N) - 1;
    return 0;
}

/* trunc: does x need the exception list? */
TR_INLINE int tr_exc(uint64_t x, uint64_t expm, uint64_t drop) {
    return ((x & expm) == expm) & ((x & drop) != 0);
}
/* dp2sp: NaN, or finite beyond the float range. */
TR_INLINE int dp_exc(uint64_t x) {
    uint64_t a = x & DP_ABS_MASK;
    return (a > DP_FLTMAX_BITS) & (a != DP_INF_BITS);
}
/* dp2sp working value. */
TR_INLINE uint32_t dp_work(uint64_t x) {
    int e = dp_exc(x);
    uint64_t xs = e ? 0 : x; /* never cast a value that would overflow */
    double d;
    memcpy(&d, &xs, 8);
    float f = (float)d;
    uint32_t u;
    memcpy(&u, &f, 4);
    return e ? DP_CANON : u;
}
TR_INLINE int fl_isnan(uint32_t f) { return (f & 0x7FFFFFFFu) > 0x7F800000u; }
TR_INLINE uint64_t fl_to_dbits(uint32_t f) {
    float x;
    memcpy(&x, &f, 4);
    double d = (double)x;
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* ---- encoder bodies (written at dst, capacity cap); count exceptions ---- */

TR_INLINE ptrdiff_t tr_body_trunc(const void *src, size_t n, size_t esz, unsigned N, unsigned K,
                                  uint64_t expm, uint64_t drop, uint8_t *dst, size_t cap,
                                  size_t *ne_out) {
    zx_bw w;
    zx_bw_init(&w, dst, cap);
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = zx_ld(src, i, esz);
        ne += (size_t)tr_exc(x, expm, drop);
        zx_put_wide(&w, x >> N, K);
        if (ZX_UNLIKELY(w.err)) return ZMPI_ERR_DST_TOO_SMALL;
    }
    *ne_out = ne;
    return zx_bw_finish(&w, dst);
}

TR_INLINE ptrdiff_t tr_body_trunc_inter(const void *src, const void *hist, size_t n, size_t esz,
                                        unsigned N, unsigned K, uint64_t expm, uint64_t drop,
                                        uint8_t *dst, size_t cap, size_t *ne_out) {
    zx_bw w;
    zx_bw_init(&w, dst, cap);
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = zx_ld(src, i, esz);
        uint64_t h = hist ? zx_ld(hist, i, esz) >> N : 0;
        ne += (size_t)tr_exc(x, expm, drop);
        zx_put_lz(&w, (x >> N) ^ h, K);
        if (ZX_UNLIKELY(w.err)) return ZMPI_ERR_DST_TOO_SMALL;
    }
    *ne_out = ne;
    return zx_bw_finish(&w, dst);
}

static ptrdiff_t dp_body(const void *src, size_t n, uint8_t *dst, size_t cap, size_t *ne_out) {
    if (n > cap / 4) return ZMPI_ERR_DST_TOO_SMALL;
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = zx_ld64(src, i);
        ne += (size_t)dp_exc(x);
        zx_st32(dst, i, dp_work(x));
    }
    *ne_out = ne;
    return (ptrdiff_t)(4 * n);
}

static ptrdiff_t dp_body_inter(const void *src, const void *hist, size_t n, uint8_t *dst,
                               size_t cap, size_t *ne_out) {
    zx_bw w;
    zx_bw_init(&w, dst, cap);
    size_t ne = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t x = zx_ld64(src, i);
        uint32_t h = hist ? zx_ld32(hist, i) : 0;
        ne += (size_t)dp_exc(x);
        zx_put_lz(&w, (uint64_t)(dp_work(x) ^ h), 32);
        if (ZX_UNLIKELY(w.err)) return ZMPI_ERR_DST_TOO_SMALL;
    }
    *ne_out = ne;
    return zx_bw_finish(&w, dst);
}

static ptrdiff_t tr_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap, int dp,
                           int inter) {
    tr_geom g;
    int rc = tr_geom_init(s, dp, &g, ZMPI_ERR_DTYPE, ZMPI_ERR_ARG);
    if (rc) return rc;
    if (cap < 1) return ZMPI_ERR_DST_TOO_SMALL;
    size_t n = s->n;
    const void *hist = inter ? s->hist : NULL;
    /* Body first, after a one-byte "no exceptions" header; the rare segments
     * with exceptions move it afterwards. */
    uint8_t *body = dst + 1;
    size_t bcap = cap - 1, ne = 0;
    ptrdiff_t bl;
    if (dp) {
        bl = inter ? dp_body_inter(src, hist, n, body, bcap, &ne) : dp_body(src, n, body, bcap, &ne);
    } else if (g.esz == 8) {
        bl = inter ? tr_body_trunc_inter(src, hist, n, 8, g.N, g.K, g.expm, g.drop, body, bcap, &ne)
                   : tr_body_trunc(src, n, 8, g.N, g.K, g.expm, g.drop, body, bcap, &ne);
    } else {
        bl = inter ? tr_body_trunc_inter(src, hist, n, 4, g.N, g.K, g.expm, g.drop, body, bcap, &ne)
                   : tr_body_trunc(src, n, 4, g.N, g.K, g.expm, g.drop, body, bcap, &ne);
    }
    if (bl < 0) return bl;
    if (ne == 0) {
        dst[0] = 0;
        return 1 + bl;
    }
    if (n > UINT32_MAX) return ZMPI_ERR_TOO_LARGE;
    size_t h = zx_varint_len(ne) + ne * (4 + g.esz);
    if (h > cap || (size_t)bl > cap - h) return ZMPI_ERR_DST_TOO_SMALL;
    memmove(dst + h, body, (size_t)bl);
    size_t o = zx_put_varint(dst, ne);
    uint8_t *pp = dst + o, *rp = dst + o + 4 * ne;
    for (size_t i = 0, k = 0; i < n && k < ne; i++) {
        uint64_t x = zx_ld(src, i, g.esz);
        if (dp ? dp_exc(x) : tr_exc(x, g.expm, g.drop)) {
            zc_put_u32(pp, (uint32_t)i);
            pp += 4;
            if (g.esz == 8) zc_put_u64(rp, x); else zc_put_u32(rp, (uint32_t)x);
            rp += g.esz;
            k++;
        }
    }
    return (ptrdiff_t)(h + (size_t)bl);
}

/* ---- decoders ---- */

TR_INLINE int tr_dbody_trunc(const uint8_t *src, size_t size, size_t n, size_t esz, unsigned N,
                             unsigned K, void *dst) {
    if (n > (SIZE_MAX >> 7)) return -1;
    if (((uint64_t)n * K + 7) / 8 != size) return -1;
    zx_br r;
    zx_br_init(&r, src, size);
    uint64_t v;
    for (size_t i = 0; i < n; i++) {
        if (ZX_UNLIKELY(zx_get_wide(&r, K, &v))) return -1;
        zx_st(dst, i, esz, v << N);
    }
    return zx_br_finish(&r);
}

TR_INLINE int tr_dbody_trunc_inter(const uint8_t *src, size_t size, const void *hist, size_t n,
                                   size_t esz, unsigned N, unsigned K, void *dst) {
    if (n / 2 > size) return -1; /* every code has >= 4 bits */
    unsigned cmax = zx_lz_cmax(K);
    zx_br r;
    zx_br_init(&r, src, size);
    uint64_t d;
    for (size_t i = 0; i < n; i++) {
        if (ZX_UNLIKELY(zx_get_lz(&r, K, cmax, &d))) return -1;
        uint64_t h = hist ? zx_ld(hist, i, esz) >> N : 0;
        zx_st(dst, i, esz, (h ^ d) << N);
    }
    return zx_br_finish(&r);
}

/* returns the number of NaN float slots, or (size_t)-1 if corrupt */
static size_t dp_dbody(const uint8_t *src, size_t size, size_t n, void *dst) {
    if (size % 4 || size / 4 != n) return (size_t)-1;
    size_t nan = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t f = zx_ld32(src, i);
        nan += (size_t)fl_isnan(f);
        zx_st64(dst, i, fl_to_dbits(f));
    }
    return nan;
}

static size_t dp_dbody_inter(const uint8_t *src, size_t size, const void *hist, size_t n,
                             void *dst) {
    if (n / 2 > size) return (size_t)-1;
    zx_br r;
    zx_br_init(&r, src, size);
    size_t nan = 0;
    uint64_t d;
    for (size_t i = 0; i < n; i++) {
        if (ZX_UNLIKELY(zx_get_lz(&r, 32, 8, &d))) return (size_t)-1;
        uint32_t f = (hist ? zx_ld32(hist, i) : 0) ^ (uint32_t)d;
        nan += (size_t)fl_isnan(f);
        zx_st64(dst, i, fl_to_dbits(f));
    }
    return zx_br_finish(&r) ? (size_t)-1 : nan;
}

static int tr_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst, int dp,
                     int inter) {
    tr_geom g;
    if (tr_geom_init(s, dp, &g, 1, 1)) return ZMPI_ERR_CORRUPT;
    size_t n = s->n, ne;
    const uint8_t *pos, *raw;
    size_t h = zx_exc_parse(src, size, n, g.esz, &ne, &pos, &raw);
    if (h == 0) return ZMPI_ERR_CORRUPT;
    const uint8_t *body = src + h;
    size_t bsize = size - h;
    const void *hist = inter ? s->hist : NULL;
    if (dp) {
        size_t nan = inter ? dp_dbody_inter(body, bsize, hist, n, dst) : dp_dbody(body, bsize, n, dst);
        /* NaN float slots are exactly the exception slots */
        if (nan != ne) return ZMPI_ERR_CORRUPT;
        uint64_t canon = fl_to_dbits(DP_CANON);
        for (size_t k = 0; k < ne; k++) {
            size_t p = zc_get_u32(pos + 4 * k);
            uint64_t x = zc_get_u64(raw + 8 * k);
            if (!dp_exc(x) || zx_ld64(dst, p) != canon) return ZMPI_ERR_CORRUPT;
            zx_st64(dst, p, x);
        }
        return ZMPI_OK;
    }
    int bad;
    if (g.esz == 8)
        bad = inter ? tr_dbody_trunc_inter(body, bsize, hist, n, 8, g.N, g.K, dst)
                    : tr_dbody_trunc(body, bsize, n, 8, g.N, g.K, dst);
    else
        bad = inter ? tr_dbody_trunc_inter(body, bsize, hist, n, 4, g.N, g.K, dst)
                    : tr_dbody_trunc(body, bsize, n, 4, g.N, g.K, dst);
    if (bad) return ZMPI_ERR_CORRUPT;
    for (size_t k = 0; k < ne; k++) {
        size_t p = zc_get_u32(pos + 4 * k);
        uint64_t x = g.esz == 8 ? zc_get_u64(raw + 8 * k) : zc_get_u32(raw + 4 * k);
        if (!tr_exc(x, g.expm, g.drop) || zx_ld(dst, p, g.esz) != (x & ~g.drop))
            return ZMPI_ERR_CORRUPT;
        zx_st(dst, p, g.esz, x);
    }
    return ZMPI_OK;
}

/* ---- ops ---- */

static ptrdiff_t trunc_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap) {
    return tr_encode(s, src, dst, cap, 0, 0);
}
static int trunc_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst) {
    return tr_decode(s, src, size, dst, 0, 0);
}
static ptrdiff_t trunci_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap) {
    return tr_encode(s, src, dst, cap, 0, 1);
}
static int trunci_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst) {
    return tr_decode(s, src, size, dst, 0, 1);
}
static ptrdiff_t dp2sp_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap) {
    return tr_encode(s, src, dst, cap, 1, 0);
}
static int dp2sp_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst) {
    return tr_decode(s, src, size, dst, 1, 0);
}
static ptrdiff_t dp2spi_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap) {
    return tr_encode(s, src, dst, cap, 1, 1);
}
static int dp2spi_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst) {
    return tr_decode(s, src, size, dst, 1, 1);
}

static long long trunc_param_check(zmpi_dtype dtype, long long requested) {
    long long maxn, def;
    if (dtype == ZMPI_DOUBLE) { maxn = 52; def = 32; }
    else if (dtype == ZMPI_FLOAT) { maxn = 23; def = 16; }
    else return ZMPI_ERR_DTYPE;
    if (requested == 0) return def;
    if (requested < 1 || requested > maxn) return ZMPI_ERR_ARG;
    return requested;
}

/* hist = bits(out) with the N low bits cleared (== bits(x) & ~drop). */
static void trunci_hist_update(const zc_seg *s, const void *out, void *hist) {
    tr_geom g;
    size_t n = s->n;
    if (tr_geom_init(s, 0, &g, 1, 1)) {
        size_t esz = s->dtype == ZMPI_DOUBLE ? 8 : s->dtype == ZMPI_FLOAT ? 4 : 0;
        if (esz && n) memset(hist, 0, n * esz); /* unreachable with a checked param */
        return;
    }
    if (g.esz == 8)
        for (size_t i = 0; i < n; i++) zx_st64(hist, i, zx_ld64(out, i) & ~g.drop);
    else
        for (size_t i = 0; i < n; i++) zx_st32(hist, i, zx_ld32(out, i) & (uint32_t)~g.drop);
}
static size_t trunci_hist_elem_size(zmpi_dtype dtype) {
    return dtype == ZMPI_DOUBLE ? 8 : dtype == ZMPI_FLOAT ? 4 : 0;
}

/* hist = dp2sp working floats of out (== those of the original). */
static void dp2spi_hist_update(const zc_seg *s, const void *out, void *hist) {
    if (s->dtype != ZMPI_DOUBLE) return;
    for (size_t i = 0; i < s->n; i++) zx_st32(hist, i, dp_work(zx_ld64(out, i)));
}
static size_t dp2spi_hist_elem_size(zmpi_dtype dtype) { return dtype == ZMPI_DOUBLE ? 4 : 0; }

/* Fields left out are NULL / 0 (not inter-step, no history, no parameter). */
const zc_codec_ops zc_trunc_ops = {
    .id = ZMPI_CODEC_TRUNC,
    .name = "trunc",
    .description = "fixed precision: drop the N low bits of each value (DP-Lossy_N), pack the rest",
    .kind = ZMPI_KIND_FIXED,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = trunc_encode,
    .decode = trunc_decode,
    .param_check = trunc_param_check,
};

const zc_codec_ops zc_dp2sp_ops = {
    .id = ZMPI_CODEC_DP2SP,
    .name = "dp2sp",
    .description = "fixed precision: double cast to float (DP-SP)",
    .kind = ZMPI_KIND_FIXED,
    .dtypes = 1u << ZMPI_DOUBLE,
    .encode = dp2sp_encode,
    .decode = dp2sp_decode,
};

const zc_codec_ops zc_trunc_inter_ops = {
    .id = ZMPI_CODEC_TRUNC_INTER,
    .name = "trunc-inter",
    .description = "fixed precision: trunc, then XOR with the previous message + leading-zero-nibble code",
    .kind = ZMPI_KIND_FIXED,
    .inter = 1,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = trunci_encode,
    .decode = trunci_decode,
    .hist_update = trunci_hist_update,
    .hist_elem_size = trunci_hist_elem_size,
    .param_check = trunc_param_check,
};

const zc_codec_ops zc_dp2sp_inter_ops = {
    .id = ZMPI_CODEC_DP2SP_INTER,
    .name = "dp2sp-inter",
    .description = "fixed precision: dp2sp, then XOR with the previous message + leading-zero-nibble code",
    .kind = ZMPI_KIND_FIXED,
    .inter = 1,
    .dtypes = 1u << ZMPI_DOUBLE,
    .encode = dp2spi_encode,
    .decode = dp2spi_decode,
    .hist_update = dp2spi_hist_update,
    .hist_elem_size = dp2spi_hist_elem_size,
};
