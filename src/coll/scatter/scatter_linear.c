/*
 * Scatter(v), linear, compress once.
 *
 *   root r:  for j = 1 .. N-1, i = (r + j) mod N:
 *              Z_i = compress(part i)      one compression per part
 *              r ─Z_i─▶ i                  sent at once (Isend), so part i
 *                                          travels while part i+1 is compressed
 *   rank i:  part i = decompress(Z_i)      one decompression
 *   root:    its own part is copied (exact), unless MPI_IN_PLACE
 *
 * Sizes: variable-length transfer (movement.h): rank i posts a buffer of the
 * worst-case stream size for recvcount elements, the root computes the same
 * capacity from sendcounts[i]; the stream's size comes from the status.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the element's part; message scope = result scope.
 *
 * Edge cases: parts of 0 elements send nothing; uneven parts (Scatterv);
 * any root; MPI_IN_PLACE at the root; a part smaller than ZMPI_MIN_BYTES
 * travels uncompressed (v-variant; zmpi_block_compress).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/scatter/scatter.h"

int zmpi_scatterv_linear(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                         void *recvbuf, int recvcount, int root)
{
    zmpi_call_ran(c, ZMPI_SCATTER_LINEAR);
    int rc = MPI_SUCCESS, size = c->size;
    unsigned char *z = NULL;
    uint64_t *lenbuf = NULL;
    zmpi_dm_reqs r = {0};
    zmpi_dm_vrecv in = {0};

    if (c->rank != root) {
        size_t cap = zmpi_dm_cap(c, (size_t)recvcount);
        if (cap == 0)
            goto fn_exit; /* nothing to receive */
        ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in, z, cap, root, ZMPI_TAG_SCATTER));
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in));
        ZMPI_CHECK(zmpi_dm_decompress(c, z, in.len, recvbuf, (size_t)recvcount));
        goto fn_exit;
    }

    /* the root */
    size_t total = 0, off = 0;
    for (int i = 0; i < size; i++)
        if (i != root)
            total += zmpi_dm_cap(c, (size_t)sendcounts[i]);
    ZMPI_CHECK(zmpi_scratch_get(c, total, &z));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *lenbuf, &lenbuf));
    for (int j = 1; j < size; j++) {
        int i = (root + j) % size;
        size_t n = (size_t)sendcounts[i], cap = zmpi_dm_cap(c, n), len = 0;
        const char *src = (const char *)sendbuf + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es;
        ZMPI_CHECK(zmpi_dm_compress(c, src, n, z + off, cap, &len));
        ZMPI_CHECK(zmpi_dm_isend_var(c, z + off, len, cap, i, ZMPI_TAG_SCATTER, &lenbuf[i], &r));
        ZMPI_CHECK(zmpi_dm_progress(&r));
        off += len; /* what remains is still >= the worst case of the remaining parts */
    }
    ZMPI_CHECK(zmpi_dm_scatter_own(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root));
    ZMPI_CHECK(zmpi_dm_waitall(&r));
fn_exit:
    zmpi_dm_reqs_free(&r);
    free(lenbuf);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    zmpi_dm_vrecv_drop(&in);
    goto fn_exit;
}
