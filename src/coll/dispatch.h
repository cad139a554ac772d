/*
 * The one path of every compressed collective call (dispatch.c):
 *
 *   shape   -> the datatype and size every rank knows (or plain MPI for
 *              arguments MPI must report, or sizes whose int displacements
 *              do not fit)
 *   begin   -> zmpi_call_begin: compress, plain MPI, or an error
 *   invalid -> arguments MPI must report, once the communicator's size is
 *              known: plain MPI
 *   choose  -> the algorithm (configured, or the collective's default)
 *   prepare -> the arguments in elements of the call's type (layouts of the
 *              non-v calls, blocks in another datatype converted locally)
 *   bound   -> the bound of each compression (zmpi_call_bound), unless the
 *              algorithm sets its own (zmpi_algo.own_bound)
 *   run     -> the algorithm from the collective's table
 *   end     -> zmpi_call_end; a zmpi error is raised once on comm
 *   plain   -> the PMPI_ call with the user's arguments, then
 *              zmpi_call_plain_done
 *
 * ZMPI_<Coll> fills a zmpi_coll_args and calls zmpi_coll_run; the
 * differences between the collectives live in their zmpi_coll_ops rows (in
 * src/coll/<coll>/<coll>.c).
 */
#ifndef ZMPI_COLL_DISPATCH_H
#define ZMPI_COLL_DISPATCH_H

#include "coll/registry.h"

/* The MPI collective calls zmpi compresses. */
typedef enum zmpi_coll_call {
    ZMPI_CC_BCAST = 0,
    ZMPI_CC_SCATTER,
    ZMPI_CC_SCATTERV,
    ZMPI_CC_GATHER,
    ZMPI_CC_GATHERV,
    ZMPI_CC_ALLGATHER,
    ZMPI_CC_ALLGATHERV,
    ZMPI_CC_ALLTOALL,
    ZMPI_CC_ALLTOALLV,
    ZMPI_CC_REDUCE_SCATTER,
    ZMPI_CC_REDUCE_SCATTER_BLOCK,
    ZMPI_CC_ALLREDUCE,
    ZMPI_CC_REDUCE,
    ZMPI_CC_COUNT
} zmpi_coll_call;

/* A call's arguments in MPI terms, as the user passed them. Fields a call
 * does not have are not read. */
typedef struct zmpi_coll_args {
    zmpi_coll_call call;
    const void *sendbuf;      /* not Bcast */
    void *recvbuf;            /* Bcast: the buffer */
    int count;                /* Bcast, Allreduce, Reduce */
    int sendcount, recvcount; /* the non-v calls; Scatterv: recvcount; Gatherv, Allgatherv: sendcount;
                                 Reduce_scatter_block: recvcount */
    const int *sendcounts, *sdispls; /* Scatterv (displs), Alltoallv */
    const int *recvcounts, *rdispls; /* Gatherv (displs), Allgatherv, Alltoallv, Reduce_scatter */
    MPI_Datatype datatype;    /* Bcast and the reductions */
    MPI_Datatype sendtype, recvtype; /* the data movement calls but Bcast */
    MPI_Op op;                /* the reductions */
    int root;                 /* Bcast, Scatter(v), Gather(v), Reduce */
    MPI_Comm comm;
} zmpi_coll_args;

/* zmpi_coll_run of the calls with one block per rank (Scatter, Gather,
 * Allgather, Alltoall: root is not read by the last two). */
int zmpi_coll_run_blocks(zmpi_coll_call call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);

/* Runs one collective call: compressed, or as the plain PMPI_ call. Returns
 * an MPI error code; errors are raised on comm as MPI raises its own. */
int zmpi_coll_run(const zmpi_coll_args *a);

/* common/derived.c: a Bcast, Scatter, Gather, Allgather or Alltoall whose
 * datatype on this rank is derived of one floating-point type runs as the
 * same call on the basic type, packed and unpacked here. Returns 1 with the
 * call's result in *rc (errors raised on comm), or 0 if there is nothing to
 * convert. */
int zmpi_coll_derived(const zmpi_coll_args *a, int *rc);

/* The arguments of an algorithm, in elements of the call's type (see the
 * signatures in registry.h). The dispatcher frees `owned` (free) and
 * `scratch` (zmpi_scratch_put) after the algorithm ran: the slots 0-3 are
 * the layouts of zmpi_coll_layout, 4-5 free for the rows. */
typedef struct zmpi_coll_job {
    const void *sendbuf;
    void *recvbuf;
    size_t count;
    int sendcount, recvcount;
    const int *sendcounts, *sdispls, *recvcounts, *rdispls;
    MPI_Op op;
    int root;
    int *owned[6];
    void *scratch;
    /* an error of this rank's arguments that the other ranks cannot see (a
     * send block larger than its place): returned after the rank took its
     * part in the algorithm, so that no other rank waits for it forever */
    int late_err;
} zmpi_coll_job;

/* What every rank knows before zmpi_call_begin (zmpi_coll_ops.shape). */
typedef struct zmpi_coll_known {
    MPI_Datatype type; /* the datatype significant on this rank */
    size_t bytes;      /* the size every rank knows; SIZE_MAX: none (the v-calls) */
    int err;           /* the error of ZMPI_CALL_ERR */
} zmpi_coll_known;

/* What tells the collectives apart: one row per collective (its calls, e.g.
 * Scatter and Scatterv, differ by a->call), defined in src/coll/<coll>/<coll>.c. */
typedef struct zmpi_coll_ops {
    int reduces; /* 1: a->op is the call's op; 0: data movement (MPI_OP_NULL) */
    /* Before zmpi_call_begin: fills *k; returns ZMPI_CALL_ON to go on,
     * ZMPI_CALL_PLAIN for the plain call, or ZMPI_CALL_ERR with k->err. */
    int (*shape)(const zmpi_coll_args *a, zmpi_coll_known *k);
    /* After zmpi_call_begin (c->size is known): 1 if the arguments are
     * invalid (the plain call reports them), else 0. NULL: never. */
    int (*invalid)(const zmpi_call *c, const zmpi_coll_args *a);
    /* The default algorithm for these arguments (0: the table's default).
     * Asked only when no algorithm is configured. NULL: the table's. */
    int (*choose)(const zmpi_call *c, const zmpi_coll_args *a);
    /* Fills *j from *a. */
    int (*prepare)(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j);
    /* Sets the bound of each compression for algorithm c->algo (not called
     * for an algorithm with own_bound). NULL: the algorithms set it. */
    int (*bound)(zmpi_call *c, const zmpi_coll_job *j);
    /* The PMPI_ call with the user's arguments. */
    int (*plain)(const zmpi_coll_args *a);
} zmpi_coll_ops;

extern const zmpi_coll_ops zmpi_bcast_ops, zmpi_scatter_ops, zmpi_gather_ops, zmpi_allgather_ops,
    zmpi_alltoall_ops, zmpi_reduce_scatter_ops, zmpi_allreduce_ops, zmpi_reduce_ops;

/* ---- helpers of the ops rows ---- */

/* Element size of a basic float type, else 0. */
size_t zmpi_coll_elem_size(MPI_Datatype type);
/* 1 if count elements per rank of size ranks have int displacements
 * (count >= 0, (size - 1) * count <= INT_MAX). */
int zmpi_coll_fits(int count, int size);
/* 1 if a->root is not a rank of c's communicator. */
int zmpi_coll_bad_root(const zmpi_call *c, const zmpi_coll_args *a);
/* 1 if any of counts[0..n) is negative. */
int zmpi_coll_any_negative(const int *counts, int n);
/* The layout of a non-v call, count elements per rank: *counts and *displs
 * point to arrays the job owns. */
int zmpi_coll_layout(const zmpi_call *c, int count, zmpi_coll_job *j, const int **counts, const int **displs);
/* Shape and invalid of Scatter(v) and Gather(v), whose significant datatype
 * and count are the root's send side and the others' receive side (Scatter)
 * or the reverse (Gather). The non-v calls need the layout's int
 * displacements to fit (else ZMPI_CALL_PLAIN, not counted); the v-calls have
 * no size all ranks know. Invalid: a bad root; for the v-calls also a
 * negative count among the root's counts (at the root) or the own count. */
int zmpi_coll_shape_rooted(const zmpi_coll_args *a, zmpi_coll_known *k);
int zmpi_coll_invalid_rooted(const zmpi_call *c, const zmpi_coll_args *a);
/* Shape of the calls with one count every rank knows (Allreduce, Reduce):
 * a null communicator or a negative count runs as the plain call, which lets
 * MPI report it. */
int zmpi_coll_shape_count(const zmpi_coll_args *a, zmpi_coll_known *k);
/* Prepare of the calls with one count (Bcast, Allreduce, Reduce): buffers,
 * count, op and root as given. */
int zmpi_coll_prepare_count(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j);
/* 1 if c's communicator has a known node layout of more than one node
 * with more than one rank on some node: where the node-aware algorithms
 * run by default. */
int zmpi_coll_multinode(const zmpi_call *c);
/* zmpi_call_bound for compress-once algorithms: each element is compressed once. */
int zmpi_coll_bound_once(zmpi_call *c, const zmpi_coll_job *j);

#endif
