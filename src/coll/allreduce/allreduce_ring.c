/*
 * Ring Allreduce = ring Reduce_scatter (reduce_scatter_ring.c) + ring
 * Allgather of compress-once blocks (pieces compressed while in flight; blocks compressed once).
 * Both phases run in zmpi_ring_allreduce (coll/common/reduce_steps.c; the
 * allgather is zmpi_ring_allgather of coll/common/ring.c, per_hop 0).
 *
 * The vector is cut into N even blocks (the first count % N one element
 * longer). Phase 1 leaves the fully reduced block r at rank r, each partial
 * compressed once per step. Phase 2, N = 4, Z[b] = block b compressed once
 * by its owner b:
 *
 *            r0        r1        r2        r3
 *   step 0   Z0->r1    Z1->r2    Z2->r3    Z3->r0    compressed by the owner
 *   step 1   Z3->r1    Z0->r2    Z1->r3    Z2->r0    forwarded bytes
 *   step 2   Z2->r1    Z3->r2    Z0->r3    Z1->r0    forwarded bytes
 *   every rank decompresses Z0..Z3 once, the owner its own block too
 *
 * In step s a rank forwards the bytes received in step s-1 (sent whole, as
 * soon as the step starts) and, while they travel, decompresses them into
 * the result. The owner replaces its exact block by the decompression of
 * its own stream, so all ranks end with bit-identical results, as users of
 * Allreduce rely on (iterative solvers branching on the result, for
 * instance); it costs the owner nothing in the bound.
 *
 * Error. Every element passes N-1 compressions in phase 1 and one in
 * phase 2: N compressions of bound e, result within N*e (SUM: errors add;
 * MIN/MAX: max/min are 1-Lipschitz in each argument, so a recompressed
 * perturbed partial can add e at each step as well).
 *   result scope:  e = eb/N, so |result - exact| <= eb on every rank. REL:
 *                  eb = rel * (max - min) over all ranks' inputs.
 *   message scope: e = eb per compression (ABS): <= N*eb. REL: each
 *                  message within rel * its own range (partials of k ranks
 *                  have up to k times the inputs' range for SUM).
 * Plus the rounding of the reduction in the datatype (order-dependent, as
 * with plain MPI): <= (N-1) * unit roundoff * sum |x_i| for SUM.
 *
 * Edge cases: MPI_IN_PLACE (input in recvbuf; phase 1 reads it before the
 * result is written), count 0 (nothing), count < N (empty blocks send no
 * message), count not divisible by N, one rank (copy), any N.
 */
#include "coll/allreduce/allreduce.h"
#include "coll/common/reduce_steps.h"

int zmpi_allreduce_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    zmpi_call_ran(c, ZMPI_ALLREDUCE_RING);
    return zmpi_ring_allreduce(c, sendbuf, recvbuf, count, op, 0); /* coll/common/reduce_steps.c */
}
