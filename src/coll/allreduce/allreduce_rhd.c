/*
 * Allreduce by recursive halving + recursive doubling (Rabenseifner), with
 * compression: 2 log2 N messages per rank instead of the ring's 2N - 2.
 *
 * p = the largest power of two <= N, rem = N - p. Members: if rem > 0 the
 * first 2*rem ranks pair up (2i, 2i+1); the even rank sends its whole input
 * (compressed) to the odd one, which reduces it and takes part as member i;
 * ranks >= 2*rem are members r - rem. The vector is cut into p even blocks.
 *
 * Phase 1, recursive halving (reduce-scatter), p = 4, member v holds blocks
 * [lo, hi), initially all:
 *
 *   dist 2   v <-> v^2: v0,v1 keep blocks 0-1 and send 2-3; v2,v3 the reverse
 *   dist 1   v <-> v^1: each keeps one block and sends the other
 *   result   member v holds block v reduced over all p members
 *
 * In each step the half that leaves is compressed piece by piece and each
 * piece is sent as soon as it is compressed (coll/common/ring.h), so the
 * transfer runs while compression runs; incoming pieces are decompressed and
 * reduced into the kept half as they arrive. The data sent halve at every
 * step: (p-1)/p of the vector in all, as in the ring, in log2 p exchange
 * steps instead of p - 1.
 *
 * Phase 2, recursive doubling (coll/common/rdb.h): member v compresses its
 * reduced block once; the stream sizes are allgathered (one uint64 per
 * rank); the streams double in log2 p steps; every member decompresses
 * every stream - its own too, so that all ranks hold bit-identical results.
 * Finally each odd rank of a pair forwards all the streams to its even
 * partner, which decompresses them as well.
 *
 * Error. Every element of the result is the root of a reduction tree over
 * the N inputs: N - 1 merges, each adding one decompressed partial (whose
 * compression erred by at most e), plus the final compression in phase 2:
 * N compressions' worth of error, as in the ring - a tree does not save
 * error, since errors from different branches add up. SUM: errors add;
 * MIN/MAX: 1-Lipschitz, likewise.
 *   result scope:  e = eb / N, so |result - exact| <= eb on every rank. REL:
 *                  eb = rel * (max - min) over all ranks' inputs.
 *   message scope: e = eb per compression: <= N * eb (ABS); REL: each
 *                  message within rel * its own range. The partials sent
 *                  are smaller than the ring's (2^(s-1) ranks in step s
 *                  instead of up to N - 1), so is their range.
 * What the tree saves is messages: 2 log2 p + 1 instead of 2N - 2, each
 * larger, which is what counts where every message pays a latency (and
 * short ones a lower bandwidth).
 * Plus the rounding of the reduction in the datatype (order-dependent, as
 * with plain MPI).
 *
 * Edge cases: MPI_IN_PLACE, count 0, count < p (empty blocks: no message,
 * empty streams), any N (non-powers of two by the pairing), one rank.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/allreduce/allreduce.h"
#include "coll/common/halving.h"
#include "coll/common/movement.h"
#include "coll/common/rdb.h"
#include "coll/common/ring.h"

typedef struct rhd_state {
    zmpi_call *c;
    unsigned char *res;       /* the result vector */
    const size_t *counts, *displs;
    unsigned char *z;
    const size_t *off;
    int corrupt;
} rhd_state;

static int rhd_decompress(void *arg, int first, int n)
{
    rhd_state *s = arg;
    for (int b = first; b < first + n; b++)
        if (zmpi_dm_decompress(s->c, s->z + s->off[b], s->off[b + 1] - s->off[b],
                               s->res + s->displs[b] * s->c->es, s->counts[b]))
            s->corrupt = MPI_ERR_OTHER;
    return MPI_SUCCESS;
}

int zmpi_allreduce_rhd(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    zmpi_call_ran(c, ZMPI_ALLREDUCE_RHD);
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size, r = c->rank;
    int p = 1, rem, v, *ranks = NULL;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    unsigned char *acc = recvbuf, *z = NULL, *mine = NULL;
    size_t *counts = NULL, *displs = NULL, *off = NULL, es = c->es;
    size_t mylen = 0;

    if (count == 0)
        goto fn_exit;
    if (in != recvbuf)
        memcpy(recvbuf, in, count * es);
    if (n == 1)
        goto fn_exit;
    while (p * 2 <= n) {
        p *= 2;
    }
    rem = n - p;
    rc = zmpi_call_bound(c, (double)n, recvbuf, count);
    if (rc)
        goto fn_fail;
    if (r < 2 * rem)
        v = r % 2 ? r / 2 : -1;
    else
        v = r - rem;
    rc = zmpi_alloc((size_t)p * sizeof *counts, &counts);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)p + 1) * sizeof *displs, &displs);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)p * sizeof *ranks, &ranks);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)p + 1) * sizeof *off, &off);
    if (rc)
        goto fn_fail;
    zmpi_blocks_even(count, p, counts, displs);
    displs[p] = count;
    for (int i = 0; i < p; i++)
        ranks[i] = i < rem ? 2 * i + 1 : i + rem;

    /* pairing: even ranks below 2*rem hand their input to their odd partner */
    if (rem > 0 && r < 2 * rem) {
        if (v < 0) /* send the whole vector; receive nothing */
            rc = zmpi_reduce_exchange(c, acc, 0, count, 0, 0, r + 1, op, ZMPI_TAG_ALLREDUCE, &corrupt);
        else
            rc = zmpi_reduce_exchange(c, acc, 0, 0, 0, count, r - 1, op, ZMPI_TAG_ALLREDUCE, &corrupt);
        if (rc)
            goto fn_fail;
    }

    if (v >= 0) {
        /* phase 1: recursive halving */
        rc = zmpi_halving_reduce_scatter(c, acc, displs, p, v, ranks, op, ZMPI_TAG_ALLREDUCE, &corrupt);
        if (rc)
            goto fn_fail;
        /* phase 2: compress the own block once */
        size_t cap = zmpi_dm_cap(c, counts[v]);
        rc = zmpi_scratch_get(c, cap ? cap : 1, &mine);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_compress(c, acc + displs[v] * es, counts[v], mine, cap, &mylen);
        if (rc)
            goto fn_fail;
    }
    rc = zmpi_rdb_layout(c, mine, mylen, p, v, ranks, off, &z);
    if (rc)
        goto fn_fail;
    {
        rhd_state s = {c, acc, counts, displs, z, off, MPI_SUCCESS};
        if (v >= 0) {
            rc = zmpi_rdb_allgather(c, z, off, p, v, ranks, ZMPI_TAG_ALLREDUCE, rhd_decompress, &s);
            if (rc == MPI_SUCCESS && rem > 0 && r < 2 * rem) { /* to the even partner */
                zmpi_dm_reqs q = {0};
                rc = zmpi_dm_isend(c, z, off[p], r - 1, ZMPI_TAG_ALLREDUCE, &q);
                if (rc == MPI_SUCCESS)
                    rc = zmpi_dm_waitall(&q);
                zmpi_dm_reqs_free(&q);
            }
        } else {
            rc = zmpi_dm_recv(c, z, off[p], r + 1, ZMPI_TAG_ALLREDUCE);
            if (rc == MPI_SUCCESS)
                rhd_decompress(&s, 0, p);
        }
        if (s.corrupt)
            corrupt = s.corrupt;
    }
    if (rc)
        goto fn_fail;
    rc = corrupt;
fn_exit:
    free(counts);
    free(displs);
    free(ranks);
    free(off);
    zmpi_scratch_put(c, z);
    zmpi_scratch_put(c, mine);
    return rc;
fn_fail:
    goto fn_exit;
}
