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

int zmpi_reduce_scatter_node(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op)
{
    int rc = MPI_SUCCESS;
    const zmpi_topo *t = atomic_load(&c->st->topo);
    long long total = 0;
    for (int r = 0; t && r < c->size; r++)
        total += recvcounts[r];
    /* flat: the layout unknown, nodes of different sizes, or displacements beyond an int */
    if (!t || t->size != c->size || t->nnodes < 2 || t->min_local != t->max_local || total > INT_MAX)
        return zmpi_reduce_scatter_ring(c, sendbuf, recvbuf, recvcounts, op);
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    const unsigned char *src = in;
    int live = 0, *vd = NULL;
    size_t at = 0, es = c->es, n = 0;
    unsigned char *mine = NULL, *peers = NULL;
    zmpi_node_groups g = {0};
    zmpi_node_job j;
    zmpi_call sub;

    zmpi_call_ran(c, ZMPI_REDUCE_SCATTER_NODE);
    if (total == 0)
        return MPI_SUCCESS; /* nothing to reduce on any rank */
    ZMPI_CHECK(zmpi_node_begin(c, t, 0, -1, &j));
    ZMPI_CHECK(zmpi_node_groups_begin(t, &g));
    ZMPI_CHECK(zmpi_alloc((size_t)c->size * sizeof *vd, &vd));
    for (int r = 0, d = 0; r < c->size; r++) { /* each block's place in the vector */
        vd[r] = d;
        d += recvcounts[r];
    }
    ZMPI_CHECK(zmpi_node_group_types(&g, recvcounts, vd, c->type));
    n = (size_t)zmpi_node_group(&g, j.lr, recvcounts, vd); /* this rank's group, in g.gc / g.gd from here on */

    /* 1: the blocks of every group to its member on this node, plain
     * (receives in req[0..L-1), sends in req[L-1..2L-2), by local rank) */
    int L = g.L, M = g.M;
    ZMPI_CHECK(zmpi_scratch_get(c, (n ? n : 1) * es, &mine));
    ZMPI_CHECK(zmpi_scratch_get(c, ((size_t)(L - 1) * n + 1) * es, &peers));
    live = 1;
    for (int q = 0, slot = 0; q < L; q++) {
        if (q == j.lr)
            continue;
        if (n > 0)
            ZMPI_CHECK(PMPI_Irecv(peers + (size_t)slot * n * es, (int)n, c->type, q, ZMPI_TAG_REDUCE_SCATTER,
                                  j.node, &g.req[slot]));
        if (g.gt[q] != MPI_DATATYPE_NULL)
            ZMPI_CHECK(PMPI_Isend(in, 1, g.gt[q], q, ZMPI_TAG_REDUCE_SCATTER, j.node, &g.req[L - 1 + slot]));
        slot++;
    }
    double lo = INFINITY, hi = -INFINITY;
    for (int m = 0; m < M; m++) { /* this rank's own part, and its range while the messages fly */
        double a, b;
        memcpy(mine + at * es, src + (size_t)g.gd[m] * es, (size_t)g.gc[m] * es);
        if (zmpi_value_range(src + (size_t)g.gd[m] * es, (size_t)g.gc[m], c->dt, &a, &b, NULL)) {
            lo = a < lo ? a : lo;
            hi = b > hi ? b : hi;
        }
        at += (size_t)g.gc[m];
    }
    zmpi_node_cross_call(c, &j, &sub);
    ZMPI_CHECK(zmpi_node_result_bound(c, lo, hi, &sub));
    for (int slot = 0; n > 0 && slot < L - 1; slot++) { /* in the order of the local ranks */
        ZMPI_CHECK(PMPI_Wait(&g.req[slot], MPI_STATUS_IGNORE));
        ZMPI_CHECK(zmpi_reduce_local(c, peers + (size_t)slot * n * es, mine, n, op));
    }
    ZMPI_CHECK(PMPI_Waitall(2 * (L - 1), g.req, MPI_STATUSES_IGNORE)); /* the sends: `in` may be recvbuf */
    live = 0;

    /* 2: the group's blocks reduced across the nodes, compressed */
    ZMPI_CHECK(zmpi_reduce_scatter_run(&sub, mine, recvbuf, g.gc, op, 0));
fn_exit:
    if (live) /* an error path: no request outlives the call */
        PMPI_Waitall(2 * (g.L - 1), g.req, MPI_STATUSES_IGNORE);
    zmpi_scratch_put(c, mine);
    zmpi_scratch_put(c, peers);
    free(vd);
    zmpi_node_groups_free(&g);
    zmpi_node_end(c, &j);
    return rc;
fn_fail:
    goto fn_exit;
}
