/* Reduce algorithms (table in reduce.c). */
#ifndef ZMPI_COLL_REDUCE_H
#define ZMPI_COLL_REDUCE_H

#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_REDUCE_ALGO_COUNT is one past the largest. */
typedef enum zmpi_reduce_algo {
    ZMPI_REDUCE_RSG = 1,
    ZMPI_REDUCE_CPRP2P = 2,
    ZMPI_REDUCE_NODE = 3,
    ZMPI_REDUCE_ALGO_COUNT
} zmpi_reduce_algo;

int zmpi_reduce_rsg(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op, int root);
int zmpi_reduce_node(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op, int root);
int zmpi_reduce_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op, int root);

#endif
