/*
 * Reduce_scatter by recursive halving with compression
 * (coll/common/halving.h), for a power-of-two number of ranks; other
 * numbers of ranks run the ring.
 *
 * Rank r's block (recvcounts[r] elements) is block r of the halving: each
 * rank copies its input vector into scratch, log2 N exchange steps leave
 * block r reduced over all ranks there, and it is copied out. The blocks
 * may have any sizes (also 0).
 *
 * Error: N - 1 merges (a reduction tree over N inputs) of one compression
 * each: result scope eb/(N-1) per compression, so the result is within eb
 * (REL: rel * (max - min) of all ranks' inputs); message scope: each
 * compression within eb (REL: of its own range), the result within
 * (N-1)*eb (ABS) - the same as the ring. What it saves are messages:
 * log2 N per rank instead of N - 1, and the big early halves hold the
 * partials of few ranks (narrow ranges, good ratios).
 */
#include "coll/common/rdb.h"
#include "coll/reduce_scatter/reduce_scatter.h"

int zmpi_reduce_scatter_rhd(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op)
{
    /* other numbers of ranks run the ring, and report it */
    zmpi_call_ran(c, zmpi_is_pow2(c->size) ? ZMPI_REDUCE_SCATTER_RHD : ZMPI_REDUCE_SCATTER_RING);
    return zmpi_reduce_scatter_run(c, sendbuf, recvbuf, recvcounts, op, zmpi_is_pow2(c->size));
}
