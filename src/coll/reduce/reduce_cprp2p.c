/*
 * Reduce, binomial tree, compress per hop ("CPRP2P", the published
 * baseline; for comparison in benchmarks only).
 *
 * Virtual ranks v = (rank - root) mod N. Rank v reduces its own input with
 * the partial results of its children v + m (m = 1, 2, 4, ... below the
 * lowest set bit of v, and v + m < N) and sends its partial, compressed, to
 * its parent v - lowbit(v): every hop decompresses, reduces
 * (zmpi_reduce_local) and recompresses. 8 ranks, SUM, z = compress,
 * u = decompress, x_k = the input of vrank k:
 *
 *   step 1   1 ─z(x1)─▶ 0   3 ─z(x3)─▶ 2   5 ─z(x5)─▶ 4   7 ─z(x7)─▶ 6
 *   step 2   2 ─z(x2 + u(z3))─▶ 0           6 ─z(x6 + u(z7))─▶ 4
 *   step 3   4 ─z(x4 + u(z5) + u(z6))─▶ 0
 *   root:    result = x0 + u(z1) + u(z2) + u(z4)
 *
 * The vector travels as pieces of ZMPI_CHUNK elements (ring.h), each its
 * own stream and message: receives for all pieces of every child are
 * posted up front; piece j is reduced as soon as every child's piece j has
 * arrived, then compressed and sent up at once, so the levels of the tree
 * work on different pieces at the same time. Leaves compress their input
 * directly. Every non-root rank compresses the whole vector once.
 *
 * Error, e the bound of one compression (hops = the compressions whose
 * errors can add up in one element of the result):
 *   SUM:      the result is the exact sum plus the error of each of the N-1
 *             compressed partials (one per non-root rank): <= (N-1) * e,
 *             hops = N-1.
 *   MIN/MAX:  max(a + d, b) is within |d| of max(a, b), so errors do not
 *             add across siblings, only along a path to the root:
 *             <= ceil(log2 N) * e, hops = ceil(log2 N).
 *   result scope:  e = eb / hops, so |result - exact| <= eb at the root
 *                  (REL: eb = rel * (max - min) over all ranks' inputs, one
 *                  small allreduce).
 *   message scope: e = eb per compression (ABS): <= hops * eb. REL: each
 *                  piece within rel * its own range (a SUM partial of s
 *                  ranks has range <= s * R plus twice its error so far).
 * Plus the rounding of the reduction in the datatype (order-dependent, as
 * with plain MPI).
 *
 * Edge cases: MPI_IN_PLACE at the root (input in recvbuf, reduced in
 * place), recvbuf insignificant elsewhere, count 0 (nothing moves), count
 * < N (the whole vector travels on every edge), any root, non-powers of two
 * (subtrees cut at N), one rank (copy). A corrupt incoming piece is left
 * out of the partial; the rank finishes the protocol and returns
 * MPI_ERR_OTHER (ranks above it may then hold wrong values without an
 * error, as in the ring algorithms).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/common/ring.h"
#include "coll/reduce/reduce.h"

#define MAXCHILD 32 /* a binomial tree over int ranks has at most 31 children */

static int ceil_log2(int n)
{
    int d = 0;
    while ((1L << d) < n)
        d++;
    return d;
}

/* Decompresses received piece j of p into dst (the piece's own elements). */
static int piece_unz(zmpi_call *c, const zmpi_pieces *p, size_t j, void *dst)
{
    if (p->len[j] < 0)
        return MPI_ERR_OTHER;
    return zmpi_block_decompress(c, p->buf + p->slot[j], (size_t)p->len[j], dst, zmpi_pieces_count(p, j));
}

int zmpi_reduce_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op, int root)
{
    zmpi_call_ran(c, ZMPI_REDUCE_CPRP2P);
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size, r = c->rank;
    int v = (r - root + n) % n, low = zmpi_dm_lowbit(v, n), nchild = 0;
    const void *in = (r == root && sendbuf == MPI_IN_PLACE) ? recvbuf : sendbuf;
    const unsigned char *src = in; /* what this rank compresses */
    size_t es = c->es, npieces = 0;
    unsigned char *acc = NULL, *part = NULL, *tmp = NULL;
    zmpi_pieces pin[MAXCHILD], pout = {0};
    zmpi_xchg xin[MAXCHILD], xout = {0};

    memset(pin, 0, sizeof pin);
    memset(xin, 0, sizeof xin);
    if (count == 0)
        goto fn_exit;
    if (n == 1) {
        if (in != recvbuf)
            memcpy(recvbuf, in, count * es);
        goto fn_exit;
    }
    rc = zmpi_call_bound(c, op == MPI_SUM ? (double)(n - 1) : (double)ceil_log2(n), in, count);
    if (rc)
        goto fn_fail;
    /* the children's pieces: every receive posted up front */
    for (int m = 1; m < low && v + m < n; m <<= 1) {
        rc = zmpi_pieces_layout(c, &pin[nchild], count);
        if (rc)
            goto fn_fail;
        rc = zmpi_xchg_start(c, &xin[nchild], ZMPI_TAG_REDUCE, zmpi_dm_real(v + m, root, n), &pin[nchild],
                             MPI_PROC_NULL, NULL);
        if (rc)
            goto fn_fail;
        nchild++;
    }
    /* the partial: reduced into recvbuf at the root, into a copy of the
     * input at inner ranks; leaves send their input as it is */
    if (v == 0) {
        if (in != recvbuf)
            memcpy(recvbuf, in, count * es);
        acc = recvbuf;
    } else if (nchild > 0) {
        rc = zmpi_scratch_get(c, count * es, &part);
        if (rc)
            goto fn_fail;
        memcpy(part, in, count * es);
        acc = part;
        src = part;
    }
    if (nchild > 0) {
        npieces = pin[0].n;
        rc = zmpi_scratch_get(c, zmpi_pieces_count(&pin[0], 0) * es, &tmp); /* the first piece is the longest */
        if (rc)
            goto fn_fail;
    }
    if (v != 0) {
        rc = zmpi_pieces_layout(c, &pout, count);
        if (rc)
            goto fn_fail;
        rc = zmpi_xchg_start(c, &xout, ZMPI_TAG_REDUCE, MPI_PROC_NULL, NULL, zmpi_dm_real(v - low, root, n),
                             &pout);
        if (rc)
            goto fn_fail;
        npieces = pout.n;
    }
    for (size_t j = 0; j < npieces; j++) {
        for (int k = 0; k < nchild; k++) {
            size_t first = zmpi_pieces_first(&pin[k], j), m = zmpi_pieces_count(&pin[k], j);
            rc = zmpi_xchg_wait_piece(&xin[k], j);
            if (rc)
                goto fn_fail;
            if (piece_unz(c, &pin[k], j, tmp) != MPI_SUCCESS) {
                corrupt = MPI_ERR_OTHER; /* left out; the protocol goes on */
                continue;
            }
            rc = zmpi_reduce_local(c, tmp, acc + first * es, m, op);
            if (rc)
                goto fn_fail;
        }
        if (v != 0) {
            rc = zmpi_pieces_compress(c, &pout, j, src);
            if (rc == MPI_SUCCESS)
                rc = zmpi_xchg_send(&xout, j);
            if (rc == MPI_SUCCESS)
                rc = zmpi_xchg_poll(&xout);
            if (rc)
                goto fn_fail;
        }
    }
    for (int k = 0; k < nchild; k++) {
        rc = zmpi_xchg_wait(&xin[k]);
        if (rc)
            goto fn_fail;
    }
    rc = zmpi_xchg_wait(&xout);
    if (rc)
        goto fn_fail;
    rc = corrupt;
fn_exit:
    zmpi_xchg_free(&xout);
    zmpi_pieces_free(c, &pout);
    for (int k = 0; k < MAXCHILD; k++) {
        zmpi_xchg_free(&xin[k]);
        zmpi_pieces_free(c, &pin[k]);
    }
    zmpi_scratch_put(c, tmp);
    zmpi_scratch_put(c, part);
    return rc;
fn_fail:
    goto fn_exit;
}
