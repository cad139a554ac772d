/*
 * Tests of the parallel bzip2 decompressor (tools/mpibzip2/bzdecode.c).
 *
 * Inputs are made in a temporary directory and compressed with the bzip2
 * command; bz_decompress must give them back at 1, 2 and 4 threads. Broken
 * inputs must give 2 with only verified blocks written: a prefix of the
 * data ending on a block boundary. The block boundaries come from a naive
 * reference splitter here (bit-by-bit magic search, each block decoded on
 * its own with BZ2_bzBuffToBuffDecompress). False magics are planted
 * through the debug entry point to force the merge path.
 *
 *   test_bzdecode            run the tests (exit 0 on success)
 *   test_bzdecode --bench    measure the magic scanner
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include "bzdecode.h"

#include <bzlib.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long checks, failures;

#define CHECK(cond, ...)                                                          \
    do {                                                                          \
        checks++;                                                                 \
        if (!(cond)) {                                                            \
            failures++;                                                           \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);       \
            fprintf(stderr, __VA_ARGS__);                                         \
            fprintf(stderr, "\n");                                                \
        }                                                                         \
    } while (0)

static char dir[64];

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ------------------------------------------------------------------ files */

typedef struct buf {
    unsigned char *p;
    size_t n;
} buf;

static void path_of(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

static void write_file(const char *name, const void *p, size_t n)
{
    char path[256];
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(2);
    }
}

static buf read_file(const char *name)
{
    char path[256];
    buf b = {NULL, 0};
    path_of(path, sizeof path, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path);
        exit(2);
    }
    size_t cap = 1 << 16;
    b.p = malloc(cap);
    for (;;) {
        if (b.n == cap)
            b.p = realloc(b.p, cap *= 2);
        size_t k = fread(b.p + b.n, 1, cap - b.n, f);
        if (!k)
            break;
        b.n += k;
    }
    fclose(f);
    return b;
}

/* name.bz2 made by `bzip2 -level`; returns its bytes. */
static buf compress(const char *name, int level, const char *zname)
{
    char cmd[700], in[256], out[256];
    path_of(in, sizeof in, name);
    path_of(out, sizeof out, zname);
    snprintf(cmd, sizeof cmd, "bzip2 -%d -c '%s' > '%s'", level, in, out);
    if (system(cmd) != 0) {
        fprintf(stderr, "failed: %s\n", cmd);
        exit(2);
    }
    return read_file(zname);
}

static buf cat2(buf a, buf b)
{
    buf r;
    r.n = a.n + b.n;
    r.p = malloc(r.n + 1);
    memcpy(r.p, a.p, a.n);
    memcpy(r.p + a.n, b.p, b.n);
    return r;
}

static buf cat_str(buf a, const char *s)
{
    buf b = {(unsigned char *)(uintptr_t)s, strlen(s)};
    return cat2(a, b);
}

/* ------------------------------------------------- the reference splitter */

#define BLOCK_MAGIC 0x314159265359ULL
#define EOS_MAGIC 0x177245385090ULL

typedef struct ref {
    int nblocks, nstreams;
    uint64_t start[64], end[64]; /* bits of each block (magic to next magic) */
    size_t bound[65];            /* output bytes after 0, 1, ... blocks */
    uint64_t eos[16];            /* bit of each end-of-stream magic */
    int block_stream[64];
} ref;

static int bit_at(const unsigned char *p, uint64_t b)
{
    return (p[b >> 3] >> (7 - (b & 7))) & 1;
}

static uint64_t bits_at(const unsigned char *p, uint64_t b, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v = (v << 1) | (uint64_t)bit_at(p, b + (uint64_t)i);
    return v;
}

static void put_bit(unsigned char *p, uint64_t *n, int v)
{
    if (v)
        p[*n >> 3] |= (unsigned char)(0x80 >> (*n & 7));
    (*n)++;
}

static void put_bits(unsigned char *p, uint64_t *n, uint64_t v, int k)
{
    for (int i = k - 1; i >= 0; i--)
        put_bit(p, n, (int)((v >> i) & 1));
}

/* Splits a good bzip2 file into its blocks; 0, or -1 if that fails. */
static int ref_split(const unsigned char *z, size_t zn, ref *r)
{
    uint64_t total = (uint64_t)zn * 8;
    size_t pos = 0;
    unsigned char *dec = malloc((size_t)5180000 * 9 + 4096);
    memset(r, 0, sizeof *r);
    while (pos < zn) {
        if (zn - pos < 4 || memcmp(z + pos, "BZh", 3) || z[pos + 3] < '1' || z[pos + 3] > '9')
            break; /* trailing garbage */
        int level = z[pos + 3] - '0';
        uint64_t b = (uint64_t)pos * 8 + 32;
        for (;;) {
            if (b + 48 > total)
                goto bad;
            uint64_t m = bits_at(z, b, 48);
            if (m == EOS_MAGIC) {
                r->eos[r->nstreams++] = b;
                pos = (size_t)((b + 80 + 7) / 8);
                break;
            }
            if (m != BLOCK_MAGIC || r->nblocks >= 64)
                goto bad;
            uint64_t e = b + 48, w = 0;
            int have = 0;
            for (; e < total; e++) { /* rolling 48-bit window */
                w = ((w << 1) | (uint64_t)bit_at(z, e)) & 0xFFFFFFFFFFFFULL;
                if (++have >= 48 && (w == BLOCK_MAGIC || w == EOS_MAGIC))
                    break;
            }
            if (e >= total)
                goto bad;
            e -= 47;
            uint64_t nb = e - b;
            unsigned char *syn = calloc(1, (size_t)(nb / 8) + 32);
            uint64_t n = 0;
            put_bits(syn, &n, 0x425A6830u + (unsigned)level, 32);
            for (uint64_t i = 0; i < nb; i++)
                put_bit(syn, &n, bit_at(z, b + i));
            put_bits(syn, &n, EOS_MAGIC, 48);
            put_bits(syn, &n, bits_at(z, b + 48, 32), 32);
            unsigned dl = 5180000u * 9 + 4096;
            int rc = BZ2_bzBuffToBuffDecompress((char *)dec, &dl, (char *)syn, (unsigned)((n + 7) / 8), 0, 0);
            free(syn);
            if (rc != BZ_OK)
                goto bad;
            r->start[r->nblocks] = b;
            r->end[r->nblocks] = e;
            r->block_stream[r->nblocks] = r->nstreams;
            r->bound[r->nblocks + 1] = r->bound[r->nblocks] + dl;
            r->nblocks++;
            b = e;
        }
    }
    free(dec);
    return 0;
bad:
    free(dec);
    return -1;
}

/* ------------------------------------------------------------- decoding */

typedef struct result {
    int rc;
    char msg[512];
    unsigned char *out;
    size_t outlen;
    bz_decode_debug dbg;
    uint64_t prog_in, prog_out, prog_calls;
    int prog_monotonic;
} result;

static void progress_cb(void *arg, uint64_t in, uint64_t out)
{
    result *r = arg;
    if (in < r->prog_in || out < r->prog_out)
        r->prog_monotonic = 0;
    r->prog_in = in;
    r->prog_out = out;
    r->prog_calls++;
}

static void run_dec(const buf *z, int threads, const bz_decode_debug *dbg, result *r)
{
    char path[256];
    memset(r, 0, sizeof *r);
    r->prog_monotonic = 1;
    write_file("in.bz2", z->p, z->n);
    path_of(path, sizeof path, "in.bz2");
    FILE *in = fopen(path, "rb");
    FILE *out = open_memstream((char **)&r->out, &r->outlen);
    bz_decode_opts o = {threads, 0, progress_cb, r, 0, NULL, NULL};
    if (dbg)
        r->dbg = *dbg;
    r->rc = bz_decompress_debug(in, "in.bz2", out, &o, &r->dbg, r->msg, sizeof r->msg);
    fclose(out);
    fclose(in);
}

static void free_res(result *r)
{
    free(r->out);
    r->out = NULL;
}

/* rc 0 and exactly the data, at 1, 2 and 4 threads. */
static void expect_ok(const char *what, const buf *z, const buf *data)
{
    static const int th[3] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        result r;
        run_dec(z, th[i], NULL, &r);
        CHECK(r.rc == 0, "%s, %d threads: rc %d (%s)", what, th[i], r.rc, r.msg);
        CHECK(r.msg[0] == '\0', "%s: unexpected message %s", what, r.msg);
        CHECK(r.outlen == data->n && (data->n == 0 || !memcmp(r.out, data->p, data->n)),
              "%s, %d threads: output differs (%zu bytes, want %zu)", what, th[i], r.outlen, data->n);
        CHECK(r.prog_monotonic && r.prog_out == data->n && (data->n == 0 || r.prog_in == z->n),
              "%s: progress %llu/%llu", what, (unsigned long long)r.prog_in, (unsigned long long)r.prog_out);
        free_res(&r);
    }
}

static int is_bound(const ref *rf, size_t n)
{
    for (int i = 0; i <= rf->nblocks; i++)
        if (rf->bound[i] == n)
            return 1;
    return 0;
}

/* rc 2, the message holds `needle`, the output is a prefix of data that ends
 * on a block boundary (exactly want_blocks blocks if >= 0). */
static void expect_corrupt(const char *what, const buf *z, const buf *data, const ref *rf, int want_blocks,
                           const char *needle, int threads)
{
    result r;
    run_dec(z, threads, NULL, &r);
    CHECK(r.rc == 2, "%s: rc %d (%s)", what, r.rc, r.msg);
    CHECK(!needle || strstr(r.msg, needle), "%s: message '%s' lacks '%s'", what, r.msg, needle);
    CHECK(r.outlen <= data->n && (r.outlen == 0 || !memcmp(r.out, data->p, r.outlen)),
          "%s: output (%zu bytes) is not a prefix of the data", what, r.outlen);
    CHECK(is_bound(rf, r.outlen), "%s: output of %zu bytes does not end on a block boundary", what, r.outlen);
    if (want_blocks >= 0)
        CHECK(r.outlen == rf->bound[want_blocks], "%s: %zu bytes written, want %d blocks = %zu", what, r.outlen,
              want_blocks, rf->bound[want_blocks]);
    free_res(&r);
}

/* ------------------------------------------------------------- the data */

static buf gen_text(size_t n)
{
    buf b = {malloc(n), 0};
    FILE *p = popen("cat /usr/include/*.h /usr/include/*/*.h 2>/dev/null", "r");
    if (p) {
        size_t k;
        while (b.n < n && (k = fread(b.p + b.n, 1, n - b.n, p)) > 0)
            b.n += k;
        pclose(p);
    }
    while (b.n < n) /* not enough headers: repeat */
        b.p[b.n] = b.n ? b.p[b.n % (b.n / 2 + 1)] : 'a', b.n++;
    return b;
}

static buf gen_random(size_t n, uint64_t seed, int no_runs)
{
    buf b = {malloc(n ? n : 1), n};
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)rng_next(&seed);
        if (no_runs && i && c == b.p[i - 1])
            c ^= 1;
        b.p[i] = c;
    }
    return b;
}

/* runs of 254..260 equal bytes, with short random strings between */
static buf gen_runs(size_t n, uint64_t seed)
{
    buf b = {malloc(n), 0};
    int len = 254;
    while (b.n < n) {
        unsigned char c = (unsigned char)rng_next(&seed);
        for (int i = 0; i < len && b.n < n; i++)
            b.p[b.n++] = c;
        int lit = (int)(rng_next(&seed) % 24);
        for (int i = 0; i < lit && b.n < n; i++)
            b.p[b.n++] = (unsigned char)rng_next(&seed);
        len = len == 260 ? 254 : len + 1;
    }
    return b;
}

/* -------------------------------------------------------------- the tests */

static void test_marks(void)
{
    uint64_t seed = 42;
    for (int round = 0; round < 40; round++) {
        size_t n = 64 + (size_t)(rng_next(&seed) % 5000);
        buf b = gen_random(n, seed + (uint64_t)round, 0);
        uint64_t want[8];
        int kinds[8], nw = 0;
        /* plant magics at increasing offsets, all shifts, near both ends */
        uint64_t at = round % 3 == 0 ? 0 : rng_next(&seed) % 64;
        while (nw < 8 && at + 48 <= (uint64_t)n * 8) {
            int kind = (int)(rng_next(&seed) & 1) ? BZ_MARK_BLOCK : BZ_MARK_EOS;
            uint64_t m = kind == BZ_MARK_BLOCK ? BLOCK_MAGIC : EOS_MAGIC;
            for (int i = 0; i < 48; i++) {
                uint64_t q = at + (uint64_t)i;
                unsigned char bit = (unsigned char)(0x80 >> (q & 7));
                if ((m >> (47 - i)) & 1)
                    b.p[q >> 3] |= bit;
                else
                    b.p[q >> 3] &= (unsigned char)~bit;
            }
            want[nw] = at;
            kinds[nw++] = kind;
            uint64_t left = (uint64_t)n * 8 - at - 48;
            uint64_t step = 48 + rng_next(&seed) % (left / 4 + 1);
            if (round % 5 == 1 && left >= 48)
                step = left; /* the last one ends exactly at the end */
            at += step;
        }
        bz_mark got[16];
        size_t ng = bz_find_marks(b.p, n, got, 16);
        /* a naive search gives the same list */
        size_t nn = 0, ok = 1;
        for (uint64_t q = 0; q + 48 <= (uint64_t)n * 8; q++) {
            uint64_t v = bits_at(b.p, q, 48);
            if (v == BLOCK_MAGIC || v == EOS_MAGIC) {
                if (nn >= ng || got[nn].bit != q || got[nn].kind != (v == BLOCK_MAGIC ? BZ_MARK_BLOCK : BZ_MARK_EOS))
                    ok = 0;
                nn++;
            }
        }
        CHECK(ok && nn == ng, "scanner round %d: %zu marks, naive %zu", round, ng, nn);
        int all = 1;
        for (int i = 0; i < nw; i++) {
            int f = 0;
            for (size_t j = 0; j < ng && j < 16; j++)
                f |= got[j].bit == want[i] && got[j].kind == kinds[i];
            all &= f;
        }
        CHECK(all, "scanner round %d: a planted magic was missed", round);
        free(b.p);
    }
    /* an EOS magic cut by the end of the buffer (its last 4 bits are 0) */
    unsigned char e[6] = {0x17, 0x72, 0x45, 0x38, 0x50, 0x90};
    bz_mark m;
    CHECK(bz_find_marks(e, 6, &m, 1) == 1 && m.bit == 0 && m.kind == BZ_MARK_EOS, "whole EOS magic");
    CHECK(bz_find_marks(e, 5, &m, 1) == 0, "cut EOS magic found");
}


/* data written to `name`, compressed at the level */
static buf make(const char *name, const buf *data, int level)
{
    char zname[128];
    write_file(name, data->p, data->n);
    snprintf(zname, sizeof zname, "%s.%d.bz2", name, level);
    return compress(name, level, zname);
}

static buf copy_buf(const buf *b)
{
    buf r = {malloc(b->n + 1), b->n};
    memcpy(r.p, b->p, b->n);
    return r;
}

static void flip(buf *b, uint64_t bit)
{
    b->p[bit >> 3] ^= (unsigned char)(0x80 >> (bit & 7));
}

static int cmp_mark(const void *a, const void *b)
{
    const bz_mark *x = a, *y = b;
    return x->bit < y->bit ? -1 : x->bit > y->bit;
}

/* decode with planted magics (and other knobs): exact output expected */
static void expect_ok_dbg(const char *what, const buf *z, const buf *data, bz_decode_debug *dbg, int threads,
                          uint64_t min_merges, uint64_t min_redecodes)
{
    result r;
    if (dbg->fake_marks)
        qsort((void *)(uintptr_t)dbg->fake_marks, dbg->nfake, sizeof(bz_mark), cmp_mark);
    run_dec(z, threads, dbg, &r);
    CHECK(r.rc == 0, "%s, %d threads: rc %d (%s)", what, threads, r.rc, r.msg);
    CHECK(r.outlen == data->n && (data->n == 0 || !memcmp(r.out, data->p, data->n)),
          "%s, %d threads: output differs (%zu bytes, want %zu)", what, threads, r.outlen, data->n);
    CHECK(r.dbg.merges >= min_merges, "%s: %llu merges, want >= %llu", what, (unsigned long long)r.dbg.merges,
          (unsigned long long)min_merges);
    CHECK(r.dbg.redecodes >= min_redecodes, "%s: %llu redecodes, want >= %llu", what,
          (unsigned long long)r.dbg.redecodes, (unsigned long long)min_redecodes);
    free_res(&r);
}

/* Single streams of every kind at -1 and -9: the reference's block count,
 * and the decoder's output. */
static void good_streams(buf *empty, buf *one, buf *text, buf *rnd, buf *same, buf *runs, buf *blk1,
                         buf *blk2)
{
    struct {
        const char *name;
        buf *data;
        int level, blocks; /* blocks: expected count, or -1 */
    } cases[] = {
        {"empty", empty, 9, 0}, {"one", one, 9, 1},   {"one", one, 1, 1},   {"text", text, 1, -1},
        {"text", text, 9, 4},   {"rnd", rnd, 1, 21},  {"rnd", rnd, 9, 3},   {"same", same, 1, 1},
        {"same", same, 9, 1},   {"runs", runs, 1, -1}, {"blk1", blk1, 1, 1}, {"blk2", blk2, 1, 2},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[64];
        ref rf;
        snprintf(what, sizeof what, "%s -%d", cases[i].name, cases[i].level);
        buf z = make(cases[i].name, cases[i].data, cases[i].level);
        if (cases[i].blocks >= 0 || !strcmp(cases[i].name, "runs")) {
            CHECK(ref_split(z.p, z.n, &rf) == 0, "%s: reference split failed", what);
            if (cases[i].blocks >= 0)
                CHECK(rf.nblocks == cases[i].blocks, "%s: %d blocks, want %d", what, rf.nblocks, cases[i].blocks);
            else
                CHECK(rf.nblocks >= 3, "%s: %d blocks", what, rf.nblocks);
        }
        expect_ok(what, &z, cases[i].data);
        free(z.p);
    }
}

/* Bytes after the last stream (multi, which decodes to data): ignored
 * garbage, or a truncated / corrupt stream. */
static void good_trailing(const buf *multi, const buf *data)
{
    static const struct {
        const char *tail;
        int rc;
        const char *needle;
    } trail[] = {
        {"some trailing garbage\n", 0, "trailing garbage"},
        {"BZh0abcdefgh", 0, "trailing garbage"},
        {"BZx", 0, "trailing garbage"},
        {"\0\0\0\0", 0, "trailing garbage"},
        {"B", 2, "ends unexpectedly"},
        {"BZh", 2, "ends unexpectedly"},
        {"BZh9", 2, "ends unexpectedly"},
        {"BZh9junkjunkjunkjunk", 2, "data integrity error"},
    };
    for (size_t i = 0; i < sizeof trail / sizeof trail[0]; i++) {
        buf t = trail[i].tail[0] ? cat_str(*multi, trail[i].tail)
                                 : cat2(*multi, (buf){(unsigned char *)"\0\0\0\0", 4});
        for (int th = 1; th <= 4; th *= 2) {
            result r;
            run_dec(&t, th, NULL, &r);
            CHECK(r.rc == trail[i].rc && strstr(r.msg, trail[i].needle), "trailing '%s', %d threads: rc %d (%s)",
                  trail[i].tail, th, r.rc, r.msg);
            CHECK(r.outlen == data->n && !memcmp(r.out, data->p, data->n), "trailing '%s': output differs",
                  trail[i].tail);
            free_res(&r);
        }
        free(t.p);
    }
}

/* planted magics in a two-stream file (rf: its reference split; b2: the
 * first block of stream 2): in the header of stream 2, in the padding
 * after stream 1, in blocks */
static void good_planted(const buf *multi, const buf *data, const ref *rf, int b2)
{
    uint64_t h2 = (rf->eos[0] + 80 + 7) / 8 * 8;
    bz_mark fk[] = {
        {3, BZ_MARK_BLOCK},
        {rf->eos[0] + 81, BZ_MARK_BLOCK},
        {h2 + 5, BZ_MARK_EOS},
        {h2 + 31, BZ_MARK_BLOCK},
        {(rf->start[1] + rf->end[1]) / 2, BZ_MARK_BLOCK},
        {(rf->start[b2] + rf->end[b2]) / 2, BZ_MARK_EOS},
        {rf->eos[1] + 40, BZ_MARK_BLOCK},
    };
    bz_decode_debug dbg;
    memset(&dbg, 0, sizeof dbg);
    dbg.fake_marks = fk;
    dbg.nfake = sizeof fk / sizeof fk[0];
    for (int th = 1; th <= 4; th *= 2)
        expect_ok_dbg("planted magics, two streams", multi, data, &dbg, th, 2, 0);
}

/* the worker decoded at another level than the stream's (zt: text at -1) */
static void good_worker_level(const buf *zt, const buf *text)
{
    bz_decode_debug dbg;
    memset(&dbg, 0, sizeof dbg);
    dbg.worker_level = 9;
    expect_ok_dbg("worker level 9 on -1", zt, text, &dbg, 2, 0, 3);
    dbg.worker_level = 1;
    buf zt9 = make("text", text, 9);
    expect_ok_dbg("worker level 1 on -9", &zt9, text, &dbg, 2, 0, 4);
    /* a -9 stream whose header says -1: its blocks are too big */
    buf lo = copy_buf(&zt9);
    lo.p[3] = '1';
    ref r9;
    CHECK(ref_split(zt9.p, zt9.n, &r9) == 0, "text -9: reference split");
    expect_corrupt("-9 data in a -1 stream", &lo, text, &r9, 0, "data integrity error in block 1", 2);
    free(lo.p);
    free(zt9.p);
}

/* input from a pipe, and -t */
static void good_pipe_and_test(const buf *multi, const buf *data)
{
    char cmd[300], path[256];
    write_file("multi.bz2", multi->p, multi->n);
    path_of(path, sizeof path, "multi.bz2");
    snprintf(cmd, sizeof cmd, "cat '%s'", path);
    FILE *in = popen(cmd, "r");
    result r;
    memset(&r, 0, sizeof r);
    FILE *out = open_memstream((char **)&r.out, &r.outlen);
    bz_decode_opts o = {3, 0, NULL, NULL, 0, NULL, NULL};
    r.rc = bz_decompress(in, "pipe", out, &o, r.msg, sizeof r.msg);
    fclose(out);
    pclose(in);
    CHECK(r.rc == 0 && r.outlen == data->n && !memcmp(r.out, data->p, data->n), "pipe input: rc %d (%s)",
          r.rc, r.msg);
    free_res(&r);

    in = fopen(path, "rb");
    o.test_only = 1;
    r.rc = bz_decompress(in, "multi.bz2", NULL, &o, r.msg, sizeof r.msg);
    fclose(in);
    CHECK(r.rc == 0 && !r.msg[0], "-t: rc %d (%s)", r.rc, r.msg);
}

static void test_good(void)
{
    buf empty = {NULL, 0};
    buf one = {(unsigned char *)"x", 1};
    buf text = gen_text(3000000);
    buf rnd = gen_random(2000000, 7, 0);
    buf same = {malloc(5000000), 5000000};
    buf runs = gen_runs(3500000, 9);
    buf blk1 = gen_random(99981, 11, 1), blk2 = gen_random(99982, 11, 1);
    memset(same.p, 'x', same.n);
    good_streams(&empty, &one, &text, &rnd, &same, &runs, &blk1, &blk2);

    /* several streams, trailing bytes */
    buf zt = make("text", &text, 1), zr = make("rnd", &rnd, 9), ze = make("empty", &empty, 9),
        zo = make("one", &one, 1);
    buf multi = cat2(zt, zr), data = cat2(text, rnd);
    expect_ok("two streams", &multi, &data);
    buf m2 = cat2(ze, zo), m3 = cat2(m2, ze);
    expect_ok("empty + one + empty streams", &m3, &one);
    buf m4 = cat2(ze, ze);
    expect_ok("two empty streams", &m4, &empty);
    good_trailing(&multi, &data);

    /* multi-stream: a bit flip in the first block of stream 2 */
    ref rf;
    CHECK(ref_split(multi.p, multi.n, &rf) == 0 && rf.nstreams == 2, "multi: reference split");
    int b2 = 0;
    while (b2 < rf.nblocks && rf.block_stream[b2] == 0)
        b2++;
    buf bad = copy_buf(&multi);
    flip(&bad, (rf.start[b2] + rf.end[b2]) / 2);
    for (int th = 1; th <= 4; th *= 2)
        expect_corrupt("flip in stream 2", &bad, &data, &rf, b2, "block 1 of stream 2", th);
    free(bad.p);
    good_planted(&multi, &data, &rf, b2);

    /* the reader's cut of candidates that have no magic for long */
    {
        bz_decode_debug dbg;
        memset(&dbg, 0, sizeof dbg);
        dbg.cap = 3000;
        dbg.chunk = 1000;
        buf zr1 = make("rnd", &rnd, 1);
        expect_ok_dbg("small cap", &zr1, &rnd, &dbg, 2, 20, 0);
        free(zr1.p);
    }
    good_worker_level(&zt, &text);
    good_pipe_and_test(&multi, &data);

    free(zt.p), free(zr.p), free(ze.p), free(zo.p), free(multi.p), free(data.p), free(m2.p), free(m3.p),
        free(m4.p);
    free(text.p), free(rnd.p), free(same.p), free(runs.p), free(blk1.p), free(blk2.p);
}

/* Bit flips in the blocks, their CRCs and magics, and the trailer of z
 * (three blocks of data; rf: its reference split): where, blocks written,
 * what the message says. */
static void corrupt_flips(const buf *z, const buf *data, const ref *rf, int th)
{
    char what[128];
    for (int b = 0; b < 3; b++) {
        buf x = copy_buf(z);
        flip(&x, (rf->start[b] + rf->end[b]) / 2);
        snprintf(what, sizeof what, "flip in the middle of block %d, %d threads", b + 1, th);
        char needle[64];
        snprintf(needle, sizeof needle, "data integrity error in block %d ", b + 1);
        expect_corrupt(what, &x, data, rf, b, needle, th);
        free(x.p);
    }
    /* single bit flips: where, blocks written, what the message says */
    struct {
        const char *what;
        uint64_t bit;
        int blocks;
        const char *needle;
    } flips[] = {
        {"flip in the CRC of block 2", rf->start[1] + 48 + 3, 1, "block 2"},
        {"flip in the magic of block 2", rf->start[1] + 10, 0, "data integrity error"},
        {"wrong stream CRC", rf->eos[0] + 48 + 7, 2, "stream CRC"},
        {"flip in the end-of-stream magic", rf->eos[0] + 20, 2, "data integrity error in block 3"},
    };
    for (size_t f = 0; f < sizeof flips / sizeof flips[0]; f++) {
        buf x = copy_buf(z);
        flip(&x, flips[f].bit);
        expect_corrupt(flips[f].what, &x, data, rf, flips[f].blocks, flips[f].needle, th);
        free(x.p);
    }
}

/* z truncated: where, blocks written */
static void corrupt_truncations(const buf *z, const buf *data, const ref *rf, int th)
{
    char what[128];
    struct {
        size_t at;
        int blocks;
        const char *needle;
    } cut[] = {
        {0, 0, "ends unexpectedly"},
        {2, 0, "ends unexpectedly"},
        {3, 0, "ends unexpectedly"},
        {4, 0, "ends unexpectedly after the header"},
        {7, 0, "ends unexpectedly"},
        {10, 0, "ends unexpectedly in block 1"},
        {(size_t)((rf->start[0] + rf->end[0]) / 16), 0, "ends unexpectedly in block 1"},
        {(size_t)((rf->start[1] + rf->end[1]) / 16), 1, "ends unexpectedly in block 2"},
        {(size_t)(rf->start[2] / 8 + 3), 1, "ends unexpectedly in block 2"},
        {(size_t)(rf->eos[0] / 8 + 2), 2, "ends unexpectedly in block 3"},
        {(size_t)(rf->eos[0] / 8 + 7), 2, "trailer"},
        {z->n - 1, 2, "trailer"},
    };
    for (size_t i = 0; i < sizeof cut / sizeof cut[0]; i++) {
        buf t = {z->p, cut[i].at};
        snprintf(what, sizeof what, "truncated at %zu of %zu, %d threads", cut[i].at, z->n, th);
        expect_corrupt(what, &t, data, rf, cut[i].blocks, cut[i].needle, th);
    }
}

/* not bzip2 */
static void corrupt_not_bzip2(const buf *z, const buf *data, const ref *rf, int th)
{
    expect_corrupt("not bzip2", data, data, rf, 0, "not a bzip2 file", th);
    buf bzh0 = copy_buf(z);
    bzh0.p[3] = '0';
    expect_corrupt("level 0", &bzh0, data, rf, 0, "not a bzip2 file", th);
    free(bzh0.p);
    buf pre = cat2((buf){(unsigned char *)"X", 1}, *z);
    expect_corrupt("a byte before the header", &pre, data, rf, 0, "not a bzip2 file", th);
    free(pre.p);
}

/* false magics: the merge path */
static void corrupt_planted(const buf *z, const buf *data, const ref *rf, int th)
{
    bz_mark fk[] = {
        {rf->start[0] + 1, BZ_MARK_BLOCK},
        {(rf->start[0] + rf->end[0]) / 2, BZ_MARK_EOS},
        {rf->start[1] - 1, BZ_MARK_BLOCK},  /* overlaps the real magic */
        {rf->start[1] + 50, BZ_MARK_BLOCK}, /* inside the block CRC */
        {(rf->start[1] + rf->end[1]) / 2, BZ_MARK_BLOCK},
        {(rf->start[1] + rf->end[1]) / 2 + 7, BZ_MARK_BLOCK},
        {rf->start[2] + 80, BZ_MARK_EOS},
        {rf->eos[0] - 100, BZ_MARK_BLOCK},
        {rf->eos[0] + 20, BZ_MARK_BLOCK}, /* inside the end-of-stream magic */
        {rf->eos[0] + 60, BZ_MARK_EOS},   /* inside the stream CRC */
    };
    bz_decode_debug dbg;
    memset(&dbg, 0, sizeof dbg);
    dbg.fake_marks = fk;
    dbg.nfake = sizeof fk / sizeof fk[0];
    expect_ok_dbg("planted magics", z, data, &dbg, th, 6, 0);

    /* dense planted magics and tiny reads */
    size_t nf = (size_t)(z->n * 8 / 4000);
    bz_mark *dense = malloc(nf * sizeof *dense);
    for (size_t i = 0; i < nf; i++) {
        dense[i].bit = 1234 + i * 4000 + (i % 7);
        dense[i].kind = i % 3 ? BZ_MARK_BLOCK : BZ_MARK_EOS;
    }
    memset(&dbg, 0, sizeof dbg);
    dbg.fake_marks = dense;
    dbg.nfake = nf;
    dbg.chunk = th == 1 ? 16 : th == 2 ? 23 : 1000;
    expect_ok_dbg("dense planted magics, small reads", z, data, &dbg, th, nf / 2, 0);
    free(dense);
}

/* planted magic and a real corruption in the same block */
static void corrupt_planted_and_flip(const buf *z, const buf *data, const ref *rf, int th)
{
    bz_decode_debug dbg;
    buf x = copy_buf(z);
    uint64_t mid = (rf->start[1] + rf->end[1]) / 2;
    flip(&x, mid + 500);
    bz_mark one_fk[1] = {{mid, BZ_MARK_BLOCK}};
    memset(&dbg, 0, sizeof dbg);
    dbg.fake_marks = one_fk;
    dbg.nfake = 1;
    result r;
    run_dec(&x, th, &dbg, &r);
    CHECK(r.rc == 2 && strstr(r.msg, "data integrity error in block 2 "), "planted + flip: rc %d (%s)", r.rc,
          r.msg);
    CHECK(r.outlen == rf->bound[1] && !memcmp(r.out, data->p, r.outlen), "planted + flip: %zu bytes written",
          r.outlen);
    free_res(&r);
    free(x.p);
}

static void test_corrupt(void)
{
    buf data = gen_text(250000);
    buf z = make("three", &data, 1);
    ref rf;
    int ok = ref_split(z.p, z.n, &rf) == 0 && rf.nblocks == 3 && rf.nstreams == 1;
    CHECK(ok, "three: reference split (%d blocks)", rf.nblocks);
    if (!ok)
        return;
    expect_ok("three blocks", &z, &data);
    for (int th = 1; th <= 4; th *= 2) {
        corrupt_flips(&z, &data, &rf, th);
        corrupt_truncations(&z, &data, &rf, th);
        corrupt_not_bzip2(&z, &data, &rf, th);
    }
    for (int th = 1; th <= 4; th *= 2) {
        corrupt_planted(&z, &data, &rf, th);
        corrupt_planted_and_flip(&z, &data, &rf, th);
    }
    free(z.p);
    free(data.p);
}

static void test_io(void)
{
    buf data = gen_text(300000);
    buf z = make("io", &data, 9);
    char path[256], msg[256];
    path_of(path, sizeof path, "io.9.bz2");
    bz_decode_opts o = {2, 0, NULL, NULL, 0, NULL, NULL};
    FILE *in = fopen(path, "rb"), *out = fopen("/dev/full", "wb");
    if (in && out) {
        int rc = bz_decompress(in, "io", out, &o, msg, sizeof msg);
        CHECK(rc == 1 && strstr(msg, "writing"), "write to /dev/full: rc %d (%s)", rc, msg);
    }
    if (in)
        fclose(in);
    if (out)
        fclose(out);
    in = fopen(dir, "rb"); /* a directory: reading fails */
    if (in) {
        out = fopen("/dev/null", "wb");
        int rc = bz_decompress(in, "dir", out, &o, msg, sizeof msg);
        CHECK(rc == 1 && strstr(msg, "read error"), "read a directory: rc %d (%s)", rc, msg);
        fclose(in);
        fclose(out);
    }
    free(z.p);
    free(data.p);
}

static void bench(void)
{
    size_t n = (size_t)64 << 20;
    buf b = gen_random(n, 5, 0);
    bz_mark m[64];
    double t0 = now();
    size_t k = bz_find_marks(b.p, n, m, 64);
    double t1 = now();
    printf("bz_find_marks: %zu MB random in %.3f s: %.0f MB/s (%zu magics)\n", n >> 20, t1 - t0,
           (double)n / 1e6 / (t1 - t0), k);
    free(b.p);

    buf text = gen_text(3000000);
    buf z = make("text", &text, 9);
    buf big = {malloc(z.n * 24), 0};
    for (int i = 0; i < 24; i++)
        memcpy(big.p + big.n, z.p, z.n), big.n += z.n;
    for (int scan = 1; scan >= 0; scan--)
        for (int th = 1; th <= (scan ? 1 : 2); th++) {
            bz_decode_debug dbg;
            memset(&dbg, 0, sizeof dbg);
            dbg.scan_only = scan;
            result r;
            memset(&r, 0, sizeof r);
            char path[256];
            write_file("big.bz2", big.p, big.n);
            path_of(path, sizeof path, "big.bz2");
            FILE *in = fopen(path, "rb"), *out = fopen("/dev/null", "wb");
            bz_decode_opts o = {th, 0, NULL, NULL, 0, NULL, NULL};
            double s0 = now();
            r.rc = bz_decompress_debug(in, "big", out, &o, &dbg, r.msg, sizeof r.msg);
            double s1 = now();
            r.dbg = dbg;
            fclose(in);
            fclose(out);
            printf("%s, %d thread(s): %.1f MB compressed in %.3f s: %.0f MB/s compressed (rc %d, %llu candidates)\n",
                   scan ? "reader only" : "decode", th, (double)big.n / 1e6, s1 - s0, (double)big.n / 1e6 / (s1 - s0),
                   r.rc, (unsigned long long)r.dbg.candidates);
            free_res(&r);
        }
    free(big.p);
    free(z.p);
    free(text.p);
}

/* Remote decoders, in process: a decoder that does what an MPI worker does
 * (bz_decode_block, the output only when wanted), and one whose transport
 * fails after a few blocks. */
typedef struct fake_remote {
    int calls, fail_after, want_out_seen, no_out_seen;
    pthread_mutex_t mu;
} fake_remote;

static int fake_decode(void *arg, const unsigned char *syn, size_t synlen, uint64_t nbits, int level, int want_out,
                       bz_trial *t)
{
    fake_remote *f = arg;
    pthread_mutex_lock(&f->mu);
    int n = ++f->calls;
    f->want_out_seen += want_out;
    f->no_out_seen += !want_out;
    pthread_mutex_unlock(&f->mu);
    if (f->fail_after && n > f->fail_after)
        return -1;
    bz_decode_block(syn, synlen, nbits, level, t);
    if (!want_out) {
        free(t->out);
        t->out = NULL;
    }
    return 0;
}

static void test_remote(void)
{
    buf text = gen_text(3000000), rnd = gen_random(2000000, 5, 0);
    buf zt = make("rtext", &text, 1), zr = make("rrnd", &rnd, 9);
    buf multi = cat2(zt, zr), data = cat2(text, rnd);
    char path[256], msg[256];
    write_file("remote.bz2", multi.p, multi.n);
    path_of(path, sizeof path, "remote.bz2");
    for (int mode = 0; mode < 3; mode++) { /* decompress; test (-t); a transport that fails */
        fake_remote f = {0, mode == 2 ? 3 : 0, 0, 0, PTHREAD_MUTEX_INITIALIZER};
        void *args[2] = {&f, &f};
        bz_decode_opts o = {1, mode == 1, NULL, NULL, 2, fake_decode, args};
        char *out = NULL;
        size_t outlen = 0;
        FILE *in = fopen(path, "rb"), *os = open_memstream(&out, &outlen);
        int rc = in && os ? bz_decompress(in, "remote", mode == 1 ? NULL : os, &o, msg, sizeof msg) : -1;
        if (os)
            fclose(os);
        if (in)
            fclose(in);
        if (mode == 0) {
            CHECK(rc == 0 && outlen == data.n && !memcmp(out, data.p, data.n),
                  "remote decoders: rc %d (%s), %zu bytes, want %zu", rc, msg, outlen, data.n);
            CHECK(f.calls > 0 && f.no_out_seen == 0, "remote decoders: %d calls, %d without output", f.calls,
                  f.no_out_seen);
        } else if (mode == 1) {
            CHECK(rc == 0 && f.calls > 0 && f.want_out_seen == 0, "remote decoders, -t: rc %d (%s), %d calls, %d "
                  "asked for output", rc, msg, f.calls, f.want_out_seen);
        } else {
            CHECK(rc == 1 && strstr(msg, "lost a worker") && outlen < data.n,
                  "a remote decoder that fails: rc %d (%s), %zu bytes written", rc, msg, outlen);
            CHECK(outlen == 0 || !memcmp(out, data.p, outlen), "a remote decoder that fails: bytes written are "
                  "not a prefix of the data");
        }
        free(out);
    }
    free(text.p);
    free(rnd.p);
    free(zt.p);
    free(zr.p);
    free(multi.p);
    free(data.p);
}

int main(int argc, char **argv)
{
    strcpy(dir, "/tmp/test_bzdecode.XXXXXX");
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 2;
    }
    double t0 = now();
    if (argc > 1 && !strcmp(argv[1], "--bench")) {
        bench();
    } else {
        test_marks();
        test_good();
        test_corrupt();
        test_io();
        test_remote();
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    printf("%ld checks, %ld failures, %.1f s\n", checks, failures, now() - t0);
    return failures ? 1 : 0;
}
