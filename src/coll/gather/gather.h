/*
 * Gather(v) algorithms (table zmpi_gather_table in gather.c, signature
 * zmpi_gatherv_fn in coll/registry.h).
 */
#ifndef ZMPI_COLL_GATHER_H
#define ZMPI_COLL_GATHER_H

#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_GATHER_ALGO_COUNT is one past the largest. */
typedef enum zmpi_gather_algo {
    ZMPI_GATHER_LINEAR = 1,
    ZMPI_GATHER_BINOMIAL = 2,
    ZMPI_GATHER_CPRP2P = 3,
    ZMPI_GATHER_NODE = 4,
    ZMPI_GATHER_ALGO_COUNT
} zmpi_gather_algo;

int zmpi_gatherv_linear(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                        const int *recvcounts, const int *displs, int root);
int zmpi_gatherv_binomial(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                          const int *recvcounts, const int *displs, int root);
int zmpi_gatherv_node(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                      const int *recvcounts, const int *displs, int root);
int zmpi_gatherv_cprp2p(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                        const int *recvcounts, const int *displs, int root);

#endif
