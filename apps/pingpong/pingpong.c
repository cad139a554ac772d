/*
 * zmpi-pingpong - MPI_Send / MPI_Recv of a real field, back and forth.
 *
 * Ranks pair up (0-1, 2-3, ...; an odd last rank waits). In round k the
 * even rank of a pair sends the k-th chunk of --count floats of the field
 * (chunks taken in turn from the whole field, so consecutive messages
 * differ as a simulation's would), the odd rank receives it and sends back
 * what it received. Every element is checked on both sides: the one-way
 * copy against the bound of one compression, the echo against the bound of
 * two (ABS: eb each; REL: rel times the range of the message compressed).
 *
 * --response FILE: instead, time per call against message size (8 B ..
 * --max, x4 steps) for point-to-point (half a round trip) and every
 * collective zmpi compresses, one CSV row each: op, bytes, ranks, time_s
 * (median of --reps, max over ranks), through the same calls.
 *
 * Output: the JSON line of apps/common/app.h with quality = max_err (largest
 * |received - sent| over every element of every round, both ways),
 * max_err_over_bound, violations (elements beyond their bound), mean_us
 * (half a round trip). Rule: no violation (lossless: bit-identical).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define TAG_PING 11
#define TAG_PONG 12

typedef struct pp {
    app a;
    const char *field;
    int count;
    float *data; /* the whole field */
    size_t n;    /* its elements */
    const char *response;
    int max_mib, reps;
} pp;

static void range_of(const float *x, int n, double *range)
{
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(x[i])) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
    *range = hi >= lo ? (double)hi - (double)lo : 0;
}

/* Elements of got beyond `bound` from want (bound < 0: not checked); the
 * largest error and error/bound so far. */
static long long check(const float *want, const float *got, int n, double bound, double *maxerr, double *maxrel)
{
    long long bad = 0;
    for (int i = 0; i < n; i++) {
        double e = fabs((double)want[i] - (double)got[i]);
        if (isnan(want[i]) || isnan(got[i]))
            e = memcmp(&want[i], &got[i], sizeof(float)) ? INFINITY : 0;
        else if (isinf(want[i]) || isinf(got[i]))
            e = want[i] == got[i] ? 0 : INFINITY;
        *maxerr = e > *maxerr ? e : *maxerr;
        if (bound > 0)
            *maxrel = e / bound > *maxrel ? e / bound : *maxrel;
        if (bound >= 0 && e > bound)
            bad++;
    }
    return bad;
}

/* The bound of one compression of x (0: exact; -1: none). */
static double one_bound(app *a, const float *x, int n)
{
    double r;
    range_of(x, n, &r);
    return app_bound(a, r);
}

static void pingpong(pp *p)
{
    app *a = &p->a;
    int peer = a->rank ^ 1, active = peer < a->size, even = !(a->rank & 1);
    size_t nchunks = p->n / (size_t)p->count;
    float *buf = malloc((size_t)p->count * sizeof *buf), *back = malloc((size_t)p->count * sizeof *back);
    double maxerr = 0, maxrel = 0;
    long long bad = 0;
    if (!buf || !back)
        app_die(a, 1, "out of memory");
    app_start(a);
    for (int k = 0; active && k < a->iters; k++) {
        const float *x = p->data + (size_t)k % nchunks * (size_t)p->count;
        if (even) {
            app_send(a, x, p->count, MPI_FLOAT, peer, TAG_PING, a->comm);
            app_recv(a, back, p->count, MPI_FLOAT, peer, TAG_PONG, a->comm, MPI_STATUS_IGNORE);
        } else {
            app_recv(a, buf, p->count, MPI_FLOAT, peer, TAG_PING, a->comm, MPI_STATUS_IGNORE);
            app_send(a, buf, p->count, MPI_FLOAT, peer, TAG_PONG, a->comm);
        }
        /* checks (not communication): both hops' bounds */
        double b1 = one_bound(a, x, p->count);
        if (even) {
            double b2 = b1 < 0 ? -1 : b1 + one_bound(a, back, p->count);
            bad += check(x, back, p->count, b1 < 0 ? -1 : b2 * (1 + 1e-12), &maxerr, &maxrel);
        } else {
            bad += check(x, buf, p->count, b1 < 0 ? -1 : b1 * (1 + 1e-12), &maxerr, &maxrel);
        }
    }
    app_stop(a);
    double loc[2] = {maxerr, maxrel}, glob[2];
    long long tbad = 0;
    MPI_Reduce(loc, glob, 2, MPI_DOUBLE, MPI_MAX, 0, a->comm);
    MPI_Reduce(&bad, &tbad, 1, MPI_LONG_LONG, MPI_SUM, 0, a->comm);
    if (a->rank == 0) {
        app_quality(a, "max_err", glob[0]);
        app_quality(a, "max_err_over_bound", glob[1]);
        app_quality(a, "violations", (double)tbad);
        app_quality(a, "mean_us", a->size > 1 ? a->t_run / a->iters / 2 * 1e6 : 0);
        app_verdict(a, tbad == 0, "every element of every round within its bound (lossless: bit-identical)");
    }
    free(buf);
    free(back);
}

/* ---- response curves ---- */

typedef enum { OP_P2P, OP_BCAST, OP_SCATTER, OP_GATHER, OP_ALLGATHER, OP_ALLTOALL, OP_ALLREDUCE, OP_REDUCE, OP_N } op_id;
static const char *const op_names[OP_N] = {"p2p",       "bcast",    "scatter",   "gather",
                                           "allgather", "alltoall", "allreduce", "reduce"};

/* One call of op with `count` floats (per rank for the block collectives). */
static void one_call(pp *p, op_id op, float *x, float *y, int count)
{
    app *a = &p->a;
    int *counts = NULL, *displs = NULL;
    switch (op) {
    case OP_P2P:
        if ((a->rank ^ 1) >= a->size)
            break;
        if (!(a->rank & 1)) {
            app_send(a, x, count, MPI_FLOAT, a->rank ^ 1, TAG_PING, a->comm);
            app_recv(a, y, count, MPI_FLOAT, a->rank ^ 1, TAG_PONG, a->comm, MPI_STATUS_IGNORE);
        } else {
            app_recv(a, y, count, MPI_FLOAT, a->rank ^ 1, TAG_PING, a->comm, MPI_STATUS_IGNORE);
            app_send(a, y, count, MPI_FLOAT, a->rank ^ 1, TAG_PONG, a->comm);
        }
        break;
    case OP_BCAST:
        app_bcast(a, a->rank == 0 ? x : y, count, MPI_FLOAT, 0, a->comm);
        break;
    case OP_SCATTER:
        counts = malloc((size_t)a->size * sizeof *counts);
        displs = malloc((size_t)a->size * sizeof *displs);
        for (int i = 0; counts && displs && i < a->size; i++)
            counts[i] = count, displs[i] = i * count;
        if (counts && displs)
            app_scatterv(a, x, counts, displs, MPI_FLOAT, y, count, 0, a->comm);
        break;
    case OP_GATHER:
        app_gather(a, x, count, MPI_FLOAT, y, 0, a->comm);
        break;
    case OP_ALLGATHER:
        app_allgather(a, x, count, MPI_FLOAT, y, a->comm);
        break;
    case OP_ALLTOALL:
        app_alltoall(a, x, count, MPI_FLOAT, y, a->comm);
        break;
    case OP_ALLREDUCE:
        app_allreduce(a, x, y, count, MPI_FLOAT, MPI_SUM, a->comm);
        break;
    default:
        app_reduce(a, x, y, count, MPI_FLOAT, MPI_SUM, 0, a->comm);
        break;
    }
    free(counts);
    free(displs);
}

static int cmp_double(const void *x, const void *y)
{
    double u = *(const double *)x, v = *(const double *)y;
    return (u > v) - (u < v);
}

static void response(pp *p)
{
    app *a = &p->a;
    size_t maxb = (size_t)p->max_mib << 20, maxn = maxb / sizeof(float);
    size_t per = maxn * (size_t)a->size; /* block collectives: count per rank */
    float *x = malloc(per * sizeof *x), *y = malloc(per * sizeof *y);
    double *t = malloc((size_t)p->reps * sizeof *t);
    FILE *f = NULL;
    if (!x || !y || !t)
        app_die(a, 1, "out of memory (--max %d MiB)", p->max_mib);
    for (size_t i = 0; i < per; i++)
        x[i] = p->data[(i + (size_t)a->rank * 7919) % p->n];
    if (a->rank == 0 && !(f = fopen(p->response, "w")))
        app_die(a, 2, "cannot write %s", p->response);
    if (f)
        fprintf(f, "op,bytes,ranks,time_s\n");
    app_start(a);
    for (int op = 0; op < OP_N; op++) {
        for (size_t b = 8; b <= maxb; b *= 4) {
            int count = (int)(b / sizeof(float) ? b / sizeof(float) : 1);
            one_call(p, (op_id)op, x, y, count); /* warm-up */
            for (int r = 0; r < p->reps; r++) {
                MPI_Barrier(a->comm);
                double t0 = app_now();
                one_call(p, (op_id)op, x, y, count);
                double dt = app_now() - t0, mx;
                MPI_Allreduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, a->comm);
                t[r] = op == OP_P2P ? mx / 2 : mx;
            }
            qsort(t, (size_t)p->reps, sizeof *t, cmp_double);
            if (f)
                fprintf(f, "%s,%zu,%d,%.9g\n", op_names[op], (size_t)count * sizeof(float), a->size,
                        t[p->reps / 2]);
            app_log(a, "%s %zu B: %.3g s", op_names[op], (size_t)count * sizeof(float), t[p->reps / 2]);
        }
    }
    app_stop(a);
    if (f && fclose(f))
        app_die(a, 2, "cannot write %s", p->response);
    free(x);
    free(y);
    free(t);
}

int main(int argc, char **argv)
{
    pp p = {.field = "pop_t_384x320.f32", .count = 8192, .max_mib = 64, .reps = 5};
    app_opt opts[] = {
        {"field", 's', &p.field, "float32 field of the data directory to send"},
        {"count", 'i', &p.count, "floats per message"},
        {"response", 's', &p.response, "write response curves (CSV) instead of the ping-pong"},
        {"max", 'i', &p.max_mib, "--response: largest message, MiB"},
        {"reps", 'i', &p.reps, "--response: repetitions per point (median)"},
    };
    app *a = &p.a;
    app_init(a, &argc, &argv, "pingpong", "MPI_Send/MPI_Recv of a real field back and forth", opts,
             (int)(sizeof opts / sizeof *opts), 10000);
    if (p.count < 1 || p.max_mib < 1 || p.reps < 1)
        app_bad_option(a, "--count, --max and --reps must be positive");
    size_t bytes = 0;
    p.data = app_read_data(a, p.field, 0, &bytes);
    p.n = bytes / sizeof(float);
    if (p.n < (size_t)p.count)
        app_bad_option(a, "%s holds %zu floats, fewer than --count %d", p.field, p.n, p.count);
    if (a->size < 2)
        app_log(a, "one rank: nothing to send");
    if (p.response)
        response(&p);
    else
        pingpong(&p);
    free(p.data);
    return app_finish(a);
}
