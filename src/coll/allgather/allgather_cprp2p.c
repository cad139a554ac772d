/*
 * Allgather(v), ring, compress per hop ("CPRP2P", the published baseline;
 * for comparison in benchmarks only).
 *
 * Same ring as `ring`, but each step is a compressed point-to-point message
 * of its own: the block forwarded in step s >= 1 is the one decompressed in
 * step s-1, compressed again. 4 ranks, rank r in step s:
 *
 *   s = 0   Z = z(block r)          ─▶ r+1;  block r-1 = unz(from r-1)
 *   s = 1   Z = z(block r-1)        ─▶ r+1;  block r-2 = unz(from r-1)
 *   s = 2   Z = z(block r-2)        ─▶ r+1;  block r-3 = unz(from r-1)
 *
 * so a block that has travelled d steps was compressed d times, and every
 * rank compresses N-1 times instead of once. Sizes: variable-length
 * transfer per step (worst-case receive buffer, size from the status).
 *
 * Error per element of a block received after d steps (d <= N-1): ABS
 * <= d * e. Message scope: e = eb, so up to (N-1) * eb. Result scope: the
 * dispatcher sets e = eb / (N-1) (REL: rel * range of all blocks / (N-1)),
 * so <= eb. The owner's copy of its block is exact.
 *
 * Edge cases: blocks of 0 elements send nothing; uneven blocks; MPI_IN_PLACE;
 * any N >= 2.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/allgather/allgather.h"
#include "coll/common/movement.h"

int zmpi_allgatherv_cprp2p(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                           const int *displs)
{
    zmpi_call_ran(c, ZMPI_ALLGATHER_CPRP2P);
    int rc = MPI_SUCCESS, size = c->size, rank = c->rank;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    size_t maxcap = 0;
    unsigned char *sz = NULL, *rz = NULL;
    uint64_t lenbuf = 0;
    zmpi_dm_reqs r = {0};
    zmpi_dm_vrecv in = {0};

    if (size < 2)
        goto fn_exit;
    if (sendbuf != MPI_IN_PLACE && recvcounts[rank] > 0)
        memcpy((char *)recvbuf + (ptrdiff_t)displs[rank] * (ptrdiff_t)c->es, sendbuf,
               (size_t)recvcounts[rank] * c->es);
    for (int i = 0; i < size; i++) {
        size_t cap = zmpi_dm_cap(c, (size_t)recvcounts[i]);
        maxcap = cap > maxcap ? cap : maxcap;
    }
    ZMPI_CHECK(zmpi_scratch_get(c, maxcap, &sz));
    ZMPI_CHECK(zmpi_scratch_get(c, maxcap, &rz));
    for (int s = 0; s < size - 1; s++) {
        int sb = (rank - s + size) % size, rb = (rank - s - 1 + size) % size;
        size_t ns = (size_t)recvcounts[sb], nr = (size_t)recvcounts[rb], len = 0;
        char *sdata = (char *)recvbuf + (ptrdiff_t)displs[sb] * (ptrdiff_t)c->es;
        char *rdata = (char *)recvbuf + (ptrdiff_t)displs[rb] * (ptrdiff_t)c->es;
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in, rz, zmpi_dm_cap(c, nr), left, ZMPI_TAG_ALLGATHER));
        ZMPI_CHECK(zmpi_dm_compress(c, sdata, ns, sz, maxcap, &len)); /* again, for every hop */
        ZMPI_CHECK(zmpi_dm_isend_var(c, sz, len, zmpi_dm_cap(c, ns), right, ZMPI_TAG_ALLGATHER, &lenbuf, &r));
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in));
        ZMPI_CHECK(zmpi_dm_decompress(c, rz, in.len, rdata, nr));
        ZMPI_CHECK(zmpi_dm_waitall(&r));
    }
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_scratch_put(c, sz);
    zmpi_scratch_put(c, rz);
    return rc;
fn_fail:
    zmpi_dm_vrecv_drop(&in);
    goto fn_exit;
}
