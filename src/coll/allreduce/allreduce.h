/* Allreduce algorithms (table in allreduce.c). */
#ifndef ZMPI_COLL_ALLREDUCE_H
#define ZMPI_COLL_ALLREDUCE_H

#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_ALLREDUCE_ALGO_COUNT is one past the largest. */
typedef enum zmpi_allreduce_algo {
    ZMPI_ALLREDUCE_RING = 1,
    ZMPI_ALLREDUCE_CPRP2P = 2,
    ZMPI_ALLREDUCE_RHD = 3,
    ZMPI_ALLREDUCE_NODE = 4,
    ZMPI_ALLREDUCE_ALGO_COUNT
} zmpi_allreduce_algo;

int zmpi_allreduce_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op);
int zmpi_allreduce_rhd(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op);
int zmpi_allreduce_node(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op);
int zmpi_allreduce_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op);

#endif
