/*
 * fzl: the fZ-light-class error-bounded codec (quantise to multiples of 2 eb, 1-D Lorenzo, fixed-length bit packing per block), shared pieces of
 * the portable implementation (fzl.c) and the AVX2 kernels (fzl_avx2.c).
 *
 * Segment payload (after the framework's mode byte):
 *   u32 nout        number of outliers
 *   i32 q0          quantisation code of the segment's first value (0 if it
 *                   is an outlier); the Lorenzo predictor starts from it
 *   blocks          ceil(n / B) blocks of B deltas d_i = q_i - q_{i-1}, the
 *                   last one padded with zeros:
 *                     u8 head = L | S << 6: L = bit length of max |d_i| (0..31),
 *                        S = 0 explicit sign bits, 1 all d_i >= 0, 2 all d_i <= 0
 *                        (head 0: constant block, nothing follows)
 *                     [B/8 bytes of sign bits, if S = 0]
 *                     L bit planes of |d_i|, lowest first, B/8 bytes each
 *                     (bit i of a plane, little-endian, belongs to d_i)
 *   outliers        nout records {u32 position, raw element}, positions
 *                   strictly decreasing; an outlier's code is the previous
 *                   code (its delta is 0) and its value is stored exactly.
 *
 * Quantisation (identical on both ends, IEEE arithmetic, no FMA):
 *   float:  q = rint(x * invf); x' = (float)q * twof, invf = (float)(1/(2eb)),
 *           twof = (float)(2eb); accepted iff |q| < 2^30 and |x - x'| < ebf,
 *           ebf = the largest float <= eb. Otherwise x is an outlier.
 *   double: the same in double with eb itself.
 * Because the check is made on the exact value the decoder will produce,
 * |x - x'| <= eb holds for every element whatever the input.
 */
#ifndef ZMPI_CODEC_FZL_H
#define ZMPI_CODEC_FZL_H

#include "internal.h"

#define FZL_QLIM 1073741824.0 /* 2^30: |q| below this keeps |d| < 2^31 */

typedef struct fzl_q {
    float invf, twof, ebf;
    double inv, two, eb;
} fzl_q;

void zc_fzl_qparams(double eb, fzl_q *q);

/* Encoder state of one segment. Blocks are written forward from out;
 * outlier records backward from orec (they are moved into place at the end). */
typedef struct fzl_enc {
    uint8_t *out, *orec, *end;
    size_t es;       /* element size */
    uint32_t nout;
    int32_t prev;    /* last code */
} fzl_enc;

/* Records an outlier; returns 0 or ZMPI_ERR_DST_TOO_SMALL. */
static inline int fzl_add_outlier(fzl_enc *e, uint32_t pos, const void *val)
{
    size_t rs = 4 + e->es;
    if ((size_t)(e->orec - e->out) < rs)
        return ZMPI_ERR_DST_TOO_SMALL;
    e->orec -= rs;
    zc_put_u32(e->orec, pos);
    memcpy(e->orec + 4, val, e->es);
    e->nout++;
    return 0;
}

/* Portable block coder: encodes m <= B values starting at element index
 * base of x (float or double), zero-padding to B. */
int zc_fzl_block_scalar(fzl_enc *e, const fzl_q *qp, zmpi_dtype dtype, const void *x, size_t base,
                        unsigned m, unsigned B);
/* Portable block decoder; returns bytes consumed or ZMPI_ERR_CORRUPT. */
ptrdiff_t zc_fzl_unblock_scalar(const uint8_t *p, size_t avail, const fzl_q *qp, zmpi_dtype dtype,
                                void *y, size_t base, unsigned m, unsigned B, uint32_t *prev);

/* Segment coders; simd = 0 forces the portable path (tests compare both). */
ptrdiff_t zc_fzl_encode_impl(const zc_seg *s, const void *src, uint8_t *dst, size_t cap, int simd);
int zc_fzl_decode_impl(const zc_seg *s, const uint8_t *src, size_t size, void *dst, int simd);

#ifdef ZMPI_HAVE_AVX2
int zc_have_avx2(void);
/* Full 16-value blocks [0, nfull*16) of a segment; same format as the scalar
 * coder. Return 0 / bytes consumed like the scalar ones. */
int zc_fzl_encode16_avx2(fzl_enc *e, const fzl_q *qp, zmpi_dtype dtype, const void *x,
                         size_t nfull);
ptrdiff_t zc_fzl_decode16_avx2(const uint8_t *p, size_t avail, const fzl_q *qp, zmpi_dtype dtype,
                               void *y, size_t nfull, uint32_t *prev);
/* Grid quantisation and decoding of nfull 16-value blocks (the scalar
 * loops of grid.c, same results); *prev carries the last code. quantize
 * returns 1 if some value failed (its code is then 0). */
int zc_grid_quantize16_avx2(const void *x, zmpi_dtype dtype, size_t nfull, double step, double maxerr, int32_t *d,
                            int32_t *prev);
void zc_grid_dequantize16_avx2(const int32_t *d, size_t nfull, double step, zmpi_dtype dtype, void *y,
                               uint32_t *prev);
/* 64 values <-> their two's complement bit planes (grid.c's blocks):
 * planes64 writes pl[0 .. P-1] and returns P (the values' bit length plus
 * the sign plane); values64 reads pl[0 .. P-1], the planes above repeating
 * pl[P-1]. */
unsigned zc_grid_planes64_avx2(const int32_t *v, uint64_t pl[32]);
void zc_grid_values64_avx2(const uint64_t pl[32], unsigned P, const int32_t *addend, int32_t *out);
#endif

#endif
