/*
 * ZMPI_Alltoall / ZMPI_Alltoallv: dispatchers and algorithm table.
 *
 * Guarantee: each outgoing block is compressed once by its sender and
 * decompressed once by its receiver, so every element received from another
 * rank is within the bound of one compression - ABS: <= eb; REL:
 * <= rel * (max - min) of that block (its own range). Message scope = result
 * scope. The block a rank sends to itself is copied exactly.
 *
 * Datatypes: recvtype is significant on every rank and must be MPI_FLOAT or
 * MPI_DOUBLE for the compressed path; sendtype may be any datatype with the
 * same signature (the send blocks are then converted locally first).
 *
 * Fallback to the PMPI call with the user's arguments: other datatypes,
 * intercommunicators, one rank, no bound configured, ZMPI_ALGO_MPI, and for
 * Alltoall a block (recvcount elements) below ZMPI_MIN_BYTES. Alltoallv
 * always takes the compressed path when the type allows it; blocks below
 * ZMPI_MIN_BYTES then travel as uncompressed streams. Alltoall whose buffers
 * span more than INT_MAX elements runs as plain MPI (not counted).
 */
#include <limits.h>
#include <stdlib.h>

#include "coll/alltoall/alltoall.h"
#include "coll/common/movement.h"

const zmpi_algo zmpi_alltoall_algos[] = {
    {ZMPI_ALLTOALL_PAIRWISE, "pairwise",
     "pairwise exchange in N-1 steps; every outgoing block is compressed once by its sender and "
     "decompressed once by its receiver",
     (const void *)zmpi_alltoallv_pairwise},
    {0, NULL, NULL, NULL}};

static size_t elem_size(MPI_Datatype type)
{
    zmpi_dtype dt;
    return zmpi_classify(type, &dt) ? zmpi_dtype_size(dt) : 0;
}

/* The compressed path, after zmpi_call_begin. A send buffer in another
 * (equivalent) datatype is first converted to contiguous elements. */
static int run(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *sdispls,
               MPI_Datatype sendtype, void *recvbuf, const int *recvcounts, const int *rdispls)
{
    int rc, size = c->size, tsize = 0;
    int *tc = NULL, *td = NULL;
    char *tmp = NULL;
    MPI_Aint lb = 0, extent = 0;

    rc = zmpi_call_bound(c, 1, NULL, 0);
    if (rc)
        goto fn_exit;
    if (sendbuf != MPI_IN_PLACE && sendtype != c->type) {
        size_t total = 0;
        rc = PMPI_Type_size(sendtype, &tsize);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Type_get_extent(sendtype, &lb, &extent);
        if (rc == MPI_SUCCESS)
            rc = zmpi_alloc((size_t)size * sizeof *tc, &tc);
        if (rc == MPI_SUCCESS)
            rc = zmpi_alloc((size_t)size * sizeof *td, &td);
        if (rc)
            goto fn_exit;
        for (int j = 0; j < size; j++) {
            size_t bytes = (size_t)(sendcounts[j] > 0 ? sendcounts[j] : 0) * (size_t)(tsize > 0 ? tsize : 0);
            if (bytes % c->es || bytes / c->es > (size_t)INT_MAX || total > (size_t)INT_MAX) {
                rc = bytes % c->es ? MPI_ERR_TYPE : MPI_ERR_COUNT;
                goto fn_exit;
            }
            tc[j] = (int)(bytes / c->es);
            td[j] = (int)total;
            total += (size_t)tc[j];
        }
        rc = zmpi_scratch_get(c, total * c->es, &tmp);
        for (int j = 0; rc == MPI_SUCCESS && j < size; j++)
            rc = zmpi_dm_copy_typed(c->comm, (const char *)sendbuf + (MPI_Aint)sdispls[j] * extent,
                                    sendcounts[j], sendtype, tmp + (size_t)td[j] * c->es, tc[j], c->type);
        if (rc)
            goto fn_exit;
        sendbuf = tmp;
        sendcounts = tc;
        sdispls = td;
    }
    rc = ((zmpi_alltoallv_fn)zmpi_coll_algo_get(ZMPI_COLL_ALLTOALL, c->algo)->fn)(
        c, sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls);
fn_exit:
    zmpi_scratch_put(c, tmp);
    free(tc);
    free(td);
    return rc;
}

int ZMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    zmpi_call c;
    int rc = MPI_SUCCESS, on = 0, size = 0, in_place = sendbuf == MPI_IN_PLACE;
    int *rcounts = NULL, *rdispls = NULL, *scounts = NULL, *sdispls = NULL;
    PMPI_Comm_size(comm, &size);
    int scount = in_place ? recvcount : sendcount;

    /* the blocks' int displacements must fit (else plain MPI, not counted) */
    if (recvcount >= 0 && scount >= 0 && size >= 1 &&
        (size_t)recvcount * (size_t)(size - 1) <= (size_t)INT_MAX &&
        (size_t)scount * (size_t)(size - 1) <= (size_t)INT_MAX)
        on = zmpi_call_begin(&c, comm, ZMPI_COLL_ALLTOALL, recvtype, MPI_OP_NULL,
                             (size_t)recvcount * elem_size(recvtype));
    if (on == 0) {
        rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        zmpi_call_plain_done(comm); /* completes a measurement of the plain call */
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err); /* unusable or disagreeing settings */
    } else {
        rc = zmpi_dm_equal_layout(size, recvcount, &rcounts, &rdispls);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_equal_layout(size, scount, &scounts, &sdispls);
        if (rc == MPI_SUCCESS)
            rc = zmpi_raise(comm, run(&c, sendbuf, scounts, sdispls, sendtype, recvbuf, rcounts, rdispls));
        zmpi_call_end(&c);
    }
    free(rcounts);
    free(rdispls);
    free(scounts);
    free(sdispls);
    return rc;
}

int ZMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                   MPI_Comm comm)
{
    zmpi_call c;
    int rc, on;

    on = zmpi_call_begin(&c, comm, ZMPI_COLL_ALLTOALL, recvtype, MPI_OP_NULL, SIZE_MAX);
    if (on == 1) {
        int bad = 0;
        for (int i = 0; !bad && i < c.size; i++)
            bad = recvcounts[i] < 0 || (sendbuf != MPI_IN_PLACE && sendcounts[i] < 0);
        if (bad) {
            zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
            on = 0;
        }
    }
    if (on == 0) {
        rc = PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                            comm);
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err);
    } else {
        rc = zmpi_raise(comm, run(&c, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls));
        zmpi_call_end(&c);
    }
    return rc;
}
