/*
 * Parallel bzip2 decompression: see bzdecode.h for the design.
 *
 * Threads: one reader (streams `in`, finds the magics, cuts candidates),
 * `threads` workers (decode candidates with libbz2), and the calling thread
 * (follows the file's structure, merges candidates when a false magic split
 * a block, checks stream CRCs, writes). They share a list of candidates, in
 * file order, under one mutex; the reader stops reading while the list
 * holds 2 x threads + 1 candidates, unless the calling thread is waiting for
 * more of the input (a merge, a trailer).
 *
 * Largest compressed block (BZ_DECODE_MAX_BLOCK_BITS), in bits, for level
 * L, as libbz2 1.0.8's decoder reads a block:
 *   48 magic + 32 CRC + 1 randomised + 24 origPtr             105
 *   symbol map: 16 + 16 x 16                                  272
 *   3 nGroups + 15 nSelectors                                  18
 *   selectors: at most 32767 (15 bits), each unary < 6 groups:
 *     at most 6 bits                                       196602
 *   6 tables x (5 + 258 symbols x 39): a code length moves from
 *     the previous one by at most 19 steps of 2 bits, then 1 stop
 *     bit (lengths are 1..20; coding each step once, as libbz2's
 *     encoder does)                                         60402
 *   Huffman data: at most 100000 L + 1 symbols (the decoder
 *     refuses more than 100000 L bytes in a block; each RUNA/RUNB
 *     or MTF symbol stands for at least one byte; plus the end of
 *     block symbol), each at most 20 bits             2000000 L + 20
 *   total                                          2000000 L + 257419
 * i.e. about 282 kB at -1 and 2.28 MB at -9 (real blocks are at most about
 * 1.01 x 100000 L bytes). Only an encoder that pads its code length tables
 * with canceling steps could exceed it; such a block still decodes unless
 * it also contains a false magic.
 *
 * Behaviour against bzip2 1.0.8 (`bzip2 -d`, checked by hand):
 *   0-byte input: bzip2 says "Compressed file ends unexpectedly", exit 2;
 *     here: 2, "compressed file ends unexpectedly".
 *   First stream without "BZh" + '1'..'9': bzip2 "not a bzip2 file", exit 2;
 *     here: 2, "not a bzip2 file". A first stream cut inside those 4 bytes
 *     ("B", "BZh"): both say "ends unexpectedly", 2.
 *   After a complete stream, bytes that are not a stream header: bzip2
 *     warns "trailing garbage after EOF ignored", exit 0; same here (0, the
 *     warning in msg, the garbage is not read further). Like bzip2, the bytes
 *     are compared one by one: trailing "BZh0..." or "BZx" is garbage, but a
 *     trailing "B", "BZ", "BZh" or "BZh9" (a header cut by EOF) is
 *     "ends unexpectedly" (2), and "BZh9" followed by anything that is not a
 *     valid stream is a data integrity error (2), as in bzip2.
 *   A block that fails (CRC mismatch or libbz2 data error), a missing block
 *     header, a wrong stream CRC: "data integrity error", 2 (bzip2 too).
 *   EOF inside a stream: "compressed file ends unexpectedly", 2 (bzip2 too).
 *     A block with no magic after it before EOF is decoded up to EOF once
 *     more: if libbz2 fails within the input's own bytes it is a data
 *     integrity error, if it runs out of them a truncation, which is how
 *     libbz2 tells them apart. Over 1200 random bit flips, byte changes,
 *     truncations and appended bytes of a 2-stream file (3 blocks at -1 and
 *     a 1-byte stream), and every bit flip in its second stream, the return
 *     code and the kind of message matched bzip2 -d every time.
 *   Deviations: bzip2 writes a block's output as it decodes it, so it writes
 *     data before it finds an error; here nothing is written before its block
 *     (and for the last block of a stream, the stream CRC) is verified. When
 *     a block magic is damaged, bzip2 still writes the block before it; here
 *     that block's end is unknown, so it is the one reported (and not
 *     written). The padding bits after a stream CRC are ignored, as bzip2
 *     does. On an error or trailing garbage the reader thread is joined, so
 *     a pipe that never ends keeps bz_decompress waiting in fread.
 *
 * Costs: the reader scans at about 0.6 GB/s on one core (a 16-bit filter
 * per byte position for the 16 (magic, bit shift) pairs, then a 48-bit
 * compare). A block split by k false magics costs up to k + 1 decodes of
 * growing prefixes; workers only decode the first 2 x threads + 1
 * candidates of the list, so merging far ahead never holds more outputs.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "bzdecode.h"

#include <bzlib.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK_MAGIC 0x314159265359ULL
#define EOS_MAGIC 0x177245385090ULL
#define MASK48 0xFFFFFFFFFFFFULL
#define DEFAULT_CHUNK ((size_t)256 * 1024)
#define DEFAULT_CAP ((size_t)(BZ_DECODE_MAX_BLOCK_BITS(9) / 8) + 65536)
#define MAX_THREADS 256
/* A block holds at most 100000 L bytes of RLE1 output; 5 of them (a byte
 * four times and a count of 255) give 259 bytes of output. */
#define OUT_MAX(level) ((size_t)5180000 * (size_t)(level) + 4096)

/* Kinds of candidate starts and ends besides BZ_MARK_BLOCK / BZ_MARK_EOS. */
enum { K_FILE = 3, K_NONE, K_CAP, K_EOF };
enum { ST_NEW, ST_BUSY, ST_DONE };
enum { T_OK = BZ_TRIAL_OK, T_FAIL = BZ_TRIAL_FAIL, T_MEM = BZ_TRIAL_MEM };

/* ---------------------------------------------------------------- scanning */

/* Bit (b1 << 8 | b2) is set when bytes b1, b2 can be the 2nd and 3rd byte
 * under a magic starting at some bit of the byte before them. */
typedef struct filt {
    unsigned char bits[8192];
} filt;

static void filt_init(filt *f)
{
    static const uint64_t magic[2] = {BLOCK_MAGIC, EOS_MAGIC};
    memset(f->bits, 0, sizeof f->bits);
    for (int m = 0; m < 2; m++)
        for (int s = 0; s < 8; s++) {
            unsigned key = (unsigned)(magic[m] >> (24 + s)) & 0xFFFFu;
            f->bits[key >> 3] |= (unsigned char)(1u << (key & 7));
        }
}

static uint64_t load_be64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* The first magic starting at a bit >= from, in a byte k < kend, ending by
 * bit limit. p must be readable up to byte kend + 7. */
static int scan_next(const filt *f, const unsigned char *p, uint64_t from, uint64_t kend,
                     uint64_t limit, bz_mark *m)
{
    unsigned s0 = (unsigned)(from & 7);
    for (uint64_t k = from >> 3; k < kend; k++, s0 = 0) {
        unsigned key = ((unsigned)p[k + 1] << 8) | p[k + 2];
        if (!((f->bits[key >> 3] >> (key & 7)) & 1u))
            continue;
        uint64_t w = load_be64(p + k);
        for (unsigned s = s0; s < 8; s++) {
            uint64_t v = (w >> (16 - s)) & MASK48;
            if ((v == BLOCK_MAGIC || v == EOS_MAGIC) && 8 * k + s + 48 <= limit) {
                m->bit = 8 * k + s;
                m->kind = v == BLOCK_MAGIC ? BZ_MARK_BLOCK : BZ_MARK_EOS;
                return 1;
            }
        }
    }
    return 0;
}

size_t bz_find_marks(const unsigned char *p, size_t n, bz_mark *marks, size_t max)
{
    filt f;
    bz_mark m;
    size_t cnt = 0;
    uint64_t from = 0, kbulk = n >= 8 ? n - 7 : 0;
    unsigned char tail[32];

    filt_init(&f);
    while (scan_next(&f, p, from, kbulk, UINT64_MAX, &m)) {
        if (cnt < max)
            marks[cnt] = m;
        cnt++;
        from = m.bit + 1;
    }
    memset(tail, 0, sizeof tail);
    memcpy(tail, p + kbulk, (size_t)(n - kbulk));
    from = from > 8 * kbulk ? from - 8 * kbulk : 0;
    while (scan_next(&f, tail, from, n - kbulk, 8 * (n - kbulk), &m)) {
        from = m.bit + 1;
        m.bit += 8 * kbulk;
        if (cnt < max)
            marks[cnt] = m;
        cnt++;
    }
    return cnt;
}

/* ------------------------------------------------------------- bit writing */

typedef struct bitw {
    unsigned char *p;
    uint64_t n; /* bits written */
} bitw;

static void bw_put(bitw *w, uint64_t v, int k)
{
    for (int i = k - 1; i >= 0; i--, w->n++) {
        unsigned char *b = w->p + (w->n >> 3);
        unsigned m = 0x80u >> (w->n & 7);
        if ((v >> i) & 1)
            *b = (unsigned char)(*b | m);
        else
            *b = (unsigned char)(*b & ~m);
    }
}

/* Appends nbits bits of src, starting at bit sb (0..7) of src[0]. */
static void bw_copy(bitw *w, const unsigned char *src, unsigned sb, uint64_t nbits)
{
    size_t nb = (size_t)(nbits >> 3);
    unsigned f = (unsigned)(w->n & 7);
    unsigned char *d = w->p + (w->n >> 3);

    if (sb == 0 && f == 0) {
        memcpy(d, src, nb);
    } else if (f == 0) {
        for (size_t i = 0; i < nb; i++)
            d[i] = (unsigned char)((src[i] << sb) | (src[i + 1] >> (8 - sb)));
    } else {
        unsigned keep = (0xFFu << (8 - f)) & 0xFFu;
        for (size_t i = 0; i < nb; i++) {
            unsigned b = sb ? ((unsigned)(src[i] << sb) | (src[i + 1] >> (8 - sb))) & 0xFFu : src[i];
            d[i] = (unsigned char)((d[i] & keep) | (b >> f));
            d[i + 1] = (unsigned char)(b << (8 - f));
        }
    }
    w->n += (uint64_t)nb * 8;
    for (uint64_t j = (uint64_t)nb * 8; j < nbits; j++) {
        uint64_t q = sb + j;
        bw_put(w, (src[q >> 3] >> (7 - (q & 7))) & 1u, 1);
    }
}

static uint64_t get_bits(const unsigned char *p, uint64_t at, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++, at++)
        v = (v << 1) | ((p[at >> 3] >> (7 - (at & 7))) & 1u);
    return v;
}

/* ------------------------------------------------------------- candidates */

typedef bz_trial trial;

/* The bits [start, start + nbits) of the input, from one magic (or the
 * file's start, or a cut) to the next. */
typedef struct cand {
    struct cand *next;
    uint64_t start, nbits;
    unsigned char *raw; /* bytes from byte start / 8 */
    size_t raw_len, raw_cap;
    int skind, ekind;
    int level;  /* level of the stream the reader believes it is in */
    int tlevel; /* level the worker decoded at */
    int state, dropped;
    uint64_t id; /* position in the reader's output */
    trial t;
} cand;

static cand *cand_new(uint64_t start, int skind, int level)
{
    cand *c = calloc(1, sizeof *c);
    if (c) {
        c->start = start;
        c->skind = skind;
        c->level = c->tlevel = level;
    }
    return c;
}

static void cand_free(cand *c)
{
    if (c) {
        free(c->raw);
        free(c->t.out);
        free(c);
    }
}

static int cand_append(cand *c, const unsigned char *p, size_t n)
{
    if (c->raw_len + n + 16 > c->raw_cap) {
        size_t cap = c->raw_cap ? c->raw_cap * 2 : 65536;
        while (cap < c->raw_len + n + 16)
            cap *= 2;
        unsigned char *r = realloc(c->raw, cap);
        if (!r)
            return -1;
        c->raw = r;
        c->raw_cap = cap;
    }
    memcpy(c->raw + c->raw_len, p, n);
    c->raw_len += n;
    memset(c->raw + c->raw_len, 0, 16);
    return 0;
}

/* ---------------------------------------------------------------- decoding */

/* Decodes a synthetic one-block stream of synlen bytes whose block holds
 * nbits bits. */
void bz_decode_block(const unsigned char *syn, size_t synlen, uint64_t nbits, int level, trial *t)
{
    bz_stream s;
    size_t cap = (size_t)100000 * (size_t)level + 4096, len = 0, consumed = synlen;
    size_t max = OUT_MAX(level);
    unsigned char *out = malloc(cap);
    int rc;

    memset(t, 0, sizeof *t);
    t->res = T_FAIL;
    if (!out) {
        t->res = T_MEM;
        return;
    }
    memset(&s, 0, sizeof s);
    rc = BZ2_bzDecompressInit(&s, 0, 0);
    if (rc != BZ_OK) {
        free(out);
        t->res = T_MEM;
        return;
    }
    s.next_in = (char *)(uintptr_t)syn;
    s.avail_in = (unsigned)synlen;
    for (;;) {
        if (len == cap) {
            if (cap >= max)
                break; /* cannot be a block of this level */
            size_t ncap = cap * 2 < max ? cap * 2 : max;
            unsigned char *o = realloc(out, ncap);
            if (!o) {
                t->res = T_MEM;
                break;
            }
            out = o;
            cap = ncap;
        }
        s.next_out = (char *)out + len;
        s.avail_out = (unsigned)(cap - len);
        rc = BZ2_bzDecompress(&s);
        len = cap - s.avail_out;
        if (rc == BZ_STREAM_END) {
            t->res = T_OK;
            break;
        }
        if (rc == BZ_OK) {
            if (s.avail_out == 0)
                continue;
            break; /* wants more input: the block ran over our trailer */
        }
        if (rc == BZ_MEM_ERROR) {
            t->res = T_MEM;
            break;
        }
        consumed = synlen - s.avail_in;
        break;
    }
    BZ2_bzDecompressEnd(&s);
    if (t->res == T_OK) {
        if (cap > len + 65536) {
            unsigned char *o = realloc(out, len ? len : 1);
            if (o)
                out = o;
        }
        t->out = out;
        t->outlen = len;
    } else {
        free(out);
        /* libbz2 reads its input in order and one byte at a time; the first
         * 4 + nbits / 8 bytes of our stream are those of every merge too. */
        t->hopeless = t->res == T_FAIL && consumed <= 4 + nbits / 8;
    }
}

/* The candidates first..last (consecutive) as one-block stream (*syn,
 * malloc'd, *synlen bytes; *nbits the block's bits): 0, or the trial's
 * result (T_FAIL: not a whole block; if to_eof, last may end at the end of
 * the input, to tell a truncated block from a broken one). */
static int make_syn(cand *first, cand *last, int level, int to_eof, unsigned char **syn_out, size_t *synlen,
                    uint64_t *nbits_out)
{
    uint64_t nbits = 0;
    for (cand *c = first;; c = c->next) {
        nbits += c->nbits;
        if (c == last)
            break;
    }
    if (nbits < 80 || (last->ekind != BZ_MARK_BLOCK && last->ekind != BZ_MARK_EOS && !(to_eof && last->ekind == K_EOF)))
        return T_FAIL; /* not a whole block */
    size_t size = 4 + (size_t)((nbits + 7) / 8) + 11 + 16;
    unsigned char *syn = calloc(1, size);
    if (!syn)
        return T_MEM;
    bitw w = {syn, 0};
    bw_put(&w, ((uint64_t)'B' << 24) | ((uint64_t)'Z' << 16) | ((uint64_t)'h' << 8) | (uint64_t)('0' + level), 32);
    for (cand *c = first;; c = c->next) {
        bw_copy(&w, c->raw, (unsigned)(c->start & 7), c->nbits);
        if (c == last)
            break;
    }
    uint32_t crc = (uint32_t)get_bits(syn, 32 + 48, 32);
    bw_put(&w, EOS_MAGIC, 48);
    bw_put(&w, crc, 32);
    if (w.n & 7)
        bw_put(&w, 0, (int)(8 - (w.n & 7)));
    *syn_out = syn;
    *synlen = (size_t)(w.n / 8);
    *nbits_out = nbits;
    return 0;
}

/* The block's CRC, in a one-block stream. */
static uint32_t syn_crc(const unsigned char *syn)
{
    return (uint32_t)get_bits(syn, 32 + 48, 32);
}


/* ------------------------------------------------------------ shared state */

typedef struct dec {
    FILE *in, *out;
    const char *name;
    const bz_decode_opts *opts;
    int threads, test_only, worker_level, scan_only;
    size_t chunk, cap;
    const bz_mark *fake;
    size_t nfake;
    char *msg;
    size_t msglen;
    filt f;

    pthread_mutex_t mu;
    pthread_cond_t cv_scan, cv_work, cv_seq;
    cand *head, *tail, *work_next;
    int count, qmax;
    uint64_t next_id; /* id of the next candidate published */
    int need_more, scan_done, read_err, read_errno, mem_err, stop;
    int lost; /* a remote decoder's transport failed */
    uint64_t ncand, blocks, merges, redecodes;
} dec;

static int fail(dec *d, int rc, const char *fmt, ...)
{
    if (d->msg && d->msglen) {
        va_list ap;
        int k = snprintf(d->msg, d->msglen, "%s: ", d->name);
        if (k >= 0 && (size_t)k < d->msglen) {
            va_start(ap, fmt);
            vsnprintf(d->msg + k, d->msglen - (size_t)k, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

/* ------------------------------------------------------------------ reader */

/* Hands a finished candidate to the list. */
static void publish(dec *d, cand *c, int ekind, uint64_t nbits)
{
    c->ekind = ekind;
    c->nbits = nbits;
    int decodable = !d->scan_only && c->skind == BZ_MARK_BLOCK && nbits >= 80 &&
                    (ekind == BZ_MARK_BLOCK || ekind == BZ_MARK_EOS);
    if (decodable) {
        c->state = ST_NEW;
    } else {
        c->state = ST_DONE;
        c->t.res = T_FAIL;
    }
    if (c->raw_cap > c->raw_len + 16 + 4096) {
        unsigned char *r = realloc(c->raw, c->raw_len + 16);
        if (r) {
            c->raw = r;
            c->raw_cap = c->raw_len + 16;
        }
    }
    pthread_mutex_lock(&d->mu);
    if (d->tail)
        d->tail->next = c;
    else
        d->head = c;
    d->tail = c;
    if (!d->work_next)
        d->work_next = c;
    c->id = d->next_id++;
    d->count++;
    d->ncand++;
    d->need_more = 0;
    if (decodable)
        pthread_cond_signal(&d->cv_work);
    pthread_cond_broadcast(&d->cv_seq);
    pthread_mutex_unlock(&d->mu);
}

/* The level announced by a stream header inside candidate c (which ends at
 * bit end): at its start for the file's first candidate, after the trailer
 * for one that starts with the end-of-stream magic. 0 if none. */
static int header_level(const cand *c, uint64_t end)
{
    uint64_t h;
    if (c->skind == K_FILE)
        h = c->start / 8;
    else if (c->skind == BZ_MARK_EOS)
        h = (c->start + 80 + 7) / 8;
    else
        return 0;
    if (8 * (h + 4) > end)
        return 0;
    const unsigned char *p = c->raw + (h - c->start / 8);
    if (p[0] == 'B' && p[1] == 'Z' && p[2] == 'h' && p[3] >= '1' && p[3] <= '9')
        return p[3] - '0';
    return 0;
}

typedef struct reader {
    unsigned char *rb; /* input bytes [base, base + len) */
    uint64_t base;
    size_t len;
    uint64_t a; /* bytes before a are in cur */
    cand *cur;
    int level;
    uint64_t next; /* next bit to scan from */
    size_t fi;     /* next planted magic */
    int eof;       /* the input has ended */
} reader;

/* A magic (or a planted one) at bit b: cur ends there, the next starts. */
static int at_mark(dec *d, reader *r, uint64_t b, int kind)
{
    uint64_t endb = (b + 7) / 8;
    if (r->a < endb) {
        if (cand_append(r->cur, r->rb + (r->a - r->base), (size_t)(endb - r->a)))
            return -1;
        r->a = endb;
    }
    int lv = header_level(r->cur, b);
    if (lv)
        r->level = lv;
    publish(d, r->cur, kind, b - r->cur->start);
    r->cur = cand_new(b, kind, r->level);
    if (!r->cur)
        return -1;
    return cand_append(r->cur, r->rb + (b / 8 - r->base), (size_t)(r->a - b / 8));
}

/* Waits until the list has room for another candidate or the calling
 * thread wants one. 1 if the run stops, else 0. */
static int reader_wait(dec *d)
{
    pthread_mutex_lock(&d->mu);
    while (!d->stop && d->count >= d->qmax && !d->need_more)
        pthread_cond_wait(&d->cv_scan, &d->mu);
    int stop = d->stop;
    pthread_mutex_unlock(&d->mu);
    return stop;
}

/* Keeps the bytes not scanned yet (at most 7) and reads a chunk after them
 * (r->eof once the input ends). 0, or -1 on a read error (d->read_err). */
static int reader_fill(dec *d, reader *r)
{
    uint64_t keep = r->next / 8;
    size_t kept = (size_t)(r->base + r->len - keep);
    memmove(r->rb, r->rb + (keep - r->base), kept);
    r->base = keep;
    r->len = kept;
    errno = 0;
    size_t got = fread(r->rb + r->len, 1, d->chunk, d->in);
    if (got < d->chunk) {
        if (ferror(d->in)) {
            pthread_mutex_lock(&d->mu);
            d->read_err = 1;
            d->read_errno = errno ? errno : EIO;
            pthread_mutex_unlock(&d->mu);
            return -1;
        }
        r->eof = 1;
    }
    r->len += got;
    memset(r->rb + r->len, 0, 16);
    return 0;
}

/* The bit of the first magic, found or planted, from bit r->next on in the
 * bytes before kend and ending by bit limit, with its *kind; UINT64_MAX if
 * there is none. */
static uint64_t reader_mark(dec *d, reader *r, uint64_t kend, uint64_t limit, int *kind)
{
    bz_mark m;
    uint64_t mb = UINT64_MAX;
    if (scan_next(&d->f, r->rb, r->next - 8 * r->base, kend - r->base,
                  limit == UINT64_MAX ? UINT64_MAX : limit - 8 * r->base, &m)) {
        mb = m.bit + 8 * r->base;
        *kind = m.kind;
    }
    while (r->fi < d->nfake && d->fake[r->fi].bit < r->next)
        r->fi++;
    if (r->fi < d->nfake && d->fake[r->fi].bit < 8 * kend && d->fake[r->fi].bit <= mb &&
        d->fake[r->fi].bit + 48 <= limit) {
        if (d->fake[r->fi].bit < mb) {
            mb = d->fake[r->fi].bit;
            *kind = d->fake[r->fi].kind;
        }
        r->fi++;
    }
    return mb;
}

/* Cuts a candidate at every magic of the bytes read (see reader_mark).
 * 0, or -1 if memory is short. */
static int reader_scan(dec *d, reader *r, uint64_t kend, uint64_t limit)
{
    for (;;) {
        int kind = 0;
        uint64_t mb = reader_mark(d, r, kend, limit, &kind);
        if (mb == UINT64_MAX)
            return 0;
        if (at_mark(d, r, mb, kind))
            return -1;
        r->next = mb + 1;
    }
}

/* The bytes read up to total go to the current candidate, which is the
 * last one at the end of the input, and is cut at byte kend when it has
 * gone too long without a magic. 1 at the end of the input, 0 to read on,
 * -1 if memory is short. */
static int reader_chunk_end(dec *d, reader *r, uint64_t kend, uint64_t total)
{
    r->next = 8 * kend;
    if (cand_append(r->cur, r->rb + (r->a - r->base), (size_t)(total - r->a)))
        return -1;
    r->a = total;
    if (r->eof) {
        publish(d, r->cur, K_EOF, 8 * total - r->cur->start);
        r->cur = NULL;
        return 1;
    }
    if (r->cur->raw_len > d->cap) { /* no magic for too long: cut at a byte */
        publish(d, r->cur, K_CAP, 8 * kend - r->cur->start);
        r->cur = cand_new(8 * kend, K_NONE, r->level);
        if (!r->cur || cand_append(r->cur, r->rb + (kend - r->base), (size_t)(total - kend)))
            return -1;
    }
    return 0;
}

static void *reader_main(void *arg)
{
    dec *d = arg;
    reader r;
    int err = 0;

    memset(&r, 0, sizeof r);
    r.level = 9;
    r.rb = malloc(d->chunk + 64);
    r.cur = cand_new(0, K_FILE, r.level);
    if (!r.rb || !r.cur)
        err = 1;
    while (!err && !reader_wait(d) && reader_fill(d, &r) == 0) {
        uint64_t total = r.base + r.len;
        uint64_t kend = r.eof ? total : total - 7;
        uint64_t limit = r.eof ? 8 * total : UINT64_MAX;
        int end = 0;
        if (reader_scan(d, &r, kend, limit) || (end = reader_chunk_end(d, &r, kend, total)) < 0)
            err = 1;
        else if (end)
            break;
    }
    cand_free(r.cur);
    free(r.rb);
    pthread_mutex_lock(&d->mu);
    if (err)
        d->mem_err = 1;
    d->scan_done = 1;
    pthread_cond_broadcast(&d->cv_seq);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* ----------------------------------------------------------------- workers */

/* Decodes the candidates first..last (consecutive) as one block (see
 * make_syn): here (remote < 0), or through remote decoder `remote`. */
static void trial_nodes(dec *d, int remote, cand *first, cand *last, int level, int to_eof, trial *t)
{
    unsigned char *syn;
    size_t synlen;
    uint64_t nbits;
    memset(t, 0, sizeof *t);
    t->res = make_syn(first, last, level, to_eof, &syn, &synlen, &nbits);
    if (t->res != 0)
        return;
    if (remote < 0) {
        bz_decode_block(syn, synlen, nbits, level, t);
    } else if (d->opts->remote(d->opts->remote_arg[remote], syn, synlen, nbits, level, !d->test_only, t)) {
        memset(t, 0, sizeof *t);
        t->res = T_MEM; /* the run fails; seq_block says why (d->lost) */
        pthread_mutex_lock(&d->mu);
        d->lost = 1;
        pthread_mutex_unlock(&d->mu);
    }
    t->crc = syn_crc(syn);
    free(syn);
}

typedef struct dworker {
    dec *d;
    int remote; /* -1: decode here, else the index of the remote decoder */
} dworker;


static void *worker_main(void *arg)
{
    dworker *wk = arg;
    dec *d = wk->d;
    pthread_mutex_lock(&d->mu);
    while (!d->stop) {
        cand *c = d->work_next;
        while (c && c->state != ST_NEW)
            c = c->next;
        d->work_next = c;
        /* only the first qmax candidates: those the calling thread reads
         * past the queue (merging) must not all hold a block's output */
        if (!c || c->id >= (d->head ? d->head->id : d->next_id) + (uint64_t)d->qmax) {
            pthread_cond_wait(&d->cv_work, &d->mu);
            continue;
        }
        c->state = ST_BUSY;
        d->work_next = c->next;
        int level = d->worker_level ? d->worker_level : c->level;
        pthread_mutex_unlock(&d->mu);

        trial t;
        trial_nodes(d, wk->remote, c, c, level, 0, &t);

        pthread_mutex_lock(&d->mu);
        c->t = t;
        c->tlevel = level;
        c->state = ST_DONE;
        if (c->dropped)
            cand_free(c);
        pthread_cond_broadcast(&d->cv_seq);
    }
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* -------------------------------------------------------- calling thread */

/* The reader failed (read error or memory): 1 with a message. */
static int reader_error(dec *d)
{
    if (d->read_err)
        return fail(d, BZ_DECODE_IOERR, "read error: %s", strerror(d->read_errno));
    return fail(d, BZ_DECODE_IOERR, "out of memory");
}

static int reader_failed(dec *d)
{
    pthread_mutex_lock(&d->mu);
    int r = d->read_err || d->mem_err;
    pthread_mutex_unlock(&d->mu);
    return r;
}

/* The first candidate held, or the one after c; NULL at the end of the
 * input (or if the reader failed). Waits for the reader. */
static cand *seq_next(dec *d, cand *c)
{
    pthread_mutex_lock(&d->mu);
    for (;;) {
        cand *n = c ? c->next : d->head;
        if (n || d->scan_done) {
            pthread_mutex_unlock(&d->mu);
            return n;
        }
        d->need_more = 1;
        pthread_cond_signal(&d->cv_scan);
        pthread_cond_wait(&d->cv_seq, &d->mu);
    }
}

/* Frees the candidates that end by bit pos. */
static void release_before(dec *d, uint64_t pos)
{
    pthread_mutex_lock(&d->mu);
    while (d->head && d->head->start + d->head->nbits <= pos) {
        cand *h = d->head;
        d->head = h->next;
        if (!d->head)
            d->tail = NULL;
        if (d->work_next == h)
            d->work_next = h->next;
        d->count--;
        if (h->state == ST_BUSY)
            h->dropped = 1; /* its worker frees it */
        else
            cand_free(h);
    }
    pthread_cond_signal(&d->cv_scan);
    pthread_cond_broadcast(&d->cv_work);
    pthread_mutex_unlock(&d->mu);
}

/* k <= 64 bits of the input at bit pos: 1, 0 if the input ends first, -1 if
 * the reader failed. */
static int seq_bits(dec *d, uint64_t pos, int k, uint64_t *v)
{
    cand *c = seq_next(d, NULL);
    *v = 0;
    for (int i = 0; i < k; i++) {
        uint64_t p = pos + (uint64_t)i;
        while (c && p >= c->start + c->nbits)
            c = seq_next(d, c);
        if (!c)
            return reader_failed(d) ? -1 : 0;
        if (p < c->start)
            return 0; /* released: cannot happen */
        *v = (*v << 1) | ((c->raw[p / 8 - c->start / 8] >> (7 - (p & 7))) & 1u);
    }
    return 1;
}

/* The candidate starting with a magic at bit pos. NULL with *why: 0 the
 * input ends inside what could be a magic, 2 no magic there, -1 reader
 * failed. */
static cand *node_at(dec *d, uint64_t pos, int *why)
{
    for (cand *c = seq_next(d, NULL); c; c = seq_next(d, c)) {
        if (c->start == pos && (c->skind == BZ_MARK_BLOCK || c->skind == BZ_MARK_EOS))
            return c;
        if (c->start > pos || c->start + c->nbits > pos)
            break;
    }
    if (reader_failed(d)) {
        *why = -1;
        return NULL;
    }
    /* like libbz2: compare byte by byte (the first one chooses the magic),
     * EOF before a mismatch is a truncation */
    uint64_t magic = BLOCK_MAGIC;
    for (int i = 0; i < 6; i++) {
        uint64_t v;
        int r = seq_bits(d, pos + 8 * (uint64_t)i, 8, &v);
        if (r <= 0) {
            *why = r < 0 ? -1 : 0;
            return NULL;
        }
        if (i == 0 && v == (EOS_MAGIC >> 40))
            magic = EOS_MAGIC;
        if (v != ((magic >> (40 - 8 * i)) & 0xFF))
            break;
    }
    *why = 2;
    return NULL;
}

/* Decodes the block starting at candidate n0: 0 (t, *end: the bit where
 * the next magic is), 2 corrupt, 3 truncated, 1 reader failed or memory. */
static int seq_block(dec *d, cand *n0, int level, trial *t, uint64_t *end)
{
    cand *last = n0;
    uint64_t total = n0->nbits;
    int have = 0, eos_seen = 0;

    pthread_mutex_lock(&d->mu);
    while (n0->state != ST_DONE)
        pthread_cond_wait(&d->cv_seq, &d->mu);
    if (n0->tlevel == level) {
        *t = n0->t;
        n0->t.out = NULL;
        have = 1;
    }
    pthread_mutex_unlock(&d->mu);
    if (!have) { /* decoded at another level: the reader guessed wrong */
        d->redecodes++;
        trial_nodes(d, -1, n0, n0, level, 0, t);
    }
    while (t->res == T_FAIL && !t->hopeless) {
        /* merge with the following candidates up to the next magic */
        do {
            cand *nx = seq_next(d, last);
            if (!nx) { /* the input ends in this block */
                if (reader_failed(d))
                    return 1;
                if (eos_seen)
                    return 2;
                /* Like libbz2: a data error is one found within the input's
                 * bytes; running out of them is a truncation. */
                trial_nodes(d, -1, n0, last, level, 1, t);
                int rc = t->res == T_MEM ? 1 : t->res == T_FAIL && t->hopeless ? 2 : 3;
                free(t->out);
                memset(t, 0, sizeof *t);
                return rc;
            }
            last = nx;
            total += nx->nbits;
            if (nx->skind == BZ_MARK_EOS)
                eos_seen = 1;
            if (total > BZ_DECODE_MAX_BLOCK_BITS(level))
                return 2; /* no block is that long */
        } while (last->ekind != BZ_MARK_BLOCK && last->ekind != BZ_MARK_EOS);
        d->merges++;
        trial_nodes(d, -1, n0, last, level, 0, t);
    }
    if (t->res == T_MEM)
        return 1;
    if (t->res != T_OK)
        return 2;
    *end = n0->start + total;
    return 0;
}

typedef struct wstate {
    uint64_t out_total;
} wstate;

/* Writes a verified block's output (and frees it). */
static int emit(dec *d, trial *t, uint64_t in_done, wstate *ws)
{
    int rc = 0;
    errno = 0;
    if (!d->test_only && t->outlen && fwrite(t->out, 1, t->outlen, d->out) != t->outlen)
        rc = fail(d, BZ_DECODE_IOERR, "error writing output: %s", strerror(errno ? errno : EIO));
    if (!rc) {
        ws->out_total += t->outlen;
        d->blocks += t->res == T_OK;
        if (d->opts && d->opts->progress)
            d->opts->progress(d->opts->progress_arg, in_done, ws->out_total);
    }
    free(t->out);
    memset(t, 0, sizeof *t);
    return rc;
}

static const char *where(char *buf, size_t n, unsigned stream, unsigned block, uint64_t byte)
{
    if (stream > 1)
        snprintf(buf, n, "block %u of stream %u (compressed offset %llu)", block, stream,
                 (unsigned long long)byte);
    else
        snprintf(buf, n, "block %u (compressed offset %llu)", block, (unsigned long long)byte);
    return buf;
}

/* The stream header ("BZh" + level digit) at bit pos, stream streams in.
 * Returns -1 with *level if it is one; else what seq_run returns: the end
 * of the input, trailing garbage, or not a bzip2 file. */
static int seq_header(dec *d, uint64_t pos, unsigned stream, int *level)
{
    static const char hdr[3] = {'B', 'Z', 'h'};
    for (int i = 0; i < 4; i++) {
        uint64_t v;
        int r = seq_bits(d, pos + 8 * (uint64_t)i, 8, &v);
        if (r < 0)
            return reader_error(d);
        if (r == 0) {
            if (i == 0 && stream > 0)
                return BZ_DECODE_OK;
            return fail(d, BZ_DECODE_CORRUPT, "compressed file ends unexpectedly (compressed offset %llu)",
                        (unsigned long long)(pos / 8 + (uint64_t)i));
        }
        int bad = i < 3 ? v != (uint64_t)(unsigned char)hdr[i] : v < '1' || v > '9';
        if (bad) {
            if (stream == 0)
                return fail(d, BZ_DECODE_CORRUPT, BZ_DECODE_NOT_BZIP2);
            fail(d, BZ_DECODE_OK, "trailing garbage after EOF ignored (compressed offset %llu)",
                 (unsigned long long)(pos / 8));
            return BZ_DECODE_OK;
        }
        *level = (int)v - '0';
    }
    return -1;
}

/* No magic at bit pos after `block` blocks of the stream (why as from
 * node_at): the run's result, with its message. */
static int seq_no_magic(dec *d, int why, unsigned stream, unsigned block, uint64_t pos)
{
    char wb[128];
    if (why < 0)
        return reader_error(d);
    if (why == 0 && block == 0)
        return fail(d, BZ_DECODE_CORRUPT,
                    "compressed file ends unexpectedly after the header of stream %u "
                    "(compressed offset %llu)",
                    stream, (unsigned long long)(pos / 8));
    if (why == 0)
        return fail(d, BZ_DECODE_CORRUPT, "compressed file ends unexpectedly after %s",
                    where(wb, sizeof wb, stream, block, pos / 8));
    return fail(d, BZ_DECODE_CORRUPT, "data integrity error: no block header in %s",
                where(wb, sizeof wb, stream, block + 1, pos / 8));
}

/* seq_block failed (rc 1, 2 or 3) on the block at bit pos: the run's
 * result, with its message. */
static int seq_block_error(dec *d, int rc, unsigned stream, unsigned block, uint64_t pos)
{
    char wb[128];
    if (rc == 1)
        return reader_failed(d) ? reader_error(d)
               : d->lost      ? fail(d, BZ_DECODE_IOERR, "lost a worker (MPI failed)")
                              : fail(d, BZ_DECODE_IOERR, "out of memory");
    if (rc == 2)
        return fail(d, BZ_DECODE_CORRUPT, "data integrity error in %s",
                    where(wb, sizeof wb, stream, block, pos / 8));
    return fail(d, BZ_DECODE_CORRUPT, "compressed file ends unexpectedly in %s",
                where(wb, sizeof wb, stream, block, pos / 8));
}

/* The end-of-stream magic at bit pos, after `block` blocks: 0 if the
 * combined CRC stored after it is `combined`, else the run's result. */
static int seq_trailer(dec *d, uint64_t pos, uint32_t combined, unsigned stream, unsigned block)
{
    char wb[128];
    uint64_t crc;
    int r = seq_bits(d, pos + 48, 32, &crc);
    if (r < 0)
        return reader_error(d);
    if (r == 0)
        return fail(d, BZ_DECODE_CORRUPT, "compressed file ends unexpectedly in the stream trailer after %s",
                    where(wb, sizeof wb, stream, block, pos / 8));
    if ((uint32_t)crc != combined)
        return fail(d, BZ_DECODE_CORRUPT, "data integrity error: wrong stream CRC in the trailer after %s",
                    where(wb, sizeof wb, stream, block, pos / 8));
    return 0;
}

/* Follows stream number `stream` (of the level) from bit *pos, after its
 * header, to its trailer, writing its blocks; *pos ends on the byte after
 * the trailer. 0, or the run's result if it ends here. */
static int seq_stream(dec *d, uint64_t *pos, unsigned stream, int level, wstate *ws)
{
    unsigned block = 0;
    uint32_t combined = 0;
    trial held; /* the last verified block, written once what follows is known */
    memset(&held, 0, sizeof held);
    int have_held = 0, why, rc;

    for (;;) {
        release_before(d, *pos);
        cand *c = node_at(d, *pos, &why);
        if (!c) {
            free(held.out);
            return seq_no_magic(d, why, stream, block, *pos);
        }
        if (c->skind != BZ_MARK_BLOCK)
            break;
        if (have_held && (rc = emit(d, &held, *pos / 8, ws)) != 0)
            return rc;
        have_held = 0;
        block++;
        uint64_t end = 0;
        rc = seq_block(d, c, level, &held, &end);
        if (rc)
            return seq_block_error(d, rc, stream, block, *pos);
        have_held = 1;
        combined = ((combined << 1) | (combined >> 31)) ^ held.crc;
        *pos = end;
    }
    /* end of stream: the stored combined CRC */
    if ((rc = seq_trailer(d, *pos, combined, stream, block)) != 0) {
        free(held.out);
        return rc;
    }
    *pos = (*pos + 80 + 7) / 8 * 8;
    return emit(d, &held, *pos / 8, ws); /* held may be empty */
}

static int seq_run(dec *d)
{
    uint64_t pos = 0;
    unsigned stream = 0;
    wstate ws = {0};

    for (;;) {
        /* a stream header at byte pos / 8 */
        int level = 0, rc;
        release_before(d, pos);
        if ((rc = seq_header(d, pos, stream, &level)) >= 0)
            return rc;
        stream++;
        pos += 32;
        if ((rc = seq_stream(d, &pos, stream, level, &ws)) != 0)
            return rc;
    }
}

/* scan_only: just let the reader run through the input. */
static int drain(dec *d)
{
    for (cand *c = seq_next(d, NULL); c; c = seq_next(d, NULL))
        release_before(d, c->start + c->nbits + (c->ekind == K_EOF ? 1 : 0));
    return reader_failed(d) ? reader_error(d) : BZ_DECODE_OK;
}

/* The state of a run, from the options and the testing knobs (dbg may be
 * NULL); NULL if memory is short (msg says so). */
static dec *dec_new(FILE *in, const char *name, FILE *out, const bz_decode_opts *opts,
                    const bz_decode_debug *dbg, char *msg, size_t msglen)
{
    int nremote = opts && opts->remote ? opts->nremote : 0;
    dec *d = calloc(1, sizeof *d);
    if (!d) {
        if (msg && msglen)
            snprintf(msg, msglen, "%s: out of memory", name ? name : "(input)");
        return NULL;
    }
    d->in = in;
    d->out = out;
    d->name = name ? name : "(input)";
    d->opts = opts;
    d->msg = msg;
    d->msglen = msglen;
    d->threads = opts && opts->threads > 0 ? opts->threads : 1;
    if (d->threads > MAX_THREADS)
        d->threads = MAX_THREADS;
    d->test_only = opts ? opts->test_only : 0;
    d->chunk = dbg && dbg->chunk >= 16 ? dbg->chunk : DEFAULT_CHUNK;
    d->cap = dbg && dbg->cap ? dbg->cap : DEFAULT_CAP;
    d->worker_level = dbg && dbg->worker_level >= 1 && dbg->worker_level <= 9 ? dbg->worker_level : 0;
    d->scan_only = dbg ? dbg->scan_only : 0;
    d->fake = dbg ? dbg->fake_marks : NULL;
    d->nfake = dbg && dbg->fake_marks ? dbg->nfake : 0;
    d->qmax = 2 * (d->threads + nremote) + 1;
    filt_init(&d->f);
    return d;
}

/* The threads of a run: the reader, then the local and remote decoders. */
typedef struct dcrew {
    pthread_t reader;
    pthread_t *workers;
    dworker *wk;
    int reader_started, nworkers;
} dcrew;

/* Starts the reader and n decoding threads (the first d->threads decode
 * here, the others through the remote decoders). 0, or the run's result
 * if a thread could not start. */
static int dcrew_start(dec *d, dcrew *cr, int n)
{
    if (pthread_create(&cr->reader, NULL, reader_main, d) != 0)
        return fail(d, BZ_DECODE_IOERR, "cannot start a thread");
    cr->reader_started = 1;
    for (; cr->nworkers < n; cr->nworkers++) {
        dworker *wk = &cr->wk[cr->nworkers];
        wk->d = d;
        wk->remote = cr->nworkers < d->threads ? -1 : cr->nworkers - d->threads;
        if (pthread_create(&cr->workers[cr->nworkers], NULL, worker_main, wk) != 0)
            return fail(d, BZ_DECODE_IOERR, "cannot start a thread");
    }
    return 0;
}

/* Stops the run's threads, waits for them and frees the candidates left. */
static void dcrew_stop(dec *d, dcrew *cr)
{
    pthread_mutex_lock(&d->mu);
    d->stop = 1;
    pthread_cond_broadcast(&d->cv_scan);
    pthread_cond_broadcast(&d->cv_work);
    pthread_cond_broadcast(&d->cv_seq);
    pthread_mutex_unlock(&d->mu);
    if (cr->reader_started)
        pthread_join(cr->reader, NULL);
    for (int i = 0; i < cr->nworkers; i++)
        pthread_join(cr->workers[i], NULL);
    while (d->head) {
        cand *h = d->head;
        d->head = h->next;
        cand_free(h);
    }
}

int bz_decompress_debug(FILE *in, const char *name, FILE *out, const bz_decode_opts *opts,
                        bz_decode_debug *dbg, char *msg, size_t msglen)
{
    int rc, nremote = opts && opts->remote ? opts->nremote : 0;

    if (msg && msglen)
        msg[0] = '\0';
    dec *d = dec_new(in, name, out, opts, dbg, msg, msglen);
    if (!d)
        return BZ_DECODE_IOERR;
    if (!in || (!out && !d->test_only)) {
        rc = fail(d, BZ_DECODE_IOERR, "no input or output file");
        free(d);
        return rc;
    }
    dcrew cr = {.workers = calloc((size_t)(d->threads + nremote), sizeof *cr.workers),
                .wk = calloc((size_t)(d->threads + nremote), sizeof *cr.wk)};
    if (!cr.workers || !cr.wk) {
        rc = fail(d, BZ_DECODE_IOERR, "out of memory");
        free(cr.workers);
        free(cr.wk);
        free(d);
        return rc;
    }
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv_scan, NULL);
    pthread_cond_init(&d->cv_work, NULL);
    pthread_cond_init(&d->cv_seq, NULL);

    rc = dcrew_start(d, &cr, d->threads + nremote);
    if (!rc)
        rc = d->scan_only ? drain(d) : seq_run(d);
    dcrew_stop(d, &cr);
    errno = 0;
    if (!d->test_only && out && fflush(out) != 0 && rc == BZ_DECODE_OK)
        rc = fail(d, BZ_DECODE_IOERR, "error writing output: %s", strerror(errno ? errno : EIO));
    if (dbg) {
        dbg->candidates = d->ncand;
        dbg->blocks = d->blocks;
        dbg->merges = d->merges;
        dbg->redecodes = d->redecodes;
    }
    pthread_cond_destroy(&d->cv_scan);
    pthread_cond_destroy(&d->cv_work);
    pthread_cond_destroy(&d->cv_seq);
    pthread_mutex_destroy(&d->mu);
    free(cr.workers);
    free(cr.wk);
    free(d);
    return rc;
}

int bz_decompress(FILE *in, const char *name, FILE *out, const bz_decode_opts *opts, char *msg,
                  size_t msglen)
{
    return bz_decompress_debug(in, name, out, opts, NULL, msg, msglen);
}
