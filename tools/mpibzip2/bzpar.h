/*
 * Parallel compression inside one process: a reader thread (read-ahead, cuts
 * blocks where bzip2 would), compression threads, and the calling thread
 * writing the blocks in order (write-behind through stdio). Memory is
 * bounded: at most `(threads + nremote) * 2 + 2` blocks (RLE1 bytes ~0.9 MB and their
 * compressed bits each) are in flight, plus libbz2's ~7.6 MB per
 * compressing thread at level 9.
 */
#ifndef MPIBZIP2_BZPAR_H
#define MPIBZIP2_BZPAR_H

#include <stdint.h>
#include <stdio.h>

#include "bzblock.h"

typedef struct bz_compress_opts {
    int level;   /* 1..9 */
    int threads; /* compression threads (>= 1) */
    /* Called by the writing thread after each block: input bytes consumed
     * so far and compressed bytes written (may be NULL). */
    void (*progress)(void *arg, uint64_t in_bytes, uint64_t out_bytes);
    void *progress_arg;
    /* Remote compressors (other MPI ranks): nremote more threads, thread i
     * compressing through remote(remote_arg[i], ...) instead of libbz2 here;
     * it returns what bz_block_compress returns. A remote failure of
     * transport returns -200 (msg: "lost a worker"). */
    int nremote;
    int (*remote)(void *arg, const unsigned char *rle, size_t n, int level, bz_block *out);
    void **remote_arg;
} bz_compress_opts;

/* Compresses everything read from in_fd (until EOF) into one bzip2 stream
 * on out, byte-identical to `bzip2 -<level>`. Returns 0, 1 (I/O error or
 * memory: msg says which, with errno's text) or 3 (an internal error of
 * libbz2). *in_total / *out_total get the byte counts (may be NULL). */
int bz_compress(int in_fd, FILE *out, const bz_compress_opts *opts, uint64_t *in_total, uint64_t *out_total,
                char *msg, size_t msglen);

#endif
