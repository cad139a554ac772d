/*
 * SUM reductions on grid codes (coll/common/gsum.h): under ZMPI_CODEC=auto,
 * Allreduce (ring, rhd), Reduce_scatter (ring, rhd) and Reduce (rsg) add
 * packed integer codes instead of decompressing, adding and recompressing.
 *
 * Checked at every rank count: every element of every result within the
 * user's bound in result scope (REL: rel * (max - min) of all inputs) plus
 * the rounding allowance of reduction.h, for float and double, ABS and REL,
 * counts 1, < ranks, not divisible by ranks, 5000, MPI_IN_PLACE; Allreduce
 * results bit-identical on all ranks; the grid path taken (ZMPI_Stats
 * .grid_sums counts it) exactly where it must be, and the classic path
 * (still within its bound, non-finite values carried exactly) where it must
 * not: NaN/Inf in an input, codes that could overflow (a bound far below
 * the values' magnitude), message scope, MIN/MAX, an explicitly configured
 * codec.
 */
#include <stdlib.h>

#include "reduction.h"

static mt_state T;
static MPI_Comm comm;
static int rank, nranks;

enum { ALLREDUCE_RING, ALLREDUCE_RHD, RS_RING, RS_RHD, REDUCE_RSG, NCOLL };
static const char *const coll_name[NCOLL] = {"allreduce-ring", "allreduce-rhd", "reduce_scatter-ring",
                                             "reduce_scatter-rhd", "reduce-rsg"};

static int configure(const rt_case *k, int coll, zmpi_codec codec)
{
    static const ZMPI_Coll colls[NCOLL] = {ZMPI_COLL_ALLREDUCE, ZMPI_COLL_ALLREDUCE, ZMPI_COLL_REDUCE_SCATTER,
                                           ZMPI_COLL_REDUCE_SCATTER, ZMPI_COLL_REDUCE};
    static const char *const algo[NCOLL] = {"ring", "rhd", "ring", "rhd", "rsg"};
    /* small pieces: several per block */
    return rt_config_codec(comm, k, 0, 256, colls[coll], ZMPI_Coll_algorithm_from_name(colls[coll], algo[coll]),
                           codec);
}

/* One reduction of m elements per block (count = m * N for Reduce_scatter,
 * else m), checked; want_grid: whether the grid path must run. */
static void one(const rt_case *k, int coll, size_t m, int inplace, rt_data data, zmpi_codec codec, int want_grid)
{
    int rs = coll == RS_RING || coll == RS_RHD, root = nranks - 1;
    size_t n = rs ? m * (size_t)nranks : m, es = rt_es(k->type), wn = n * (size_t)rt_mult(k->op);
    size_t mine = rs ? m : n, wes = rt_wes(k->type);
    void *in = mt_xmalloc(n * es), *got = mt_xmalloc(n * es);
    void *win = mt_xmalloc(wn * wes), *wref = mt_xmalloc(wn * wes);
    char what[240];

    rt_fill(in, n, k->type, rank, data, k->op);
    rt_widen(in, n, k->type, k->op, win);
    MPI_Allreduce(win, wref, (int)wn, rt_wtype(k->type), k->op, comm);
    double R = mt_global_range(in, n, k->type, comm);
    int rc = configure(k, coll, codec);
    MT_CHECK(&T, rc == MPI_SUCCESS, "config rc %d", rc);
    ZMPI_Stats s0 = mt_stats(comm);
    const void *send = in;
    if (inplace) {
        memcpy(got, in, n * es);
        send = MPI_IN_PLACE;
    }
    if (coll == ALLREDUCE_RING || coll == ALLREDUCE_RHD) {
        rc = ZMPI_Allreduce(send, got, (int)n, k->type, k->op, comm);
    } else if (rs) {
        int *counts = mt_xmalloc((size_t)nranks * sizeof *counts);
        for (int b = 0; b < nranks; b++)
            counts[b] = (int)m;
        rc = ZMPI_Reduce_scatter(send, got, counts, k->type, k->op, comm);
        free(counts);
    } else {
        if (inplace && rank != root)
            send = in; /* MPI_IN_PLACE is the root's only */
        rc = ZMPI_Reduce(send, got, (int)n, k->type, k->op, root, comm);
    }
    ZMPI_Stats s1 = mt_stats(comm);
    snprintf(what, sizeof what, "%s %s %s %s %s m=%zu inplace=%d data=%d codec=%s", coll_name[coll],
             rt_type_name(k->type), rt_mode_name(k->mode), rt_scope_name(k->scope), rt_op_name(k->op), m, inplace,
             (int)data, zmpi_codec_name(codec));
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    int grid = (int)(s1.grid_sums - s0.grid_sums);
    int expect = want_grid && nranks > 1 && n > 0;
    MT_CHECK(&T, grid == expect, "%s: %d calls on grid codes, want %d", what, grid, expect);
    /* a message-scope result has the classic path's bound (N compressions) */
    double bound = rt_bound(k, R, nranks, nranks - 1, 1);
    const unsigned char *ref = (const unsigned char *)wref + (rs ? (size_t)rank * m * (size_t)rt_mult(k->op) * wes : 0);
    if (coll != REDUCE_RSG || rank == root) {
        rt_result res = rt_check_result(&T, what, k, got, ref, mine, bound);
        if (m >= ((size_t)1 << 18) && rank == 0)
            rt_print_report(what, res.ratio, bound, s1.bytes_raw - s0.bytes_raw, s1.bytes_sent - s0.bytes_sent);
    }
    if (coll == ALLREDUCE_RING || coll == ALLREDUCE_RHD)
        MT_CHECK(&T, rt_same_everywhere(rt_hash(got, n * es), comm), "%s: ranks got different results", what);
    free(in);
    free(got);
    free(win);
    free(wref);
}

/* The SUM cases in result scope: float/double x ABS/REL, on the grid. */
static void grid_cases(void)
{
    size_t ms[4] = {1, (size_t)(nranks > 1 ? nranks - 1 : 1), (size_t)(7 * nranks + 3), 5000};
    int i = 0;
    for (int coll = 0; coll < NCOLL; coll++) {
        for (int t = 0; t < 2; t++) {
            for (int md = 0; md < 2; md++, i++) {
                zmpi_eb_mode mode = md ? ZMPI_EB_REL : ZMPI_EB_ABS;
                rt_case k = {t ? MPI_DOUBLE : MPI_FLOAT, mode, rt_eb_for(mode), ZMPI_SCOPE_RESULT, MPI_SUM};
                one(&k, coll, ms[i % 4], i % 3 == 0, RT_FIELD, ZMPI_CODEC_AUTO, 1);
            }
        }
    }
    /* white noise: no structure to predict, every code difference large */
    rt_case kn = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    one(&kn, ALLREDUCE_RHD, 20000, 0, RT_NOISE, ZMPI_CODEC_AUTO, 1);
    one(&kn, RS_RING, 3000, 1, RT_NOISE, ZMPI_CODEC_AUTO, 1);
}

/* Reduce_scatter with uneven recvcounts, empty blocks among them (rank b
 * gets 0 elements when b % 3 == 1): the table's empty ranges send and
 * receive nothing. */
static void uneven_blocks(void)
{
    rt_case k = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    int *counts = mt_xmalloc((size_t)nranks * sizeof *counts), off = 0, mine_off = 0;
    for (int b = 0; b < nranks; b++) {
        counts[b] = b % 3 == 1 ? 0 : 300 + 77 * b;
        if (b < rank)
            mine_off += counts[b];
        off += counts[b];
    }
    size_t n = (size_t)off, mine = (size_t)counts[rank], wn = 2 * n;
    float *in = mt_xmalloc(n * sizeof *in), *got = mt_xmalloc((mine + 1) * sizeof *got);
    void *win = mt_xmalloc(wn * rt_wes(k.type)), *wref = mt_xmalloc(wn * rt_wes(k.type));
    rt_fill(in, n, k.type, rank, RT_FIELD, k.op);
    rt_widen(in, n, k.type, k.op, win);
    MPI_Allreduce(win, wref, (int)wn, rt_wtype(k.type), k.op, comm);
    double R = mt_global_range(in, n, k.type, comm);
    for (int coll = RS_RING; coll <= RS_RHD; coll++) {
        MT_CHECK(&T, configure(&k, coll, ZMPI_CODEC_AUTO) == MPI_SUCCESS, "config");
        ZMPI_Stats s0 = mt_stats(comm);
        int rc = ZMPI_Reduce_scatter(in, got, counts, k.type, k.op, comm);
        ZMPI_Stats s1 = mt_stats(comm);
        MT_CHECK(&T, rc == MPI_SUCCESS, "%s uneven: rc %d", coll_name[coll], rc);
        MT_CHECK(&T, (int)(s1.grid_sums - s0.grid_sums) == (nranks > 1), "%s uneven: grid path not taken",
                 coll_name[coll]);
        rt_check_result(&T, coll == RS_RING ? "reduce_scatter-ring uneven" : "reduce_scatter-rhd uneven", &k, got,
                        (const unsigned char *)wref + (size_t)mine_off * 2 * rt_wes(k.type), mine,
                        rt_bound(&k, R, nranks, nranks - 1, 1));
    }
    free(counts);
    free(in);
    free(got);
    free(win);
    free(wref);
}

/* Where the grid must not run; the classic path's guarantees hold. */
static void classic_cases(void)
{
    rt_case nan = {MPI_FLOAT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case tiny = {MPI_FLOAT, ZMPI_EB_ABS, 1e-9, ZMPI_SCOPE_RESULT, MPI_SUM}; /* codes beyond 2^30 */
    rt_case msg = {MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_MESSAGE, MPI_SUM};
    rt_case mx = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, MPI_MAX};
    rt_case ok = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    for (int coll = 0; coll < NCOLL; coll++) {
        one(&nan, coll, 1000, 0, RT_SPECIAL, ZMPI_CODEC_AUTO, 0);
        one(&tiny, coll, 3000, coll % 2, RT_FIELD, ZMPI_CODEC_AUTO, 0);
    }
    one(&msg, ALLREDUCE_RHD, 3000, 0, RT_FIELD, ZMPI_CODEC_AUTO, 0);
    one(&mx, ALLREDUCE_RING, 3000, 1, RT_FIELD, ZMPI_CODEC_AUTO, 0);
    one(&ok, ALLREDUCE_RHD, 3000, 0, RT_FIELD, ZMPI_CODEC_FZL, 0);
    one(&ok, RS_RHD, 3000, 0, RT_FIELD, ZMPI_CODEC_FZR, 0);
}

/* ---- adversarial inputs on both grids ----
 *
 * The steps below are gsum.h's, computed with the library's expressions:
 * eb (ABS: the bound; REL: rel * (max - min), here rel * 8: every rank's
 * elements 0 and 1 are -4 and 4), e = eb / N (eb / (2N) where the result is
 * spread from 8 ranks), h = 2e (1 - 2^-17); the coarse grid of the spread
 * h2 = 2 e2 (1 - 2^-17), e2 = eb / 2.
 *
 * Every other element is a value placed on rank r from an integer code
 * k_r (the same on every rank but rank 0, which adds t, so the sum of the
 * codes Q = N c + t takes every residue t modulo N: a sum of codes at, just
 * below and just above every rounding threshold of the coarse grid, whose
 * thresholds lie at Q = N Q2 + N/2) and one of ADV_KINDS positions: just
 * below the fine grid's rounding threshold (k + 1/2) h, just above
 * (k - 1/2) h, at the threshold, at the step k h, just below the step, and
 * a hair (h 2^-20) below the threshold. With every rank's quantisation
 * error of one sign and the coarse rounding adding its own of the same
 * sign, the error of an element reaches the whole bound: the largest error
 * must be within [0.9 eb, eb] (the check is tight and it holds). */
enum { ADV_KINDS = 6, ADV_CODES = 4, ADV_A = 4 };

/* The largest value of the type below t, the smallest above, the nearest. */
static double adv_below(double t, MPI_Datatype type)
{
    if (type == MPI_DOUBLE)
        return nextafter(t, -INFINITY);
    float f = (float)t;
    return (double)f < t ? f : nextafterf(f, -INFINITY);
}

static double adv_above(double t, MPI_Datatype type)
{
    if (type == MPI_DOUBLE)
        return nextafter(t, INFINITY);
    float f = (float)t;
    return (double)f > t ? f : nextafterf(f, INFINITY);
}

static double adv_nearest(double t, MPI_Datatype type)
{
    return type == MPI_DOUBLE ? t : (double)(float)t;
}

/* Element j of rank r's input (fine step h). */
static double adv_value(size_t j, int r, double h, MPI_Datatype type)
{
    if (j < 2)
        return j ? ADV_A : -ADV_A;
    size_t idx = j - 2, kind = idx % ADV_KINDS, t = idx / ADV_KINDS % (size_t)nranks;
    size_t ci = idx / ((size_t)ADV_KINDS * (size_t)nranks) % ADV_CODES;
    /* codes of values within [-3, 3] on every rank: |k| h <= 3 */
    long cmax = (long)(3.0 / h) - nranks, c[ADV_CODES] = {0, 1 - cmax, cmax * 37 / 100, cmax};
    double k = (double)(c[ci] + (r == 0 ? (long)t : 0));
    switch (kind) {
    case 0:
        return adv_below((k + 0.5) * h, type);
    case 1:
        return adv_above((k - 0.5) * h, type);
    case 2:
        return adv_nearest((k + 0.5) * h, type);
    case 3:
        return adv_nearest(k * h, type);
    case 4:
        return adv_below(k * h, type);
    default:
        return adv_below((k + 0.5) * h - h * 0x1p-20, type);
    }
}

/* The exact sum of the N ranks' element j as hi + lo (error-free sums of
 * doubles; the tail of a tail is far below any bound here). */
static long double adv_sum(size_t j, double h, MPI_Datatype type)
{
    double hi = 0, lo = 0;
    for (int r = 0; r < nranks; r++) {
        double x = adv_value(j, r, h, type), s = hi + x, bb = s - hi;
        lo += (hi - (s - bb)) + (x - bb);
        hi = s;
    }
    return (long double)hi + (long double)lo;
}

/* 1 if y is a value of the grid of step `step` as zmpi_grid_dequantize
 * writes it: (type)(q * step) for an integer q. */
static int on_grid(double y, double step, MPI_Datatype type)
{
    double v = nearbyint(y / step) * step;
    return type == MPI_DOUBLE ? v == y : (double)(float)v == y;
}

static void adversarial_one(const rt_case *k, int coll)
{
    static const ZMPI_Coll colls[NCOLL] = {ZMPI_COLL_ALLREDUCE, ZMPI_COLL_ALLREDUCE, ZMPI_COLL_REDUCE_SCATTER,
                                           ZMPI_COLL_REDUCE_SCATTER, ZMPI_COLL_REDUCE};
    static const char *const algo[NCOLL] = {"ring", "rhd", "ring", "rhd", "rsg"};
    int rs = coll == RS_RING || coll == RS_RHD, root = nranks - 1, n8 = nranks >= 8;
    int spread = n8 && !rs; /* Reduce_scatter keeps its blocks: no spreading */
    size_t m = 2 + (size_t)ADV_KINDS * (size_t)nranks * ADV_CODES, n = rs ? m * (size_t)nranks : m;
    size_t es = rt_es(k->type), first = rs ? (size_t)rank * m : 0;
    double eb = k->mode == ZMPI_EB_ABS ? k->eb : k->eb * (2.0 * ADV_A);
    double e = spread ? eb / (2.0 * nranks) : eb / nranks, h = 2.0 * e * (1.0 - 0x1p-17);
    double h2 = 2.0 * (eb / 2) * (1.0 - 0x1p-17), hres = spread ? h2 : h;
    void *in = mt_xmalloc(n * es), *got = mt_xmalloc(n * es);
    char what[200];

    snprintf(what, sizeof what, "adversarial %s %s %s eb %g np %d", coll_name[coll], rt_type_name(k->type),
             rt_mode_name(k->mode), eb, nranks);
    for (size_t j = 0; j < n; j++)
        rt_set(in, j, k->type, adv_value(j, rank, h, k->type));
    memset(got, 0, n * es);
    int algo_id = ZMPI_Coll_algorithm_from_name(colls[coll], algo[coll]);
    MT_CHECK(&T, configure(k, coll, ZMPI_CODEC_AUTO) == MPI_SUCCESS, "%s: config", what);
    ZMPI_Stats s0 = mt_stats(comm);
    int rc;
    if (coll == ALLREDUCE_RING || coll == ALLREDUCE_RHD) {
        rc = ZMPI_Allreduce(in, got, (int)n, k->type, MPI_SUM, comm);
    } else if (rs) {
        int *counts = mt_xmalloc((size_t)nranks * sizeof *counts);
        for (int b = 0; b < nranks; b++)
            counts[b] = (int)m;
        rc = ZMPI_Reduce_scatter(in, got, counts, k->type, MPI_SUM, comm);
        free(counts);
    } else {
        rc = ZMPI_Reduce(in, got, (int)n, k->type, MPI_SUM, root, comm);
    }
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(&T, (int)(s1.grid_sums - s0.grid_sums) == (nranks > 1), "%s: %d calls on grid codes, want %d", what,
             (int)(s1.grid_sums - s0.grid_sums), nranks > 1);
    if (nranks > 1)
        mt_check_ran(&T, comm, colls[coll], mt_algo_ran(colls[coll], algo_id, nranks), what);
    if (coll != REDUCE_RSG || rank == root) {
        size_t mine = rs ? m : n, bad = 0, off = 0;
        long double worst = 0;
        long bad_at = -1, off_at = -1;
        for (size_t i = 0; i < mine; i++) {
            double y = mt_get(got, i, k->type);
            long double err = fabsl((long double)y - adv_sum(first + i, h, k->type));
            /* float: the one rounding of the result to the datatype (gsum.h) */
            double allow = k->type == MPI_FLOAT ? 0.5 * ((double)nextafterf((float)fabs(y), INFINITY) - fabs(y)) : 0;
            if (!(err <= (long double)eb + allow) && bad++ == 0)
                bad_at = (long)i;
            if (nranks > 1 && !on_grid(y, hres, k->type) && off++ == 0)
                off_at = (long)i;
            if (i >= 2 && err > worst)
                worst = err;
        }
        MT_CHECK(&T, bad == 0, "%s: %zu elements beyond the bound, the first %ld: got %.17g, exact %.17Lg", what,
                 bad, bad_at, bad_at < 0 ? 0.0 : mt_get(got, (size_t)bad_at, k->type),
                 bad_at < 0 ? 0.0L : adv_sum(first + (size_t)bad_at, h, k->type));
        MT_CHECK(&T, off == 0, "%s: %zu results off the %s grid (step %.17g), the first %ld: %.17g", what, off,
                 spread ? "coarse" : "fine", hres, off_at, off_at < 0 ? 0.0 : mt_get(got, (size_t)off_at, k->type));
        if (nranks > 1)
            MT_CHECK(&T, worst >= 0.9L * eb, "%s: largest error %.6Lg of the bound: the inputs miss the thresholds",
                     what, worst / eb);
        if (rank == (coll == REDUCE_RSG ? root : 0) && k->type == MPI_DOUBLE && k->mode == ZMPI_EB_ABS)
            printf("REPORT %s: max err / bound = %.9Lf\n", what, worst / eb);
    }
    if (coll == ALLREDUCE_RING || coll == ALLREDUCE_RHD)
        MT_CHECK(&T, rt_same_everywhere(rt_hash(got, n * es), comm), "%s: ranks got different results", what);
    free(in);
    free(got);
}

/* Every grid-path collective, float and double, ABS and REL. */
static void adversarial(void)
{
    for (int coll = 0; coll < NCOLL; coll++) {
        for (int t = 0; t < 2; t++) {
            rt_case ka = {t ? MPI_DOUBLE : MPI_FLOAT, ZMPI_EB_ABS, t ? 3e-4 : 1e-2, ZMPI_SCOPE_RESULT, MPI_SUM};
            rt_case kr = {t ? MPI_DOUBLE : MPI_FLOAT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, MPI_SUM};
            adversarial_one(&ka, coll);
            adversarial_one(&kr, coll);
        }
    }
}

/* A large real field: the figures of the grid path (rank 0 prints max
 * error / bound and the ratio of the packed codes). */
static void large(void)
{
    rt_case k = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    one(&k, ALLREDUCE_RHD, (size_t)1 << 18, 1, RT_FIELD, ZMPI_CODEC_AUTO, 1);
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_gsum");
    rank = T.rank;
    nranks = T.size;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    grid_cases();
    uneven_blocks();
    classic_cases();
    adversarial();
    large();
    MPI_Comm_free(&comm);
    return mt_finish(&T);
}
