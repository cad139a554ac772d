/*
 * Internal interface between the stream framework (stream.c) and the
 * per-codec segment coders. Nothing here includes mpi.h.
 *
 * A stream is a header, an index (one entry per segment) and the segments.
 * The framework cuts the input into independent segments and calls the
 * codec's encode/decode on each, possibly from several OpenMP threads at
 * once: segment coders must be pure functions of their arguments.
 *
 * Segment framing (owned by the framework): every segment starts with one
 * mode byte, SEG_CODEC (the codec's own payload follows), SEG_STORED (the raw
 * elements follow) or SEG_ZSTD (a zstd frame of the raw elements follows).
 * A codec's encode returns ZMPI_ERR_DST_TOO_SMALL when its output would not
 * fit in cap bytes; the framework then stores the segment raw, so a stream
 * never exceeds the raw size by more than the header, index and one byte per
 * segment.
 */
#ifndef ZMPI_CODEC_INTERNAL_H
#define ZMPI_CODEC_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "zmpi/codec.h"

enum { SEG_CODEC = 0, SEG_STORED = 1, SEG_ZSTD = 2 };

/* Everything a segment coder may look at. */
typedef struct zc_seg {
    zmpi_dtype dtype;
    size_t n;          /* elements in this segment (>= 1) */
    double eb;         /* absolute bound (> 0) for bounded codecs; 0 otherwise */
    uint32_t param;    /* codec parameter as stored in the stream header */
    const void *hist;  /* inter-step codecs: previous message's elements for this
                          segment in the codec's working type; NULL = zeros */
    uint32_t dim_r, dim_p; /* shape hints (fzr's encoder): row and plane length, 0 = none */
} zc_seg;

/* encode: compress s->n elements at src into dst (at most cap bytes).
 *   Returns bytes written, or ZMPI_ERR_DST_TOO_SMALL if they would exceed
 *   cap (the caller then stores raw), or another negative error.
 * decode: decode exactly size bytes at src into s->n elements at dst.
 *   Must validate everything against size; returns ZMPI_OK or
 *   ZMPI_ERR_CORRUPT; never reads src[size] or beyond, never writes beyond
 *   n elements of dst.
 * hist_update (inter-step codecs only): writes into hist the working-type
 *   elements the next message will be XORed against, given the elements
 *   the receiver reconstructs (out, dtype elements). Both ends call it with
 *   the same out, so they stay in lock-step.
 * param_check: validates/normalises the codec parameter for dtype;
 *   returns the value to store in the header or a negative error.
 */
typedef struct zc_codec_ops {
    zmpi_codec id;
    const char *name;
    const char *description;
    int kind;          /* ZMPI_KIND_* */
    int inter;         /* needs a channel */
    unsigned dtypes;   /* bit mask of accepted dtypes: 1u << ZMPI_FLOAT ... */
    ptrdiff_t (*encode)(const zc_seg *s, const void *src, uint8_t *dst, size_t cap);
    int (*decode)(const zc_seg *s, const uint8_t *src, size_t size, void *dst);
    void (*hist_update)(const zc_seg *s, const void *out, void *hist);
    size_t (*hist_elem_size)(zmpi_dtype dtype); /* inter-step working element size */
    long long (*param_check)(zmpi_dtype dtype, long long requested);
} zc_codec_ops;

/* The registry (codecs.c): ops for an id, or NULL. */
const zc_codec_ops *zc_codec_get(zmpi_codec id);

/* Codec tables, one per codec file. */
extern const zc_codec_ops zc_stored_ops, zc_zstd_ops, zc_fzl_ops, zc_xorlzc_ops,
    zc_xorlzc_inter_ops, zc_trunc_ops, zc_dp2sp_ops, zc_trunc_inter_ops, zc_dp2sp_inter_ops,
    zc_linpred_byte_ops, zc_linpred_bit_ops, zc_fzr_ops;

/* ---- zstd helpers shared by the zstd codec and the framework's SEG_ZSTD ---- */
ptrdiff_t zc_zstd_compress(const void *src, size_t size, uint8_t *dst, size_t cap, int level);
int zc_zstd_decompress(const uint8_t *src, size_t size, void *dst, size_t expect);

/* ---- little-endian byte access (unaligned-safe) ---- */
static inline void zc_put_u32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t zc_get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline void zc_put_u64(uint8_t *p, uint64_t v) {
    zc_put_u32(p, (uint32_t)v); zc_put_u32(p + 4, (uint32_t)(v >> 32));
}
static inline uint64_t zc_get_u64(const uint8_t *p) {
    return (uint64_t)zc_get_u32(p) | ((uint64_t)zc_get_u32(p + 4) << 32);
}
static inline void zc_put_f64(uint8_t *p, double d) { uint64_t u; memcpy(&u, &d, 8); zc_put_u64(p, u); }
static inline double zc_get_f64(const uint8_t *p) { uint64_t u = zc_get_u64(p); double d; memcpy(&d, &u, 8); return d; }

/* The library assumes a little-endian host with IEEE-754 float/double;
 * CMake checks this at configure time. Raw element copies are memcpy. */

#endif
