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
 *                  eb / M each; REL: eb = rel * (max - min) over all N
 *                  ranks' inputs, found by one small allreduce here, then
 *                  eb / M each), so |result - exact| <= eb on every rank;
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
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/allreduce/allreduce.h"
#include "coll/common/movement.h"

/* The global value range of every rank's input (REL in result scope):
 * [lo, hi] of the finite values. One small allreduce over comm. */
static int global_range(zmpi_call *c, const void *in, size_t count, double *lo, double *hi)
{
    double mm[2], g[2];
    zmpi_value_range(in, count, c->dt, &mm[0], &mm[1], NULL);
    mm[0] = -mm[0];
    int rc = PMPI_Allreduce(mm, g, 2, MPI_DOUBLE, MPI_MAX, c->comm);
    *lo = -g[0];
    *hi = g[1];
    return rc;
}

/* The even cut of count elements into k slices (the first count % k one
 * element longer) as int counts and displacements of nl ranks (local ranks
 * >= k: none). */
static void slices(size_t count, int k, int nl, int *counts, int *displs)
{
    size_t base = count / (size_t)k, extra = count % (size_t)k, off = 0;
    for (int i = 0; i < nl; i++) {
        size_t n = i < k ? base + ((size_t)i < extra) : 0;
        counts[i] = (int)n;
        displs[i] = (int)off;
        off += n;
    }
}

int zmpi_allreduce_node(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    int rc = MPI_SUCCESS, *counts = NULL, *displs = NULL;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    unsigned char *mine = NULL;
    MPI_Comm node = MPI_COMM_NULL, cross = MPI_COMM_NULL;
    MPI_Request rs = MPI_REQUEST_NULL;
    const zmpi_topo *t = atomic_load(&c->st->topo);

    if (!t || t->size != c->size || count > (size_t)INT_MAX) /* the layout is unknown: flat */
        return zmpi_allreduce_rhd(c, sendbuf, recvbuf, count, op);
    zmpi_call_ran(c, ZMPI_ALLREDUCE_NODE);
    if (count == 0)
        return MPI_SUCCESS;
    int K = t->min_local, L = t->local_size, lr = t->local_rank;
    ZMPI_CHECK(zmpi_topo_comms(t, c->comm, &node, &cross));
    ZMPI_CHECK(zmpi_alloc((size_t)L * sizeof *counts, &counts));
    ZMPI_CHECK(zmpi_alloc((size_t)L * sizeof *displs, &displs));
    slices(count, K, L, counts, displs);

    /* 1: this rank's slice reduced over its node, started first: the range
     * below is computed while the node's ranks exchange their slices */
    size_t n = (size_t)counts[lr];
    ZMPI_CHECK(zmpi_scratch_get(c, (n ? n : 1) * c->es, &mine));
    ZMPI_CHECK(PMPI_Ireduce_scatter(in, mine, counts, c->type, op, node, &rs));

    /* the bound of the inter-node phase: absolute in result scope */
    zmpi_call sub = *c;
    sub.tune = 0; /* the measurement is the whole call's (zmpi_call_end of c) */
    sub.rival = 0;
    if (c->mode == ZMPI_EB_REL && c->scope == ZMPI_SCOPE_RESULT) {
        double lo, hi;
        ZMPI_CHECK(global_range(c, in, count, &lo, &hi));
        double e = c->eb * (hi - lo);
        sub.mode = ZMPI_EB_ABS; /* REL over a zero range (constant or no finite input): lossless */
        sub.eb = !(hi > lo) ? 0 : isfinite(e) ? e : DBL_MAX;
    }
    ZMPI_CHECK(PMPI_Wait(&rs, MPI_STATUS_IGNORE));

    /* 2: the slice reduced across the nodes, compressed */
    if (cross != MPI_COMM_NULL) {
        sub.comm = cross;
        PMPI_Comm_rank(cross, &sub.rank);
        PMPI_Comm_size(cross, &sub.size);
        ZMPI_CHECK(zmpi_allreduce_rhd(&sub, MPI_IN_PLACE, mine, n, op));
        zmpi_call_ran(c, ZMPI_ALLREDUCE_NODE); /* rhd reported itself */
    }

    /* 3: every slice to every rank of the node */
    ZMPI_CHECK(PMPI_Allgatherv(mine, counts[lr], c->type, recvbuf, counts, displs, c->type, node));
fn_exit:
    zmpi_scratch_put(c, mine);
    free(counts);
    free(displs);
    return rc;
fn_fail: /* no request outlives the call */
    PMPI_Wait(&rs, MPI_STATUS_IGNORE);
    goto fn_exit;
}
