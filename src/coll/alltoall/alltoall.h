/*
 * Alltoall(v) algorithms (table zmpi_alltoall_table in alltoall.c, signature
 * zmpi_alltoallv_fn in coll/registry.h).
 */
#ifndef ZMPI_COLL_ALLTOALL_H
#define ZMPI_COLL_ALLTOALL_H

#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_ALLTOALL_ALGO_COUNT is one past the largest. */
typedef enum zmpi_alltoall_algo { ZMPI_ALLTOALL_PAIRWISE = 1, ZMPI_ALLTOALL_ALGO_COUNT } zmpi_alltoall_algo;

int zmpi_alltoallv_pairwise(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *sdispls,
                            void *recvbuf, const int *recvcounts, const int *rdispls);

#endif
