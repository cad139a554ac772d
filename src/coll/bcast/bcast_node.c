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
 *   2 each slice compressed once, by its rank on the root's node, in
 *     parallel:  r0: Z0 = compress(s0)   r1: Z1 = compress(s1)
 *   3 across the nodes: each slice's stream broadcast among the ranks of
 *     its local rank, one per node, down the binomial tree of `binomial`
 *     (each inner rank forwards the bytes as they are):
 *        Z0: r0 -> r2, r4        Z1: r1 -> r3, r5
 *     and every one of them but the root decompresses its slice
 *   4 inside every node, plain: the decompressed slices allgathered
 *        (the root keeps its buffer: it decodes its own slice for its
 *        node's ranks and receives theirs into scratch)
 *
 * A node's NIC receives each slice's compressed bytes once and sends them
 * to at most log2 M nodes; the root's node codes on K cores instead of one.
 *
 * Error: one compression per element, in both scopes: ABS <= eb; REL <=
 * rel * (max - min) of the root's whole buffer (the root's range is sent to
 * the ranks of its node that compress). The root's buffer is unchanged;
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
 * as configured, REL from the root's range (sent over the node). */
static int node_bound(zmpi_call *c, const void *buf, size_t count, int root, int root_local, MPI_Comm node)
{
    if (c->mode != ZMPI_EB_REL)
        return zmpi_call_bound(c, 1, NULL, 0);
    double mm[2] = {0, 0};
    if (c->rank == root)
        zmpi_value_range(buf, count, c->dt, &mm[0], &mm[1], NULL);
    int rc = PMPI_Bcast(mm, 2, MPI_DOUBLE, root_local, node);
    if (rc == MPI_SUCCESS)
        zmpi_call_bound_range(c, 1, mm[0], mm[1]);
    return rc;
}

int zmpi_bcast_node(zmpi_call *c, void *buf, size_t count, int root)
{
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS;
    unsigned char *z = NULL, *mine = NULL, *sink = NULL;
    const zmpi_topo *t = atomic_load(&c->st->topo);
    size_t cap = zmpi_dm_cap(c, count / (size_t)(t ? t->min_local : 1) + 1);
    zmpi_node_job j;
    zmpi_dm_reqs r = {0};
    uint64_t lenbuf = 0;

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
    if (home) { /* 1 and 2: the root's node scatters and compresses */
        ZMPI_CHECK(node_bound(c, buf, count, root, j.root_local, j.node));
        ZMPI_CHECK(PMPI_Scatterv(buf, j.counts, j.displs, c->type, mine, (int)n, c->type, j.root_local, j.node));
    }
    if (j.cross != MPI_COMM_NULL) { /* 3: each slice's stream across the nodes, by binomial's tree */
        size_t len = 0;
        zmpi_call sub = *c;
        sub.comm = j.cross;
        PMPI_Comm_rank(j.cross, &sub.rank);
        PMPI_Comm_size(j.cross, &sub.size);
        ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
        if (home)
            ZMPI_CHECK(zmpi_dm_compress(c, mine, n, z, cap, &len));
        ZMPI_CHECK(zmpi_bcast_stream(&sub, z, cap, &len, rnode, &r, &lenbuf));
        /* everyone but the root holds the decompressed values (the root
         * decodes its own slice for its node's ranks), while the stream is
         * forwarded */
        if (n > 0) /* an empty slice has an empty stream */
            drc = zmpi_block_decompress(c, z, len, mine, n);
        else if (len > 0)
            drc = MPI_ERR_OTHER;
        ZMPI_CHECK(zmpi_dm_waitall(&r));
    }
    /* 4: the slices inside every node (the root's buffer stays as it is) */
    ZMPI_CHECK(PMPI_Allgatherv(mine, (int)n, c->type, sink ? sink : buf, j.counts, j.displs, c->type, j.node));
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_node_end(c, &j);
    zmpi_scratch_put(c, z);
    zmpi_scratch_put(c, mine);
    zmpi_scratch_put(c, sink);
    return rc;
fn_fail:
    goto fn_exit;
}
