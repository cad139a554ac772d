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
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/gather/gather.h"

#define MAXCHILD 32 /* a binomial tree over int ranks has at most 31 children */

int zmpi_gatherv_binomial(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                          const int *recvcounts, const int *displs, int root)
{
    zmpi_call_ran(c, ZMPI_GATHER_BINOMIAL);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size;
    int v = (c->rank - root + size) % size;
    int sub = zmpi_dm_subtree(v, size), low = zmpi_dm_lowbit(v, size), nchild = 0;
    int cm[MAXCHILD];
    unsigned char *z = NULL;
    uint64_t *dir = NULL;
    size_t *pre = NULL, cap_own = 0, len = 0;
    zmpi_dm_reqs rd = {0}, rs = {0}, cr[MAXCHILD];

    memset(cr, 0, sizeof cr);
    if (size < 2)
        goto fn_exit;
    rc = zmpi_alloc((size_t)sub * sizeof *dir, &dir);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)sub + 1) * sizeof *pre, &pre);
    if (rc)
        goto fn_fail;
    /* children v + m, m = 1, 2, 4, ...: their directories first */
    for (int m = 1; m < low && m < sub; m <<= 1) {
        int end = 2 * m < sub ? 2 * m : sub;
        cm[nchild++] = m;
        rc = zmpi_dm_reqs_reserve(&rd, 1);
        if (rc == MPI_SUCCESS)
            rc = PMPI_Irecv(dir + m, end - m, MPI_UINT64_T, zmpi_dm_real(v + m, root, size), ZMPI_TAG_GATHER,
                            c->comm, &rd.req[rd.n]);
        if (rc)
            goto fn_fail;
        rd.n++;
    }
    /* own block: compressed (v > 0) or copied (root) */
    dir[0] = 0;
    if (v != 0) {
        cap_own = zmpi_dm_cap(c, (size_t)sendcount);
        rc = zmpi_scratch_get(c, cap_own, &z);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_compress(c, sendbuf, (size_t)sendcount, z, cap_own, &len);
        if (rc)
            goto fn_fail;
        dir[0] = len;
    } else if (sendbuf != MPI_IN_PLACE && sendcount > 0) {
        if (sendcount > recvcounts[root])
            drc = MPI_ERR_TRUNCATE;
        else
            memcpy((char *)recvbuf + (ptrdiff_t)displs[root] * (ptrdiff_t)c->es, sendbuf,
                   (size_t)sendcount * c->es);
    }
    rc = zmpi_dm_waitall(&rd);
    if (rc)
        goto fn_fail;
    pre[0] = 0;
    for (int k = 0; k < sub; k++) {
        if (dir[k] > (uint64_t)(SIZE_MAX - pre[k])) {
            rc = MPI_ERR_OTHER;
            goto fn_fail;
        }
        pre[k + 1] = pre[k] + (size_t)dir[k];
    }
    if (pre[sub] > cap_own) { /* grow: the own stream stays at the front */
        unsigned char *nz = NULL;
        rc = zmpi_scratch_get(c, pre[sub], &nz);
        if (rc)
            goto fn_fail;
        if (z && dir[0])
            memcpy(nz, z, (size_t)dir[0]);
        zmpi_scratch_put(c, z);
        z = nz;
    }
    for (int k = 0; k < nchild; k++) {
        int m = cm[k], end = 2 * m < sub ? 2 * m : sub;
        rc = zmpi_dm_irecv(c, z + pre[m], pre[end] - pre[m], zmpi_dm_real(v + m, root, size), ZMPI_TAG_GATHER,
                           &cr[k]);
        if (rc)
            goto fn_fail;
    }
    if (v != 0) {
        for (int k = 0; rc == MPI_SUCCESS && k < nchild; k++)
            rc = zmpi_dm_waitall(&cr[k]);
        if (rc == MPI_SUCCESS)
            rc =
                zmpi_dm_isend_bundle(c, dir, sub, z, zmpi_dm_real(v - low, root, size), ZMPI_TAG_GATHER, &rs);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_waitall(&rs);
        if (rc)
            goto fn_fail;
        goto fn_exit;
    }
    /* the root: decompress each child's bundle as soon as it is complete */
    for (int k = 0; k < nchild; k++) {
        int m = cm[k], end = 2 * m < sub ? 2 * m : sub;
        rc = zmpi_dm_waitall(&cr[k]);
        if (rc)
            goto fn_fail;
        for (int u = m; u < end; u++) {
            int i = zmpi_dm_real(u, root, size);
            int e = zmpi_dm_decompress(c, z + pre[u], (size_t)dir[u],
                                       (char *)recvbuf + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es,
                                       (size_t)recvcounts[i]);
            drc = drc ? drc : e;
        }
    }
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&rd);
    zmpi_dm_reqs_free(&rs);
    for (int k = 0; k < MAXCHILD; k++)
        zmpi_dm_reqs_free(&cr[k]);
    free(pre);
    free(dir);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    goto fn_exit;
}
