/*
 * Node-aware Allreduce for clusters of multi-core nodes: what stays on a
 * node moves plain through shared memory, only what crosses a node's
 * network card is compressed, and every core of a node codes its own slice.
 *
 * M nodes; K = the fewest ranks on a node (every node the same K on a
 * cluster: ranks per node); the vector is cut into K even slices. Local
 * rank k < K of every node owns slice k. M = 2, K = 4 (ranks 0-3 on node
 * A, 4-7 on node B), slices s0..s3:
 *
 *   1 intra-node reduce-scatter, plain (MPI_Reduce_scatter on the node):
 *        A: r0 <- s0 of r0..r3   r1 <- s1   r2 <- s2   r3 <- s3
 *        B: r4 <- s0 of r4..r7   r5 <- s1   r6 <- s2   r7 <- s3
 *   2 inter-node allreduce of each slice, compressed, the K slices at once
 *     (one rank per node in each: the rhd algorithm over M members):
 *        s0: r0 <-> r4   s1: r1 <-> r5   s2: r2 <-> r6   s3: r3 <-> r7
 *   3 intra-node allgather, plain (MPI_Allgatherv on the node):
 *        every rank of a node gets s0..s3 from its owners
 *
 * A node's network card carries the compressed slices only: about
 * 2 (M-1)/M of the vector / ratio, against 2 (N-1)/N of it uncompressed by
 * a flat ring - and all K cores of the node compress and decompress at
 * once, a slice each. Ranks of local rank K or more (on a node fuller than
 * the emptiest) take part in phases 1 and 3 only.
 *
 * Error. Phases 1 and 3 are exact (phase 1 rounds in the datatype, as
 * plain MPI does). Phase 2 is rhd over M members whose inputs are the
 * nodes' partial reductions: M compressions per element.
 *   result scope:  the user's bound eb split over M compressions (ABS:
 *                  eb / M each; REL: eb = rel * (max - min) of the
 *                  inputs' slices the ranks own after phase 1 - each rank
 *                  scans 1/K of its input while the node reduces, one small
 *                  allreduce - a part of all N inputs, so never more than
 *                  rel times their range; then eb / M each), so |result -
 *                  exact| <= eb (REL: rel * the range of all N inputs) on
 *                  every rank;
 *                  SUMs on grid codes as in rhd (coll/common/gsum.h).
 *   message scope: each compression within eb (ABS) or rel * the range of
 *                  what it compresses (REL): the result within M * eb,
 *                  not the N * eb of the flat algorithms.
 * Every rank gets the bit-identical result: rhd gives all members of a
 * slice the same one, and phase 3 copies it.
 *
 * Selected by default when the communicator spans more than one node and
 * some node holds more than one of its ranks (topology: src/core/topo.c);
 * with the layout unknown it runs rhd over all ranks.
 */
#include <limits.h>

#include "coll/allreduce/allreduce.h"
#include "coll/common/node.h"

int zmpi_allreduce_node(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    int rc = MPI_SUCCESS;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    const zmpi_topo *t = atomic_load(&c->st->topo);
    zmpi_node_job j;
    zmpi_call sub;

    if (!t || t->size != c->size || count > (size_t)INT_MAX) /* the layout is unknown: flat */
        return zmpi_allreduce_rhd(c, sendbuf, recvbuf, count, op);
    zmpi_call_ran(c, ZMPI_ALLREDUCE_NODE);
    if (count == 0)
        return MPI_SUCCESS;
    ZMPI_CHECK(zmpi_node_begin(c, t, count, -1, &j));
    /* 1: this rank's slice reduced over its node (and the bound of phase 2) */
    ZMPI_CHECK(zmpi_node_reduce_scatter(c, &j, in, op, &sub));
    /* 2: the slice reduced across the nodes, compressed */
    if (j.cross != MPI_COMM_NULL) {
        ZMPI_CHECK(zmpi_allreduce_rhd(&sub, MPI_IN_PLACE, j.mine, (size_t)j.counts[j.lr], op));
        zmpi_call_ran(c, ZMPI_ALLREDUCE_NODE); /* rhd reported itself */
    }
    /* 3: every slice to every rank of the node */
    ZMPI_CHECK(PMPI_Allgatherv(j.mine, j.counts[j.lr], c->type, recvbuf, j.counts, j.displs, c->type, j.node));
fn_exit:
    zmpi_node_end(c, &j);
    return rc;
fn_fail:
    goto fn_exit;
}
