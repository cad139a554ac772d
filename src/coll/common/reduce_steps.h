/*
 * Steps shared by the Allreduce and Reduce algorithms: their common start
 * (count 0, one rank, the even blocks, the per-compression bound) and the
 * ring Allreduce of `ring` and `cprp2p`.
 */
#ifndef ZMPI_COLL_COMMON_REDUCE_STEPS_H
#define ZMPI_COLL_COMMON_REDUCE_STEPS_H

#include <stddef.h>

#include "coll/common/gsum.h"
#include "core/core.h"

/* The start of a reduction of `in` (count elements on every rank; recvbuf
 * the result where it is significant). *go = 0 when nothing is left to do:
 * count 0, or one rank (in copied to recvbuf unless it is recvbuf). Else
 * *go = 1, the vector cut into nblocks even blocks (zmpi_blocks_even;
 * *counts of nblocks and *displs of nblocks + 1 entries, displs[nblocks] =
 * count; none for nblocks 0; the caller frees them, on errors too) and the
 * bound of one compression set for `hops` compressions (zmpi_call_bound,
 * collective). With g (not NULL), the reduction may run on grid codes
 * instead (zmpi_gsum_begin over the nblocks blocks with spread, op
 * decides): g->d is then the input's codes, the caller calls
 * zmpi_gsum_spread between its reduce-scatter and the spreading of the
 * blocks, and ends with zmpi_gsum_end. */
int zmpi_reduce_begin(zmpi_call *c, const void *in, void *recvbuf, size_t count, int nblocks, double hops,
                      MPI_Op op, zmpi_gsum *g, size_t **counts, size_t **displs, int *go);

/* Allreduce by the ring: ring Reduce_scatter of N even blocks, then
 * zmpi_ring_allgather (per_hop 0: `ring`, N compressions per element;
 * per_hop 1: `cprp2p`, up to 2N - 2). */
int zmpi_ring_allreduce(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op,
                        int per_hop);

#endif
