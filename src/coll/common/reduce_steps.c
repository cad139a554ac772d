/*
 * Steps shared by the Allreduce and Reduce algorithms (see reduce_steps.h).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/reduce_steps.h"
#include "coll/common/ring.h"
#include "coll/reduce_scatter/reduce_scatter.h"

int zmpi_reduce_begin(zmpi_call *c, const void *in, void *recvbuf, size_t count, int nblocks, double hops,
                      MPI_Op op, zmpi_gsum *g, size_t **counts, size_t **displs, int *go)
{
    int rc = MPI_SUCCESS;

    *go = 0;
    if (count == 0)
        goto fn_exit;
    if (c->size == 1) { /* the reduction of one vector is itself */
        if (in != recvbuf)
            memcpy(recvbuf, in, count * c->es);
        goto fn_exit;
    }
    if (nblocks > 0) {
        ZMPI_CHECK(zmpi_alloc((size_t)nblocks * sizeof **counts, counts));
        ZMPI_CHECK(zmpi_alloc(((size_t)nblocks + 1) * sizeof **displs, displs));
        zmpi_blocks_even(count, nblocks, *counts, *displs);
        (*displs)[nblocks] = count;
    }
    if (g && nblocks > 0)
        ZMPI_CHECK(zmpi_gsum_begin(c, op, in, count, *counts, *displs, nblocks, hops, 1, g));
    else
        ZMPI_CHECK(zmpi_call_bound(c, hops, in, count));
    *go = 1;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_ring_allreduce(zmpi_call *c, const void *sendbuf, void *recvbuf, size_t count, MPI_Op op,
                        int per_hop)
{
    int rc = MPI_SUCCESS, corrupt = MPI_SUCCESS, n = c->size, go = 0;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    size_t *counts = NULL, *displs = NULL;
    zmpi_gsum g = {0};
    zmpi_gtable t = {0};
    unsigned char *res = recvbuf;

    /* per_hop (cprp2p, the baseline) stays on the classic path */
    ZMPI_CHECK(zmpi_reduce_begin(c, in, recvbuf, count, n, per_hop ? 2.0 * (n - 1) : (double)n, op,
                                 per_hop ? NULL : &g, &counts, &displs, &go));
    if (!go)
        goto fn_exit;
    if (g.d) { /* on grid codes: summed packed, gathered in the codes, decoded at the end */
        ZMPI_CHECK(zmpi_gtable_reduce_scatter(c, &g, counts, displs, 0, ZMPI_TAG_ALLREDUCE, &t, &corrupt));
        ZMPI_CHECK(zmpi_gsum_spread(c, &g, counts, displs, c->rank));
        res = (unsigned char *)g.d;
    } else {
        ZMPI_CHECK(zmpi_ring_reduce_scatter(c, in, res + displs[c->rank] * c->es, counts, displs, op,
                                            ZMPI_TAG_ALLREDUCE, &corrupt));
    }
    ZMPI_CHECK(zmpi_ring_allgather(c, res, counts, displs, per_hop, ZMPI_TAG_ALLREDUCE, &corrupt));
    if (g.d)
        ZMPI_CHECK(zmpi_gsum_decode(c, &g, counts, displs, 0, n, recvbuf));
    rc = corrupt;
fn_exit:
    zmpi_gtable_free(c, &t);
    zmpi_gsum_end(c, &g);
    free(counts);
    free(displs);
    return rc;
fn_fail:
    goto fn_exit;
}
