/*
 * Scatter(v), binomial tree, compress per hop ("CPRP2P", the published
 * baseline; for comparison in benchmarks only).
 *
 * Same tree and bundles as `binomial` (virtual ranks v = (rank - root) mod N;
 * a bundle is a directory of one stream size per vrank of the subtree, then
 * the concatenated streams), but every hop is a compressed message of its
 * own: an inner rank decompresses every part of the bundle it receives and
 * compresses again the parts it forwards. 8 ranks, z = compress,
 * u = decompress, p_k = the part of vrank k:
 *
 *   root:  z(p4..p7) ─▶ 4          z(p2,p3) ─▶ 2        z(p1) ─▶ 1
 *   v=4:   z(u(p6),u(p7)) ─▶ 6     z(u(p5)) ─▶ 5        p4 = u(p4)
 *   v=2:   z(u(p3)) ─▶ 3                                p2 = u(p2)
 *   v=6:   z(u(p7)) ─▶ 7                                p6 = u(p6)
 *   leaves (1, 3, 5, 7): p = u(p)
 *
 * The part of vrank k is compressed popcount(k) times (p7: at 0, 4 and 6),
 * at most ceil(log2 N) times; an inner rank forwards only after it has
 * decompressed and recompressed, so compression sits on the critical path
 * of every level. The root's side is the binomial one (each part compressed
 * once, bundles in sending order); its own part is copied (exact).
 *
 * Sizes: as in binomial, the directory first, then the streams as one exact
 * transfer (movement.h). The element count of each forwarded part is read
 * from its stream header: non-root ranks of Scatterv do not know the other
 * ranks' counts.
 *
 * Error per element of the part of vrank k, e the bound of one compression:
 * ABS <= popcount(k) * e <= ceil(log2 N) * e.
 *   result scope:  e = eb / ceil(log2 N), so <= eb (REL: eb = rel * (max - min)
 *                  of all parts of the send buffer, one small allreduce).
 *   message scope: e = eb per compression (REL: rel * the range of the part
 *                  as this hop holds it, at most its original range plus
 *                  twice the error so far), so up to ceil(log2 N) * eb.
 * At 2 ranks (one hop) both scopes are the compress-once guarantee.
 *
 * Edge cases: parts of 0 elements have size 0 in the directory (nothing to
 * decompress or recompress); uneven parts; any root; non-powers of two
 * (subtrees cut at N); MPI_IN_PLACE at the root; parts below ZMPI_MIN_BYTES
 * travel as stored streams at every hop (v-variant, exact). A forwarded
 * stream this rank cannot decode is passed on unchanged (its destination
 * reports it as well) and this rank returns MPI_ERR_OTHER after finishing
 * its sends, so no rank waits forever.
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/scatter/scatter.h"

static int ceil_log2(int n)
{
    int d = 0;
    while ((1L << d) < n)
        d++;
    return d;
}

/* Per-compression bound (collective in result scope with REL). The range
 * of all parts is known at the root only: it enters zmpi_call_bound as the
 * two-element array {min, max} of the call's dtype (both are elements of
 * the parts, so the conversion is exact). */
static int set_bound(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs, int root)
{
    union {
        float f[2];
        double d[2];
    } mm = {.d = {0, 0}};
    size_t n = 0;
    if (c->rank == root && c->scope == ZMPI_SCOPE_RESULT && c->mode == ZMPI_EB_REL) {
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < c->size; i++) {
            const char *p = (const char *)sendbuf + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es;
            for (size_t k = 0; k < (size_t)sendcounts[i]; k++) {
                double x = c->dt == ZMPI_FLOAT ? (double)((const float *)p)[k] : ((const double *)p)[k];
                if (isfinite(x)) {
                    lo = x < lo ? x : lo;
                    hi = x > hi ? x : hi;
                }
            }
        }
        if (lo <= hi) {
            n = 2;
            if (c->dt == ZMPI_FLOAT) {
                mm.f[0] = (float)lo;
                mm.f[1] = (float)hi;
            } else {
                mm.d[0] = lo;
                mm.d[1] = hi;
            }
        }
    }
    return zmpi_call_bound(c, ceil_log2(c->size), &mm, n);
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

/* One hop of a forwarded part: decompress the len-byte stream src of n
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

int zmpi_scatterv_cprp2p(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                         void *recvbuf, int recvcount, int root)
{
    zmpi_call_ran(c, ZMPI_SCATTER_CPRP2P);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, corrupt = MPI_SUCCESS, size = c->size;
    int v = (c->rank - root + size) % size;
    int sub = zmpi_dm_subtree(v, size), low = zmpi_dm_lowbit(v, size);
    unsigned char *zin = NULL, *zout = NULL, *tmp = NULL;
    uint64_t *dir = NULL, *odir = NULL;
    size_t *pre = NULL, *cnt = NULL, *opre = NULL, total = 0, maxn = 0;
    zmpi_dm_reqs r = {0};

    if (size < 2)
        goto fn_exit;
    rc = set_bound(c, sendbuf, sendcounts, displs, root);
    if (rc)
        goto fn_fail;
    if (v == 0) {
        /* the root compresses each part once and sends the bundles: binomial's root */
        rc = zmpi_scatterv_binomial(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root);
        zmpi_call_ran(c, ZMPI_SCATTER_CPRP2P); /* binomial reported itself: this is cprp2p's root */
        goto fn_exit;
    }
    int parent = zmpi_dm_real(v - low, root, size);
    rc = zmpi_alloc((size_t)sub * sizeof *dir, &dir);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)sub * sizeof *odir, &odir);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)sub * sizeof *cnt, &cnt);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)sub + 1) * sizeof *pre, &pre);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(((size_t)sub + 1) * sizeof *opre, &opre);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_recv_bundle_dir(c, dir, sub, parent, ZMPI_TAG_SCATTER);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_dir_total(dir, sub, &total);
    if (rc == MPI_SUCCESS)
        rc = zmpi_scratch_get(c, total, &zin);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_recv(c, zin, total, parent, ZMPI_TAG_SCATTER);
    if (rc)
        goto fn_fail;
    pre[0] = 0;
    for (int k = 0; k < sub; k++)
        pre[k + 1] = pre[k] + (size_t)dir[k];
    /* slots for the recompressed parts of the subtree (vranks 1 .. sub-1 of
     * ours): the worst case of each part's count, or its received size if
     * it must be passed on unchanged */
    opre[0] = opre[1] = 0;
    for (int k = 1; k < sub; k++) {
        size_t len = (size_t)dir[k], w;
        cnt[k] = stream_count(c, zin + pre[k], len);
        w = cnt[k] == SIZE_MAX ? len : zmpi_dm_cap(c, cnt[k]);
        w = w > len ? w : len;
        if (cnt[k] != SIZE_MAX && cnt[k] > maxn)
            maxn = cnt[k];
        if (w > SIZE_MAX - opre[k]) {
            rc = MPI_ERR_OTHER;
            goto fn_fail;
        }
        opre[k + 1] = opre[k] + w;
    }
    rc = zmpi_scratch_get(c, opre[sub], &zout);
    if (rc == MPI_SUCCESS)
        rc = zmpi_scratch_get(c, maxn * c->es, &tmp);
    if (rc)
        goto fn_fail;
    /* children v + m in sending order (largest subtree first): decompress
     * and recompress the parts [m, min(2m, sub)) of ours, packed from
     * opre[m] on (each stream is no longer than its slot, so the space left
     * always holds the worst case of the remaining parts) */
    for (int m = low >> 1; m > 0; m >>= 1) {
        if (m >= sub)
            continue;
        int end = 2 * m < sub ? 2 * m : sub;
        size_t pos = opre[m];
        for (int k = m; k < end; k++) {
            size_t olen = 0;
            rc = rehop(c, zin + pre[k], (size_t)dir[k], cnt[k], tmp, zout + pos, opre[end] - pos, &olen,
                       &corrupt);
            if (rc)
                goto fn_fail;
            odir[k] = olen;
            pos += olen;
        }
        rc = zmpi_dm_isend_bundle(c, odir + m, end - m, zout + opre[m], zmpi_dm_real(v + m, root, size),
                                  ZMPI_TAG_SCATTER, &r);
        if (rc == MPI_SUCCESS)
            rc = zmpi_dm_progress(&r);
        if (rc)
            goto fn_fail;
    }
    drc = zmpi_dm_decompress(c, zin, (size_t)dir[0], recvbuf, (size_t)recvcount);
    rc = zmpi_dm_waitall(&r);
    if (rc)
        goto fn_fail;
    rc = drc ? drc : corrupt;
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_scratch_put(c, tmp);
    zmpi_scratch_put(c, zout);
    zmpi_scratch_put(c, zin);
    free(opre);
    free(pre);
    free(cnt);
    free(odir);
    free(dir);
    return rc;
fn_fail:
    goto fn_exit;
}
