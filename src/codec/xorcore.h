/*
 * xorcore.h - bit packing, leading-zero-nibble (LZn) coding and exception
 * lists shared by the XOR codecs (xorlzc.c) and the fixed-precision codecs
 * (trunc.c). Header-only (static inline); no state, thread-safe.
 *
 * Bit order: LSB-first. A field of len bits is placed in the lowest free bits
 * of the bit stream; the stream is cut into bytes in order, the last byte is
 * padded with zero bits. Decoders require exactly that padding and no byte
 * after it.
 *
 * LZn code of a K-bit word d (K = 9..64): a 4-bit count c of leading zero
 * nibbles of d (counted from bit K-1 down), c <= cmax(K) = min(15, K/4),
 * followed by the low K - 4c bits of d. The encoder always emits the largest
 * c (saturating at cmax); for K = 64 a zero word therefore costs 4 + 4 bits,
 * for K = 32 it costs 4 bits.
 *
 * Exception list (fixed-precision codecs): LEB128 count E (minimal encoding,
 * E <= n), then E positions as u32 LE (strictly increasing, < n), then the E
 * raw element values (dtype size, LE).
 */
#ifndef ZMPI_CODEC_XORCORE_H
#define ZMPI_CODEC_XORCORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"

#if defined(__GNUC__) || defined(__clang__)
#define ZX_LIKELY(x) __builtin_expect(!!(x), 1)
#define ZX_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define ZX_LIKELY(x) (x)
#define ZX_UNLIKELY(x) (x)
#endif

/* Number of leading zero bits of a non-zero 64-bit word. */
static inline unsigned zx_clz64(uint64_t v) {
#if defined(__GNUC__) || defined(__clang__)
    return (unsigned)__builtin_clzll(v);
#else
    unsigned n = 0;
    while (!(v & 0x8000000000000000ull)) { v <<= 1; n++; }
    return n;
#endif
}

/* ---- element access (unaligned-safe; little-endian host assumed) ---- */
static inline uint64_t zx_ld64(const void *p, size_t i) {
    uint64_t v; memcpy(&v, (const uint8_t *)p + 8 * i, 8); return v;
}
static inline uint32_t zx_ld32(const void *p, size_t i) {
    uint32_t v; memcpy(&v, (const uint8_t *)p + 4 * i, 4); return v;
}
static inline void zx_st64(void *p, size_t i, uint64_t v) { memcpy((uint8_t *)p + 8 * i, &v, 8); }
static inline void zx_st32(void *p, size_t i, uint32_t v) { memcpy((uint8_t *)p + 4 * i, &v, 4); }
/* Element i of a float (esz 4) or double (esz 8) array as a bit pattern. */
static inline uint64_t zx_ld(const void *p, size_t i, size_t esz) {
    return esz == 8 ? zx_ld64(p, i) : (uint64_t)zx_ld32(p, i);
}
static inline void zx_st(void *p, size_t i, size_t esz, uint64_t v) {
    if (esz == 8) zx_st64(p, i, v); else zx_st32(p, i, (uint32_t)v);
}

/* ---- bit writer ---- */
typedef struct zx_bw {
    uint8_t *p, *end; /* next byte to write, end of the buffer */
    uint64_t acc;     /* pending bits (nb < 8 between calls) */
    unsigned nb;
    int err;          /* set when the buffer is full; nothing more is written */
} zx_bw;

static inline void zx_bw_init(zx_bw *w, uint8_t *dst, size_t cap) {
    w->p = dst; w->end = dst + cap; w->acc = 0; w->nb = 0; w->err = 0;
}

static inline void zx_bw_slow(zx_bw *w) {
    while (w->nb >= 8) {
        if (w->p == w->end) { w->err = 1; w->nb = 0; w->acc = 0; return; }
        *w->p++ = (uint8_t)w->acc;
        w->acc >>= 8;
        w->nb -= 8;
    }
}

/* Appends the low len bits of v (len <= 56, v < 2^len). */
static inline void zx_put(zx_bw *w, uint64_t v, unsigned len) {
    w->acc |= v << w->nb;
    w->nb += len;
    if (ZX_LIKELY(w->end - w->p >= 8)) {
        unsigned nbytes = w->nb >> 3; /* <= 7 since nb <= 63 */
        memcpy(w->p, &w->acc, 8);
        w->p += nbytes;
        w->acc >>= nbytes * 8;
        w->nb &= 7;
    } else {
        zx_bw_slow(w);
    }
}

/* Appends len <= 64 bits. */
static inline void zx_put_wide(zx_bw *w, uint64_t v, unsigned len) {
    if (len <= 56) { zx_put(w, v, len); return; }
    zx_put(w, v & 0xffffffffu, 32);
    zx_put(w, v >> 32, len - 32);
}

/* Flushes the last partial byte. Returns bytes written since `start`, or
 * ZMPI_ERR_DST_TOO_SMALL. */
static inline ptrdiff_t zx_bw_finish(zx_bw *w, const uint8_t *start) {
    if (w->err) return ZMPI_ERR_DST_TOO_SMALL;
    w->nb = (w->nb + 7) & ~7u; /* pad with zero bits */
    zx_bw_slow(w);
    if (w->err) return ZMPI_ERR_DST_TOO_SMALL;
    return w->p - start;
}

/* ---- bit reader ---- */
typedef struct zx_br {
    const uint8_t *p, *end;
    uint64_t acc; /* the low nb bits are valid; bits above are the next stream
                     bits again (or zero), never used unmasked */
    unsigned nb;
} zx_br;

static inline void zx_br_init(zx_br *r, const uint8_t *src, size_t size) {
    r->p = src; r->end = src + size; r->acc = 0; r->nb = 0;
}

/* Afterwards nb >= 56 unless the input is exhausted. */
static inline void zx_refill(zx_br *r) {
    if (ZX_LIKELY(r->end - r->p >= 8)) {
        uint64_t v;
        memcpy(&v, r->p, 8);
        r->acc |= v << r->nb;
        r->p += (63 - r->nb) >> 3;
        r->nb |= 56;
    } else {
        while (r->nb <= 56 && r->p < r->end) {
            r->acc |= (uint64_t)*r->p++ << r->nb;
            r->nb += 8;
        }
    }
}

/* Takes len <= 63 bits; the caller has checked len <= nb. */
static inline uint64_t zx_take(zx_br *r, unsigned len) {
    uint64_t v = r->acc & ((UINT64_C(1) << len) - 1);
    r->acc >>= len;
    r->nb -= len;
    return v;
}

/* Reads len <= 64 bits into *v; returns 0 or -1 if the input is exhausted. */
static inline int zx_get_wide(zx_br *r, unsigned len, uint64_t *v) {
    zx_refill(r);
    if (ZX_LIKELY(len <= r->nb)) { *v = zx_take(r, len); return 0; }
    if (len <= 32 || r->nb < 32) return -1;
    uint64_t lo = zx_take(r, 32);
    zx_refill(r);
    if (r->nb < len - 32) return -1;
    *v = lo | (zx_take(r, len - 32) << 32);
    return 0;
}

/* 0 if the whole input was consumed with zero padding in the last byte. */
static inline int zx_br_finish(zx_br *r) {
    zx_refill(r);
    if (r->p != r->end || r->nb >= 8) return -1;
    if (r->acc & ((UINT64_C(1) << r->nb) - 1)) return -1;
    return 0;
}

/* ---- LZn code of K-bit words ---- */
static inline unsigned zx_lz_cmax(unsigned K) { return K / 4 < 15 ? K / 4 : 15; }

/* Appends the LZn code of d (d < 2^K, 9 <= K <= 64). */
static inline void zx_put_lz(zx_bw *w, uint64_t d, unsigned K) {
    uint64_t t = d << (64 - K) | 1; /* K == 64: shift 0 */
    unsigned lz = zx_clz64(t);      /* d == 0 gives 63 >= K (or c saturates) */
    if (lz > K) lz = K;
    unsigned c = lz >> 2;
    if (c > 15) c = 15;
    unsigned L = K - 4 * c;
    if (L <= 52) {
        zx_put(w, (d << 4) | c, L + 4);
    } else {
        zx_put(w, ((d & 0x0fffffffu) << 4) | c, 32);
        zx_put(w, d >> 28, L - 28);
    }
}

/* Reads one LZn-coded K-bit word; cmax = zx_lz_cmax(K). 0 or -1 (corrupt). */
static inline int zx_get_lz(zx_br *r, unsigned K, unsigned cmax, uint64_t *d) {
    zx_refill(r);
    if (ZX_UNLIKELY(r->nb < 4)) return -1;
    unsigned c = (unsigned)(r->acc & 15);
    if (ZX_UNLIKELY(c > cmax)) return -1;
    r->acc >>= 4;
    r->nb -= 4;
    unsigned L = K - 4 * c;
    if (ZX_LIKELY(L <= r->nb)) { *d = zx_take(r, L); return 0; }
    if (L <= 32 || r->nb < 32) return -1;
    uint64_t lo = zx_take(r, 32);
    zx_refill(r);
    if (r->nb < L - 32) return -1;
    *d = lo | (zx_take(r, L - 32) << 32);
    return 0;
}

/* ---- LEB128 count ---- */
static inline size_t zx_varint_len(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}
static inline size_t zx_put_varint(uint8_t *p, uint64_t v) {
    size_t n = 0;
    while (v >= 0x80) { p[n++] = (uint8_t)(v | 0x80); v >>= 7; }
    p[n++] = (uint8_t)v;
    return n;
}
/* Reads a minimal LEB128 value < 2^35 from at most size bytes. Returns the
 * bytes used, or 0 if malformed. */
static inline size_t zx_get_varint(const uint8_t *p, size_t size, uint64_t *v) {
    uint64_t x = 0;
    for (size_t i = 0; i < size && i < 5; i++) {
        x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            if (i > 0 && p[i] == 0) return 0; /* non-minimal */
            *v = x;
            return i + 1;
        }
    }
    return 0;
}

/* Parses the exception-list header of a fixed-precision segment payload:
 * on success *ne = count, *pos / *raw point at the positions and raw values
 * (validated: strictly increasing, < n) and the return value is the header
 * size in bytes. Returns 0 if corrupt. */
static inline size_t zx_exc_parse(const uint8_t *src, size_t size, size_t n, size_t esz,
                                  size_t *ne, const uint8_t **pos, const uint8_t **raw) {
    uint64_t e;
    size_t h = zx_get_varint(src, size, &e);
    if (h == 0 || e > n) return 0;
    if (e > (size - h) / (4 + esz)) return 0;
    *ne = (size_t)e;
    *pos = src + h;
    *raw = src + h + 4 * e;
    uint64_t prev = 0;
    for (size_t k = 0; k < e; k++) {
        uint64_t q = zc_get_u32(*pos + 4 * k);
        if (q >= n || (k > 0 && q <= prev)) return 0;
        prev = q;
    }
    return h + (size_t)e * (4 + esz);
}

#endif
