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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/scatter/scatter.h"

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
    return zmpi_call_bound(c, zmpi_ceil_log2(c->size), &mm, n);
}

/* A non-root rank's bundle as received (dir, pre, zin) and as forwarded:
 * cnt[k] the elements of part k (SIZE_MAX: not a valid stream), opre[k]
 * its slot in zout, odir[k] its recompressed size. */
typedef struct fw_state {
    int v, low, sub, root, corrupt;
    uint64_t *dir, *odir;
    size_t *pre, *cnt, *opre, maxn;
    unsigned char *zin, *zout, *tmp;
} fw_state;

/* Slots for the recompressed parts of the subtree (vranks 1 .. sub-1 of
 * ours): the worst case of each part's count, or its received size if it
 * must be passed on unchanged; zout and tmp (the largest part) to match. */
static int layout_slots(zmpi_call *c, fw_state *s)
{
    int rc = MPI_SUCCESS;
    s->opre[0] = s->opre[1] = 0;
    for (int k = 1; k < s->sub; k++) {
        size_t len = (size_t)s->dir[k], w;
        s->cnt[k] = zmpi_dm_stream_count(c, s->zin + s->pre[k], len);
        w = s->cnt[k] == SIZE_MAX ? len : zmpi_dm_cap(c, s->cnt[k]);
        w = w > len ? w : len;
        if (s->cnt[k] != SIZE_MAX && s->cnt[k] > s->maxn)
            s->maxn = s->cnt[k];
        if (w > SIZE_MAX - s->opre[k]) {
            rc = MPI_ERR_OTHER;
            goto fn_fail;
        }
        s->opre[k + 1] = s->opre[k] + w;
    }
    ZMPI_CHECK(zmpi_scratch_get(c, s->opre[s->sub], &s->zout));
    ZMPI_CHECK(zmpi_scratch_get(c, s->maxn * c->es, &s->tmp));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Children v + m in sending order (largest subtree first): decompress and
 * recompress the parts [m, min(2m, sub)) of ours, packed from opre[m] on
 * (each stream is no longer than its slot, so the space left always holds
 * the worst case of the remaining parts), and send each bundle at once. */
static int forward(zmpi_call *c, fw_state *s, zmpi_dm_reqs *r)
{
    int rc = MPI_SUCCESS;
    for (int m = s->low >> 1; m > 0; m >>= 1) {
        if (m >= s->sub)
            continue;
        int end = 2 * m < s->sub ? 2 * m : s->sub;
        size_t pos = s->opre[m];
        for (int k = m; k < end; k++) {
            size_t olen = 0;
            ZMPI_CHECK(zmpi_dm_rehop(c, s->zin + s->pre[k], (size_t)s->dir[k], s->cnt[k], s->tmp,
                                     s->zout + pos, s->opre[end] - pos, &olen, &s->corrupt));
            s->odir[k] = olen;
            pos += olen;
        }
        ZMPI_CHECK(zmpi_dm_isend_bundle(c, s->odir + m, end - m, s->zout + s->opre[m],
                                        zmpi_dm_real(s->v + m, s->root, c->size), ZMPI_TAG_SCATTER, r));
        ZMPI_CHECK(zmpi_dm_progress(r));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_scatterv_cprp2p(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                         void *recvbuf, int recvcount, int root)
{
    zmpi_call_ran(c, ZMPI_SCATTER_CPRP2P);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size;
    fw_state s;
    zmpi_dm_reqs r = {0};

    memset(&s, 0, sizeof s);
    if (size < 2)
        goto fn_exit;
    ZMPI_CHECK(set_bound(c, sendbuf, sendcounts, displs, root));
    s.root = root;
    s.v = (c->rank - root + size) % size;
    s.sub = zmpi_dm_subtree(s.v, size);
    s.low = zmpi_dm_lowbit(s.v, size);
    if (s.v == 0) {
        /* the root compresses each part once and sends the bundles: binomial's root */
        rc = zmpi_scatterv_binomial(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root);
        zmpi_call_ran(c, ZMPI_SCATTER_CPRP2P); /* binomial reported itself: this is cprp2p's root */
        goto fn_exit;
    }
    ZMPI_CHECK(zmpi_dm_recv_bundle(c, s.sub, zmpi_dm_real(s.v - s.low, root, size), ZMPI_TAG_SCATTER, &s.dir,
                                   &s.pre, &s.zin));
    ZMPI_CHECK(zmpi_alloc((size_t)s.sub * sizeof *s.odir, &s.odir));
    ZMPI_CHECK(zmpi_alloc((size_t)s.sub * sizeof *s.cnt, &s.cnt));
    ZMPI_CHECK(zmpi_alloc(((size_t)s.sub + 1) * sizeof *s.opre, &s.opre));
    ZMPI_CHECK(layout_slots(c, &s));
    ZMPI_CHECK(forward(c, &s, &r));
    drc = zmpi_dm_decompress(c, s.zin, (size_t)s.dir[0], recvbuf, (size_t)recvcount);
    ZMPI_CHECK(zmpi_dm_waitall(&r));
    rc = drc ? drc : s.corrupt;
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_scratch_put(c, s.tmp);
    zmpi_scratch_put(c, s.zout);
    zmpi_scratch_put(c, s.zin);
    free(s.opre);
    free(s.pre);
    free(s.cnt);
    free(s.odir);
    free(s.dir);
    return rc;
fn_fail:
    goto fn_exit;
}
