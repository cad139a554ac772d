/*
 * Alltoall(v) algorithms (table zmpi_alltoall_algos in alltoall.c, signature
 * zmpi_alltoallv_fn in coll/registry.h).
 */
#ifndef ZMPI_COLL_ALLTOALL_H
#define ZMPI_COLL_ALLTOALL_H

#include "coll/registry.h"

enum { ZMPI_ALLTOALL_PAIRWISE = 1 };

int zmpi_alltoallv_pairwise(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *sdispls,
                            void *recvbuf, const int *recvcounts, const int *rdispls);

#endif
