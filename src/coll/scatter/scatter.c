/*
 * ZMPI_Scatter / ZMPI_Scatterv: dispatchers and algorithm table.
 *
 * Guarantee: each rank's part is compressed once by the root and
 * decompressed once by its destination, so every element a non-root rank
 * receives is within the bound of one compression - ABS: <= eb; REL:
 * <= rel * (max - min) of that rank's part (its own range, never wider than
 * the range of the whole send buffer). Message scope = result scope. The
 * root's own part is copied exactly. cprp2p (compress-per-hop baseline):
 * the part of vrank k is compressed popcount(k) <= ceil(log2 N) times;
 * result scope <= eb (each compression gets eb / ceil(log2 N), REL: rel *
 * the range of all parts / ceil(log2 N)); message scope up to
 * ceil(log2 N) * eb.
 *
 * Datatypes: sendtype is significant at the root only, recvtype at the
 * other ranks; the compressed path needs MPI_FLOAT or MPI_DOUBLE as the
 * significant type on every rank (mixing a basic type on some ranks with an
 * equivalent derived type on others is unsupported: the ranks would not
 * agree on the path). The root's recvtype may be any datatype with the same
 * signature (its part is then converted locally).
 *
 * Fallback to the PMPI call with the user's arguments: other datatypes,
 * intercommunicators, one rank, no bound configured, ZMPI_ALGO_MPI, and for
 * Scatter a part (sendcount elements) below ZMPI_MIN_BYTES. Scatterv always
 * takes the compressed path when the type allows it; parts below
 * ZMPI_MIN_BYTES are then sent as uncompressed streams. Scatter whose send
 * buffer spans more than INT_MAX elements (displacements are ints) runs as
 * plain MPI (not counted in the statistics).
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/common/movement.h"
#include "coll/scatter/scatter.h"

const zmpi_algo zmpi_scatter_algos[] = {
    {ZMPI_SCATTER_BINOMIAL, "binomial",
     "binomial tree; the root compresses each part once, subtrees receive their bundle of compressed parts",
     (const void *)zmpi_scatterv_binomial},
    {ZMPI_SCATTER_LINEAR, "linear", "the root compresses each part once and sends it to its rank",
     (const void *)zmpi_scatterv_linear},
    {ZMPI_SCATTER_CPRP2P, "cprp2p",
     "baseline: binomial tree where every inner rank decompresses its bundle and recompresses the parts it "
     "forwards (error grows per hop)",
     (const void *)zmpi_scatterv_cprp2p},
    {0, NULL, NULL, NULL}};

static size_t elem_size(MPI_Datatype type)
{
    zmpi_dtype dt;
    return zmpi_classify(type, &dt) ? zmpi_dtype_size(dt) : 0;
}

/* The compressed path, after zmpi_call_begin. */
static int run(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs, void *recvbuf,
               int recvcount, MPI_Datatype recvtype, int root)
{
    /* cprp2p sets its per-hop bound itself (from the parts of the send buffer) */
    int rc = c->algo == ZMPI_SCATTER_CPRP2P ? MPI_SUCCESS : zmpi_call_bound(c, 1, NULL, 0);
    if (rc)
        goto fn_exit;
    if (c->rank == root && recvbuf != MPI_IN_PLACE && recvtype != c->type) {
        /* the root's own part into a different (equivalent) datatype */
        rc = zmpi_dm_copy_typed(c->comm, (const char *)sendbuf + (ptrdiff_t)displs[root] * (ptrdiff_t)c->es,
                                sendcounts[root], c->type, recvbuf, recvcount, recvtype);
        if (rc)
            goto fn_exit;
        recvbuf = MPI_IN_PLACE;
    }
    rc = ((zmpi_scatterv_fn)zmpi_coll_algo_get(ZMPI_COLL_SCATTER, c->algo)->fn)(
        c, sendbuf, sendcounts, displs, recvbuf, recvcount, root);
fn_exit:
    return rc;
}

int ZMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    zmpi_call c;
    int rc = MPI_SUCCESS, on = 0, rank = -1, size = 0;
    int *counts = NULL, *displs = NULL;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    int am_root = rank == root;
    MPI_Datatype type = am_root ? sendtype : recvtype;
    int count = am_root ? sendcount : recvcount;

    /* the parts' int displacements must fit (else plain MPI, not counted) */
    if (count >= 0 && size >= 1 && (size_t)count * (size_t)(size - 1) <= (size_t)INT_MAX)
        on = zmpi_call_begin(&c, comm, ZMPI_COLL_SCATTER, type, MPI_OP_NULL, (size_t)count * elem_size(type));
    if (on == 1 && (root < 0 || root >= c.size)) {
        zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
        on = 0;
    }
    if (on == 0) {
        rc = PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
        zmpi_call_plain_done(comm); /* completes a measurement of the plain call */
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err); /* unusable or disagreeing settings */
    } else {
        /* default: large parts go straight from the root (one message each, no
         * forwarding: the root's link carries the same bytes either way),
         * small ones down the tree (log2 N latencies); count is the same on
         * all ranks here */
        if (c.st->cfg.algorithm[ZMPI_COLL_SCATTER] == ZMPI_ALGO_DEFAULT && (size_t)count * c.es >= 65536)
            c.algo = ZMPI_SCATTER_LINEAR;
        if (am_root)
            rc = zmpi_dm_equal_layout(size, count, &counts, &displs);
        if (rc == MPI_SUCCESS)
            rc = zmpi_raise(comm, run(&c, sendbuf, counts, displs, recvbuf, recvcount, recvtype, root));
        zmpi_call_end(&c);
    }
    free(counts);
    free(displs);
    return rc;
}

int ZMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    zmpi_call c;
    int rc, on, rank = -1;
    PMPI_Comm_rank(comm, &rank);
    MPI_Datatype type = rank == root ? sendtype : recvtype;

    on = zmpi_call_begin(&c, comm, ZMPI_COLL_SCATTER, type, MPI_OP_NULL, SIZE_MAX);
    if (on == 1) {
        int bad = root < 0 || root >= c.size || (rank != root && recvcount < 0);
        for (int i = 0; rank == root && !bad && i < c.size; i++)
            bad = sendcounts[i] < 0;
        if (bad) {
            zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
            on = 0;
        }
    }
    if (on == 0) {
        rc = PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm);
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err);
    } else {
        rc = zmpi_raise(comm, run(&c, sendbuf, sendcounts, displs, recvbuf, recvcount, recvtype, root));
        zmpi_call_end(&c);
    }
    return rc;
}
