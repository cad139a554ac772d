/*
 * zmpi-himeno - the Himeno benchmark: Jacobi iterations of a Poisson
 * equation on a 3-D grid with a 19-point stencil (as Ryutaro Himeno's public
 * benchmark defines it: coefficient arrays a[4], b[3], c[3], bnd, wrk1, the
 * relaxation factor omega = 0.8, single precision), written here.
 *
 * Decomposition: a 3-D Cartesian grid of ranks (MPI_Dims_create); each rank
 * owns a box of the grid plus one halo plane on every side. After every
 * sweep the halos are exchanged one dimension after the other (i, then j,
 * then k; each face spans the halos already filled, so edges and corners
 * arrive too), each face an MPI_Type_vector of floats sent with MPI_Isend /
 * MPI_Irecv and completed with MPI_Waitall:
 *
 *     i-face (fixed i): 1 block of nj*nk floats
 *     j-face (fixed j): ni blocks of nk floats, stride nj*nk
 *     k-face (fixed k): ni*nj blocks of 1 float, stride nk
 *
 * and the residual gosa is summed with MPI_Allreduce.
 *
 * Sizes (grid points, i x j x k): XS 32x32x64, S 64x64x128, M 128x128x256,
 * L 256x256x512, XL 512x512x1024 (--size); --iters sweeps (default 100).
 *
 * Output: gosa after the last sweep, MFLOPS (34 operations per updated
 * point), and with --reference the largest |p - p_plain| over the whole grid.
 * Acceptance: max |p - p_plain| <= iters * eb. Each sweep replaces p by a
 * convex combination of p and its six neighbours (weights 0.2 and 0.8/6;
 * b = 0), so an error already in p never grows, and the halo values a sweep
 * reads carry at most eb more (ABS eb; REL: rel times a face's range, and p
 * stays within [0, 1]); iters * (eb + 2^-23) bounds it, the 2^-23 for
 * rounding. Lossless: bit-identical.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

#define TAG_HALO 31

typedef struct himeno {
    app a;
    const char *size_name;
    int G[3];       /* global grid points */
    int dims[3], coords[3];
    int lo[3], hi[3]; /* owned global indices [lo, hi) */
    int n[3];       /* local extents: owned + 2 halos */
    MPI_Comm cart;
    int nb_lo[3], nb_hi[3];
    MPI_Datatype face[3];
    float *p, *ca[4], *cb[3], *cc[3], *bnd, *wrk1, *wrk2; /* the benchmark's a, b, c */
    size_t npts;    /* local array points */
    float gosa;
    double flops;
} himeno;

static size_t idx(const himeno *h, int i, int j, int k)
{
    return ((size_t)i * (size_t)h->n[1] + (size_t)j) * (size_t)h->n[2] + (size_t)k;
}

static int set_size(himeno *h)
{
    static const struct {
        const char *name;
        int g[3];
    } sizes[] = {{"XS", {32, 32, 64}}, {"S", {64, 64, 128}}, {"M", {128, 128, 256}},
                 {"L", {256, 256, 512}}, {"XL", {512, 512, 1024}}};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        if (!strcmp(h->size_name, sizes[s].name)) {
            memcpy(h->G, sizes[s].g, sizeof h->G);
            return 0;
        }
    return -1;
}

/* The Cartesian grid of ranks, this rank's box, neighbours and face types. */
static void decompose(himeno *h)
{
    app *a = &h->a;
    int periods[3] = {0, 0, 0};
    MPI_Dims_create(a->size, 3, h->dims);
    for (int d = 0; d < 3; d++)
        if (h->dims[d] > h->G[d] - 2)
            app_bad_option(a, "%d ranks: more than the %d interior planes of dimension %d", a->size, h->G[d] - 2, d);
    MPI_Cart_create(a->comm, 3, h->dims, periods, 0, &h->cart);
    app_adopt(a, h->cart);
    MPI_Cart_coords(h->cart, a->rank, 3, h->coords);
    for (int d = 0; d < 3; d++) {
        h->lo[d] = (int)((long long)h->coords[d] * h->G[d] / h->dims[d]);
        h->hi[d] = (int)((long long)(h->coords[d] + 1) * h->G[d] / h->dims[d]);
        h->n[d] = h->hi[d] - h->lo[d] + 2;
        MPI_Cart_shift(h->cart, d, 1, &h->nb_lo[d], &h->nb_hi[d]);
    }
    int ni = h->n[0], nj = h->n[1], nk = h->n[2];
    MPI_Type_vector(1, nj * nk, nj * nk, MPI_FLOAT, &h->face[0]);
    MPI_Type_vector(ni, nk, nj * nk, MPI_FLOAT, &h->face[1]);
    MPI_Type_vector(ni * nj, 1, nk, MPI_FLOAT, &h->face[2]);
    for (int d = 0; d < 3; d++)
        MPI_Type_commit(&h->face[d]);
    h->npts = (size_t)ni * (size_t)nj * (size_t)nk;
}

static float *alloc_fill(himeno *h, float v)
{
    float *x = malloc(h->npts * sizeof *x);
    if (!x)
        app_die(&h->a, 1, "out of memory (%zu points per rank)", h->npts);
    for (size_t i = 0; i < h->npts; i++)
        x[i] = v;
    return x;
}

/* The benchmark's initial state: p = (k / (K-1))^2 in global k. */
static void init_arrays(himeno *h)
{
    for (int m = 0; m < 4; m++)
        h->ca[m] = alloc_fill(h, m == 3 ? 1.0f / 6.0f : 1.0f);
    for (int m = 0; m < 3; m++) {
        h->cb[m] = alloc_fill(h, 0.0f);
        h->cc[m] = alloc_fill(h, 1.0f);
    }
    h->bnd = alloc_fill(h, 1.0f);
    h->wrk1 = alloc_fill(h, 0.0f);
    h->wrk2 = alloc_fill(h, 0.0f);
    h->p = alloc_fill(h, 0.0f);
    float kk = (float)(h->G[2] - 1);
    for (int i = 0; i < h->n[0]; i++)
        for (int j = 0; j < h->n[1]; j++)
            for (int k = 0; k < h->n[2]; k++) {
                float g = (float)(h->lo[2] + k - 1);
                h->p[idx(h, i, j, k)] = (g * g) / (kk * kk);
            }
}

/* Local index range of the points a sweep updates in dimension d. */
static void sweep_range(const himeno *h, int d, int *from, int *to)
{
    int glo = h->lo[d] > 1 ? h->lo[d] : 1, ghi = h->hi[d] < h->G[d] - 1 ? h->hi[d] : h->G[d] - 1;
    *from = glo - h->lo[d] + 1;
    *to = ghi - h->lo[d] + 1;
}

/* One Jacobi sweep over the owned interior; returns the local gosa. */
static float sweep(himeno *h)
{
    const float omega = 0.8f;
    int i0, i1, j0, j1, k0, k1;
    float gosa = 0.0f;
    sweep_range(h, 0, &i0, &i1);
    sweep_range(h, 1, &j0, &j1);
    sweep_range(h, 2, &k0, &k1);
    const size_t sj = (size_t)h->n[2], si = (size_t)h->n[1] * sj;
    const float *p = h->p;
    for (int i = i0; i < i1; i++)
        for (int j = j0; j < j1; j++)
            for (int k = k0; k < k1; k++) {
                size_t x = idx(h, i, j, k);
                float s0 = h->ca[0][x] * p[x + si] + h->ca[1][x] * p[x + sj] + h->ca[2][x] * p[x + 1] +
                           h->cb[0][x] * (p[x + si + sj] - p[x + si - sj] - p[x - si + sj] + p[x - si - sj]) +
                           h->cb[1][x] * (p[x + sj + 1] - p[x - sj + 1] - p[x + sj - 1] + p[x - sj - 1]) +
                           h->cb[2][x] * (p[x + si + 1] - p[x - si + 1] - p[x + si - 1] + p[x - si - 1]) +
                           h->cc[0][x] * p[x - si] + h->cc[1][x] * p[x - sj] + h->cc[2][x] * p[x - 1] + h->wrk1[x];
                float ss = (s0 * h->ca[3][x] - p[x]) * h->bnd[x];
                gosa += ss * ss;
                h->wrk2[x] = p[x] + omega * ss;
            }
    for (int i = i0; i < i1; i++)
        for (int j = j0; j < j1; j++)
            memcpy(&h->p[idx(h, i, j, k0)], &h->wrk2[idx(h, i, j, k0)], (size_t)(k1 - k0) * sizeof(float));
    h->flops += 34.0 * (double)(i1 - i0) * (double)(j1 - j0) * (double)(k1 - k0);
    return gosa;
}

/* The halos of dimension d: the first / last owned plane out, the halo
 * planes in. */
static void exchange(himeno *h, int d)
{
    app *a = &h->a;
    MPI_Request r[4];
    size_t stride[3] = {(size_t)h->n[1] * (size_t)h->n[2], (size_t)h->n[2], 1};
    size_t last = (size_t)(h->n[d] - 2) * stride[d], halo_hi = (size_t)(h->n[d] - 1) * stride[d];
    app_irecv(a, h->p, 1, h->face[d], h->nb_lo[d], TAG_HALO + d, h->cart, &r[0]);
    app_irecv(a, h->p + halo_hi, 1, h->face[d], h->nb_hi[d], TAG_HALO + 3 + d, h->cart, &r[1]);
    app_isend(a, h->p + stride[d], 1, h->face[d], h->nb_lo[d], TAG_HALO + 3 + d, h->cart, &r[2]);
    app_isend(a, h->p + last, 1, h->face[d], h->nb_hi[d], TAG_HALO + d, h->cart, &r[3]);
    app_waitall(a, 4, r, MPI_STATUSES_IGNORE);
}

static void run(himeno *h)
{
    app *a = &h->a;
    for (int d = 0; d < 3; d++) /* the initial halos */
        exchange(h, d);
    app_start(a);
    for (int it = 0; it < a->iters; it++) {
        float local = sweep(h), gosa = 0;
        for (int d = 0; d < 3; d++)
            exchange(h, d);
        app_allreduce(a, &local, &gosa, 1, MPI_FLOAT, MPI_SUM, h->cart);
        h->gosa = gosa;
        if (it % 50 == 49)
            app_log(a, "sweep %d: gosa %.6e", it + 1, (double)gosa);
    }
    app_stop(a);
}

/* The owned points of this rank, packed i-j-k; rank 0 assembles the grid. */
static float *gather_grid(himeno *h)
{
    app *a = &h->a;
    size_t own = 1, G = (size_t)h->G[0] * (size_t)h->G[1] * (size_t)h->G[2];
    for (int d = 0; d < 3; d++)
        own *= (size_t)(h->hi[d] - h->lo[d]);
    float *mine = malloc(own * sizeof *mine), *grid = NULL;
    void *all = NULL;
    if (!mine)
        app_die(a, 1, "out of memory");
    size_t q = 0;
    for (int i = 1; i < h->n[0] - 1; i++)
        for (int j = 1; j < h->n[1] - 1; j++)
            for (int k = 1; k < h->n[2] - 1; k++)
                mine[q++] = h->p[idx(h, i, j, k)];
    app_gather_bytes(a, mine, own * sizeof *mine, &all);
    free(mine);
    if (a->rank != 0)
        return NULL;
    grid = malloc(G * sizeof *grid);
    if (!grid)
        app_die(a, 1, "out of memory");
    const float *src = all;
    for (int r = 0; r < a->size; r++) {
        int c[3], lo[3], hi[3];
        MPI_Cart_coords(h->cart, r, 3, c);
        for (int d = 0; d < 3; d++) {
            lo[d] = (int)((long long)c[d] * h->G[d] / h->dims[d]);
            hi[d] = (int)((long long)(c[d] + 1) * h->G[d] / h->dims[d]);
        }
        for (int i = lo[0]; i < hi[0]; i++)
            for (int j = lo[1]; j < hi[1]; j++, src += hi[2] - lo[2])
                memcpy(&grid[((size_t)i * (size_t)h->G[1] + (size_t)j) * (size_t)h->G[2] + (size_t)lo[2]], src,
                       (size_t)(hi[2] - lo[2]) * sizeof *src);
    }
    free(all);
    return grid;
}

static void report(himeno *h)
{
    app *a = &h->a;
    double flops = 0;
    MPI_Reduce(&h->flops, &flops, 1, MPI_DOUBLE, MPI_SUM, 0, a->comm);
    size_t G = (size_t)h->G[0] * (size_t)h->G[1] * (size_t)h->G[2];
    float *grid = gather_grid(h);
    app_save_output(a, grid, G * sizeof *grid);
    float *ref = app_load_reference(a, G * sizeof *grid);
    if (a->rank != 0)
        return;
    app_quality(a, "gosa", h->gosa);
    app_quality(a, "mflops", a->t_run > 0 ? flops / a->t_run / 1e6 : 0);
    if (ref) {
        double maxd = 0, eb = app_bound(a, 1.0);
        for (size_t i = 0; i < G; i++) {
            double d = fabs((double)grid[i] - (double)ref[i]);
            maxd = d > maxd || isnan(d) ? (isnan(d) ? INFINITY : d) : maxd;
        }
        double bound = eb < 0 ? -1 : a->iters * (eb + (eb > 0 ? ldexp(1.0, -23) : 0));
        app_quality(a, "max_dp", maxd);
        app_quality(a, "bound", bound);
        app_verdict(a, bound < 0 ? -1 : maxd <= bound,
                    "max |p - p_plain| <= iters * (eb + 2^-23) (lossless: bit-identical)");
    }
    free(grid);
    free(ref);
}

int main(int argc, char **argv)
{
    himeno h;
    memset(&h, 0, sizeof h);
    h.size_name = "S";
    app_opt opts[] = {{"size", 's', &h.size_name, "grid: XS, S, M, L or XL"}};
    app_init(&h.a, &argc, &argv, "himeno", "Jacobi Poisson solver, 19-point stencil, 3-D halos", opts, 1, 100);
    if (set_size(&h))
        app_bad_option(&h.a, "--size %s: one of XS, S, M, L, XL", h.size_name);
    decompose(&h);
    app_log(&h.a, "%dx%dx%d points on %dx%dx%d ranks, %d sweeps", h.G[0], h.G[1], h.G[2], h.dims[0], h.dims[1],
            h.dims[2], h.a.iters);
    init_arrays(&h);
    run(&h);
    report(&h);
    for (int d = 0; d < 3; d++)
        MPI_Type_free(&h.face[d]);
    free(h.p);
    for (int m = 0; m < 4; m++)
        free(h.ca[m]);
    for (int m = 0; m < 3; m++) {
        free(h.cb[m]);
        free(h.cc[m]);
    }
    free(h.bnd);
    free(h.wrk1);
    free(h.wrk2);
    return app_finish(&h.a);
}
