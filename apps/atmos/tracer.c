/*
 * apps/atmos/tracer.c - one passive tracer per layer, advected
 * semi-Lagrangian by the model's winds (as CAM's Eulerian core advects
 * moisture), with a latitude halo exchanged every step.
 *
 * Scheme: three time levels, q^(n+1)(x) = q^(n-1)(x_d) (the first step:
 * q^1(x) = q^0(x_d) over dt), x_d the departure point of the great-circle
 * trajectory that arrives at the grid point x after tau = 2 dt with the
 * winds of time n at its midpoint x_m: two iterations
 *   x_m = normalise(x - tau/(2a) v),   v: first the wind at x, then the
 *                                      wind bilinearly interpolated at x_m
 *   x_d = 2 (x . x_m) x_m - x          (the midpoint's mirror image)
 * in Cartesian coordinates (the wind too: its components are smooth across
 * the poles), then q^(n-1) at x_d by cubic Lagrange interpolation in
 * longitude (4 points, uniform) and in latitude (4 Gaussian rows). Not
 * conservative: the run reports the tracer's global mass change.
 *
 * Halo: a rank's arrivals need rows up to W = d + 2 beyond its own, d the
 * rows a trajectory can cross in 2 dt at AT_VMAX (a departure outside the
 * halo stops the run). Rows beyond a pole are rows of the other side at
 * longitude + 180 degrees with u and v negated. Every step, for every peer
 * that owns rows of its halo, a rank posts MPI_Irecv and the peer MPI_Isend
 * (app_irecv / app_isend / app_waitall, MPI_DOUBLE, tag 0, the halo
 * communicator): one message [q^(n-1), u^n, v^n][layer][row][lon] of the
 * rows it needs, in the receiver's halo order; a halo row that is the
 * rank's own row across a pole is copied.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atmos.h"

#define HALO_FIELDS 3 /* q, u, v */

/* The real row of extended row e (-nlat <= e < 2 nlat) and whether it is
 * taken across a pole. */
static int real_row(const atmos *s, int e, int *flip)
{
    *flip = e < 0 || e >= s->nlat;
    return e < 0 ? -1 - e : e >= s->nlat ? 2 * s->nlat - 1 - e : e;
}

/* The halo rows of rank p (2 W, or 0 without rows of its own). */
static int halo_rows(const atmos *s, int p, int *out)
{
    int a = s->row0[p], b = s->row0[p + 1], W = s->halo.width, n = 0;
    if (a == b)
        return 0;
    for (int e = a - W; e < a; e++)
        out[n++] = e;
    for (int e = b; e < b + W; e++)
        out[n++] = e;
    return n;
}

/* Who sends which rows to whom (every rank computes every rank's halo):
 * the rows rank p needs from this rank, in p's halo order, and the rows
 * this rank needs, grouped by owner in its halo order. */
static void plan(atmos *s)
{
    at_halo *h = &s->halo;
    int P = s->a.size, me = s->a.rank, flip, ns = 0, nr = 0, nself = 0;
    int *rows = at_alloc(s, 2 * (size_t)h->width + 1, sizeof(int));
    int *mine = at_alloc(s, 2 * (size_t)h->width + 1, sizeof(int)), *fill = at_alloc(s, (size_t)P, sizeof(int));
    int nmine = halo_rows(s, me, mine);
    for (int p = 0; p < P; p++) {
        int n = p == me ? 0 : halo_rows(s, p, rows);
        for (int t = 0; t < n; t++)
            h->scount[p] += grid_owner(s, real_row(s, rows[t], &flip)) == me;
    }
    for (int t = 0; t < nmine; t++) {
        int o = grid_owner(s, real_row(s, mine[t], &flip));
        if (o == me)
            nself++;
        else
            h->rcount[o]++;
    }
    for (int p = 0; p < P; p++) {
        h->sfirst[p] = ns;
        h->rfirst[p] = fill[p] = nr;
        ns += h->scount[p];
        nr += h->rcount[p];
    }
    h->srow = at_alloc(s, (size_t)ns + 1, sizeof(int));
    h->rext = at_alloc(s, (size_t)nr + 1, sizeof(int));
    h->self = at_alloc(s, (size_t)nself + 1, sizeof(int));
    h->nsend = ns;
    h->nrecv = nr;
    for (int p = 0; p < P; p++) {
        int n = p == me ? 0 : halo_rows(s, p, rows), k = h->sfirst[p];
        for (int t = 0; t < n; t++) {
            int r = real_row(s, rows[t], &flip);
            if (grid_owner(s, r) == me)
                h->srow[k++] = r - s->j0;
        }
    }
    for (int t = 0; t < nmine; t++) {
        int o = grid_owner(s, real_row(s, mine[t], &flip));
        if (o == me)
            h->self[h->nself++] = mine[t];
        else
            h->rext[fill[o]++] = mine[t];
    }
    free(rows);
    free(mine);
    free(fill);
}

void tracer_setup(atmos *s)
{
    at_halo *h = &s->halo;
    int P = s->a.size, L = s->L;
    double dmin = 2 * (AT_PI / 2 - s->lat[0]); /* the rows across a pole */
    for (int j = 0; j + 1 < s->nlat; j++)
        dmin = fmin(dmin, s->lat[j] - s->lat[j + 1]);
    h->width = (int)ceil(2 * s->dt * AT_VMAX / (AT_RADIUS * dmin)) + 2;
    if (h->width > s->nlat)
        h->width = s->nlat;
    h->e0 = s->j0 - h->width;
    h->ne = s->nrow ? s->nrow + 2 * h->width : 0;
    h->theta = at_dalloc(s, (size_t)h->ne + 1);
    h->sth = at_dalloc(s, (size_t)h->ne + 1);
    h->cth = at_dalloc(s, (size_t)h->ne + 1);
    for (int x = 0; x < h->ne; x++) {
        int e = h->e0 + x, flip, r = real_row(s, e, &flip);
        h->theta[x] = !flip ? s->lat[r] : e < 0 ? AT_PI - s->lat[r] : -AT_PI - s->lat[r];
        h->sth[x] = sin(h->theta[x]);
        h->cth[x] = cos(h->theta[x]);
    }
    h->lagden = at_dalloc(s, 4 * (size_t)h->ne + 4); /* cubic Lagrange in latitude, rows x-1 .. x+2 */
    for (int x = 1; x + 2 < h->ne; x++)
        for (int a = 0; a < 4; a++) {
            double c = 1;
            for (int b = 0; b < 4; b++)
                if (b != a)
                    c *= h->theta[x - 1 + a] - h->theta[x - 1 + b];
            h->lagden[4 * x + a] = 1 / c;
        }
    h->scount = at_alloc(s, (size_t)P, sizeof(int));
    h->sfirst = at_alloc(s, (size_t)P, sizeof(int));
    h->rcount = at_alloc(s, (size_t)P, sizeof(int));
    h->rfirst = at_alloc(s, (size_t)P, sizeof(int));
    plan(s);
    size_t blk = HALO_FIELDS * (size_t)L * (size_t)s->nlon, ext = (size_t)L * (size_t)h->ne * (size_t)s->nlon;
    size_t cells = (size_t)L * (size_t)s->nrow * (size_t)s->nlon;
    h->sbuf = at_dalloc(s, blk * (size_t)h->nsend);
    h->rbuf = at_dalloc(s, blk * (size_t)h->nrecv);
    h->req = at_alloc(s, 2 * (size_t)P, sizeof(MPI_Request));
    h->xq = at_dalloc(s, ext);
    h->xu = at_dalloc(s, ext);
    h->xv = at_dalloc(s, ext);
    h->wx = at_dalloc(s, ext);
    h->wy = at_dalloc(s, ext);
    h->wz = at_dalloc(s, ext);
    h->sinlon = at_dalloc(s, (size_t)s->nlon);
    h->coslon = at_dalloc(s, (size_t)s->nlon);
    for (int i = 0; i < s->nlon; i++) {
        h->sinlon[i] = sin(2 * AT_PI * i / s->nlon);
        h->coslon[i] = cos(2 * AT_PI * i / s->nlon);
    }
    s->q_prev = at_dalloc(s, cells);
    s->q_cur = at_dalloc(s, cells);
    s->q_next = at_dalloc(s, cells);
    s->u = at_dalloc(s, cells);
    s->v = at_dalloc(s, cells);
    for (int l = 0; l < L; l++)
        for (int row = 0; row < s->nrow; row++)
            for (int i = 0; i < s->nlon; i++)
                s->q_cur[((size_t)l * s->nrow + row) * s->nlon + i] =
                    case_tracer(2 * AT_PI * i / s->nlon, s->lat[s->j0 + row]);
}

void tracer_free(atmos *s)
{
    at_halo *h = &s->halo;
    double *d[] = {h->theta, h->sth, h->cth, h->lagden, h->sbuf, h->rbuf, h->xq, h->xu, h->xv, h->wx, h->wy, h->wz,
                   h->sinlon, h->coslon, s->q_prev, s->q_cur, s->q_next, s->u, s->v};
    int *n[] = {h->scount, h->sfirst, h->rcount, h->rfirst, h->srow, h->rext, h->self};
    for (size_t i = 0; i < sizeof d / sizeof *d; i++)
        free(d[i]);
    for (size_t i = 0; i < sizeof n / sizeof *n; i++)
        free(n[i]);
    free(h->req);
}

/* One row of field fld (0 q, 1 u, 2 v) of layer l into extended row x,
 * across a pole (flip): longitude + 180 degrees, u and v negated. */
static void put_row(atmos *s, int fld, int l, int x, const double *src, int flip)
{
    at_halo *h = &s->halo;
    double *base = fld == 0 ? h->xq : fld == 1 ? h->xu : h->xv;
    double *dst = base + ((size_t)l * h->ne + x) * s->nlon, sign = fld ? -1 : 1;
    int n = s->nlon, half = n / 2;
    if (!flip) {
        memcpy(dst, src, (size_t)n * sizeof *dst);
        return;
    }
    for (int i = 0; i < n; i++)
        dst[i] = sign * src[(i + half) % n];
}

static const double *field_of(const atmos *s, int fld, const double *q)
{
    return fld == 0 ? q : fld == 1 ? s->u : s->v;
}

/* The rows this rank has itself: its own and those across a pole. */
static void local_rows(atmos *s, const double *q)
{
    at_halo *h = &s->halo;
    for (int fld = 0; fld < HALO_FIELDS; fld++)
        for (int l = 0; l < s->L; l++) {
            const double *f = field_of(s, fld, q) + (size_t)l * s->nrow * s->nlon;
            for (int row = 0; row < s->nrow; row++)
                put_row(s, fld, l, h->width + row, f + (size_t)row * s->nlon, 0);
            for (int t = 0; t < h->nself; t++) {
                int flip, r = real_row(s, h->self[t], &flip);
                put_row(s, fld, l, h->self[t] - h->e0, f + (size_t)(r - s->j0) * s->nlon, flip);
            }
        }
}

/* The halo exchange: tracer q and the winds of the rows other ranks own. */
static void exchange(atmos *s, const double *q)
{
    at_halo *h = &s->halo;
    size_t blk = HALO_FIELDS * (size_t)s->L * (size_t)s->nlon, row_bytes = (size_t)s->nlon * sizeof(double);
    int nreq = 0;
    for (int p = 0; p < s->a.size; p++)
        if (h->rcount[p])
            app_irecv(&s->a, h->rbuf + blk * (size_t)h->rfirst[p], (int)(blk * (size_t)h->rcount[p]), MPI_DOUBLE, p,
                      0, s->comm_halo, &h->req[nreq++]);
    for (int p = 0; p < s->a.size; p++) {
        if (!h->scount[p])
            continue;
        double *b = h->sbuf + blk * (size_t)h->sfirst[p];
        for (int fld = 0; fld < HALO_FIELDS; fld++)
            for (int l = 0; l < s->L; l++)
                for (int t = 0; t < h->scount[p]; t++, b += s->nlon)
                    memcpy(b, field_of(s, fld, q) + ((size_t)l * s->nrow + h->srow[h->sfirst[p] + t]) * s->nlon,
                           row_bytes);
        app_isend(&s->a, h->sbuf + blk * (size_t)h->sfirst[p], (int)(blk * (size_t)h->scount[p]), MPI_DOUBLE, p, 0,
                  s->comm_halo, &h->req[nreq++]);
    }
    local_rows(s, q);
    app_waitall(&s->a, nreq, h->req, MPI_STATUSES_IGNORE);
    for (int p = 0; p < s->a.size; p++) {
        const double *b = h->rbuf + blk * (size_t)h->rfirst[p];
        for (int fld = 0; fld < HALO_FIELDS; fld++)
            for (int l = 0; l < s->L; l++)
                for (int t = 0; t < h->rcount[p]; t++, b += s->nlon) {
                    int e = h->rext[h->rfirst[p] + t], flip;
                    real_row(s, e, &flip);
                    put_row(s, fld, l, e - h->e0, b, flip);
                }
    }
}

/* Cartesian wind components on the extended rows (u e_lambda + v e_theta). */
static void cartesian(atmos *s)
{
    at_halo *h = &s->halo;
    for (int l = 0; l < s->L; l++)
        for (int x = 0; x < h->ne; x++) {
            size_t o = ((size_t)l * h->ne + x) * s->nlon;
            double st = h->sth[x], ct = h->cth[x];
            for (int i = 0; i < s->nlon; i++) {
                double u = h->xu[o + i], v = h->xv[o + i], sl = h->sinlon[i], cl = h->coslon[i];
                h->wx[o + i] = -u * sl - v * st * cl;
                h->wy[o + i] = u * cl - v * st * sl;
                h->wz[o + i] = v * ct;
            }
        }
}

/* The largest extended row x with theta[x] >= th (-1 if none): a guess
 * from the mean spacing, then a walk (the rows are nearly uniform). */
static int find_row(const at_halo *h, double th)
{
    if (h->ne < 2)
        return h->ne && h->theta[0] >= th ? 0 : -1;
    double d = (h->theta[0] - h->theta[h->ne - 1]) / (h->ne - 1), g = (h->theta[0] - th) / d;
    int x = !(g >= 0) ? -1 : g > h->ne - 1 ? h->ne - 1 : (int)g; /* NaN: -1 */
    while (x + 1 < h->ne && h->theta[x + 1] >= th)
        x++;
    while (x >= 0 && h->theta[x] < th)
        x--;
    return x;
}

/* Longitude lam in grid units: the cell i0 (0 .. nlon-1) and the fraction. */
static int lon_cell(const atmos *s, double lam, double *frac)
{
    double xl = lam / (2 * AT_PI) * s->nlon;
    double fl = floor(xl);
    int i0 = (int)fl;
    *frac = xl - fl;
    return i0 < 0 ? i0 + s->nlon : i0 >= s->nlon ? i0 - s->nlon : i0;
}

/* The Cartesian wind of layer l at (lam, th), bilinear; -1 outside the halo. */
static int wind_at(const atmos *s, int l, double lam, double th, double w[3])
{
    const at_halo *h = &s->halo;
    int x = find_row(h, th);
    if (x < 0 || x + 1 >= h->ne)
        return -1;
    double t = (th - h->theta[x]) / (h->theta[x + 1] - h->theta[x]), f;
    int i0 = lon_cell(s, lam, &f), i1 = i0 + 1 < s->nlon ? i0 + 1 : 0;
    const double *c[3] = {h->wx, h->wy, h->wz};
    for (int d = 0; d < 3; d++) {
        const double *r0 = c[d] + ((size_t)l * h->ne + x) * s->nlon, *r1 = r0 + s->nlon;
        w[d] = (1 - t) * ((1 - f) * r0[i0] + f * r0[i1]) + t * ((1 - f) * r1[i0] + f * r1[i1]);
    }
    return 0;
}

static void normalise(double x[3])
{
    double r = 1 / sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2]);
    for (int d = 0; d < 3; d++)
        x[d] *= r;
}

/* The departure point of the trajectory of layer l arriving at extended row
 * x, longitude i after tau; -1 if the midpoint leaves the halo. */
static int departure(const atmos *s, int l, int x, int i, double tau, double *lam, double *th)
{
    const at_halo *h = &s->halo;
    size_t o = ((size_t)l * h->ne + x) * s->nlon + i;
    double r[3] = {h->cth[x] * h->coslon[i], h->cth[x] * h->sinlon[i], h->sth[x]};
    double w[3] = {h->wx[o], h->wy[o], h->wz[o]}, m[3], k = tau / (2 * AT_RADIUS);
    for (int it = 0; it < 2; it++) {
        if (it) {
            double mz = m[2] > 1 ? 1 : m[2] < -1 ? -1 : m[2], ml = atan2(m[1], m[0]);
            if (wind_at(s, l, ml < 0 ? ml + 2 * AT_PI : ml, asin(mz), w))
                return -1;
            double wm = w[0] * m[0] + w[1] * m[1] + w[2] * m[2]; /* onto the tangent plane */
            for (int d = 0; d < 3; d++)
                w[d] -= wm * m[d];
        }
        for (int d = 0; d < 3; d++)
            m[d] = r[d] - k * w[d];
        normalise(m);
    }
    double rm = r[0] * m[0] + r[1] * m[1] + r[2] * m[2], dp[3];
    for (int d = 0; d < 3; d++)
        dp[d] = 2 * rm * m[d] - r[d];
    normalise(dp);
    double dl = atan2(dp[1], dp[0]);
    *lam = dl < 0 ? dl + 2 * AT_PI : dl;
    *th = asin(dp[2] > 1 ? 1 : dp[2] < -1 ? -1 : dp[2]);
    return 0;
}

/* Cubic Lagrange interpolation of f[ne][nlon] (one layer) at (lam, th);
 * -1 if the stencil leaves the halo. */
static int cubic_at(const atmos *s, const double *f, double lam, double th, double *out)
{
    const at_halo *h = &s->halo;
    int x = find_row(h, th);
    if (x < 1 || x + 2 >= h->ne)
        return -1;
    double t, cl[4], cy[4], val = 0;
    int i0 = lon_cell(s, lam, &t), n = s->nlon;
    cl[0] = -t * (t - 1) * (t - 2) / 6;
    cl[1] = (t + 1) * (t - 1) * (t - 2) / 2;
    cl[2] = -(t + 1) * t * (t - 2) / 2;
    cl[3] = (t + 1) * t * (t - 1) / 6;
    const double *y = h->theta + x - 1, *den = h->lagden + 4 * (size_t)x;
    double d0 = th - y[0], d1 = th - y[1], d2 = th - y[2], d3 = th - y[3];
    cy[0] = d1 * d2 * d3 * den[0];
    cy[1] = d0 * d2 * d3 * den[1];
    cy[2] = d0 * d1 * d3 * den[2];
    cy[3] = d0 * d1 * d2 * den[3];
    int ix[4];
    for (int b = 0; b < 4; b++) {
        ix[b] = i0 - 1 + b;
        ix[b] += ix[b] < 0 ? n : ix[b] >= n ? -n : 0;
    }
    for (int a = 0; a < 4; a++) {
        const double *row = f + (size_t)(x - 1 + a) * n;
        double rv = 0;
        for (int b = 0; b < 4; b++)
            rv += cl[b] * row[ix[b]];
        val += cy[a] * rv;
    }
    *out = val;
    return 0;
}

/* u and v of every layer on the rank's rows (from U = u cos(lat), V). */
static void winds(atmos *s)
{
    size_t cells = (size_t)s->nrow * (size_t)s->nlon;
    for (int l = 0; l < s->L; l++)
        for (int row = 0; row < s->nrow; row++) {
            double c = s->clat[s->j0 + row];
            size_t o = (size_t)l * cells + (size_t)row * s->nlon;
            const double *U = s->grid + (size_t)(G_U * s->L + l) * cells + (size_t)row * s->nlon;
            const double *V = s->grid + (size_t)(G_V * s->L + l) * cells + (size_t)row * s->nlon;
            for (int i = 0; i < s->nlon; i++) {
                s->u[o + i] = U[i] / c;
                s->v[o + i] = V[i] / c;
            }
        }
}

void tracer_step(atmos *s, double tau, int first)
{
    at_halo *h = &s->halo;
    const double *src = first ? s->q_cur : s->q_prev;
    long bad = 0;
    winds(s);
    exchange(s, src);
    cartesian(s);
    for (int l = 0; l < s->L; l++)
        for (int row = 0; row < s->nrow; row++)
            for (int i = 0; i < s->nlon; i++) {
                double lam, th, val;
                size_t o = ((size_t)l * s->nrow + row) * s->nlon + i;
                if (departure(s, l, h->width + row, i, tau, &lam, &th) ||
                    cubic_at(s, h->xq + (size_t)l * h->ne * s->nlon, lam, th, &val)) {
                    bad++;
                    val = src[o];
                }
                s->q_next[o] = val;
            }
    if (bad) {
        fprintf(stderr, "atmos: rank %d: %ld departure points beyond the %d-row halo (winds above %g m/s or "
                "not finite?)\n",
                s->a.rank, bad, h->width, AT_VMAX);
        MPI_Abort(s->a.comm, 1);
    }
    double *t = s->q_prev;
    s->q_prev = s->q_cur;
    s->q_cur = s->q_next;
    s->q_next = t;
}
