/*
 * Node-aware Bcast for clusters of multi-core nodes: the root's node
 * compresses on all its cores at once, each node's network card receives
 * the compressed bytes once, and what moves inside a node is plain.
 *
 * M nodes; K = the fewest ranks on a node; the buffer is cut into K even
 * slices, local rank k < K of every node handles slice k. M = 3, K = 2,
 * root r0 on node A (r0 r1), nodes B (r2 r3) and C (r4 r5):
 *
 *   1 inside the root's node, plain: the root scatters the slices
 *        r0: s0 (its own)   r1 <- s1
 *      and the range of the root's buffer (REL) from the ranges of the
 *      slices, on every core of the node at once
 *   2 each slice compressed once, by its rank on the root's node, in
 *     parallel, chunk by chunk (ZMPI_CHUNK elements; Zk.i: chunk i of
 *     slice k):   r0: Z0.0 = compress(s0.0), Z0.1, ...   r1: Z1.0, ...
 *   3 across the nodes, while the next chunks are compressed: each slice's
 *     chunks broadcast among the ranks of its local rank, one per node,
 *     down the pipelined binomial tree of `pipelined` (each inner rank
 *     forwards a chunk's bytes as they are, then decodes it):
 *        Z0.i: r0 -> r2, r4        Z1.i: r1 -> r3, r5
 *     and every one of them, the compressing ones too, decodes its slice
 *   4 inside every node, plain: the decompressed slices allgathered
 *        (the root keeps its buffer: it decodes its own slice for its
 *        node's ranks and receives theirs into scratch)
 *
 * A node's NIC receives each slice's compressed bytes once and sends them
 * to at most log2 M nodes; the root's node codes on K cores instead of one,
 * and coding, the network and decoding overlap chunk by chunk.
 *
 * Error: one compression per element, in both scopes: ABS <= eb; REL <=
 * rel * (max - min) of the root's whole buffer (found by the ranks of its
 * node together, step 1). The root's buffer is unchanged;
 * every other rank, on the root's node too, holds the same decompressed
 * values.
 *
 * Selected by default when the communicator spans more than one node and
 * some node holds more than one of its ranks (src/core/topo.c); with the
 * layout unknown, or a slice whose worst-case stream exceeds INT_MAX bytes,
 * it runs scatter_allgather.
 */
#include <limits.h>
#include <stdint.h>

#include "coll/bcast/bcast.h"
#include "coll/common/movement.h"
#include "coll/common/node.h"

/* The bound of the compressions, set on the ranks of the root's node: ABS
 * as configured, REL from the range of the root's whole buffer, which the
 * node's ranks find together (each the range of the slice it holds, then a
 * small allreduce over the node) instead of the root alone. */
static int node_bound(zmpi_call *c, const void *mine, size_t n, MPI_Comm node)
{
    if (c->mode != ZMPI_EB_REL)
        return zmpi_call_bound(c, 1, NULL, 0);
    double lo, hi, mm[2];
    zmpi_value_range(mine, n, c->dt, &lo, &hi, NULL); /* +inf, -inf for an empty slice */
    double part[2] = {-lo, hi};
    int rc = PMPI_Allreduce(part, mm, 2, MPI_DOUBLE, MPI_MAX, node);
    if (rc == MPI_SUCCESS)
        zmpi_call_bound_range(c, 1, -mm[0], mm[1]);
    return rc;
}

int zmpi_bcast_node(zmpi_call *c, void *buf, size_t count, int root)
{
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS;
    unsigned char *mine = NULL, *sink = NULL;
    const zmpi_topo *t = atomic_load(&c->st->topo);
    size_t cap = zmpi_dm_cap(c, count / (size_t)(t ? t->min_local : 1) + 1);
    zmpi_node_job j;

    if (!t || t->size != c->size || count > (size_t)INT_MAX || cap > (size_t)INT_MAX) {
        if (c->mode == ZMPI_EB_REL && c->rank == root) { /* its bound: the root's range (bcast.c's bound) */
            double lo, hi;
            zmpi_value_range(buf, count, c->dt, &lo, &hi, NULL);
            zmpi_call_bound_range(c, 1, lo, hi);
        } else if ((rc = zmpi_call_bound(c, 1, NULL, 0)) != MPI_SUCCESS) {
            return rc;
        }
        return zmpi_bcast_scatter_allgather(c, buf, count, root);
    }
    zmpi_call_ran(c, ZMPI_BCAST_NODE);
    if (count == 0)
        return MPI_SUCCESS;
    int rnode = t->node_of[root], home = t->node == rnode;
    ZMPI_CHECK(zmpi_node_begin(c, t, count, root, &j));
    size_t n = (size_t)j.counts[j.lr];

    /* (no MPI_IN_PLACE below: not every MPI's algorithms support it - SimGrid's do not) */
    if (c->rank == root) /* receives its node's slices in step 4 */
        ZMPI_CHECK(zmpi_scratch_get(c, count * c->es, &sink));
    ZMPI_CHECK(zmpi_scratch_get(c, (n ? n : 1) * c->es, &mine)); /* the raw, then the decoded slice */
    if (home) { /* 1: the root's node scatters the slices and finds the bound */
        ZMPI_CHECK(PMPI_Scatterv(buf, j.counts, j.displs, c->type, mine, (int)n, c->type, j.root_local, j.node));
        ZMPI_CHECK(node_bound(c, mine, n, j.node));
    }
    if (j.cross != MPI_COMM_NULL) { /* 2 and 3: each slice across the nodes, by pipelined's tree */
        zmpi_call sub;
        zmpi_node_cross_call(c, &j, &sub);
        /* its root decodes too; a corrupt stream is reported after step 4, so
         * that the node's other ranks finish */
        drc = zmpi_bcast_chunks(&sub, mine, n, rnode, 1);
    }
    /* 4: the slices inside every node (the root's buffer stays as it is) */
    ZMPI_CHECK(PMPI_Allgatherv(mine, (int)n, c->type, sink ? sink : buf, j.counts, j.displs, c->type, j.node));
    rc = drc;
fn_exit:
    zmpi_node_end(c, &j);
    zmpi_scratch_put(c, mine);
    zmpi_scratch_put(c, sink);
    return rc;
fn_fail:
    goto fn_exit;
}
