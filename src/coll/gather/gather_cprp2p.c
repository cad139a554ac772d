/*
 * Gather(v), binomial tree, compress per hop ("CPRP2P", the published
 * baseline; for comparison in benchmarks only).
 *
 * Same tree and bundles as `binomial` (virtual ranks v = (rank - root) mod N;
 * a bundle is a directory of one stream size per vrank of the subtree, then
 * the concatenated streams), but every hop is a compressed message of its
 * own: an inner rank decompresses every block its children send and
 * compresses its whole subtree bundle again before sending it up. 8 ranks,
 * z = compress, u = decompress, b_k = the block of vrank k:
 *
 *   step 1   1 ─z(b1)─▶ 0    3 ─z(b3)─▶ 2    5 ─z(b5)─▶ 4    7 ─z(b7)─▶ 6
 *   step 2   2 ─z(b2), z(u(b3))─▶ 0          6 ─z(b6), z(u(b7))─▶ 4
 *   step 3   4 ─z(b4), z(u(b5)), z(u(b6)), z(u(u(b7)))─▶ 0
 *   root:    u(...) of every block into place; its own block is copied
 *            (exact), unless MPI_IN_PLACE
 *
 * The block of vrank k is compressed popcount(k) times (b7: at 7, 6 and 4),
 * at most ceil(log2 N) times. A rank compresses its own block while its
 * children's directories are on their way, decompresses and recompresses
 * each child's bundle as soon as it is complete, and sends up only when its
 * whole subtree is recompressed: compression sits on the critical path of
 * every level.
 *
 * Sizes: as in binomial, the directory first, then the streams as one exact
 * transfer (movement.h). The element count of each received block is read
 * from its stream header: ranks of Gatherv do not know the other ranks'
 * counts.
 *
 * Error per element of the block of vrank k, e the bound of one compression:
 * ABS <= popcount(k) * e <= ceil(log2 N) * e.
 *   result scope:  e = eb / ceil(log2 N), so <= eb (REL: eb = rel * (max - min)
 *                  over all ranks' blocks, one small allreduce).
 *   message scope: e = eb per compression (REL: rel * the range of the block
 *                  as this hop holds it, at most its original range plus
 *                  twice the error so far), so up to ceil(log2 N) * eb.
 * At 2 ranks (one hop) both scopes are the compress-once guarantee.
 *
 * Edge cases: blocks of 0 elements have size 0 (nothing to decompress or
 * recompress); uneven blocks; any root; non-powers of two (subtrees cut at
 * N); MPI_IN_PLACE at the root (its block is read from recvbuf); blocks
 * below ZMPI_MIN_BYTES travel as stored streams at every hop (v-variant,
 * exact). A received stream an inner rank cannot decode is passed on
 * unchanged (the root reports it as well) and that rank returns
 * MPI_ERR_OTHER after finishing its send, so no rank waits forever.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/gather/gather.h"

#define MAXCHILD 32 /* a binomial tree over int ranks has at most 31 children */

static int ceil_log2(int n)
{
    int d = 0;
    while ((1L << d) < n)
        d++;
    return d;
}

/* Elements of a received stream from its header; SIZE_MAX if it is not a
 * valid stream of the call's dtype (0 for an empty block). */
static size_t stream_count(const zmpi_call *c, const void *src, size_t len)
{
    zmpi_stream_info info;
    if (len == 0)
        return 0;
    if (zmpi_stream_info_get(src, len, &info) != ZMPI_OK || info.dtype != c->dt || info.count > INT_MAX)
        return SIZE_MAX;
    return (size_t)info.count;
}

/* Grows a malloc'd buffer to at least need bytes. */
static int grow(void *pp, size_t *cap, size_t need)
{
    unsigned char *p;
    memcpy(&p, pp, sizeof p);
    if (need <= *cap)
        return MPI_SUCCESS;
    p = realloc(p, need);
    if (!p)
        return MPI_ERR_NO_MEM;
    memcpy(pp, &p, sizeof p);
    *cap = need;
    return MPI_SUCCESS;
}

/* One hop of a child's block: decompress the len-byte stream src of n
 * elements into tmp, compress it again into dst (cap >= max(zmpi_dm_cap(n),
 * len)). A stream that does not decode is copied unchanged and *corrupt
 * set. Returns non-zero only on an internal error. */
static int rehop(zmpi_call *c, const unsigned char *src, size_t len, size_t n, void *tmp, unsigned char *dst,
                 size_t cap, size_t *olen, int *corrupt)
{
    if (n == SIZE_MAX || (n > 0 && zmpi_block_decompress(c, src, len, tmp, n) != MPI_SUCCESS)) {
        memcpy(dst, src, len);
        *olen = len;
        *corrupt = MPI_ERR_OTHER;
        return MPI_SUCCESS;
    }
    return zmpi_dm_compress(c, tmp, n, dst, cap, olen);
}

int zmpi_gatherv_cprp2p(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                        const int *recvcounts, const int *displs, int root)
{
    zmpi_call_ran(c, ZMPI_GATHER_CPRP2P);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size;
    int v = (c->rank - root + size) % size;
    int sub = zmpi_dm_subtree(v, size), low = zmpi_dm_lowbit(v, size), nchild = 0;
    int cm[MAXCHILD];
    const void *own = sendbuf;
    size_t nown = (size_t)sendcount;
    unsigned char *z = NULL, *zin = NULL, *tmp = NULL;
    uint64_t *dir = NULL;
    size_t *pre = NULL, zcap = 0, tcap = 0, pos = 0;
    zmpi_dm_reqs rd = {0}, rs = {0}, cr[MAXCHILD];

    memset(cr, 0, sizeof cr);
    if (size < 2)
        goto fn_exit;
    if (v == 0 && sendbuf == MPI_IN_PLACE) {
        own = (const char *)recvbuf + (ptrdiff_t)displs[root] * (ptrdiff_t)c->es;
        nown = (size_t)recvcounts[root];
    }
    rc = zmpi_call_bound(c, ceil_log2(size), own, nown);
    if (rc == MPI_SUCCESS)
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
        zcap = zmpi_dm_cap(c, (size_t)sendcount);
        rc = zmpi_alloc(zcap, &z); /* grown with realloc: not scratch */
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_compress(c, sendbuf, (size_t)sendcount, z, zcap, &pos);
        if (rc)
            goto fn_fail;
        dir[0] = pos;
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
    /* the children's streams, vranks 1 .. sub-1 of ours, at pre[k] of zin */
    pre[0] = pre[1] = 0;
    for (int k = 1; k < sub; k++) {
        if (dir[k] > (uint64_t)(SIZE_MAX - pre[k])) {
            rc = MPI_ERR_OTHER;
            goto fn_fail;
        }
        pre[k + 1] = pre[k] + (size_t)dir[k];
    }
    rc = zmpi_scratch_get(c, pre[sub], &zin);
    if (rc)
        goto fn_fail;
    for (int k = 0; k < nchild; k++) {
        int m = cm[k], end = 2 * m < sub ? 2 * m : sub;
        rc = zmpi_dm_irecv(c, zin + pre[m], pre[end] - pre[m], zmpi_dm_real(v + m, root, size),
                           ZMPI_TAG_GATHER, &cr[k]);
        if (rc)
            goto fn_fail;
    }
    if (v == 0) {
        /* the root: decompress each child's bundle as soon as it is complete */
        for (int k = 0; k < nchild; k++) {
            int m = cm[k], end = 2 * m < sub ? 2 * m : sub;
            rc = zmpi_dm_waitall(&cr[k]);
            if (rc)
                goto fn_fail;
            for (int u = m; u < end; u++) {
                int i = zmpi_dm_real(u, root, size);
                int e = zmpi_dm_decompress(c, zin + pre[u], (size_t)dir[u],
                                           (char *)recvbuf + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es,
                                           (size_t)recvcounts[i]);
                drc = drc ? drc : e;
            }
        }
        rc = drc;
        goto fn_exit;
    }
    /* an inner rank: decompress and recompress each child's bundle as soon
     * as it is complete, appending to the own stream (pos bytes so far);
     * dir[u] becomes the size of the recompressed stream */
    for (int k = 0; k < nchild; k++) {
        int m = cm[k], end = 2 * m < sub ? 2 * m : sub;
        rc = zmpi_dm_waitall(&cr[k]);
        if (rc)
            goto fn_fail;
        for (int u = m; u < end; u++) {
            size_t len = (size_t)dir[u], n = stream_count(c, zin + pre[u], len), olen = 0;
            size_t w = n == SIZE_MAX ? len : zmpi_dm_cap(c, n);
            w = w > len ? w : len;
            if (w > SIZE_MAX - pos) {
                rc = MPI_ERR_OTHER;
                goto fn_fail;
            }
            rc = grow(&z, &zcap, pos + w);
            if (rc == MPI_SUCCESS && n != SIZE_MAX)
                rc = grow(&tmp, &tcap, n * c->es);
            if (rc == MPI_SUCCESS)
                rc = rehop(c, zin + pre[u], len, n, tmp, z + pos, w, &olen, &drc);
            if (rc)
                goto fn_fail;
            dir[u] = olen;
            pos += olen;
        }
    }
    rc = zmpi_dm_isend_bundle(c, dir, sub, z, zmpi_dm_real(v - low, root, size), ZMPI_TAG_GATHER, &rs);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_waitall(&rs);
    if (rc)
        goto fn_fail;
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&rd);
    zmpi_dm_reqs_free(&rs);
    for (int k = 0; k < MAXCHILD; k++)
        zmpi_dm_reqs_free(&cr[k]);
    free(pre);
    free(dir);
    free(tmp);
    zmpi_scratch_put(c, zin);
    free(z);
    return rc;
fn_fail:
    goto fn_exit;
}
