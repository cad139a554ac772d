/*
 * Gather(v), binomial tree, compress once; bundles are forwarded up the tree
 * without recompression.
 *
 * Virtual ranks v = (rank - root) mod N; Z_v = the compressed block of v.
 * 8 ranks:
 *
 *   step 1   1 ─{Z_1}─▶ 0    3 ─{Z_3}─▶ 2    5 ─{Z_5}─▶ 4    7 ─{Z_7}─▶ 6
 *   step 2   2 ─{Z_2,Z_3}─▶ 0                6 ─{Z_6,Z_7}─▶ 4
 *   step 3   4 ─{Z_4,Z_5,Z_6,Z_7}─▶ 0
 *   root:    decompresses Z_1..Z_7 into place, child bundle by child bundle
 *            (while the larger bundles are still arriving); its own block is
 *            copied (exact), unless MPI_IN_PLACE
 *
 * Every rank compresses its own block while its children's directories are
 * on their way. Sizes: each bundle is a directory (one MPI_UINT64_T stream
 * size per vrank of the subtree; the parent knows the subtree size) followed
 * by the concatenated streams as one exact transfer (movement.h); ranks of
 * Gatherv need not know the other ranks' counts.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the element's block; message scope = result scope.
 *
 * Edge cases: blocks of 0 elements have size 0; uneven blocks; any root;
 * non-powers of two (subtrees cut at N); MPI_IN_PLACE at the root; blocks
 * below ZMPI_MIN_BYTES travel uncompressed (v-variant).
 */
#include <string.h>

#include "coll/common/gather_tree.h"
#include "coll/gather/gather.h"

/* Room for the subtree's streams behind the own one (grown: the own
 * stream stays at the front). */
static int grow_z(zmpi_call *c, const zmpi_gtree *t, unsigned char **z, size_t cap_own)
{
    int rc = MPI_SUCCESS;
    unsigned char *nz = NULL;
    if (t->pre[t->sub] <= cap_own)
        goto fn_exit;
    ZMPI_CHECK(zmpi_scratch_get(c, t->pre[t->sub], &nz));
    if (*z && t->dir[0])
        memcpy(nz, *z, (size_t)t->dir[0]);
    zmpi_scratch_put(c, *z);
    *z = nz;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* A non-root rank: once the children's bundles are in, the whole
 * subtree's bundle goes to the parent. */
static int forward(zmpi_call *c, zmpi_gtree *t, const unsigned char *z)
{
    int rc = MPI_SUCCESS;
    zmpi_dm_reqs rs = {0};
    for (int k = 0; k < t->nchild; k++)
        ZMPI_CHECK(zmpi_dm_waitall(&t->cr[k]));
    ZMPI_CHECK(zmpi_dm_isend_bundle(c, t->dir, t->sub, z, zmpi_dm_real(t->v - t->low, t->root, c->size),
                                    ZMPI_TAG_GATHER, &rs));
    ZMPI_CHECK(zmpi_dm_waitall(&rs));
fn_exit:
    zmpi_dm_reqs_free(&rs);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gatherv_binomial(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                          const int *recvcounts, const int *displs, int root)
{
    zmpi_call_ran(c, ZMPI_GATHER_BINOMIAL);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS;
    unsigned char *z = NULL;
    size_t cap_own = 0;
    zmpi_gtree t = {0};

    if (c->size < 2)
        goto fn_exit;
    ZMPI_CHECK(zmpi_gtree_start(c, &t, root));
    /* own block: compressed (v > 0) while the directories travel, or copied (root) */
    if (t.v != 0) {
        cap_own = zmpi_dm_cap(c, (size_t)sendcount);
        ZMPI_CHECK(zmpi_scratch_get(c, cap_own, &z));
    }
    ZMPI_CHECK(zmpi_gtree_own(c, &t, sendbuf, sendcount, recvbuf, recvcounts, displs, z, cap_own, &drc));
    ZMPI_CHECK(zmpi_dm_waitall(&t.rd));
    ZMPI_CHECK(zmpi_gtree_layout(&t, 1));
    ZMPI_CHECK(grow_z(c, &t, &z, cap_own));
    ZMPI_CHECK(zmpi_gtree_post_streams(c, &t, z));
    if (t.v != 0) {
        ZMPI_CHECK(forward(c, &t, z));
        goto fn_exit;
    }
    /* the root: decompress each child's bundle as soon as it is complete */
    for (int k = 0; k < t.nchild; k++)
        ZMPI_CHECK(zmpi_gtree_unpack(c, &t, k, z, recvbuf, recvcounts, displs, &drc));
    rc = drc;
fn_exit:
    zmpi_gtree_free(&t);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    goto fn_exit;
}
