/*
 * libFuzzer target for mpibzip2's decoder (tools/mpibzip2/bzdecode.c), which
 * reads untrusted input. Every input runs
 *   - bz_find_marks on the payload, against a bit-by-bit search here;
 *   - then either bz_decode_block on the payload taken as a one-block
 *     stream, or bz_decompress_debug on the payload (through stdio streams
 *     that can fail on purpose), with 1-3 threads, 0-3 in-process "remote"
 *     decoders, planted false magics, small reads and candidate cuts;
 * and compares the results with libbz2 decoding the same bytes in order
 * (the reference): a payload that libbz2 decodes completely must come out
 * identical; what bz_decompress writes must be a prefix of what libbz2
 * decodes; a success must be libbz2's output. Plus ASan/UBSan/LSan: no
 * crash, no leak, no access outside a buffer. A failed check aborts.
 *
 * Input: a 10-byte header, then the payload (at most 64 KiB):
 *   h[0]  bits 0-1: local threads 1 + (v % 3); bits 2-3: remote decoders;
 *         bit 4: test only (-t, no output); bit 5: bz_decode_block instead
 *         of bz_decompress; bit 6: a short message buffer (1 + h[9] % 64)
 *   h[1]  reader's read size: 0 default, else 15 + v bytes
 *   h[2]  reader's cut of magic-less candidates: 0 default, else 16 v bytes
 *   h[3]  workers decode at level v % 10 (0: the stream's)
 *   h[4]  bits 0-2: planted false magics; bit 3: some of them end-of-stream
 *   h[5]  bits 0-3: remote decoders fail after that many calls (0: never);
 *         bits 4-7: output fails after 8 KiB x v bytes (0: 16 MiB)
 *   h[6], h[7]  seed of the planted magics' positions
 *   h[8]  reading fails at byte 64 v of the payload (0: never)
 *   h[9]  message length (with bit 6 of h[0]); bz_decode_block: bits 0-2
 *         drop that many trailing bits from the block's length
 * Seeds: fuzz_seeds writes small valid .bz2 files with this header.
 */
#define _GNU_SOURCE /* fopencookie */
#include "bzdecode.h"

#include <bzlib.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { HDR = 10, MAX_PAYLOAD = 1 << 16, MAX_MARKS = 48, NMARK = 64 };
#define OUT_CAP ((size_t)16 << 20)   /* output kept, of either decoder */
#define REF_LIMIT ((size_t)64 << 20) /* the reference stops there: inconclusive */
#define BLOCK_MAGIC 0x314159265359ULL
#define EOS_MAGIC 0x177245385090ULL

static void must(int ok, const char *what, long a, long b)
{
    if (!ok) {
        fprintf(stderr, "fuzz_bzdecode: check failed: %s (%ld, %ld)\n", what, a, b);
        abort();
    }
}

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* ------------------------------------------------------- growable bytes */

typedef struct bytes {
    unsigned char *p;
    size_t n, cap;
} bytes;

/* Appends what fits under OUT_CAP. */
static void bytes_add(bytes *b, const void *p, size_t n)
{
    if (n > OUT_CAP - b->n)
        n = OUT_CAP - b->n;
    if (!n)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 65536;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        must(q != NULL, "out of memory", (long)cap, 0);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

/* ---------------------------------------------------------- magic search */

/* Every block / end-of-stream magic of p[0, n), bit by bit. */
static size_t naive_marks(const unsigned char *p, size_t n, bz_mark *m, size_t max)
{
    uint64_t v = 0, nb = 8 * (uint64_t)n;
    size_t cnt = 0;
    for (uint64_t b = 0; b < nb; b++) {
        v = ((v << 1) | ((p[b >> 3] >> (7 - (b & 7))) & 1u)) & 0xFFFFFFFFFFFFULL;
        if (b >= 47 && (v == BLOCK_MAGIC || v == EOS_MAGIC)) {
            if (cnt < max) {
                m[cnt].bit = b - 47;
                m[cnt].kind = v == BLOCK_MAGIC ? BZ_MARK_BLOCK : BZ_MARK_EOS;
            }
            cnt++;
        }
    }
    return cnt;
}

static size_t check_marks(const unsigned char *p, size_t n)
{
    bz_mark got[NMARK], want[NMARK];
    size_t k = bz_find_marks(p, n, got, NMARK), kw = naive_marks(p, n, want, NMARK);
    must(k == kw, "bz_find_marks: number of magics", (long)k, (long)kw);
    for (size_t i = 0; i < k && i < NMARK; i++)
        must(got[i].bit == want[i].bit && got[i].kind == want[i].kind, "bz_find_marks: a magic's place",
             (long)got[i].bit, (long)want[i].bit);
    must(bz_find_marks(p, n, NULL, 0) == k, "bz_find_marks: count without storage", (long)k, 0);
    return k;
}

/* ------------------------------------------------------------ reference */

enum { REF_CLEAN, REF_GARBAGE, REF_ERROR, REF_BIG };

/* libbz2 over p[0, n): stream after stream while a stream header follows.
 * CLEAN: every byte belongs to a complete stream; GARBAGE: complete
 * streams, then something that does not start with a header; ERROR: a
 * stream is corrupt or truncated (or the first has no header); BIG: more
 * than REF_LIMIT bytes of output (stopped there). out: the first OUT_CAP
 * bytes of output. */
static int ref_decode(const unsigned char *p, size_t n, bytes *out, size_t *total)
{
    static unsigned char win[1 << 16];
    size_t at = 0;
    int streams = 0;
    *total = 0;
    for (;;) {
        if (at == n)
            return streams ? REF_CLEAN : REF_ERROR;
        if (n - at < 4 || memcmp(p + at, "BZh", 3) || p[at + 3] < '1' || p[at + 3] > '9')
            return streams ? REF_GARBAGE : REF_ERROR;
        bz_stream s;
        memset(&s, 0, sizeof s);
        must(BZ2_bzDecompressInit(&s, 0, 0) == BZ_OK, "BZ2_bzDecompressInit", 0, 0);
        s.next_in = (char *)(uintptr_t)(p + at);
        s.avail_in = (unsigned)(n - at);
        int rc;
        for (;;) {
            s.next_out = (char *)win;
            s.avail_out = sizeof win;
            rc = BZ2_bzDecompress(&s);
            size_t got = sizeof win - s.avail_out;
            bytes_add(out, win, got);
            *total += got;
            if (*total > REF_LIMIT) {
                rc = -100;
                break;
            }
            if (rc != BZ_OK || (s.avail_in == 0 && s.avail_out > 0))
                break; /* the end, an error, or out of input (truncated) */
        }
        at = n - s.avail_in;
        BZ2_bzDecompressEnd(&s);
        if (rc == -100)
            return REF_BIG;
        if (rc != BZ_STREAM_END)
            return REF_ERROR;
        streams++;
    }
}

/* ------------------------------------------------------ bz_decode_block */

static void fuzz_block(const unsigned char *p, size_t n, const unsigned char *h)
{
    if (n < 4)
        return;
    int level = p[3] >= '1' && p[3] <= '9' ? p[3] - '0' : 1 + h[3] % 9;
    uint64_t nbits = 8 * (uint64_t)n, less = 32 + 80 + (h[9] & 7u);
    nbits = nbits > less ? nbits - less : 0;
    bz_trial t;
    bz_decode_block(p, n, nbits, level, &t);
    must(t.res == BZ_TRIAL_OK || t.res == BZ_TRIAL_FAIL || t.res == BZ_TRIAL_MEM, "bz_decode_block: result",
         t.res, 0);
    must(t.res != BZ_TRIAL_OK || t.out != NULL || t.outlen == 0, "bz_decode_block: output", (long)t.outlen, 0);

    /* the reference: libbz2 on the same bytes, one stream */
    bytes ref = {0};
    bz_stream s;
    static unsigned char win[1 << 16];
    size_t total = 0;
    int rc;
    memset(&s, 0, sizeof s);
    must(BZ2_bzDecompressInit(&s, 0, 0) == BZ_OK, "BZ2_bzDecompressInit", 0, 0);
    s.next_in = (char *)(uintptr_t)p;
    s.avail_in = (unsigned)n;
    do {
        s.next_out = (char *)win;
        s.avail_out = sizeof win;
        rc = BZ2_bzDecompress(&s);
        bytes_add(&ref, win, sizeof win - s.avail_out);
        total += sizeof win - s.avail_out;
    } while (rc == BZ_OK && !(s.avail_in == 0 && s.avail_out > 0) && total <= REF_LIMIT);
    BZ2_bzDecompressEnd(&s);

    if (t.res == BZ_TRIAL_OK)
        must(rc == BZ_STREAM_END && total == t.outlen && (!total || !memcmp(ref.p, t.out, total)),
             "bz_decode_block: success where libbz2 differs", rc, (long)t.outlen);
    if (rc == BZ_STREAM_END && p[3] == '0' + level)
        must(t.res != BZ_TRIAL_FAIL, "bz_decode_block: fails where libbz2 decodes", (long)total, 0);
    if (t.res == BZ_TRIAL_OK)
        must(!t.hopeless, "bz_decode_block: hopeless success", 0, 0);
    free(t.out);
    free(ref.p);
}

/* ------------------------------------------------ streams that can fail */

typedef struct source {
    const unsigned char *p;
    size_t n, at, fail_at; /* fail_at: reading fails there (0: never) */
    int failed;
} source;

static ssize_t source_read(void *c, char *buf, size_t size)
{
    source *s = c;
    if (s->fail_at && s->at >= s->fail_at) {
        s->failed = 1;
        errno = EIO;
        return -1;
    }
    size_t k = s->n - s->at;
    if (s->fail_at && k > s->fail_at - s->at)
        k = s->fail_at - s->at;
    if (k > size)
        k = size;
    memcpy(buf, s->p + s->at, k);
    s->at += k;
    return (ssize_t)k;
}

static int source_close(void *c)
{
    (void)c;
    return 0;
}

typedef struct sink {
    bytes b;
    size_t limit; /* writing more fails */
    int failed;
} sink;

static ssize_t sink_write(void *c, const char *buf, size_t size)
{
    sink *s = c;
    if (size > s->limit - s->b.n) {
        s->failed = 1;
        errno = ENOSPC;
        return 0;
    }
    bytes_add(&s->b, buf, size);
    return (ssize_t)size;
}

static int sink_close(void *c)
{
    (void)c;
    return 0;
}

/* ---------------------------------------------------- remote decoders */

typedef struct remote {
    pthread_mutex_t mu;
    int calls, fail_after, failed;
} remote;

/* What an MPI worker does for rank 0 (mpi_work.c): bz_decode_block, the
 * output only when it is wanted; a transport that fails after fail_after
 * calls. */
static int remote_decode(void *arg, const unsigned char *syn, size_t synlen, uint64_t nbits, int level, int want_out,
                         bz_trial *t)
{
    remote *r = arg;
    pthread_mutex_lock(&r->mu);
    int n = ++r->calls, fail = r->fail_after && n > r->fail_after;
    if (fail)
        r->failed = 1;
    pthread_mutex_unlock(&r->mu);
    if (fail)
        return -1;
    bz_decode_block(syn, synlen, nbits, level, t);
    if (!want_out) {
        free(t->out);
        t->out = NULL;
    }
    return 0;
}

/* ------------------------------------------------------- bz_decompress */

typedef struct prog {
    uint64_t in, out;
    size_t n;
    const sink *sk; /* NULL when testing only */
} prog;

static void progress(void *arg, uint64_t in, uint64_t out)
{
    prog *g = arg;
    must(in >= g->in && in <= g->n, "progress: compressed bytes done", (long)in, (long)g->in);
    must(out >= g->out, "progress: output bytes done", (long)out, (long)g->out);
    if (g->sk)
        must(out == g->sk->b.n, "progress: output bytes done against bytes written", (long)out, (long)g->sk->b.n);
    g->in = in;
    g->out = out;
}

static int cmp_mark(const void *a, const void *b)
{
    const bz_mark *x = a, *y = b;
    return x->bit < y->bit ? -1 : x->bit > y->bit;
}

static void fuzz_stream(const unsigned char *p, size_t n, const unsigned char *h)
{
    int test_only = (h[0] >> 4) & 1, threads = 1 + (h[0] & 3) % 3, nremote = (h[0] >> 2) & 3;
    size_t msglen = (h[0] & 0x40) ? 1 + (size_t)(h[9] % 64) : 256;
    bz_decode_debug dbg;
    memset(&dbg, 0, sizeof dbg);
    dbg.chunk = h[1] ? 15 + (size_t)h[1] : 0;
    dbg.cap = h[2] ? 16 * (size_t)h[2] : 0;
    dbg.worker_level = h[3] % 10;
    bz_mark fake[8];
    int nfake = h[4] & 7, fake_eos = 0;
    uint64_t seed = (uint64_t)h[6] << 8 | h[7];
    for (int i = 0; i < nfake; i++) {
        fake[i].bit = rng(&seed) % (8 * (uint64_t)n + 64);
        fake[i].kind = (h[4] & 8) && (rng(&seed) & 1) ? BZ_MARK_EOS : BZ_MARK_BLOCK;
        fake_eos |= fake[i].kind == BZ_MARK_EOS;
    }
    qsort(fake, (size_t)nfake, sizeof fake[0], cmp_mark);
    dbg.fake_marks = nfake ? fake : NULL;
    dbg.nfake = (size_t)nfake;

    source src = {p, n, 0, h[8] ? 64 * (size_t)h[8] : 0, 0};
    sink sk = {{0}, (h[5] >> 4) ? 8192 * (size_t)(h[5] >> 4) : OUT_CAP, 0};
    cookie_io_functions_t rio = {source_read, NULL, NULL, source_close};
    cookie_io_functions_t wio = {NULL, sink_write, NULL, sink_close};
    FILE *in = fopencookie(&src, "r", rio), *out = test_only ? NULL : fopencookie(&sk, "w", wio);
    must(in && (test_only || out), "fopencookie", 0, 0);
    if (out)
        setvbuf(out, NULL, _IONBF, 0); /* bytes written = bytes in the sink, at every progress call */

    remote rem = {PTHREAD_MUTEX_INITIALIZER, 0, h[5] & 15, 0};
    void *rargs[3] = {&rem, &rem, &rem};
    prog g = {0, 0, n, out ? &sk : NULL};
    bz_decode_opts o = {threads, test_only, progress, &g, nremote, remote_decode, rargs};
    char *msg = malloc(msglen);
    must(msg != NULL, "out of memory", 0, 0);

    int rc = bz_decompress_debug(in, "fuzz", out, &o, &dbg, msg, msglen);
    fclose(in);
    if (out)
        fclose(out);

    must(rc == BZ_DECODE_OK || rc == BZ_DECODE_IOERR || rc == BZ_DECODE_CORRUPT, "bz_decompress: return code", rc,
         0);
    must(strlen(msg) < msglen, "bz_decompress: message length", (long)strlen(msg), (long)msglen);
    if (rc != BZ_DECODE_OK && msglen > 8)
        must(msg[0] != '\0', "bz_decompress: an error without a message", rc, 0);
    int injected = src.failed || sk.failed || rem.failed;
    must(rc != BZ_DECODE_IOERR || injected, "bz_decompress: an I/O error nobody caused", rc, 0);
    must(!test_only || sk.b.n == 0, "bz_decompress: output while testing", (long)sk.b.n, 0);
    must(test_only || g.out == sk.b.n, "bz_decompress: output bytes reported against written", (long)g.out,
         (long)sk.b.n);

    bytes ref = {0};
    size_t total;
    int st = ref_decode(p, n, &ref, &total);
    if (st == REF_CLEAN) { /* libbz2 decodes it all: so must we, unless a failure was injected */
        must(rc == BZ_DECODE_OK || (rc == BZ_DECODE_IOERR && injected), "bz_decompress: fails on a valid input", rc,
             (long)total);
        if (rc == BZ_DECODE_OK && !test_only)
            must(sk.b.n == total && (!total || !memcmp(sk.b.p, ref.p, total)),
                 "bz_decompress: output differs from libbz2's", (long)sk.b.n, (long)total);
        if (rc == BZ_DECODE_OK)
            must(msg[0] == '\0', "bz_decompress: a warning on a valid input", 0, 0);
    }
    /* planted end-of-stream magics where the input has none may make a
     * broken input look whole: only the check above holds for them */
    if (!fake_eos && st != REF_BIG) {
        if (rc == BZ_DECODE_OK)
            must(st == REF_CLEAN || st == REF_GARBAGE, "bz_decompress: success where libbz2 fails", st, 0);
        if (!test_only) {
            must(sk.b.n <= ref.n, "bz_decompress: wrote more than libbz2 decodes", (long)sk.b.n, (long)ref.n);
            must(!sk.b.n || !memcmp(sk.b.p, ref.p, sk.b.n), "bz_decompress: output is not a prefix of libbz2's",
                 (long)sk.b.n, 0);
            if (rc == BZ_DECODE_OK)
                must(sk.b.n == total, "bz_decompress: success with other output than libbz2's", (long)sk.b.n,
                     (long)total);
        }
    }
    free(ref.p);
    free(sk.b.p);
    free(msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < HDR || size - HDR > MAX_PAYLOAD)
        return 0;
    const unsigned char *h = data;
    size_t n = size - HDR;
    /* the payload on its own in the heap: ASan sees any read past it */
    unsigned char *p = malloc(n ? n : 1);
    must(p != NULL, "out of memory", 0, 0);
    memcpy(p, data + HDR, n);
    size_t marks = check_marks(p, n);
    if (h[0] & 0x20)
        fuzz_block(p, n, h);
    else if (marks + (h[4] & 7) <= MAX_MARKS) /* bounds the decodes (and merges) per input */
        fuzz_stream(p, n, h);
    free(p);
    return 0;
}
