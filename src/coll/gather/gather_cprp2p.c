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
#include <stdlib.h>
#include <string.h>

#include "coll/common/gather_tree.h"
#include "coll/gather/gather.h"

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

/* The own stream and the recompressed children's streams of an inner rank:
 * z (malloc'd, zcap bytes) holds pos bytes. */
typedef struct up_state {
    unsigned char *z, *tmp;
    size_t zcap, tcap, pos;
} up_state;

/* An inner rank: decompresses and recompresses each child's bundle (in zin
 * at pre) as soon as it is complete, appending to the own stream; dir[u]
 * becomes the size of the recompressed stream. */
static int rehop_children(zmpi_call *c, zmpi_gtree *t, const unsigned char *zin, up_state *up, int *drc)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < t->nchild; k++) {
        ZMPI_CHECK(zmpi_dm_waitall(&t->cr[k]));
        for (int u = t->cm[k]; u < zmpi_gtree_end(t, k); u++) {
            size_t len = (size_t)t->dir[u], n = zmpi_dm_stream_count(c, zin + t->pre[u], len), olen = 0;
            size_t w = n == SIZE_MAX ? len : zmpi_dm_cap(c, n);
            w = w > len ? w : len;
            if (w > SIZE_MAX - up->pos) {
                rc = MPI_ERR_OTHER;
                goto fn_fail;
            }
            ZMPI_CHECK(grow(&up->z, &up->zcap, up->pos + w));
            if (n != SIZE_MAX)
                ZMPI_CHECK(grow(&up->tmp, &up->tcap, n * c->es));
            ZMPI_CHECK(zmpi_dm_rehop(c, zin + t->pre[u], len, n, up->tmp, up->z + up->pos, w, &olen, drc));
            t->dir[u] = olen;
            up->pos += olen;
        }
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Per-compression bound (collective): the root's own block is read from
 * recvbuf with MPI_IN_PLACE. */
static int set_bound(zmpi_call *c, const void *sendbuf, int sendcount, const void *recvbuf,
                     const int *recvcounts, const int *displs, int root)
{
    const void *own = sendbuf;
    size_t nown = (size_t)sendcount;
    if (c->rank == root && sendbuf == MPI_IN_PLACE) {
        own = (const char *)recvbuf + (ptrdiff_t)displs[root] * (ptrdiff_t)c->es;
        nown = (size_t)recvcounts[root];
    }
    return zmpi_call_bound(c, zmpi_ceil_log2(c->size), own, nown);
}

int zmpi_gatherv_cprp2p(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                        const int *recvcounts, const int *displs, int root)
{
    zmpi_call_ran(c, ZMPI_GATHER_CPRP2P);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS;
    unsigned char *zin = NULL;
    up_state up = {NULL, NULL, 0, 0, 0};
    zmpi_gtree t = {0};
    zmpi_dm_reqs rs = {0};

    if (c->size < 2)
        goto fn_exit;
    ZMPI_CHECK(set_bound(c, sendbuf, sendcount, recvbuf, recvcounts, displs, root));
    ZMPI_CHECK(zmpi_gtree_start(c, &t, root));
    /* own block: compressed (v > 0) while the directories travel, or copied (root) */
    if (t.v != 0) {
        up.zcap = zmpi_dm_cap(c, (size_t)sendcount);
        ZMPI_CHECK(zmpi_alloc(up.zcap, &up.z)); /* grown with realloc: not scratch */
    }
    ZMPI_CHECK(zmpi_gtree_own(c, &t, sendbuf, sendcount, recvbuf, recvcounts, displs, up.z, up.zcap, &drc));
    up.pos = (size_t)t.dir[0];
    ZMPI_CHECK(zmpi_dm_waitall(&t.rd));
    /* the children's streams, vranks 1 .. sub-1 of ours, at pre[k] of zin */
    ZMPI_CHECK(zmpi_gtree_layout(&t, 0));
    ZMPI_CHECK(zmpi_scratch_get(c, t.pre[t.sub], &zin));
    ZMPI_CHECK(zmpi_gtree_post_streams(c, &t, zin));
    if (t.v == 0) { /* the root: decompress each child's bundle as soon as it is complete */
        for (int k = 0; k < t.nchild; k++)
            ZMPI_CHECK(zmpi_gtree_unpack(c, &t, k, zin, recvbuf, recvcounts, displs, &drc));
        rc = drc;
        goto fn_exit;
    }
    ZMPI_CHECK(rehop_children(c, &t, zin, &up, &drc));
    ZMPI_CHECK(zmpi_dm_isend_bundle(c, t.dir, t.sub, up.z, zmpi_dm_real(t.v - t.low, root, c->size),
                                    ZMPI_TAG_GATHER, &rs));
    ZMPI_CHECK(zmpi_dm_waitall(&rs));
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&rs);
    zmpi_gtree_free(&t);
    free(up.tmp);
    zmpi_scratch_put(c, zin);
    free(up.z);
    return rc;
fn_fail:
    goto fn_exit;
}
