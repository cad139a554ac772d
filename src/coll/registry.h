/*
 * The collective algorithms of zmpi: one table per collective of
 * {id, name, description, function}. Selection, ZMPI_<COLL>_ALGORITHM,
 * the docs and `--help` output all come from these tables.
 *
 * Every algorithm of a collective shares one signature: the MPI arguments
 * plus the zmpi_call prepared by the collective's dispatcher (which has
 * already handled the fallbacks: types, ops, intercommunicators, sizes, one
 * rank). Algorithm files: src/coll/<coll>/<coll>_<algorithm>.c.
 */
#ifndef ZMPI_COLL_REGISTRY_H
#define ZMPI_COLL_REGISTRY_H

#include "core/core.h"

typedef struct zmpi_algo {
    int id;                 /* > 0 */
    const char *name;
    const char *description;
    const void *fn;         /* the collective's algorithm signature, see below */
} zmpi_algo;

/* Descriptor of an algorithm, or NULL. */
const zmpi_algo *zmpi_coll_algo_get(ZMPI_Coll coll, int id);
/* The algorithm to run: the configured one, or the collective's default (the
 * first entry of its table). */
const zmpi_algo *zmpi_coll_algo_pick(ZMPI_Coll coll, const ZMPI_Config *cfg);

/* ---- signatures (counts in elements; displacements in elements) ---- */
typedef int (*zmpi_bcast_fn)(zmpi_call *c, void *buf, size_t count, int root);
/* Scatter(v): sendcounts/displs significant at root only; recvbuf may be MPI_IN_PLACE at root. */
typedef int (*zmpi_scatterv_fn)(zmpi_call *c, const void *sendbuf, const int *sendcounts,
                                const int *displs, void *recvbuf, int recvcount, int root);
/* Gather(v): recvcounts/displs significant at root only; sendbuf may be MPI_IN_PLACE at root. */
typedef int (*zmpi_gatherv_fn)(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                               const int *recvcounts, const int *displs, int root);
/* Allgather(v): sendbuf may be MPI_IN_PLACE (the block is already at displs[rank]). */
typedef int (*zmpi_allgatherv_fn)(zmpi_call *c, const void *sendbuf, void *recvbuf,
                                  const int *recvcounts, const int *displs);
/* Alltoall(v) */
typedef int (*zmpi_alltoallv_fn)(zmpi_call *c, const void *sendbuf, const int *sendcounts,
                                 const int *sdispls, void *recvbuf, const int *recvcounts,
                                 const int *rdispls);
/* Reduce_scatter: sendbuf may be MPI_IN_PLACE (input in recvbuf, whole vector). */
typedef int (*zmpi_reduce_scatter_fn)(zmpi_call *c, const void *sendbuf, void *recvbuf,
                                      const int *recvcounts, MPI_Op op);
typedef int (*zmpi_allreduce_fn)(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op);
typedef int (*zmpi_reduce_fn)(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op,
                              int root);

/* Tables (defined in src/coll/<coll>/<coll>.c), terminated by an entry with id 0. */
extern const zmpi_algo zmpi_bcast_algos[], zmpi_scatter_algos[], zmpi_gather_algos[],
    zmpi_allgather_algos[], zmpi_alltoall_algos[], zmpi_reduce_scatter_algos[],
    zmpi_allreduce_algos[], zmpi_reduce_algos[];

#endif
