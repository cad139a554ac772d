/*
 * Ring Reduce_scatter with compression hidden inside the transfer
 * (pieces compressed while the step's transfers are in flight).
 *
 * N ranks, block b (recvcounts[b] elements) ends at rank b. In step s
 * (s = 0 .. N-2) rank r sends its partial of block (r-s-1) mod N to r+1 and
 * receives the partial of block (r-s-2) mod N from r-1, N = 4:
 *
 *            r0        r1        r2        r3
 *   step 0   [3]->r1   [0]->r2   [1]->r3   [2]->r0   own input, 1 rank
 *   step 1   [2]->r1   [3]->r2   [0]->r3   [1]->r0   partials of 2 ranks
 *   step 2   [1]->r1   [2]->r2   [3]->r3   [0]->r0   partials of 3 ranks
 *   result   [0]       [1]       [2]       [3]       + own input: N ranks
 *
 * Inside a step the outgoing partial is compressed piece by piece (cfg.chunk
 * elements per piece, each its own stream and message); each piece is sent
 * as soon as it is compressed and the step's requests are polled
 * (PMPI_Testsome) before the next piece, so the transfer runs while
 * compression runs. Incoming pieces are received into worst-case slots posted
 * at the start of the step (the size comes from the status), decompressed
 * one by one as they arrive, and reduced into the partial with the local
 * input (PMPI_Reduce_local). The result depends only on the data, never on
 * timing.
 *
 * Error. Every element of block b is compressed once in each of the N-1
 * steps (its partial after 1, 2, ..., N-1 ranks). With a per-compression
 * bound e the result is within (N-1)*e of the uncompressed reduction: for
 * SUM the errors add; for MIN and MAX too, since max(a+d, x) differs from
 * max(a, x) by at most |d| and the perturbed partial is recompressed at the
 * next step (in practice fzl's quantisation grid is idempotent, so MIN/MAX
 * errors stay near one e, but other codecs have no such property).
 *   result scope:  e = eb/(N-1), so |result - exact| <= eb. REL: eb is
 *                  rel * (max - min) over all ranks' inputs (whole vectors).
 *   message scope: e = eb per compression (ABS): <= (N-1)*eb. REL: each
 *                  message within rel * its own value range; the k-th
 *                  compression holds a partial of k ranks, whose range is at
 *                  most k times the inputs' range (plus the error so far).
 * On top of this comes the rounding of the reduction itself in the
 * datatype, which depends on the order of operations (as with plain MPI):
 * at most (N-1) * unit roundoff * sum |x_i| for SUM, none for MIN and MAX.
 *
 * Edge cases: MPI_IN_PLACE (input is the whole vector in recvbuf, result
 * goes to its start), zero recvcounts (empty blocks send no message), total
 * count 0, counts < ranks or not divisible by ranks (any recvcounts), one
 * rank (a copy), non-power-of-two N (a ring needs none).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/gsum.h"
#include "coll/common/halving.h"
#include "coll/common/ring.h"
#include "coll/reduce_scatter/reduce_scatter.h"

int zmpi_ring_reduce_scatter(zmpi_call *c, const void *in, void *out, const size_t *counts,
                             const size_t *displs, MPI_Op op, int tag, int *corrupt)
{
    int rc = MPI_SUCCESS;
    int n = c->size, r = c->rank, left = (r - 1 + n) % n, right = (r + 1) % n;
    size_t es = c->es, maxc = 0;
    const unsigned char *src = in;
    unsigned char *part = NULL, *inc = NULL, *t;
    zmpi_pieces pin = {0}, pout = {0};
    zmpi_xchg x = {0};

    if (n == 1) { /* the reduction of one vector is itself */
        memmove(out, src + displs[0] * es, counts[0] * es);
        goto fn_exit;
    }
    for (int b = 0; b < n; b++)
        maxc = counts[b] > maxc ? counts[b] : maxc;
    ZMPI_CHECK(zmpi_scratch_get(c, maxc * es, &part));
    ZMPI_CHECK(zmpi_scratch_get(c, maxc * es, &inc));
    for (int s = 0; s < n - 1; s++) {
        int ob = (r - s - 1 + n) % n, ib = (r - s - 2 + 2 * n) % n;
        const void *send = s == 0 ? src + displs[ob] * es : part;
        ZMPI_CHECK(zmpi_pieces_layout(c, &pout, counts[ob]));
        ZMPI_CHECK(zmpi_pieces_layout(c, &pin, counts[ib]));
        ZMPI_CHECK(zmpi_xchg_start(c, &x, tag, left, &pin, right, &pout));
        for (size_t j = 0; j < pout.n; j++) {
            ZMPI_CHECK(zmpi_pieces_compress(c, &pout, j, send));
            ZMPI_CHECK(zmpi_xchg_send(&x, j));
            ZMPI_CHECK(zmpi_xchg_poll(&x));
        }
        for (size_t j = 0; j < pin.n; j++) {
            size_t first = zmpi_pieces_first(&pin, j);
            ZMPI_CHECK(zmpi_xchg_wait_piece(&x, j));
            /* a corrupt piece is reported at the end; the ring goes on so that
             * no other rank waits forever */
            int e = zmpi_pieces_decompress(c, &pin, j, inc);
            if (e)
                *corrupt = MPI_ERR_OTHER;
            ZMPI_CHECK(zmpi_reduce_local(c, src + (displs[ib] + first) * es, inc + first * es,
                                         zmpi_pieces_count(&pin, j), op));
        }
        ZMPI_CHECK(zmpi_xchg_wait(&x));
        t = part;
        part = inc;
        inc = t;
    }
    memcpy(out, part, counts[r] * es);
fn_exit:
    zmpi_xchg_free(&x);
    zmpi_pieces_free(c, &pin);
    zmpi_pieces_free(c, &pout);
    zmpi_scratch_put(c, part);
    zmpi_scratch_put(c, inc);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_reduce_scatter_run(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                            MPI_Op op, int halving)
{
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    size_t *counts = NULL, *displs = NULL, total = 0;
    zmpi_gsum g = {0};
    zmpi_gtable t = {0};

    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *counts, &counts));
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *displs, &displs));
    for (int b = 0; b < n; b++) {
        counts[b] = (size_t)recvcounts[b];
        displs[b] = total;
        total += counts[b];
    }
    if (total == 0)
        goto fn_exit; /* nothing to reduce on any rank */
    if (n == 1) {
        if (in != recvbuf)
            memcpy(recvbuf, in, counts[0] * c->es);
        goto fn_exit;
    }
    /* N - 1 compressions on the classic path; N quantisations on grid codes */
    ZMPI_CHECK(zmpi_gsum_begin(c, op, in, total, counts, displs, n, (double)(n - 1), 0, &g));
    if (g.d) { /* summed packed; the own block unpacked into the codes and decoded into recvbuf */
        ZMPI_CHECK(zmpi_gtable_reduce_scatter(c, &g, counts, displs, halving, ZMPI_TAG_REDUCE_SCATTER, &t,
                                              &corrupt));
    } else if (halving) {
        ZMPI_CHECK(zmpi_halving_reduce_scatter_copy(c, in, recvbuf, total, counts, displs, op,
                                                    ZMPI_TAG_REDUCE_SCATTER, &corrupt));
    } else {
        ZMPI_CHECK(
            zmpi_ring_reduce_scatter(c, in, recvbuf, counts, displs, op, ZMPI_TAG_REDUCE_SCATTER, &corrupt));
    }
    if (g.d)
        ZMPI_CHECK(zmpi_gsum_decode(c, &g, counts, displs, c->rank, 1, recvbuf));
    rc = corrupt;
fn_exit:
    zmpi_gtable_free(c, &t);
    zmpi_gsum_end(c, &g);
    free(counts);
    free(displs);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_reduce_scatter_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                             MPI_Op op)
{
    zmpi_call_ran(c, ZMPI_REDUCE_SCATTER_RING);
    return zmpi_reduce_scatter_run(c, sendbuf, recvbuf, recvcounts, op, 0);
}
