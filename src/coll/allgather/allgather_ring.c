/*
 * Allgather(v), ring, compress once (each block compressed once at its origin, decompressed once at its
 * destination).
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
 * rdb (zmpi_allgatherv_rdb): the same compressed blocks exchanged by
 * recursive doubling (coll/common/rdb.h): log2 N steps of doubling groups
 * instead of N - 1 ring steps, for power-of-two N (others run the ring).
 * Same error and the same results.
 *
 * Edge cases: blocks of 0 elements have size 0 (no message); uneven blocks
 * (Allgatherv); MPI_IN_PLACE; any N >= 2 (a ring needs no power of two);
 * blocks below ZMPI_MIN_BYTES travel uncompressed (v-variant).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/allgather/allgather.h"
#include "coll/common/movement.h"
#include "coll/common/rdb.h"

/* State shared by the ring and the recursive-doubling exchange. */
typedef struct ag_state {
    zmpi_call *c;
    void *recvbuf;
    const int *recvcounts, *displs;
    unsigned char *z; /* all compressed blocks, back to back */
    size_t *off;      /* size + 1 offsets into z (block b: off[b + 1] - off[b] bytes) */
    int drc;          /* first decompression error */
} ag_state;

/* Compresses the own block (copied into place first), learns every block's
 * size (one allgather of uint64), lays the streams out in s->z. */
static int ag_prologue(ag_state *s, const void *sendbuf)
{
    zmpi_call *c = s->c;
    int rc, size = c->size, rank = c->rank;
    char *own = (char *)s->recvbuf + (ptrdiff_t)s->displs[rank] * (ptrdiff_t)c->es;
    size_t n = (size_t)s->recvcounts[rank], cap = zmpi_dm_cap(c, n), len = 0;
    unsigned char *mine = NULL;

    if (sendbuf != MPI_IN_PLACE && n > 0)
        memcpy(own, sendbuf, n * c->es);
    rc = zmpi_scratch_get(c, cap, &mine);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_compress(c, own, n, mine, cap, &len);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)size + 1) * sizeof *s->off, &s->off);
    if (rc == MPI_SUCCESS)
        rc = zmpi_rdb_layout(c, mine, len, size, rank, NULL, s->off, &s->z);
    zmpi_scratch_put(c, mine);
    return rc;
}

static void ag_free(ag_state *s)
{
    free(s->off);
    zmpi_scratch_put(s->c, s->z);
}

/* Decompresses foreign block b (the owner keeps its exact block). */
static void ag_decompress(ag_state *s, int b)
{
    if (b == s->c->rank)
        return;
    int e = zmpi_dm_decompress(s->c, s->z + s->off[b], s->off[b + 1] - s->off[b],
                               (char *)s->recvbuf + (ptrdiff_t)s->displs[b] * (ptrdiff_t)s->c->es,
                               (size_t)s->recvcounts[b]);
    s->drc = s->drc ? s->drc : e;
}

int zmpi_allgatherv_ring(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                         const int *displs)
{
    /* reports only for Allgather's own calls: other collectives may run this
     * ring with their own zmpi_call (allgather.h), whose entry it must not touch */
    if (c->coll == ZMPI_COLL_ALLGATHER)
        zmpi_call_ran(c, ZMPI_ALLGATHER_RING);
    int rc = MPI_SUCCESS, size = c->size, rank = c->rank;
    int right = (rank + 1) % size, left = (rank - 1 + size) % size, prev = -1;
    ag_state s = {c, recvbuf, recvcounts, displs, NULL, NULL, MPI_SUCCESS};
    zmpi_dm_reqs r = {0};

    if (size < 2)
        goto fn_exit;
    ZMPI_CHECK(ag_prologue(&s, sendbuf));
    for (int st = 0; st < size - 1; st++) {
        int sb = (rank - st + size) % size, rb = (rank - st - 1 + size) % size;
        ZMPI_CHECK(
            zmpi_dm_irecv(c, s.z + s.off[rb], s.off[rb + 1] - s.off[rb], left, ZMPI_TAG_ALLGATHER, &r));
        ZMPI_CHECK(
            zmpi_dm_isend(c, s.z + s.off[sb], s.off[sb + 1] - s.off[sb], right, ZMPI_TAG_ALLGATHER, &r));
        if (prev >= 0) /* the block of the previous step, while this one travels */
            ag_decompress(&s, prev);
        ZMPI_CHECK(zmpi_dm_waitall(&r));
        prev = rb;
    }
    if (prev >= 0)
        ag_decompress(&s, prev);
    rc = s.drc;
fn_exit:
    zmpi_dm_reqs_free(&r);
    ag_free(&s);
    return rc;
fn_fail:
    goto fn_exit;
}

static int ag_arrived(void *arg, int first, int n)
{
    for (int b = first; b < first + n; b++)
        ag_decompress(arg, b);
    return MPI_SUCCESS;
}

int zmpi_allgatherv_rdb(zmpi_call *c, const void *sendbuf, void *recvbuf, const int *recvcounts,
                        const int *displs)
{
    zmpi_call_ran(c, ZMPI_ALLGATHER_RDB); /* other numbers of ranks run the ring, which reports itself */
    int rc = MPI_SUCCESS, size = c->size;
    ag_state s = {c, recvbuf, recvcounts, displs, NULL, NULL, MPI_SUCCESS};

    if (!zmpi_is_pow2(size))
        return zmpi_allgatherv_ring(c, sendbuf, recvbuf, recvcounts, displs);
    if (size < 2)
        goto fn_exit;
    rc = ag_prologue(&s, sendbuf);
    if (rc == MPI_SUCCESS)
        rc = zmpi_rdb_allgather(c, s.z, s.off, size, c->rank, NULL, ZMPI_TAG_ALLGATHER, ag_arrived, &s);
    if (rc == MPI_SUCCESS)
        rc = s.drc;
fn_exit:
    ag_free(&s);
    return rc;
}
