/*
 * Codes on a shared quantisation grid (zmpi_grid_* in zmpi/codec.h): the
 * homomorphic form of the reductions. Values become integer codes
 * q_i = round(x_i / step); the arrays hold the differences d_i = q_i - q_{i-1}
 * (1-D Lorenzo, q_{-1} = 0), which are linear in the codes: the differences
 * of a sum of arrays are the sums of their differences, so partial sums are
 * formed on the differences themselves, exactly (arithmetic modulo 2^32; the
 * caller keeps the true sums below 2^30 in magnitude, so nothing wraps).
 *
 * Packed form: the differences in two's complement bit planes per block of
 * 64, so that two packed arrays are added plane by plane with a carry
 * (zmpi_grid_add: 64 additions in a handful of word operations per plane,
 * without unpacking).
 *   0   u32 magic "ZGR2"
 *   4   u32 check: low 32 bits of XXH3-64 of the blocks, seeded with n
 *   8   u64 n, the number of values
 *   16  ceil(n / 64) blocks of 64 values (the last one zero-padded):
 *       u8 head = P | S << 6: P (0..32) the bits of the block's values in
 *          two's complement (plane P-1 is the sign plane, weight -2^(P-1));
 *          S = 0: P planes follow; S = 1: the sign plane is all zeros and
 *          P-1 planes follow; S = 2: it is all ones and P-1 planes follow.
 *          Head 0: a block of zeros. The encoder writes the smallest P.
 *       the planes, lowest first, u64 little-endian each (bit i: value i).
 * A block costs 1 + 8 * planes bytes; P is the block's largest bit length
 * plus a sign bit, as with fzl's sign and magnitude (fzl.h), on blocks of 64
 * instead of 16: 7 % less ratio than fzl's default blocks on the partial
 * sums of a reduction (bench/codec/reducestep.c), the price of adding packed
 * arrays without unpacking them.
 */
#include <math.h>
#include <xxhash.h>

#include "fzl.h"
#include "grid.h"

#define GRID_MAGIC 0x3252475Au /* "ZGR2" little-endian */
#define GRID_HDR 16
#define GRID_B 64
#define GRID_BLOCK_MAX (1 + 8 * 32) /* a block's largest size */
#define GRID_Q 16 /* the AVX2 quantiser's block */

static int grid_simd(void)
{
#ifdef ZMPI_HAVE_AVX2
    return zc_have_avx2();
#else
    return 0;
#endif
}


size_t zmpi_grid_bound(size_t n)
{
    size_t blocks = n / GRID_B + (n % GRID_B != 0);
    return GRID_HDR + blocks * GRID_BLOCK_MAX;
}

int zc_grid_quantize_impl(const void *x, size_t n, zmpi_dtype dtype, double step, double maxerr, int32_t *d,
                          int simd)
{
    if ((n && (!x || !d)) || (dtype != ZMPI_FLOAT && dtype != ZMPI_DOUBLE) || !(step > 0) || !isfinite(step) ||
        !(maxerr >= 0))
        return ZMPI_ERR_ARG;
    const double inv = 1.0 / step;
    int32_t prev = 0;
    int bad = 0;
    size_t i = 0;
    (void)simd;
#ifdef ZMPI_HAVE_AVX2
    if (simd) {
        i = n / GRID_Q * GRID_Q;
        bad = zc_grid_quantize16_avx2(x, dtype, n / GRID_Q, step, maxerr, d, &prev);
    }
#endif
    /* branch-free over the values: a failure is remembered (its code is 0) */
    for (; i < n; i++) {
        double v = dtype == ZMPI_FLOAT ? (double)((const float *)x)[i] : ((const double *)x)[i];
        double r = nearbyint(v * inv);
        int ok = (fabs(r) < 1073741824.0) & (fabs(v - r * step) <= maxerr);
        int32_t q = ok ? (int32_t)r : 0;
        bad |= !ok;
        d[i] = (int32_t)((uint32_t)q - (uint32_t)prev);
        prev = q;
    }
    return bad ? ZMPI_ERR_ARG : ZMPI_OK;
}

int zc_grid_dequantize_impl(const int32_t *d, size_t n, double step, zmpi_dtype dtype, void *y, int simd)
{
    if ((n && (!d || !y)) || (dtype != ZMPI_FLOAT && dtype != ZMPI_DOUBLE) || !(step > 0) || !isfinite(step))
        return ZMPI_ERR_ARG;
    uint32_t q = 0;
    size_t i = 0;
    (void)simd;
#ifdef ZMPI_HAVE_AVX2
    if (simd) {
        i = n / GRID_Q * GRID_Q;
        zc_grid_dequantize16_avx2(d, n / GRID_Q, step, dtype, y, &q);
    }
#endif
    for (; i < n; i++) {
        q += (uint32_t)d[i];
        double v = (double)(int32_t)q * step;
        if (dtype == ZMPI_FLOAT)
            ((float *)y)[i] = (float)v;
        else
            ((double *)y)[i] = v;
    }
    return ZMPI_OK;
}

/* ---- one block of 64 ---- */

static inline uint64_t get64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8); /* little-endian host (checked by CMake) */
    return v;
}

static inline void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* Bytes of a block with head h, or 0 if h is not a valid head. */
static inline size_t block_bytes(uint8_t h)
{
    unsigned P = h & 63u, S = h >> 6;
    if (P > 32 || S == 3 || (P == 0 && h != 0) || (S && P == 0))
        return 0;
    return 1 + 8 * (size_t)(S ? P - 1 : P);
}

/* Planes are handled as pl[0 .. P-1] with P >= 1: every plane above P-1
 * repeats the sign plane pl[P-1]. */

/* The planes of a block from its bytes at p (valid head, complete);
 * returns their count P. */
static inline unsigned load_planes(const uint8_t *p, uint64_t pl[32])
{
    unsigned P = p[0] & 63u, S = p[0] >> 6, st = S ? P - 1 : P;
    if (P == 0) {
        pl[0] = 0;
        return 1;
    }
    for (unsigned k = 0; k < st; k++)
        pl[k] = get64(p + 1 + 8 * k);
    if (S)
        pl[P - 1] = S == 2 ? ~0ull : 0;
    return P;
}

/* Writes the block of P planes in its smallest form; returns its bytes. */
static inline size_t store_planes(const uint64_t pl[32], unsigned P, uint8_t *o)
{
    while (P > 1 && pl[P - 1] == pl[P - 2])
        P--; /* the top plane only repeats the sign */
    if (P == 1 && pl[0] == 0) {
        o[0] = 0;
        return 1;
    }
    unsigned S = pl[P - 1] == 0 ? 1u : pl[P - 1] == ~0ull ? 2u : 0u, st = S ? P - 1 : P;
    o[0] = (uint8_t)(P | S << 6);
    for (unsigned k = 0; k < st; k++)
        put64(o + 1 + 8 * k, pl[k]);
    return 1 + 8 * (size_t)st;
}

/* The 32 planes of m <= 64 values (zero above m); returns 32. */
static inline unsigned to_planes(const int32_t *v, size_t m, uint64_t pl[32])
{
    memset(pl, 0, 32 * sizeof *pl);
    for (size_t i = 0; i < m; i++) {
        uint32_t u = (uint32_t)v[i];
        for (unsigned k = 0; k < 32; k++)
            pl[k] |= (uint64_t)((u >> k) & 1u) << i;
    }
    return 32;
}

static inline void from_planes(const uint64_t pl[32], unsigned P, size_t m, const int32_t *addend, int32_t *out)
{
    for (size_t i = 0; i < m; i++) {
        uint32_t u = 0;
        for (unsigned k = 0; k < 32; k++)
            u |= (uint32_t)((pl[k < P ? k : P - 1] >> i) & 1u) << k;
        out[i] = (int32_t)((addend ? (uint32_t)addend[i] : 0u) + u);
    }
}

static inline unsigned grid_planes(const int32_t *v, size_t m, uint64_t pl[32], int simd)
{
    (void)simd;
#ifdef ZMPI_HAVE_AVX2
    if (simd && m == GRID_B)
        return zc_grid_planes64_avx2(v, pl);
#endif
    return to_planes(v, m, pl);
}

static inline void grid_values(const uint64_t pl[32], unsigned P, size_t m, const int32_t *addend, int32_t *out,
                               int simd)
{
    (void)simd;
#ifdef ZMPI_HAVE_AVX2
    if (simd && m == GRID_B) {
        zc_grid_values64_avx2(pl, P, addend, out);
        return;
    }
#endif
    from_planes(pl, P, m, addend, out);
}

/* Stores a block of P planes at o + pos (directly when a worst-case block
 * fits, else through a copy), or returns ZMPI_ERR_DST_TOO_SMALL. */
#define GRID_STORE(pl, P, o, pos, cap)                                                                      \
    do {                                                                                                    \
        if ((cap) - (pos) >= GRID_BLOCK_MAX) {                                                              \
            (pos) += store_planes((pl), (P), (o) + (pos));                                                  \
        } else {                                                                                            \
            uint8_t blk_[GRID_BLOCK_MAX];                                                                   \
            size_t b_ = store_planes((pl), (P), blk_);                                                      \
            if ((cap) - (pos) < b_)                                                                         \
                return ZMPI_ERR_DST_TOO_SMALL;                                                              \
            memcpy((o) + (pos), blk_, b_);                                                                  \
            (pos) += b_;                                                                                    \
        }                                                                                                   \
    } while (0)

static uint32_t grid_check(const uint8_t *blocks, size_t len, uint64_t n)
{
    return (uint32_t)XXH3_64bits_withSeed(blocks, len, n);
}

/* Validates a packed array of n values; on success *blocks points at its
 * first block. */
static int grid_open(const uint8_t *p, size_t size, size_t n, int verify)
{
    if (size < GRID_HDR || zc_get_u32(p) != GRID_MAGIC || zc_get_u64(p + 8) != (uint64_t)n)
        return ZMPI_ERR_CORRUPT;
    if (verify && zc_get_u32(p + 4) != grid_check(p + GRID_HDR, size - GRID_HDR, n))
        return ZMPI_ERR_CORRUPT;
    return ZMPI_OK;
}

static void grid_close(uint8_t *o, size_t len, size_t n)
{
    zc_put_u32(o, GRID_MAGIC);
    zc_put_u32(o + 4, grid_check(o + GRID_HDR, len, n));
    zc_put_u64(o + 8, n);
}

ptrdiff_t zc_grid_pack_impl(const int32_t *d, size_t n, void *dst, size_t cap, int simd)
{
    if ((n && !d) || !dst)
        return ZMPI_ERR_ARG;
    uint8_t *o = dst;
    size_t pos = GRID_HDR;
    if (cap < GRID_HDR)
        return ZMPI_ERR_DST_TOO_SMALL;
    for (size_t done = 0; done < n; done += GRID_B) {
        size_t m = n - done < GRID_B ? n - done : GRID_B;
        uint64_t pl[32];
        unsigned P = grid_planes(d + done, m, pl, simd);
        GRID_STORE(pl, P, o, pos, cap);
    }
    grid_close(o, pos - GRID_HDR, n);
    return (ptrdiff_t)pos;
}

int zc_grid_unpack_impl(const void *src, size_t size, const int32_t *addend, int32_t *out, size_t n, int simd)
{
    if (!src || (n && !out))
        return ZMPI_ERR_ARG;
    const uint8_t *p = src;
    int rc = grid_open(p, size, n, 1);
    if (rc)
        return rc;
    size_t pos = GRID_HDR;
    for (size_t done = 0; done < n; done += GRID_B) {
        size_t m = n - done < GRID_B ? n - done : GRID_B, b;
        if (pos >= size || !(b = block_bytes(p[pos])) || b > size - pos)
            return ZMPI_ERR_CORRUPT;
        uint64_t pl[32];
        unsigned P = load_planes(p + pos, pl);
        grid_values(pl, P, m, addend ? addend + done : NULL, out + done, simd);
        pos += b;
    }
    return pos == size ? ZMPI_OK : ZMPI_ERR_CORRUPT;
}

ptrdiff_t zmpi_grid_add(const void *a, size_t alen, const void *b, size_t blen, size_t n, void *dst, size_t cap)
{
    if (!a || !b || !dst)
        return ZMPI_ERR_ARG;
    const uint8_t *pa = a, *pb = b;
    uint8_t *o = dst;
    int rc = grid_open(pa, alen, n, 1);
    if (!rc)
        rc = grid_open(pb, blen, n, 1);
    if (rc)
        return rc;
    if (cap < GRID_HDR)
        return ZMPI_ERR_DST_TOO_SMALL;
    size_t ia = GRID_HDR, ib = GRID_HDR, pos = GRID_HDR;
    for (size_t done = 0; done < n; done += GRID_B) {
        size_t ba, bb;
        if (ia >= alen || ib >= blen || !(ba = block_bytes(pa[ia])) || !(bb = block_bytes(pb[ib])) ||
            ba > alen - ia || bb > blen - ib)
            return ZMPI_ERR_CORRUPT;
        uint64_t x[32], y[32], s[32], carry = 0;
        unsigned Pa = load_planes(pa + ia, x), Pb = load_planes(pb + ib, y);
        /* the sum needs one plane more than the wider input (modulo 2^32: at most 32) */
        unsigned P = (Pa > Pb ? Pa : Pb) + 1;
        P = P < 32 ? P : 32;
        for (unsigned k = Pa; k < P; k++)
            x[k] = x[Pa - 1];
        for (unsigned k = Pb; k < P; k++)
            y[k] = y[Pb - 1];
        for (unsigned k = 0; k < P; k++) {
            uint64_t t = x[k] ^ y[k];
            s[k] = t ^ carry;
            carry = (x[k] & y[k]) | (carry & t);
        }
        GRID_STORE(s, P, o, pos, cap);
        ia += ba;
        ib += bb;
    }
    if (ia != alen || ib != blen)
        return ZMPI_ERR_CORRUPT;
    grid_close(o, pos - GRID_HDR, n);
    return (ptrdiff_t)pos;
}

int zmpi_grid_quantize(const void *x, size_t n, zmpi_dtype dtype, double step, double maxerr, int32_t *d)
{
    return zc_grid_quantize_impl(x, n, dtype, step, maxerr, d, grid_simd());
}

int zmpi_grid_dequantize(const int32_t *d, size_t n, double step, zmpi_dtype dtype, void *y)
{
    return zc_grid_dequantize_impl(d, n, step, dtype, y, grid_simd());
}

ptrdiff_t zmpi_grid_pack(const int32_t *d, size_t n, void *dst, size_t cap)
{
    return zc_grid_pack_impl(d, n, dst, cap, grid_simd());
}

int zmpi_grid_unpack(const void *src, size_t size, const int32_t *addend, int32_t *out, size_t n)
{
    return zc_grid_unpack_impl(src, size, addend, out, n, grid_simd());
}
