/*
 * Node-aware Allgather(v) for clusters of multi-core nodes: each block is
 * compressed once by its owner and crosses the network compressed, each
 * node decodes the other nodes' blocks once, spread over all its cores,
 * and what moves inside a node is plain.
 *
 * M nodes of L ranks each (every node the same L). Group k: the ranks of
 * local rank k, one per node (the cross communicator of src/core/topo.c).
 * M = 2, L = 2, ranks 0 1 on node A and 2 3 on node B, blocks b0..b3:
 *
 *   1 across the nodes, compressed, every group at once: an Allgatherv of
 *     its members' blocks by `rdb` (compress once, decode once), each
 *     block decoded straight into its place of the receive buffer:
 *        group 0: r0 <-> r2 (b0, b2)     group 1: r1 <-> r3 (b1, b3)
 *   2 inside every node, plain: each rank sends the blocks of its group
 *     (its own exact, the others' decoded) to every other rank of its
 *     node, which receives them into their places (one indexed datatype
 *     per group: no copies):
 *        A: r0 -> r1: b0, b2     r1 -> r0: b1, b3      (B alike)
 *
 * A node's network card carries every foreign block once per node,
 * compressed; a rank decodes the M - 1 foreign blocks of its group, not
 * N - 1 blocks, so the node's L cores share the decoding. Every block of a
 * rank's own node arrives exact (shared memory moves it faster than a
 * codec); every rank of a node holds the same values.
 *
 * Error per element: one compression, as `rdb` - ABS <= eb; REL <= rel *
 * (max - min) of the owner's block; message scope = result scope. The
 * blocks of a rank's own node are exact.
 *
 * Selected by default when the communicator spans more than one node and
 * some node holds more than one of its ranks (src/core/topo.c). With the
 * layout unknown, one node, or nodes of different sizes (a short last
 * node: the groups would not cover every rank), it runs `rdb`.
 */
#include <stdlib.h>

#include "coll/allgather/allgather.h"
#include "coll/common/node.h"

int zmpi_allgatherv_node(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                         const int *displs)
{
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS;
    const zmpi_topo *t = atomic_load(&c->st->topo);
    if (!t || t->size != c->size || t->nnodes < 2 || t->min_local != t->max_local)
        return zmpi_allgatherv_rdb(c, sendbuf, recvbuf, recvcounts, displs);
    int nreq = 0;
    zmpi_node_groups g = {0};
    zmpi_node_job j;

    ZMPI_CHECK(zmpi_node_begin(c, t, 0, -1, &j));
    ZMPI_CHECK(zmpi_node_groups_begin(t, &g));

    /* 1: this rank's group across the nodes, compressed (rdb reports itself) */
    (void)zmpi_node_group(&g, j.lr, recvcounts, displs);
    zmpi_call sub;
    zmpi_node_cross_call(c, &j, &sub);
    /* a block that did not decode is reported after step 2, so that the
     * node's other ranks finish */
    drc = zmpi_allgatherv_rdb(&sub, sendbuf, recvbuf, g.gc, g.gd);
    zmpi_call_ran(c, ZMPI_ALLGATHER_NODE);

    /* 2: every group's blocks to the other ranks of the node, plain */
    ZMPI_CHECK(zmpi_node_group_types(&g, recvcounts, displs, c->type));
    for (int q = 0; q < g.L; q++) {
        if (q == j.lr)
            continue;
        if (g.gt[q] != MPI_DATATYPE_NULL)
            ZMPI_CHECK(PMPI_Irecv(recvbuf, 1, g.gt[q], q, ZMPI_TAG_ALLGATHER, j.node, &g.req[nreq++]));
        if (g.gt[j.lr] != MPI_DATATYPE_NULL)
            ZMPI_CHECK(PMPI_Isend(recvbuf, 1, g.gt[j.lr], q, ZMPI_TAG_ALLGATHER, j.node, &g.req[nreq++]));
    }
    ZMPI_CHECK(PMPI_Waitall(nreq, g.req, MPI_STATUSES_IGNORE));
    nreq = 0;
    rc = drc;
fn_exit:
    if (nreq > 0) /* an error path: no request outlives the call */
        PMPI_Waitall(nreq, g.req, MPI_STATUSES_IGNORE);
    zmpi_node_groups_free(&g);
    zmpi_node_end(c, &j);
    return rc;
fn_fail:
    goto fn_exit;
}
