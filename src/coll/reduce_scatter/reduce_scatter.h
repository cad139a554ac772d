/*
 * Reduce_scatter algorithms (table in reduce_scatter.c), and the ring
 * kernel that Allreduce and Reduce build on.
 */
#ifndef ZMPI_COLL_REDUCE_SCATTER_H
#define ZMPI_COLL_REDUCE_SCATTER_H

#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_REDUCE_SCATTER_ALGO_COUNT is one past the largest. */
typedef enum zmpi_reduce_scatter_algo {
    ZMPI_REDUCE_SCATTER_RING = 1,
    ZMPI_REDUCE_SCATTER_RHD = 2,
    ZMPI_REDUCE_SCATTER_NODE = 3,
    ZMPI_REDUCE_SCATTER_ALGO_COUNT
} zmpi_reduce_scatter_algo;

int zmpi_reduce_scatter_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                             MPI_Op op);
int zmpi_reduce_scatter_rhd(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op);
int zmpi_reduce_scatter_node(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op);
/* Both: the blocks laid out from recvcounts, the bound set for N - 1 merges,
 * then the ring kernel, or recursive halving (halving != 0, a power-of-two
 * number of ranks). */
int zmpi_reduce_scatter_run(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op,
                            int halving);

/* The ring kernel (reduce_scatter_ring.c): reduces block b (counts[b]
 * elements at element displacement displs[b] of every rank's input vector
 * `in`) with op and leaves block c->rank of the result in `out`. Each
 * partial block is compressed once per step with the call's current bound
 * (set it first with zmpi_call_bound). `out` may overlap `in` (it is written
 * only after the last read of `in`). Collective over c->comm, tag `tag`;
 * op must be commutative (SUM, MIN, MAX). Returns an MPI error code; a
 * corrupt incoming stream does not stop the ring (the other ranks would
 * wait forever) but sets *corrupt = MPI_ERR_OTHER, for the caller to
 * return once its own protocol is complete. */
int zmpi_ring_reduce_scatter(zmpi_call *c, const void *in, void *out, const size_t *counts,
                             const size_t *displs, MPI_Op op, int tag, int *corrupt);

#endif
