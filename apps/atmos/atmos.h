/*
 * apps/atmos/atmos.h - zmpi-atmos's private header: the model's state (one
 * struct per rank, no global variables), its constants and the functions
 * its files share.
 *
 * The model: the shallow-water equations on the rotating sphere in
 * vorticity-divergence form, solved by the spectral transform method on a
 * Gaussian grid with triangular truncation T_M, semi-implicit leapfrog with
 * a Robert-Asselin filter, L independent layers stepped together, and one
 * passive tracer per layer advected semi-Lagrangian with a latitude halo.
 *
 * Notation: M truncation, nlon x nlat Gaussian grid (rows j = 0 .. nlat-1
 * from north to south, mu = sin(latitude)), L layers. Spectral coefficients
 * X_n^m (m = 0..M, n = m..M) multiply the normalised associated Legendre
 * functions Pbar_n^m(mu) (integral of Pbar^2 over -1..1 is 1) times
 * exp(i m lambda). A rank's spectral coefficients (its wavenumbers m) are
 * indexed k = koff[i] + n - m for its i-th wavenumber m = mlist[i].
 *
 * Array layouts (f is a field index var * L + layer):
 *   grid space     g[f][row][lon]       the rank's own latitude rows
 *   Fourier rows   four[f][row][m][2]   m = 0..M, re/im
 *   Fourier, m     w[i][j][f][2]        the rank's wavenumbers, every latitude
 *   spectral       c[k][f][2]
 */
#ifndef ATMOS_H
#define ATMOS_H

#include <fftw3.h>

#include "app.h"

#define AT_RADIUS 6.37122e6 /* m (Williamson et al. 1992) */
#define AT_OMEGA 7.292e-5   /* s^-1 */
#define AT_GRAV 9.80616     /* m s^-2 */
#define AT_PI 3.14159265358979323846
#define AT_DAY 86400.0
#define AT_VMAX 200.0 /* wind speed (m/s) the tracer halo is sized for */

/* The acceptance rules (documented in atmos.c). */
#define TOL_STEADY 1e-13 /* case 2: --tol's default */
#define RULE_STEADY "case 2: l2(h) against the analytic solution at most --tol"
#define RULE_EXACT "plain or lossless: the h series bit-identical to the reference's"
#define RULE_LEVEL                                                                                           \
    "lossy without --envelope: max RMS difference of h <= ltol x RMS of the reference's h variations"
#define RULE_GROWTH                                                                                          \
    "perturbation growth: growth rate of the RMS difference of h at most (1 + gtol) x the --envelope's, and "    \
    "max RMS difference <= ltol x RMS of the reference's h variations"

/* The test cases. */
typedef enum { CASE_STEADY, CASE_RH, CASE_JET } at_case;

/* The fields of the state in spectral space: var index in c[k][var * L + l]. */
enum { V_ZETA, V_DIV, V_PHI, NVAR };
/* The grid fields from the inverse transform: g[var * L + l][row][lon]. */
enum { G_U, G_V, G_ZETA, G_PHI, NGRID };
/* The fluxes of the forward transform, ordered so that the P-sums are of
 * the first four and the H-sums of the last three: U Phi', KE = (U^2 +
 * V^2) / (2 (1 - mu^2)), U eta, V eta, V Phi'. */
enum { F_UPHI, F_KE, F_UETA, F_VETA, F_VPHI, NFLUX };

/* A forward transform's fields: nf transposed; P-sums of the first np,
 * H-sums of h0 .. h0 + nh - 1; the fields w0 .. w1 - 1 weighted by w_j,
 * the others by w_j / (a (1 - mu_j^2)). */
typedef struct tr_fields {
    int nf, np, h0, nh, w0, w1;
} tr_fields;

/* The tracer's latitude halo: extended rows e0 .. e0 + ne - 1 around the
 * rank's own rows (rows beyond a pole are rows of the other side at
 * longitude + 180 degrees, with u and v negated), filled from their owners
 * by MPI_Isend / MPI_Irecv of [q, u, v][layer][row][lon]. */
typedef struct at_halo {
    int width;                      /* rows each side */
    int e0, ne;                     /* extended rows */
    double *theta, *sth, *cth;      /* [ne] their latitudes (beyond a pole: > pi/2 or < -pi/2), sin, cos */
    double *lagden;                 /* [ne][4] 1 / denominators of the cubic Lagrange weights in latitude */
    int *scount, *sfirst;           /* [size] rows sent to each rank, first index in srow */
    int *rcount, *rfirst;           /* [size] rows received from each rank, first index in rext */
    int *srow, *rext;               /* local rows sent; extended rows received */
    int nsend, nrecv;               /* their numbers */
    int nself, *self;               /* extended rows copied from own rows across a pole */
    double *sbuf, *rbuf;            /* messages */
    MPI_Request *req;               /* [2 size] */
    double *xq, *xu, *xv;           /* [L][ne][nlon] tracer and winds on the extended rows */
    double *wx, *wy, *wz;           /* [L][ne][nlon] Cartesian wind on the extended rows */
    double *sinlon, *coslon;        /* [nlon] */
} at_halo;

typedef struct atmos {
    app a;
    /* ---- options ---- */
    int M, nlon_opt, L;
    double days, dt, nu4, alpha_deg, perturb, every_h, robert, tol, gtol, ltol, bump;
    const char *case_name, *curve, *envelope;
    at_case tcase;
    int nsteps, every; /* time steps; output every `every` steps */
    /* ---- grid ---- */
    int nlon, nlat, nhalf, nm_all;       /* nm_all = M + 1 wavenumbers */
    double *mu, *wt, *lat, *clat;        /* [nlat] sin(lat), Gaussian weight, lat, cos(lat) */
    double phibar;                       /* reference geopotential of the semi-implicit scheme */
    /* ---- decomposition ---- */
    int *row0;                           /* [size + 1] rank r owns rows row0[r] .. row0[r+1] - 1 */
    int j0, nrow;                        /* this rank's */
    int *mfirst, *mcount, *mall;         /* [size], [size], [M+1]: every rank's m's, ascending */
    int nm, *mlist, *koff, nk;           /* this rank's m's, spectral offsets [nm + 1], coefficients */
    double *P, *H;                       /* [nk * nhalf] Pbar and (1 - mu^2) dPbar/dmu at the northern rows */
    /* ---- transforms ---- */
    double *fft_r;                       /* [nlon] */
    fftw_complex *fft_c;                 /* [nlon / 2 + 1] */
    fftw_plan r2c, c2r;
    double *four, *tbuf, *rbuf, *wbuf;   /* Fourier rows, transpose send / receive, Fourier by m */
    double *fh;                          /* H-sums of the synthesis [nm][nlat][f][2] */
    double *eo;                          /* Legendre work space */
    int *kn, *km;                        /* [nk] n and m of each spectral coefficient */
    int *scnt, *sdsp, *rcnt, *rdsp;      /* [size] Alltoallv counts */
    MPI_Comm comm_fwd, comm_inv, comm_halo;
    /* ---- state ---- */
    double *prev, *cur, *next;           /* [nk][NVAR L][2]: filtered n-1, n, n+1 */
    double *sp, *sh;                     /* [nk][5L][2], [nk][4L][2] Legendre sums */
    double *grid;                        /* [4L][nrow][nlon] U, V, zeta, Phi' (U = u cos(lat)) */
    double *prod;                        /* [5L][nrow][nlon] the fluxes of the forward transform */
    double *fcor;                        /* [nrow][nlon] Coriolis parameter */
    double *q_prev, *q_cur, *q_next;     /* [L][nrow][nlon] tracer */
    double *u, *v;                       /* [L][nrow][nlon] winds */
    at_halo halo;
    /* ---- output ---- */
    int nout, iout;                      /* outputs of the h series, recorded so far */
    double *series;                      /* [nout][L][nrow][nlon] */
    double q_mass0;                      /* tracer mass of one layer at the start */
    double *env_h, *env_r;               /* --envelope: hours, rms (rank 0) */
} atmos;

/* common helpers (atmos.c) */
void *at_alloc(atmos *s, size_t n, size_t size);
double *at_dalloc(atmos *s, size_t n);

/* grid.c */
void grid_setup(atmos *s);
void grid_free(atmos *s);
int grid_owner(const atmos *s, int row);

/* transform.c */
void tr_setup(atmos *s);
void tr_free(atmos *s);
void tr_forward(atmos *s, const double *g, const tr_fields *fl, double *sp, double *sh, MPI_Comm comm);
void tr_synth(atmos *s, const double *c, int nf, int nhf, double *fp, double *fh);
void tr_inverse(atmos *s, double *w, int nf, double *g, MPI_Comm comm);

/* dynamics.c */
void dyn_setup(atmos *s);
void dyn_free(atmos *s);
void dyn_to_grid(atmos *s, MPI_Comm comm);
void dyn_step(atmos *s, int first);
void dyn_init_state(atmos *s, const double *uvphi);

/* cases.c */
int case_parse(atmos *s);
double case_phibar(const atmos *s);
void case_point(const atmos *s, int layer, double lon, double lat, double *u, double *v, double *h);
double case_coriolis(const atmos *s, double lon, double lat);
double case_tracer(double lon, double lat);
double case_tracer_exact(const atmos *s, int layer, double lon, double lat, double t);
void case_initial(atmos *s, double *uvphi);
double case_default_nu4(const atmos *s);

/* tracer.c */
void tracer_setup(atmos *s);
void tracer_free(atmos *s);
void tracer_step(atmos *s, double tau, int first);

/* series.c */
void series_setup(atmos *s);
void series_check_inputs(atmos *s);
void series_record(atmos *s);
void series_finish(atmos *s);

#endif
