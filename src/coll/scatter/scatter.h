/*
 * Scatter(v) algorithms (table zmpi_scatter_table in scatter.c, signature
 * zmpi_scatterv_fn in coll/registry.h).
 */
#ifndef ZMPI_COLL_SCATTER_H
#define ZMPI_COLL_SCATTER_H

#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_SCATTER_ALGO_COUNT is one past the largest. */
typedef enum zmpi_scatter_algo {
    ZMPI_SCATTER_BINOMIAL = 1,
    ZMPI_SCATTER_LINEAR = 2,
    ZMPI_SCATTER_CPRP2P = 3,
    ZMPI_SCATTER_NODE = 4,
    ZMPI_SCATTER_ALGO_COUNT
} zmpi_scatter_algo;

int zmpi_scatterv_binomial(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                           void *recvbuf, int recvcount, int root);
int zmpi_scatterv_linear(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                         void *recvbuf, int recvcount, int root);
int zmpi_scatterv_node(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                       void *recvbuf, int recvcount, int root);
int zmpi_scatterv_cprp2p(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                         void *recvbuf, int recvcount, int root);

#endif
