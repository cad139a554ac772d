/*
 * zmpi-stacking - image stacking: many noisy exposures of a real field
 * summed across the ranks with MPI_Allreduce (or MPI_Reduce to rank 0).
 *
 * In round t (--iters rounds, default 10) rank r takes exposure t * N + r:
 * the field (default trinidad_data, 1201 x 2401 floats) plus noise of
 * standard deviation --noise times the field's value range (triangular,
 * from a counter-based generator: the same exposures at any rank count).
 * The round's exposures are summed with one MPI_Allreduce (--op allreduce,
 * MPI_FLOAT, MPI_SUM; --op reduce: MPI_Reduce to rank 0) and added to the
 * stack (double); the result is the mean of all N * iters exposures.
 *
 * Output: the stack's PSNR and NRMSE against the plain run's stack
 * (--reference) and its largest difference; and, as context, the PSNR of
 * the stack against the noise-free field. Acceptance: in zmpi's result
 * scope each round's sum is within eb_r of the exact sum (ABS eb; REL: rel
 * times the value range of all ranks' exposures), so every pixel of the
 * stack is within eb_r / N of the plain stack, plus the plain sum's own
 * float rounding (4 N 2^-24 max |x|). Lossless: bit-identical. In message
 * scope zmpi gives no bound on the result: no verdict.
 */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

typedef struct stack {
    app a;
    const char *field, *op;
    double noise;
    float *truth;   /* the field */
    size_t n;
    float lo, hi;   /* its range */
    float *img, *sum;
    double *acc;    /* the stack */
} stack;

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Exposure e: the field plus triangular noise of standard deviation sd on
 * [-amp, amp] (variance amp^2 / 6). */
static void expose(stack *s, uint64_t e)
{
    const double sd = s->noise * ((double)s->hi - s->lo), amp = sd * sqrt(6.0);
    const double k = amp / 4294967296.0;
    for (size_t i = 0; i < s->n; i++) {
        uint64_t r = mix64(e * 0x100000001B3ull ^ i);
        double u = (double)(r >> 32) + (double)(r & 0xffffffffu) - 4294967295.0;
        s->img[i] = (float)(s->truth[i] + k * u);
    }
}

static void run(stack *s)
{
    app *a = &s->a;
    int reduce = !strcmp(s->op, "reduce");
    app_start(a);
    for (int t = 0; t < a->iters; t++) {
        expose(s, (uint64_t)t * (uint64_t)a->size + (uint64_t)a->rank);
        if (reduce)
            app_reduce(a, s->img, s->sum, (int)s->n, MPI_FLOAT, MPI_SUM, 0, a->comm);
        else
            app_allreduce(a, s->img, s->sum, (int)s->n, MPI_FLOAT, MPI_SUM, a->comm);
        if (!reduce || a->rank == 0)
            for (size_t i = 0; i < s->n; i++)
                s->acc[i] += s->sum[i];
    }
    app_stop(a);
    double inv = 1.0 / ((double)a->size * a->iters);
    for (size_t i = 0; i < s->n; i++)
        s->img[i] = (float)(s->acc[i] * inv); /* the stack */
}

static double psnr_of(const float *x, const float *ref, size_t n, double *rmse, double *maxd, double *range)
{
    double lo = INFINITY, hi = -INFINITY, se = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)x[i] - ref[i];
        se += d * d;
        m = fabs(d) > m || isnan(d) ? (isnan(d) ? INFINITY : fabs(d)) : m;
        lo = fmin(lo, ref[i]);
        hi = fmax(hi, ref[i]);
    }
    *rmse = sqrt(se / (double)n);
    *maxd = m;
    *range = hi - lo;
    return *rmse > 0 ? 20 * log10((hi - lo) / *rmse) : INFINITY;
}

/* The bound of one round's sum in result scope, or -1 (none). */
static double round_bound(stack *s)
{
    app *a = &s->a;
    ZMPI_Config cfg;
    float mm[2] = {FLT_MAX, FLT_MAX}, g[2];
    for (size_t i = 0; i < s->n; i++) { /* the exposures' range: the last round's, widened by the noise */
        mm[0] = fminf(mm[0], s->truth[i]);
        mm[1] = fminf(mm[1], -s->truth[i]);
    }
    MPI_Allreduce(mm, g, 2, MPI_FLOAT, MPI_MIN, a->comm);
    double range = (-(double)g[1] - g[0]) * (1 + 2 * s->noise * 2.5);
    if (app_compresses(a) && ZMPI_Comm_get_config(a->comm, &cfg) == MPI_SUCCESS && cfg.scope != ZMPI_SCOPE_RESULT &&
        app_bound(a, range) > 0)
        return -1;
    return app_bound(a, range);
}

static void report(stack *s)
{
    app *a = &s->a;
    double eb = round_bound(s);
    app_save_output(a, s->img, s->n * sizeof *s->img);
    float *ref = app_load_reference(a, s->n * sizeof *s->img);
    if (a->rank != 0)
        return;
    double rmse, maxd, range, maxabs = fmax(fabs(s->lo), fabs(s->hi)) * (1 + 5 * s->noise);
    app_quality(a, "psnr_truth", psnr_of(s->img, s->truth, s->n, &rmse, &maxd, &range));
    if (ref) {
        double p = psnr_of(s->img, ref, s->n, &rmse, &maxd, &range);
        double bound = eb < 0 ? -1 : eb / a->size + 4.0 * a->size * ldexp(maxabs, -24);
        app_quality(a, "psnr", p);
        app_quality(a, "nrmse", range > 0 ? rmse / range : rmse);
        app_quality(a, "max_err", maxd);
        app_quality(a, "bound", bound);
        if (eb == 0)
            app_verdict(a, memcmp(ref, s->img, s->n * sizeof *s->img) == 0, "lossless: bit-identical stack");
        else if (eb > 0)
            app_verdict(a, maxd <= bound, "every pixel within eb_r / N + 4 N 2^-24 max|x| of the plain stack");
    }
    free(ref);
}

int main(int argc, char **argv)
{
    stack s;
    memset(&s, 0, sizeof s);
    s.field = "trinidad_data_1201x2401.f32";
    s.op = "allreduce";
    s.noise = 0.01;
    app_opt opts[] = {{"field", 's', &s.field, "float32 field of the data directory"},
                      {"op", 's', &s.op, "allreduce or reduce"},
                      {"noise", 'd', &s.noise, "noise standard deviation, as a fraction of the field's range"}};
    app_init(&s.a, &argc, &argv, "stacking", "stacking of noisy exposures with MPI_Allreduce / MPI_Reduce", opts, 3,
             10);
    if (strcmp(s.op, "allreduce") && strcmp(s.op, "reduce"))
        app_bad_option(&s.a, "--op %s: allreduce or reduce", s.op);
    if (!(s.noise >= 0) || s.noise > 1)
        app_bad_option(&s.a, "--noise %g: 0 to 1", s.noise);
    size_t bytes = 0;
    s.truth = app_read_data(&s.a, s.field, 0, &bytes);
    s.n = bytes / sizeof(float);
    if (s.n == 0 || s.n > 2147483647u)
        app_bad_option(&s.a, "%s: no floats, or more than an int count", s.field);
    s.lo = FLT_MAX;
    s.hi = -FLT_MAX;
    for (size_t i = 0; i < s.n; i++) {
        s.lo = fminf(s.lo, s.truth[i]);
        s.hi = fmaxf(s.hi, s.truth[i]);
    }
    s.img = malloc(s.n * sizeof *s.img);
    s.sum = malloc(s.n * sizeof *s.sum);
    s.acc = calloc(s.n, sizeof *s.acc);
    if (!s.img || !s.sum || !s.acc)
        app_die(&s.a, 1, "out of memory");
    app_log(&s.a, "%zu pixels, %d rounds of %d exposures, %s", s.n, s.a.iters, s.a.size, s.op);
    run(&s);
    report(&s);
    free(s.truth);
    free(s.img);
    free(s.sum);
    free(s.acc);
    return app_finish(&s.a);
}
