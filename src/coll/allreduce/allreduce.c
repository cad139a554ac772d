/*
 * ZMPI_Allreduce: row of the dispatcher (coll/dispatch.h), which runs the
 * plain MPI call or a compressed algorithm (table below,
 * ZMPI_ALLREDUCE_ALGORITHM).
 *
 * Guarantees (N ranks; details and diagrams in the algorithm files):
 *   rhd (default)   result scope:  every element within eb of the
 *   and ring        uncompressed reduction (REL: eb = rel * (max - min) of
 *                   all ranks' inputs), N compressions of eb/N each; all
 *                   ranks get bit-identical results.
 *                   message scope: each message within eb; result within N*eb.
 *   node (default   result scope:  within eb, M compressions of eb/M for M
 *   on several       nodes (REL: of all ranks' inputs' range); inside a node
 *   multi-rank       plain. message scope: result within M*eb. Identical
 *   nodes)           results on all ranks.
 *   cprp2p          result scope:  within eb, 2N-2 compressions of eb/(2N-2).
 *                   message scope: result within (2N-2)*eb; ranks differ.
 * Plus the rounding of the reduction itself in the datatype (as plain MPI,
 * whose result also depends on the order of operations).
 *
 * Falls back to PMPI_Allreduce with the user's arguments for types other
 * than MPI_FLOAT/MPI_DOUBLE, ops other than SUM/MIN/MAX (user ops, PROD,
 * ...), intercommunicators, one rank, count * size below cfg.min_bytes, no
 * bound configured, or ZMPI_ALGO_MPI (zmpi_call_begin, same on every rank).
 */
#include "coll/allreduce/allreduce.h"
#include "coll/dispatch.h"

int ZMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_ALLREDUCE, .sendbuf = sendbuf, .recvbuf = recvbuf, .count = count,
                        .datatype = datatype, .op = op, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_ALLREDUCE_ALGO_COUNT] = {
    [ZMPI_ALLREDUCE_RING] = {"ring",
                             "ring reduce-scatter (pieces compressed while in flight) + ring allgather of "
                             "blocks compressed once by their owner; error <= N compressions, identical "
                             "results on all ranks",
                             {.allreduce = zmpi_allreduce_ring}, 0},
    [ZMPI_ALLREDUCE_CPRP2P] = {"cprp2p",
                               "baseline: ring reduce-scatter + ring allgather that decompresses and "
                               "recompresses at every hop; error <= 2N-2 compressions",
                               {.allreduce = zmpi_allreduce_cprp2p}, 0},
    [ZMPI_ALLREDUCE_RHD] = {"rhd",
                            "recursive halving reduce-scatter (pieces compressed while in flight) + "
                            "recursive doubling allgather of compress-once blocks (Rabenseifner): 2 log2 N "
                            "messages instead of 2N-2; error <= N compressions, identical results on all "
                            "ranks",
                            {.allreduce = zmpi_allreduce_rhd}, 0},
    [ZMPI_ALLREDUCE_NODE] = {"node",
                             "node-aware: plain reduce-scatter inside each node, rhd across the nodes on "
                             "each core's slice (compressed, every core coding), plain allgather inside each "
                             "node; error <= M compressions for M nodes, identical results on all ranks",
                             {.allreduce = zmpi_allreduce_node}, 0},
};
const zmpi_coll_table zmpi_allreduce_table = {algos, ZMPI_ALLREDUCE_ALGO_COUNT, ZMPI_ALLREDUCE_RHD};

static int plain(const zmpi_coll_args *a)
{
    return PMPI_Allreduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->comm);
}

/* The node-aware algorithm where the communicator spans several nodes and
 * some node holds several of its ranks; else the table's default. */
static int choose(const zmpi_call *c, const zmpi_coll_args *a)
{
    (void)a;
    return zmpi_coll_multinode(c) ? ZMPI_ALLREDUCE_NODE : 0;
}

/* No bound: the algorithms set it themselves. */
const zmpi_coll_ops zmpi_allreduce_ops = {.reduces = 1,
                                          .shape = zmpi_coll_shape_count,
                                          .choose = choose,
                                          .prepare = zmpi_coll_prepare_count,
                                          .plain = plain};
