/*
 * apps/atmos/series.c - what the run reports: the time series of h (every
 * `every` steps, all layers), the final state, the error norms of case 2,
 * the comparison with a control run (--reference), its curve (--curve) and
 * the perturbation-growth rule (--envelope).
 *
 * Communication (after the timed part, exact: MPI_BYTE through
 * app_gather_bytes, never compressed): every rank sends rank 0 its rows of
 * the series and of the final h, u, v, tracer. --save writes (rank 0) a
 * header of 12 int64 (magic, version, M, nlon, nlat, L, outputs, every,
 * steps, case, dt's bits, 0) and the series [output][layer][lat][lon] of
 * h in metres (float64, native byte order).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atmos.h"

#define SERIES_MAGIC 0x534f4d5441ll /* "ATMOS" */
#define SERIES_VERSION 1
#define SERIES_HEAD 12
#define GROWTH_WINDOW 48.0 /* hours: the window of the growth rate */
#define ENV_MIN_RATE 0.2   /* per day: an envelope growing slower judges nothing */

enum { O_H, O_U, O_V, O_Q, NOUT_FIELDS };

void series_setup(atmos *s)
{
    s->nout = s->nsteps / s->every + 1 + (s->nsteps % s->every != 0);
    s->series = at_dalloc(s, (size_t)s->nout * (size_t)s->L * (size_t)s->nrow * (size_t)s->nlon);
}

/* h of every layer at this step (the grid fields of the current state). */
void series_record(atmos *s)
{
    size_t cells = (size_t)s->nrow * (size_t)s->nlon;
    for (int l = 0; l < s->L; l++) {
        const double *phi = s->grid + (size_t)(G_PHI * s->L + l) * cells;
        double *h = s->series + ((size_t)s->iout * s->L + l) * cells;
        for (size_t c = 0; c < cells; c++)
            h[c] = (s->phibar + phi[c]) / AT_GRAV;
    }
    s->iout++;
}

/* The hour of output o. */
static double out_hours(const atmos *s, int o)
{
    long step = (long)o * s->every;
    return (double)(step < s->nsteps ? step : s->nsteps) * s->dt / 3600;
}

/* Rank 0 gets local[nf][nrow][nlon] of every rank as [nf][nlat][nlon]
 * (exact; NULL elsewhere). */
static double *gather_rows(atmos *s, const double *local, int nf)
{
    size_t row = (size_t)s->nlon;
    void *raw;
    app_gather_bytes(&s->a, local, (size_t)nf * (size_t)s->nrow * row * sizeof(double), &raw);
    if (s->a.rank != 0)
        return NULL;
    double *out = at_dalloc(s, (size_t)nf * (size_t)s->nlat * row), *in = raw;
    for (int r = 0; r < s->a.size; r++) {
        int a = s->row0[r], n = s->row0[r + 1] - a;
        for (int f = 0; f < nf; f++, in += (size_t)n * row)
            memcpy(out + ((size_t)f * s->nlat + a) * row, in, (size_t)n * row * sizeof *out);
    }
    free(raw);
    return out;
}

/* Area-weighted mean of x[nlat][nlon] (Gaussian weights sum to 2). */
static double area_mean(const atmos *s, const double *x)
{
    double sum = 0;
    for (int j = 0; j < s->nlat; j++) {
        double r = 0;
        for (int i = 0; i < s->nlon; i++)
            r += x[(size_t)j * s->nlon + i];
        sum += s->wt[j] * r;
    }
    return sum / (2.0 * s->nlon);
}

/* FNV-1a of the final fields: equal hashes, bit-identical results. */
static void report_hash(atmos *s, const double *fin, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *b = (const unsigned char *)fin;
    for (size_t i = 0; i < n * sizeof *fin; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)h);
    app_quality_str(&s->a, "state_hash", hex);
    app_log(&s->a, "final state hash %s", hex);
}

/* Case 2: Williamson et al.'s normalised errors of h and of the wind (max
 * over the layers), and of the tracer against its exact rotation. */
static double steady_errors(atmos *s, const double *fin)
{
    size_t cells = (size_t)s->nlat * (size_t)s->nlon;
    double worst[6] = {0, 0, 0, 0, 0, 0}, t = s->nsteps * s->dt;
    for (int l = 0; l < s->L; l++) {
        double d1 = 0, n1 = 0, d2 = 0, n2 = 0, di = 0, ni = 0, e2 = 0, m2 = 0, ei = 0, mi = 0, q2 = 0, qn = 0;
        for (int j = 0; j < s->nlat; j++)
            for (int i = 0; i < s->nlon; i++) {
                size_t o = (size_t)j * s->nlon + i;
                double u, v, h, lon = 2 * AT_PI * i / s->nlon, w = s->wt[j];
                case_point(s, l, lon, s->lat[j], &u, &v, &h);
                double dh = fin[(O_H * (size_t)s->L + l) * cells + o] - h;
                double du = fin[(O_U * (size_t)s->L + l) * cells + o] - u;
                double dv = fin[(O_V * (size_t)s->L + l) * cells + o] - v;
                double qe = case_tracer_exact(s, l, lon, s->lat[j], t);
                double dq = fin[(O_Q * (size_t)s->L + l) * cells + o] - qe;
                d1 += w * fabs(dh), n1 += w * fabs(h), d2 += w * dh * dh, n2 += w * h * h;
                di = fmax(di, fabs(dh)), ni = fmax(ni, fabs(h));
                e2 += w * (du * du + dv * dv), m2 += w * (u * u + v * v);
                ei = fmax(ei, sqrt(du * du + dv * dv)), mi = fmax(mi, sqrt(u * u + v * v));
                q2 += w * dq * dq, qn += w * qe * qe;
            }
        double e[6] = {d1 / n1, sqrt(d2 / n2), di / ni, sqrt(e2 / m2), ei / mi, qn > 0 ? sqrt(q2 / qn) : 0};
        for (int k = 0; k < 6; k++)
            worst[k] = fmax(worst[k], e[k]);
    }
    static const char *const names[6] = {"l1_h", "l2_h", "linf_h", "l2_uv", "linf_uv", "l2_tracer"};
    for (int k = 0; k < 6; k++)
        app_quality(&s->a, names[k], worst[k]);
    app_log(&s->a, "case 2 after %.2f days: l1(h) %.3e  l2(h) %.3e  linf(h) %.3e  l2(v) %.3e  l2(tracer) %.3e",
            t / AT_DAY, worst[0], worst[1], worst[2], worst[3], worst[5]);
    return worst[1];
}

/* The tracer's global mass change (all layers) relative to the start. */
static void tracer_mass(atmos *s, const double *fin)
{
    size_t cells = (size_t)s->nlat * (size_t)s->nlon;
    double m = 0, qmin = INFINITY, qmax = -INFINITY;
    for (int l = 0; l < s->L; l++) {
        const double *q = fin + (O_Q * (size_t)s->L + l) * cells;
        m += area_mean(s, q);
        for (size_t c = 0; c < cells; c++)
            qmin = fmin(qmin, q[c]), qmax = fmax(qmax, q[c]);
    }
    double change = (m - s->L * s->q_mass0) / (s->L * s->q_mass0);
    app_quality(&s->a, "tracer_mass_change", change);
    app_quality(&s->a, "tracer_min", qmin);
    app_quality(&s->a, "tracer_max", qmax);
    app_log(&s->a, "tracer: mass change %+.3e, range [%.4f, %.4f] (initially [0, 1])", change, qmin, qmax);
}

static void header(const atmos *s, int64_t *hd)
{
    memset(hd, 0, SERIES_HEAD * sizeof *hd);
    hd[0] = SERIES_MAGIC;
    hd[1] = SERIES_VERSION;
    hd[2] = s->M;
    hd[3] = s->nlon;
    hd[4] = s->nlat;
    hd[5] = s->L;
    hd[6] = s->nout;
    hd[7] = s->every;
    hd[8] = s->nsteps;
    hd[9] = s->tcase;
    memcpy(&hd[10], &s->dt, sizeof s->dt);
}

/* The area-weighted RMS difference of h (all layers) at every output. */
static double *rms_curve(atmos *s, const double *ser, const double *ref)
{
    size_t cells = (size_t)s->nlat * (size_t)s->nlon;
    double *r = at_dalloc(s, (size_t)s->nout), *d2 = at_dalloc(s, cells);
    for (int o = 0; o < s->nout; o++) {
        double sum = 0;
        for (int l = 0; l < s->L; l++) {
            size_t at = ((size_t)o * s->L + l) * cells;
            for (size_t c = 0; c < cells; c++)
                d2[c] = (ser[at + c] - ref[at + c]) * (ser[at + c] - ref[at + c]);
            sum += area_mean(s, d2);
        }
        r[o] = sqrt(sum / s->L);
    }
    free(d2);
    return r;
}

/* Growth of a curve r[0 .. n-1] after its first day (the injected or
 * initial error's adjustment): *rate, its largest log-slope (per day) over
 * windows of GROWTH_WINDOW hours (shorter runs: a third of the run, one
 * output at least) starting at or after min(1 day, a third of the run),
 * windows starting at 0 skipped, infinite if a value is not finite, 0 if
 * none; *factor, its largest value from that start on over its value there
 * (0 if that is 0). */
static void growth_of(const atmos *s, const double *r, int n, double *rate, double *factor)
{
    double end = out_hours(s, n - 1), t0 = fmin(24, end / 3), w = fmin(GROWTH_WINDOW, end / 3);
    int o1 = 0, k = (int)lround(w / (s->every * s->dt / 3600));
    while (o1 < n - 1 && out_hours(s, o1) < t0 - 1e-9)
        o1++;
    k = k < 1 ? 1 : k;
    *rate = 0;
    *factor = 0;
    for (int o = o1; o < n; o++) {
        if (!isfinite(r[o]))
            *rate = *factor = INFINITY;
        else if (r[o1] > 0)
            *factor = fmax(*factor, r[o] / r[o1]);
        if (o + k < n && r[o] > 0 && isfinite(r[o]))
            *rate = fmax(*rate, log(r[o + k] / r[o]) / ((out_hours(s, o + k) - out_hours(s, o)) / 24));
    }
}

/* The size of h's variations: area-weighted RMS of the reference's h minus
 * its global mean at the last output (all layers). */
static double h_scale(atmos *s, const double *ref)
{
    size_t cells = (size_t)s->nlat * (size_t)s->nlon;
    double *d2 = at_dalloc(s, cells), sum = 0;
    for (int l = 0; l < s->L; l++) {
        const double *h = ref + ((size_t)(s->nout - 1) * s->L + l) * cells;
        double mean = area_mean(s, h);
        for (size_t c = 0; c < cells; c++)
            d2[c] = (h[c] - mean) * (h[c] - mean);
        sum += area_mean(s, d2);
    }
    free(d2);
    return sqrt(sum / s->L);
}

static void write_curve(atmos *s, const double *r)
{
    FILE *f = fopen(s->curve, "w");
    int ok = f != NULL;
    if (f) {
        fprintf(f, "hours,rms\n");
        for (int o = 0; o < s->nout; o++)
            fprintf(f, "%.6f,%.9e\n", out_hours(s, o), r[o]);
        ok = !ferror(f);
        ok &= fclose(f) == 0;
    }
    if (!ok)
        fprintf(stderr, "atmos: cannot write %s\n", s->curve);
}

/* An --envelope curve (hours,rms per line after a header); its length or -1. */
static int read_envelope(atmos *s, double *hours, double *r)
{
    FILE *f = fopen(s->envelope, "r");
    char line[256];
    int n = 0;
    if (!f)
        return -1;
    while (n < s->nout && fgets(line, sizeof line, f))
        if (sscanf(line, "%lf,%lf", &hours[n], &r[n]) == 2)
            n++;
    fclose(f);
    return n;
}

/* Before the run: the --reference file fits this configuration and the
 * --envelope curve has this run's output times (checked on rank 0, all
 * ranks stop together otherwise). */
void series_check_inputs(atmos *s)
{
    char why[512] = "";
    if (s->a.rank == 0 && s->a.reference) {
        int64_t want[SERIES_HEAD], got[SERIES_HEAD];
        size_t bytes = SERIES_HEAD * sizeof(int64_t) +
                       (size_t)s->nout * (size_t)s->L * (size_t)s->nlat * (size_t)s->nlon * sizeof(double);
        header(s, want);
        FILE *f = fopen(s->a.reference, "rb");
        long len = -1;
        if (f && !fseek(f, 0, SEEK_END))
            len = ftell(f);
        if (!f || len != (long)bytes || fseek(f, 0, SEEK_SET) || fread(got, sizeof got, 1, f) != 1 ||
            memcmp(want, got, sizeof got))
            snprintf(why, sizeof why, "--reference %s: not the --save of a run with these options (grid, layers, "
                     "case, --dt, --every, steps)", s->a.reference);
        if (f)
            fclose(f);
    }
    if (s->a.rank == 0 && s->envelope) {
        s->env_h = at_dalloc(s, (size_t)s->nout);
        s->env_r = at_dalloc(s, (size_t)s->nout);
        int n = read_envelope(s, s->env_h, s->env_r);
        for (int o = 0; n == s->nout && o < n; o++)
            if (fabs(s->env_h[o] - out_hours(s, o)) > 1e-3)
                n = -2;
        if (n != s->nout && !*why)
            snprintf(why, sizeof why, "--envelope %s: not a --curve of %d outputs at this run's hours", s->envelope,
                     s->nout);
    }
    MPI_Bcast(why, sizeof why, MPI_CHAR, 0, s->a.comm);
    if (*why)
        app_bad_option(&s->a, "%s", why);
}

/* --envelope: the perturbation-growth rule (RULE_GROWTH, see atmos.c). */
static void judge_growth(atmos *s, const double *r, double rate, double rmax, double scale)
{
    double er, ef;
    int n = s->nout, above = 0;
    growth_of(s, s->env_r, n, &er, &ef);
    for (int o = 0; o < n; o++)
        above += !(r[o] <= s->env_r[o]);
    app_quality(&s->a, "env_rms_final", s->env_r[n - 1]);
    app_quality(&s->a, "env_growth", er);
    app_quality(&s->a, "env_growth_factor", ef);
    app_quality(&s->a, "final_over_env", r[n - 1] / s->env_r[n - 1]);
    app_quality(&s->a, "outputs_above_env", above);
    int ok = rate <= er * (1 + s->gtol) && rmax <= s->ltol * scale;
    if (!(er >= ENV_MIN_RATE)) {
        app_log(&s->a, "the envelope does not grow (%.3f/day): no perturbation-growth test with this configuration",
                er);
        ok = -1;
    }
    app_log(&s->a, "growth %.3f/day (envelope %.3f/day, limit %.3f), max RMS difference %.3g m (limit %g x %.4g m)",
            rate, er, er * (1 + s->gtol), rmax, s->ltol, scale);
    app_verdict(&s->a, ok, RULE_GROWTH);
}

/* --reference (rank 0): the RMS difference curve and its verdict. */
static void compare(atmos *s, const double *ser)
{
    size_t n = (size_t)s->nout * (size_t)s->L * (size_t)s->nlat * (size_t)s->nlon;
    size_t bytes = SERIES_HEAD * sizeof(int64_t) + n * sizeof(double);
    char *ref = app_load_reference(&s->a, bytes);
    const double *rs = (const double *)(ref + SERIES_HEAD * sizeof(int64_t));
    double *r = rms_curve(s, ser, rs), rmax = 0, rate, factor, scale = h_scale(s, rs);
    for (int o = 0; o < s->nout; o++)
        rmax = !isfinite(r[o]) ? INFINITY : fmax(rmax, r[o]);
    growth_of(s, r, s->nout, &rate, &factor);
    app_quality(&s->a, "rms_final", r[s->nout - 1]);
    app_quality(&s->a, "rms_max", rmax);
    app_quality(&s->a, "growth", rate);
    app_quality(&s->a, "growth_factor", factor);
    app_quality(&s->a, "h_scale", scale);
    app_quality(&s->a, "rms_max_over_scale", rmax / scale);
    app_log(&s->a, "RMS difference of h from the reference: final %.3e m, max %.3e m, growth %.3f/day (factor %.3g)",
            r[s->nout - 1], rmax, rate, factor);
    if (s->curve)
        write_curve(s, r);
    if (s->envelope)
        judge_growth(s, r, rate, rmax, scale);
    else if (s->perturb > 0)
        app_verdict(&s->a, -1, "a perturbed run: its --curve is the envelope other runs are judged by");
    else if (app_bound(&s->a, 1) == 0)
        app_verdict(&s->a, rmax == 0, RULE_EXACT);
    else
        app_verdict(&s->a, rmax <= s->ltol * scale, RULE_LEVEL);
    free(r);
    free(ref);
}

/* The final fields of the rank's rows: h, u, v, tracer [field][layer][row][lon]. */
static double *final_fields(atmos *s)
{
    size_t cells = (size_t)s->nrow * (size_t)s->nlon, L = (size_t)s->L;
    double *f = at_dalloc(s, NOUT_FIELDS * L * cells);
    for (size_t l = 0; l < L; l++)
        for (int row = 0; row < s->nrow; row++)
            for (int i = 0; i < s->nlon; i++) {
                size_t o = (size_t)row * s->nlon + i;
                double c = s->clat[s->j0 + row];
                f[(O_H * L + l) * cells + o] = (s->phibar + s->grid[(G_PHI * L + l) * cells + o]) / AT_GRAV;
                f[(O_U * L + l) * cells + o] = s->grid[(G_U * L + l) * cells + o] / c;
                f[(O_V * L + l) * cells + o] = s->grid[(G_V * L + l) * cells + o] / c;
                f[(O_Q * L + l) * cells + o] = s->q_cur[l * cells + o];
            }
    return f;
}

void series_finish(atmos *s)
{
    double *loc = final_fields(s), *fin = gather_rows(s, loc, NOUT_FIELDS * s->L);
    double *ser = gather_rows(s, s->series, s->nout * s->L);
    free(loc);
    if (s->a.save) {
        size_t n = (size_t)s->nout * (size_t)s->L * (size_t)s->nlat * (size_t)s->nlon;
        size_t bytes = SERIES_HEAD * sizeof(int64_t) + n * sizeof(double);
        char *blob = NULL;
        if (s->a.rank == 0) {
            blob = at_alloc(s, bytes, 1);
            header(s, (int64_t *)blob);
            memcpy(blob + SERIES_HEAD * sizeof(int64_t), ser, n * sizeof(double));
        }
        app_save_output(&s->a, blob, bytes);
        free(blob);
    }
    if (s->a.rank == 0) {
        report_hash(s, fin, (size_t)NOUT_FIELDS * s->L * s->nlat * s->nlon);
        double l2 = s->tcase == CASE_STEADY ? steady_errors(s, fin) : -1;
        tracer_mass(s, fin);
        if (s->a.reference)
            compare(s, ser);
        else if (s->tcase == CASE_STEADY)
            app_verdict(&s->a, l2 <= s->tol, RULE_STEADY);
    }
    free(fin);
    free(ser);
}
