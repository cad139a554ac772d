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
#include <stdlib.h>
#include <string.h>

#include "coll/common/halving.h"
#include "coll/common/rdb.h"
#include "coll/common/ring.h"
#include "coll/reduce_scatter/reduce_scatter.h"

int zmpi_reduce_scatter_rhd(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts, MPI_Op op)
{
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    size_t *counts = NULL, *displs = NULL, total = 0;

    if (!zmpi_is_pow2(n))
        return zmpi_reduce_scatter_ring(c, sendbuf, recvbuf, recvcounts, op);
    rc = zmpi_alloc((size_t)n * sizeof *counts, &counts);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)n * sizeof *displs, &displs);
    if (rc)
        goto fn_exit;
    for (int b = 0; b < n; b++) {
        counts[b] = (size_t)recvcounts[b];
        displs[b] = total;
        total += counts[b];
    }
    if (total == 0)
        goto fn_exit;
    if (n == 1) {
        if (in != recvbuf)
            memmove(recvbuf, in, total * c->es);
        goto fn_exit;
    }
    rc = zmpi_call_bound(c, (double)(n - 1), in, total);
    if (rc == MPI_SUCCESS)
        rc = zmpi_halving_reduce_scatter_copy(c, in, recvbuf, total, counts, displs, op, ZMPI_TAG_REDUCE_SCATTER,
                                              &corrupt);
    if (rc == MPI_SUCCESS)
        rc = corrupt;
fn_exit:
    free(counts);
    free(displs);
    return rc;
}
