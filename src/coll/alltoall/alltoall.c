/*
 * ZMPI_Alltoall / ZMPI_Alltoallv: rows of the dispatcher (coll/dispatch.h)
 * and algorithm table.
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
 * always takes the compressed path when the type allows it; its blocks
 * below ZMPI_MIN_BYTES, or not worth compressing on the configured network,
 * then travel raw (alltoall_pairwise.c). Alltoall whose buffers
 * span more than INT_MAX elements runs as plain MPI (not counted).
 */
#include <limits.h>

#include "coll/alltoall/alltoall.h"
#include "coll/common/movement.h"
#include "coll/dispatch.h"

int ZMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                  MPI_Datatype recvtype, MPI_Comm comm)
{
    return zmpi_coll_run_blocks(ZMPI_CC_ALLTOALL, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                0, comm);
}

int ZMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                   void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                   MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_ALLTOALLV, .sendbuf = sendbuf, .sendcounts = sendcounts,
                        .sdispls = sdispls, .sendtype = sendtype, .recvbuf = recvbuf,
                        .recvcounts = recvcounts, .rdispls = rdispls, .recvtype = recvtype, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_ALLTOALL_ALGO_COUNT] = {
    [ZMPI_ALLTOALL_PAIRWISE] = {"pairwise",
                                "pairwise exchange in N-1 steps; every outgoing block is compressed once by "
                                "its sender and decompressed once by its receiver",
                                {.alltoallv = zmpi_alltoallv_pairwise}, 0},
};
const zmpi_coll_table zmpi_alltoall_table = {algos, ZMPI_ALLTOALL_ALGO_COUNT, ZMPI_ALLTOALL_PAIRWISE};

/* Alltoall's send block (recvcount elements in place). */
static int send_count(const zmpi_coll_args *a)
{
    return a->sendbuf == MPI_IN_PLACE ? a->recvcount : a->sendcount;
}

/* recvtype is significant on every rank; Alltoall's blocks must have int
 * displacements (else plain MPI, not counted) */
static int shape(const zmpi_coll_args *a, zmpi_coll_known *k)
{
    int size = 0;
    k->type = a->recvtype;
    k->bytes = SIZE_MAX;
    if (a->call == ZMPI_CC_ALLTOALLV)
        return ZMPI_CALL_ON;
    PMPI_Comm_size(a->comm, &size);
    if (!zmpi_coll_fits(a->recvcount, size) || !zmpi_coll_fits(send_count(a), size))
        return ZMPI_CALL_PLAIN;
    k->bytes = (size_t)a->recvcount * zmpi_coll_elem_size(a->recvtype);
    return ZMPI_CALL_ON;
}

static int invalid(const zmpi_call *c, const zmpi_coll_args *a)
{
    if (a->call != ZMPI_CC_ALLTOALLV)
        return 0;
    return zmpi_coll_any_negative(a->recvcounts, c->size) ||
           (a->sendbuf != MPI_IN_PLACE && zmpi_coll_any_negative(a->sendcounts, c->size));
}

/* A send buffer in another (equivalent) datatype: converted to contiguous
 * elements of the call's type (j->scratch, layout in j->owned[4..5]). */
static int convert_send(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j)
{
    int rc, size = c->size, tsize = 0, *tc, *td;
    size_t total = 0;
    MPI_Aint lb = 0, extent = 0;

    ZMPI_CHECK(PMPI_Type_size(a->sendtype, &tsize));
    ZMPI_CHECK(PMPI_Type_get_extent(a->sendtype, &lb, &extent));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *tc, &j->owned[4]));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *td, &j->owned[5]));
    tc = j->owned[4];
    td = j->owned[5];
    for (int k = 0; k < size; k++) {
        size_t n = (size_t)(j->sendcounts[k] > 0 ? j->sendcounts[k] : 0);
        size_t bytes = n * (size_t)(tsize > 0 ? tsize : 0);
        if (bytes % c->es || bytes / c->es > (size_t)INT_MAX || total > (size_t)INT_MAX) {
            rc = bytes % c->es ? MPI_ERR_TYPE : MPI_ERR_COUNT;
            goto fn_fail;
        }
        tc[k] = (int)(bytes / c->es);
        td[k] = (int)total;
        total += (size_t)tc[k];
    }
    ZMPI_CHECK(zmpi_scratch_get(c, total * c->es, &j->scratch));
    char *tmp = j->scratch;
    for (int k = 0; k < size; k++)
        ZMPI_CHECK(zmpi_dm_copy_typed(c->comm, (const char *)a->sendbuf + (MPI_Aint)j->sdispls[k] * extent,
                                      j->sendcounts[k], a->sendtype, tmp + (size_t)td[k] * c->es, tc[k],
                                      c->type));
    j->sendbuf = tmp;
    j->sendcounts = tc;
    j->sdispls = td;
fn_fail:
    return rc;
}

/* Alltoall's blocks laid out as Alltoallv's. */
static int prepare(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j)
{
    int rc = MPI_SUCCESS;
    *j = (zmpi_coll_job){.sendbuf = a->sendbuf, .sendcounts = a->sendcounts, .sdispls = a->sdispls,
                         .recvbuf = a->recvbuf, .recvcounts = a->recvcounts, .rdispls = a->rdispls};
    if (a->call == ZMPI_CC_ALLTOALL) {
        ZMPI_CHECK(zmpi_coll_layout(c, a->recvcount, j, &j->recvcounts, &j->rdispls));
        ZMPI_CHECK(zmpi_coll_layout(c, send_count(a), j, &j->sendcounts, &j->sdispls));
    }
    if (a->sendbuf != MPI_IN_PLACE && a->sendtype != c->type)
        ZMPI_CHECK(convert_send(c, a, j));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int plain(const zmpi_coll_args *a)
{
    if (a->call == ZMPI_CC_ALLTOALL)
        return PMPI_Alltoall(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype,
                             a->comm);
    return PMPI_Alltoallv(a->sendbuf, a->sendcounts, a->sdispls, a->sendtype, a->recvbuf, a->recvcounts,
                          a->rdispls, a->recvtype, a->comm);
}

const zmpi_coll_ops zmpi_alltoall_ops = {.shape = shape, .invalid = invalid, .prepare = prepare,
                                         .bound = zmpi_coll_bound_once, .plain = plain};
