/*
 * ZMPI_Allreduce: dispatch to the plain MPI call or to a compressed
 * algorithm (table below, ZMPI_ALLREDUCE_ALGORITHM).
 *
 * Guarantees (N ranks; details and diagrams in the algorithm files):
 *   rhd (default)   result scope:  every element within eb of the
 *   and ring        uncompressed reduction (REL: eb = rel * (max - min) of
 *                   all ranks' inputs), N compressions of eb/N each; all
 *                   ranks get bit-identical results.
 *                   message scope: each message within eb; result within N*eb.
 *   cprp2p          result scope:  within eb, 2N-2 compressions of eb/(2N-2).
 *                   message scope: result within (2N-2)*eb; ranks differ.
 * Plus the rounding of the reduction itself in the datatype (as plain MPI,
 * whose result also depends on the order of operations).
 *
 * Falls back to PMPI_Allreduce with the user's arguments for types other
 * than MPI_FLOAT/MPI_DOUBLE, ops other than SUM/MIN/MAX (user ops, PROD,
 * ...), intercommunicators, one rank, count * size below cfg.min_bytes, no
 * bound configured, or ZMPI_ALGO_MPI (zmpi_call_begin, same on every rank).
 */
#include "coll/allreduce/allreduce.h"

const zmpi_algo zmpi_allreduce_algos[] = {
    {ZMPI_ALLREDUCE_RHD, "rhd",
     "recursive halving reduce-scatter (pieces compressed while in flight) + recursive doubling "
     "allgather of compress-once blocks (Rabenseifner): 2 log2 N messages instead of 2N-2; error "
     "<= N compressions, identical results on all ranks",
     (const void *)zmpi_allreduce_rhd},
    {ZMPI_ALLREDUCE_RING, "ring",
     "ring reduce-scatter (pieces compressed while in flight) + ring allgather of blocks compressed "
     "once by their owner; error <= N compressions, identical results on all ranks",
     (const void *)zmpi_allreduce_ring},
    {ZMPI_ALLREDUCE_CPRP2P, "cprp2p",
     "baseline: ring reduce-scatter + ring allgather that decompresses and recompresses at every "
     "hop; error <= 2N-2 compressions",
     (const void *)zmpi_allreduce_cprp2p},
    {0, NULL, NULL, NULL}};

int ZMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm)
{
    int rc = MPI_SUCCESS;
    zmpi_call c;
    zmpi_dtype dt;
    const zmpi_algo *a;
    size_t es = zmpi_classify(datatype, &dt) ? zmpi_dtype_size(dt) : 0;

    /* invalid arguments: let MPI report them */
    if (comm == MPI_COMM_NULL || count < 0)
        goto fn_plain;
    rc = zmpi_call_begin(&c, comm, ZMPI_COLL_ALLREDUCE, datatype, op, (size_t)count * es);
    if (rc == ZMPI_CALL_PLAIN)
        goto fn_plain;
    if (rc == ZMPI_CALL_ERR) {
        rc = c.err;
        goto fn_fail;
    }
    a = zmpi_coll_algo_get(ZMPI_COLL_ALLREDUCE, c.algo);
    rc = a ? ((zmpi_allreduce_fn)a->fn)(&c, sendbuf, recvbuf, (size_t)count, op) : MPI_ERR_INTERN;
    zmpi_call_end(&c);
    if (rc)
        goto fn_fail;
fn_exit:
    return rc;
fn_fail:
    rc = zmpi_raise(comm, rc); /* zmpi's errors, and those of the private duplicate */
    goto fn_exit;
fn_plain:
    rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    zmpi_call_plain_done(comm); /* completes a measurement of the plain call */
    goto fn_exit;
}
