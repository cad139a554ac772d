/*
 * ZMPI_Gather / ZMPI_Gatherv: rows of the dispatcher (coll/dispatch.h)
 * and algorithm table.
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
#include "coll/common/movement.h"
#include "coll/dispatch.h"
#include "coll/gather/gather.h"

int ZMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return zmpi_coll_run_blocks(ZMPI_CC_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                root, comm);
}

int ZMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_GATHERV, .sendbuf = sendbuf, .sendcount = sendcount,
                        .sendtype = sendtype, .recvbuf = recvbuf, .recvcounts = recvcounts, .rdispls = displs,
                        .recvtype = recvtype, .root = root, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_GATHER_ALGO_COUNT] = {
    [ZMPI_GATHER_LINEAR] = {"linear",
                            "every rank compresses its block once and sends it to the root",
                            {.gatherv = zmpi_gatherv_linear}, 0},
    [ZMPI_GATHER_BINOMIAL] = {"binomial",
                              "binomial tree; every rank compresses its block once, bundles are forwarded "
                              "up without recompression",
                              {.gatherv = zmpi_gatherv_binomial}, 0},
    [ZMPI_GATHER_CPRP2P] = {"cprp2p",
                            "baseline: binomial tree where every inner rank decompresses its children's "
                            "blocks and recompresses its whole subtree bundle (error grows per hop)",
                            {.gatherv = zmpi_gatherv_cprp2p}, .own_bound = 1},
    [ZMPI_GATHER_NODE] = {"node",
                          "node-aware: the ranks of the root's node decompress the other nodes' blocks in "
                          "parallel and hand them to the root raw; plain inside the root's node; the "
                          "default on several multi-rank nodes",
                          {.gatherv = zmpi_gatherv_node}, 0},
};
const zmpi_coll_table zmpi_gather_table = {algos, ZMPI_GATHER_ALGO_COUNT, ZMPI_GATHER_LINEAR};

/* Several multi-rank nodes: `node` (the root's node decodes on all its cores). */
static int choose(const zmpi_call *c, const zmpi_coll_args *a)
{
    (void)a;
    return zmpi_coll_multinode(c) ? ZMPI_GATHER_NODE : 0;
}

/* Gather's blocks laid out as Gatherv's; the root's own block from a
 * different (equivalent) datatype. */
static int prepare(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j)
{
    int rc = MPI_SUCCESS, root = a->root;
    *j = (zmpi_coll_job){.sendbuf = a->sendbuf, .sendcount = a->sendcount, .recvbuf = a->recvbuf,
                         .recvcounts = a->recvcounts, .rdispls = a->rdispls, .root = root};
    if (c->rank != root)
        goto fn_exit;
    if (a->call == ZMPI_CC_GATHER)
        ZMPI_CHECK(zmpi_coll_layout(c, a->recvcount, j, &j->recvcounts, &j->rdispls));
    if (a->sendbuf != MPI_IN_PLACE && a->sendtype != c->type) {
        char *own = (char *)a->recvbuf + (ptrdiff_t)j->rdispls[root] * (ptrdiff_t)c->es;
        ZMPI_CHECK(zmpi_dm_copy_typed(c->comm, a->sendbuf, a->sendcount, a->sendtype, own,
                                      j->recvcounts[root], c->type));
        j->sendbuf = MPI_IN_PLACE;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int plain(const zmpi_coll_args *a)
{
    if (a->call == ZMPI_CC_GATHER)
        return PMPI_Gather(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype,
                           a->root, a->comm);
    return PMPI_Gatherv(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcounts, a->rdispls,
                        a->recvtype, a->root, a->comm);
}

const zmpi_coll_ops zmpi_gather_ops = {.shape = zmpi_coll_shape_rooted, .invalid = zmpi_coll_invalid_rooted,
                                       .choose = choose, .prepare = prepare, .bound = zmpi_coll_bound_once, .plain = plain};
