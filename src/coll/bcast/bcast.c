/*
 * ZMPI_Bcast: dispatcher and algorithm table.
 *
 * Guarantee (compress once, binomial and pipelined): the root's buffer is
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
#include "coll/common/movement.h"

const zmpi_algo zmpi_bcast_algos[] = {
    {ZMPI_BCAST_BINOMIAL, "binomial",
     "binomial tree; the root compresses once, inner ranks forward the stream, every rank decompresses once",
     (const void *)zmpi_bcast_binomial},
    {ZMPI_BCAST_PIPELINED, "pipelined",
     "binomial tree, chunk by chunk (ZMPI_CHUNK elements per stream): compression, transfer and "
     "decompression overlap; the default from 4 chunks on below 4 ranks",
     (const void *)zmpi_bcast_pipelined},
    {ZMPI_BCAST_CPRP2P, "cprp2p",
     "baseline: binomial tree where every inner rank decompresses and recompresses (error grows per hop)",
     (const void *)zmpi_bcast_cprp2p},
    {ZMPI_BCAST_SCATTER_ALLGATHER, "scatter_allgather",
     "the root compresses N pieces once; the streams are scattered, then allgathered (about 2 x the "
     "compressed size per rank instead of log2 N x); the default from 4 ranks and 4096 elements per "
     "rank on",
     (const void *)zmpi_bcast_scatter_allgather},
    {0, NULL, NULL, NULL}};

static int ceil_log2(int n)
{
    int d = 0;
    while ((1L << d) < n)
        d++;
    return d;
}

/* The compressed path, after zmpi_call_begin. */
static int run(zmpi_call *c, void *buffer, size_t n, int root)
{
    int rc, algo = c->algo;
    if (c->st->cfg.algorithm[ZMPI_COLL_BCAST] == ZMPI_ALGO_DEFAULT) {
        if (c->size >= 4 && n >= (size_t)c->size * 4096)
            algo = ZMPI_BCAST_SCATTER_ALLGATHER; /* large message, many ranks: ~2 x |Z| per rank */
        else if (n / 4 >= c->st->cfg.chunk)
            algo = ZMPI_BCAST_PIPELINED; /* large message, few ranks: overlap the stages */
    }
    if (algo == ZMPI_BCAST_CPRP2P)
        rc = zmpi_call_bound(c, ceil_log2(c->size), buffer, c->rank == root ? n : 0);
    else
        rc = zmpi_call_bound(c, 1, NULL, 0);
    if (rc)
        goto fn_exit;
    rc = ((zmpi_bcast_fn)zmpi_coll_algo_get(ZMPI_COLL_BCAST, algo)->fn)(c, buffer, n, root);
fn_exit:
    return rc;
}

int ZMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    zmpi_call c;
    zmpi_dtype dt;
    int rc, on;
    size_t es = zmpi_classify(datatype, &dt) ? zmpi_dtype_size(dt) : 0;
    size_t n = count > 0 ? (size_t)count : 0;

    on = zmpi_call_begin(&c, comm, ZMPI_COLL_BCAST, datatype, MPI_OP_NULL, n * es);
    if (on == 1 && (count < 0 || root < 0 || root >= c.size)) {
        zmpi_call_end(&c); /* erroneous arguments: let MPI report them */
        on = 0;
    }
    if (on == 0) {
        rc = PMPI_Bcast(buffer, count, datatype, root, comm);
        zmpi_call_plain_done(comm); /* completes a measurement of the plain call */
    } else if (on != 1) {
        rc = zmpi_raise(comm, c.err); /* unusable or disagreeing settings */
    } else {
        rc = zmpi_raise(comm, run(&c, buffer, n, root));
        zmpi_call_end(&c);
    }
    return rc;
}
