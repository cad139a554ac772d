/*
 * Compressed ZMPI_Reduce_scatter and ZMPI_Reduce_scatter_block (ring) at
 * any number of ranks.
 *
 * Every element of every lossy result is checked against plain MPI's
 * result on the same inputs and the documented bound (reduction.h):
 * result scope: the user's bound (REL: rel * (max - min) of all inputs);
 * message scope: N-1 compressions of the user's bound. Float and double,
 * ABS and REL, SUM / MIN / MAX; recvcounts all 0, a single 1, a total below
 * the number of ranks, uneven counts with zeros, equal counts (the _block
 * variant), large (2^20 elements of a real field in all); MPI_IN_PLACE;
 * white noise, bounds below the type's resolution, non-finite values. Every
 * compressed call must be counted as compressed; every fallback (MPI_INT, a
 * user op, MPI_PROD, a contiguous derived type, below min_bytes,
 * ZMPI_ALGO_MPI) must be byte-identical to MPI. ZMPI_Stats.last_algorithm
 * names the algorithm that ran: the ring for the default, rhd where N is a
 * power of two (the ring elsewhere), plain MPI for the fallbacks.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "reduction.h"

static mt_state T;
static MPI_Comm comm;
static int rank, nranks;

/* The algorithm the lossy checks run: the default (the ring), then
 * explicitly rhd (recursive halving for powers of two). */
static int algo_under_test = ZMPI_ALGO_DEFAULT;

/* recvcounts patterns */
enum { P_ZERO, P_ONE, P_FEW, P_UNEVEN, P_EQUAL, P_HOLES, P_COUNT };

static void pattern(int p, int *counts)
{
    for (int b = 0; b < nranks; b++) {
        switch (p) {
        case P_ZERO: counts[b] = 0; break;                        /* total 0 */
        case P_ONE: counts[b] = b == nranks / 2; break;           /* total 1 */
        case P_FEW: counts[b] = b % 2; break;                     /* total < ranks */
        case P_UNEVEN: counts[b] = 5 + (b * 3) % 7; break;        /* not divisible */
        case P_EQUAL: counts[b] = 333; break;                     /* _block */
        default: counts[b] = b % 3 == 1 ? 0 : 400 + 37 * b; break; /* zeros between large */
        }
    }
}

/* One compressed Reduce_scatter (block: Reduce_scatter_block, counts must
 * be equal), checked. */
static void one(const rt_case *k, const int *counts, int inplace, int block, rt_data data, size_t chunk,
                int report)
{
    size_t es = rt_es(k->type), total = 0, mine = (size_t)counts[rank];
    int m = rt_mult(k->op), rc;
    int *wcounts = mt_xmalloc((size_t)nranks * sizeof(int));
    for (int b = 0; b < nranks; b++) {
        total += (size_t)counts[b];
        wcounts[b] = counts[b] * m;
    }
    void *in = mt_xmalloc(total * es), *got = mt_xmalloc((inplace ? total : mine) * es);
    void *win = mt_xmalloc(total * (size_t)m * rt_wes(k->type));
    void *wref = mt_xmalloc(mine * (size_t)m * rt_wes(k->type));

    rt_fill(in, total, k->type, rank, data, k->op);
    rt_widen(in, total, k->type, k->op, win);
    MPI_Reduce_scatter(win, wref, wcounts, rt_wtype(k->type), k->op, comm);
    double R = mt_global_range(in, total, k->type, comm);

    rc = rt_config(comm, k, 0, chunk, ZMPI_COLL_REDUCE_SCATTER, algo_under_test);
    MT_CHECK(&T, rc == MPI_SUCCESS, "config rc %d", rc);
    ZMPI_Stats s0 = mt_stats(comm);
    const void *sb = in;
    if (inplace) {
        memcpy(got, in, total * es);
        sb = MPI_IN_PLACE;
    }
    if (block)
        rc = ZMPI_Reduce_scatter_block(sb, got, counts[0], k->type, k->op, comm);
    else
        rc = ZMPI_Reduce_scatter(sb, got, counts, k->type, k->op, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "ZMPI_Reduce_scatter%s rc %d", block ? "_block" : "", rc);
    char what[200];
    snprintf(what, sizeof what, "total %zu", total);
    rt_check_compressed(&T, &s0, &s1, what);
    /* the default is the ring; rhd runs the ring unless N is a power of two */
    int want = algo_under_test == ZMPI_ALGO_DEFAULT ? ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE_SCATTER, "ring")
                                                    : algo_under_test;
    mt_check_algo(&T, comm, ZMPI_COLL_REDUCE_SCATTER, want, nranks > 1, "reduce_scatter");

    double bound = rt_bound(k, R, nranks, nranks - 1, 0);
    snprintf(what, sizeof what, "%s %s %s %s total=%zu mine=%zu inplace=%d block=%d data=%d", rt_type_name(k->type),
             rt_mode_name(k->mode), rt_scope_name(k->scope), rt_op_name(k->op), total, mine, inplace, block,
             (int)data);
    rt_result res = rt_check_result(&T, what, k, got, wref, mine, bound);
    if (report) {
        double ratio = res.ratio, worst = 0;
        MPI_Reduce(&ratio, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
        snprintf(what, sizeof what, "reduce_scatter%s ring %-6s %s %-7s %s total=%zu np=%d", block ? "_block" : "",
                 rt_type_name(k->type), rt_mode_name(k->mode), rt_scope_name(k->scope), rt_op_name(k->op), total,
                 nranks);
        if (rank == 0)
            rt_print_report(what, worst, bound, s1.bytes_raw - s0.bytes_raw, s1.bytes_sent - s0.bytes_sent);
    }
    free(wcounts);
    free(in);
    free(got);
    free(win);
    free(wref);
}

/* Every (type, mode, scope, op) once; the recvcounts patterns cycle through
 * them (every op meets every pattern), in place every other call; equal
 * counts also through Reduce_scatter_block. Small chunks: several pieces. */
static void lossy_matrix(void)
{
    int *counts = mt_xmalloc((size_t)nranks * sizeof(int));
    for (int i = 0; i < RT_MATRIX; i++) {
        rt_case k = rt_matrix_case(i);
        int p = i % P_COUNT;
        pattern(p, counts);
        int block = (p == P_ZERO || p == P_EQUAL) && (i / P_COUNT) % 2 == 0;
        one(&k, counts, (i / 5) % 2, block, RT_FIELD, 64, 0);
    }
    free(counts);
}

/* 2^20 elements in all, from a real field. Uneven counts through
 * Reduce_scatter, equal ones through _block. ZMPI_TEST_FULL=1 runs all 8
 * SUM configurations (the report). */
static void large(void)
{
    int *uneven = mt_xmalloc((size_t)nranks * sizeof(int)), *equal = mt_xmalloc((size_t)nranks * sizeof(int));
    int full = getenv("ZMPI_TEST_FULL") != NULL;
    for (int b = 0; b < nranks; b++) {
        uneven[b] = (1 << 20) / nranks + 1 + b;
        equal[b] = ((1 << 20) + nranks - 1) / nranks;
    }
    for (int i = 0; i < RT_SUM_CASES; i++) {
        if (!full && i != 0 && i != 7)
            continue; /* float/ABS/result and double/REL/message */
        rt_case k = rt_sum_case(i);
        one(&k, i % 4 < 2 ? uneven : equal, i % 2, i % 4 >= 2, RT_FIELD, 65536, 1);
    }
    rt_case kmin = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_MIN};
    rt_case kmax = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    one(&kmin, equal, 1, 1, RT_FIELD, 65536, 1);
    one(&kmax, uneven, 0, 0, RT_FIELD, 65536, 1);
    free(uneven);
    free(equal);
}

static void hostile(void)
{
    int *counts = mt_xmalloc((size_t)nranks * sizeof(int));
    for (int b = 0; b < nranks; b++)
        counts[b] = 20000 / nranks + b;
    rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    one(&a, counts, 0, 0, RT_NOISE, 4096, 0);
    one(&b, counts, 1, 0, RT_NOISE, 4096, 0);
    rt_case d = {MPI_FLOAT, ZMPI_EB_ABS, 1e-9, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case e = {MPI_FLOAT, ZMPI_EB_ABS, 1e-9, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    rt_case f = {MPI_DOUBLE, ZMPI_EB_REL, 1e-19, ZMPI_SCOPE_RESULT, MPI_SUM};
    one(&d, counts, 0, 0, RT_FIELD, 4096, 0);
    one(&e, counts, 1, 0, RT_FIELD, 4096, 0);
    one(&f, counts, 0, 0, RT_FIELD, 4096, 0);
    MPI_Op ops[3] = {MPI_SUM, MPI_MIN, MPI_MAX};
    for (int b2 = 0; b2 < nranks; b2++)
        counts[b2] = 3 + b2; /* rank 0's first block holds the special values */
    counts[0] = 12;
    for (int oi = 0; oi < 3; oi++) {
        rt_case h = {oi % 2 ? MPI_DOUBLE : MPI_FLOAT, oi % 2 ? ZMPI_EB_REL : ZMPI_EB_ABS, oi % 2 ? 1e-4 : 1e-2,
                     oi ? ZMPI_SCOPE_MESSAGE : ZMPI_SCOPE_RESULT, ops[oi]};
        one(&h, counts, oi % 2, 0, RT_SPECIAL, 64, 0);
    }
    free(counts);
}

/* A fallback must give exactly MPI's bytes and be counted. */
static void fallback_one(const char *what, const void *in, int recvcount, MPI_Datatype type, size_t tsize,
                         MPI_Op op, int inplace, int block, int expect_type, int expect_small,
                         int expect_config)
{
    int *counts = mt_xmalloc((size_t)nranks * sizeof(int)), rc;
    for (int b = 0; b < nranks; b++)
        counts[b] = block ? recvcount : recvcount + (b % 3) - 1 + (recvcount == 0);
    size_t total = 0;
    for (int b = 0; b < nranks; b++)
        total += (size_t)counts[b];
    size_t bytes = total * tsize, mine = (size_t)counts[rank] * tsize;
    void *a = mt_xmalloc(bytes), *g = mt_xmalloc(bytes);
    if (block)
        MPI_Reduce_scatter_block(in, a, recvcount, type, op, comm);
    else
        MPI_Reduce_scatter(in, a, counts, type, op, comm);
    ZMPI_Stats s0 = mt_stats(comm);
    const void *sb = in;
    if (inplace) {
        memcpy(g, in, bytes);
        sb = MPI_IN_PLACE;
    }
    if (block)
        rc = ZMPI_Reduce_scatter_block(sb, g, recvcount, type, op, comm);
    else
        rc = ZMPI_Reduce_scatter(sb, g, counts, type, op, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(&T, !memcmp(a, g, mine), "%s: result differs from MPI", what);
    mt_check_fallback(&T, comm, ZMPI_COLL_REDUCE_SCATTER, &s0, &s1, expect_type, expect_small, expect_config,
                      what);
    free(counts);
    free(a);
    free(g);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int n = *len * (*type == MPI_FLOAT ? 1 : 4);
    for (int i = 0; i < n; i++)
        ((float *)inout)[i] += ((float *)in)[i];
}

static void fallbacks(void)
{
    size_t n = 20100 * (size_t)nranks;
    int *iv;
    float *fv, *pv;
    rt_fallback_inputs(n, rank, &iv, &fv, &pv);
    rt_case k = {MPI_FLOAT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_config(comm, &k, 0, 65536, ZMPI_COLL_REDUCE_SCATTER, ZMPI_ALGO_DEFAULT);
    fallback_one("MPI_INT", iv, 20000, MPI_INT, sizeof(int), MPI_SUM, 0, 0, 1, 0, 0);
    fallback_one("MPI_INT block in place", iv, 20000, MPI_INT, sizeof(int), MPI_MAX, 1, 1, 1, 0, 0);
    MPI_Op uop;
    MPI_Op_create(user_sum, 1, &uop);
    fallback_one("user op", fv, 20000, MPI_FLOAT, sizeof(float), uop, 0, 0, 1, 0, 0);
    fallback_one("MPI_PROD block", pv, 20000, MPI_FLOAT, sizeof(float), MPI_PROD, 0, 1, 1, 0, 0);
    /* predefined ops are defined on predefined types only: a derived type
     * comes with a user op. Not in place: MPICH 4.0.2's own
     * MPI_Reduce_scatter(MPI_IN_PLACE, ...) with a derived type fails an
     * internal assertion at 7 ranks (overlapping memcpy). */
    MPI_Datatype vec4;
    MPI_Type_contiguous(4, MPI_FLOAT, &vec4);
    MPI_Type_commit(&vec4);
    fallback_one("contiguous type", fv, 5000, vec4, 4 * sizeof(float), uop, 0, 0, 1, 0, 0);
    MPI_Type_free(&vec4);
    MPI_Op_free(&uop);
    rt_config(comm, &k, 65536, 65536, ZMPI_COLL_REDUCE_SCATTER, ZMPI_ALGO_DEFAULT);
    fallback_one("below min_bytes", fv, 100, MPI_FLOAT, sizeof(float), MPI_SUM, 0, 0, 0, 1, 0);
    fallback_one("below min_bytes block", fv, 0, MPI_FLOAT, sizeof(float), MPI_MIN, 1, 1, 0, 1, 0);
    rt_config(comm, &k, 0, 65536, ZMPI_COLL_REDUCE_SCATTER, ZMPI_ALGO_MPI);
    fallback_one("ZMPI_ALGO_MPI", fv, 20000, MPI_FLOAT, sizeof(float), MPI_SUM, 0, 0, 0, 0, 1);
    fallback_one("ZMPI_ALGO_MPI block", fv, 20000, MPI_FLOAT, sizeof(float), MPI_MAX, 1, 1, 0, 0, 1);
    free(iv);
    free(fv);
    free(pv);
}

static void algorithms(void)
{
    const char *names[4];
    int m = ZMPI_Coll_algorithms(ZMPI_COLL_REDUCE_SCATTER, 4, NULL, names, NULL);
    MT_CHECK(&T, m == 3 && !strcmp(names[0], "ring") && !strcmp(names[1], "rhd") && !strcmp(names[2], "node"),
             "algorithms: %d", m); /* node: tests/mpi/test_node.c */
    setenv("ZMPI_REDUCE_SCATTER_ALGORITHM", "mpi", 1);
    ZMPI_Config cfg;
    int rc = ZMPI_Config_from_env(&cfg, NULL);
    MT_CHECK(&T, rc == MPI_SUCCESS && cfg.algorithm[ZMPI_COLL_REDUCE_SCATTER] == ZMPI_ALGO_MPI,
             "ZMPI_REDUCE_SCATTER_ALGORITHM=mpi -> %d", cfg.algorithm[ZMPI_COLL_REDUCE_SCATTER]);
    setenv("ZMPI_REDUCE_SCATTER_ALGORITHM", "ring", 1);
    rc = ZMPI_Config_from_env(&cfg, NULL);
    MT_CHECK(&T, rc == MPI_SUCCESS && cfg.algorithm[ZMPI_COLL_REDUCE_SCATTER] ==
                                          ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE_SCATTER, "ring"),
             "ZMPI_REDUCE_SCATTER_ALGORITHM=ring -> %d", cfg.algorithm[ZMPI_COLL_REDUCE_SCATTER]);
    unsetenv("ZMPI_REDUCE_SCATTER_ALGORITHM");
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_reduce_scatter");
    rank = T.rank;
    nranks = T.size;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    algorithms();
    fallbacks();
    lossy_matrix();
    hostile();
    large();
    algo_under_test = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE_SCATTER, "rhd");
    if ((nranks & (nranks - 1)) == 0 && nranks > 1) /* rhd where it is not the ring */
        lossy_matrix();
    hostile(); /* elsewhere rhd runs (and reports) the ring */
    MPI_Comm_free(&comm);
    return mt_finish(&T);
}
