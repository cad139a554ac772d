/*
 * Node-aware Reduce for clusters of multi-core nodes: reduced plain inside
 * each node, compressed across the nodes with every core of a node coding
 * a slice, gathered plain inside the root's node.
 *
 * M nodes; K = the fewest ranks on a node; the vector is cut into K even
 * slices, local rank k < K of every node owns slice k. M = 2, K = 2, root
 * r1 on node A (r0 r1), node B (r2 r3):
 *
 *   1 intra-node reduce-scatter, plain (MPI_Reduce_scatter on the node):
 *        A: r0 <- s0 of r0, r1   r1 <- s1        B: r2 <- s0   r3 <- s1
 *   2 inter-node reduce of each slice to the root's node, compressed, the K
 *     slices at once (the rsg algorithm over the M ranks of local rank k):
 *        s0: r2 -> r0            s1: r3 -> r1
 *   3 intra-node gather to the root, plain (MPI_Gatherv on its node):
 *        r1 <- s0 from r0, its own s1
 *
 * The network cards carry the compressed slices only, and all K cores of
 * every node code at once.
 *
 * Error. Phases 1 and 3 are exact (phase 1 rounds in the datatype, as
 * plain MPI does); phase 2 is rsg over M members: M compressions per
 * element (the root node's own slice M - 1).
 *   result scope:  eb / M each (REL: eb = rel * (max - min) of the inputs'
 *                  slices the ranks own after phase 1, as in allreduce_node.c:
 *                  never more than rel times the range of all N inputs),
 *                  so the root's result is within eb.
 *   message scope: each compression within eb (REL: of what it
 *                  compresses): the result within M * eb.
 *
 * Selected by default when the communicator spans more than one node and
 * some node holds more than one of its ranks (src/core/topo.c); with the
 * layout unknown it runs rsg over all ranks.
 */
#include <limits.h>

#include "coll/common/node.h"
#include "coll/reduce/reduce.h"

int zmpi_reduce_node(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op, int root)
{
    int rc = MPI_SUCCESS;
    const void *in = (c->rank == root && sendbuf == MPI_IN_PLACE) ? recvbuf : sendbuf;
    const zmpi_topo *t = atomic_load(&c->st->topo);
    zmpi_node_job j;
    zmpi_call sub;

    if (!t || t->size != c->size || count > (size_t)INT_MAX) /* the layout is unknown: flat */
        return zmpi_reduce_rsg(c, sendbuf, recvbuf, count, op, root);
    zmpi_call_ran(c, ZMPI_REDUCE_NODE);
    if (count == 0)
        return MPI_SUCCESS;
    int rnode = t->node_of[root], n;
    ZMPI_CHECK(zmpi_node_begin(c, t, count, root, &j));
    n = j.counts[j.lr];
    /* 1: this rank's slice reduced over its node (and the bound of phase 2) */
    ZMPI_CHECK(zmpi_node_reduce_scatter(c, &j, in, op, &sub));
    /* 2: the slice reduced across the nodes to the root's node, compressed */
    if (j.cross != MPI_COMM_NULL) {
        ZMPI_CHECK(zmpi_reduce_rsg(&sub, sub.rank == rnode ? MPI_IN_PLACE : j.mine, j.mine, (size_t)n, op, rnode));
        zmpi_call_ran(c, ZMPI_REDUCE_NODE); /* rsg reported itself */
    }
    /* 3: the slices to the root */
    if (t->node == rnode)
        ZMPI_CHECK(PMPI_Gatherv(j.mine, n, c->type, recvbuf, j.counts, j.displs, c->type, j.root_local, j.node));
fn_exit:
    zmpi_node_end(c, &j);
    return rc;
fn_fail:
    goto fn_exit;
}
