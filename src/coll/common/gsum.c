/* Sums on grid codes: see gsum.h. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/gsum.h"

/* 1 if the settings (the same on every rank) allow the grid path. */
static int grid_wanted(const zmpi_call *c, MPI_Op op)
{
    return op == MPI_SUM && c->mode != ZMPI_EB_NONE && c->scope == ZMPI_SCOPE_RESULT && !c->chan &&
           c->st->cfg.codec == ZMPI_CODEC_AUTO && (c->dt == ZMPI_FLOAT || c->dt == ZMPI_DOUBLE);
}

int zmpi_gsum_begin(zmpi_call *c, MPI_Op op, const void *in, size_t count, const size_t *counts,
                    const size_t *displs, int nblocks, double hops, int spread, zmpi_gsum *g)
{
    int rc = MPI_SUCCESS, bad = 0, n = c->size;
    double loc[3], glob[3];

    g->d = NULL;
    g->count = count;
    g->step = g->e2 = 0;
    if (!grid_wanted(c, op))
        return zmpi_call_bound(c, hops, in, count);
    spread = spread && n >= 8; /* the coarse codes save log2(N / 2) bits a value, the fine ones cost 1 */
    zmpi_value_range(in, count, c->dt, &loc[0], &loc[1], &bad);
    loc[0] = -loc[0];
    loc[2] = bad;
    ZMPI_CHECK(PMPI_Allreduce(loc, glob, 3, MPI_DOUBLE, MPI_MAX, c->comm));
    double lo = -glob[0], hi = glob[1];
    double eb = c->mode == ZMPI_EB_ABS ? c->eb : c->eb * (hi - lo);
    double e = spread ? eb / (2.0 * n) : eb / n, amax = fmax(fabs(lo), fabs(hi));
    double step = 2.0 * e * (1.0 - 0x1p-17), maxerr = e * (1.0 - 0x1p-18);
    int on = glob[2] == 0 && hi >= lo && isfinite(eb) && step >= DBL_MIN * 0x1p60 &&
             (double)n * (amax / step + 1.0) < 0x1p30;
    if (!on) { /* the classic path, bound set from the same figures */
        if (c->mode == ZMPI_EB_ABS)
            ZMPI_CHECK(zmpi_call_bound(c, hops, in, count));
        else
            zmpi_call_bound_range(c, hops, lo, hi);
        goto fn_exit;
    }
    ZMPI_CHECK(zmpi_scratch_get(c, (count ? count : 1) * sizeof *g->d, &g->d));
    for (int b = 0; b < nblocks; b++) {
        const unsigned char *x = (const unsigned char *)in + displs[b] * c->es;
        if (zmpi_grid_quantize(x, counts[b], c->dt, step, maxerr, g->d + displs[b]) != ZMPI_OK) {
            rc = MPI_ERR_INTERN; /* excluded by the agreement above: a bug, never a silent result */
            goto fn_fail;
        }
    }
    g->step = step;
    g->e2 = spread ? eb / 2 : 0;
    atomic_fetch_add(&c->st->grid_sums, 1);
    c->grid = step;
    c->grid_es = c->es;
    c->es = sizeof(int32_t);
fn_exit:
    return rc;
fn_fail:
    zmpi_scratch_put(c, g->d);
    g->d = NULL;
    goto fn_exit;
}

int zmpi_gsum_decode(zmpi_call *c, const zmpi_gsum *g, const size_t *counts, const size_t *displs, int b0,
                     int nb, void *out)
{
    for (int b = b0; b < b0 + nb; b++) { /* in grid mode: the datatype's size is grid_es */
        unsigned char *y = (unsigned char *)out + (displs[b] - displs[b0]) * c->grid_es;
        if (zmpi_grid_dequantize(g->d + displs[b], counts[b], g->step, c->dt, y) != ZMPI_OK)
            return MPI_ERR_INTERN;
    }
    return MPI_SUCCESS;
}

int zmpi_gsum_spread(zmpi_call *c, zmpi_gsum *g, const size_t *counts, const size_t *displs, int b)
{
    int rc = MPI_SUCCESS;
    double *y = NULL, step2 = 2.0 * g->e2 * (1.0 - 0x1p-17);
    if (g->e2 <= 0)
        return MPI_SUCCESS;
    if (b >= 0 && counts[b] > 0) {
        int32_t *d = g->d + displs[b];
        ZMPI_CHECK(zmpi_scratch_get(c, counts[b] * sizeof *y, &y));
        if (zmpi_grid_dequantize(d, counts[b], g->step, ZMPI_DOUBLE, y) != ZMPI_OK ||
            zmpi_grid_quantize(y, counts[b], ZMPI_DOUBLE, step2, g->e2 * (1.0 - 0x1p-18), d) != ZMPI_OK) {
            rc = MPI_ERR_INTERN; /* a coarser grid of values already on one: cannot fail */
            goto fn_fail;
        }
    }
    g->step = step2;
fn_exit:
    zmpi_scratch_put(c, y);
    return rc;
fn_fail:
    goto fn_exit;
}

void zmpi_gsum_end(zmpi_call *c, zmpi_gsum *g)
{
    if (c->grid > 0) {
        c->es = c->grid_es;
        c->grid = 0;
    }
    zmpi_scratch_put(c, g->d);
    g->d = NULL;
}

/* ---- the packed table ---- */

int zmpi_gtable_layout(zmpi_call *c, const zmpi_gsum *g, const size_t *counts, const size_t *displs, int nblocks,
                       zmpi_gtable *t)
{
    int rc = MPI_SUCCESS;
    size_t chunk = c->st->cfg.chunk < 64 ? 64 : c->st->cfg.chunk, n = 0, total = 0, maxw = 0;
    zmpi_pieces *p = &t->all;

    memset(t, 0, sizeof *t);
    ZMPI_CHECK(zmpi_alloc(((size_t)nblocks + 1) * sizeof *t->bfirst, &t->bfirst));
    for (int b = 0; b < nblocks; b++) {
        t->bfirst[b] = n;
        n += counts[b] / chunk + (counts[b] % chunk != 0);
    }
    t->bfirst[nblocks] = n;
    ZMPI_CHECK(zmpi_alloc((n + 1) * sizeof *p->slot, &p->slot));
    ZMPI_CHECK(zmpi_alloc((n + 1) * sizeof *p->len, &p->len));
    ZMPI_CHECK(zmpi_alloc((n + 1) * sizeof *p->at, &p->at));
    p->ncap = n + 1;
    p->n = n;
    p->chunk = chunk;
    p->count = g->count;
    p->slot[0] = 0;
    for (int b = 0; b < nblocks; b++) {
        for (size_t j = t->bfirst[b]; j < t->bfirst[b + 1]; j++) {
            size_t first = displs[b] + (j - t->bfirst[b]) * chunk, end = displs[b] + counts[b];
            size_t m = end - first < chunk ? end - first : chunk, w = zmpi_grid_bound(m);
            p->at[j] = first;
            total += w;
            maxw = w > maxw ? w : maxw;
            p->slot[j + 1] = total;
        }
    }
    p->at[n] = g->count;
    ZMPI_CHECK(zmpi_scratch_get(c, total ? total : 1, &p->buf));
    p->cap = total;
    ZMPI_CHECK(zmpi_scratch_get(c, maxw ? maxw : 1, &t->sum));
    t->sumcap = maxw;
    for (size_t j = 0; j < n; j++)
        p->len[j] = -1; /* packed when first needed (table_ready) */
    t->codes = g->d;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gtable_unpack(zmpi_call *c, const zmpi_gtable *t, int b0, int b1, int *corrupt)
{
    for (size_t j = t->bfirst[b0]; j < t->bfirst[b1]; j++) {
        /* a piece never packed is still its codes in g->d */
        if (t->all.len[j] >= 0 && zmpi_pieces_decompress(c, &t->all, j, t->codes))
            *corrupt = MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

/* Packs piece j from the codes unless it is packed already. */
static int table_ready(zmpi_call *c, zmpi_gtable *t, size_t j)
{
    zmpi_pieces *p = &t->all;
    if (p->len[j] >= 0)
        return MPI_SUCCESS;
    const uint64_t t0 = zmpi_clock_ns();
    ptrdiff_t len = zmpi_grid_pack(t->codes + p->at[j], zmpi_pieces_count(p, j), p->buf + p->slot[j],
                                   p->slot[j + 1] - p->slot[j]);
    atomic_fetch_add(&c->st->ns_compress, zmpi_clock_ns() - t0);
    if (len < 0)
        return MPI_ERR_INTERN; /* the slot has the worst-case size: a bug */
    p->len[j] = (int)len;
    return MPI_SUCCESS;
}

/* p = pieces [j0, j1) of the table: a view of its slots (borrowed) or, with
 * own = 1, slots of the same sizes in p's own memory. */
static int table_part(zmpi_call *c, const zmpi_gtable *t, size_t j0, size_t j1, int own, zmpi_pieces *p)
{
    int rc = MPI_SUCCESS;
    const zmpi_pieces *a = &t->all;
    size_t n = j1 - j0;
    zmpi_pieces_free(c, p);
    ZMPI_CHECK(zmpi_alloc((n + 1) * sizeof *p->slot, &p->slot));
    ZMPI_CHECK(zmpi_alloc((n + 1) * sizeof *p->len, &p->len));
    ZMPI_CHECK(zmpi_alloc((n + 1) * sizeof *p->at, &p->at));
    p->ncap = n + 1;
    p->n = n;
    p->chunk = a->chunk;
    for (size_t j = 0; j <= n; j++) {
        p->slot[j] = a->slot[j0 + j] - a->slot[j0];
        p->at[j] = a->at[j0 + j] - a->at[j0];
        p->len[j] = j < n ? a->len[j0 + j] : -1;
    }
    p->count = p->at[n];
    if (own) {
        ZMPI_CHECK(zmpi_scratch_get(c, p->slot[n] ? p->slot[n] : 1, &p->buf));
        p->cap = p->slot[n];
    } else {
        p->buf = a->buf + a->slot[j0];
        p->cap = p->slot[n];
        p->borrowed = 1;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Adds the arrived piece j of x's incoming part (piece g of the table) into
 * the table; a corrupt piece sets *corrupt and leaves the table's piece as
 * it was, so that the ring goes on. */
static int table_add(zmpi_call *c, zmpi_gtable *t, zmpi_xchg *x, size_t j, size_t g, int *corrupt)
{
    int rc = MPI_SUCCESS;
    zmpi_pieces *a = &t->all, *pin = x->in;
    size_t m = zmpi_pieces_count(pin, j);
    ZMPI_CHECK(table_ready(c, t, g));
    ZMPI_CHECK(zmpi_xchg_wait_piece(x, j));
    const uint64_t t0 = zmpi_clock_ns();
    ptrdiff_t len = pin->len[j] < 0 ? ZMPI_ERR_CORRUPT
                                    : zmpi_grid_add(pin->buf + pin->slot[j], (size_t)pin->len[j], a->buf + a->slot[g],
                                                    (size_t)a->len[g], m, t->sum, t->sumcap);
    atomic_fetch_add(&c->st->ns_decompress, zmpi_clock_ns() - t0);
    if (len < 0 || (size_t)len > a->slot[g + 1] - a->slot[g]) {
        *corrupt = MPI_ERR_OTHER; /* reported at the end; no rank is left waiting */
        goto fn_exit;
    }
    memcpy(a->buf + a->slot[g], t->sum, (size_t)len);
    a->len[g] = (int)len;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gtable_exchange(zmpi_call *c, zmpi_gtable *t, int s0, int s1, int to, int k0, int k1, int from, int tag,
                         int *corrupt)
{
    int rc = MPI_SUCCESS;
    zmpi_pieces pout = {0}, pin = {0}, *a = &t->all;
    zmpi_xchg x = {0};
    size_t ks = t->bfirst[k0], ss = t->bfirst[s0];

    ZMPI_CHECK(table_part(c, t, t->bfirst[s0], t->bfirst[s1], 0, &pout));
    ZMPI_CHECK(table_part(c, t, ks, t->bfirst[k1], 1, &pin));
    ZMPI_CHECK(zmpi_xchg_start(c, &x, tag, pin.n ? from : MPI_PROC_NULL, &pin, pout.n ? to : MPI_PROC_NULL, &pout));
    for (size_t j = 0; j < pout.n; j++) { /* each piece leaves as soon as it is packed */
        ZMPI_CHECK(table_ready(c, t, ss + j));
        pout.len[j] = a->len[ss + j];
        zmpi_stat_sent(c, zmpi_pieces_count(&pout, j) * c->grid_es, (size_t)pout.len[j]);
        ZMPI_CHECK(zmpi_xchg_send(&x, j));
        ZMPI_CHECK(zmpi_xchg_poll(&x));
    }
    for (size_t j = 0; j < pin.n; j++)
        ZMPI_CHECK(table_add(c, t, &x, j, ks + j, corrupt));
    ZMPI_CHECK(zmpi_xchg_wait(&x));
fn_exit:
    zmpi_xchg_free(&x);
    zmpi_pieces_free(c, &pin);
    zmpi_pieces_free(c, &pout);
    return rc;
fn_fail:
    goto fn_exit;
}

void zmpi_gtable_free(zmpi_call *c, zmpi_gtable *t)
{
    zmpi_pieces_free(c, &t->all);
    zmpi_scratch_put(c, t->sum);
    free(t->bfirst);
    memset(t, 0, sizeof *t);
}

/* The ring, pipelined across its steps: the block a rank sends in step s is
 * the one it received in step s - 1, and each of its pieces leaves as soon
 * as that piece has arrived and been added, while the later pieces of step
 * s - 1 are still in flight - so the additions and the packing overlap the
 * transfers of the neighbouring steps instead of alternating with them.
 * Step s's receives are posted before step s - 1's last pieces are waited
 * for; both come from the left neighbour with one tag, and MPI's
 * non-overtaking order matches them to the receives in the order posted. */
int zmpi_gtable_ring(zmpi_call *c, zmpi_gtable *t, int tag, int *corrupt)
{
    int rc = MPI_SUCCESS, n = c->size, r = c->rank, left = (r - 1 + n) % n, right = (r + 1) % n;
    zmpi_pieces pout[2] = {{0}}, pin[2] = {{0}};
    zmpi_xchg x[2] = {{0}};
    zmpi_pieces *a = &t->all;
    for (int s = 0; s < n - 1; s++) {
        int ob = (r - s - 1 + n) % n, ib = (r - s - 2 + 2 * n) % n, k = s & 1;
        size_t os = t->bfirst[ob], is = t->bfirst[ib];
        zmpi_xchg *cur = &x[k], *prev = &x[k ^ 1];
        ZMPI_CHECK(table_part(c, t, os, t->bfirst[ob + 1], 0, &pout[k]));
        ZMPI_CHECK(table_part(c, t, is, t->bfirst[ib + 1], 1, &pin[k]));
        ZMPI_CHECK(zmpi_xchg_start(c, cur, tag, pin[k].n ? left : MPI_PROC_NULL, &pin[k],
                                   pout[k].n ? right : MPI_PROC_NULL, &pout[k]));
        for (size_t j = 0; j < pout[k].n; j++) {
            if (s > 0) /* block ob is the one step s - 1 received: its piece j summed first */
                ZMPI_CHECK(table_add(c, t, prev, j, os + j, corrupt));
            else
                ZMPI_CHECK(table_ready(c, t, os + j));
            pout[k].len[j] = a->len[os + j];
            zmpi_stat_sent(c, zmpi_pieces_count(&pout[k], j) * c->grid_es, (size_t)pout[k].len[j]);
            ZMPI_CHECK(zmpi_xchg_send(cur, j));
            ZMPI_CHECK(zmpi_xchg_poll(cur));
        }
        if (s > 0)
            ZMPI_CHECK(zmpi_xchg_wait(prev));
        for (size_t j = 0; j < pin[k].n; j++) /* this rank's own pieces of ib, packed while they travel */
            ZMPI_CHECK(table_ready(c, t, is + j));
    }
    if (n > 1) { /* the last step's pieces: this rank's own block, complete */
        int k = (n - 2) & 1, ib = r;
        for (size_t j = 0; j < pin[k].n; j++)
            ZMPI_CHECK(table_add(c, t, &x[k], j, t->bfirst[ib] + j, corrupt));
        ZMPI_CHECK(zmpi_xchg_wait(&x[k]));
    }
fn_exit:
    for (int k = 0; k < 2; k++) {
        zmpi_xchg_free(&x[k]);
        zmpi_pieces_free(c, &pin[k]);
        zmpi_pieces_free(c, &pout[k]);
    }
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gtable_halving(zmpi_call *c, zmpi_gtable *t, int p, int v, const int *ranks, int tag, int *corrupt)
{
    int rc = MPI_SUCCESS, lo = 0, hi = p;
    for (int d = p / 2; d >= 1; d /= 2) {
        int mid = lo + d, klo, khi, slo, shi, peer = ranks ? ranks[v ^ d] : v ^ d;
        if (v & d) {
            klo = mid, khi = hi, slo = lo, shi = mid;
        } else {
            klo = lo, khi = mid, slo = mid, shi = hi;
        }
        ZMPI_CHECK(zmpi_gtable_exchange(c, t, slo, shi, peer, klo, khi, peer, tag, corrupt));
        lo = klo;
        hi = khi;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gtable_reduce_scatter(zmpi_call *c, const zmpi_gsum *g, const size_t *counts, const size_t *displs,
                               int halving, int tag, zmpi_gtable *t, int *corrupt)
{
    int rc = MPI_SUCCESS, n = c->size, r = c->rank;
    ZMPI_CHECK(zmpi_gtable_layout(c, g, counts, displs, n, t));
    if (halving)
        ZMPI_CHECK(zmpi_gtable_halving(c, t, n, r, NULL, tag, corrupt));
    else
        ZMPI_CHECK(zmpi_gtable_ring(c, t, tag, corrupt));
    ZMPI_CHECK(zmpi_gtable_unpack(c, t, r, r + 1, corrupt));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}
