/*
 * The collective algorithms of zmpi: one table per collective, indexed by
 * the collective's named algorithm ids (enum in src/coll/<coll>/<coll>.h),
 * of {name, description, function}. Selection, ZMPI_<COLL>_ALGORITHM, the
 * docs and `--help` output all come from these tables.
 *
 * Every algorithm of a collective shares one signature: the MPI arguments
 * plus the zmpi_call prepared by the collective's dispatcher (which has
 * already handled the fallbacks: types, ops, intercommunicators, sizes, one
 * rank). Algorithm files: src/coll/<coll>/<coll>_<algorithm>.c.
 */
#ifndef ZMPI_COLL_REGISTRY_H
#define ZMPI_COLL_REGISTRY_H

#include "core/core.h"

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

/* An algorithm's function: the member of the table's collective. */
typedef union zmpi_algo_fn {
    zmpi_bcast_fn bcast;
    zmpi_scatterv_fn scatterv;
    zmpi_gatherv_fn gatherv;
    zmpi_allgatherv_fn allgatherv;
    zmpi_alltoallv_fn alltoallv;
    zmpi_reduce_scatter_fn reduce_scatter;
    zmpi_allreduce_fn allreduce;
    zmpi_reduce_fn reduce;
} zmpi_algo_fn;

typedef struct zmpi_algo {
    const char *name; /* NULL: no algorithm has this id */
    const char *description;
    zmpi_algo_fn fn;
    int own_bound; /* 1: sets the bound of its compressions itself (the dispatcher does not) */
} zmpi_algo;

/* A collective's algorithms: algo[id] for the ids 1 .. count - 1 (algo[0],
 * ZMPI_ALGO_DEFAULT, is unused). They are listed (ZMPI_Coll_algorithms) the
 * default first, then the others by id. */
typedef struct zmpi_coll_table {
    const zmpi_algo *algo;
    int count;
    int def; /* the id of the default algorithm */
} zmpi_coll_table;

/* Tables (defined in src/coll/<coll>/<coll>.c). */
extern const zmpi_coll_table zmpi_bcast_table, zmpi_scatter_table, zmpi_gather_table, zmpi_allgather_table,
    zmpi_alltoall_table, zmpi_reduce_scatter_table, zmpi_allreduce_table, zmpi_reduce_table;

/* Descriptor of an algorithm, or NULL. */
const zmpi_algo *zmpi_coll_algo_get(ZMPI_Coll coll, int id);
/* The algorithm to run on c (an algorithm id): the configured one, else
 * `def` if > 0 (the collective's choice from the call's arguments), else the
 * table's default. */
int zmpi_coll_algo_pick(const zmpi_call *c, int def);

#endif
