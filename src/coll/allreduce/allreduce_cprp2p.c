/*
 * "CPRP2P" Allreduce: the published per-hop baseline, kept so that
 * benchmarks can show what compress-once saves. Phase 1 is the ring
 * Reduce_scatter (reduce_scatter_ring.c); phase 2 is a ring Allgather in
 * which every hop decompresses and recompresses, N = 4, Z(x) = x compressed
 * by the sender, b' = block b after one more decompression:
 *
 *            r0          r1          r2          r3
 *   step 0   Z(b0)->r1   Z(b1)->r2   Z(b2)->r3   Z(b3)->r0   exact own block
 *   step 1   Z(b3')->r1  Z(b0')->r2  Z(b1')->r3  Z(b2')->r0  recompressed
 *   step 2   Z(b2'')->r1 Z(b3'')->r2 Z(b0'')->r3 Z(b1'')->r0 recompressed
 *
 * The owner keeps its exact block, so ranks do NOT end with identical
 * results (another reason it is only a baseline).
 *
 * Error. Block b at a rank d ring steps after its owner ((rank - b) mod N)
 * has passed N-1 + d compressions, at most 2N-2 (N >= 2), each of bound e:
 *   result scope:  e = eb/(2N-2), so |result - exact| <= eb on every rank
 *                  (REL: eb = rel * (max - min) over all ranks' inputs);
 *                  the price is a tighter per-compression bound than the
 *                  ring's eb/N, hence a lower ratio.
 *   message scope: e = eb per compression: up to (2N-2)*eb (ABS), the error
 *                  growth the compress-once ring avoids.
 * Plus the rounding of the reduction in the datatype, as for the ring.
 *
 * Edge cases: as the ring (MPI_IN_PLACE, count 0, count < N, uneven blocks,
 * one rank, any N).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/allreduce/allreduce.h"
#include "coll/common/ring.h"
#include "coll/reduce_scatter/reduce_scatter.h"

/* Ring allgather that recompresses at every hop (block c->rank of buf is
 * the owner's block and stays exact). */
static int allgather_per_hop(zmpi_call *c, void *buf, const size_t *counts, const size_t *displs,
                             int tag, int *corrupt)
{
    int rc = MPI_SUCCESS, n = c->size, r = c->rank, left = (r - 1 + n) % n, right = (r + 1) % n;
    size_t es = c->es;
    unsigned char *b = buf;
    zmpi_pieces pin = {0}, pout = {0};
    zmpi_xchg x = {0};

    for (int s = 0; s < n - 1; s++) {
        int ob = (r - s + n) % n, ib = (r - s - 1 + n) % n;
        rc = zmpi_pieces_layout(c, &pout, counts[ob]);
        if (rc)
            goto fn_fail;
        rc = zmpi_pieces_layout(c, &pin, counts[ib]);
        if (rc)
            goto fn_fail;
        rc = zmpi_xchg_start(c, &x, tag, left, &pin, right, &pout);
        if (rc)
            goto fn_fail;
        for (size_t j = 0; j < pout.n; j++) {
            rc = zmpi_pieces_compress(c, &pout, j, b + displs[ob] * es);
            if (rc)
                goto fn_fail;
            rc = zmpi_xchg_send(&x, j);
            if (rc)
                goto fn_fail;
            rc = zmpi_xchg_poll(&x);
            if (rc)
                goto fn_fail;
        }
        for (size_t j = 0; j < pin.n; j++) {
            rc = zmpi_xchg_wait_piece(&x, j);
            if (rc)
                goto fn_fail;
            if (zmpi_pieces_decompress(c, &pin, j, b + displs[ib] * es))
                *corrupt = MPI_ERR_OTHER;
        }
        rc = zmpi_xchg_wait(&x);
        if (rc)
            goto fn_fail;
    }
fn_exit:
    zmpi_xchg_free(&x);
    zmpi_pieces_free(c, &pin);
    zmpi_pieces_free(c, &pout);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_allreduce_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    zmpi_call_ran(c, ZMPI_ALLREDUCE_CPRP2P);
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
    rc = zmpi_call_bound(c, 2.0 * (n - 1), in, count);
    if (rc)
        goto fn_fail;
    rc = zmpi_ring_reduce_scatter(c, in, (unsigned char *)recvbuf + displs[r] * es, counts, displs, op,
                                  ZMPI_TAG_ALLREDUCE, &corrupt);
    if (rc)
        goto fn_fail;
    rc = allgather_per_hop(c, recvbuf, counts, displs, ZMPI_TAG_ALLREDUCE, &corrupt);
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
