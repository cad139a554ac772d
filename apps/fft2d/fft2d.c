/*
 * zmpi-fft2d - a distributed 2-D FFT of a real field, forward and inverse,
 * with all-to-all transposes (FFTW 3 in single precision for the 1-D
 * transforms).
 *
 * The field (default trinidad_data, 1201 x 2401, scaled to [0, 1];
 * --refine F makes it F times finer in each direction by bilinear
 * interpolation) is cut into slabs of rows. Forward: a real-to-complex FFT
 * of every owned row (N1 values -> M1 = N1/2 + 1 coefficients), a
 * transpose (MPI_Alltoallv of MPI_FLOAT pairs: rank r sends rank s its rows
 * restricted to the columns s owns), and a complex FFT of every owned
 * column (N0 values). Inverse: the same backwards. Every 1-D transform is
 * scaled to be unitary (1/sqrt(n)), so errors keep their L2 norm through
 * it. --iters round trips (default 5), each from the original field. Each
 * transpose has a communicator of its own (so zmpi's inter-step codecs see
 * the same transpose's previous message on a channel).
 *
 *     rows of r ─r2c─▶ (rows of r) x M1 ──Alltoallv──▶ N0 x (columns of s) ─c2c─▶ spectrum
 *     spectrum ─c2c⁻¹─▶ N0 x (columns of s) ──Alltoallv──▶ (rows of r) x M1 ─c2r─▶ field
 *
 * Output: with --reference the spectrum's relative L2 error against the
 * plain run's (spec_rel_l2), and always the round trip's error against the
 * input (rt_max, rt_rms). Acceptance: each element crossing a transpose
 * carries at most eb in its real and its imaginary part (ABS; REL: rel
 * times the value range of the transposed data), so the spectrum's error
 * has L2 norm <= sqrt(2) eb sqrt(M) (M = N0 * M1 coefficients) and the
 * round trip's RMS error <= 2 sqrt(2) eb sqrt(M / (N0 N1)) (two transposes);
 * with 1e-6 added to each for single-precision rounding. Lossless:
 * bit-identical spectrum and round trip.
 */
#include <fftw3.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

typedef struct fft {
    app a;
    const char *field;
    int refine;
    int N0, N1, M1;
    int r0, r1, c0, c1; /* owned rows and columns */
    float *x;           /* owned rows of the input, (r1-r0) x N1 */
    float *rows;        /* (r1-r0) x M1 complex */
    float *cols;        /* (c1-c0) x N0 complex, a column after the other */
    float *sbuf, *rbuf;
    float *y;           /* the round trip's rows */
    float *spec;        /* the spectrum of the owned columns */
    int *scnt, *sdsp, *rcnt, *rdsp;
    fftwf_plan fr2c, fc2r, fcol, icol;
    double range;       /* value range of the transposed data (REL bounds) */
    MPI_Comm fwd, inv;  /* one communicator per transpose: a channel's consecutive messages hold the same data */
} fft;

static int part(int n, int parts, int i)
{
    return (int)((long long)i * n / parts);
}

/* Rank 0 reads the field, refines it and scales it to [0, 1]; each rank
 * gets its rows (exactly: MPI_BYTE). */
static void load(fft *f)
{
    app *a = &f->a;
    int n0 = 0, n1 = 0;
    if (sscanf(f->field, "%*[^_]_%*[^_]_%dx%d", &n0, &n1) != 2 && sscanf(f->field, "%*[^_]_%dx%d", &n0, &n1) != 2)
        app_bad_option(a, "--field %s: expected NAME_ROWSxCOLS.f32", f->field);
    f->N0 = (n0 - 1) * f->refine + 1;
    f->N1 = (n1 - 1) * f->refine + 1;
    f->M1 = f->N1 / 2 + 1;
    f->r0 = part(f->N0, a->size, a->rank);
    f->r1 = part(f->N0, a->size, a->rank + 1);
    f->c0 = part(f->M1, a->size, a->rank);
    f->c1 = part(f->M1, a->size, a->rank + 1);
    float *src = app_read_data(a, f->field, (size_t)n0 * (size_t)n1 * sizeof(float), NULL);
    float lo = FLT_MAX, hi = -FLT_MAX;
    for (size_t i = 0; i < (size_t)n0 * (size_t)n1; i++) {
        lo = src[i] < lo ? src[i] : lo;
        hi = src[i] > hi ? src[i] : hi;
    }
    double w = hi > lo ? (double)hi - lo : 1.0, R = f->refine;
    f->x = fftwf_malloc(((size_t)(f->r1 - f->r0) * (size_t)f->N1 + 1) * sizeof *f->x); /* aligned as the plans' */
    if (!f->x)
        app_die(a, 1, "out of memory");
    for (int i = f->r0; i < f->r1; i++)
        for (int j = 0; j < f->N1; j++) { /* bilinear, in double */
            int i0 = (int)(i / R), j0 = (int)(j / R);
            int i1 = i0 + 1 < n0 ? i0 + 1 : i0, j1 = j0 + 1 < n1 ? j0 + 1 : j0;
            double u = i / R - i0, v = j / R - j0;
            double s = (1 - u) * ((1 - v) * src[(size_t)i0 * n1 + j0] + v * src[(size_t)i0 * n1 + j1]) +
                       u * ((1 - v) * src[(size_t)i1 * n1 + j0] + v * src[(size_t)i1 * n1 + j1]);
            f->x[(size_t)(i - f->r0) * f->N1 + j] = (float)((s - lo) / w);
        }
    free(src);
}

static void *xalloc(fft *f, size_t n)
{
    void *p = fftwf_malloc(n ? n : 1);
    if (!p)
        app_die(&f->a, 1, "out of memory");
    return p;
}

static void setup(fft *f)
{
    app *a = &f->a;
    int nr = f->r1 - f->r0, nc = f->c1 - f->c0;
    f->rows = xalloc(f, (size_t)nr * f->M1 * 2 * sizeof(float));
    f->cols = xalloc(f, (size_t)nc * f->N0 * 2 * sizeof(float));
    f->sbuf = xalloc(f, ((size_t)nr * f->M1 > (size_t)nc * f->N0 ? (size_t)nr * f->M1 : (size_t)nc * f->N0) * 2 * 4);
    f->rbuf = xalloc(f, ((size_t)nr * f->M1 > (size_t)nc * f->N0 ? (size_t)nr * f->M1 : (size_t)nc * f->N0) * 2 * 4);
    f->y = xalloc(f, (size_t)nr * f->N1 * sizeof(float));
    f->spec = xalloc(f, (size_t)nc * f->N0 * 2 * sizeof(float));
    f->scnt = malloc(4 * (size_t)a->size * sizeof(int));
    if (!f->scnt)
        app_die(a, 1, "out of memory");
    f->sdsp = f->scnt + a->size;
    f->rcnt = f->sdsp + a->size;
    f->rdsp = f->rcnt + a->size;
    float *tmp = xalloc(f, (size_t)nr * f->N1 * sizeof(float));
    fftwf_complex *rc = (fftwf_complex *)f->rows, *cc = (fftwf_complex *)f->cols;
    if (nr > 0) {
        f->fr2c = fftwf_plan_many_dft_r2c(1, &f->N1, nr, tmp, NULL, 1, f->N1, rc, NULL, 1, f->M1, FFTW_ESTIMATE);
        f->fc2r = fftwf_plan_many_dft_c2r(1, &f->N1, nr, rc, NULL, 1, f->M1, f->y, NULL, 1, f->N1, FFTW_ESTIMATE);
    }
    if (nc > 0) {
        f->fcol = fftwf_plan_many_dft(1, &f->N0, nc, cc, NULL, 1, f->N0, cc, NULL, 1, f->N0, FFTW_FORWARD,
                                      FFTW_ESTIMATE);
        f->icol = fftwf_plan_many_dft(1, &f->N0, nc, cc, NULL, 1, f->N0, cc, NULL, 1, f->N0, FFTW_BACKWARD,
                                      FFTW_ESTIMATE);
    }
    fftwf_free(tmp);
}

static void scale(float *v, size_t n, float s)
{
    for (size_t i = 0; i < n; i++)
        v[i] *= s;
}

/* Rows -> columns: rank s gets (my rows) x (its columns), column by column. */
static void transpose_fwd(fft *f, double *lo, double *hi)
{
    app *a = &f->a;
    int nr = f->r1 - f->r0;
    size_t q = 0;
    for (int s = 0; s < a->size; s++) {
        int c0 = part(f->M1, a->size, s), c1 = part(f->M1, a->size, s + 1);
        f->sdsp[s] = (int)q;
        for (int c = c0; c < c1; c++)
            for (int r = 0; r < nr; r++, q += 2) {
                const float *v = f->rows + ((size_t)r * f->M1 + c) * 2;
                f->sbuf[q] = v[0];
                f->sbuf[q + 1] = v[1];
                *lo = fmin(*lo, fmin(v[0], v[1]));
                *hi = fmax(*hi, fmax(v[0], v[1]));
            }
        f->scnt[s] = (int)q - f->sdsp[s];
        int q0 = part(f->N0, a->size, s), q1 = part(f->N0, a->size, s + 1);
        f->rcnt[s] = (q1 - q0) * (f->c1 - f->c0) * 2;
        f->rdsp[s] = s ? f->rdsp[s - 1] + f->rcnt[s - 1] : 0;
    }
    app_alltoallv(a, f->sbuf, f->scnt, f->sdsp, f->rbuf, f->rcnt, f->rdsp, MPI_FLOAT, f->fwd);
    for (int s = 0; s < a->size; s++) {
        int q0 = part(f->N0, a->size, s), q1 = part(f->N0, a->size, s + 1);
        const float *src = f->rbuf + f->rdsp[s];
        for (int c = 0; c < f->c1 - f->c0; c++, src += (size_t)(q1 - q0) * 2)
            memcpy(f->cols + ((size_t)c * f->N0 + q0) * 2, src, (size_t)(q1 - q0) * 2 * sizeof(float));
    }
}

/* Columns -> rows: the reverse (the same counts, swapped). */
static void transpose_inv(fft *f, double *lo, double *hi)
{
    app *a = &f->a;
    int nr = f->r1 - f->r0, nc = f->c1 - f->c0;
    for (int s = 0; s < a->size; s++) {
        int q0 = part(f->N0, a->size, s), q1 = part(f->N0, a->size, s + 1);
        float *dst = f->rbuf + f->rdsp[s];
        for (int c = 0; c < nc; c++, dst += (size_t)(q1 - q0) * 2) {
            const float *v = f->cols + ((size_t)c * f->N0 + q0) * 2;
            memcpy(dst, v, (size_t)(q1 - q0) * 2 * sizeof(float));
            for (int k = 0; k < 2 * (q1 - q0); k++) {
                *lo = fmin(*lo, v[k]);
                *hi = fmax(*hi, v[k]);
            }
        }
    }
    app_alltoallv(a, f->rbuf, f->rcnt, f->rdsp, f->sbuf, f->scnt, f->sdsp, MPI_FLOAT, f->inv);
    size_t q = 0;
    for (int s = 0; s < a->size; s++) {
        int c0 = part(f->M1, a->size, s), c1 = part(f->M1, a->size, s + 1);
        for (int c = c0; c < c1; c++)
            for (int r = 0; r < nr; r++, q += 2)
                memcpy(f->rows + ((size_t)r * f->M1 + c) * 2, f->sbuf + q, 2 * sizeof(float));
    }
}

static void roundtrip(fft *f, double *lo, double *hi)
{
    int nr = f->r1 - f->r0, nc = f->c1 - f->c0;
    if (nr > 0) {
        fftwf_execute_dft_r2c(f->fr2c, f->x, (fftwf_complex *)f->rows);
        scale(f->rows, (size_t)nr * f->M1 * 2, 1.0f / sqrtf((float)f->N1));
    }
    transpose_fwd(f, lo, hi);
    if (nc > 0) {
        fftwf_execute(f->fcol);
        scale(f->cols, (size_t)nc * f->N0 * 2, 1.0f / sqrtf((float)f->N0));
        memcpy(f->spec, f->cols, (size_t)nc * f->N0 * 2 * sizeof(float));
        fftwf_execute(f->icol);
        scale(f->cols, (size_t)nc * f->N0 * 2, 1.0f / sqrtf((float)f->N0));
    }
    transpose_inv(f, lo, hi);
    if (nr > 0) {
        fftwf_execute_dft_c2r(f->fc2r, (fftwf_complex *)f->rows, f->y);
        scale(f->y, (size_t)nr * f->N1, 1.0f / sqrtf((float)f->N1));
    }
}

static void run(fft *f)
{
    app *a = &f->a;
    double lo = INFINITY, hi = -INFINITY, g[2], l[2];
    app_start(a);
    for (int it = 0; it < a->iters; it++)
        roundtrip(f, &lo, &hi);
    app_stop(a);
    l[0] = -lo;
    l[1] = hi;
    MPI_Allreduce(l, g, 2, MPI_DOUBLE, MPI_MAX, a->comm);
    f->range = g[1] + g[0];
}

/* Rank 0: the whole spectrum, column after column (M1 x N0 complex). */
static float *gather_spectrum(fft *f)
{
    void *all = NULL;
    app_gather_bytes(&f->a, f->spec, (size_t)(f->c1 - f->c0) * f->N0 * 2 * sizeof(float), &all);
    return all;
}

static void compare_spectrum(fft *f, const float *spec, const float *ref, double eb)
{
    app *a = &f->a;
    size_t n = (size_t)f->M1 * f->N0 * 2;
    double se = 0, sr = 0;
    int same = memcmp(spec, ref, n * sizeof *spec) == 0;
    for (size_t i = 0; i < n; i++) {
        se += ((double)spec[i] - ref[i]) * ((double)spec[i] - ref[i]);
        sr += (double)ref[i] * ref[i];
    }
    double rel = sr > 0 ? sqrt(se / sr) : sqrt(se);
    double bound = eb < 0 ? -1 : sqrt(2.0) * eb * sqrt((double)f->M1 * f->N0) / (sr > 0 ? sqrt(sr) : 1) + 1e-6;
    app_quality(a, "spec_rel_l2", rel);
    app_quality(a, "spec_bound", bound);
    if (eb == 0)
        app_verdict(a, same && a->quality_ok != 0, "lossless: bit-identical spectrum and round trip");
    else if (eb > 0 && a->quality_ok != 0)
        app_verdict(a, rel <= bound, "spectrum: relative L2 error <= sqrt(2) eb sqrt(M) / |S| + 1e-6; round trip: "
                                     "RMS <= 2 sqrt(2) eb sqrt(M / N) + 1e-6");
}

static void report(fft *f)
{
    app *a = &f->a;
    int nr = f->r1 - f->r0;
    double l[2] = {0, 0}, g[2];
    for (size_t i = 0; i < (size_t)nr * f->N1; i++) {
        double d = fabs((double)f->y[i] - f->x[i]);
        l[0] = d > l[0] || isnan(d) ? (isnan(d) ? INFINITY : d) : l[0];
        l[1] += d * d;
    }
    MPI_Reduce(&l[0], &g[0], 1, MPI_DOUBLE, MPI_MAX, 0, a->comm);
    MPI_Reduce(&l[1], &g[1], 1, MPI_DOUBLE, MPI_SUM, 0, a->comm);
    float *spec = gather_spectrum(f);
    size_t sbytes = (size_t)f->M1 * f->N0 * 2 * sizeof(float);
    app_save_output(a, spec, sbytes);
    float *ref = app_load_reference(a, sbytes);
    double eb = app_bound(a, f->range);
    if (a->rank == 0) {
        double rms = sqrt(g[1] / ((double)f->N0 * f->N1));
        double rt_bound = eb < 0 ? -1 : 2 * sqrt(2.0) * eb * sqrt((double)f->M1 * f->N0 / ((double)f->N0 * f->N1)) + 1e-6;
        app_quality(a, "rows", f->N0);
        app_quality(a, "cols", f->N1);
        app_quality(a, "rt_max", g[0]);
        app_quality(a, "rt_rms", rms);
        app_quality(a, "rt_rms_bound", rt_bound);
        if (eb >= 0)
            app_verdict(a, rms <= rt_bound + (eb == 0 ? 1e-6 : 0), "round trip RMS within its bound");
        if (ref)
            compare_spectrum(f, spec, ref, eb);
    }
    free(spec);
    free(ref);
}

int main(int argc, char **argv)
{
    fft f;
    memset(&f, 0, sizeof f);
    f.field = "trinidad_data_1201x2401.f32";
    f.refine = 1;
    app_opt opts[] = {{"field", 's', &f.field, "float32 field NAME_ROWSxCOLS.f32 of the data directory"},
                      {"refine", 'i', &f.refine, "bilinear refinement factor in each direction"}};
    app_init(&f.a, &argc, &argv, "fft2d", "distributed 2-D FFT of a real field, forward and inverse", opts, 2, 5);
    if (f.refine < 1 || f.refine > 16)
        app_bad_option(&f.a, "--refine %d: 1 to 16", f.refine);
    load(&f);
    if (f.a.size > f.M1 || f.a.size > f.N0)
        app_bad_option(&f.a, "%d ranks: more than the %d rows or %d columns of the spectrum", f.a.size, f.N0, f.M1);
    setup(&f);
    f.fwd = app_comm_dup(&f.a);
    f.inv = app_comm_dup(&f.a);
    app_log(&f.a, "%d x %d field, %d round trips", f.N0, f.N1, f.a.iters);
    run(&f);
    report(&f);
    if (f.fr2c) {
        fftwf_destroy_plan(f.fr2c);
        fftwf_destroy_plan(f.fc2r);
    }
    if (f.fcol) {
        fftwf_destroy_plan(f.fcol);
        fftwf_destroy_plan(f.icol);
    }
    fftwf_free(f.rows);
    fftwf_free(f.cols);
    fftwf_free(f.sbuf);
    fftwf_free(f.rbuf);
    fftwf_free(f.y);
    fftwf_free(f.spec);
    fftwf_free(f.x);
    free(f.scnt);
    return app_finish(&f.a);
}
