/*
 * ZMPI_Scatter / ZMPI_Scatterv: rows of the dispatcher (coll/dispatch.h)
 * and algorithm table.
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
#include "coll/common/movement.h"
#include "coll/dispatch.h"
#include "coll/scatter/scatter.h"

int ZMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    return zmpi_coll_run_blocks(ZMPI_CC_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                root, comm);
}

int ZMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_SCATTERV, .sendbuf = sendbuf, .sendcounts = sendcounts,
                        .sdispls = displs, .sendtype = sendtype, .recvbuf = recvbuf, .recvcount = recvcount,
                        .recvtype = recvtype, .root = root, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_SCATTER_ALGO_COUNT] = {
    [ZMPI_SCATTER_BINOMIAL] = {"binomial",
                               "binomial tree; the root compresses each part once, subtrees receive their "
                               "bundle of compressed parts",
                               {.scatterv = zmpi_scatterv_binomial}, 0},
    [ZMPI_SCATTER_LINEAR] = {"linear",
                             "the root compresses each part once and sends it to its rank",
                             {.scatterv = zmpi_scatterv_linear}, 0},
    [ZMPI_SCATTER_CPRP2P] = {"cprp2p",
                             "baseline: binomial tree where every inner rank decompresses its bundle and "
                             "recompresses the parts it forwards (error grows per hop)",
                             {.scatterv = zmpi_scatterv_cprp2p}, .own_bound = 1},
    [ZMPI_SCATTER_NODE] = {"node",
                           "node-aware: the ranks of the root's node compress the parts of the other nodes' "
                           "ranks in parallel, the root hands them the raw parts; plain inside the root's "
                           "node; the default on several multi-rank nodes",
                           {.scatterv = zmpi_scatterv_node}, 0},
};
const zmpi_coll_table zmpi_scatter_table = {algos, ZMPI_SCATTER_ALGO_COUNT, ZMPI_SCATTER_BINOMIAL};

/* Several multi-rank nodes: `node`. Scatter: large parts go straight from the root (one message each, no
 * forwarding: the root's link carries the same bytes either way), small ones
 * down the tree (log2 N latencies); the part size is the same on all ranks
 * here. */
static int choose(const zmpi_call *c, const zmpi_coll_args *a)
{
    if (zmpi_coll_multinode(c))
        return ZMPI_SCATTER_NODE; /* the root's node codes on all its cores, plain inside it */
    int count = c->rank == a->root ? a->sendcount : a->recvcount;
    return a->call == ZMPI_CC_SCATTER && (size_t)count * c->es >= 65536 ? ZMPI_SCATTER_LINEAR : 0;
}

/* Scatter's parts laid out as Scatterv's; the root's own part into a
 * different (equivalent) datatype. */
static int prepare(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j)
{
    int rc = MPI_SUCCESS, root = a->root;
    *j = (zmpi_coll_job){.sendbuf = a->sendbuf, .sendcounts = a->sendcounts, .sdispls = a->sdispls,
                         .recvbuf = a->recvbuf, .recvcount = a->recvcount, .root = root};
    if (c->rank != root)
        goto fn_exit;
    if (a->call == ZMPI_CC_SCATTER)
        ZMPI_CHECK(zmpi_coll_layout(c, a->sendcount, j, &j->sendcounts, &j->sdispls));
    if (a->recvbuf != MPI_IN_PLACE && a->recvtype != c->type) {
        const char *own = (const char *)a->sendbuf + (ptrdiff_t)j->sdispls[root] * (ptrdiff_t)c->es;
        ZMPI_CHECK(zmpi_dm_copy_typed(c->comm, own, j->sendcounts[root], c->type, a->recvbuf, a->recvcount,
                                      a->recvtype));
        j->recvbuf = MPI_IN_PLACE;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int plain(const zmpi_coll_args *a)
{
    if (a->call == ZMPI_CC_SCATTER)
        return PMPI_Scatter(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype,
                            a->root, a->comm);
    return PMPI_Scatterv(a->sendbuf, a->sendcounts, a->sdispls, a->sendtype, a->recvbuf, a->recvcount,
                         a->recvtype, a->root, a->comm);
}

const zmpi_coll_ops zmpi_scatter_ops = {.shape = zmpi_coll_shape_rooted, .invalid = zmpi_coll_invalid_rooted,
                                        .choose = choose, .prepare = prepare, .bound = zmpi_coll_bound_once,
                                        .plain = plain};
