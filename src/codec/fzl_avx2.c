/*
 * AVX2 kernels of fzl for blocks of 16 values (compiled with -mavx2, called
 * only when the CPU has AVX2). They write and read exactly the bytes of the
 * portable coder in fzl.c; tests/codec compare the two.
 *
 * Encoding a block: quantise 16 values in two 8-lane registers, check the
 * reconstruction (outliers are patched by a scalar fix-up), Lorenzo deltas
 * by a lane rotation, bit length from the OR of |d|, sign masks with
 * movemask, and bit planes by packing |d| to bytes and transposing the
 * 16 x 8 bit matrix (two 8 x 8 transposes in 64-bit lanes).
 * Decoding: the same transpose back from up to 8 planes to 16 bytes, then
 * widened, signed (without a branch on the sign mode), prefix-summed in
 * registers and scaled by 2eb.
 */
#include <immintrin.h>
#include <math.h>

#include "fzl.h"

int zc_have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/* Finite min/max of n floats (for REL bounds). Returns 0 if none is finite. */
int zc_range_f32_avx2(const float *x, size_t n, double *mn, double *mx, int *nonfinite)
{
    /* min_ps(a, b) returns b when a is NaN, so NaNs drop out of the range (an
     * unordered compare notes them); an infinity is caught afterwards and
     * the chunk re-scanned carefully. */
    __m256 lo0 = _mm256_set1_ps(INFINITY), hi0 = _mm256_set1_ps(-INFINITY);
    __m256 lo1 = lo0, hi1 = hi0, nan = _mm256_setzero_ps();
    size_t i = 0;
    int bad = 0;
    for (; i + 16 <= n; i += 16) {
        __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
        lo0 = _mm256_min_ps(a, lo0);
        hi0 = _mm256_max_ps(a, hi0);
        lo1 = _mm256_min_ps(b, lo1);
        hi1 = _mm256_max_ps(b, hi1);
        nan = _mm256_or_ps(nan, _mm256_cmp_ps(a, b, _CMP_UNORD_Q));
    }
    bad = _mm256_movemask_ps(nan) != 0;
    float l[8], h[8];
    _mm256_storeu_ps(l, _mm256_min_ps(lo0, lo1));
    _mm256_storeu_ps(h, _mm256_max_ps(hi0, hi1));
    float L = INFINITY, H = -INFINITY;
    for (int k = 0; k < 8; k++) {
        L = l[k] < L ? l[k] : L;
        H = h[k] > H ? h[k] : H;
    }
    for (; i < n; i++) {
        float v = x[i];
        L = v < L ? v : L;
        H = v > H ? v : H;
        bad |= v != v;
    }
    if (L == -INFINITY || H == INFINITY) { /* rare: exclude infinities exactly */
        bad = 1;
        L = INFINITY;
        H = -INFINITY;
        for (i = 0; i < n; i++) {
            float v = x[i];
            if (fabsf(v) <= 3.40282347e38f) {
                L = v < L ? v : L;
                H = v > H ? v : H;
            }
        }
    }
    *mn = L;
    *mx = H;
    *nonfinite = bad;
    return L <= H;
}

/* Scalar fix-up of a block with outliers: lanes not in ok get the previous
 * code and are recorded exactly. */
static int fixup(fzl_enc *e, int32_t q[16], unsigned ok, const void *x, size_t base, int32_t prev)
{
    for (unsigned i = 0; i < 16; i++) {
        if (!((ok >> i) & 1u)) {
            int rc = fzl_add_outlier(e, (uint32_t)(base + i), (const uint8_t *)x + (base + i) * e->es);
            if (rc)
                return rc;
            q[i] = i ? q[i - 1] : prev;
        }
    }
    return 0;
}

/* 16 bytes holding the low byte of (a >> shift) of the 16 lanes of a0|a1, in order. */
static inline __m128i bytes_of(__m256i a0, __m256i a1, int shift, int need_mask)
{
    __m128i sh = _mm_cvtsi32_si128(shift);
    __m256i t0 = _mm256_srl_epi32(a0, sh), t1 = _mm256_srl_epi32(a1, sh);
    if (need_mask) {
        const __m256i ff = _mm256_set1_epi32(0xff);
        t0 = _mm256_and_si256(t0, ff);
        t1 = _mm256_and_si256(t1, ff);
    }
    __m256i w = _mm256_permute4x64_epi64(_mm256_packus_epi32(t0, t1), 0xD8);
    return _mm_packus_epi16(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
}

static inline void put16(uint8_t *p, unsigned v)
{
    uint16_t w = (uint16_t)v; /* little-endian host (checked by CMake) */
    memcpy(p, &w, 2);
}

/* Transposes the 8x8 bit matrix in each 64-bit lane (bit 8r + c <-> bit
 * 8c + r) by three rounds of swaps of 2x2, 4x4 and 8x8 sub-blocks. */
static inline __m128i transpose8x8(__m128i v)
{
    __m128i t = _mm_and_si128(_mm_xor_si128(v, _mm_srli_epi64(v, 7)), _mm_set1_epi64x(0x00AA00AA00AA00AALL));
    v = _mm_xor_si128(_mm_xor_si128(v, t), _mm_slli_epi64(t, 7));
    t = _mm_and_si128(_mm_xor_si128(v, _mm_srli_epi64(v, 14)), _mm_set1_epi64x(0x0000CCCC0000CCCCLL));
    v = _mm_xor_si128(_mm_xor_si128(v, t), _mm_slli_epi64(t, 14));
    t = _mm_and_si128(_mm_xor_si128(v, _mm_srli_epi64(v, 28)), _mm_set1_epi64x(0x00000000F0F0F0F0LL));
    return _mm_xor_si128(_mm_xor_si128(v, t), _mm_slli_epi64(t, 28));
}

/* The 8 bit planes of 16 bytes, plane 0 first, as 16 output bytes: the
 * bytes of values 0-7 and 8-15 are transposed as two 8x8 bit matrices, then
 * the two halves of each plane are put side by side. */
static inline void planes8(__m128i b, uint8_t *o)
{
    b = _mm_shuffle_epi8(transpose8x8(b), _mm_setr_epi8(0, 8, 1, 9, 2, 10, 3, 11, 4, 12, 5, 13, 6, 14, 7, 15));
    _mm_storeu_si128((__m128i *)o, b);
}

/* Emits one block of deltas d0 (values 0..7) and d1 (8..15). */
static inline int emit16(fzl_enc *e, __m256i d0, __m256i d1)
{
    __m256i a0 = _mm256_abs_epi32(d0), a1 = _mm256_abs_epi32(d1);
    __m256i o = _mm256_or_si256(a0, a1);
    __m128i o4 = _mm_or_si128(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
    o4 = _mm_or_si128(o4, _mm_shuffle_epi32(o4, 0x4E));
    o4 = _mm_or_si128(o4, _mm_shuffle_epi32(o4, 0xB1));
    uint32_t all = (uint32_t)_mm_cvtsi128_si32(o4);
    unsigned L = all ? 32u - (unsigned)__builtin_clz(all) : 0u;
    const __m256i zero = _mm256_setzero_si256();
    unsigned neg = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(d0)) |
                   (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(d1)) << 8;
    unsigned pos = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(d0, zero))) |
                   (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(d1, zero))) << 8;
    /* S: 1 all >= 0, 2 all <= 0, 0 mixed; a constant block (L = 0) is head 0 */
    unsigned S = L == 0 ? 0u : neg == 0 ? 1u : pos == 0 ? 2u : 0u;
    unsigned sbytes = (S == 0 && L) ? 2u : 0u;
    /* room for the unconditional 16-byte plane store below */
    if ((size_t)(e->orec - e->out) < 1 + 2 + 16 + 2 * (size_t)L)
        return ZMPI_ERR_DST_TOO_SMALL;
    uint8_t *o8 = e->out;
    o8[0] = (uint8_t)(L | S << 6);
    put16(o8 + 1, neg);
    o8 += 1 + sbytes;
    /* all 8 planes of each byte group are written: the ones above L are zero
     * and are overwritten by the next block (the room check counts them) */
    if (L <= 8) {
        planes8(bytes_of(a0, a1, 0, 0), o8);
    } else {
        for (unsigned g = 0; 8 * g < L; g++)
            planes8(bytes_of(a0, a1, (int)(8 * g), 1), o8 + 16 * g);
    }
    e->out = o8 + 2 * L;
    return 0;
}

/* Lorenzo deltas of codes q0|q1 given the previous code in every lane of pv;
 * returns the new previous-code vector. */
static inline __m256i deltas(__m256i q0, __m256i q1, __m256i pv, __m256i *d0, __m256i *d1)
{
    const __m256i rot = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
    const __m256i last = _mm256_set1_epi32(7);
    __m256i t0 = _mm256_permutevar8x32_epi32(q0, rot), t1 = _mm256_permutevar8x32_epi32(q1, rot);
    __m256i p1 = _mm256_blend_epi32(t1, t0, 0x01);
    __m256i p0 = _mm256_blend_epi32(t0, pv, 0x01);
    *d0 = _mm256_sub_epi32(q0, p0);
    *d1 = _mm256_sub_epi32(q1, p1);
    return _mm256_permutevar8x32_epi32(q1, last);
}

int zc_fzl_encode16_avx2(fzl_enc *e, const fzl_q *qp, zmpi_dtype dtype, const void *x, size_t nfull)
{
    __m256i pv = _mm256_set1_epi32(e->prev);
    if (dtype == ZMPI_FLOAT) {
        const float *xf = x;
        const __m256 inv = _mm256_set1_ps(qp->invf), two = _mm256_set1_ps(qp->twof);
        const __m256 ebf = _mm256_set1_ps(qp->ebf), lim = _mm256_set1_ps((float)FZL_QLIM);
        const __m256 absm = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
        for (size_t b = 0; b < nfull; b++) {
            const float *p = xf + 16 * b;
            __m256 x0 = _mm256_loadu_ps(p), x1 = _mm256_loadu_ps(p + 8);
            /* cvtps_epi32 rounds like nearbyintf (current mode); floats below
             * 2^30 are integral near it, so |v| < 2^30 <=> |rint(v)| < 2^30 */
            __m256 r0 = _mm256_mul_ps(x0, inv), r1 = _mm256_mul_ps(x1, inv);
            __m256 k0 = _mm256_cmp_ps(_mm256_and_ps(r0, absm), lim, _CMP_LT_OQ);
            __m256 k1 = _mm256_cmp_ps(_mm256_and_ps(r1, absm), lim, _CMP_LT_OQ);
            __m256i q0 = _mm256_cvtps_epi32(r0), q1 = _mm256_cvtps_epi32(r1);
            __m256 e0 = _mm256_sub_ps(x0, _mm256_mul_ps(_mm256_cvtepi32_ps(q0), two));
            __m256 e1 = _mm256_sub_ps(x1, _mm256_mul_ps(_mm256_cvtepi32_ps(q1), two));
            k0 = _mm256_and_ps(k0, _mm256_cmp_ps(_mm256_and_ps(e0, absm), ebf, _CMP_LT_OQ));
            k1 = _mm256_and_ps(k1, _mm256_cmp_ps(_mm256_and_ps(e1, absm), ebf, _CMP_LT_OQ));
            unsigned ok = (unsigned)_mm256_movemask_ps(k0) | (unsigned)_mm256_movemask_ps(k1) << 8;
            if (ok != 0xFFFFu) {
                int32_t q[16];
                _mm256_storeu_si256((__m256i *)q, q0);
                _mm256_storeu_si256((__m256i *)(q + 8), q1);
                int rc = fixup(e, q, ok, x, 16 * b, _mm256_cvtsi256_si32(pv));
                if (rc)
                    return rc;
                q0 = _mm256_loadu_si256((const __m256i *)q);
                q1 = _mm256_loadu_si256((const __m256i *)(q + 8));
            }
            __m256i d0, d1;
            pv = deltas(q0, q1, pv, &d0, &d1);
            int rc = emit16(e, d0, d1);
            if (rc)
                return rc;
        }
    } else {
        const double *xd = x;
        const __m256d inv = _mm256_set1_pd(qp->inv), two = _mm256_set1_pd(qp->two);
        const __m256d eb = _mm256_set1_pd(qp->eb), lim = _mm256_set1_pd(FZL_QLIM);
        const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
        for (size_t b = 0; b < nfull; b++) {
            const double *p = xd + 16 * b;
            __m128i qq[4];
            unsigned ok = 0;
            for (int k = 0; k < 4; k++) {
                __m256d xv = _mm256_loadu_pd(p + 4 * k);
                __m256d r = _mm256_round_pd(_mm256_mul_pd(xv, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                __m256d kk = _mm256_cmp_pd(_mm256_and_pd(r, absm), lim, _CMP_LT_OQ);
                qq[k] = _mm256_cvtpd_epi32(r);
                __m256d ev = _mm256_sub_pd(xv, _mm256_mul_pd(_mm256_cvtepi32_pd(qq[k]), two));
                kk = _mm256_and_pd(kk, _mm256_cmp_pd(_mm256_and_pd(ev, absm), eb, _CMP_LT_OQ));
                ok |= (unsigned)_mm256_movemask_pd(kk) << (4 * k);
            }
            __m256i q0 = _mm256_set_m128i(qq[1], qq[0]), q1 = _mm256_set_m128i(qq[3], qq[2]);
            if (ok != 0xFFFFu) {
                int32_t q[16];
                _mm256_storeu_si256((__m256i *)q, q0);
                _mm256_storeu_si256((__m256i *)(q + 8), q1);
                int rc = fixup(e, q, ok, x, 16 * b, _mm256_cvtsi256_si32(pv));
                if (rc)
                    return rc;
                q0 = _mm256_loadu_si256((const __m256i *)q);
                q1 = _mm256_loadu_si256((const __m256i *)(q + 8));
            }
            __m256i d0, d1;
            pv = deltas(q0, q1, pv, &d0, &d1);
            int rc = emit16(e, d0, d1);
            if (rc)
                return rc;
        }
    }
    e->prev = _mm256_cvtsi256_si32(pv);
    return 0;
}

/* Inclusive prefix sum of 8 int32 lanes. */
static inline __m256i prefix8(__m256i d)
{
    d = _mm256_add_epi32(d, _mm256_slli_si256(d, 4));
    d = _mm256_add_epi32(d, _mm256_slli_si256(d, 8));
    __m256i t = _mm256_permutevar8x32_epi32(d, _mm256_set1_epi32(3));
    return _mm256_add_epi32(d, _mm256_blend_epi32(_mm256_setzero_si256(), t, 0xF0));
}

/* Up to 8 bit planes of 16 values (nb = 2 bytes per plane, lowest plane
 * first) as 16 bytes, byte i holding value i's bits: the planes' low and high
 * bytes are gathered into two 8x8 bit matrices (row = plane, column =
 * value), each transposed.
 * Reads 16 bytes at w when avail allows, else copies the nb bytes. */
static inline __m128i planes_to_bytes(const uint8_t *w, unsigned nb, size_t avail)
{
    __m128i v;
    if (avail >= 16) {
        const __m128i idx = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        v = _mm_and_si128(_mm_loadu_si128((const __m128i *)w), _mm_cmpgt_epi8(_mm_set1_epi8((char)nb), idx));
    } else {
        uint8_t t[16] = {0};
        memcpy(t, w, nb);
        v = _mm_loadu_si128((const __m128i *)t);
    }
    return transpose8x8(_mm_shuffle_epi8(v, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)));
}

/* Reads one block's deltas into d0|d1; returns bytes consumed or an error. */
static inline ptrdiff_t read16(const uint8_t *p, size_t avail, __m256i *d0, __m256i *d1)
{
    if (avail < 1)
        return ZMPI_ERR_CORRUPT;
    unsigned h = p[0], L = h & 63u, S = h >> 6;
    if (L > 31 || S == 3 || (L == 0 && h != 0))
        return ZMPI_ERR_CORRUPT;
    if (L == 0) {
        *d0 = *d1 = _mm256_setzero_si256();
        return 1;
    }
    size_t sb = S == 0 ? 2 : 0, bs = 1 + sb + 2 * (size_t)L;
    if (bs > avail)
        return ZMPI_ERR_CORRUPT;
    /* sign bits: explicit (S = 0), none (S = 1) or all (S = 2), applied without a branch */
    unsigned neg = S == 0 ? (unsigned)p[1] | (unsigned)p[2] << 8 : S == 2 ? 0xFFFFu : 0u;
    const uint8_t *q = p + 1 + sb;
    size_t left = avail - 1 - sb;
    __m128i acc = planes_to_bytes(q, 2 * (L < 8 ? L : 8), left);
    __m256i m0 = _mm256_cvtepu8_epi32(acc), m1 = _mm256_cvtepu8_epi32(_mm_srli_si128(acc, 8));
    for (unsigned g = 1; 8 * g < L; g++) { /* planes 8 and up: rare */
        unsigned kmax = L - 8 * g < 8 ? L - 8 * g : 8;
        acc = planes_to_bytes(q + 16 * g, 2 * kmax, left - 16 * g);
        __m128i sh = _mm_cvtsi32_si128((int)(8 * g));
        m0 = _mm256_or_si256(m0, _mm256_sll_epi32(_mm256_cvtepu8_epi32(acc), sh));
        m1 = _mm256_or_si256(m1, _mm256_sll_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(acc, 8)), sh));
    }
    const __m256i b0 = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    const __m256i b1 = _mm256_setr_epi32(256, 512, 1024, 2048, 4096, 8192, 16384, 32768);
    __m256i nm = _mm256_set1_epi32((int)neg);
    __m256i n0 = _mm256_cmpeq_epi32(_mm256_and_si256(nm, b0), b0);
    __m256i n1 = _mm256_cmpeq_epi32(_mm256_and_si256(nm, b1), b1);
    *d0 = _mm256_sub_epi32(_mm256_xor_si256(m0, n0), n0);
    *d1 = _mm256_sub_epi32(_mm256_xor_si256(m1, n1), n1);
    return (ptrdiff_t)bs;
}

ptrdiff_t zc_fzl_decode16_avx2(const uint8_t *p, size_t avail, const fzl_q *qp, zmpi_dtype dtype,
                               void *y, size_t nfull, uint32_t *prev)
{
    const __m256i last = _mm256_set1_epi32(7);
    __m256i pv = _mm256_set1_epi32((int)*prev);
    size_t pos = 0;
    for (size_t b = 0; b < nfull; b++) {
        __m256i d0, d1;
        ptrdiff_t r = read16(p + pos, avail - pos, &d0, &d1);
        if (r < 0)
            return r;
        pos += (size_t)r;
        __m256i q0 = _mm256_add_epi32(prefix8(d0), pv);
        pv = _mm256_permutevar8x32_epi32(q0, last);
        __m256i q1 = _mm256_add_epi32(prefix8(d1), pv);
        pv = _mm256_permutevar8x32_epi32(q1, last);
        if (dtype == ZMPI_FLOAT) {
            const __m256 two = _mm256_set1_ps(qp->twof);
            float *o = (float *)y + 16 * b;
            _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_cvtepi32_ps(q0), two));
            _mm256_storeu_ps(o + 8, _mm256_mul_ps(_mm256_cvtepi32_ps(q1), two));
        } else {
            const __m256d two = _mm256_set1_pd(qp->two);
            double *o = (double *)y + 16 * b;
            _mm256_storeu_pd(o, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(q0)), two));
            _mm256_storeu_pd(o + 4, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(q0, 1)), two));
            _mm256_storeu_pd(o + 8, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(q1)), two));
            _mm256_storeu_pd(o + 12, _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(q1, 1)), two));
        }
    }
    *prev = (uint32_t)_mm256_cvtsi256_si32(pv);
    return (ptrdiff_t)pos;
}

/* Codes of 4 values at p (float or double) on the grid: q = rint(x / step)
 * in double; *bad gets the lanes whose code is 2^30 or more in magnitude,
 * not a number, or further than maxerr from x. */
static inline __m128i grid_q4(__m256d xv, __m256d inv, __m256d step, __m256d maxerr, __m256d *bad)
{
    const __m256d absm = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffLL));
    const __m256d lim = _mm256_set1_pd(FZL_QLIM);
    __m256d r = _mm256_round_pd(_mm256_mul_pd(xv, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256d ok = _mm256_cmp_pd(_mm256_and_pd(r, absm), lim, _CMP_LT_OQ);
    __m256d err = _mm256_and_pd(_mm256_sub_pd(xv, _mm256_mul_pd(r, step)), absm);
    ok = _mm256_and_pd(ok, _mm256_cmp_pd(err, maxerr, _CMP_LE_OQ));
    *bad = _mm256_or_pd(*bad, _mm256_xor_pd(ok, _mm256_castsi256_pd(_mm256_set1_epi64x(-1))));
    return _mm256_cvtpd_epi32(_mm256_and_pd(r, ok)); /* failed lanes: code 0 */
}

int zc_grid_quantize16_avx2(const void *x, zmpi_dtype dtype, size_t nfull, double step, double maxerr, int32_t *d,
                            int32_t *prev)
{
    const __m256d inv = _mm256_set1_pd(1.0 / step), st = _mm256_set1_pd(step), me = _mm256_set1_pd(maxerr);
    __m256d bad = _mm256_setzero_pd();
    __m256i pv = _mm256_set1_epi32(*prev);
    for (size_t b = 0; b < nfull; b++) {
        __m128i q[4];
        if (dtype == ZMPI_FLOAT) {
            const float *p = (const float *)x + 16 * b;
            for (int k = 0; k < 4; k++)
                q[k] = grid_q4(_mm256_cvtps_pd(_mm_loadu_ps(p + 4 * k)), inv, st, me, &bad);
        } else {
            const double *p = (const double *)x + 16 * b;
            for (int k = 0; k < 4; k++)
                q[k] = grid_q4(_mm256_loadu_pd(p + 4 * k), inv, st, me, &bad);
        }
        __m256i q0 = _mm256_set_m128i(q[1], q[0]), q1 = _mm256_set_m128i(q[3], q[2]), d0, d1;
        pv = deltas(q0, q1, pv, &d0, &d1);
        _mm256_storeu_si256((__m256i *)(d + 16 * b), d0);
        _mm256_storeu_si256((__m256i *)(d + 16 * b + 8), d1);
    }
    *prev = _mm256_cvtsi256_si32(pv);
    return _mm256_movemask_pd(bad) != 0;
}

void zc_grid_dequantize16_avx2(const int32_t *d, size_t nfull, double step, zmpi_dtype dtype, void *y,
                               uint32_t *prev)
{
    const __m256i last = _mm256_set1_epi32(7);
    const __m256d st = _mm256_set1_pd(step);
    __m256i pv = _mm256_set1_epi32((int)*prev);
    for (size_t b = 0; b < 2 * nfull; b++) { /* 8 values at a time */
        __m256i q = _mm256_add_epi32(prefix8(_mm256_loadu_si256((const __m256i *)(d + 8 * b))), pv);
        pv = _mm256_permutevar8x32_epi32(q, last);
        __m256d lo = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(q)), st);
        __m256d hi = _mm256_mul_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(q, 1)), st);
        if (dtype == ZMPI_FLOAT) {
            float *o = (float *)y + 8 * b;
            _mm_storeu_ps(o, _mm256_cvtpd_ps(lo));
            _mm_storeu_ps(o + 4, _mm256_cvtpd_ps(hi));
        } else {
            double *o = (double *)y + 8 * b;
            _mm256_storeu_pd(o, lo);
            _mm256_storeu_pd(o + 4, hi);
        }
    }
    *prev = (uint32_t)_mm256_cvtsi256_si32(pv);
}

/* ---- grid codes: blocks of 64 values as 32 two's complement bit planes ---- */

unsigned zc_grid_planes64_avx2(const int32_t *v, uint64_t pl[32])
{
    __m256i r[8], o = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) {
        r[k] = _mm256_loadu_si256((const __m256i *)(v + 8 * k));
        o = _mm256_or_si256(o, _mm256_xor_si256(r[k], _mm256_srai_epi32(r[k], 31)));
    }
    __m128i o4 = _mm_or_si128(_mm256_castsi256_si128(o), _mm256_extracti128_si256(o, 1));
    o4 = _mm_or_si128(o4, _mm_shuffle_epi32(o4, 0x4E));
    o4 = _mm_or_si128(o4, _mm_shuffle_epi32(o4, 0xB1));
    uint32_t all = (uint32_t)_mm_cvtsi128_si32(o4);
    unsigned P = (all ? 32u - (unsigned)__builtin_clz(all) : 0u) + 1u; /* with the sign plane */
    for (unsigned g = 0; 8 * g < P; g++) {
        /* byte g of the 64 values in order, in two registers of 32 bytes */
        __m128i b0 = bytes_of(r[0], r[1], (int)(8 * g), 1), b1 = bytes_of(r[2], r[3], (int)(8 * g), 1);
        __m128i b2 = bytes_of(r[4], r[5], (int)(8 * g), 1), b3 = bytes_of(r[6], r[7], (int)(8 * g), 1);
        __m256i lo = _mm256_set_m128i(b1, b0), hi = _mm256_set_m128i(b3, b2);
        for (int j = 7; j >= 0; j--) { /* peel the top bit of every byte */
            pl[8 * g + (unsigned)j] = (uint64_t)(uint32_t)_mm256_movemask_epi8(lo) |
                                      (uint64_t)(uint32_t)_mm256_movemask_epi8(hi) << 32;
            lo = _mm256_add_epi8(lo, lo);
            hi = _mm256_add_epi8(hi, hi);
        }
    }
    return P;
}

void zc_grid_values64_avx2(const uint64_t pl[32], unsigned P, const int32_t *addend, int32_t *out)
{
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2,
                                            3, 3, 3, 3, 3, 3, 3, 3);
    const __m256i bitsel = _mm256_set1_epi64x((long long)0x8040201008040201ull);
    unsigned G = (P + 7) / 8; /* byte groups holding every plane below the sign copies */
    __m256i val[8];
    for (int k = 0; k < 8; k++)
        val[k] = _mm256_setzero_si256();
    for (unsigned g = 0; g < G; g++) {
        __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
        for (int j = 7; j >= 0; j--) {
            unsigned k = 8 * g + (unsigned)j;
            uint64_t w = pl[k < P ? k : P - 1];
            __m256i a = _mm256_set1_epi32((int)(uint32_t)w), b = _mm256_set1_epi32((int)(uint32_t)(w >> 32));
            a = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(a, spread), bitsel), bitsel);
            b = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(b, spread), bitsel), bitsel);
            lo = _mm256_sub_epi8(_mm256_add_epi8(lo, lo), a);
            hi = _mm256_sub_epi8(_mm256_add_epi8(hi, hi), b);
        }
        __m128i q[4] = {_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1), _mm256_castsi256_si128(hi),
                        _mm256_extracti128_si256(hi, 1)};
        __m128i sh = _mm_cvtsi32_si128((int)(8 * g));
        for (int k = 0; k < 4; k++) {
            val[2 * k] = _mm256_or_si256(val[2 * k], _mm256_sll_epi32(_mm256_cvtepu8_epi32(q[k]), sh));
            val[2 * k + 1] =
                _mm256_or_si256(val[2 * k + 1], _mm256_sll_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(q[k], 8)), sh));
        }
    }
    __m128i ext = _mm_cvtsi32_si128(32 - 8 * (int)G); /* sign-extend from bit 8G - 1 */
    for (int k = 0; k < 8; k++) {
        __m256i x = _mm256_sra_epi32(_mm256_sll_epi32(val[k], ext), ext);
        if (addend)
            x = _mm256_add_epi32(x, _mm256_loadu_si256((const __m256i *)(addend + 8 * k)));
        _mm256_storeu_si256((__m256i *)(out + 8 * k), x);
    }
}
