/*
 * "CPRP2P" Allreduce: the published per-hop baseline, kept so that
 * benchmarks can show what compress-once saves. Phase 1 is the ring
 * Reduce_scatter (reduce_scatter_ring.c); phase 2 is a ring Allgather in
 * which every hop decompresses and recompresses, N = 4, Z(x) = x compressed
 * by the sender, b' = block b after one more decompression (both phases:
 * zmpi_ring_allreduce of coll/common/reduce_steps.c, the allgather
 * zmpi_ring_allgather of coll/common/ring.c with per_hop 1):
 *
 *            r0          r1          r2          r3
 *   step 0   Z(b0)->r1   Z(b1)->r2   Z(b2)->r3   Z(b3)->r0   exact own block
 *   step 1   Z(b3')->r1  Z(b0')->r2  Z(b1')->r3  Z(b2')->r0  recompressed
 *   step 2   Z(b2'')->r1 Z(b3'')->r2 Z(b0'')->r3 Z(b1'')->r0 recompressed
 *
 * The owner keeps its exact block, so ranks do NOT end with identical
 * results (another reason it is only a baseline).
 *
 * Error. Block b at a rank d ring steps after its owner ((rank - b) mod N)
 * has passed N-1 + d compressions, at most 2N-2 (N >= 2), each of bound e:
 *   result scope:  e = eb/(2N-2), so |result - exact| <= eb on every rank
 *                  (REL: eb = rel * (max - min) over all ranks' inputs);
 *                  the price is a tighter per-compression bound than the
 *                  ring's eb/N, hence a lower ratio.
 *   message scope: e = eb per compression: up to (2N-2)*eb (ABS), the error
 *                  growth the compress-once ring avoids.
 * Plus the rounding of the reduction in the datatype, as for the ring.
 *
 * Edge cases: as the ring (MPI_IN_PLACE, count 0, count < N, uneven blocks,
 * one rank, any N).
 */
#include "coll/allreduce/allreduce.h"
#include "coll/common/reduce_steps.h"

int zmpi_allreduce_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op)
{
    zmpi_call_ran(c, ZMPI_ALLREDUCE_CPRP2P);
    return zmpi_ring_allreduce(c, sendbuf, recvbuf, count, op, 1); /* coll/common/reduce_steps.c */
}
