/*
 * Compression on other MPI ranks. Every rank but 0 runs mpibz_worker: its
 * main thread makes all MPI calls and hands blocks to compression threads
 * (or, without threads, compresses them itself). Each compressor has two
 * "channels" (tag MPIBZ_TAG + k): while it compresses the block of one, the
 * next block is already there on the other, so compression overlaps the
 * transfers both ways and the master's reaction time. A channel holds one
 * block at a time and asks for the next by returning its result: faster
 * workers get more blocks (dynamic load balancing).
 *
 * Rank 0 drives the channels with pumps (mpibz_pump: a set of channels and
 * their non-blocking sends and receives), in one of two ways:
 *   - MPI_THREAD_MULTIPLE: one proxy thread per worker rank, each running
 *     the pump of that rank's channels (mpibz_proxy);
 *   - below MULTIPLE (or --single-threaded): one pump over every channel,
 *     run by the writing thread between writes (mpibz_pump_run).
 * A pump hands a block to an idle channel of the least busy rank first (a
 * rank with an idle compressor before a second block to a busy one), so at
 * the end of the input no block waits behind another while a worker idles.
 *
 * Messages, per channel: BLOCK, a 16-byte header (four uint32: kind, level,
 * n, raw flag: 0 RLE1 bytes follow, 1 input bytes follow, 2 a "where"
 * message follows), then the block's n bytes or, with --shared-input, the
 * "where" message (uint64 offset, then the input file's path; n is then
 * the block's input bytes, which the worker reads itself); RESULT, a
 * 24-byte header (uint32 kind, rc, crc, 0; uint64 bits), then with rc 0 the
 * block's bits, on a tag of their own; QUIT ends the channel. A result's
 * header frees its channel for the next block at once; the bits follow when
 * the master posts their receive: two at a time, the oldest blocks first,
 * so that over a busy link they arrive in the order they are written, not
 * all late together. Meanwhile the worker keeps them and goes on
 * compressing. Threaded waits poll (MPI_Test*) with short
 * sleeps: MPICH's blocking calls spin, which on a machine with fewer cores
 * than threads takes the CPU from the compressors. Without threads, waits
 * block in MPI (the only choice that SMPI simulates faithfully).
 */
#ifndef MPIBZIP2_MPI_WORK_H
#define MPIBZIP2_MPI_WORK_H

#include <mpi.h>
#include <stddef.h>

#include "bzblock.h"
#include "bzdecode.h"
#include "bzpar.h"

#define MPIBZ_TAG 700                     /* channel k: blocks, results' headers: tag MPIBZ_TAG + k */
#define MPIBZ_BITS_TAG (MPIBZ_TAG + 8192) /* results' bits: MPIBZ_BITS_TAG + k (k < 8192: -n <= 4096) */

/* A pump: the channels of ranks first..last (counts[r] channels on rank r);
 * compressors: how many compress in the whole job (every rank's). */
typedef struct mpibz_pump mpibz_pump;
mpibz_pump *mpibz_pump_new(MPI_Comm comm, int level, const int *counts, int first, int last, int compressors);
/* bz_compress_opts.pump (arg: mpibz_pump *): hands blocks to idle channels
 * and takes in results; may_block: wait in MPI for a result if nothing
 * else happened. > 0 something moved, 0 nothing, < 0 MPI failed. */
int mpibz_pump_run(void *arg, bz_job *j, int may_block);
/* bz_compress_opts.proxy (arg: mpibz_pump *): runs the pump, polling, until
 * the input is done and every block it handed out is back. 0, or -1. */
int mpibz_proxy(void *arg, bz_job *j);
/* --shared-input: the workers read the input bytes of blocks from path
 * themselves (NULL: the blocks' bytes are sent). */
void mpibz_pump_input(mpibz_pump *p, const char *path);
/* QUIT to every channel. */
int mpibz_pump_quit(mpibz_pump *p);
void mpibz_pump_free(mpibz_pump *p);

/* A channel: a rank and its tag. */
typedef struct mpibz_chan {
    MPI_Comm comm;
    int rank, tag;
} mpibz_chan;
/* The channels of ranks first..last (counts[r] on rank r) in the order
 * they are served: channel t of every rank before channel t+1 of any, so
 * the first blocks go one to each rank. malloc'd, *n of them; NULL if
 * memory is short. */
mpibz_chan *mpibz_channels(MPI_Comm comm, const int *counts, int first, int last, int *n);
/* QUIT to the channel. */
int mpibz_chan_quit(const mpibz_chan *c);

/* Decompression on other ranks (MPI_THREAD_MULTIPLE only): one thread of
 * rank 0 per remote channel, each calling mpibz_remote_decode for the
 * blocks it takes (bz_decode_opts.remote; arg: mpibz_chan *). A DECODE
 * message is a 16-byte header (kind, level | want_out << 8, the stream's
 * bytes, the block's bits) and the one-block stream; the result, a 24-byte
 * header (kind, trial result, hopeless, 0; uint64 output bytes), then, if
 * wanted and decoded, the output on the bits tag. */
int mpibz_remote_decode(void *arg, const unsigned char *syn, size_t synlen, uint64_t nbits, int level, int want_out,
                        bz_trial *t);

/* The loop of a worker rank: `threads` compression (or, with decode,
 * decompression) threads (use_threads) or the calling thread working, two
 * channels each, until QUIT on every channel. Returns 0, or 1 if MPI or
 * memory failed. Collective with mpibz_thread_counts on rank 0, which gets
 * each rank's number of channels (counts[0] = 0). */
int mpibz_worker(MPI_Comm comm, int threads, int use_threads, int decode);
int mpibz_thread_counts(MPI_Comm comm, int *counts);

#endif
