/*
 * Allgather(v) algorithms (table zmpi_allgather_table in allgather.c,
 * signature zmpi_allgatherv_fn in coll/registry.h).
 *
 * zmpi_allgatherv_ring may be called by other collectives (Allreduce =
 * Reduce_scatter + Allgather) with their own zmpi_call: it uses the call's
 * codec context as configured (it never changes the bound) and the tag
 * ZMPI_TAG_ALLGATHER.
 */
#ifndef ZMPI_COLL_ALLGATHER_H
#define ZMPI_COLL_ALLGATHER_H

#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_ALLGATHER_ALGO_COUNT is one past the largest. */
typedef enum zmpi_allgather_algo {
    ZMPI_ALLGATHER_RING = 1,
    ZMPI_ALLGATHER_CPRP2P = 2,
    ZMPI_ALLGATHER_RDB = 3,
    ZMPI_ALLGATHER_NODE = 4,
    ZMPI_ALLGATHER_ALGO_COUNT
} zmpi_allgather_algo;

int zmpi_allgatherv_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                         const int *displs);
int zmpi_allgatherv_rdb(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                        const int *displs);
int zmpi_allgatherv_node(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                         const int *displs);
int zmpi_allgatherv_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                           const int *displs);

#endif
