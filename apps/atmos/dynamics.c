/*
 * apps/atmos/dynamics.c - the shallow-water dynamics in spectral space:
 * grid fields from the state, the nonlinear tendencies, the semi-implicit
 * leapfrog step with the Robert-Asselin filter and del^4 diffusion.
 *
 * Equations (U = u cos(lat), V = v cos(lat), eta = zeta + f, Phi = g h =
 * Phibar + Phi', a the Earth's radius):
 *   d zeta/dt  = -DIV(U eta, V eta)
 *   d delta/dt =  CURL(U eta, V eta) - del^2 (Phi' + (U^2 + V^2) / (2 (1 - mu^2)))
 *   d Phi'/dt  = -DIV(U Phi', V Phi') - Phibar delta
 * with DIV(A, B) = 1/(a(1-mu^2)) dA/dlambda + 1/a dB/dmu and CURL(A, B) =
 * 1/(a(1-mu^2)) dB/dlambda - 1/a dA/dmu. In spectral space (integrating the
 * mu-derivatives by parts; A and B vanish at the poles)
 *   DIV(A, B)_n^m  = sum_j w_j/(a(1-mu_j^2)) (i m A_m Pbar_n^m - B_m H_n^m)
 *   CURL(A, B)_n^m = sum_j w_j/(a(1-mu_j^2)) (i m B_m Pbar_n^m + A_m H_n^m)
 * and del^2 is -n(n+1)/a^2. Back to the grid: psi = del^-2 zeta, chi =
 * del^-2 delta, U = (-H psi + i m Pbar chi) / a, V = (i m Pbar psi + H chi) / a.
 *
 * Time stepping: leapfrog, the gravity-wave terms (del^2 Phi' and Phibar
 * delta) averaged over n-1 and n+1 (semi-implicit), so that each (n, m)
 * solves a 2 x 2 system; then the implicit del^4 diffusion
 * (1 + 2 dt K4 (n(n+1)/a^2)^2)^-1 (for zeta minus (2/a^2)^2: solid-body
 * rotation is not damped); then the Robert-Asselin filter
 * Xbar^n = X^n + alpha (Xbar^(n-1) - 2 X^n + X^(n+1)). The first step is a
 * forward step of dt.
 *
 * Communication: the transforms' (transform.c): one Alltoallv for the
 * inverse transform (4 L fields: U, V, zeta, Phi') and one for the forward
 * transform (5 L fluxes) per step, each on its own communicator.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atmos.h"

/* Fields of the synthesis: psi, chi (H- and P-sums), zeta, Phi' (P-sums). */
enum { S_PSI, S_CHI, S_ZETA, S_PHI, NSYN };

void dyn_setup(atmos *s)
{
    size_t nk = (size_t)s->nk, L = (size_t)s->L, cells = (size_t)s->nrow * (size_t)s->nlon;
    s->prev = at_dalloc(s, nk * NVAR * L * 2);
    s->cur = at_dalloc(s, nk * NVAR * L * 2);
    s->next = at_dalloc(s, nk * NVAR * L * 2);
    s->sp = at_dalloc(s, nk * NFLUX * L * 2);
    s->sh = at_dalloc(s, nk * NFLUX * L * 2);
    s->grid = at_dalloc(s, NGRID * L * cells);
    s->prod = at_dalloc(s, NFLUX * L * cells);
    s->fcor = at_dalloc(s, cells);
    s->kn = at_alloc(s, nk ? nk : 1, sizeof(int));
    s->km = at_alloc(s, nk ? nk : 1, sizeof(int));
    for (int i = 0; i < s->nm; i++)
        for (int n = s->mlist[i]; n <= s->M; n++) {
            s->kn[s->koff[i] + n - s->mlist[i]] = n;
            s->km[s->koff[i] + n - s->mlist[i]] = s->mlist[i];
        }
    for (int row = 0; row < s->nrow; row++)
        for (int i = 0; i < s->nlon; i++)
            s->fcor[(size_t)row * s->nlon + i] = case_coriolis(s, 2 * AT_PI * i / s->nlon, s->lat[s->j0 + row]);
}

void dyn_free(atmos *s)
{
    free(s->prev);
    free(s->cur);
    free(s->next);
    free(s->sp);
    free(s->sh);
    free(s->grid);
    free(s->prod);
    free(s->fcor);
    free(s->kn);
    free(s->km);
}

/* Fourier coefficients of U and V from the sums of psi and chi, in place
 * of psi's and chi's P-sums (U = (-H psi + i m P chi)/a, V = (i m P psi + H chi)/a). */
static void winds_fourier(atmos *s, double *fp, const double *fh)
{
    int L = s->L, n2 = 2 * NSYN * L, h2 = 4 * L;
    for (int i = 0; i < s->nm; i++) {
        double m = s->mlist[i];
        for (int j = 0; j < s->nlat; j++) {
            double *p = fp + ((size_t)i * s->nlat + j) * n2;
            const double *h = fh + ((size_t)i * s->nlat + j) * h2;
            for (int l = 0; l < L; l++) {
                double *ps = p + 2 * (S_PSI * L + l), *ch = p + 2 * (S_CHI * L + l);
                const double *hps = h + 2 * (S_PSI * L + l), *hch = h + 2 * (S_CHI * L + l);
                double ur = (-hps[0] - m * ch[1]) / AT_RADIUS, ui = (-hps[1] + m * ch[0]) / AT_RADIUS;
                double vr = (-m * ps[1] + hch[0]) / AT_RADIUS, vi = (m * ps[0] + hch[1]) / AT_RADIUS;
                ps[0] = ur;
                ps[1] = ui;
                ch[0] = vr;
                ch[1] = vi;
            }
        }
    }
}

void dyn_to_grid(atmos *s, MPI_Comm comm)
{
    int L = s->L;
    double *c = s->sp; /* [k][NSYN L][2] */
    for (int k = 0; k < s->nk; k++) {
        int n = s->kn[k];
        double inv = n ? -AT_RADIUS * AT_RADIUS / ((double)n * (n + 1)) : 0;
        const double *x = s->cur + (size_t)k * NVAR * L * 2;
        double *y = c + (size_t)k * NSYN * L * 2;
        for (int t = 0; t < 2 * L; t++) {
            y[2 * S_PSI * L + t] = inv * x[2 * V_ZETA * L + t];
            y[2 * S_CHI * L + t] = inv * x[2 * V_DIV * L + t];
            y[2 * S_ZETA * L + t] = x[2 * V_ZETA * L + t];
            y[2 * S_PHI * L + t] = x[2 * V_PHI * L + t];
        }
    }
    tr_synth(s, c, NSYN * L, 2 * L, s->wbuf, s->fh);
    winds_fourier(s, s->wbuf, s->fh);
    tr_inverse(s, s->wbuf, NGRID * L, s->grid, comm);
}

/* The fluxes of the forward transform on the rank's rows (the analysis
 * weights them). */
static void fluxes(atmos *s)
{
    size_t cells = (size_t)s->nrow * (size_t)s->nlon;
    int L = s->L;
    for (int l = 0; l < L; l++)
        for (int row = 0; row < s->nrow; row++) {
            int j = s->j0 + row;
            double c2 = 1 - s->mu[j] * s->mu[j];
            size_t o = (size_t)row * s->nlon;
            const double *U = s->grid + (G_U * L + l) * cells + o, *V = s->grid + (G_V * L + l) * cells + o;
            const double *Z = s->grid + (G_ZETA * L + l) * cells + o, *F = s->grid + (G_PHI * L + l) * cells + o;
            const double *fc = s->fcor + o;
            double *p[NFLUX];
            for (int f = 0; f < NFLUX; f++)
                p[f] = s->prod + (f * L + l) * cells + o;
            for (int i = 0; i < s->nlon; i++) {
                double eta = Z[i] + fc[i];
                p[F_UPHI][i] = U[i] * F[i];
                p[F_KE][i] = (U[i] * U[i] + V[i] * V[i]) / (2 * c2);
                p[F_UETA][i] = U[i] * eta;
                p[F_VETA][i] = V[i] * eta;
                p[F_VPHI][i] = V[i] * F[i];
            }
        }
}

/* The tendencies of coefficient k, layer l: tz, td, tp (re, im). */
static void tendencies(const atmos *s, int k, int l, double *tz, double *td, double *tp)
{
    int L = s->L;
    double m = s->km[k], lap = (double)s->kn[k] * (s->kn[k] + 1) / (AT_RADIUS * AT_RADIUS);
    const double *sp = s->sp + (size_t)k * 4 * L * 2, *sh = s->sh + (size_t)k * 3 * L * 2;
    const double *pc = sp + 2 * (0 * L + l), *pk = sp + 2 * (1 * L + l), *pa = sp + 2 * (2 * L + l);
    const double *pb = sp + 2 * (3 * L + l);
    const double *ha = sh + 2 * (0 * L + l), *hb = sh + 2 * (1 * L + l), *hd = sh + 2 * (2 * L + l);
    /* i m x = (-m x_im, m x_re) */
    tz[0] = m * pa[1] + hb[0];
    tz[1] = -m * pa[0] + hb[1];
    td[0] = -m * pb[1] + ha[0] + lap * pk[0];
    td[1] = m * pb[0] + ha[1] + lap * pk[1];
    tp[0] = m * pc[1] + hd[0];
    tp[1] = -m * pc[0] + hd[1];
}

/* The semi-implicit leapfrog update of every coefficient into next. */
static void update(atmos *s, const double *base, double dt2)
{
    int L = s->L;
    double dth = dt2 / 2, pb = s->phibar, a2 = AT_RADIUS * AT_RADIUS, rot = 4 / (a2 * a2);
    for (int k = 0; k < s->nk; k++) {
        int n = s->kn[k];
        double lap = (double)n * (n + 1) / a2;
        double dz = n ? 1 / (1 + dt2 * s->nu4 * (lap * lap - rot)) : 1, dd = 1 / (1 + dt2 * s->nu4 * lap * lap);
        for (int l = 0; l < L; l++) {
            double tz[2], td[2], tp[2];
            tendencies(s, k, l, tz, td, tp);
            const double *b = base + (size_t)k * NVAR * L * 2;
            double *x = s->next + (size_t)k * NVAR * L * 2;
            for (int c = 0; c < 2; c++) {
                double zb = b[2 * (V_ZETA * L + l) + c], db = b[2 * (V_DIV * L + l) + c];
                double phb = b[2 * (V_PHI * L + l) + c];
                double ad = db + dt2 * td[c] + dth * lap * phb;
                double bp = phb + dt2 * tp[c] - dth * pb * db;
                double phn = (bp - dth * pb * ad) / (1 + dth * dth * pb * lap);
                double dn = ad + dth * lap * phn;
                x[2 * (V_ZETA * L + l) + c] = (zb + dt2 * tz[c]) * dz;
                x[2 * (V_DIV * L + l) + c] = dn * dd;
                x[2 * (V_PHI * L + l) + c] = phn * dd;
            }
        }
    }
}

void dyn_step(atmos *s, int first)
{
    size_t n = (size_t)s->nk * NVAR * (size_t)s->L * 2;
    fluxes(s);
    int L = s->L;
    tr_fields fl = {NFLUX * L, 4 * L, F_UETA * L, 3 * L, F_KE * L, (F_KE + 1) * L};
    tr_forward(s, s->prod, &fl, s->sp, s->sh, s->comm_fwd);
    update(s, first ? s->cur : s->prev, first ? s->dt : 2 * s->dt);
    if (first)
        memcpy(s->prev, s->cur, n * sizeof *s->prev);
    else
        for (size_t t = 0; t < n; t++)
            s->prev[t] = s->cur[t] + s->robert * (s->prev[t] - 2 * s->cur[t] + s->next[t]);
    double *t = s->cur;
    s->cur = s->next;
    s->next = t;
}

/* The state from grid fields uvphi[3 L][nrow][nlon] (U, V, Phi' of each
 * layer): zeta = CURL(U, V), delta = DIV(U, V), Phi' by one forward
 * transform on the application communicator (not timed). */
void dyn_init_state(atmos *s, const double *uvphi)
{
    int L = s->L;
    tr_fields fl = {3 * L, 3 * L, 0, 2 * L, 2 * L, 3 * L};
    tr_forward(s, uvphi, &fl, s->sp, s->sh, s->a.comm);
    for (int k = 0; k < s->nk; k++) {
        double m = s->km[k];
        const double *sp = s->sp + (size_t)k * 3 * L * 2, *sh = s->sh + (size_t)k * 2 * L * 2;
        double *x = s->cur + (size_t)k * NVAR * L * 2;
        for (int l = 0; l < L; l++) {
            const double *pu = sp + 2 * l, *pv = sp + 2 * (L + l), *pf = sp + 2 * (2 * L + l);
            const double *hu = sh + 2 * l, *hv = sh + 2 * (L + l);
            double *z = x + 2 * (V_ZETA * L + l), *d = x + 2 * (V_DIV * L + l), *p = x + 2 * (V_PHI * L + l);
            z[0] = -m * pv[1] + hu[0]; /* i m V + H U */
            z[1] = m * pv[0] + hu[1];
            d[0] = -m * pu[1] - hv[0]; /* i m U - H V */
            d[1] = m * pu[0] - hv[1];
            p[0] = pf[0];
            p[1] = pf[1];
        }
    }
}
