/*
 * ZMPI_Reduce_scatter and ZMPI_Reduce_scatter_block: dispatch to the plain
 * MPI call or to a compressed algorithm (table below, ZMPI_REDUCE_SCATTER_ALGORITHM).
 *
 * Guarantee (ring, the default, and rhd: a reduction cannot forward
 * compressed bytes, so every merge is a compression "hop"):
 *   result scope:  every element of the result is within eb of the
 *                  uncompressed reduction (REL: eb = rel * (max - min) of
 *                  all ranks' input vectors); each of the N-1 compressions
 *                  an element passes gets eb/(N-1).
 *   message scope: every compressed message is within eb (REL: of its own
 *                  range); the result is within (N-1)*eb (ABS).
 * Plus the rounding of the reduction itself (see reduce_scatter_ring.c).
 *
 * Falls back to PMPI_Reduce_scatter(_block) with the user's arguments for
 * types other than MPI_FLOAT/MPI_DOUBLE, ops other than SUM/MIN/MAX,
 * intercommunicators, one rank, a total size below cfg.min_bytes, no bound
 * configured, or ZMPI_ALGO_MPI (zmpi_call_begin decides, the same on every
 * rank: recvcounts are the same on all ranks, so is their sum).
 */
#include <stdint.h>
#include <stdlib.h>

#include "coll/reduce_scatter/reduce_scatter.h"

const zmpi_algo zmpi_reduce_scatter_algos[] = {
    {ZMPI_REDUCE_SCATTER_RING, "ring",
     "ring of N-1 steps; each partial block is compressed in pieces while the previous pieces are "
     "in flight, then decompressed and reduced (error <= (N-1) compressions)",
     (const void *)zmpi_reduce_scatter_ring},
    {ZMPI_REDUCE_SCATTER_RHD, "rhd",
     "recursive halving (power-of-two N; others run the ring): log2 N steps, the outgoing half "
     "compressed in pieces while in flight, the incoming half reduced as it arrives (error <= (N-1) "
     "compressions; measured slower than the ring on the simulated clusters, hence not the default)",
     (const void *)zmpi_reduce_scatter_rhd},
    {0, NULL, NULL, NULL}};

/* Runs the picked algorithm on a prepared call and ends the call. */
static int run(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op)
{
    int rc = MPI_SUCCESS;
    const zmpi_algo *a = zmpi_coll_algo_get(ZMPI_COLL_REDUCE_SCATTER, c->algo);
    if (!a) {
        rc = MPI_ERR_INTERN;
        goto fn_fail;
    }
    rc = ((zmpi_reduce_scatter_fn)a->fn)(c, sendbuf, recvbuf, recvcounts, op);
    if (rc)
        goto fn_fail;
fn_exit:
    zmpi_call_end(c);
    return rc;
fn_fail:
    goto fn_exit;
}

int ZMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int rc = MPI_SUCCESS, size = 0;
    zmpi_call c;
    zmpi_dtype dt;
    size_t es = zmpi_classify(datatype, &dt) ? zmpi_dtype_size(dt) : 0, total = 0;

    /* invalid arguments: let MPI report them */
    if (comm == MPI_COMM_NULL || !recvcounts)
        goto fn_plain;
    rc = PMPI_Comm_size(comm, &size);
    if (rc)
        goto fn_fail;
    for (int b = 0; b < size; b++) {
        if (recvcounts[b] < 0)
            goto fn_plain;
        total += (size_t)recvcounts[b];
    }
    rc = zmpi_call_begin(&c, comm, ZMPI_COLL_REDUCE_SCATTER, datatype, op, total * es);
    if (rc == ZMPI_CALL_PLAIN)
        goto fn_plain;
    if (rc == ZMPI_CALL_ERR) {
        rc = c.err;
        goto fn_fail;
    }
    rc = run(&c, sendbuf, recvbuf, recvcounts, op);
    if (rc)
        goto fn_fail;
fn_exit:
    return rc;
fn_fail:
    rc = zmpi_raise(comm, rc); /* zmpi's errors, and those of the private duplicate */
    goto fn_exit;
fn_plain:
    rc = PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    zmpi_call_plain_done(comm);
    goto fn_exit;
}

int ZMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int rc = MPI_SUCCESS, size = 0, *counts = NULL;
    zmpi_call c;
    zmpi_dtype dt;
    size_t es = zmpi_classify(datatype, &dt) ? zmpi_dtype_size(dt) : 0;

    if (comm == MPI_COMM_NULL || recvcount < 0)
        goto fn_plain;
    rc = PMPI_Comm_size(comm, &size);
    if (rc)
        goto fn_fail;
    rc = zmpi_call_begin(&c, comm, ZMPI_COLL_REDUCE_SCATTER, datatype, op,
                         (size_t)recvcount * (size_t)size * es);
    if (rc == ZMPI_CALL_PLAIN)
        goto fn_plain;
    if (rc == ZMPI_CALL_ERR) {
        rc = c.err;
        goto fn_fail;
    }
    rc = zmpi_alloc((size_t)size * sizeof *counts, &counts);
    if (rc) {
        zmpi_call_end(&c);
        goto fn_fail;
    }
    for (int b = 0; b < size; b++)
        counts[b] = recvcount;
    rc = run(&c, sendbuf, recvbuf, counts, op);
    if (rc)
        goto fn_fail;
fn_exit:
    free(counts);
    return rc;
fn_fail:
    rc = zmpi_raise(comm, rc); /* zmpi's errors, and those of the private duplicate */
    goto fn_exit;
fn_plain:
    rc = PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    zmpi_call_plain_done(comm);
    goto fn_exit;
}
