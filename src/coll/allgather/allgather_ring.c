/*
 * Allgather(v), ring, compress once (SPEC 2.3).
 *
 * Every rank compresses its own block once (Z_r); one small allgather of
 * integers tells every rank the size of every Z; then N-1 ring steps forward
 * the compressed blocks. 4 ranks, step s: rank r sends Z_(r-s) to r+1 and
 * receives Z_(r-s-1) from r-1:
 *
 *            rank 0      rank 1      rank 2      rank 3
 *   sizes    |Z_0|...|Z_3| everywhere (PMPI_Allgather of one uint64 each)
 *   s = 0    Z_0 ─▶ 1    Z_1 ─▶ 2    Z_2 ─▶ 3    Z_3 ─▶ 0
 *   s = 1    Z_3 ─▶ 1    Z_0 ─▶ 2    Z_1 ─▶ 3    Z_2 ─▶ 0
 *   s = 2    Z_2 ─▶ 1    Z_3 ─▶ 2    Z_0 ─▶ 3    Z_1 ─▶ 0
 *
 * A rank decompresses the block received in step s while step s+1 is in
 * flight (and the last one after the loop): N-1 decompressions, one per
 * foreign block. Its own block is copied (or already in place), never
 * decompressed: the owner keeps its exact data. The compressed blocks are
 * stored back to back in one buffer (offsets from the sizes), so each step
 * is an exact transfer (movement.h) of known length.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the owner's block; message scope = result scope. The owner's copy of
 * its block is exact.
 *
 * Edge cases: blocks of 0 elements have size 0 (no message); uneven blocks
 * (Allgatherv); MPI_IN_PLACE; any N >= 2 (a ring needs no power of two);
 * blocks below ZMPI_MIN_BYTES travel uncompressed (v-variant).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/allgather/allgather.h"
#include "coll/common/movement.h"

int zmpi_allgatherv_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                         const int *displs)
{
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size, rank = c->rank;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size, prev = -1;
    char *own = (char *)recvbuf + (ptrdiff_t)displs[rank] * (ptrdiff_t)c->es;
    size_t n = (size_t)recvcounts[rank], cap = zmpi_dm_cap(c, n), len = 0, total = 0;
    unsigned char *mine = NULL, *z = NULL;
    uint64_t mylen = 0, *lens = NULL;
    size_t *off = NULL;
    zmpi_dm_reqs r = {0};

    if (size < 2)
        goto fn_exit;
    if (sendbuf != MPI_IN_PLACE && n > 0)
        memcpy(own, sendbuf, n * c->es);
    rc = zmpi_alloc(cap, &mine);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_compress(c, own, n, mine, cap, &len);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)size * sizeof *lens, &lens);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)size + 1) * sizeof *off, &off);
    if (rc)
        goto fn_fail;
    mylen = len;
    rc = PMPI_Allgather(&mylen, 1, MPI_UINT64_T, lens, 1, MPI_UINT64_T, c->comm);
    if (rc)
        goto fn_fail;
    off[0] = 0;
    for (int i = 0; i < size; i++) {
        if (lens[i] > (uint64_t)(SIZE_MAX - off[i])) {
            rc = MPI_ERR_OTHER;
            goto fn_fail;
        }
        off[i + 1] = off[i] + (size_t)lens[i];
    }
    total = off[size];
    rc = zmpi_alloc(total, &z);
    if (rc)
        goto fn_fail;
    if (len > 0)
        memcpy(z + off[rank], mine, len);
    free(mine);
    mine = NULL;

    for (int s = 0; s < size - 1; s++) {
        int sb = (rank - s + size) % size, rb = (rank - s - 1 + size) % size;
        rc = zmpi_dm_irecv(c, z + off[rb], (size_t)lens[rb], left, ZMPI_TAG_ALLGATHER, &r);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_isend(c, z + off[sb], (size_t)lens[sb], right, ZMPI_TAG_ALLGATHER, &r);
        if (rc)
            goto fn_fail;
        if (prev >= 0) { /* the block of the previous step, while this one travels */
            int e = zmpi_dm_decompress(c, z + off[prev], (size_t)lens[prev],
                                       (char *)recvbuf + (ptrdiff_t)displs[prev] * (ptrdiff_t)c->es,
                                       (size_t)recvcounts[prev]);
            drc = drc ? drc : e;
        }
        rc = zmpi_dm_waitall(&r);
        if (rc)
            goto fn_fail;
        prev = rb;
    }
    if (prev >= 0) {
        int e = zmpi_dm_decompress(c, z + off[prev], (size_t)lens[prev],
                                   (char *)recvbuf + (ptrdiff_t)displs[prev] * (ptrdiff_t)c->es,
                                   (size_t)recvcounts[prev]);
        drc = drc ? drc : e;
    }
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&r);
    free(off);
    free(lens);
    free(mine);
    free(z);
    return rc;
fn_fail:
    goto fn_exit;
}
