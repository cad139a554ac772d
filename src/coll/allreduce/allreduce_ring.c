/*
 * Ring Allreduce = ring Reduce_scatter (reduce_scatter_ring.c) + ring
 * Allgather of compress-once blocks (pieces compressed while in flight; blocks compressed once).
 *
 * The vector is cut into N even blocks (the first count % N one element
 * longer). Phase 1 leaves the fully reduced block r at rank r, each partial
 * compressed once per step. Phase 2, N = 4, Z[b] = block b compressed once
 * by its owner b:
 *
 *            r0        r1        r2        r3
 *   step 0   Z0->r1    Z1->r2    Z2->r3    Z3->r0    compressed by the owner
 *   step 1   Z3->r1    Z0->r2    Z1->r3    Z2->r0    forwarded bytes
 *   step 2   Z2->r1    Z3->r2    Z0->r3    Z1->r0    forwarded bytes
 *   every rank decompresses Z0..Z3 once, the owner its own block too
 *
 * In step s a rank forwards the bytes received in step s-1 (sent whole, as
 * soon as the step starts) and, while they travel, decompresses them into
 * the result. The owner replaces its exact block by the decompression of
 * its own stream, so all ranks end with bit-identical results, as users of
 * Allreduce rely on (iterative solvers branching on the result, for
 * instance); it costs the owner nothing in the bound.
 *
 * Error. Every element passes N-1 compressions in phase 1 and one in
 * phase 2: N compressions of bound e, result within N*e (SUM: errors add;
 * MIN/MAX: max/min are 1-Lipschitz in each argument, so a recompressed
 * perturbed partial can add e at each step as well).
 *   result scope:  e = eb/N, so |result - exact| <= eb on every rank. REL:
 *                  eb = rel * (max - min) over all ranks' inputs.
 *   message scope: e = eb per compression (ABS): <= N*eb. REL: each
 *                  message within rel * its own range (partials of k ranks
 *                  have up to k times the inputs' range for SUM).
 * Plus the rounding of the reduction in the datatype (order-dependent, as
 * with plain MPI): <= (N-1) * unit roundoff * sum |x_i| for SUM.
 *
 * Edge cases: MPI_IN_PLACE (input in recvbuf; phase 1 reads it before the
 * result is written), count 0 (nothing), count < N (empty blocks send no
 * message), count not divisible by N, one rank (copy), any N.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/allreduce/allreduce.h"
#include "coll/common/ring.h"
#include "coll/reduce_scatter/reduce_scatter.h"

/* Ring allgather of compressed blocks: block c->rank of buf is the owner's
 * exact block on entry; on return every block holds the decompression of
 * its owner's stream. Corrupt streams set *corrupt and do not stop the ring. */
static int allgather_once(zmpi_call *c, void *buf, const size_t *counts, const size_t *displs,
                          int tag, int *corrupt)
{
    int rc = MPI_SUCCESS, n = c->size, r = c->rank, left = (r - 1 + n) % n, right = (r + 1) % n;
    int dec = r;
    size_t es = c->es;
    unsigned char *b = buf;
    zmpi_pieces *z = NULL;
    zmpi_xchg x = {0};

    rc = zmpi_alloc((size_t)n * sizeof *z, &z);
    if (rc)
        goto fn_fail;
    memset(z, 0, (size_t)n * sizeof *z);
    for (int k = 0; k < n; k++) {
        rc = zmpi_pieces_layout(c, &z[k], counts[k]);
        if (rc)
            goto fn_fail;
    }
    for (int s = 0; s < n - 1; s++) {
        int ob = (r - s + n) % n, ib = (r - s - 1 + n) % n;
        rc = zmpi_xchg_start(c, &x, tag, left, &z[ib], right, &z[ob]);
        if (rc)
            goto fn_fail;
        for (size_t j = 0; j < z[ob].n; j++) {
            if (s == 0) {
                rc = zmpi_pieces_compress(c, &z[ob], j, b + displs[ob] * es);
                if (rc)
                    goto fn_fail;
            } else {
                zmpi_stat_sent(c, zmpi_pieces_count(&z[ob], j) * es, (size_t)z[ob].len[j]);
            }
            rc = zmpi_xchg_send(&x, j);
            if (rc)
                goto fn_fail;
            if (s == 0) {
                rc = zmpi_xchg_poll(&x);
                if (rc)
                    goto fn_fail;
            }
        }
        /* step 0: the own block (all its pieces are compressed by now);
         * later steps: the block received in the previous step */
        dec = s == 0 ? r : ob;
        for (size_t j = 0; j < z[dec].n; j++) {
            if (zmpi_pieces_decompress(c, &z[dec], j, b + displs[dec] * es))
                *corrupt = MPI_ERR_OTHER;
            rc = zmpi_xchg_poll(&x);
            if (rc)
                goto fn_fail;
        }
        rc = zmpi_xchg_wait(&x);
        if (rc)
            goto fn_fail;
        dec = ib;
    }
    for (size_t j = 0; j < z[dec].n; j++)
        if (zmpi_pieces_decompress(c, &z[dec], j, b + displs[dec] * es))
            *corrupt = MPI_ERR_OTHER;
fn_exit:
    zmpi_xchg_free(&x);
    for (int k = 0; z && k < n; k++)
        zmpi_pieces_free(c, &z[k]);
    free(z);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_allreduce_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    zmpi_call_ran(c, ZMPI_ALLREDUCE_RING);
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size, r = c->rank;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    size_t *counts = NULL, *displs = NULL, es = c->es;

    if (count == 0)
        goto fn_exit;
    if (n == 1) {
        if (in != recvbuf)
            memcpy(recvbuf, in, count * es);
        goto fn_exit;
    }
    rc = zmpi_alloc((size_t)n * sizeof *counts, &counts);
    if (rc)
        goto fn_fail;
    rc = zmpi_alloc((size_t)n * sizeof *displs, &displs);
    if (rc)
        goto fn_fail;
    zmpi_blocks_even(count, n, counts, displs);
    rc = zmpi_call_bound(c, (double)n, in, count);
    if (rc)
        goto fn_fail;
    rc = zmpi_ring_reduce_scatter(c, in, (unsigned char *)recvbuf + displs[r] * es, counts, displs, op,
                                  ZMPI_TAG_ALLREDUCE, &corrupt);
    if (rc)
        goto fn_fail;
    rc = allgather_once(c, recvbuf, counts, displs, ZMPI_TAG_ALLREDUCE, &corrupt);
    if (rc)
        goto fn_fail;
    rc = corrupt;
fn_exit:
    free(counts);
    free(displs);
    return rc;
fn_fail:
    goto fn_exit;
}
