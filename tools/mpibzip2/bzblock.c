/* Block cutting, block compression and stream splicing: see bzblock.h. */
#include "bzblock.h"

#include <bzlib.h>
#include <stdlib.h>
#include <string.h>

#define BZ_BLOCK_MAGIC 0x314159265359ULL
#define BZ_EOS_MAGIC 0x177245385090ULL
#define BZ_WORK_FACTOR 30 /* bzip2's default (0 means 30 in libbz2) */

int bz_cutter_init(bz_cutter *c, int level)
{
    memset(c, 0, sizeof *c);
    if (level < 1 || level > 9)
        return -1;
    c->level = level;
    c->max = 100000u * (uint32_t)level - 19u;
    c->ch = 256;
    c->out = malloc((size_t)c->max + 8);
    return c->out ? 0 : -1;
}

void bz_cutter_free(bz_cutter *c)
{
    free(c->out);
    c->out = NULL;
}

/* Writes the run in progress (libbz2's add_pair_to_block). */
static void put_run(bz_cutter *c)
{
    unsigned char ch = (unsigned char)c->ch;
    if (c->len < 4) {
        for (int i = 0; i < c->len; i++)
            c->out[c->n++] = ch;
    } else {
        memset(c->out + c->n, ch, 4);
        c->out[c->n + 4] = (unsigned char)(c->len - 4);
        c->n += 5;
    }
}

size_t bz_cutter_feed(bz_cutter *c, const unsigned char *p, size_t n, int *full)
{
    *full = 0;
    for (size_t i = 0; i < n; i++) {
        int ch = p[i];
        if (ch == c->ch && c->len < 255) {
            c->len++;
            continue; /* no byte written: the block cannot have closed */
        }
        if (c->ch < 256)
            put_run(c);
        c->ch = ch;
        c->len = 1;
        if (c->n >= c->max) { /* bzip2 closes the block right after this byte */
            *full = 1;
            return i + 1;
        }
    }
    return n;
}

void bz_cutter_next(bz_cutter *c)
{
    c->n = 0;
}

void bz_cutter_finish(bz_cutter *c)
{
    if (c->ch < 256)
        put_run(c);
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

/* Lifts the block out of a one-block stream z of zl bytes. */
static int extract(const unsigned char *z, size_t zl, int level, bz_block *b)
{
    if (zl < 4 + 10 + 10 || memcmp(z, "BZh", 3) || z[3] != '0' + level || get_bits(z, 32, 48) != BZ_BLOCK_MAGIC)
        return -100;
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
        return -100;
    size_t bytes = (size_t)((end - 32 + 7) / 8);
    if (bytes > b->cap) {
        unsigned char *nb = realloc(b->bits, bytes);
        if (!nb)
            return -100;
        b->bits = nb;
        b->cap = bytes;
    }
    memcpy(b->bits, z + 4, bytes); /* the block starts on a byte: right after "BZh?" */
    b->nbits = end - 32;
    b->crc = crc;
    return 0;
}

int bz_block_compress(const unsigned char *rle, size_t n, int level, bz_block *b)
{
    bz_stream s;
    unsigned char in[65536];
    unrle u = {rle, n, 0, 256, 0, 0};
    size_t cap = n + n / 4 + 4096, len = 0;
    unsigned char *z = malloc(cap);
    int rc, done_in = 0;

    if (!z)
        return -100;
    memset(&s, 0, sizeof s);
    rc = BZ2_bzCompressInit(&s, level, 0, BZ_WORK_FACTOR);
    if (rc != BZ_OK) {
        free(z);
        return rc;
    }
    for (;;) {
        if (s.avail_in == 0 && !done_in) {
            size_t k = unrle_some(&u, in, sizeof in);
            s.next_in = (char *)in;
            s.avail_in = (unsigned)k;
            done_in = k == 0;
        }
        if (len == cap) {
            unsigned char *nz = realloc(z, cap * 2);
            if (!nz) {
                rc = -100;
                break;
            }
            z = nz;
            cap *= 2;
        }
        s.next_out = (char *)z + len;
        s.avail_out = (unsigned)(cap - len < (1u << 30) ? cap - len : (1u << 30));
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
        rc = u.same == 4 ? -100 : extract(z, len, level, b);
    free(z);
    return rc;
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
    } else {
        for (uint64_t i = 0; i < whole; i++)
            put_bits(w, b->bits[i], 8);
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
