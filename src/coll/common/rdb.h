/*
 * Recursive-doubling allgather of compressed blocks (Bruck/Thakur "recursive
 * doubling"), for a power-of-two group of ranks.
 *
 * p = 2^k members with member indices v = 0 .. p-1 (rank[v] is the rank in
 * the call's communicator). Block v is one zmpi stream of sizes[v] bytes
 * (0 for an empty block); all streams lie back to back in one buffer z,
 * block v at off[v] = sizes[0] + ... + sizes[v-1], and every member knows
 * all sizes. On entry member v holds only its own stream at off[v]. In step
 * j (dist = 2^j) member v exchanges the streams of its group of dist blocks
 * [v & ~(dist-1), + dist) with member v ^ dist, which holds the neighbouring
 * group: the groups are contiguous in z, so each step is one exact transfer
 * each way, and the data double:
 *
 *   p = 4     v0        v1        v2        v3
 *   start     Z0        Z1        Z2        Z3
 *   dist 1    Z0 Z1     Z0 Z1     Z2 Z3     Z2 Z3     v <-> v^1
 *   dist 2    Z0..Z3    Z0..Z3    Z0..Z3    Z0..Z3    v <-> v^2
 *
 * log2 p steps instead of the ring's p - 1: on networks where every message
 * pays a latency (and short messages pay a worse bandwidth), far fewer and
 * larger messages. Each stream still travels as compressed once by its
 * owner: the error is that of one compression.
 *
 * While step j's transfer is in flight, the caller's `arrived` callback is
 * given the blocks that arrived in step j-1 (in step 0: the member's own
 * block), so decompression overlaps the transfer; the blocks of the last
 * step are given after it. Every block is given exactly once.
 */
#ifndef ZMPI_COLL_COMMON_RDB_H
#define ZMPI_COLL_COMMON_RDB_H

#include <stddef.h>

#include "core/core.h"

/* Called for blocks [first, first + n) once they are in z; returns an MPI
 * error code only for errors that must stop the collective (a corrupt
 * stream should rather be recorded and the collective finished, so that no
 * other rank waits forever). */
typedef int (*zmpi_rdb_arrived_fn)(void *arg, int first, int n);

/* 1 if p is a power of two (p >= 1). */
static inline int zmpi_is_pow2(int p)
{
    return p > 0 && (p & (p - 1)) == 0;
}

/* Runs the exchange described above for member v of p (a power of two),
 * rank[] mapping members to ranks of c->comm (NULL: member i is rank i),
 * off[0..p] the offsets of the streams in z (off[p] the total), on tag. */
int zmpi_rdb_allgather(const zmpi_call *c, unsigned char *z, const size_t *off, int p, int v,
                       const int *rank, int tag, zmpi_rdb_arrived_fn arrived, void *arg);

/* Lays out the streams of the p members: every rank of c->comm contributes
 * the length of its own stream (len; 0 for a rank outside the group), one
 * allgather of uint64; off[0..p] (p + 1 entries, caller's) gets the offsets
 * of the members' streams (member i = rank[i], NULL: rank i), *z a buffer
 * of off[p] bytes (the call's scratch: zmpi_scratch_put) with `mine` copied to member v's place (v < 0:
 * not a member). Collective over c->comm. */
int zmpi_rdb_layout(const zmpi_call *c, const void *mine, size_t len, int p, int v, const int *rank, size_t *off,
                    unsigned char **z);

#endif
