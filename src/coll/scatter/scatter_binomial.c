/*
 * Scatter(v), binomial tree, compress once (each block compressed once at its origin, decompressed once at
 * its destination).
 *
 * Virtual ranks v = (rank - root) mod N; Z_v = the compressed part of v.
 * 8 ranks:
 *
 *   root: Z_4..Z_7 compressed ─▶ bundle {Z_4,Z_5,Z_6,Z_7} ─▶ 4
 *         Z_2, Z_3 compressed  ─▶ bundle {Z_2,Z_3}         ─▶ 2
 *         Z_1 compressed       ─▶ bundle {Z_1}             ─▶ 1
 *   v=4:  keeps Z_4, ─▶ {Z_6,Z_7} ─▶ 6,  {Z_5} ─▶ 5
 *   v=2:  keeps Z_2, ─▶ {Z_3} ─▶ 3
 *   v=6:  keeps Z_6, ─▶ {Z_7} ─▶ 7
 *   every v > 0: part = decompress(Z_v)       (after forwarding)
 *
 * The root compresses the parts subtree by subtree in sending order, so the
 * bundle for vranks 4..7 travels while those for 2..3 and 1 are compressed.
 * Inner ranks forward the compressed bytes untouched. The root's own part is
 * copied (exact).
 *
 * Sizes: each bundle is a directory (one MPI_UINT64_T stream size per vrank
 * of the subtree; the receiver knows the subtree size) followed by the
 * concatenated streams as one exact transfer (movement.h). Non-root ranks of
 * Scatterv do not know the other parts' counts; they need only the sizes.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the element's part; message scope = result scope.
 *
 * Edge cases: parts of 0 elements have size 0 in the directory (no bytes);
 * uneven parts; any root; non-powers of two (subtrees cut at N); MPI_IN_PLACE
 * at the root; parts below ZMPI_MIN_BYTES travel uncompressed (v-variant).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/scatter/scatter.h"

static int root_side(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                     void *recvbuf, int recvcount, int root)
{
    int rc = MPI_SUCCESS, size = c->size;
    unsigned char *z = NULL;
    uint64_t *dir = NULL;
    zmpi_dm_reqs r = {0};
    size_t total = 0, off = 0;

    for (int i = 0; i < size; i++)
        if (i != root)
            total += zmpi_dm_cap(c, (size_t)sendcounts[i]);
    ZMPI_CHECK(zmpi_scratch_get(c, total, &z));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *dir, &dir));
    /* children of the root in sending order: subtrees [m, min(2m, N)) */
    for (int m = zmpi_dm_lowbit(0, size) >> 1; m > 0; m >>= 1) {
        if (m >= size)
            continue;
        int end = 2 * m < size ? 2 * m : size;
        size_t first = off;
        for (int v = m; v < end; v++) {
            int i = zmpi_dm_real(v, root, size);
            size_t n = (size_t)sendcounts[i], len = 0;
            const char *src = (const char *)sendbuf + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es;
            ZMPI_CHECK(zmpi_dm_compress(c, src, n, z + off, zmpi_dm_cap(c, n), &len));
            dir[v] = len;
            off += len;
        }
        ZMPI_CHECK(zmpi_dm_isend_bundle(c, dir + m, end - m, z + first, zmpi_dm_real(m, root, size),
                                        ZMPI_TAG_SCATTER, &r));
        ZMPI_CHECK(zmpi_dm_progress(&r));
    }
    ZMPI_CHECK(zmpi_dm_scatter_own(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root));
    ZMPI_CHECK(zmpi_dm_waitall(&r));
fn_exit:
    zmpi_dm_reqs_free(&r);
    free(dir);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_scatterv_binomial(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                           void *recvbuf, int recvcount, int root)
{
    zmpi_call_ran(c, ZMPI_SCATTER_BINOMIAL);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size;
    int v = (c->rank - root + size) % size;
    int sub = zmpi_dm_subtree(v, size), low = zmpi_dm_lowbit(v, size);
    unsigned char *z = NULL;
    uint64_t *dir = NULL;
    size_t *pre = NULL;
    zmpi_dm_reqs r = {0};

    if (size < 2)
        goto fn_exit;
    if (v == 0) {
        rc = root_side(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root);
        goto fn_exit;
    }
    int parent = zmpi_dm_real(v - low, root, size);
    ZMPI_CHECK(zmpi_dm_recv_bundle(c, sub, parent, ZMPI_TAG_SCATTER, &dir, &pre, &z));
    /* forward the children's bundles: child v + m holds [m, min(2m, sub)) of ours */
    for (int m = low >> 1; m > 0; m >>= 1) {
        if (m >= sub)
            continue;
        int end = 2 * m < sub ? 2 * m : sub;
        ZMPI_CHECK(zmpi_dm_isend_bundle(c, dir + m, end - m, z + pre[m], zmpi_dm_real(v + m, root, size),
                                        ZMPI_TAG_SCATTER, &r));
    }
    drc = zmpi_dm_decompress(c, z, (size_t)dir[0], recvbuf, (size_t)recvcount);
    ZMPI_CHECK(zmpi_dm_waitall(&r));
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&r);
    free(pre);
    free(dir);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    goto fn_exit;
}
