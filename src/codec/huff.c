/* Canonical Huffman coding of byte symbols; format in huff.h. */
#include <stdlib.h>
#include <string.h>

#include "huff.h"
#include "internal.h"

#define NSTREAM 4u
_Static_assert(HUFF_LMAX <= 13, "four codes must fit in a 56-bit refill");
#define HEAD (1u + 128u + 4u * (NSTREAM - 1u))

size_t zc_huff_bound(size_t n)
{
    return HEAD + (n * HUFF_LMAX + 7) / 8 + NSTREAM;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Huffman code lengths of the symbols with count > 0 (at most 256), limited
 * to HUFF_LMAX: two-queue construction over the symbols sorted by count,
 * then codes longer than the limit are cut and the Kraft sum restored by
 * lengthening the longest codes still below it. */
static void code_lengths(const uint64_t cnt[256], uint8_t len[256])
{
    int sym[256], m = 0;
    memset(len, 0, 256);
    for (int s = 0; s < 256; s++)
        if (cnt[s])
            sym[m++] = s;
    if (m == 1) {
        len[sym[0]] = 1;
        return;
    }
    /* sort by count, then symbol: keys count << 8 | symbol (counts < 2^32) */
    uint64_t key[256];
    for (int i = 0; i < m; i++)
        key[i] = cnt[sym[i]] << 8 | (uint64_t)sym[i];
    qsort(key, (size_t)m, sizeof key[0], cmp_u64);
    for (int i = 0; i < m; i++)
        sym[i] = (int)(key[i] & 255u);
    uint64_t w[511];
    int parent[511];
    for (int i = 0; i < m; i++)
        w[i] = cnt[sym[i]];
    int leaf = 0, inner = m, made = m;
    for (int k = 0; k < m - 1; k++) {
        int pick[2];
        for (int t = 0; t < 2; t++) {
            if (leaf < m && (inner == made || w[leaf] <= w[inner]))
                pick[t] = leaf++;
            else
                pick[t] = inner++;
        }
        w[made] = w[pick[0]] + w[pick[1]];
        parent[pick[0]] = parent[pick[1]] = made;
        made++;
    }
    int depth[511];
    depth[made - 1] = 0;
    for (int i = made - 2; i >= 0; i--)
        depth[i] = depth[parent[i]] + 1;
    /* how many codes of each length, depths beyond the limit cut to it */
    unsigned bl[HUFF_LMAX + 1] = {0};
    uint32_t kraft = 0, full = 1u << HUFF_LMAX;
    for (int i = 0; i < m; i++) {
        unsigned d = depth[i] > (int)HUFF_LMAX ? HUFF_LMAX : (unsigned)depth[i];
        bl[d]++;
        kraft += 1u << (HUFF_LMAX - d);
    }
    /* restore the Kraft sum: move codes from the longest length below the limit one level down */
    while (kraft > full) {
        unsigned l = HUFF_LMAX - 1;
        while (bl[l] == 0)
            l--;
        bl[l]--;
        bl[l + 1]++;
        kraft -= 1u << (HUFF_LMAX - l - 1u);
    }
    /* the shortest lengths to the most frequent symbols (sym[] ascends by count) */
    int i = m - 1;
    for (unsigned l = 1; l <= HUFF_LMAX; l++)
        for (unsigned c = 0; c < bl[l]; c++)
            len[sym[i--]] = (uint8_t)l;
}

/* Canonical codes (first bit lowest) from lengths. */
static void canonical(const uint8_t len[256], uint16_t code[256])
{
    unsigned nl[HUFF_LMAX + 1] = {0}, next[HUFF_LMAX + 2];
    for (int s = 0; s < 256; s++)
        nl[len[s]]++;
    nl[0] = 0;
    next[1] = 0;
    for (unsigned l = 2; l <= HUFF_LMAX; l++)
        next[l] = (next[l - 1] + nl[l - 1]) << 1;
    for (int s = 0; s < 256; s++) {
        unsigned l = len[s];
        if (!l)
            continue;
        unsigned c = next[l]++, r = 0;
        for (unsigned b = 0; b < l; b++)
            r |= ((c >> (l - 1 - b)) & 1u) << b;
        code[s] = (uint16_t)r;
    }
}

static size_t stream_start(size_t n, unsigned s)
{
    return n * s / NSTREAM;
}

/* Bit writer: codes are appended above the nb pending bits of acc; flush
 * stores all 8 bytes of acc and advances over the complete ones, so up to 8
 * bytes past a stream's end get scratch writes. Four codes (4 x 13 bits, plus
 * fewer than 8 pending) fit between flushes. */
#define PUT(acc, nb, e) ((acc) |= (uint64_t)((e) & 0xffffu) << (nb), (nb) += (e) >> 16)
static inline void flush(uint64_t *acc, unsigned *nb, uint8_t **o)
{
    zc_put_u64(*o, *acc);
    unsigned k = *nb >> 3;
    *o += k;
    *acc = k ? *acc >> (8 * k) : *acc; /* k <= 6 */
    *nb &= 7u;
}

ptrdiff_t zc_huff_encode(const uint8_t *sym, size_t n, uint8_t *dst, size_t cap)
{
    /* two histograms per stream, filled in lock-step: eight independent
     * tables, so that runs of one symbol do not wait on one counter */
    uint32_t h[2 * NSTREAM][256];
    memset(h, 0, sizeof h);
    const uint8_t *in[NSTREAM];
    size_t m[NSTREAM];
    for (unsigned s = 0; s < NSTREAM; s++) {
        in[s] = sym + stream_start(n, s);
        m[s] = stream_start(n, s + 1) - stream_start(n, s);
    }
    size_t q = m[0], j0 = 0; /* q: the shortest stream (stream_start rounds down) */
    for (; j0 + 2 <= q; j0 += 2) {
        h[0][in[0][j0]]++;
        h[1][in[1][j0]]++;
        h[2][in[2][j0]]++;
        h[3][in[3][j0]]++;
        h[4][in[0][j0 + 1]]++;
        h[5][in[1][j0 + 1]]++;
        h[6][in[2][j0 + 1]]++;
        h[7][in[3][j0 + 1]]++;
    }
    for (unsigned s = 0; s < NSTREAM; s++)
        for (size_t j = j0; j < m[s]; j++)
            h[s][in[s][j]]++;
    for (unsigned s = 0; s < NSTREAM; s++)
        for (int v = 0; v < 256; v++)
            h[s][v] += h[NSTREAM + s][v];
    uint64_t cnt[256];
    int distinct = 0;
    for (int v = 0; v < 256; v++) {
        cnt[v] = (uint64_t)h[0][v] + h[1][v] + h[2][v] + h[3][v];
        distinct += cnt[v] != 0;
    }
    if (distinct <= 1) {
        if (cap < 2)
            return ZMPI_ERR_DST_TOO_SMALL;
        dst[0] = 1;
        dst[1] = n ? sym[0] : 0;
        return 2;
    }
    uint8_t len[256];
    uint16_t code[256];
    code_lengths(cnt, len);
    canonical(len, code);
    uint32_t tab[256];
    for (int v = 0; v < 256; v++)
        tab[v] = code[v] | (uint32_t)len[v] << 16;
    /* exact stream sizes from the histograms: no capacity checks while writing */
    size_t bytes[NSTREAM], need = HEAD;
    for (unsigned s = 0; s < NSTREAM; s++) {
        uint64_t bits = 0;
        for (int v = 0; v < 256; v++)
            bits += (uint64_t)h[s][v] * len[v];
        bytes[s] = (size_t)((bits + 7) / 8);
        need += bytes[s];
    }
    if (cap < need)
        return ZMPI_ERR_DST_TOO_SMALL;
    dst[0] = 0;
    for (int v = 0; v < 128; v++)
        dst[1 + v] = (uint8_t)(len[2 * v] | len[2 * v + 1] << 4);
    /* streams are written with a gap of GAP bytes after each (put1's scratch
     * writes), then moved together */
    enum { GAP = 8 };
    if (cap - need < GAP * NSTREAM)
        return ZMPI_ERR_DST_TOO_SMALL;
    uint8_t *o[NSTREAM], *at = dst + HEAD;
    for (unsigned s = 0; s < NSTREAM; s++) {
        o[s] = at;
        at += bytes[s] + GAP;
        if (s + 1 < NSTREAM)
            zc_put_u32(dst + 129 + 4 * s, (uint32_t)bytes[s]);
    }
    uint64_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    unsigned n0 = 0, n1 = 0, n2 = 0, n3 = 0;
    uint8_t *o0 = o[0], *o1 = o[1], *o2 = o[2], *o3 = o[3];
    size_t j = 0;
    for (; j + 4 <= q; j += 4) {
        for (unsigned k = 0; k < 4; k++) {
            PUT(a0, n0, tab[in[0][j + k]]);
            PUT(a1, n1, tab[in[1][j + k]]);
            PUT(a2, n2, tab[in[2][j + k]]);
            PUT(a3, n3, tab[in[3][j + k]]);
        }
        flush(&a0, &n0, &o0);
        flush(&a1, &n1, &o1);
        flush(&a2, &n2, &o2);
        flush(&a3, &n3, &o3);
    }
    uint64_t acc[NSTREAM] = {a0, a1, a2, a3};
    unsigned nb[NSTREAM] = {n0, n1, n2, n3};
    uint8_t *op[NSTREAM] = {o0, o1, o2, o3};
    uint8_t *to = dst + HEAD;
    for (unsigned s = 0; s < NSTREAM; s++) {
        for (size_t k = j; k < m[s]; k++) {
            PUT(acc[s], nb[s], tab[in[s][k]]);
            flush(&acc[s], &nb[s], &op[s]);
        }
        if (nb[s])
            *op[s] = (uint8_t)acc[s];
        if (to != o[s])
            memmove(to, o[s], bytes[s]);
        to += bytes[s];
    }
    return (ptrdiff_t)need;
}

typedef struct bitrd {
    uint64_t acc;
    unsigned nb;
    const uint8_t *p, *e;
} bitrd;

static inline void refill(bitrd *b)
{
    if (b->e - b->p >= 8) {
        uint64_t v;
        memcpy(&v, b->p, 8);
        b->acc |= v << b->nb;
        b->p += (63u - b->nb) >> 3;
        b->nb |= 56u;
    } else {
        while (b->nb <= 56 && b->p < b->e) {
            b->acc |= (uint64_t)*b->p++ << b->nb;
            b->nb += 8;
        }
    }
}

/* Decodes one symbol; returns 0, or 1 if the stream is exhausted or the code unused. */
static inline int get1(bitrd *b, const uint16_t *tab, uint8_t *out)
{
    unsigned t = tab[b->acc & ((1u << HUFF_LMAX) - 1u)], l = t >> 8;
    if (l == 0 || l > b->nb)
        return 1;
    *out = (uint8_t)t;
    b->acc >>= l;
    b->nb -= l;
    return 0;
}

/* Multi-symbol table: for each MT_BITS-bit window, up to 3 whole codes in
 * it: bits 0-23 their symbols (first lowest), 24-27 the bits they take,
 * 28-29 how many (0: the first code is longer than the window, or unused). */
#define MT_BITS 11u
static void multi_table(const uint16_t *tab, uint32_t *mt)
{
    for (uint32_t i = 0; i < (1u << MT_BITS); i++) {
        uint32_t e = 0;
        unsigned used = 0, cnt = 0;
        while (cnt < 3) {
            /* the bits above the window read as zeros: a code found no longer
             * than the bits left is the stream's next code whatever follows */
            unsigned t = tab[i >> used], l = t >> 8;
            if (l == 0 || used + l > MT_BITS)
                break;
            e |= (t & 255u) << (8 * cnt);
            used += l;
            cnt++;
        }
        mt[i] = e | used << 24 | cnt << 28;
    }
}

/* One lookup: up to 3 symbols written at *o (4 bytes stored, the last as
 * scratch), or one long code through tab; returns 1 for an unused code
 * (nothing consumed). Needs at least HUFF_LMAX bits in the accumulator. */
static inline unsigned step(bitrd *b, const uint32_t *mt, const uint16_t *tab, uint8_t **o)
{
    uint32_t e = mt[b->acc & ((1u << MT_BITS) - 1u)];
    unsigned t = tab[b->acc & ((1u << HUFF_LMAX) - 1u)], l = t >> 8;
    uint32_t f = (t & 255u) | l << 24 | (l ? 1u : 0u) << 28;
    e = e >> 28 ? e : f; /* both looked up: no branch on the rare long codes */
    unsigned bits = (e >> 24) & 15u;
    memcpy(*o, &e, 4);
    *o += e >> 28;
    b->acc >>= bits;
    b->nb -= bits;
    return e >> 28 == 0;
}

int zc_huff_decode(const uint8_t *src, size_t size, uint8_t *sym, size_t n)
{
    if (size < 2)
        return ZMPI_ERR_CORRUPT;
    if (src[0] == 1) {
        if (size != 2)
            return ZMPI_ERR_CORRUPT;
        memset(sym, src[1], n);
        return ZMPI_OK;
    }
    if (src[0] != 0 || size < HEAD)
        return ZMPI_ERR_CORRUPT;
    uint8_t len[256];
    uint32_t kraft = 0;
    for (int s = 0; s < 128; s++) {
        len[2 * s] = src[1 + s] & 15u;
        len[2 * s + 1] = src[1 + s] >> 4;
    }
    for (int s = 0; s < 256; s++) {
        if (len[s] > HUFF_LMAX)
            return ZMPI_ERR_CORRUPT;
        if (len[s])
            kraft += 1u << (HUFF_LMAX - len[s]);
    }
    if (kraft == 0 || kraft > (1u << HUFF_LMAX))
        return ZMPI_ERR_CORRUPT;
    uint16_t code[256];
    canonical(len, code);
    uint16_t tab[1u << HUFF_LMAX];
    memset(tab, 0, sizeof tab);
    for (int s = 0; s < 256; s++) {
        unsigned l = len[s];
        if (!l)
            continue;
        for (unsigned k = code[s]; k < (1u << HUFF_LMAX); k += 1u << l)
            tab[k] = (uint16_t)(s | l << 8);
    }
    uint32_t mt[1u << MT_BITS];
    multi_table(tab, mt);
    bitrd b[NSTREAM];
    uint8_t *o[NSTREAM], *oe[NSTREAM];
    size_t pos = HEAD;
    for (unsigned s = 0; s < NSTREAM; s++) {
        size_t sz = s + 1 < NSTREAM ? zc_get_u32(src + 129 + 4 * s) : size - pos;
        if (sz > size - pos)
            return ZMPI_ERR_CORRUPT;
        b[s] = (bitrd){0, 0, src + pos, src + pos + sz};
        pos += sz;
        o[s] = sym + stream_start(n, s);
        oe[s] = sym + stream_start(n, s + 1);
    }
    /* lock-step over the four streams while each has 8 bytes of input (a
     * refill then leaves at least 56 bits: four lookups of at most 13) and
     * room for four steps of up to 3 symbols and a byte of scratch; an
     * unused code consumes nothing, so it ends the loop */
    unsigned bad = 0;
    uint8_t *o0 = o[0], *o1 = o[1], *o2 = o[2], *o3 = o[3];
    while (!bad && b[0].e - b[0].p >= 8 && b[1].e - b[1].p >= 8 && b[2].e - b[2].p >= 8 && b[3].e - b[3].p >= 8 &&
           oe[0] - o0 >= 16 && oe[1] - o1 >= 16 && oe[2] - o2 >= 16 && oe[3] - o3 >= 16) {
        refill(&b[0]), refill(&b[1]), refill(&b[2]), refill(&b[3]);
        for (unsigned k = 0; k < 4; k++) {
            bad |= step(&b[0], mt, tab, &o0);
            bad |= step(&b[1], mt, tab, &o1);
            bad |= step(&b[2], mt, tab, &o2);
            bad |= step(&b[3], mt, tab, &o3);
        }
    }
    if (bad)
        return ZMPI_ERR_CORRUPT;
    o[0] = o0, o[1] = o1, o[2] = o2, o[3] = o3;
    for (unsigned s = 0; s < NSTREAM; s++) {
        for (; o[s] < oe[s]; o[s]++) {
            refill(&b[s]);
            if (get1(&b[s], tab, o[s]))
                return ZMPI_ERR_CORRUPT;
        }
        /* every byte read, fewer than 8 padding bits left */
        if (b[s].p != b[s].e || b[s].nb >= 8)
            return ZMPI_ERR_CORRUPT;
    }
    return ZMPI_OK;
}
