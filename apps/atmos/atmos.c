/*
 * zmpi-atmos - an atmospheric model proxy in the spirit of CAM's Eulerian
 * spectral dynamical core: the shallow-water equations on the sphere by the
 * spectral transform method (atmos.h, dynamics.c), with CAM's communication
 * structure: every step one MPI_Alltoallv for the inverse transform's
 * transpose (wavenumbers -> latitudes), one for the forward transform's
 * (latitudes -> wavenumbers) (transform.c) and a latitude halo exchange
 * with MPI_Isend / MPI_Irecv for the semi-Lagrangian tracer (tracer.c),
 * each on its own communicator, so that consecutive messages between two
 * ranks on one communicator are the same variables one step apart.
 * --levels L steps L independent layers together (message sizes and work
 * like CAM T42L26 with --levels 26).
 *
 * Grid space is decomposed by latitude bands, spectral space by zonal
 * wavenumber (grid.c); any number of ranks works (those without rows or
 * wavenumbers send and receive zero counts). The result is bit-identical
 * at every rank count: every sum over latitudes runs in one global order.
 *
 * Length: --days D (default 5), or --iters N time steps, which wins when
 * both are given. Test cases (cases.c): 2 (Williamson et al.'s steady
 * zonal flow, the validation: its analytic solution is the initial state),
 * 6 (Rossby-Haurwitz wave) and galewsky (the barotropically unstable jet
 * with its 120 m bump, --bump): the perturbation-growth case, in which a
 * 1e-14 perturbation of h grows by about 1.15 e-foldings a day from day 3
 * to day 8 at T42 (case 6: 0.3 a day; the jet without its bump stays
 * exactly zonal, so errors relative to each value, as dp2sp's and trunc's,
 * can never start its instability).
 *
 * Output: the JSON line of apps/common/app.h; quality: state_hash (of the
 * final h, u, v, tracer of every layer: equal hashes, bit-identical
 * runs), tracer_mass_change (relative, all layers), tracer_min / max;
 * case 2: l1_h, l2_h, linf_h, l2_uv, linf_uv (Williamson et al.'s
 * normalised errors against the analytic solution, the worst layer) and
 * l2_tracer (against the exact solid-body rotation of the tracer). With
 * --reference FILE (the --save of a control run: the series of h of every
 * layer every --every hours): rms_final, rms_max (area-weighted RMS
 * difference of h, all layers), growth (the largest log-slope per day of
 * that RMS curve over 2-day windows from day 1 on), growth_factor (its
 * largest value over its value at day 1), h_scale (area-weighted RMS of the
 * control's h minus its mean at the end) and rms_max_over_scale; --curve
 * writes the curve (CSV hours,rms). With --envelope FILE (the --curve of a
 * run with --perturb 1e-14 against the same control): env_growth,
 * env_growth_factor, env_rms_final, final_over_env, outputs_above_env.
 *
 * Rules (quality_ok):
 *   case 2 without --reference: l2_h <= --tol (1e-13; a correct T42 run
 *     has 8e-16 after 5 days, 3e-15 with --alpha 45);
 *   --reference, plain or lossless: the series bit-identical to the control;
 *   --reference, lossy, no --envelope: rms_max <= --ltol x h_scale;
 *   --envelope (the perturbation-growth test): growth <= (1 + --gtol) x
 *     env_growth and rms_max <= --ltol x h_scale (gtol 0.2, ltol 1e-3);
 *     null when the envelope grows slower than 0.2 a day (no test);
 *   a perturbed run (--perturb with --reference): null, its curve is an
 *     envelope.
 * The growth rate, not the growth factor: a compression error enters at
 * every step, not once, so its curve is a noise floor plus an amplified
 * part; any perturbation small enough to evolve linearly grows at most at
 * the flow's own rate (the envelope's), however large it is and whenever
 * it entered, while a factor measured from an early value depends on how
 * large the floor is there. The level guard catches what a rate cannot: a
 * run decorrelated from the control at once (then its curve is flat). A
 * curve that must stay below the envelope (the strict reading) rejects
 * every lossy codec: the 1e-14 perturbation stays below 3e-9 m in 15 days.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "atmos.h"

void *at_alloc(atmos *s, size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        app_die(&s->a, 1, "out of memory");
    return p;
}

double *at_dalloc(atmos *s, size_t n)
{
    return at_alloc(s, n, sizeof(double));
}

/* The smallest multiple of 4 of the form 2^a 3^b 5^c that is >= n. */
static int fft_size(int n)
{
    for (int m = (n + 3) / 4 * 4;; m += 4) {
        int r = m;
        while (r % 2 == 0)
            r /= 2;
        while (r % 3 == 0)
            r /= 3;
        while (r % 5 == 0)
            r /= 5;
        if (r == 1)
            return m;
    }
}

static int given(int argc, char **argv, const char *opt)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], opt))
            return 1;
    return 0;
}

/* Checks the options; the grid, time step, steps and outputs. */
static void configure(atmos *s, int argc, char **argv)
{
    app *a = &s->a;
    if (case_parse(s))
        app_bad_option(a, "--case %s: not 2, 6 or galewsky", s->case_name);
    if (s->M < 2 || s->M > 2000 || s->L < 1 || s->L > 1000)
        app_bad_option(a, "--trunc must be 2 .. 2000 and --levels 1 .. 1000");
    s->nlon = s->nlon_opt ? s->nlon_opt : fft_size(3 * s->M + 1);
    if (s->nlon < 3 * s->M + 1 || s->nlon % 4)
        app_bad_option(a, "--nlon %d: must be a multiple of 4 and at least 3 M + 1 = %d", s->nlon, 3 * s->M + 1);
    if (!(s->days > 0) || s->dt < 0 || !(s->every_h > 0) || s->perturb < 0 || s->perturb >= 1 ||
        s->robert < 0 || s->robert >= 0.5 || !(s->tol > 0) || s->gtol < 0 || !(s->ltol > 0))
        app_bad_option(a, "bad --days, --dt, --every, --perturb, --robert, --tol, --gtol or --ltol (see --help)");
    if ((s->curve || s->envelope) && !a->reference)
        app_bad_option(a, "--curve and --envelope need --reference (the control run's --save)");
    if (s->tcase != CASE_STEADY && s->alpha_deg != 0)
        app_bad_option(a, "--alpha is for case 2");
    if (s->dt == 0) { /* 1200 s at T42, proportional to 1/M, a divisor of 6 hours */
        double n6 = ceil(21600 / (1200.0 * 42 / s->M) - 1e-9);
        s->dt = 21600 / n6;
    }
    if (s->nu4 < 0)
        s->nu4 = case_default_nu4(s);
    s->phibar = case_phibar(s);
    if (given(argc, argv, "--iters")) {
        s->nsteps = a->iters;
        if (given(argc, argv, "--days"))
            app_log(a, "--iters %d wins over --days", a->iters);
    } else {
        s->nsteps = (int)lround(s->days * AT_DAY / s->dt);
        s->nsteps = s->nsteps < 1 ? 1 : s->nsteps;
        a->iters = s->nsteps;
    }
    s->every = (int)lround(s->every_h * 3600 / s->dt);
    s->every = s->every < 1 ? 1 : s->every;
}

/* The tracer's mass per layer at the start (every rank, every row). */
static double tracer_mass0(const atmos *s)
{
    double m = 0;
    for (int j = 0; j < s->nlat; j++) {
        double r = 0;
        for (int i = 0; i < s->nlon; i++)
            r += case_tracer(2 * AT_PI * i / s->nlon, s->lat[j]);
        m += s->wt[j] * r;
    }
    return m / (2.0 * s->nlon);
}

/* Per step, what this configuration's exchanges move (off-rank bytes of
 * all ranks, largest message), for the log. */
static void log_messages(atmos *s)
{
    double loc[6] = {0, 0, 0, 0, 0, 0}, sum[6], mx[6];
    int me = s->a.rank;
    for (int r = 0; r < s->a.size; r++) {
        if (r == me)
            continue;
        double f = 16.0 * NFLUX * s->L * s->nrow * s->mcount[r];
        double i = 16.0 * NGRID * s->L * s->nm * (s->row0[r + 1] - s->row0[r]);
        double h = 8.0 * 3 * s->L * s->nlon * s->halo.scount[r];
        loc[0] += f, loc[1] += i, loc[2] += h;
        loc[3] = fmax(loc[3], f), loc[4] = fmax(loc[4], i), loc[5] = fmax(loc[5], h);
    }
    MPI_Allreduce(loc, sum, 3, MPI_DOUBLE, MPI_SUM, s->a.comm);
    MPI_Allreduce(loc + 3, mx, 3, MPI_DOUBLE, MPI_MAX, s->a.comm);
    app_log(&s->a, "per step, all ranks: forward transpose %.0f B (largest message %.0f B), inverse %.0f B "
            "(%.0f B), halo %.0f B (%.0f B, %d rows each side)", sum[0], mx[0], sum[1], mx[1], sum[2], mx[2],
            s->halo.width);
}

static void setup(atmos *s)
{
    grid_setup(s);
    tr_setup(s);
    dyn_setup(s);
    tracer_setup(s);
    series_setup(s);
    series_check_inputs(s);
    s->q_mass0 = tracer_mass0(s);
    s->comm_fwd = app_comm_dup(&s->a);
    s->comm_inv = app_comm_dup(&s->a);
    s->comm_halo = app_comm_dup(&s->a);
    double *uvphi = at_dalloc(s, 3 * (size_t)s->L * (size_t)s->nrow * (size_t)s->nlon);
    case_initial(s, uvphi);
    dyn_init_state(s, uvphi);
    free(uvphi);
    app_log(&s->a, "case %s, T%d: %d x %d Gaussian grid, %d layer%s, dt %g s, %d steps (%.3g days), "
            "del^4 %.3g m^4/s, %d ranks", s->case_name, s->M, s->nlon, s->nlat, s->L, s->L > 1 ? "s" : "", s->dt,
            s->nsteps, s->nsteps * s->dt / AT_DAY, s->nu4, s->a.size);
    log_messages(s);
}

/* Once a day: mean depth, tracer mass change, largest wind (plain
 * MPI_Allreduce: diagnostics only, not bit-identical across rank counts). */
static void diagnose(atmos *s, int step)
{
    size_t cells = (size_t)s->nrow * (size_t)s->nlon;
    double loc[2] = {0, 0}, sum[2], vloc = 0, vmax;
    for (int l = 0; l < s->L; l++)
        for (int row = 0; row < s->nrow; row++) {
            int j = s->j0 + row;
            for (int i = 0; i < s->nlon; i++) {
                size_t o = (size_t)row * s->nlon + i;
                double U = s->grid[(size_t)(G_U * s->L + l) * cells + o];
                double V = s->grid[(size_t)(G_V * s->L + l) * cells + o];
                loc[0] += s->wt[j] * (s->phibar + s->grid[(size_t)(G_PHI * s->L + l) * cells + o]) / AT_GRAV;
                loc[1] += s->wt[j] * s->q_cur[(size_t)l * cells + o];
                vloc = fmax(vloc, sqrt(U * U + V * V) / s->clat[j]);
            }
        }
    MPI_Allreduce(loc, sum, 2, MPI_DOUBLE, MPI_SUM, s->a.comm);
    MPI_Allreduce(&vloc, &vmax, 1, MPI_DOUBLE, MPI_MAX, s->a.comm);
    double norm = 2.0 * s->nlon * s->L;
    app_log(&s->a, "day %5.2f: mean h %.6f m, tracer mass change %+.3e, max wind %.2f m/s", step * s->dt / AT_DAY,
            sum[0] / norm, (sum[1] / norm - s->q_mass0) / s->q_mass0, vmax);
}

/* The time loop: the state of step n to the grid (inverse transform), its
 * h recorded every `every` steps, then the forward transform and the
 * semi-implicit step, then the tracer (halo exchange, semi-Lagrangian). */
static void run(atmos *s)
{
    app_start(&s->a);
    for (int step = 0;; step++) {
        dyn_to_grid(s, s->comm_inv);
        if (step % s->every == 0 || step == s->nsteps)
            series_record(s);
        if (step > 0 && floor(step * s->dt / AT_DAY) > floor((step - 1) * s->dt / AT_DAY))
            diagnose(s, step);
        if (step == s->nsteps)
            break;
        dyn_step(s, step == 0);
        tracer_step(s, step == 0 ? s->dt : 2 * s->dt, step == 0);
    }
    app_stop(&s->a);
    app_log(&s->a, "%d steps in %.3f s: %.3f ms per step", s->nsteps, s->a.t_run, 1e3 * s->a.t_run / s->nsteps);
}

static void cleanup(atmos *s)
{
    grid_free(s);
    tr_free(s);
    dyn_free(s);
    tracer_free(s);
    free(s->series);
    free(s->env_h);
    free(s->env_r);
}

int main(int argc, char **argv)
{
    atmos s;
    memset(&s, 0, sizeof s);
    s.M = 42, s.L = 1, s.days = 5, s.case_name = "2", s.nu4 = -1, s.robert = 0.06, s.every_h = 6;
    s.tol = TOL_STEADY, s.gtol = 0.2, s.ltol = 1e-3, s.bump = 120;
    app_opt opts[] = {
        {"case", 's', &s.case_name, "2 (steady zonal flow), 6 (Rossby-Haurwitz wave) or galewsky (unstable jet)"},
        {"trunc", 'i', &s.M, "triangular truncation M (T42: 128 x 64 grid, T63: 192 x 96, T85: 256 x 128)"},
        {"nlon", 'i', &s.nlon_opt, "longitudes, a multiple of 4 >= 3M+1 (0: the smallest 2^a 3^b 5^c)"},
        {"levels", 'i', &s.L, "independent layers stepped together (26: messages like CAM T42L26)"},
        {"days", 'd', &s.days, "simulated days (--iters N gives N steps instead and wins)"},
        {"dt", 'd', &s.dt, "time step, s (0: 1200 * 42 / M rounded to divide 6 hours)"},
        {"alpha", 'd', &s.alpha_deg, "case 2: angle between the flow's axis and the Earth's, degrees"},
        {"bump", 'd', &s.bump, "galewsky: height of the localised bump that starts the instability, m (paper: 120)"},
        {"nu4", 'd', &s.nu4, "del^4 diffusion, m^4/s (-1: 0 for case 2, 1e16 (42/M)^4 otherwise)"},
        {"robert", 'd', &s.robert, "Robert-Asselin filter coefficient"},
        {"perturb", 'd', &s.perturb, "multiply the initial h by 1 + U(-EPS, EPS) (fixed seed, per grid point)"},
        {"every", 'd', &s.every_h, "hours between the h fields of the series (--save / --reference)"},
        {"curve", 's', &s.curve, "with --reference: write the RMS difference curve, CSV hours,rms"},
        {"envelope", 's', &s.envelope, "with --reference: a --perturb run's --curve; judge by the growth rule"},
        {"tol", 'd', &s.tol, "case 2: largest l2(h) error accepted"},
        {"gtol", 'd', &s.gtol, "--envelope: relative tolerance of the growth rule"},
        {"ltol", 'd', &s.ltol, "lossy run with --reference: largest RMS difference / RMS of h's variations"},
    };
    app_init(&s.a, &argc, &argv, "atmos",
             "shallow-water spectral transform model, CAM Eulerian core's communication (--iters: time steps)", opts,
             (int)(sizeof opts / sizeof *opts), 360);
    configure(&s, argc, argv);
    setup(&s);
    run(&s);
    series_finish(&s);
    cleanup(&s);
    return app_finish(&s.a);
}
