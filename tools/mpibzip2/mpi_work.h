/*
 * Compression on other MPI ranks. Rank 0 runs one proxy thread per remote
 * compression thread (a "remote compressor" of bz_compress: it sends a block's
 * RLE1 bytes, waits for the compressed bits; being demand-driven, faster
 * workers get more blocks); every other rank runs mpibzip2_worker, whose
 * threads receive blocks, compress them with libbz2 and send them back.
 *
 * Messages on the communicator, tag MPIBZ_TAG + thread index, always a
 * 16-byte header (four uint32: kind, level, n or rc, crc) followed by a
 * payload message when the kind says so: BLOCK (n RLE1 bytes follow), RESULT
 * (rc, crc, then the bits' length as uint64 in a second header word pair and
 * the bits), QUIT. Waits poll with MPI_Test/MPI_Iprobe and short sleeps
 * (10 us .. 1 ms): MPICH's blocking calls spin, and on a machine with fewer
 * cores than threads a spinning waiter takes the CPU from the compressors.
 * Needs MPI_THREAD_MULTIPLE.
 */
#ifndef MPIBZIP2_MPI_WORK_H
#define MPIBZIP2_MPI_WORK_H

#include <mpi.h>
#include <stddef.h>

#include "bzblock.h"

#define MPIBZ_TAG 700

typedef struct mpibz_remote {
    MPI_Comm comm;
    int rank, tag;
} mpibz_remote;

/* A remote compressor for bz_compress_opts.remote (arg: mpibz_remote *). */
int mpibz_remote_compress(void *arg, const unsigned char *rle, size_t n, int level, bz_block *out);
/* Tells the worker thread behind r to stop. */
int mpibz_remote_quit(const mpibz_remote *r);
/* The loop of a worker rank: `threads` threads serve rank 0 until QUIT.
 * Returns 0, or 1 if MPI or memory failed. Collective with
 * mpibz_thread_counts on rank 0, which gets each rank's number of serving
 * threads (counts[0] = 0). */
int mpibz_worker(MPI_Comm comm, int threads);
int mpibz_thread_counts(MPI_Comm comm, int *counts);

#endif
