/*
 * Compression on other MPI ranks. Every rank but 0 runs mpibz_worker: its
 * main thread makes all MPI calls and hands blocks to compression threads
 * (or, without threads, compresses them itself), one "channel" (tag
 * MPIBZ_TAG + k) per compressor. Rank 0 drives the channels in one of two
 * ways:
 *   - MPI_THREAD_MULTIPLE: one proxy thread per remote channel
 *     (mpibz_remote_compress, a remote compressor of bz_compress: it sends a
 *     block and waits for its bits; demand-driven, so faster
 *     workers get more blocks);
 *   - below MULTIPLE: the writing thread drives all channels itself between
 *     writes (mpibz_pump_run, the pump of bz_compress), with non-blocking
 *     sends and receives.
 *
 * Messages, per channel: a 16-byte header (four uint32: kind, level, n or
 * rc, raw flag or crc), then BLOCK: the block's n bytes (input bytes if
 * raw is 1, RLE1 bytes if 0) or, with --shared-input (raw 2), a "where"
 * message (uint64 offset, then the input file's path), from which the
 * worker reads the block itself; RESULT with rc 0: the bits'
 * length (uint64) and the bits; QUIT ends the channel. Threaded waits poll
 * with MPI_Test and short sleeps (10 us .. 1 ms): MPICH's blocking calls
 * spin, and on a machine with fewer cores than threads a spinning waiter
 * takes the CPU from the compressors. Without threads, waits block in MPI
 * (the only choice that SMPI simulates faithfully).
 */
#ifndef MPIBZIP2_MPI_WORK_H
#define MPIBZIP2_MPI_WORK_H

#include <mpi.h>
#include <stddef.h>

#include "bzblock.h"
#include "bzpar.h"

#define MPIBZ_TAG 700

typedef struct mpibz_remote {
    MPI_Comm comm;
    int rank, tag;
    const char *path;     /* --shared-input: the input file (else NULL: blocks' bytes are sent) */
    unsigned char *where; /* buffer of the "where" message */
    size_t wcap;
} mpibz_remote;

/* A remote compressor for bz_compress_opts.remote (arg: mpibz_remote *). */
int mpibz_remote_compress(void *arg, const bz_piece *b, int level, bz_block *out);
/* Tells the worker channel behind r to stop. */
int mpibz_remote_quit(const mpibz_remote *r);

/* The pump: all channels of all ranks (counts[r] channels on rank r). */
typedef struct mpibz_pump mpibz_pump;
mpibz_pump *mpibz_pump_new(MPI_Comm comm, int level, const int *counts, int size);
/* bz_compress_opts.pump (arg: mpibz_pump *). */
int mpibz_pump_run(void *arg, bz_job *j, int may_block);
/* --shared-input: the workers read the input bytes of blocks from path
 * themselves (NULL: the blocks' bytes are sent). */
void mpibz_pump_input(mpibz_pump *p, const char *path);
/* QUIT to every channel. */
int mpibz_pump_quit(mpibz_pump *p);
void mpibz_pump_free(mpibz_pump *p);

/* The loop of a worker rank: `threads` compression threads (use_threads)
 * or one channel served by the calling thread, until QUIT on every channel.
 * Returns 0, or 1 if MPI or memory failed. Collective with
 * mpibz_thread_counts on rank 0, which gets each rank's number of channels
 * (counts[0] = 0). */
int mpibz_worker(MPI_Comm comm, int threads, int use_threads);
int mpibz_thread_counts(MPI_Comm comm, int *counts);

#endif
