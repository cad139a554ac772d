/*
 * xorlzc.c - lossless XOR / leading-zero-nibble codecs (XOR with the previous value or message, then a count of leading zero nibbles).
 *
 * xorlzc:       d_i = bits(x_i) XOR bits(x_{i-1}) within the segment
 *               (x_{-1} = 0).
 * xorlzc-inter: d_i = bits(x_i) XOR bits(h_i), h = previous message of the
 *               channel for this segment; a message that resets the channel
 *               (no history) is coded as xorlzc, so that the first message
 *               of a channel compresses as well as the intra-step codec.
 *
 * Segment payload: the LZn codes of d_0 .. d_{n-1} (xorcore.h) with K = 32
 * (float: count 0..8, then 32 - 4c bits) or K = 64 (double: count 0..15,
 * then 64 - 4c bits), LSB-first, zero-padded to a byte. Nothing else.
 */
#include "xorcore.h"

static size_t xl_esz(zmpi_dtype t) {
    return t == ZMPI_DOUBLE ? 8 : t == ZMPI_FLOAT ? 4 : 0;
}

/* ref: hist (inter) or NULL; intra: XOR with the previous element. */
static ptrdiff_t xl_encode(const zc_seg *s, const void *src, const void *ref, int intra,
                           uint8_t *dst, size_t cap) {
    size_t n = s->n;
    zx_bw w;
    zx_bw_init(&w, dst, cap);
    if (s->dtype == ZMPI_DOUBLE) {
        uint64_t prev = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t x = zx_ld64(src, i);
            uint64_t h = intra ? prev : ref ? zx_ld64(ref, i) : 0;
            zx_put_lz(&w, x ^ h, 64);
            if (ZX_UNLIKELY(w.err)) return ZMPI_ERR_DST_TOO_SMALL;
            prev = x;
        }
    } else if (s->dtype == ZMPI_FLOAT) {
        uint32_t prev = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t x = zx_ld32(src, i);
            uint32_t h = intra ? prev : ref ? zx_ld32(ref, i) : 0;
            zx_put_lz(&w, (uint64_t)(x ^ h), 32);
            if (ZX_UNLIKELY(w.err)) return ZMPI_ERR_DST_TOO_SMALL;
            prev = x;
        }
    } else {
        return ZMPI_ERR_DTYPE;
    }
    return zx_bw_finish(&w, dst);
}

static int xl_decode(const zc_seg *s, const void *ref, int intra, const uint8_t *src, size_t size,
                     void *dst) {
    size_t n = s->n;
    zx_br r;
    zx_br_init(&r, src, size);
    if (s->dtype == ZMPI_DOUBLE) {
        /* every element costs >= 8 bits */
        if (n > size) return ZMPI_ERR_CORRUPT;
        uint64_t prev = 0, d;
        for (size_t i = 0; i < n; i++) {
            if (ZX_UNLIKELY(zx_get_lz(&r, 64, 15, &d))) return ZMPI_ERR_CORRUPT;
            uint64_t h = intra ? prev : ref ? zx_ld64(ref, i) : 0;
            prev = h ^ d;
            zx_st64(dst, i, prev);
        }
    } else if (s->dtype == ZMPI_FLOAT) {
        /* every element costs >= 4 bits */
        if (n / 2 > size) return ZMPI_ERR_CORRUPT;
        uint32_t prev = 0;
        uint64_t d;
        for (size_t i = 0; i < n; i++) {
            if (ZX_UNLIKELY(zx_get_lz(&r, 32, 8, &d))) return ZMPI_ERR_CORRUPT;
            uint32_t h = intra ? prev : ref ? zx_ld32(ref, i) : 0;
            prev = h ^ (uint32_t)d;
            zx_st32(dst, i, prev);
        }
    } else {
        return ZMPI_ERR_CORRUPT;
    }
    return zx_br_finish(&r) ? ZMPI_ERR_CORRUPT : ZMPI_OK;
}

/* ---- xorlzc ---- */
static ptrdiff_t xorlzc_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap) {
    return xl_encode(s, src, NULL, 1, dst, cap);
}
static int xorlzc_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst) {
    return xl_decode(s, NULL, 1, src, size, dst);
}

/* ---- xorlzc-inter ---- */
static ptrdiff_t xorlzci_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap) {
    return xl_encode(s, src, s->hist, s->hist == NULL, dst, cap);
}
static int xorlzci_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst) {
    return xl_decode(s, s->hist, s->hist == NULL, src, size, dst);
}
static void xorlzci_hist_update(const zc_seg *s, const void *out, void *hist) {
    size_t esz = xl_esz(s->dtype);
    if (esz && s->n) memcpy(hist, out, s->n * esz);
}
static size_t xorlzci_hist_elem_size(zmpi_dtype dtype) { return xl_esz(dtype); }

const zc_codec_ops zc_xorlzc_ops = {
    .id = ZMPI_CODEC_XORLZC,
    .name = "xorlzc",
    .description = "lossless: XOR with the previous value, leading-zero-nibble count + remaining bits",
    .kind = ZMPI_KIND_LOSSLESS,
    .inter = 0,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = xorlzc_encode,
    .decode = xorlzc_decode,
    .hist_update = NULL,
    .hist_elem_size = NULL,
    .param_check = NULL,
};

const zc_codec_ops zc_xorlzc_inter_ops = {
    .id = ZMPI_CODEC_XORLZC_INTER,
    .name = "xorlzc-inter",
    .description = "lossless: XOR with the previous message of the channel, leading-zero-nibble count + remaining bits",
    .kind = ZMPI_KIND_LOSSLESS,
    .inter = 1,
    .dtypes = (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = xorlzci_encode,
    .decode = xorlzci_decode,
    .hist_update = xorlzci_hist_update,
    .hist_elem_size = xorlzci_hist_elem_size,
    .param_check = NULL,
};
