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
#include "coll/common/reduce_steps.h"
#include "coll/common/ring.h"

/* A rank's part: member v of p (-1: an even rank of a pair, outside the
 * power-of-two group), rem pairs; the result vector res cut into p blocks;
 * off[0..p] the members' streams in z (phase 2). */
typedef struct rhd_state {
    zmpi_call *c;
    unsigned char *res; /* the result vector */
    size_t *counts, *displs, *off;
    unsigned char *z, *mine;
    size_t mylen;
    int *ranks;
    int p, rem, v, corrupt;
    const zmpi_gsum *g; /* on grid codes: each arriving block is decoded into out at once */
    void *out;
} rhd_state;

static int rhd_decompress(void *arg, int first, int n)
{
    rhd_state *s = arg;
    int rc = MPI_SUCCESS;
    for (int b = first; b < first + n; b++) {
        if (zmpi_dm_decompress(s->c, s->z + s->off[b], s->off[b + 1] - s->off[b],
                               s->res + s->displs[b] * s->c->es, s->counts[b]))
            s->corrupt = MPI_ERR_OTHER;
        if (s->g && !rc) /* while the next blocks travel, and while this one is in cache */
            rc = zmpi_gsum_decode(s->c, s->g, s->counts, s->displs, b, 1,
                                  (unsigned char *)s->out + s->displs[b] * s->c->grid_es);
    }
    return rc;
}

/* Members and pairs (s->p set): the first 2*rem ranks pair up (2i, 2i+1),
 * the odd one is member i; ranks >= 2*rem are members r - rem. */
static int rhd_members(rhd_state *s, int n, int r)
{
    int rc = MPI_SUCCESS;
    s->rem = n - s->p;
    if (r < 2 * s->rem)
        s->v = r % 2 ? r / 2 : -1;
    else
        s->v = r - s->rem;
    ZMPI_CHECK(zmpi_alloc((size_t)s->p * sizeof *s->ranks, &s->ranks));
    ZMPI_CHECK(zmpi_alloc(((size_t)s->p + 1) * sizeof *s->off, &s->off));
    for (int i = 0; i < s->p; i++)
        s->ranks[i] = i < s->rem ? 2 * i + 1 : i + s->rem;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Phase 1 of a member: recursive halving (unless done on the grid table),
 * then its reduced block compressed once. */
static int rhd_reduce(rhd_state *s, MPI_Op op, int halved)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, v = s->v;
    size_t cap = zmpi_dm_cap(c, s->counts[v]);
    if (!halved)
        ZMPI_CHECK(zmpi_halving_reduce_scatter(c, s->res, s->displs, s->p, v, s->ranks, op, ZMPI_TAG_ALLREDUCE,
                                               &s->corrupt));
    ZMPI_CHECK(zmpi_scratch_get(c, cap ? cap : 1, &s->mine));
    ZMPI_CHECK(zmpi_dm_compress(c, s->res + s->displs[v] * c->es, s->counts[v], s->mine, cap, &s->mylen));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Phase 2: the members' streams by recursive doubling, decompressed by
 * every member; the odd rank of a pair forwards them all to its even
 * partner, which decompresses them as well. */
static int rhd_spread(rhd_state *s, int r)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, p = s->p;
    zmpi_dm_reqs q = {0};
    ZMPI_CHECK(zmpi_rdb_layout(c, s->mine, s->mylen, p, s->v, s->ranks, s->off, &s->z));
    if (s->v < 0) {
        ZMPI_CHECK(zmpi_dm_recv(c, s->z, s->off[p], r + 1, ZMPI_TAG_ALLREDUCE));
        ZMPI_CHECK(rhd_decompress(s, 0, p));
        goto fn_exit;
    }
    ZMPI_CHECK(zmpi_rdb_allgather(c, s->z, s->off, p, s->v, s->ranks, ZMPI_TAG_ALLREDUCE, rhd_decompress, s));
    if (s->rem > 0 && r < 2 * s->rem) { /* to the even partner */
        ZMPI_CHECK(zmpi_dm_isend(c, s->z, s->off[p], r - 1, ZMPI_TAG_ALLREDUCE, &q));
        ZMPI_CHECK(zmpi_dm_waitall(&q));
    }
fn_exit:
    zmpi_dm_reqs_free(&q);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_allreduce_rhd(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    zmpi_call_ran(c, ZMPI_ALLREDUCE_RHD);
    int rc = MPI_SUCCESS, r = c->rank, go = 0;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    rhd_state s;
    zmpi_gsum g = {0};
    zmpi_gtable t = {0};

    memset(&s, 0, sizeof s);
    s.c = c;
    s.res = recvbuf;
    s.p = 1; /* the largest power of two <= N */
    while (s.p * 2 <= c->size)
        s.p *= 2;
    ZMPI_CHECK(zmpi_reduce_begin(c, in, recvbuf, count, s.p, (double)c->size, op, &g, &s.counts, &s.displs,
                                 &go));
    if (!go)
        goto fn_exit;
    ZMPI_CHECK(rhd_members(&s, c->size, r));
    if (g.d) { /* on grid codes: summed packed, the own block unpacked into the codes */
        s.res = (unsigned char *)g.d;
        s.g = &g;
        s.out = recvbuf;
        ZMPI_CHECK(zmpi_gtable_layout(c, &g, s.counts, s.displs, s.p, &t));
        if (s.rem > 0 && r < 2 * s.rem) /* pairing, as below */
            ZMPI_CHECK(s.v < 0 ? zmpi_gtable_exchange(c, &t, 0, s.p, r + 1, 0, 0, r + 1, ZMPI_TAG_ALLREDUCE,
                                                      &s.corrupt)
                               : zmpi_gtable_exchange(c, &t, 0, 0, r - 1, 0, s.p, r - 1, ZMPI_TAG_ALLREDUCE,
                                                      &s.corrupt));
        if (s.v >= 0) {
            ZMPI_CHECK(zmpi_gtable_halving(c, &t, s.p, s.v, s.ranks, ZMPI_TAG_ALLREDUCE, &s.corrupt));
            ZMPI_CHECK(zmpi_gtable_unpack(c, &t, s.v, s.v + 1, &s.corrupt));
        }
        ZMPI_CHECK(zmpi_gsum_spread(c, &g, s.counts, s.displs, s.v));
    } else if (in != recvbuf) { /* reduced in place from here on */
        memcpy(recvbuf, in, count * c->es);
    }
    /* pairing: even ranks below 2*rem hand their input to their odd partner */
    if (!g.d && s.rem > 0 && r < 2 * s.rem) {
        if (s.v < 0) /* send the whole vector; receive nothing */
            ZMPI_CHECK(
                zmpi_reduce_exchange(c, s.res, 0, count, 0, 0, r + 1, op, ZMPI_TAG_ALLREDUCE, &s.corrupt));
        else
            ZMPI_CHECK(
                zmpi_reduce_exchange(c, s.res, 0, 0, 0, count, r - 1, op, ZMPI_TAG_ALLREDUCE, &s.corrupt));
    }
    if (s.v >= 0)
        ZMPI_CHECK(rhd_reduce(&s, op, g.d != NULL));
    ZMPI_CHECK(rhd_spread(&s, r)); /* on grid codes it decodes every block into recvbuf too */
    rc = s.corrupt;
fn_exit:
    zmpi_gtable_free(c, &t);
    zmpi_gsum_end(c, &g);
    free(s.counts);
    free(s.displs);
    free(s.ranks);
    free(s.off);
    zmpi_scratch_put(c, s.z);
    zmpi_scratch_put(c, s.mine);
    return rc;
fn_fail:
    goto fn_exit;
}
