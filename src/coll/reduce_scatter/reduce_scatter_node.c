/*
 * Node-aware Reduce_scatter for clusters of multi-core nodes: reduced plain
 * inside each node, compressed across the nodes with every core of a node
 * coding its own share, nothing moved twice.
 *
 * M nodes of L ranks each (every node the same L). Group k: the ranks of
 * local rank k, one per node (the cross communicator of src/core/topo.c);
 * its blocks are the blocks of its members. M = 2, L = 2, ranks 0 1 on
 * node A and 2 3 on node B, blocks b0..b3 (b_r ends at rank r):
 *
 *   1 inside every node, plain: each rank sends every other rank of its
 *     node the blocks of that rank's group, straight from its input (one
 *     indexed datatype per group: no copies), and reduces what it receives
 *     into the blocks of its own group (in the order of the local ranks):
 *        A: r0 <- b0 b2 of r1   r1 <- b1 b3 of r0      (B alike)
 *        r0 holds b0 b2 reduced over node A, r1 b1 b3
 *   2 across the nodes, compressed, every group at once: a Reduce_scatter
 *     of the group's blocks by the ring (pieces compressed while in
 *     flight), each member's block straight into its receive buffer:
 *        group 0: r0 <-> r2 (b0, b2)     group 1: r1 <-> r3 (b1, b3)
 *
 * A node's network card carries (M - 1)/M of the node's share of the
 * vector once, compressed: what a flat ring sends off the node, divided by
 * the ratio; and all L cores of a node compress and decompress at once,
 * each its group's part. Phase 1 moves (L - 1)/L of every input through
 * shared memory, as MPI's own reduce-scatter on the node would.
 *
 * Error. Phase 1 is exact (it rounds in the datatype, as plain MPI does).
 * Phase 2 is the ring over M members whose inputs are the nodes' partial
 * reductions: M - 1 compressions per element.
 *   result scope:  eb / (M - 1) each (REL: eb = rel * (max - min) of the
 *                  blocks of its group in each rank's input, the part it
 *                  owns after phase 1, scanned while the messages of phase
 *                  1 fly - a part of all N inputs, so never more than rel
 *                  times their range), so every element is within eb;
 *                  SUMs on grid codes as in the ring (coll/common/gsum.h).
 *   message scope: each compression within eb (ABS) or rel * the range of
 *                  what it compresses (REL): the result within (M - 1) * eb,
 *                  not the (N - 1) * eb of the flat ring.
 *
 * Selected by default when the communicator spans more than one node and
 * some node holds more than one of its ranks (src/core/topo.c). With the
 * layout unknown, nodes of different sizes (a short last node), or a
 * group's share beyond INT_MAX elements, it runs the ring over all ranks.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/node.h"
#include "coll/common/ring.h"
#include "coll/reduce_scatter/reduce_scatter.h"

/* The blocks of group k (counts gc, element displacements gd in the
 * vector, M of them) and their sum. */
static long long group(const int *recvcounts, const size_t *vd, const int *member, int M, int L, int k, int *gc,
                       int *gd)
{
    long long total = 0;
    for (int m = 0; m < M; m++) {
        int r = member[m * L + k];
        gc[m] = recvcounts[r];
        gd[m] = vd[r] <= (size_t)INT_MAX ? (int)vd[r] : -1;
        total += gc[m];
    }
    return total;
}

int zmpi_reduce_scatter_node(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op)
{
    int rc = MPI_SUCCESS;
    const zmpi_topo *t = atomic_load(&c->st->topo);
    if (!t || t->size != c->size || t->nnodes < 2 || t->min_local != t->max_local)
        return zmpi_reduce_scatter_ring(c, sendbuf, recvbuf, recvcounts, op);
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    const unsigned char *src = in;
    int M = t->nnodes, L = t->max_local, live = 0, ok = 1;
    int *member = NULL, *gc = NULL, *gd = NULL;
    size_t *vd = NULL, at = 0, es = c->es, n = 0;
    unsigned char *mine = NULL, *peers = NULL;
    MPI_Datatype *gt = NULL;
    MPI_Request *req = NULL;
    zmpi_node_job j;
    zmpi_call sub;

    ZMPI_CHECK(zmpi_node_begin(c, t, 0, -1, &j));
    ZMPI_CHECK(zmpi_alloc((size_t)c->size * sizeof *member, &member));
    ZMPI_CHECK(zmpi_alloc((size_t)c->size * sizeof *vd, &vd));
    ZMPI_CHECK(zmpi_alloc((size_t)M * sizeof *gc, &gc));
    ZMPI_CHECK(zmpi_alloc((size_t)M * sizeof *gd, &gd));
    ZMPI_CHECK(zmpi_alloc((size_t)L * sizeof *gt, &gt));
    ZMPI_CHECK(zmpi_alloc((size_t)2 * (size_t)L * sizeof *req, &req));
    for (int k = 0; k < L; k++)
        gt[k] = MPI_DATATYPE_NULL;
    ZMPI_CHECK(zmpi_node_members(t, L, member));
    for (int r = 0; r < c->size; r++) {
        vd[r] = at;
        at += (size_t)recvcounts[r];
    }
    for (int k = 0; k < L; k++) { /* the same on every rank */
        long long total = group(recvcounts, vd, member, M, L, k, gc, gd);
        for (int m = 0; m < M; m++)
            ok &= gd[m] >= 0;
        ok &= total <= INT_MAX;
    }
    if (!ok) { /* beyond the ints of a datatype: flat */
        rc = zmpi_reduce_scatter_ring(c, sendbuf, recvbuf, recvcounts, op);
        goto fn_exit;
    }
    zmpi_call_ran(c, ZMPI_REDUCE_SCATTER_NODE);
    if (at == 0)
        goto fn_exit; /* nothing to reduce on any rank */
    for (int k = 0; k < L; k++) {
        long long total = group(recvcounts, vd, member, M, L, k, gc, gd);
        if (total > 0) { /* an empty group moves nothing: its type stays null on every rank */
            ZMPI_CHECK(PMPI_Type_indexed(M, gc, gd, c->type, &gt[k]));
            ZMPI_CHECK(PMPI_Type_commit(&gt[k]));
        }
        if (k == j.lr)
            n = (size_t)total;
    }

    /* 1: the blocks of every group to its member on this node, plain
     * (receives in req[0..L-1), sends in req[L-1..2L-2), by local rank) */
    ZMPI_CHECK(zmpi_scratch_get(c, (n ? n : 1) * es, &mine));
    ZMPI_CHECK(zmpi_scratch_get(c, ((size_t)(L - 1) * n + 1) * es, &peers));
    for (int r = 0; r < 2 * L; r++)
        req[r] = MPI_REQUEST_NULL;
    live = 1;
    for (int q = 0, slot = 0; q < L; q++) {
        if (q == j.lr)
            continue;
        if (n > 0)
            ZMPI_CHECK(PMPI_Irecv(peers + (size_t)slot * n * es, (int)n, c->type, q, ZMPI_TAG_REDUCE_SCATTER,
                                  j.node, &req[slot]));
        if (gt[q] != MPI_DATATYPE_NULL)
            ZMPI_CHECK(PMPI_Isend(in, 1, gt[q], q, ZMPI_TAG_REDUCE_SCATTER, j.node, &req[L - 1 + slot]));
        slot++;
    }
    (void)group(recvcounts, vd, member, M, L, j.lr, gc, gd);
    double lo = INFINITY, hi = -INFINITY;
    at = 0;
    for (int m = 0; m < M; m++) { /* this rank's own part, and its range while the messages fly */
        double a, b;
        memcpy(mine + at * es, src + (size_t)gd[m] * es, (size_t)gc[m] * es);
        if (zmpi_value_range(src + (size_t)gd[m] * es, (size_t)gc[m], c->dt, &a, &b, NULL)) {
            lo = a < lo ? a : lo;
            hi = b > hi ? b : hi;
        }
        at += (size_t)gc[m];
    }
    zmpi_node_cross_call(c, &j, &sub);
    ZMPI_CHECK(zmpi_node_result_bound(c, lo, hi, &sub));
    for (int slot = 0; n > 0 && slot < L - 1; slot++) { /* in the order of the local ranks */
        ZMPI_CHECK(PMPI_Wait(&req[slot], MPI_STATUS_IGNORE));
        ZMPI_CHECK(zmpi_reduce_local(c, peers + (size_t)slot * n * es, mine, n, op));
    }
    ZMPI_CHECK(PMPI_Waitall(2 * (L - 1), req, MPI_STATUSES_IGNORE)); /* the sends: `in` may be recvbuf */
    live = 0;

    /* 2: the group's blocks reduced across the nodes, compressed */
    ZMPI_CHECK(zmpi_reduce_scatter_run(&sub, mine, recvbuf, gc, op, 0));
fn_exit:
    if (live) /* an error path: no request outlives the call */
        PMPI_Waitall(2 * (L - 1), req, MPI_STATUSES_IGNORE);
    for (int k = 0; gt && k < L; k++)
        if (gt[k] != MPI_DATATYPE_NULL)
            PMPI_Type_free(&gt[k]);
    zmpi_scratch_put(c, mine);
    zmpi_scratch_put(c, peers);
    free(member);
    free(vd);
    free(gc);
    free(gd);
    free(gt);
    free(req);
    zmpi_node_end(c, &j);
    return rc;
fn_fail:
    goto fn_exit;
}
