/*
 * ZMPI_Gather / ZMPI_Gatherv: dispatchers and algorithm table.
 *
 * Guarantee: each rank's block is compressed once by its owner and
 * decompressed once by the root (binomial: forwarded up the tree without
 * recompression), so every element the root receives from another rank is
 * within the bound of one compression - ABS: <= eb; REL: <= rel * (max - min)
 * of that rank's block. Message scope = result scope. The root's own block is
 * copied exactly. cprp2p (compress-per-hop baseline): the block of vrank k
 * is compressed popcount(k) <= ceil(log2 N) times; result scope <= eb (each
 * compression gets eb / ceil(log2 N), REL: rel * the range of all blocks /
 * ceil(log2 N)); message scope up to ceil(log2 N) * eb.
 *
 * Datatypes: recvtype is significant at the root only, sendtype at the other
 * ranks; the compressed path needs MPI_FLOAT or MPI_DOUBLE as the significant
 * type on every rank (mixing a basic type with an equivalent derived type
 * across ranks is unsupported). The root's sendtype may be any datatype with
 * the same signature (its block is then converted locally).
 *
 * Fallback to the PMPI call with the user's arguments: other datatypes,
 * intercommunicators, one rank, no bound configured, ZMPI_ALGO_MPI, and for
 * Gather a block (recvcount elements) below ZMPI_MIN_BYTES. Gatherv always
 * takes the compressed path when the type allows it; blocks below
 * ZMPI_MIN_BYTES then travel as uncompressed streams. Gather whose receive
 * buffer spans more than INT_MAX elements runs as plain MPI (not counted).
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/common/movement.h"
#include "coll/gather/gather.h"

const zmpi_algo zmpi_gather_algos[] = {
    {ZMPI_GATHER_LINEAR, "linear", "every rank compresses its block once and sends it to the root",
     (const void *)zmpi_gatherv_linear},
    {ZMPI_GATHER_BINOMIAL, "binomial",
     "binomial tree; every rank compresses its block once, bundles are forwarded up without recompression",
     (const void *)zmpi_gatherv_binomial},
    {ZMPI_GATHER_CPRP2P, "cprp2p",
     "baseline: binomial tree where every inner rank decompresses its children's blocks and recompresses "
     "its whole subtree bundle (error grows per hop)",
     (const void *)zmpi_gatherv_cprp2p},
    {0, NULL, NULL, NULL}};

static size_t elem_size(MPI_Datatype type)
{
    zmpi_dtype dt;
    return zmpi_classify(type, &dt) ? zmpi_dtype_size(dt) : 0;
}

/* The compressed path, after zmpi_call_begin. */
static int run(zmpi_call *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               const int *recvcounts, const int *displs, int root)
{
    /* cprp2p sets its per-hop bound itself (from every rank's block) */
    int rc = c->algo == ZMPI_GATHER_CPRP2P ? MPI_SUCCESS : zmpi_call_bound(c, 1, NULL, 0);
    if (rc)
        goto fn_exit;
    if (c->rank == root && sendbuf != MPI_IN_PLACE && sendtype != c->type) {
        /* the root's own block from a different (equivalent) datatype */
        rc = zmpi_dm_copy_typed(c->comm, sendbuf, sendcount, sendtype,
                                (char *)recvbuf + (ptrdiff_t)displs[root] * (ptrdiff_t)c->es,
                                recvcounts[root], c->type);
        if (rc)
            goto fn_exit;
        sendbuf = MPI_IN_PLACE;
    }
    rc = ((zmpi_gatherv_fn)zmpi_coll_algo_get(ZMPI_COLL_GATHER, c->algo)->fn)(c, sendbuf, sendcount, recvbuf,
                                                                              recvcounts, displs, root);
fn_exit:
    return rc;
}

int ZMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    zmpi_call c;
    int rc = MPI_SUCCESS, on = 0, rank = -1, size = 0;
    int *counts = NULL, *displs = NULL;
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &size);
    int am_root = rank == root;
    MPI_Datatype type = am_root ? recvtype : sendtype;
    int count = am_root ? recvcount : sendcount;

    /* the blocks' int displacements must fit (else plain MPI, not counted) */
    if (count >= 0 && size >= 1 && (size_t)count * (size_t)(size - 1) <= (size_t)INT_MAX)
        on = zmpi_call_begin(&c, comm, ZMPI_COLL_GATHER, type, MPI_OP_NULL, (size_t)count * elem_size(type));
    if (on == 1 && (root < 0 || root >= c.size)) {
        zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
        on = 0;
    }
    if (on == 0) {
        rc = PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
        zmpi_call_plain_done(comm); /* completes a measurement of the plain call */
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err); /* unusable or disagreeing settings */
    } else {
        if (am_root)
            rc = zmpi_dm_equal_layout(size, count, &counts, &displs);
        if (rc == MPI_SUCCESS)
            rc = zmpi_raise(comm, run(&c, sendbuf, sendcount, sendtype, recvbuf, counts, displs, root));
        zmpi_call_end(&c);
    }
    free(counts);
    free(displs);
    return rc;
}

int ZMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    zmpi_call c;
    int rc, on, rank = -1;
    PMPI_Comm_rank(comm, &rank);
    MPI_Datatype type = rank == root ? recvtype : sendtype;

    on = zmpi_call_begin(&c, comm, ZMPI_COLL_GATHER, type, MPI_OP_NULL, SIZE_MAX);
    if (on == 1) {
        int bad = root < 0 || root >= c.size || (rank != root && sendcount < 0);
        for (int i = 0; rank == root && !bad && i < c.size; i++)
            bad = recvcounts[i] < 0;
        if (bad) {
            zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
            on = 0;
        }
    }
    if (on == 0) {
        rc = PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm);
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err);
    } else {
        rc = zmpi_raise(comm, run(&c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, root));
        zmpi_call_end(&c);
    }
    return rc;
}
