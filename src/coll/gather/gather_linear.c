/*
 * Gather(v), linear, compress once (each block compressed once at its origin, decompressed once at its
 * destination).
 *
 *   rank i ≠ root:  Z_i = compress(block i);  i ─Z_i─▶ root
 *   root r:         posts all N-1 receives up front, then in rank order
 *                   r+1, r+2, ...: waits for Z_i and decompresses it into
 *                   its place (decompression overlaps the later arrivals);
 *                   its own block is copied (exact), unless MPI_IN_PLACE
 *
 * Sizes: variable-length transfer (movement.h): the root posts, per rank, a
 * buffer of the worst-case stream size for recvcounts[i] elements; rank i
 * computes the same capacity from its sendcount; the size comes from the
 * status.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the element's block; message scope = result scope.
 *
 * Edge cases: blocks of 0 elements send nothing; uneven blocks (Gatherv);
 * any root; MPI_IN_PLACE at the root; blocks below ZMPI_MIN_BYTES travel
 * uncompressed (v-variant). A corrupt stream is reported after every
 * receive has completed.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/gather/gather.h"

int zmpi_gatherv_linear(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                        const int *recvcounts, const int *displs, int root)
{
    zmpi_call_ran(c, ZMPI_GATHER_LINEAR);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size;
    unsigned char *z = NULL;
    uint64_t lenbuf = 0;
    zmpi_dm_reqs r = {0};
    zmpi_dm_vrecv *in = NULL;

    if (c->rank != root) {
        size_t n = (size_t)sendcount, cap = zmpi_dm_cap(c, n), len = 0;
        if (cap == 0)
            goto fn_exit;
        ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
        ZMPI_CHECK(zmpi_dm_compress(c, sendbuf, n, z, cap, &len));
        ZMPI_CHECK(zmpi_dm_isend_var(c, z, len, cap, root, ZMPI_TAG_GATHER, &lenbuf, &r));
        ZMPI_CHECK(zmpi_dm_waitall(&r));
        goto fn_exit;
    }

    /* the root */
    size_t total = 0, off = 0;
    for (int i = 0; i < size; i++)
        if (i != root)
            total += zmpi_dm_cap(c, (size_t)recvcounts[i]);
    ZMPI_CHECK(zmpi_scratch_get(c, total, &z));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *in, &in));
    memset(in, 0, (size_t)size * sizeof *in);
    for (int j = 1; j < size; j++) {
        int i = (root + j) % size;
        size_t cap = zmpi_dm_cap(c, (size_t)recvcounts[i]);
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in[i], z + off, cap, i, ZMPI_TAG_GATHER));
        off += cap;
    }
    drc = zmpi_dm_gather_own(c, sendbuf, sendcount, recvbuf, recvcounts, displs, root);
    for (int j = 1; j < size; j++) {
        int i = (root + j) % size;
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in[i]));
        int e = zmpi_dm_decompress(c, in[i].buf, in[i].len,
                                   (char *)recvbuf + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es,
                                   (size_t)recvcounts[i]);
        drc = drc ? drc : e;
    }
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&r);
    free(in);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    for (int i = 0; in && i < size; i++)
        zmpi_dm_vrecv_drop(&in[i]);
    goto fn_exit;
}
