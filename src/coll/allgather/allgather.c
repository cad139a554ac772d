/*
 * ZMPI_Allgather / ZMPI_Allgatherv: dispatchers and algorithm table.
 *
 * Guarantee (ring, compress once): every rank's block is compressed once by
 * its owner; each other rank decompresses it once, so every element of a
 * foreign block is within the bound of one compression - ABS: <= eb; REL:
 * <= rel * (max - min) of the owner's block (its own range, never wider than
 * the range of all blocks). Message scope = result scope. A rank's own block
 * is copied, not decompressed: the owner holds its block exactly while the
 * others hold the decompressed version (the ranks' results differ in that
 * block, each within the bound of the exact data). cprp2p (compress-per-hop
 * baseline): a block travelling d ring steps is compressed d times (d <= N-1);
 * result scope <= eb (each compression gets eb / (N-1), REL: rel * the range
 * of all blocks / (N-1)); message scope up to (N-1) * eb.
 *
 * Datatypes: recvtype is significant on every rank and must be MPI_FLOAT or
 * MPI_DOUBLE for the compressed path; sendtype may be any datatype with the
 * same signature (the own block is then converted locally).
 *
 * Fallback to the PMPI call with the user's arguments: other datatypes,
 * intercommunicators, one rank, no bound configured, ZMPI_ALGO_MPI, and for
 * Allgather a block (recvcount elements) below ZMPI_MIN_BYTES. Allgatherv
 * always takes the compressed path when the type allows it; blocks below
 * ZMPI_MIN_BYTES then travel as uncompressed streams. Allgather whose
 * receive buffer spans more than INT_MAX elements runs as plain MPI (not
 * counted in the statistics).
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/allgather/allgather.h"
#include "coll/common/movement.h"

const zmpi_algo zmpi_allgather_algos[] = {
    {ZMPI_ALLGATHER_RDB, "rdb",
     "recursive doubling of the compress-once blocks: log2 N steps of doubling size instead of N-1 "
     "(power-of-two N; others run the ring); fewer, larger messages",
     (const void *)zmpi_allgatherv_rdb},
    {ZMPI_ALLGATHER_RING, "ring",
     "ring; every rank compresses its block once, compressed blocks are forwarded N-1 steps and "
     "decompressed once at the end (sizes by one allgather of integers)",
     (const void *)zmpi_allgatherv_ring},
    {ZMPI_ALLGATHER_CPRP2P, "cprp2p",
     "baseline: ring where every step decompresses and recompresses the forwarded block (error grows "
     "per step)",
     (const void *)zmpi_allgatherv_cprp2p},
    {0, NULL, NULL, NULL}};

static size_t elem_size(MPI_Datatype type)
{
    zmpi_dtype dt;
    return zmpi_classify(type, &dt) ? zmpi_dtype_size(dt) : 0;
}

/* The compressed path, after zmpi_call_begin. */
static int run(zmpi_call *c, const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
               const int *recvcounts, const int *displs)
{
    int rc = MPI_SUCCESS, rank = c->rank;
    char *own = (char *)recvbuf + (ptrdiff_t)displs[rank] * (ptrdiff_t)c->es;
    if (sendbuf != MPI_IN_PLACE && sendtype != c->type) {
        /* the own block from a different (equivalent) datatype */
        rc = zmpi_dm_copy_typed(c->comm, sendbuf, sendcount, sendtype, own, recvcounts[rank], c->type);
        if (rc)
            goto fn_exit;
        sendbuf = MPI_IN_PLACE;
    }
    if (c->algo == ZMPI_ALLGATHER_CPRP2P) {
        const void *in = sendbuf == MPI_IN_PLACE ? own : sendbuf;
        rc = zmpi_call_bound(c, c->size - 1, in, (size_t)recvcounts[rank]);
    } else {
        rc = zmpi_call_bound(c, 1, NULL, 0);
    }
    if (rc)
        goto fn_exit;
    rc = ((zmpi_allgatherv_fn)zmpi_coll_algo_get(ZMPI_COLL_ALLGATHER, c->algo)->fn)(c, sendbuf, recvbuf,
                                                                                    recvcounts, displs);
fn_exit:
    return rc;
}

int ZMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    zmpi_call c;
    int rc = MPI_SUCCESS, on = 0, size = 0;
    int *counts = NULL, *displs = NULL;
    PMPI_Comm_size(comm, &size);

    /* the blocks' int displacements must fit (else plain MPI, not counted) */
    if (recvcount >= 0 && size >= 1 && (size_t)recvcount * (size_t)(size - 1) <= (size_t)INT_MAX)
        on = zmpi_call_begin(&c, comm, ZMPI_COLL_ALLGATHER, recvtype, MPI_OP_NULL,
                             (size_t)recvcount * elem_size(recvtype));
    if (on == 0) {
        rc = PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        zmpi_call_plain_done(comm); /* completes a measurement of the plain call */
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err); /* unusable or disagreeing settings */
    } else {
        rc = zmpi_dm_equal_layout(size, recvcount, &counts, &displs);
        if (rc == MPI_SUCCESS)
            rc = zmpi_raise(comm, run(&c, sendbuf, sendcount, sendtype, recvbuf, counts, displs));
        zmpi_call_end(&c);
    }
    free(counts);
    free(displs);
    return rc;
}

int ZMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    zmpi_call c;
    int rc, on;

    on = zmpi_call_begin(&c, comm, ZMPI_COLL_ALLGATHER, recvtype, MPI_OP_NULL, SIZE_MAX);
    if (on == 1) {
        int bad = 0;
        for (int i = 0; !bad && i < c.size; i++)
            bad = recvcounts[i] < 0;
        if (bad) {
            zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
            on = 0;
        }
    }
    if (on == 0) {
        rc = PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err);
    } else {
        rc = zmpi_raise(comm, run(&c, sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs));
        zmpi_call_end(&c);
    }
    return rc;
}
