/*
 * ZMPI_Reduce_scatter and ZMPI_Reduce_scatter_block: rows of the dispatcher
 * (coll/dispatch.h), which runs the plain MPI call or a compressed algorithm
 * (table below, ZMPI_REDUCE_SCATTER_ALGORITHM).
 *
 * Guarantee (ring, the default where every rank is a node, and rhd: a
 * reduction cannot forward compressed bytes, so every merge is a
 * compression "hop"; `node`, the default on several multi-rank nodes, has
 * M - 1 hops for M nodes, see reduce_scatter_node.c):
 *   result scope:  every element of the result is within eb of the
 *                  uncompressed reduction (REL: eb = rel * (max - min) of
 *                  all ranks' input vectors); each of the N-1 compressions
 *                  an element passes gets eb/(N-1).
 *   message scope: every compressed message is within eb (REL: of its own
 *                  range); the result is within (N-1)*eb (ABS).
 * Plus the rounding of the reduction itself (see reduce_scatter_ring.c).
 *
 * Falls back to PMPI_Reduce_scatter(_block) with the user's arguments for
 * types other than MPI_FLOAT/MPI_DOUBLE, ops other than SUM/MIN/MAX,
 * intercommunicators, one rank, a total size below cfg.min_bytes, no bound
 * configured, or ZMPI_ALGO_MPI (zmpi_call_begin decides, the same on every
 * rank: recvcounts are the same on all ranks, so is their sum).
 */
#include <stdint.h>
#include <stdlib.h>

#include "coll/dispatch.h"
#include "coll/reduce_scatter/reduce_scatter.h"

int ZMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_REDUCE_SCATTER, .sendbuf = sendbuf, .recvbuf = recvbuf,
                        .recvcounts = recvcounts, .datatype = datatype, .op = op, .comm = comm};
    return zmpi_coll_run(&a);
}

int ZMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_REDUCE_SCATTER_BLOCK, .sendbuf = sendbuf, .recvbuf = recvbuf,
                        .recvcount = recvcount, .datatype = datatype, .op = op, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_REDUCE_SCATTER_ALGO_COUNT] = {
    [ZMPI_REDUCE_SCATTER_RING] = {"ring",
                                  "ring of N-1 steps; each partial block is compressed in pieces while the "
                                  "previous pieces are in flight, then decompressed and reduced (error <= "
                                  "(N-1) compressions)",
                                  {.reduce_scatter = zmpi_reduce_scatter_ring}, 0},
    [ZMPI_REDUCE_SCATTER_RHD] = {"rhd",
                                 "recursive halving (power-of-two N; others run the ring): log2 N steps, "
                                 "the outgoing half compressed in pieces while in flight, the incoming half "
                                 "reduced as it arrives (error <= (N-1) compressions; measured slower than "
                                 "the ring on the simulated clusters, hence not the default)",
                                 {.reduce_scatter = zmpi_reduce_scatter_rhd}, 0},
    [ZMPI_REDUCE_SCATTER_NODE] = {"node",
                                  "node-aware: each rank gets the blocks of its group (its local rank on "
                                  "every node) from its node's ranks, plain, and reduces them; the groups "
                                  "reduce-scatter across the nodes by the ring, compressed, every core coding; "
                                  "error <= M-1 compressions for M nodes; the default on several multi-rank "
                                  "nodes",
                                  {.reduce_scatter = zmpi_reduce_scatter_node}, 0},
};
const zmpi_coll_table zmpi_reduce_scatter_table = {algos, ZMPI_REDUCE_SCATTER_ALGO_COUNT,
                                                   ZMPI_REDUCE_SCATTER_RING};

/* Invalid arguments (a null communicator or recvcounts, a negative count)
 * run as the plain call, which lets MPI report them. */
static int shape(const zmpi_coll_args *a, zmpi_coll_known *k)
{
    int size = 0, block = a->call == ZMPI_CC_REDUCE_SCATTER_BLOCK;
    size_t total = 0;
    if (a->comm == MPI_COMM_NULL || (block ? a->recvcount < 0 : !a->recvcounts))
        return ZMPI_CALL_PLAIN;
    if ((k->err = PMPI_Comm_size(a->comm, &size)) != MPI_SUCCESS)
        return ZMPI_CALL_ERR;
    for (int b = 0; b < size; b++) {
        int n = block ? a->recvcount : a->recvcounts[b];
        if (n < 0)
            return ZMPI_CALL_PLAIN;
        total += (size_t)n;
    }
    k->type = a->datatype;
    k->bytes = total * zmpi_coll_elem_size(a->datatype);
    return ZMPI_CALL_ON;
}

/* Reduce_scatter_block: recvcount elements for every rank. */
static int prepare(zmpi_call *c, const zmpi_coll_args *a, zmpi_coll_job *j)
{
    int rc = MPI_SUCCESS;
    *j = (zmpi_coll_job){
        .sendbuf = a->sendbuf, .recvbuf = a->recvbuf, .recvcounts = a->recvcounts, .op = a->op};
    if (a->call == ZMPI_CC_REDUCE_SCATTER_BLOCK) {
        ZMPI_CHECK(zmpi_alloc((size_t)c->size * sizeof *j->owned[0], &j->owned[0]));
        for (int b = 0; b < c->size; b++)
            j->owned[0][b] = a->recvcount;
        j->recvcounts = j->owned[0];
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

static int plain(const zmpi_coll_args *a)
{
    if (a->call == ZMPI_CC_REDUCE_SCATTER_BLOCK)
        return PMPI_Reduce_scatter_block(a->sendbuf, a->recvbuf, a->recvcount, a->datatype, a->op, a->comm);
    return PMPI_Reduce_scatter(a->sendbuf, a->recvbuf, a->recvcounts, a->datatype, a->op, a->comm);
}

/* Several multi-rank nodes: `node`; else the table's default. */
static int choose(const zmpi_call *c, const zmpi_coll_args *a)
{
    (void)a;
    return zmpi_coll_multinode(c) ? ZMPI_REDUCE_SCATTER_NODE : 0;
}

/* No bound: the algorithms set it for N - 1 merges (zmpi_reduce_scatter_run). */
const zmpi_coll_ops zmpi_reduce_scatter_ops = {
    .reduces = 1, .shape = shape, .choose = choose, .prepare = prepare, .plain = plain};
