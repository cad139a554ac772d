/* Block cutting, block compression and stream splicing: see bzblock.h. */
#define _POSIX_C_SOURCE 200809L
#include "bzblock.h"

#include <bzlib.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BZ_BLOCK_MAGIC 0x314159265359ULL
#define BZ_EOS_MAGIC 0x177245385090ULL
#define BZ_WORK_FACTOR 30 /* bzip2's default (0 means 30 in libbz2) */

size_t bz_cutter_cap(int level)
{
    return 125000u * (size_t)level + 64;
}

int bz_cutter_init(bz_cutter *c, int level)
{
    memset(c, 0, sizeof *c);
    if (level < 1 || level > 9)
        return -1;
    c->level = level;
    c->max = 100000u * (uint32_t)level - 19u;
    c->ch = 256;
    c->cap = bz_cutter_cap(level);
    c->out = malloc(c->cap);
    c->alt = malloc(c->cap);
    return c->out && c->alt ? 0 : -1;
}

void bz_cutter_free(bz_cutter *c)
{
    free(c->out);
    free(c->alt);
    c->out = c->alt = NULL;
}

/* RLE1 bytes of a run (libbz2's add_pair_to_block). */
static size_t rle_run(unsigned char *o, int ch, int len)
{
    if (len < 4) {
        for (int i = 0; i < len; i++)
            o[i] = (unsigned char)ch;
        return (size_t)len;
    }
    memset(o, ch, 4);
    o[4] = (unsigned char)(len - 4);
    return 5;
}

/* Equality masks of input windows: bit k of eq_mask(p) is set when p[k]
 * equals p[k - 1] (p[-1] must be readable), for k < WIN. */
#if defined(__SSE2__)
#include <emmintrin.h>
#define WIN 16
#define WIN_ALL 0xffffu
static inline unsigned eq_mask(const unsigned char *p)
{
    __m128i a = _mm_loadu_si128((const __m128i *)p), b = _mm_loadu_si128((const __m128i *)(p - 1));
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(a, b));
}
#elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WIN 8
#define WIN_ALL 0xffu
static inline unsigned eq_mask(const unsigned char *p)
{
    const uint64_t highs = 0x8080808080808080ULL;
    uint64_t x, y;
    memcpy(&x, p, 8);
    memcpy(&y, p - 1, 8);
    uint64_t v = x ^ y;
    uint64_t z = ~(((v & ~highs) + ~highs) | v) & highs; /* 0x80 in each zero byte of v */
    return (unsigned)(((z >> 7) * 0x0102040810204080ULL) >> 56);
}
#else
#define WIN 8
#define WIN_ALL 0xffu
static inline unsigned eq_mask(const unsigned char *p)
{
    unsigned e = 0;
    for (int k = 0; k < WIN; k++)
        e |= (unsigned)(p[k] == p[k - 1]) << k;
    return e;
}
#endif

/* The first j >= i where b[j..j+3] are equal (the start of a run that RLE1
 * shortens), or end if there is none before end. b[i] starts a run. */
static size_t run4(const unsigned char *b, size_t i, size_t end)
{
    size_t q = i + 1; /* windows compare b[q + k] with b[q + k - 1] */
    for (; q + WIN <= end; q += WIN - 2) {
        unsigned e = eq_mask(b + q);
        unsigned t = e & e >> 1 & e >> 2 & (WIN_ALL >> 2); /* bit k: run of 4 from q + k - 1 */
        if (t)
            return q + (size_t)__builtin_ctz(t) - 1;
    }
    for (size_t j = q - 1; j + 3 < end; j++)
        if (b[j] == b[j + 1] && b[j] == b[j + 2] && b[j] == b[j + 3])
            return j;
    return end;
}

/* The block's input bytes no longer fit: keep it as RLE1 bytes from here on.
 * out holds the input bytes of finished runs, then the run in progress.
 * Stretches without a run of four are their own RLE1 bytes. */
static void to_rle(bz_cutter *c)
{
    size_t end = c->nout - (size_t)c->len, k = 0, i = 0;
    while (i < end) {
        size_t j = run4(c->out, i, end);
        memcpy(c->alt + k, c->out + i, j - i);
        k += j - i;
        if (j == end)
            break;
        size_t r = j + 4;
        while (r < end && r - j < 255 && c->out[r] == c->out[j])
            r++;
        k += rle_run(c->alt + k, c->out[j], (int)(r - j));
        i = r;
    }
    unsigned char *t = c->out;
    c->out = c->alt;
    c->alt = t;
    c->nout = k; /* == c->n */
    c->rle = 1;
}

/* Bits set in x (x < 2^32; the portable way: no POPCNT in baseline x86-64). */
static inline unsigned bits_set(uint32_t x)
{
    x = x - ((x >> 1) & 0x55555555u);
    x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
    x = (x + (x >> 4)) & 0x0f0f0f0fu;
    return (x * 0x01010101u) >> 24;
}

/* RLE1 bytes that a run's first len bytes account for (len <= 255): the
 * 1st-3rd byte one each, the 4th two (itself and the count byte), later ones
 * none; summed over a finished run this is what rle_run writes. */
static inline uint32_t run_weight(int len)
{
    return len < 4 ? (uint32_t)len : 5u;
}

size_t bz_cutter_feed(bz_cutter *c, const unsigned char *p, size_t m, int *full)
{
    size_t i = 0;
    *full = 0;
    while (i < m) {
        size_t lim = m;
        if (!c->rle) {
            if (c->nout == c->cap)
                to_rle(c);
            else if (c->cap - c->nout < m - i)
                lim = i + (c->cap - c->nout); /* input bytes kept: no more than fit */
        }
        size_t from = i;
        int rch = c->ch, rlen = c->len; /* the run in progress, in registers */
        uint32_t n = c->n;
        while (i < lim) {
            /* Windows of WIN input bytes, while the block cannot close in
             * one (each byte adds at most 2 RLE1 bytes), no run can reach
             * 255 bytes in one and only counts need updating (input-byte
             * mode). w counts the RLE1 bytes of the finished runs and of
             * the run in progress so far (run_weight per byte position). */
            if (i >= 1 && rch < 256 && !c->rle) {
                uint32_t w = n + run_weight(rlen);
                while (i + WIN <= lim && w + 2 * WIN < c->max && rlen + WIN <= 255) {
                    unsigned e = eq_mask(p + i);
                    if (e == WIN_ALL) { /* the run goes on */
                        w += run_weight(rlen + WIN) - run_weight(rlen);
                        rlen += WIN;
                        i += WIN;
                        continue;
                    }
                    /* bits 0..2: the three bytes before the window, from the run in progress */
                    uint32_t E = (uint32_t)e << 3 | (uint32_t)(rlen >= 4) | (uint32_t)(rlen >= 3) << 1 |
                                 (uint32_t)(rlen >= 2) << 2;
                    uint32_t at4 = E & E << 1 & E << 2 & ~7u; /* window bytes at run position >= 4 */
                    w += WIN;
                    if (at4) { /* position 4 weighs 2, positions >= 5 nothing */
                        uint32_t at5 = at4 & E << 3;
                        w += bits_set(at4) - 2 * bits_set(at5);
                    }
                    /* the last run: from the window's highest byte not equal to the one before */
                    unsigned z = ~e & WIN_ALL;
                    int h = 31 - __builtin_clz(z);
                    rlen = WIN - h;
                    i += WIN;
                }
                rch = p[i - 1];
                n = w - run_weight(rlen);
                if (i >= lim)
                    break;
            }
            int ch = p[i++];
            if (ch == rch && rlen < 255) {
                rlen++;
                continue; /* no RLE1 byte written: the block cannot have closed */
            }
            if (rch < 256) {
                if (c->rle)
                    c->nout += rle_run(c->out + c->nout, rch, rlen);
                n += rlen < 4 ? (uint32_t)rlen : 5u;
            }
            rch = ch;
            rlen = 1;
            if (n >= c->max) { /* bzip2 closes the block right after this byte */
                *full = 1;
                break;
            }
        }
        c->ch = rch;
        c->len = rlen;
        c->n = n;
        if (!c->rle) {
            memcpy(c->out + c->nout, p + from, i - from);
            c->nout += i - from;
            if (*full)
                c->nout--; /* the closing byte belongs to the next block */
        }
        if (*full)
            break;
    }
    return i;
}

void bz_cutter_next(bz_cutter *c)
{
    /* the byte that closed the block starts the next one (in raw mode it is
     * out's last byte, in RLE1 mode it was not written) */
    c->out[0] = (unsigned char)c->ch;
    c->nout = 1;
    c->n = 0;
    c->rle = 0;
}

void bz_cutter_finish(bz_cutter *c)
{
    if (c->ch < 256 && c->rle)
        c->nout += rle_run(c->out + c->nout, c->ch, c->len);
    c->ch = 256;
    c->len = 0;
}

/* Streaming RLE1 decoder. */
typedef struct unrle {
    const unsigned char *p;
    size_t n, i;
    int last, same; /* last literal and how many equal literals in a row */
    unsigned rep;   /* copies of last still to write */
} unrle;

static size_t unrle_some(unrle *u, unsigned char *dst, size_t cap)
{
    size_t o = 0;
    while (o < cap) {
        if (u->rep) {
            size_t k = u->rep < cap - o ? u->rep : cap - o;
            memset(dst + o, u->last, k);
            o += k;
            u->rep -= (unsigned)k;
            continue;
        }
        if (u->i >= u->n)
            break;
        if (u->same == 4) {
            u->rep = u->p[u->i++];
            u->same = 0;
            continue;
        }
        if (u->same == 0 || u->p[u->i] != u->last) {
            /* literals up to the next run of four (whose count byte follows it) */
            size_t lim = u->n - u->i < cap - o ? u->n : u->i + (cap - o);
            size_t k = run4(u->p, u->i, lim) - u->i;
            if (k > 1) {
                memcpy(dst + o, u->p + u->i, k);
                o += k;
                u->i += k;
                size_t t = 1; /* equal literals at the end of these (at most 3) */
                while (t < k && t < 3 && u->p[u->i - 1 - t] == u->p[u->i - 1])
                    t++;
                u->last = u->p[u->i - 1];
                u->same = (int)t;
                continue;
            }
        }
        int ch = u->p[u->i++];
        if (ch == u->last) {
            u->same++;
        } else {
            u->last = ch;
            u->same = 1;
        }
        dst[o++] = (unsigned char)ch;
    }
    return o;
}

static uint64_t get_bits(const unsigned char *p, uint64_t at, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++, at++)
        v = (v << 1) | ((p[at >> 3] >> (7 - (at & 7))) & 1u);
    return v;
}

/* Lifts the block out of the one-block stream of zl bytes in b->bits, in place. */
static int extract(size_t zl, int level, bz_block *b)
{
    const unsigned char *z = b->bits;
    if (zl < 4 + 10 + 10 || memcmp(z, "BZh", 3) || z[3] != '0' + level || get_bits(z, 32, 48) != BZ_BLOCK_MAGIC)
        return BZ_BLOCK_FAILED;
    uint32_t crc = (uint32_t)get_bits(z, 80, 32);
    uint64_t total = (uint64_t)zl * 8, end = 0;
    int found = 0;
    for (int pad = 0; pad < 8; pad++) {
        uint64_t t = total - (uint64_t)pad - 80;
        if (get_bits(z, t, 48) == BZ_EOS_MAGIC && get_bits(z, t + 48, 32) == crc &&
            (pad == 0 || get_bits(z, total - (uint64_t)pad, pad) == 0)) {
            end = t;
            found++;
        }
    }
    if (found != 1 || end <= 32 + 80)
        return BZ_BLOCK_FAILED;
    /* the block starts on a byte: right after "BZh?" */
    memmove(b->bits, b->bits + 4, (size_t)((end - 32 + 7) / 8));
    b->nbits = end - 32;
    b->crc = crc;
    return 0;
}

/* libbz2's allocator hooks: the coder's cached pieces when one fits. */
static void *coder_alloc(void *opaque, int items, int size)
{
    bz_coder *k = opaque;
    size_t want = (size_t)items * (size_t)size;
    int i, spare = -1;
    for (i = 0; i < BZ_CODER_KEEP; i++) {
        if (k->mem[i] && !k->busy[i] && k->size[i] == want) {
            k->busy[i] = 1;
            return k->mem[i];
        }
        if (!k->mem[i] && spare < 0)
            spare = i;
    }
    void *p = malloc(want);
    if (p && spare >= 0) {
        k->mem[spare] = p;
        k->size[spare] = want;
        k->busy[spare] = 1;
    }
    return p;
}

static void coder_release(void *opaque, void *p)
{
    bz_coder *k = opaque;
    for (int i = 0; i < BZ_CODER_KEEP; i++)
        if (k->mem[i] == p) {
            k->busy[i] = 0;
            return;
        }
    free(p);
}

void bz_coder_free(bz_coder *k)
{
    for (int i = 0; k && i < BZ_CODER_KEEP; i++)
        free(k->mem[i]);
    if (k)
        memset(k, 0, sizeof *k);
}

/* Where a block's input bytes come from: next() gives the next piece (0 at
 * the end, (size_t)-1 on a read error). */
typedef struct source {
    size_t (*next)(struct source *s, const unsigned char **p);
    const unsigned char *data; /* raw: the bytes; RLE1: the RLE1 bytes */
    size_t n, done;
    unrle u;
    unsigned char *buf; /* RLE1 expansion / file reads */
    size_t cap;
    int fd;
    uint64_t at; /* file: offset of the first byte */
} source;

static size_t next_raw(source *s, const unsigned char **p)
{
    /* in pieces libbz2's counters can hold */
    size_t m = s->n - s->done < (1u << 30) ? s->n - s->done : (1u << 30);
    *p = s->data + s->done;
    s->done += m;
    return m;
}

static size_t next_rle(source *s, const unsigned char **p)
{
    *p = s->buf;
    return unrle_some(&s->u, s->buf, s->cap);
}

static size_t next_file(source *s, const unsigned char **p)
{
    size_t m = s->n - s->done < s->cap ? s->n - s->done : s->cap;
    for (size_t got = 0; got < m;) {
        ssize_t r = pread(s->fd, s->buf + got, m - got, (off_t)(s->at + s->done + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return (size_t)-1;
        got += (size_t)r;
    }
    *p = s->buf;
    s->done += m;
    return m;
}

/* Compresses the input bytes src gives into one block (see bz_block_compress). */
static int compress_from(bz_coder *k, source *src, size_t reserve, int level, bz_block *b)
{
    bz_stream s;
    size_t len = 0;
    int rc, done_in = 0;

    if (bz_block_reserve(b, reserve))
        return BZ_BLOCK_FAILED;
    memset(&s, 0, sizeof s);
    if (k) {
        s.bzalloc = coder_alloc;
        s.bzfree = coder_release;
        s.opaque = k;
    }
    rc = BZ2_bzCompressInit(&s, level, 0, BZ_WORK_FACTOR);
    if (rc != BZ_OK)
        return rc;
    for (;;) {
        if (s.avail_in == 0 && !done_in) {
            const unsigned char *p = NULL;
            size_t m = src->next(src, &p);
            if (m == (size_t)-1) {
                rc = BZ_BLOCK_UNREADABLE;
                break;
            }
            s.next_in = (char *)p;
            s.avail_in = (unsigned)m;
            done_in = m == 0;
        }
        if (len == b->cap && bz_block_reserve(b, b->cap * 2)) {
            rc = BZ_BLOCK_FAILED;
            break;
        }
        s.next_out = (char *)b->bits + len;
        s.avail_out = (unsigned)(b->cap - len < (1u << 30) ? b->cap - len : (1u << 30));
        unsigned before = s.avail_out;
        rc = BZ2_bzCompress(&s, done_in ? BZ_FINISH : BZ_RUN);
        len += before - s.avail_out;
        if (rc == BZ_STREAM_END) {
            rc = 0;
            break;
        }
        if (rc != BZ_RUN_OK && rc != BZ_FINISH_OK)
            break;
    }
    BZ2_bzCompressEnd(&s);
    if (rc == 0)
        rc = src->next == next_rle && src->u.same == 4 ? BZ_BLOCK_FAILED : extract(len, level, b);
    return rc;
}

int bz_block_compress(bz_coder *k, const unsigned char *data, size_t n, int raw, int level, bz_block *b)
{
    unsigned char in[65536];
    source src = {raw ? next_raw : next_rle, data, n, 0, {data, raw ? 0 : n, 0, 256, 0, 0}, in, sizeof in, -1, 0};
    /* bzip2 output stays under 101% of its RLE1 bytes (at most n) plus a header */
    return compress_from(k, &src, n + n / 4 + 4096, level, b);
}

int bz_block_compress_file(bz_coder *k, int fd, uint64_t start, uint64_t n, unsigned char *buf, size_t cap,
                           int level, bz_block *b)
{
    if (n > (uint64_t)SIZE_MAX || start > (uint64_t)INT64_MAX - n || cap == 0)
        return BZ_BLOCK_FAILED;
    source src = {next_file, NULL, (size_t)n, 0, {NULL, 0, 0, 256, 0, 0}, buf, cap, fd, start};
    size_t rle_max = 100000u * (size_t)level; /* the block's RLE1 bytes, whatever its input */
    return compress_from(k, &src, (n < rle_max ? (size_t)n : rle_max) * 5 / 4 + 4096, level, b);
}

int bz_block_reserve(bz_block *b, size_t bytes)
{
    if (bytes <= b->cap)
        return 0;
    unsigned char *nb = realloc(b->bits, bytes);
    if (!nb)
        return -1;
    b->bits = nb;
    b->cap = bytes;
    return 0;
}

void bz_block_free(bz_block *b)
{
    free(b->bits);
    memset(b, 0, sizeof *b);
}

/* Output buffering of the writer: whole bytes collect in w->buf. */
static void flush_buf(bz_writer *w)
{
    if (!w->error && w->nbuf && fwrite(w->buf, 1, w->nbuf, w->f) != w->nbuf)
        w->error = 1;
    w->nbuf = 0;
}

static void put_byte(bz_writer *w, unsigned char v)
{
    if (w->nbuf == sizeof w->buf)
        flush_buf(w);
    w->buf[w->nbuf++] = v;
}

static void put_bits(bz_writer *w, uint64_t v, int k) /* k <= 32 */
{
    w->acc = (w->acc << k) | (v & ((1ULL << k) - 1));
    w->nacc += k;
    while (w->nacc >= 8) {
        w->nacc -= 8;
        put_byte(w, (unsigned char)(w->acc >> w->nacc));
    }
}

void bz_writer_begin(bz_writer *w, FILE *f, int level)
{
    memset(w, 0, sizeof *w);
    w->f = f;
    put_bits(w, 'B', 8);
    put_bits(w, 'Z', 8);
    put_bits(w, 'h', 8);
    put_bits(w, (uint64_t)('0' + level), 8);
}

void bz_writer_block(bz_writer *w, const bz_block *b)
{
    uint64_t whole = b->nbits / 8;
    if (w->nacc == 0) {
        flush_buf(w);
        if (!w->error && whole && fwrite(b->bits, 1, (size_t)whole, w->f) != whole)
            w->error = 1;
    } else { /* shifted by nacc bits: each output byte is the pending bits and the top of the next byte */
        int k = w->nacc;
        unsigned acc = (unsigned)w->acc & ((1u << k) - 1);
        for (uint64_t i = 0; i < whole;) {
            if (w->nbuf == sizeof w->buf)
                flush_buf(w);
            size_t room = sizeof w->buf - w->nbuf;
            uint64_t end = whole - i < room ? whole : i + room;
            unsigned char *o = w->buf + w->nbuf;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            for (; i + 8 <= end; i += 8, o += 8) { /* eight bytes at a time, as one big-endian word */
                uint64_t x, y;
                memcpy(&x, b->bits + i, 8);
                x = __builtin_bswap64(x);
                y = __builtin_bswap64((uint64_t)acc << (64 - k) | x >> k);
                memcpy(o, &y, 8);
                acc = (unsigned)x & ((1u << k) - 1);
            }
#endif
            for (; i < end; i++) {
                unsigned byte = b->bits[i];
                *o++ = (unsigned char)((acc << (8 - k)) | (byte >> k));
                acc = byte & ((1u << k) - 1);
            }
            w->nbuf = (size_t)(o - w->buf);
        }
        w->acc = acc;
    }
    int rest = (int)(b->nbits % 8);
    if (rest)
        put_bits(w, (uint64_t)(b->bits[whole] >> (8 - rest)), rest);
    w->combined = ((w->combined << 1) | (w->combined >> 31)) ^ b->crc;
}

int bz_writer_end(bz_writer *w)
{
    put_bits(w, BZ_EOS_MAGIC >> 24, 24);
    put_bits(w, BZ_EOS_MAGIC & 0xFFFFFF, 24);
    put_bits(w, w->combined, 32);
    if (w->nacc)
        put_bits(w, 0, 8 - w->nacc);
    flush_buf(w);
    return w->error ? -1 : 0;
}
