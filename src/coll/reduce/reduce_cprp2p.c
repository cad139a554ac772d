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
#include "coll/common/reduce_steps.h"
#include "coll/common/ring.h"
#include "coll/reduce/reduce.h"

#define MAXCHILD 32 /* a binomial tree over int ranks has at most 31 children */

/* A rank's part of the tree: its children's incoming pieces, its partial
 * and its outgoing pieces. */
typedef struct rc_state {
    zmpi_call *c;
    int v, low, root, nchild, corrupt;
    size_t count, npieces;
    const unsigned char *src;  /* what this rank compresses */
    unsigned char *acc;        /* the partial (NULL at a leaf) */
    unsigned char *part, *tmp; /* scratch: the inner rank's partial, one decompressed piece */
    zmpi_pieces pin[MAXCHILD], pout;
    zmpi_xchg xin[MAXCHILD], xout;
} rc_state;

/* Decompresses received piece j of p into dst (the piece's own elements). */
static int piece_unz(zmpi_call *c, const zmpi_pieces *p, size_t j, void *dst)
{
    if (p->len[j] < 0)
        return MPI_ERR_OTHER;
    return zmpi_block_decompress(c, p->buf + p->slot[j], (size_t)p->len[j], dst, zmpi_pieces_count(p, j));
}

/* The children's pieces: every receive posted up front. */
static int post_children(rc_state *s)
{
    int rc = MPI_SUCCESS, n = s->c->size;
    for (int m = 1; m < s->low && s->v + m < n; m <<= 1) {
        zmpi_pieces *p = &s->pin[s->nchild];
        ZMPI_CHECK(zmpi_pieces_layout(s->c, p, s->count));
        ZMPI_CHECK(zmpi_xchg_start(s->c, &s->xin[s->nchild], ZMPI_TAG_REDUCE,
                                   zmpi_dm_real(s->v + m, s->root, n), p, MPI_PROC_NULL, NULL));
        s->nchild++;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* The partial: reduced into recvbuf at the root, into a copy of the input
 * at inner ranks; leaves send their input as it is. Non-root ranks start
 * their send to the parent. */
static int setup_partial(rc_state *s, const void *in, void *recvbuf)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS;
    size_t bytes = s->count * c->es;
    if (s->v == 0) {
        if (in != recvbuf)
            memcpy(recvbuf, in, bytes);
        s->acc = recvbuf;
    } else if (s->nchild > 0) {
        ZMPI_CHECK(zmpi_scratch_get(c, bytes, &s->part));
        memcpy(s->part, in, bytes);
        s->acc = s->part;
        s->src = s->part;
    }
    if (s->nchild > 0) { /* the first piece is the longest */
        s->npieces = s->pin[0].n;
        ZMPI_CHECK(zmpi_scratch_get(c, zmpi_pieces_count(&s->pin[0], 0) * c->es, &s->tmp));
    }
    if (s->v != 0) {
        ZMPI_CHECK(zmpi_pieces_layout(c, &s->pout, s->count));
        ZMPI_CHECK(zmpi_xchg_start(c, &s->xout, ZMPI_TAG_REDUCE, MPI_PROC_NULL, NULL,
                                   zmpi_dm_real(s->v - s->low, s->root, c->size), &s->pout));
        s->npieces = s->pout.n;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Piece j: reduce every child's piece j into the partial as it arrives,
 * then compress the partial's piece j and send it up (non-root ranks). */
static int reduce_piece(rc_state *s, size_t j, MPI_Op op)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS;
    for (int k = 0; k < s->nchild; k++) {
        size_t first = zmpi_pieces_first(&s->pin[k], j), m = zmpi_pieces_count(&s->pin[k], j);
        ZMPI_CHECK(zmpi_xchg_wait_piece(&s->xin[k], j));
        if (piece_unz(c, &s->pin[k], j, s->tmp) != MPI_SUCCESS) {
            s->corrupt = MPI_ERR_OTHER; /* left out; the protocol goes on */
            continue;
        }
        ZMPI_CHECK(zmpi_reduce_local(c, s->tmp, s->acc + first * c->es, m, op));
    }
    if (s->v != 0) {
        ZMPI_CHECK(zmpi_pieces_compress(c, &s->pout, j, s->src));
        ZMPI_CHECK(zmpi_xchg_send(&s->xout, j));
        ZMPI_CHECK(zmpi_xchg_poll(&s->xout));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_reduce_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op, int root)
{
    zmpi_call_ran(c, ZMPI_REDUCE_CPRP2P);
    int rc = MPI_SUCCESS, n = c->size, r = c->rank, go = 0;
    const void *in = (r == root && sendbuf == MPI_IN_PLACE) ? recvbuf : sendbuf;
    rc_state st, *s = &st;

    memset(s, 0, sizeof *s);
    ZMPI_CHECK(zmpi_reduce_begin(c, in, recvbuf, count, 0,
                                 op == MPI_SUM ? (double)(n - 1) : zmpi_ceil_log2(n), op, NULL, NULL, NULL, &go));
    if (!go)
        goto fn_exit;
    s->c = c;
    s->v = (r - root + n) % n;
    s->low = zmpi_dm_lowbit(s->v, n);
    s->root = root;
    s->count = count;
    s->src = in;
    ZMPI_CHECK(post_children(s));
    ZMPI_CHECK(setup_partial(s, in, recvbuf));
    for (size_t j = 0; j < s->npieces; j++)
        ZMPI_CHECK(reduce_piece(s, j, op));
    for (int k = 0; k < s->nchild; k++)
        ZMPI_CHECK(zmpi_xchg_wait(&s->xin[k]));
    ZMPI_CHECK(zmpi_xchg_wait(&s->xout));
    rc = s->corrupt;
fn_exit:
    zmpi_xchg_free(&s->xout);
    zmpi_pieces_free(c, &s->pout);
    for (int k = 0; k < MAXCHILD; k++) {
        zmpi_xchg_free(&s->xin[k]);
        zmpi_pieces_free(c, &s->pin[k]);
    }
    zmpi_scratch_put(c, s->tmp);
    zmpi_scratch_put(c, s->part);
    return rc;
fn_fail:
    goto fn_exit;
}
