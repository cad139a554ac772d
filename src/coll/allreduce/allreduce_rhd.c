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
 * step: N-1/N of the vector in all, as in the ring, in log2 p messages.
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

/* Sends the block [first, first + count) of src compressed in pieces to
 * `to` while receiving the partner's pieces of [kfirst, kfirst + kcount)
 * from `to` and reducing them into acc. */
static int rhd_step(zmpi_call *c, unsigned char *acc, size_t first, size_t count, size_t kfirst,
                    size_t kcount, int peer, MPI_Op op, zmpi_pieces *pout, zmpi_pieces *pin,
                    unsigned char *tmp, int *corrupt)
{
    int rc;
    size_t es = c->es;
    zmpi_xchg x = {0};

    rc = zmpi_pieces_layout(c, pout, count);
    if (rc == MPI_SUCCESS)
        rc = zmpi_pieces_layout(c, pin, kcount);
    if (rc == MPI_SUCCESS)
        rc = zmpi_xchg_start(c, &x, ZMPI_TAG_ALLREDUCE, peer, pin, peer, pout);
    if (rc)
        goto fn_exit;
    for (size_t j = 0; j < pout->n; j++) {
        rc = zmpi_pieces_compress(c, pout, j, acc + first * es);
        if (rc == MPI_SUCCESS)
            rc = zmpi_xchg_send(&x, j);
        if (rc == MPI_SUCCESS)
            rc = zmpi_xchg_poll(&x);
        if (rc)
            goto fn_exit;
    }
    for (size_t j = 0; j < pin->n; j++) {
        size_t f = zmpi_pieces_first(pin, j);
        rc = zmpi_xchg_wait_piece(&x, j);
        if (rc)
            goto fn_exit;
        if (zmpi_pieces_decompress(c, pin, j, tmp))
            *corrupt = MPI_ERR_OTHER; /* reported at the end; no rank is left waiting */
        rc = zmpi_reduce_local(c, tmp + f * es, acc + (kfirst + f) * es, zmpi_pieces_count(pin, j), op);
        if (rc)
            goto fn_exit;
    }
    rc = zmpi_xchg_wait(&x);
fn_exit:
    zmpi_xchg_free(&x);
    return rc;
}

int zmpi_allreduce_rhd(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size, r = c->rank;
    int p = 1, rem, v, *ranks = NULL;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    unsigned char *acc = recvbuf, *tmp = NULL, *z = NULL, *mine = NULL;
    size_t *counts = NULL, *displs = NULL, *off = NULL, es = c->es;
    uint64_t *lens = NULL, mylen = 0;
    zmpi_pieces pin = {0}, pout = {0};

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
        rc = zmpi_alloc((size_t)p * sizeof *displs, &displs);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)p * sizeof *ranks, &ranks);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)p + 1) * sizeof *off, &off);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)n * sizeof *lens, &lens);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((count / 2 + (size_t)p) * es, &tmp); /* the largest kept half */
    if (rc)
        goto fn_fail;
    zmpi_blocks_even(count, p, counts, displs);
    for (int i = 0; i < p; i++)
        ranks[i] = i < rem ? 2 * i + 1 : i + rem;

    /* pairing: even ranks below 2*rem hand their input to their odd partner */
    if (rem > 0 && r < 2 * rem) {
        unsigned char *t2 = NULL;
        if (v < 0) { /* send the whole vector; receive nothing */
            rc = rhd_step(c, acc, 0, count, 0, 0, r + 1, op, &pout, &pin, tmp, &corrupt);
        } else {
            rc = zmpi_alloc(count * es, &t2);
            if (rc == MPI_SUCCESS)
                rc = rhd_step(c, acc, 0, 0, 0, count, r - 1, op, &pout, &pin, t2, &corrupt);
            free(t2);
        }
        if (rc)
            goto fn_fail;
    }

    if (v >= 0) {
        /* phase 1: recursive halving */
        int lo = 0, hi = p;
        for (int dist = p / 2; dist >= 1; dist /= 2) {
            int mid = lo + dist, w = v ^ dist, klo, khi, slo, shi;
            if (v & dist) {
                klo = mid, khi = hi, slo = lo, shi = mid;
            } else {
                klo = lo, khi = mid, slo = mid, shi = hi;
            }
            size_t sf = displs[slo], sc = (shi < p ? displs[shi] : count) - sf;
            size_t kf = displs[klo], kc = (khi < p ? displs[khi] : count) - kf;
            rc = rhd_step(c, acc, sf, sc, kf, kc, ranks[w], op, &pout, &pin, tmp, &corrupt);
            if (rc)
                goto fn_fail;
            lo = klo;
            hi = khi;
        }
        /* phase 2: compress the own block once */
        size_t cap = zmpi_dm_cap(c, counts[v]), len = 0;
        rc = zmpi_alloc(cap ? cap : 1, &mine);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_compress(c, acc + displs[v] * es, counts[v], mine, cap, &len);
        if (rc)
            goto fn_fail;
        mylen = len;
    }
    rc = PMPI_Allgather(&mylen, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, c->comm);
    if (rc)
        goto fn_fail;
    off[0] = 0;
    for (int i = 0; i < p; i++) {
        uint64_t l = lens[ranks[i]];
        if (l > (uint64_t)(SIZE_MAX - off[i])) {
            rc = MPI_ERR_OTHER;
            goto fn_fail;
        }
        off[i + 1] = off[i] + (size_t)l;
    }
    rc = zmpi_alloc(off[p] ? off[p] : 1, &z);
    if (rc)
        goto fn_fail;
    {
        rhd_state s = {c, acc, counts, displs, z, off, MPI_SUCCESS};
        if (v >= 0) {
            if (mylen)
                memcpy(z + off[v], mine, (size_t)mylen);
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
    zmpi_pieces_free(&pin);
    zmpi_pieces_free(&pout);
    free(counts);
    free(displs);
    free(ranks);
    free(off);
    free(lens);
    free(tmp);
    free(z);
    free(mine);
    return rc;
fn_fail:
    goto fn_exit;
}
