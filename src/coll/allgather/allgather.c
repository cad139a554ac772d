/*
 * ZMPI_Allgather / ZMPI_Allgatherv: rows of the dispatcher (coll/dispatch.h)
 * and algorithm table.
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
#include "coll/allgather/allgather.h"
#include "coll/common/movement.h"
#include "coll/dispatch.h"

int ZMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                   MPI_Datatype recvtype, MPI_Comm comm)
{
    return zmpi_coll_run_blocks(ZMPI_CC_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                0, comm);
}

int ZMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_ALLGATHERV, .sendbuf = sendbuf, .sendcount = sendcount,
                        .sendtype = sendtype, .recvbuf = recvbuf, .recvcounts = recvcounts, .rdispls = displs,
                        .recvtype = recvtype, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_ALLGATHER_ALGO_COUNT] = {
    [ZMPI_ALLGATHER_RING] = {"ring",
                             "ring; every rank compresses its block once, compressed blocks are forwarded "
                             "N-1 steps and decompressed once at the end (sizes by one allgather of "
                             "integers)",
                             {.allgatherv = zmpi_allgatherv_ring}, 0},
    [ZMPI_ALLGATHER_CPRP2P] = {"cprp2p",
                               "baseline: ring where every step decompresses and recompresses the forwarded "
                               "block (error grows per step)",
                               {.allgatherv = zmpi_allgatherv_cprp2p}, 0},
    [ZMPI_ALLGATHER_RDB] = {"rdb",
                            "recursive doubling of the compress-once blocks: log2 N steps of doubling size "
                            "instead of N-1 (power-of-two N; others run the ring); fewer, larger messages",
                            {.allgatherv = zmpi_allgatherv_rdb}, 0},
    [ZMPI_ALLGATHER_NODE] = {"node",
                             "node-aware: the ranks of one local rank, one per node, exchange their compressed "
                             "blocks (rdb), then each node's ranks share what they decoded, plain; the blocks "
                             "of a rank's own node exact; the default on several multi-rank nodes",
                             {.allgatherv = zmpi_allgatherv_node}, 0},
};
const zmpi_coll_table zmpi_allgather_table = {algos, ZMPI_ALLGATHER_ALGO_COUNT, ZMPI_ALLGATHER_RDB};

/* Several multi-rank nodes: `node`; else the table's default. */
static int choose(const zmpi_call *c, const zmpi_coll_args *a)
{
    (void)a;
    return zmpi_coll_multinode(c) ? ZMPI_ALLGATHER_NODE : 0;
}

/* recvtype is significant on every rank; Allgather's blocks must have int
 * displacements (else plain MPI, not counted) */
static int shape(const zmpi_coll_args *a, zmpi_coll_known *k)
{
    int size = 0;
    k->type = a->recvtype;
    k->bytes = SIZE_MAX;
    if (a->call == ZMPI_CC_ALLGATHERV)
        return ZMPI_CALL_ON;
    PMPI_Comm_size(a->comm, &size);
    if (!zmpi_coll_fits(a->recvcount, size))
        return ZMPI_CALL_PLAIN;
    k->bytes = (size_t)a->recvcount * zmpi_coll_elem_size(a->recvtype);
    return ZMPI_CALL_ON;
}

static int invalid(const zmpi_call *c, const zmpi_coll_args *a)
{
    return a->call == ZMPI_CC_ALLGATHERV && zmpi_coll_any_negative(a->recvcounts, c->size);
}

/* Allgather's blocks laid out as Allgatherv's; the own block from a
 * different (equivalent) datatype, or of another size than its place (the
 * other ranks expect the place's size: the block that fits goes, and this
 * rank returns MPI_ERR_TRUNCATE - sendcount x sendtype larger - or
 * MPI_ERR_TYPE - smaller - after taking its part). */
static int prepare(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j)
{
    int rc = MPI_SUCCESS, ssz = 0;
    *j = (zmpi_coll_job){.sendbuf = a->sendbuf, .recvbuf = a->recvbuf, .recvcounts = a->recvcounts,
                         .rdispls = a->rdispls};
    if (a->call == ZMPI_CC_ALLGATHER)
        ZMPI_CHECK(zmpi_coll_layout(c, a->recvcount, j, &j->recvcounts, &j->rdispls));
    if (a->sendbuf == MPI_IN_PLACE)
        goto fn_exit;
    ZMPI_CHECK(PMPI_Type_size(a->sendtype, &ssz));
    size_t sb = (size_t)(a->sendcount > 0 ? a->sendcount : 0) * (size_t)(ssz > 0 ? ssz : 0);
    size_t rb = (size_t)j->recvcounts[c->rank] * c->es;
    if (a->sendtype == c->type && sb == rb)
        goto fn_exit;
    char *own = (char *)a->recvbuf + (ptrdiff_t)j->rdispls[c->rank] * (ptrdiff_t)c->es;
    j->late_err = zmpi_dm_copy_prefix(c->comm, a->sendbuf, a->sendcount, a->sendtype, own, rb / c->es, c->type);
    if (!j->late_err && sb != rb)
        j->late_err = sb > rb ? zmpi_err(ZMPI_EK_TRUNCATE,
                                         "Allgather: the send block (%zu bytes) is larger than a block of the "
                                         "receive buffer (%zu bytes)",
                                         sb, rb)
                              : zmpi_err(ZMPI_EK_TYPE,
                                         "Allgather: the send block (%zu bytes) is smaller than a block of the "
                                         "receive buffer (%zu bytes): sendcount x sendtype must equal "
                                         "recvcount x recvtype",
                                         sb, rb);
    j->sendbuf = MPI_IN_PLACE;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int bound(zmpi_call *c, const zmpi_coll_job *j)
{
    if (c->algo != ZMPI_ALLGATHER_CPRP2P)
        return zmpi_coll_bound_once(c, j);
    /* a block passes up to N-1 compressions; REL: the range of all own blocks */
    const void *in = j->sendbuf;
    if (in == MPI_IN_PLACE)
        in = (const char *)j->recvbuf + (ptrdiff_t)j->rdispls[c->rank] * (ptrdiff_t)c->es;
    return zmpi_call_bound(c, c->size - 1, in, (size_t)j->recvcounts[c->rank]);
}

static int plain(const zmpi_coll_args *a)
{
    if (a->call == ZMPI_CC_ALLGATHER)
        return PMPI_Allgather(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype,
                              a->comm);
    return PMPI_Allgatherv(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcounts, a->rdispls,
                           a->recvtype, a->comm);
}

const zmpi_coll_ops zmpi_allgather_ops = {
    .shape = shape, .invalid = invalid, .choose = choose, .prepare = prepare, .bound = bound, .plain = plain};
