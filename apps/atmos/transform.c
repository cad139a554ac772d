/*
 * apps/atmos/transform.c - the spectral transforms: FFT in longitude
 * (FFTW3, one plan per direction for one row, made by each rank), the
 * transposes between latitude rows and zonal wavenumbers, and the
 * Legendre transforms in latitude.
 *
 * Forward (grid -> spectral), tr_forward: every rank FFTs its latitude rows
 * of every field (Fourier coefficients m = 0..M, divided by nlon), then one
 * MPI_Alltoallv (app_alltoallv, MPI_DOUBLE, on the caller's communicator:
 * the forward-transpose one in the time loop) moves them so that each rank
 * holds its wavenumbers m at every latitude: rank s sends rank r the block
 * [field][r's m, ascending][re, im][s's rows, north to south], so that
 * consecutive messages between two ranks hold the same variables one step
 * apart. The owner of m then sums over the latitudes, in one global order
 * (northern row jp with its southern mirror, jp = 0 .. nlat/2 - 1,
 * whatever the decomposition: the result is bit-identical at every rank
 * count):
 *   sp_n^m = sum_j c_j x_m(mu_j) Pbar_n^m(mu_j)      (the first np fields)
 *   sh_n^m = sum_j c_j x_m(mu_j) H_n^m(mu_j)         (fields h0 .. h0 + nh - 1)
 * c_j the Gaussian weight w_j (the fields w0 .. w1 - 1) or w_j / (a (1 -
 * mu_j^2)) (the others: fluxes whose mu-derivative is taken). The messages
 * carry the fields' Fourier coefficients in their own units, as CAM's do.
 *
 * Inverse (spectral -> grid): tr_synth sums the series at every latitude
 * for the rank's m's (P- and H-sums), the caller combines them into the
 * Fourier coefficients of its grid fields, and tr_inverse moves them back
 * (one MPI_Alltoallv on the caller's communicator: rank r sends rank s the
 * block [field][r's m][re, im][s's rows]) and inverse-FFTs every row.
 * Ranks without rows or without wavenumbers send and receive zero counts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atmos.h"

void tr_setup(atmos *s)
{
    int P = s->a.size, nf = NFLUX * s->L, M1 = s->M + 1;
    size_t rows = (size_t)M1 * (size_t)s->nrow, ms = (size_t)s->nm * (size_t)s->nlat;
    s->fft_r = fftw_alloc_real((size_t)s->nlon);
    s->fft_c = fftw_alloc_complex((size_t)s->nlon / 2 + 1);
    if (!s->fft_r || !s->fft_c)
        app_die(&s->a, 1, "out of memory");
    s->r2c = fftw_plan_dft_r2c_1d(s->nlon, s->fft_r, s->fft_c, FFTW_ESTIMATE);
    s->c2r = fftw_plan_dft_c2r_1d(s->nlon, s->fft_c, s->fft_r, FFTW_ESTIMATE);
    if (!s->r2c || !s->c2r)
        app_die(&s->a, 1, "FFTW cannot plan a transform of %d points", s->nlon);
    s->four = at_dalloc(s, (size_t)nf * rows * 2);
    s->tbuf = at_dalloc(s, (size_t)nf * 2 * (rows > ms ? rows : ms));
    s->rbuf = at_dalloc(s, (size_t)nf * 2 * (rows > ms ? rows : ms));
    s->wbuf = at_dalloc(s, (size_t)nf * ms * 2);
    s->fh = at_dalloc(s, (size_t)nf * ms * 2);
    s->eo = at_dalloc(s, (size_t)nf * 8);
    s->scnt = at_alloc(s, (size_t)P, sizeof(int));
    s->sdsp = at_alloc(s, (size_t)P, sizeof(int));
    s->rcnt = at_alloc(s, (size_t)P, sizeof(int));
    s->rdsp = at_alloc(s, (size_t)P, sizeof(int));
}

void tr_free(atmos *s)
{
    fftw_destroy_plan(s->r2c);
    fftw_destroy_plan(s->c2r);
    fftw_free(s->fft_r);
    fftw_free(s->fft_c);
    free(s->four);
    free(s->tbuf);
    free(s->rbuf);
    free(s->wbuf);
    free(s->fh);
    free(s->eo);
    free(s->scnt);
    free(s->sdsp);
    free(s->rcnt);
    free(s->rdsp);
}

/* Counts of a transpose of nf fields: forward (rows -> m) or inverse. */
static void counts(atmos *s, int nf, int forward)
{
    int mine_rows = s->nrow, mine_m = s->nm;
    for (int r = 0, so = 0, ro = 0; r < s->a.size; r++) {
        int rows = s->row0[r + 1] - s->row0[r], ms = s->mcount[r];
        s->scnt[r] = 2 * nf * (forward ? ms * mine_rows : mine_m * rows);
        s->rcnt[r] = 2 * nf * (forward ? mine_m * rows : ms * mine_rows);
        s->sdsp[r] = so;
        s->rdsp[r] = ro;
        so += s->scnt[r];
        ro += s->rcnt[r];
    }
}

/* Fourier rows four[f][row][m][2] <-> the blocks [f][m of rank r][2][row]
 * of a transpose buffer (to_buf: pack, else unpack). */
static void rows_blocks(atmos *s, int nf, double *buf, const int *dsp, int to_buf)
{
    int M1 = s->M + 1;
    for (int r = 0; r < s->a.size; r++) {
        const int *ms = s->mall + s->mfirst[r];
        double *b = buf + dsp[r];
        for (int f = 0; f < nf; f++)
            for (int t = 0; t < s->mcount[r]; t++)
                for (int part = 0; part < 2; part++)
                    for (int row = 0; row < s->nrow; row++) {
                        double *x = s->four + (((size_t)f * s->nrow + row) * M1 + ms[t]) * 2 + part;
                        if (to_buf)
                            *b++ = *x;
                        else
                            *x = *b++;
                    }
    }
}

/* Fourier by wavenumber w[i][j][f][2] <-> the blocks [f][my m][2][rows of
 * rank r] of a transpose buffer. */
static void m_blocks(atmos *s, int nf, double *w, double *buf, const int *dsp, int to_buf)
{
    for (int r = 0; r < s->a.size; r++) {
        double *b = buf + dsp[r];
        for (int f = 0; f < nf; f++)
            for (int i = 0; i < s->nm; i++)
                for (int part = 0; part < 2; part++)
                    for (int j = s->row0[r]; j < s->row0[r + 1]; j++) {
                        double *x = w + (((size_t)i * s->nlat + j) * nf + f) * 2 + part;
                        if (to_buf)
                            *b++ = *x;
                        else
                            *x = *b++;
                    }
    }
}

/* Real FFT of every row of every field: g[f][row][lon] -> four (/ nlon). */
static void fft_forward(atmos *s, const double *g, int nf)
{
    int M1 = s->M + 1;
    double inv = 1.0 / s->nlon;
    for (int f = 0; f < nf; f++)
        for (int row = 0; row < s->nrow; row++) {
            memcpy(s->fft_r, g + ((size_t)f * s->nrow + row) * s->nlon, (size_t)s->nlon * sizeof(double));
            fftw_execute(s->r2c);
            double *x = s->four + ((size_t)f * s->nrow + row) * M1 * 2;
            for (int m = 0; m < M1; m++) {
                x[2 * m] = s->fft_c[m][0] * inv;
                x[2 * m + 1] = s->fft_c[m][1] * inv;
            }
        }
}

/* Inverse real FFT of every row: four -> g[f][row][lon] (m > M are zero). */
static void fft_inverse(atmos *s, double *g, int nf)
{
    int M1 = s->M + 1;
    for (int f = 0; f < nf; f++)
        for (int row = 0; row < s->nrow; row++) {
            const double *x = s->four + ((size_t)f * s->nrow + row) * M1 * 2;
            for (int m = 0; m <= s->nlon / 2; m++) {
                s->fft_c[m][0] = m < M1 ? x[2 * m] : 0;
                s->fft_c[m][1] = m < M1 ? x[2 * m + 1] : 0;
            }
            fftw_execute(s->c2r);
            memcpy(g + ((size_t)f * s->nrow + row) * s->nlon, s->fft_r, (size_t)s->nlon * sizeof(double));
        }
}

/* Legendre analysis of wbuf (nf fields, each multiplied by the Gaussian
 * weight w_j, and those outside w0 .. w1-1 also by 1/(a(1 - mu_j^2))):
 * sp[k][np][2], the P-sums of fields 0 .. np-1, and sh[k][nh][2], the
 * H-sums of fields h0 .. h0+nh-1. */
static void analysis(atmos *s, const tr_fields *fl, double *sp, double *sh)
{
    int n2 = 2 * fl->nf, p2 = 2 * fl->np, h2 = 2 * fl->nh, w0 = 2 * fl->w0, w1 = 2 * fl->w1;
    double *e = s->eo, *o = s->eo + n2;
    memset(sp, 0, (size_t)s->nk * (size_t)p2 * sizeof *sp);
    memset(sh, 0, (size_t)s->nk * (size_t)h2 * sizeof *sh);
    for (int i = 0; i < s->nm; i++) {
        int nn = s->M + 1 - s->mlist[i], k0 = s->koff[i];
        for (int jp = 0; jp < s->nhalf; jp++) {
            const double *xn = s->wbuf + ((size_t)i * s->nlat + jp) * n2;
            const double *xs = s->wbuf + ((size_t)i * s->nlat + s->nlat - 1 - jp) * n2;
            double sw = s->wt[jp], sd = sw / (AT_RADIUS * (1 - s->mu[jp] * s->mu[jp]));
            for (int t = 0; t < n2; t++) {
                double sc = t >= w0 && t < w1 ? sw : sd;
                e[t] = (xn[t] + xs[t]) * sc;
                o[t] = (xn[t] - xs[t]) * sc;
            }
            const double *p = s->P + (size_t)k0 * s->nhalf + (size_t)jp * nn;
            const double *h = s->H + (size_t)k0 * s->nhalf + (size_t)jp * nn;
            for (int q = 0; q < nn; q++) { /* n + m even: Pbar symmetric, H antisymmetric */
                const double *a = q & 1 ? o : e, *b = (q & 1 ? e : o) + 2 * fl->h0;
                double *cp = sp + (size_t)(k0 + q) * p2, *ch = sh + (size_t)(k0 + q) * h2, pq = p[q], hq = h[q];
                for (int t = 0; t < p2; t++)
                    cp[t] += pq * a[t];
                for (int t = 0; t < h2; t++)
                    ch[t] += hq * b[t];
            }
        }
    }
}

void tr_forward(atmos *s, const double *g, const tr_fields *fl, double *sp, double *sh, MPI_Comm comm)
{
    fft_forward(s, g, fl->nf);
    counts(s, fl->nf, 1);
    rows_blocks(s, fl->nf, s->tbuf, s->sdsp, 1);
    app_alltoallv(&s->a, s->tbuf, s->scnt, s->sdsp, s->rbuf, s->rcnt, s->rdsp, MPI_DOUBLE, comm);
    m_blocks(s, fl->nf, s->wbuf, s->rbuf, s->rdsp, 0);
    analysis(s, fl, sp, sh);
}

/* Legendre synthesis of c[k][nf][2] at every latitude for the rank's m's:
 * fp[i][j][nf][2] = sum_n c_n^m Pbar_n^m(mu_j) of every field, fh[i][j][nhf][2]
 * = sum_n c_n^m H_n^m(mu_j) of the first nhf (sums over n in one order). */
void tr_synth(atmos *s, const double *c, int nf, int nhf, double *fp, double *fh)
{
    int n2 = 2 * nf, h2 = 2 * nhf;
    double *se = s->eo, *so = se + n2, *he = so + n2, *ho = he + h2;
    for (int i = 0; i < s->nm; i++) {
        int nn = s->M + 1 - s->mlist[i], k0 = s->koff[i];
        for (int jp = 0; jp < s->nhalf; jp++) {
            const double *p = s->P + (size_t)k0 * s->nhalf + (size_t)jp * nn;
            const double *h = s->H + (size_t)k0 * s->nhalf + (size_t)jp * nn;
            memset(se, 0, (size_t)(2 * n2 + 2 * h2) * sizeof *se);
            for (int q = 0; q < nn; q++) {
                const double *cq = c + (size_t)(k0 + q) * n2;
                double *a = q & 1 ? so : se, *b = q & 1 ? ho : he, pq = p[q], hq = h[q];
                for (int t = 0; t < n2; t++)
                    a[t] += pq * cq[t];
                for (int t = 0; t < h2; t++)
                    b[t] += hq * cq[t];
            }
            double *pn = fp + ((size_t)i * s->nlat + jp) * n2, *ps = fp + ((size_t)i * s->nlat + s->nlat - 1 - jp) * n2;
            double *hn = fh + ((size_t)i * s->nlat + jp) * h2, *hs = fh + ((size_t)i * s->nlat + s->nlat - 1 - jp) * h2;
            for (int t = 0; t < n2; t++) {
                pn[t] = se[t] + so[t];
                ps[t] = se[t] - so[t];
            }
            for (int t = 0; t < h2; t++) {
                hn[t] = he[t] + ho[t];
                hs[t] = ho[t] - he[t];
            }
        }
    }
}

void tr_inverse(atmos *s, double *w, int nf, double *g, MPI_Comm comm)
{
    counts(s, nf, 0);
    m_blocks(s, nf, w, s->tbuf, s->sdsp, 1);
    app_alltoallv(&s->a, s->tbuf, s->scnt, s->sdsp, s->rbuf, s->rcnt, s->rdsp, MPI_DOUBLE, comm);
    rows_blocks(s, nf, s->rbuf, s->rdsp, 0);
    fft_inverse(s, g, nf);
}
