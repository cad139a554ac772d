/*
 * apps/atmos/grid.c - the Gaussian grid, the normalised associated Legendre
 * functions and the two decompositions.
 *
 * Gaussian latitudes: the roots of the Legendre polynomial P_nlat(mu) by
 * Newton iteration, weights 2 / ((1 - mu^2) P'_nlat(mu)^2) (they sum to 2).
 * Legendre functions: Pbar_n^m normalised so that the integral of its
 * square over -1 <= mu <= 1 is 1, by the stable recurrence in n
 *   Pbar_0^0 = 1/sqrt(2),  Pbar_m^m = sqrt((2m+1)/(2m)) sqrt(1-mu^2) Pbar_{m-1}^{m-1},
 *   Pbar_{m+1}^m = sqrt(2m+3) mu Pbar_m^m,
 *   Pbar_n^m = (mu Pbar_{n-1}^m - eps_{n-1}^m Pbar_{n-2}^m) / eps_n^m,
 *   eps_n^m = sqrt((n^2 - m^2) / (4n^2 - 1)),
 * and H_n^m = (1 - mu^2) dPbar_n^m/dmu = -n eps_{n+1}^m Pbar_{n+1}^m + (n+1) eps_n^m Pbar_{n-1}^m.
 * Only the northern rows are tabulated: Pbar_n^m(-mu) = (-1)^(n+m) Pbar_n^m(mu).
 *
 * Decompositions (no communication; every rank computes every rank's part):
 * grid space by contiguous bands of latitude rows (rank r: rows row0[r] ..
 * row0[r+1]-1, as equal as possible; ranks beyond nlat own none); spectral
 * space by zonal wavenumber, each m (M + 1 - m coefficients) given in turn
 * to the least loaded rank (ties: the lowest rank), which balances the
 * coefficients (the Legendre work) within one m's worth.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atmos.h"

/* P_n(x) and P_n'(x) of the Legendre polynomial of degree n >= 1. */
static void legendre_poly(int n, double x, double *p, double *dp)
{
    double p0 = 1, p1 = x;
    for (int k = 1; k < n; k++) {
        double p2 = ((2.0 * k + 1) * x * p1 - k * p0) / (k + 1);
        p0 = p1;
        p1 = p2;
    }
    *p = p1;
    *dp = n * (x * p1 - p0) / (x * x - 1);
}

/* Gaussian latitudes (north to south) and weights. */
static void gaussian(atmos *s)
{
    int n = s->nlat;
    for (int i = 0; i < n / 2; i++) {
        double x = cos(AT_PI * (i + 0.75) / (n + 0.5)), p, dp;
        for (int it = 0; it < 100; it++) {
            legendre_poly(n, x, &p, &dp);
            double dx = p / dp;
            x -= dx;
            if (fabs(dx) <= 1e-16)
                break;
        }
        legendre_poly(n, x, &p, &dp);
        double w = 2 / ((1 - x * x) * dp * dp);
        s->mu[i] = x;
        s->mu[n - 1 - i] = -x;
        s->wt[i] = s->wt[n - 1 - i] = w;
    }
    for (int j = 0; j < n; j++) {
        s->lat[j] = asin(s->mu[j]);
        s->clat[j] = sqrt(1 - s->mu[j] * s->mu[j]);
    }
}

static double eps_nm(int n, int m)
{
    return sqrt((double)(n * n - m * m) / (4.0 * n * n - 1));
}

/* Pbar_n^m(mu) for n = m .. M + 1 into p[0 .. M + 1 - m], and H_n^m for
 * n = m .. M into h[0 .. M - m]. */
static void legendre_m(int M, int m, double mu, double *p, double *h)
{
    double c = sqrt(1 - mu * mu), pmm = 1 / sqrt(2.0);
    for (int k = 1; k <= m; k++)
        pmm *= sqrt((2.0 * k + 1) / (2.0 * k)) * c;
    p[0] = pmm;
    p[1] = sqrt(2.0 * m + 3) * mu * pmm;
    for (int n = m + 2; n <= M + 1; n++)
        p[n - m] = (mu * p[n - m - 1] - eps_nm(n - 1, m) * p[n - m - 2]) / eps_nm(n, m);
    for (int n = m; n <= M; n++) {
        double hn = -n * eps_nm(n + 1, m) * p[n + 1 - m];
        if (n > m)
            hn += (n + 1) * eps_nm(n, m) * p[n - 1 - m];
        h[n - m] = hn;
    }
}

/* Latitude bands and the wavenumbers of every rank. */
static void decompose(atmos *s)
{
    int P = s->a.size, base = s->nlat / P, rem = s->nlat % P;
    s->row0 = at_alloc(s, (size_t)P + 1, sizeof(int));
    for (int r = 0; r <= P; r++)
        s->row0[r] = r * base + (r < rem ? r : rem);
    s->j0 = s->row0[s->a.rank];
    s->nrow = s->row0[s->a.rank + 1] - s->j0;

    int *own = at_alloc(s, (size_t)s->nm_all, sizeof(int));
    long *load = at_alloc(s, (size_t)P, sizeof(long));
    for (int m = 0; m <= s->M; m++) {
        int best = 0;
        for (int r = 1; r < P; r++)
            if (load[r] < load[best])
                best = r;
        own[m] = best;
        load[best] += s->M + 1 - m;
    }
    s->mfirst = at_alloc(s, (size_t)P, sizeof(int));
    s->mcount = at_alloc(s, (size_t)P, sizeof(int));
    s->mall = at_alloc(s, (size_t)s->nm_all, sizeof(int));
    for (int r = 0, k = 0; r < P; r++) {
        s->mfirst[r] = k;
        for (int m = 0; m <= s->M; m++)
            if (own[m] == r)
                s->mall[k++] = m;
        s->mcount[r] = k - s->mfirst[r];
    }
    free(own);
    free(load);
    s->nm = s->mcount[s->a.rank];
    s->mlist = s->mall + s->mfirst[s->a.rank];
}

/* Pbar and H of the rank's wavenumbers at the northern rows: P[koff[i] *
 * nhalf + jp * (M + 1 - m) + n - m]. */
static void tables(atmos *s)
{
    s->koff = at_alloc(s, (size_t)s->nm + 1, sizeof(int));
    for (int i = 0; i < s->nm; i++)
        s->koff[i + 1] = s->koff[i] + s->M + 1 - s->mlist[i];
    s->nk = s->koff[s->nm];
    s->P = at_dalloc(s, (size_t)s->nk * (size_t)s->nhalf);
    s->H = at_dalloc(s, (size_t)s->nk * (size_t)s->nhalf);
    double *p = at_dalloc(s, (size_t)s->M + 2), *h = at_dalloc(s, (size_t)s->M + 1);
    for (int i = 0; i < s->nm; i++) {
        int m = s->mlist[i], nn = s->M + 1 - m;
        for (int jp = 0; jp < s->nhalf; jp++) {
            legendre_m(s->M, m, s->mu[jp], p, h);
            size_t at = (size_t)s->koff[i] * (size_t)s->nhalf + (size_t)jp * (size_t)nn;
            memcpy(s->P + at, p, (size_t)nn * sizeof *p);
            memcpy(s->H + at, h, (size_t)nn * sizeof *h);
        }
    }
    free(p);
    free(h);
}

void grid_setup(atmos *s)
{
    s->nlat = s->nlon / 2;
    s->nhalf = s->nlat / 2;
    s->nm_all = s->M + 1;
    s->mu = at_dalloc(s, (size_t)s->nlat);
    s->wt = at_dalloc(s, (size_t)s->nlat);
    s->lat = at_dalloc(s, (size_t)s->nlat);
    s->clat = at_dalloc(s, (size_t)s->nlat);
    gaussian(s);
    decompose(s);
    tables(s);
}

void grid_free(atmos *s)
{
    free(s->mu);
    free(s->wt);
    free(s->lat);
    free(s->clat);
    free(s->row0);
    free(s->mfirst);
    free(s->mcount);
    free(s->mall);
    free(s->koff);
    free(s->P);
    free(s->H);
}

int grid_owner(const atmos *s, int row)
{
    int lo = 0, hi = s->a.size - 1;
    while (lo < hi) { /* the last rank r with row0[r] <= row (ranks without rows are skipped) */
        int mid = (lo + hi + 1) / 2;
        if (s->row0[mid] <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}
