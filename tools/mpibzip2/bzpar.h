/*
 * Parallel compression inside one process: a reader thread (read-ahead, cuts
 * blocks where bzip2 would), compression threads, and the calling thread
 * writing the blocks in order (write-behind through stdio). Memory is
 * bounded: at most `queue` blocks (see bz_compress_opts) are in flight,
 * each with its compressed bits and, until it is compressed here or sent to
 * a worker, its input bytes (at most 1.25 x 100 kB x level, or ~0.9 MB of
 * RLE1 bytes); plus libbz2's ~7.6 MB per compressing thread at level 9 and
 * the reader's two block buffers and 1 MB read buffer.
 */
#ifndef MPIBZIP2_BZPAR_H
#define MPIBZIP2_BZPAR_H

#include <stdint.h>
#include <stdio.h>

#include "bzblock.h"

struct bz_job;

/* A block to compress: its n input bytes (raw) or its n RLE1 bytes; either
 * way they stand for the input's bytes [start, start + in_n). */
typedef struct bz_piece {
    const unsigned char *data;
    size_t n;
    int raw;
    uint64_t start, in_n;
    uint64_t seq; /* its place in the stream (0 first) */
} bz_piece;

typedef struct bz_compress_opts {
    int level;   /* 1..9 */
    int threads; /* compression threads (>= 1) */
    /* Called by the writing thread after each block: input bytes consumed
     * so far and compressed bytes written (may be NULL). */
    void (*progress)(void *arg, uint64_t in_bytes, uint64_t out_bytes);
    void *progress_arg;
    /* Remote compression channels (other MPI ranks' compressors), for the
     * default queue; they are driven by proxy threads or by the pump. */
    int nremote;
    /* Proxy threads (MPI_THREAD_MULTIPLE): nproxy more threads, thread i
     * running proxy(proxy_arg[i], job) until it returns; a proxy moves
     * blocks with bz_take / bz_release / bz_put and returns once bz_take
     * says no block will come and its blocks are back: 0, or < 0 if its
     * transport failed (the job then fails: "lost a worker"). */
    int nproxy;
    int (*proxy)(void *arg, struct bz_job *j);
    void **proxy_arg;
    /* Remote compressors driven by the writing thread itself (MPI thread
     * levels below MULTIPLE): the writing loop calls pump(pump_arg, job,
     * may_block) whenever it has nothing to write; pump moves blocks with
     * bz_take / bz_release / bz_put and returns > 0 if it did something, 0
     * if not, < 0 if its transport failed. may_block: no thread of this call
     * can make progress meanwhile, so pump may wait for its transport. When
     * the job ends, pump is called (may_block 1) until it returns <= 0, so
     * that blocks still out come back before their memory goes. */
    int (*pump)(void *arg, struct bz_job *j, int may_block);
    void *pump_arg;
    /* No threads at all: the calling thread reads and cuts blocks on demand
     * (inside bz_take), compresses `threads` (0 or 1) blocks at a time
     * itself, and writes. */
    int no_threads;
    /* Blocks in flight (cut, being compressed, or compressed and waiting
     * to be written), >= 1; 0: 2 per local compressing thread + 4 per
     * remote channel + 2 (a remote block gives its input buffer back once
     * it is on its way, so a waiting block holds only its bits; the depth
     * keeps workers busy while an early block takes long). */
    int queue;
} bz_compress_opts;

/* The state of one bz_compress call, for pump. */
typedef struct bz_job bz_job;
/* bz_take's answers besides a handle (>= 0). */
enum bz_take_none {
    BZ_TAKE_NONE_NOW = -1,  /* no block is waiting now */
    BZ_TAKE_NONE_LEFT = -2, /* no block will come (input done, or the job stopped) */
};
/* Takes the oldest block waiting for compression (in no_threads mode,
 * reading and cutting it first). Returns a handle >= 0 with *b set,
 * BZ_TAKE_NONE_NOW or BZ_TAKE_NONE_LEFT. */
int bz_take(bz_job *j, bz_piece *b);
/* Block h's input bytes are no longer needed (sent to a worker, or the
 * worker reads them itself): their buffer goes back to the reader. */
void bz_release(bz_job *j, int h);
/* About how many blocks are still to be handed out (cut and waiting, or
 * not cut yet: the input left over 100 kB x level); -1 if unknown (not a
 * regular file). */
int bz_blocks_left(bz_job *j);
/* Handles are below this (the queue's length). */
int bz_handles(bz_job *j);
/* Where the compressed block of handle h goes. */
bz_block *bz_out(bz_job *j, int h);
/* Hands block h back: rc as from bz_block_compress (0 when *bz_out(j, h)
 * holds its bits), BZ_BLOCK_LOST if the transport lost it. */
void bz_put(bz_job *j, int h, int rc);

/* Compresses everything read from in_fd (until EOF) into one bzip2 stream
 * on out, byte-identical to `bzip2 -<level>`. Returns 0, 1 (I/O error or
 * memory: msg says which, with errno's text) or 3 (an internal error of
 * libbz2). *in_total / *out_total get the byte counts (may be NULL). */
int bz_compress(int in_fd, FILE *out, const bz_compress_opts *opts, uint64_t *in_total, uint64_t *out_total,
                char *msg, size_t msglen);

#endif
