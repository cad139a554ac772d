/*
 * ZMPI_Bcast: row of the dispatcher (coll/dispatch.h) and
 * algorithm table.
 *
 * Guarantee (compress once, binomial, pipelined, scatter_allgather and node): the root's buffer is
 * unchanged; every other rank receives each element within the bound of one
 * compression - ABS: |x' - x| <= eb; REL: <= rel * (max - min) of the root's
 * buffer (pipelined: of the chunk, which is never wider). Message scope and
 * result scope are the same here. cprp2p (the compress-per-hop baseline):
 * result scope <= eb (the bound of each compression is divided by the tree
 * depth ceil(log2 N); REL: by the root's value range), message scope up to
 * ceil(log2 N) * eb.
 *
 * Fallback to PMPI_Bcast with the user's arguments (decided identically on
 * all ranks by zmpi_call_begin from datatype, count and the configuration):
 * datatypes other than MPI_FLOAT / MPI_DOUBLE, intercommunicators, one rank,
 * count * size below ZMPI_MIN_BYTES, no bound configured, ZMPI_ALGO_MPI.
 */
#include <stdint.h>

#include "coll/bcast/bcast.h"
#include "coll/dispatch.h"

int ZMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    zmpi_coll_args a = {.call = ZMPI_CC_BCAST, .recvbuf = buffer, .count = count, .datatype = datatype,
                        .root = root, .comm = comm};
    return zmpi_coll_run(&a);
}

static const zmpi_algo algos[ZMPI_BCAST_ALGO_COUNT] = {
    [ZMPI_BCAST_BINOMIAL] = {"binomial",
                             "binomial tree; the root compresses once, inner ranks forward the stream, "
                             "every rank decompresses once",
                             {.bcast = zmpi_bcast_binomial}, 0},
    [ZMPI_BCAST_PIPELINED] = {"pipelined",
                              "binomial tree, chunk by chunk (ZMPI_CHUNK elements per stream): compression, "
                              "transfer and decompression overlap; the default from 4 chunks on below 4 "
                              "ranks",
                              {.bcast = zmpi_bcast_pipelined}, 0},
    [ZMPI_BCAST_CPRP2P] = {"cprp2p",
                           "baseline: binomial tree where every inner rank decompresses and recompresses "
                           "(error grows per hop)",
                           {.bcast = zmpi_bcast_cprp2p}, 0},
    [ZMPI_BCAST_SCATTER_ALLGATHER] = {"scatter_allgather",
                                      "the root compresses N pieces once; the streams are scattered, then "
                                      "allgathered (about 2 x the compressed size per rank instead of log2 "
                                      "N x); the default from 4 ranks and 4096 elements per rank on",
                                      {.bcast = zmpi_bcast_scatter_allgather}, 0},
    [ZMPI_BCAST_NODE] = {"node",
                         "node-aware: the root's node compresses a slice per core, chunk by chunk, each "
                         "slice's chunks cross the nodes down a pipelined binomial tree, slices allgathered "
                         "plain inside each node; "
                         "the default on several multi-rank nodes",
                         {.bcast = zmpi_bcast_node}, 1},
};
const zmpi_coll_table zmpi_bcast_table = {algos, ZMPI_BCAST_ALGO_COUNT, ZMPI_BCAST_BINOMIAL};

static int shape(const zmpi_coll_args *a, zmpi_coll_known *k)
{
    k->type = a->datatype;
    k->bytes = (size_t)(a->count > 0 ? a->count : 0) * zmpi_coll_elem_size(a->datatype);
    return ZMPI_CALL_ON;
}

static int invalid(const zmpi_call *c, const zmpi_coll_args *a)
{
    return a->count < 0 || zmpi_coll_bad_root(c, a);
}

static int choose(const zmpi_call *c, const zmpi_coll_args *a)
{
    size_t n = (size_t)a->count;
    if (zmpi_coll_multinode(c))
        return ZMPI_BCAST_NODE; /* compressed bytes across the nodes once, plain inside them */
    if (c->size >= 4 && n >= (size_t)c->size * 4096)
        return ZMPI_BCAST_SCATTER_ALLGATHER; /* large message, many ranks: ~2 x |Z| per rank */
    if (n / 4 >= c->st->cfg.chunk)
        return ZMPI_BCAST_PIPELINED; /* large message, few ranks: overlap the stages */
    return 0;
}

static int ceil_log2(int n)
{
    int d = 0;
    while ((1L << d) < n)
        d++;
    return d;
}

static int bound(zmpi_call *c, const zmpi_coll_job *j)
{
    if (c->algo == ZMPI_BCAST_CPRP2P) /* one compression per tree level; REL: the root's range */
        return zmpi_call_bound(c, ceil_log2(c->size), j->recvbuf, c->rank == j->root ? j->count : 0);
    if (c->mode == ZMPI_EB_REL && c->rank == j->root && c->algo != ZMPI_BCAST_BINOMIAL) {
        /* REL of the message, the whole buffer, also where it is compressed in pieces (a piece's own
         * range is narrower: a tighter bound than asked, and a lower ratio) */
        double lo, hi;
        zmpi_value_range(j->recvbuf, j->count, c->dt, &lo, &hi, NULL);
        zmpi_call_bound_range(c, 1, lo, hi);
        return MPI_SUCCESS;
    }
    return zmpi_call_bound(c, 1, NULL, 0);
}

static int plain(const zmpi_coll_args *a)
{
    return PMPI_Bcast(a->recvbuf, a->count, a->datatype, a->root, a->comm);
}

const zmpi_coll_ops zmpi_bcast_ops = {
    .shape = shape, .invalid = invalid, .choose = choose, .prepare = zmpi_coll_prepare_count, .bound = bound,
    .plain = plain};
