/*
 * ZMPI_Reduce: row of the dispatcher (coll/dispatch.h), which runs the plain
 * MPI call or a compressed algorithm (table below, ZMPI_REDUCE_ALGORITHM).
 *
 * Guarantee (rsg, N ranks; details in reduce_rsg.c):
 *   result scope:  every element of the root's result within eb of the
 *                  uncompressed reduction (REL: eb = rel * (max - min) of all
 *                  ranks' inputs); N compressions of eb/N each.
 *   message scope: each message within eb; the result within N*eb (ABS).
 * node (the default on several multi-rank nodes; reduce_node.c): M
 * compressions for M nodes (result scope eb / M each, message scope M*eb),
 * plain inside the nodes.
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
#include <stdlib.h>
#include <string.h>

#include "coll/dispatch.h"
#include "coll/reduce/reduce.h"

int ZMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, int root,
                MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_REDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                        .datatype = datatype, .op = op, .root = root, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_REDUCE_ALGO_COUNT] = {
    [ZMPI_REDUCE_RSG] = {"rsg",
                         "ring reduce-scatter (pieces compressed while in flight) + gather of the blocks, "
                         "compressed once, to the root; error <= N compressions",
                         {.reduce = zmpi_reduce_rsg}, 0},
    [ZMPI_REDUCE_CPRP2P] = {"cprp2p",
                            "baseline: binomial tree where every hop decompresses, reduces and recompresses "
                            "the partial result (error grows per hop)",
                            {.reduce = zmpi_reduce_cprp2p}, 0},
    [ZMPI_REDUCE_NODE] = {"node",
                          "node-aware: plain reduce-scatter inside each node, rsg across the nodes to the "
                          "root's node on each core's slice (compressed, every core coding), plain gather "
                          "to the root; error <= M compressions for M nodes",
                          {.reduce = zmpi_reduce_node}, 0},
};
const zmpi_coll_table zmpi_reduce_table = {algos, ZMPI_REDUCE_ALGO_COUNT, ZMPI_REDUCE_RSG};

/* Invalid arguments (and intercommunicator roots MPI_ROOT / MPI_PROC_NULL)
 * run as the plain call, which lets MPI handle them. */
static int shape(const zmpi_coll_args *a, zmpi_coll_known *k)
{
    int size = 0;
    if (a->comm == MPI_COMM_NULL || a->count < 0)
        return ZMPI_CALL_PLAIN;
    if ((k->err = PMPI_Comm_size(a->comm, &size)) != MPI_SUCCESS)
        return ZMPI_CALL_ERR;
    if (a->root < 0 || a->root >= size)
        return ZMPI_CALL_PLAIN;
    return zmpi_coll_shape_count(a, k);
}

/* Plain MPI_Reduce with the user's arguments - but for MPI_IN_PLACE at a
 * root other than 0, where the root passes a copy of its buffer as the send
 * buffer instead (the same reduction): MPICH 4.0 to 4.1.1 (Debian 12 ships
 * 4.0.2) crash there when ranks share a node (pmodels/mpich issue 6540,
 * fixed in 4.1.2), which zmpi reaches whenever it sends plain on one node.
 * Only the root can pass MPI_IN_PLACE. No memory for the copy: the call as
 * it was given. */
static int plain(const zmpi_coll_args *a)
{
    MPI_Aint lb, extent, tlb, text;
    char *copy = NULL;
    if (a->sendbuf != MPI_IN_PLACE || a->root == 0 || a->count <= 0 ||
        PMPI_Type_get_extent(a->datatype, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(a->datatype, &tlb, &text) != MPI_SUCCESS || extent < 0 || text < 0 ||
        zmpi_alloc((size_t)(a->count - 1) * (size_t)extent + (size_t)text, &copy) != MPI_SUCCESS)
        return PMPI_Reduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->root, a->comm);
    memcpy(copy, (const char *)a->recvbuf + tlb, (size_t)(a->count - 1) * (size_t)extent + (size_t)text);
    int rc = PMPI_Reduce(copy - tlb, a->recvbuf, a->count, a->datatype, a->op, a->root, a->comm);
    free(copy);
    return rc;
}

/* The node-aware algorithm where the communicator spans several nodes and
 * some node holds several of its ranks; else the table's default. */
static int choose(const zmpi_call *c, const zmpi_coll_args *a)
{
    (void)a;
    return zmpi_coll_multinode(c) ? ZMPI_REDUCE_NODE : 0;
}

/* No bound: the algorithms set it themselves. */
const zmpi_coll_ops zmpi_reduce_ops = {
    .reduces = 1, .shape = shape, .choose = choose, .prepare = zmpi_coll_prepare_count, .plain = plain};
