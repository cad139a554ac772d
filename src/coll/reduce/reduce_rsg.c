/*
 * Reduce = Reduce_scatter + compressed Gather of the reduced blocks to the
 * root ("rsg": reduce-scatter, then gather). The reduce-scatter is recursive halving
 * (coll/common/halving.h, log2 N messages) for a power-of-two N, else the
 * ring (reduce_scatter_ring.c); either is a tree of N - 1 merges.
 *
 * The vector is cut into N even blocks (the first count % N one element
 * longer). Phase 1 leaves the reduced block b at rank b; phase 2, N = 4,
 * root 0, Z[b] = block b compressed once by rank b:
 *
 *            r0           r1         r2         r3
 *   gather   <-Z1,Z2,Z3   Z1->r0     Z2->r0     Z3->r0
 *   root decompresses Z1..Z3 into the result; its own block stays exact
 *
 * Each rank compresses its block piece by piece and sends every piece as
 * soon as it is compressed (polling between pieces); the root posts all
 * receives into worst-case slots and decompresses each piece as it arrives.
 *
 * Error. Blocks of other ranks pass N-1 compressions in phase 1 and one in
 * phase 2 (N in all); the root's own block passes N-1.
 *   result scope:  e = eb/N per compression: |result - exact| <= eb at the
 *                  root (REL: eb = rel * (max - min) over all ranks' inputs).
 *                  SUM, MIN, MAX alike (see reduce_scatter_ring.c for why
 *                  MIN/MAX errors can add up too).
 *   message scope: e = eb per compression (ABS): <= N*eb. REL: each
 *                  message within rel * its own range.
 * Plus the rounding of the reduction in the datatype (order-dependent, as
 * with plain MPI).
 *
 * Edge cases: MPI_IN_PLACE at the root (input in recvbuf; phase 1 reads it
 * before the result is written), recvbuf insignificant elsewhere, count 0,
 * count < N (empty blocks send nothing), uneven blocks, one rank (copy),
 * any root, any N.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/gsum.h"
#include "coll/common/halving.h"
#include "coll/common/rdb.h"
#include "coll/common/reduce_steps.h"
#include "coll/common/ring.h"
#include "coll/reduce/reduce.h"
#include "coll/reduce_scatter/reduce_scatter.h"

/* The root receives every other block and decompresses it into buf. */
static int gather_root(zmpi_call *c, void *buf, const size_t *counts, const size_t *displs, int tag,
                       int *corrupt)
{
    int rc = MPI_SUCCESS, n = c->size, r = c->rank;
    size_t es = c->es;
    unsigned char *b = buf;
    zmpi_pieces *z = NULL;
    zmpi_xchg *x = NULL;

    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *z, &z));
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *x, &x));
    memset(z, 0, (size_t)n * sizeof *z);
    memset(x, 0, (size_t)n * sizeof *x);
    for (int k = 0; k < n; k++) {
        if (k == r)
            continue;
        ZMPI_CHECK(zmpi_pieces_layout(c, &z[k], counts[k]));
        ZMPI_CHECK(zmpi_xchg_start(c, &x[k], tag, k, &z[k], MPI_PROC_NULL, NULL));
    }
    /* ranks after the root first: the ring finished there first */
    for (int i = 1; i < n; i++) {
        int k = (r + i) % n;
        for (size_t j = 0; j < z[k].n; j++) {
            ZMPI_CHECK(zmpi_xchg_wait_piece(&x[k], j));
            if (zmpi_pieces_decompress(c, &z[k], j, b + displs[k] * es))
                *corrupt = MPI_ERR_OTHER;
        }
        ZMPI_CHECK(zmpi_xchg_wait(&x[k]));
    }
fn_exit:
    for (int k = 0; x && k < n; k++)
        zmpi_xchg_free(&x[k]);
    for (int k = 0; z && k < n; k++)
        zmpi_pieces_free(c, &z[k]);
    free(x);
    free(z);
    return rc;
fn_fail:
    goto fn_exit;
}

/* A non-root rank compresses its block piece by piece and sends it to root. */
static int gather_send(zmpi_call *c, const void *block, size_t count, int root, int tag)
{
    int rc = MPI_SUCCESS;
    zmpi_pieces z = {0};
    zmpi_xchg x = {0};

    ZMPI_CHECK(zmpi_pieces_layout(c, &z, count));
    ZMPI_CHECK(zmpi_xchg_start(c, &x, tag, MPI_PROC_NULL, NULL, root, &z));
    for (size_t j = 0; j < z.n; j++) {
        ZMPI_CHECK(zmpi_pieces_compress(c, &z, j, block));
        ZMPI_CHECK(zmpi_xchg_send(&x, j));
        ZMPI_CHECK(zmpi_xchg_poll(&x));
    }
    ZMPI_CHECK(zmpi_xchg_wait(&x));
fn_exit:
    zmpi_xchg_free(&x);
    zmpi_pieces_free(c, &z);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_reduce_rsg(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op, int root)
{
    zmpi_call_ran(c, ZMPI_REDUCE_RSG);
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size, r = c->rank, go = 0;
    const void *in = (r == root && sendbuf == MPI_IN_PLACE) ? recvbuf : sendbuf;
    size_t *counts = NULL, *displs = NULL, es = c->es;
    unsigned char *own = NULL, *tmp = NULL, *res = recvbuf;
    zmpi_gsum g = {0};
    zmpi_gtable t = {0};

    ZMPI_CHECK(zmpi_reduce_begin(c, in, recvbuf, count, n, (double)n, op, &g, &counts, &displs, &go));
    if (!go)
        goto fn_exit;
    if (g.d) { /* on grid codes: reduced, gathered and decoded at the root in the codes */
        in = res = (unsigned char *)g.d;
        es = c->es;
        own = res + displs[r] * es;
    } else if (r == root) {
        own = (unsigned char *)recvbuf + displs[r] * es;
    } else {
        ZMPI_CHECK(zmpi_scratch_get(c, counts[r] * es, &tmp));
        own = tmp;
    }
    if (g.d) { /* summed packed; the own block unpacked into the codes */
        ZMPI_CHECK(zmpi_gtable_reduce_scatter(c, &g, counts, displs, zmpi_is_pow2(n), ZMPI_TAG_REDUCE, &t,
                                              &corrupt));
        ZMPI_CHECK(zmpi_gsum_spread(c, &g, counts, displs, r));
    } else if (zmpi_is_pow2(n)) { /* recursive halving: log2 N messages instead of N - 1 */
        ZMPI_CHECK(zmpi_halving_reduce_scatter_copy(c, in, own, count, counts, displs, op, ZMPI_TAG_REDUCE,
                                                    &corrupt));
    } else {
        ZMPI_CHECK(zmpi_ring_reduce_scatter(c, in, own, counts, displs, op, ZMPI_TAG_REDUCE, &corrupt));
    }
    if (r == root)
        ZMPI_CHECK(gather_root(c, res, counts, displs, ZMPI_TAG_REDUCE, &corrupt));
    else
        ZMPI_CHECK(gather_send(c, own, counts[r], root, ZMPI_TAG_REDUCE));
    if (g.d && r == root)
        ZMPI_CHECK(zmpi_gsum_decode(c, &g, counts, displs, 0, n, recvbuf));
    rc = corrupt;
fn_exit:
    zmpi_gtable_free(c, &t);
    zmpi_gsum_end(c, &g);
    free(counts);
    free(displs);
    zmpi_scratch_put(c, tmp);
    return rc;
fn_fail:
    goto fn_exit;
}
