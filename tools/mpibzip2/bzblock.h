/*
 * The pieces of a bzip2 stream that mpibzip2 builds in parallel and splices
 * back together bit-exactly.
 *
 * A bzip2 stream is "BZh" + the level digit, then blocks, then the 48-bit
 * end-of-stream magic 0x177245385090, the 32-bit combined CRC and zero bits
 * up to a byte. Blocks start with the 48-bit magic 0x314159265359 and the
 * block's CRC and are not byte-aligned. The compressor (libbz2) first
 * run-length encodes its input (RLE1: runs of 4..255 equal bytes become the
 * byte four times and a count byte) and closes a block as soon as its RLE1
 * output reaches 100000 * level - 19 bytes; the run in progress at that
 * moment is not written and carries into the next block. A block's content
 * depends only on the RLE1 bytes it holds, so:
 *
 *   - bz_cutter runs the same RLE1 stage over the input and cuts where bzip2
 *     cuts. Since the run in progress at a cut is always one byte long (the
 *     byte whose arrival closed the block), every block is a contiguous range
 *     of input bytes, which libbz2 compresses, as a stream of its own, into
 *     exactly that block. The cutter only counts RLE1 bytes and keeps the
 *     block's input bytes; a block whose input bytes would exceed 1.25 times
 *     the block size (long runs) is kept as its RLE1 bytes instead (at most
 *     ~900 kB, however long the runs were: bounded memory);
 *   - bz_block_compress compresses a block (expanding RLE1 bytes back into
 *     input bytes first) with libbz2 as a stream of its own and lifts the
 *     block's bits out of that stream;
 *   - bz_writer writes the header, the blocks' bits one after the other and
 *     the trailer with the combined CRC (rotate left by one, xor each block's
 *     CRC), which is the stream bzip2 itself writes.
 */
#ifndef MPIBZIP2_BZBLOCK_H
#define MPIBZIP2_BZBLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The first RLE1 stage of bzip2 and its block cuts. */
typedef struct bz_cutter {
    int level;          /* 1..9 */
    uint32_t max;       /* 100000 * level - 19: the block closes at this many RLE1 bytes */
    int ch, len;        /* run in progress (ch 256: none) */
    uint32_t n;         /* RLE1 bytes of the current block's finished runs */
    int rle;            /* the current block is kept as RLE1 bytes (else as input bytes) */
    unsigned char *out; /* the current block: input bytes (ending with the run in progress) or RLE1 bytes */
    size_t nout;        /* bytes in out */
    unsigned char *alt; /* spare buffer */
    size_t cap;         /* bytes of out and alt: bz_cutter_cap(level) */
} bz_cutter;

/* Size of a block buffer at the level: 1.25 times the block size, plus slack. */
size_t bz_cutter_cap(int level);
/* 0, or -1 if memory is short. */
int bz_cutter_init(bz_cutter *c, int level);
void bz_cutter_free(bz_cutter *c);
/* Consumes input until the current block closes (*full = 1: take c->out[0,
 * c->nout), raw unless c->rle, then call bz_cutter_next) or the input ends
 * (*full = 0). Returns the bytes consumed. */
size_t bz_cutter_feed(bz_cutter *c, const unsigned char *p, size_t n, int *full);
/* Starts the next block (the run in progress carries over). out may have
 * been swapped for another buffer of c->cap bytes since bz_cutter_feed. */
void bz_cutter_next(bz_cutter *c);
/* End of input: the last block is c->out[0, c->nout) if c->nout > 0 (an
 * empty input has no block). */
void bz_cutter_finish(bz_cutter *c);

/* A compressed block: its bits (MSB first, from bit 0 of bits), its CRC. */
typedef struct bz_block {
    unsigned char *bits;
    uint64_t nbits;
    uint32_t crc;
    size_t cap;  /* bytes allocated for bits */
} bz_block;

/* libbz2's working memory (about 8 MB at level 9), kept by one compressing
 * thread from block to block instead of being allocated, faulted in and
 * returned for every block. Zero-initialise; bz_coder_free releases it. */
#define BZ_CODER_KEEP 4 /* libbz2 allocates four pieces per compressor */
typedef struct bz_coder {
    void *mem[BZ_CODER_KEEP];
    size_t size[BZ_CODER_KEEP];
    unsigned char busy[BZ_CODER_KEEP];
} bz_coder;
void bz_coder_free(bz_coder *k);

/* Results of compressing a block besides 0 (done) and libbz2's own error
 * codes (BZ_SEQUENCE_ERROR .. BZ_CONFIG_ERROR: -1 .. -9). bz_block_compress
 * and bz_block_compress_file return them, bz_put takes them, and a worker
 * rank sends them to rank 0 in a result's header (as a uint32): the values
 * are part of the MPI message protocol. */
enum bz_block_error {
    BZ_BLOCK_FAILED = -100,     /* memory is short, or libbz2 made a stream of an unexpected shape */
    BZ_BLOCK_LOST = -200,       /* the transport to a worker lost the block (bz_put; no caller passes it
                                   now: proxies and pumps report a lost transport by returning < 0) */
    BZ_BLOCK_UNREADABLE = -300, /* the block's bytes could not be read from the input file (--shared-input) */
};

/* Compresses one block, given as its input bytes (raw) or as its RLE1 bytes
 * (from bz_cutter), at the level, with libbz2's default work factor, as
 * bzip2 does, into b (whose memory is reused). k: the calling thread's
 * coder, or NULL to let libbz2 allocate afresh.
 * Returns 0, or a negative libbz2 error code / BZ_BLOCK_FAILED (memory, or
 * a stream of an unexpected shape). */
int bz_block_compress(bz_coder *k, const unsigned char *data, size_t n, int raw, int level, bz_block *b);
/* The same for a block given as the input bytes [start, start + n) of the
 * file fd, read through buf (cap bytes) piece by piece, so a block of any
 * input length (up to ~46 MB of long runs at level 9) needs only buf.
 * Returns BZ_BLOCK_UNREADABLE if the file could not be read. */
int bz_block_compress_file(bz_coder *k, int fd, uint64_t start, uint64_t n, unsigned char *buf, size_t cap,
                           int level, bz_block *b);
/* Makes room for `bytes` bytes of bits (keeping them). 0, or -1 if memory is short. */
int bz_block_reserve(bz_block *b, size_t bytes);
void bz_block_free(bz_block *b);

/* Writes one bzip2 stream to a FILE. */
typedef struct bz_writer {
    FILE *f;
    unsigned char buf[65536]; /* whole bytes not yet handed to f (which may be unbuffered, e.g. stdout under MPI) */
    size_t nbuf;
    uint64_t acc;   /* pending bits, right-aligned */
    int nacc;       /* how many */
    uint32_t combined;
    int error;      /* a write failed (errno kept from it) */
} bz_writer;

void bz_writer_begin(bz_writer *w, FILE *f, int level);
void bz_writer_block(bz_writer *w, const bz_block *b);
/* Writes the trailer and pads to a byte. Returns 0, or -1 if a write failed. */
int bz_writer_end(bz_writer *w);

#endif
