/*
 * zmpi-kmeans - Lloyd's k-means on real multi-variable climate data.
 *
 * The points are the 96 x 192 grid columns of two fields of ../shared/data
 * on the same grid: the 17-level temperature profile (rect3d_t) and the 12
 * monthly near-surface temperatures (tas): 18,432 points of 29 features,
 * each feature scaled to [0, 1] (--copies C repeats the set C times for
 * larger runs). As in the common MPI k-means: rank 0 reads the data and
 * distributes the points with MPI_Scatterv; every iteration each rank
 * assigns its points to the nearest centroid and sums them per cluster, the
 * sums (MPI_DOUBLE) and counts (MPI_INT) are combined with MPI_Allreduce,
 * rank 0 computes the new centroids and MPI_Bcast sends them (MPI_FLOAT).
 * A fixed number of iterations (--iters, default 20), initial centroids the
 * points i * n / k (deterministic, the same at every rank count).
 *
 * Output: the sum of squared distances of the points to their centroids
 * (sse, the objective k-means minimises); with --reference the share of
 * points whose cluster matches the plain run's (agreement), the relative
 * difference of the objective (sse_rel_diff) and the largest difference of
 * a centroid coordinate (centroid_err, for information: a point near the
 * boundary of two clusters may change sides and move both centroids, the
 * clustering being as good). Acceptance: agreement >= 0.99 and
 * sse_rel_diff <= 1e-3; lossless: identical memberships and centroids.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define NLAT 96
#define NLON 192
#define NLEV 17
#define NMON 12
#define NFEAT (NLEV + NMON)

typedef struct km {
    app a;
    int k, copies;
    int n;          /* points in all */
    int nloc;       /* points of this rank */
    float *pts;     /* this rank's points, nloc x NFEAT */
    float *cent;    /* k x NFEAT */
    int *member;    /* nloc */
    double sse;
} km;

/* Rank 0: the point set, each feature scaled to [0, 1]. */
static float *load_points(km *m)
{
    app *a = &m->a;
    float *t = app_read_data(a, "rect3d_t_17x96x192.f32", (size_t)NLEV * NLAT * NLON * 4, NULL);
    float *s = app_read_data(a, "tas_tas_12x96x192.f32", (size_t)NMON * NLAT * NLON * 4, NULL);
    size_t np = (size_t)NLAT * NLON;
    float *x = malloc(np * (size_t)m->copies * NFEAT * sizeof *x);
    if (!x)
        app_die(a, 1, "out of memory");
    for (int f = 0; f < NFEAT; f++) {
        const float *src = f < NLEV ? t + (size_t)f * np : s + (size_t)(f - NLEV) * np;
        float lo = FLT_MAX, hi = -FLT_MAX;
        for (size_t i = 0; i < np; i++) {
            lo = src[i] < lo ? src[i] : lo;
            hi = src[i] > hi ? src[i] : hi;
        }
        float w = hi > lo ? hi - lo : 1.0f;
        for (int c = 0; c < m->copies; c++)
            for (size_t i = 0; i < np; i++)
                x[((size_t)c * np + i) * NFEAT + (size_t)f] = (src[i] - lo) / w;
    }
    free(t);
    free(s);
    return x;
}

static void counts_of(const km *m, int *counts, int *displs)
{
    for (int r = 0, off = 0; r < m->a.size; r++) {
        int lo = (int)((long long)r * m->n / m->a.size), hi = (int)((long long)(r + 1) * m->n / m->a.size);
        counts[r] = (hi - lo) * NFEAT;
        displs[r] = off;
        off += counts[r];
    }
}

/* Nearest centroid of point x, and its squared distance. */
static int nearest(const km *m, const float *x, double *d2)
{
    int best = 0;
    double bd = INFINITY;
    for (int c = 0; c < m->k; c++) {
        const float *y = m->cent + (size_t)c * NFEAT;
        double d = 0;
        for (int f = 0; f < NFEAT; f++)
            d += ((double)x[f] - y[f]) * ((double)x[f] - y[f]);
        if (d < bd) {
            bd = d;
            best = c;
        }
    }
    *d2 = bd;
    return best;
}

static void iterate(km *m, double *sums, int *cnt, double *gsums, int *gcnt)
{
    app *a = &m->a;
    memset(sums, 0, (size_t)m->k * NFEAT * sizeof *sums);
    memset(cnt, 0, (size_t)m->k * sizeof *cnt);
    m->sse = 0;
    for (int i = 0; i < m->nloc; i++) {
        double d2;
        const float *x = m->pts + (size_t)i * NFEAT;
        int c = nearest(m, x, &d2);
        m->member[i] = c;
        m->sse += d2;
        cnt[c]++;
        for (int f = 0; f < NFEAT; f++)
            sums[(size_t)c * NFEAT + (size_t)f] += x[f];
    }
    app_allreduce(a, sums, gsums, m->k * NFEAT, MPI_DOUBLE, MPI_SUM, a->comm);
    app_allreduce(a, cnt, gcnt, m->k, MPI_INT, MPI_SUM, a->comm);
    if (a->rank == 0)
        for (int c = 0; c < m->k; c++)
            for (int f = 0; f < NFEAT && gcnt[c] > 0; f++)
                m->cent[(size_t)c * NFEAT + (size_t)f] = (float)(gsums[(size_t)c * NFEAT + (size_t)f] / gcnt[c]);
    app_bcast(a, m->cent, m->k * NFEAT, MPI_FLOAT, 0, a->comm);
}

static void run(km *m)
{
    app *a = &m->a;
    int *counts = malloc((size_t)a->size * sizeof *counts), *displs = malloc((size_t)a->size * sizeof *displs);
    double *sums = malloc((size_t)m->k * NFEAT * 2 * sizeof *sums);
    int *cnt = malloc((size_t)m->k * 2 * sizeof *cnt);
    float *all = a->rank == 0 ? load_points(m) : NULL;
    if (!counts || !displs || !sums || !cnt)
        app_die(a, 1, "out of memory");
    counts_of(m, counts, displs);
    m->nloc = counts[a->rank] / NFEAT;
    m->pts = malloc(((size_t)m->nloc + 1) * NFEAT * sizeof *m->pts);
    m->member = malloc(((size_t)m->nloc + 1) * sizeof *m->member);
    m->cent = malloc((size_t)m->k * NFEAT * sizeof *m->cent);
    if (!m->pts || !m->member || !m->cent)
        app_die(a, 1, "out of memory");
    if (a->rank == 0)
        for (int c = 0; c < m->k; c++)
            memcpy(m->cent + (size_t)c * NFEAT, all + (size_t)((long long)c * m->n / m->k) * NFEAT,
                   NFEAT * sizeof *m->cent);
    app_start(a);
    app_scatterv(a, all, counts, displs, MPI_FLOAT, m->pts, counts[a->rank], 0, a->comm);
    app_bcast(a, m->cent, m->k * NFEAT, MPI_FLOAT, 0, a->comm);
    for (int it = 0; it < a->iters; it++)
        iterate(m, sums, cnt, sums + (size_t)m->k * NFEAT, cnt + m->k);
    app_stop(a);
    free(all);
    free(counts);
    free(displs);
    free(sums);
    free(cnt);
}

static void report(km *m)
{
    app *a = &m->a;
    double sse = 0;
    void *mem = NULL;
    MPI_Reduce(&m->sse, &sse, 1, MPI_DOUBLE, MPI_SUM, 0, a->comm);
    app_gather_bytes(a, m->member, (size_t)m->nloc * sizeof *m->member, &mem);
    size_t cbytes = (size_t)m->k * NFEAT * sizeof(float), mbytes = (size_t)m->n * sizeof(int);
    size_t total = cbytes + mbytes + sizeof sse;
    char *out = NULL;
    if (a->rank == 0 && !(out = malloc(total)))
        app_die(a, 1, "out of memory");
    if (out) { /* centroids, memberships, the objective */
        memcpy(out, m->cent, cbytes);
        memcpy(out + cbytes, mem, mbytes);
        memcpy(out + cbytes + mbytes, &sse, sizeof sse);
    }
    app_save_output(a, out, total);
    char *ref = app_load_reference(a, total);
    if (a->rank == 0) {
        app_quality(a, "sse", sse);
        app_quality(a, "points", m->n);
        app_quality(a, "k", m->k);
    }
    if (ref) {
        const float *rc = (const float *)ref;
        const int *rm = (const int *)(ref + cbytes), *gm = mem;
        size_t same = 0;
        double cerr = 0;
        for (int i = 0; i < m->n; i++)
            same += gm[i] == rm[i];
        for (int i = 0; i < m->k * NFEAT; i++)
            cerr = fmax(cerr, fabs((double)m->cent[i] - rc[i]));
        double agree = (double)same / m->n, rsse;
        memcpy(&rsse, ref + cbytes + mbytes, sizeof rsse);
        double dsse = rsse > 0 ? fabs(sse - rsse) / rsse : fabs(sse - rsse);
        app_quality(a, "agreement", agree);
        app_quality(a, "sse_rel_diff", dsse);
        app_quality(a, "centroid_err", cerr);
        int lossless = app_bound(a, 1.0) == 0;
        app_verdict(a, lossless ? same == (size_t)m->n && cerr == 0 : agree >= 0.99 && dsse <= 1e-3,
                    "agreement >= 0.99 and sse_rel_diff <= 1e-3 (lossless: identical)");
    }
    free(out);
    free(ref);
    free(mem);
}

int main(int argc, char **argv)
{
    km m;
    memset(&m, 0, sizeof m);
    m.k = 8;
    m.copies = 1;
    app_opt opts[] = {{"k", 'i', &m.k, "clusters"}, {"copies", 'i', &m.copies, "copies of the point set"}};
    app_init(&m.a, &argc, &argv, "kmeans", "Lloyd's k-means of climate grid columns (29 features)", opts, 2, 20);
    if (m.k < 1 || m.copies < 1 || (long long)m.copies * NLAT * NLON > 2147483647LL / NFEAT)
        app_bad_option(&m.a, "--k and --copies must be positive (and the points fit an int count)");
    m.n = NLAT * NLON * m.copies;
    if (m.k > m.n)
        app_bad_option(&m.a, "--k %d: more clusters than the %d points", m.k, m.n);
    app_log(&m.a, "%d points of %d features, k = %d, %d iterations", m.n, NFEAT, m.k, m.a.iters);
    run(&m);
    report(&m);
    free(m.pts);
    free(m.member);
    free(m.cent);
    return app_finish(&m.a);
}
