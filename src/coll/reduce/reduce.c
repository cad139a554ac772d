/*
 * ZMPI_Reduce: dispatch to the plain MPI call or to a compressed algorithm
 * (table below, ZMPI_REDUCE_ALGORITHM).
 *
 * Guarantee (rsg, N ranks; details in reduce_rsg.c):
 *   result scope:  every element of the root's result within eb of the
 *                  uncompressed reduction (REL: eb = rel * (max - min) of all
 *                  ranks' inputs); N compressions of eb/N each.
 *   message scope: each message within eb; the result within N*eb (ABS).
 * cprp2p (compress-per-hop baseline, binomial tree; reduce_cprp2p.c): the
 * N-1 compressed partials add their errors for SUM, only a path's
 * ceil(log2 N) for MIN/MAX; result scope <= eb (each compression gets
 * eb / hops), message scope up to (N-1)*eb (SUM) or ceil(log2 N)*eb.
 * Plus the rounding of the reduction itself in the datatype.
 *
 * Falls back to PMPI_Reduce with the user's arguments for types other than
 * MPI_FLOAT/MPI_DOUBLE, ops other than SUM/MIN/MAX, intercommunicators, one
 * rank, count * size below cfg.min_bytes, no bound configured, or
 * ZMPI_ALGO_MPI (zmpi_call_begin, same on every rank), and for an invalid
 * root (MPI reports it).
 */
#include "coll/reduce/reduce.h"

const zmpi_algo zmpi_reduce_algos[] = {
    {ZMPI_REDUCE_RSG, "rsg",
     "ring reduce-scatter (pieces compressed while in flight) + gather of the blocks, compressed "
     "once, to the root; error <= N compressions",
     (const void *)zmpi_reduce_rsg},
    {ZMPI_REDUCE_CPRP2P, "cprp2p",
     "baseline: binomial tree where every hop decompresses, reduces and recompresses the partial result "
     "(error grows per hop)",
     (const void *)zmpi_reduce_cprp2p},
    {0, NULL, NULL, NULL}};

int ZMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm)
{
    int rc = MPI_SUCCESS, size = 0;
    zmpi_call c;
    zmpi_dtype dt;
    const zmpi_algo *a;
    size_t es = zmpi_classify(datatype, &dt) ? zmpi_dtype_size(dt) : 0;

    /* invalid arguments (and intercommunicator roots MPI_ROOT / MPI_PROC_NULL):
     * let MPI handle them */
    if (comm == MPI_COMM_NULL || count < 0)
        goto fn_plain;
    rc = PMPI_Comm_size(comm, &size);
    if (rc)
        goto fn_fail;
    if (root < 0 || root >= size)
        goto fn_plain;
    rc = zmpi_call_begin(&c, comm, ZMPI_COLL_REDUCE, datatype, op, (size_t)count * es);
    if (rc == ZMPI_CALL_PLAIN)
        goto fn_plain;
    if (rc == ZMPI_CALL_ERR) {
        rc = c.err;
        goto fn_fail;
    }
    a = zmpi_coll_algo_get(ZMPI_COLL_REDUCE, c.algo);
    rc = a ? ((zmpi_reduce_fn)a->fn)(&c, sendbuf, recvbuf, (size_t)count, op, root) : MPI_ERR_INTERN;
    zmpi_call_end(&c);
    if (rc)
        goto fn_fail;
fn_exit:
    return rc;
fn_fail:
    rc = zmpi_raise(comm, rc); /* zmpi's errors, and those of the private duplicate */
    goto fn_exit;
fn_plain:
    rc = PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    zmpi_call_plain_done(comm); /* completes a measurement of the plain call */
    goto fn_exit;
}
