/*
 * Parallel bzip2 decompression, also within a single stream.
 *
 * A reader thread streams the input and cuts it into candidates at every
 * bit offset where the 48-bit block magic 0x314159265359 or the
 * end-of-stream magic 0x177245385090 occurs. Worker threads decode each
 * candidate that starts with a block magic as a one-block stream of its own
 * ("BZh" + level, the candidate's bits moved to a byte boundary, the EOS
 * magic and the block's CRC as the combined CRC), so libbz2 checks the
 * block CRC. The calling thread follows the real structure of the file:
 * stream headers, blocks, trailers; it writes each block's output once the
 * block is verified (the last block of a stream once the stream's combined
 * CRC is verified too), strictly in order.
 *
 * A magic can occur by chance inside compressed data. A block then spans
 * several candidates: when a candidate fails, it is merged with the next
 * ones and decoded again, up to the largest size a block of the stream's
 * level can have (BZ_DECODE_MAX_BLOCK_BITS). libbz2 reads its input strictly
 * in order, so a decode that failed before reading past the candidate's own
 * bits fails for every merge too: such a block is declared corrupt at once.
 *
 * Memory is bounded: the input is streamed; at most about 2 x threads + 1
 * candidates are held (each at most about 2.3 MB of compressed bits and the
 * output of one block, which is at most 5,180,000 x level bytes: runs of
 * one byte expand 51.8-fold in bzip2's first run-length stage).
 */
#ifndef MPIBZIP2_BZDECODE_H
#define MPIBZIP2_BZDECODE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One block decoded as a bzip2 stream of its own (see bz_decode_block). */
typedef struct bz_trial {
    int res;      /* BZ_TRIAL_OK (decoded, block CRC right), BZ_TRIAL_FAIL, BZ_TRIAL_MEM */
    int hopeless; /* failed within the block's own bits: no merge with what follows helps */
    uint32_t crc;
    unsigned char *out; /* malloc'd (NULL when only its length was wanted) */
    size_t outlen;
} bz_trial;
#define BZ_TRIAL_OK 0
#define BZ_TRIAL_FAIL 1
#define BZ_TRIAL_MEM 2

/* Decodes syn[0, synlen): "BZh" + level, one block of nbits bits, the
 * end-of-stream magic and a combined CRC; t->crc is left alone. */
void bz_decode_block(const unsigned char *syn, size_t synlen, uint64_t nbits, int level, bz_trial *t);

/* The largest one-block stream bz_decode_block is given at the level. */
#define BZ_DECODE_MAX_STREAM(level) ((size_t)(BZ_DECODE_MAX_BLOCK_BITS(level) / 8) + 32)

typedef struct bz_decode_opts {
    int threads;   /* decoding threads (>= 1) */
    int test_only; /* -t: decode and verify, write nothing */
    /* May be NULL; called from the calling thread after each verified
     * block: compressed bytes verified so far, bytes output so far. */
    void (*progress)(void *arg, uint64_t in_bytes_done, uint64_t out_bytes_done);
    void *progress_arg;
    /* Remote decoders (other MPI ranks; may be 0): nremote more threads,
     * thread i decoding blocks through remote(remote_arg[i], ...), which
     * does what bz_decode_block does (want_out 0: only the output's length
     * is needed, t->out may stay NULL) and returns 0, or -1 if its transport
     * failed (the run then fails: "lost a worker"). */
    int nremote;
    int (*remote)(void *arg, const unsigned char *syn, size_t synlen, uint64_t nbits, int level, int want_out,
                  bz_trial *t);
    void **remote_arg;
} bz_decode_opts;

/* Return codes of bz_decompress. */
#define BZ_DECODE_OK 0      /* success; msg may hold a warning (trailing garbage) */
#define BZ_DECODE_IOERR 1   /* reading in / writing out failed, or memory is short */
#define BZ_DECODE_CORRUPT 2 /* not bzip2, corrupt or truncated input */
/* What msg says (after "NAME: ") when the input does not start with a
 * bzip2 stream header at all: bzip2 goes on with its next file after such
 * a file, but stops at one whose data are corrupt or truncated. */
#define BZ_DECODE_NOT_BZIP2 "not a bzip2 file"

/* Decompresses all bzip2 streams of `in` (read from its current position to
 * EOF) into `out` (unused when test_only), in order. On 2, every byte
 * written belongs to a verified block and they are a prefix of the data,
 * ending on a block boundary. `name` is used in messages only; msg gets a
 * message ("" if there is nothing to say). See the top of bzdecode.c for the
 * cases and how they compare with bzip2 1.0.8. */
int bz_decompress(FILE *in, const char *name, FILE *out, const bz_decode_opts *opts, char *msg,
                  size_t msglen);

/*
 * The rest is for tests and benchmarks.
 */

/* The largest compressed size, in bits from the block magic to the end of
 * the block, of a block of the level (see bzdecode.c for the derivation). */
#define BZ_DECODE_MAX_BLOCK_BITS(level) ((uint64_t)257419 + (uint64_t)2000000 * (uint64_t)(level))

#define BZ_MARK_BLOCK 1
#define BZ_MARK_EOS 2

/* A magic found (or planted) at a bit offset. */
typedef struct bz_mark {
    uint64_t bit;
    int kind; /* BZ_MARK_BLOCK or BZ_MARK_EOS */
} bz_mark;

/* Finds the magics of p[0, n) at every bit offset, in order; stores at
 * most max of them and returns how many there are. */
size_t bz_find_marks(const unsigned char *p, size_t n, bz_mark *marks, size_t max);

typedef struct bz_decode_debug {
    /* in */
    const bz_mark *fake_marks; /* sorted by bit: extra (false) magics the
                                  reader reports as if it had found them */
    size_t nfake;
    size_t chunk;      /* reader's read size (0: default) */
    size_t cap;        /* candidate size at which the reader cuts (0: default) */
    int worker_level;  /* workers decode at this level, not the stream's (0: no) */
    int scan_only;     /* only run the reader; count candidates, decode nothing */
    /* out */
    uint64_t candidates; /* candidates the reader produced */
    uint64_t blocks;     /* blocks verified */
    uint64_t merges;     /* decodes of merged candidates */
    uint64_t redecodes;  /* candidates decoded again at the stream's level */
} bz_decode_debug;

/* bz_decompress with testing knobs (dbg may be NULL). */
int bz_decompress_debug(FILE *in, const char *name, FILE *out, const bz_decode_opts *opts,
                        bz_decode_debug *dbg, char *msg, size_t msglen);

#endif
