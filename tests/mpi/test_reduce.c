/*
 * Compressed ZMPI_Reduce (rsg: ring reduce-scatter + compressed gather;
 * cprp2p: binomial tree, compress per hop) at any number of ranks and every
 * root.
 *
 * Every element of every lossy result at the root is checked against plain
 * MPI's result on the same inputs and the documented bound
 * (reduction.h): result scope: the user's bound (REL: rel * (max - min)
 * of all inputs); message scope: N compressions of the user's bound (rsg),
 * N-1 (cprp2p, SUM) or ceil(log2 N) (cprp2p, MIN/MAX). The bytes compressed
 * over all ranks identify the algorithm that ran. Float
 * and double, ABS and REL, SUM / MIN / MAX, counts 0, 1, < ranks, not
 * divisible by ranks, large (2^20 elements of a real field), MPI_IN_PLACE at
 * the root (recvbuf NULL elsewhere), white noise, bounds below the type's
 * resolution, non-finite values. Every compressed call must be counted as
 * compressed (no silent fallback); every fallback (MPI_INT, a user op,
 * MPI_PROD, a contiguous derived type, below min_bytes, ZMPI_ALGO_MPI, no
 * bound) must be byte-identical to MPI. ZMPI_Stats.last_algorithm must name
 * the configured algorithm after every compressed call, plain MPI after
 * every fallback.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "reduction.h"

static mt_state T;
static MPI_Comm comm;
static int rank, nranks, id_rsg, id_cprp2p;

/* One compressed Reduce to root with algorithm algo, checked at the root. */
static void one(const rt_case *k, size_t n, int root, int inplace, rt_data data, size_t chunk, int report,
                int algo)
{
    const char *aname = algo == id_cprp2p ? "cprp2p" : "rsg";
    size_t es = rt_es(k->type), wn = n * (size_t)rt_mult(k->op);
    int is_root = rank == root, rc;
    void *in = mt_xmalloc(n * es), *got = is_root ? mt_xmalloc(n * es) : NULL;
    void *win = mt_xmalloc(wn * rt_wes(k->type)), *wref = mt_xmalloc(wn * rt_wes(k->type));

    rt_fill(in, n, k->type, rank, data, k->op);
    rt_widen(in, n, k->type, k->op, win);
    MPI_Reduce(win, wref, (int)wn, rt_wtype(k->type), k->op, root, comm);
    double R = mt_global_range(in, n, k->type, comm);

    rc = rt_config(comm, k, 0, chunk, ZMPI_COLL_REDUCE, algo);
    MT_CHECK(&T, rc == MPI_SUCCESS, "config rc %d", rc);
    ZMPI_Stats s0 = mt_stats(comm);
    if (inplace && is_root) {
        memcpy(got, in, n * es);
        rc = ZMPI_Reduce(MPI_IN_PLACE, got, (int)n, k->type, k->op, root, comm);
    } else {
        rc = ZMPI_Reduce(in, got, (int)n, k->type, k->op, root, comm);
    }
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "ZMPI_Reduce rc %d", rc);
    char what[200];
    snprintf(what, sizeof what, "%s n=%zu", aname, n);
    rt_check_compressed(&T, &s0, &s1, what);
    mt_check_algo(&T, comm, ZMPI_COLL_REDUCE, algo, nranks > 1, aname);
    mt_check_only(&T, &s0, &s1, ZMPI_COLL_REDUCE, aname);
    /* bytes compressed over all ranks: rsg compresses every element once per
     * ring step (N-1) and the non-root blocks once more for the gather;
     * cprp2p compresses the whole vector once at every non-root rank */
    unsigned long long raw = s1.bytes_raw - s0.bytes_raw, all = 0, expect = 0;
    MPI_Allreduce(&raw, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    if (nranks > 1) {
        size_t rootblock = n / (size_t)nranks + ((size_t)root < n % (size_t)nranks);
        expect = (unsigned long long)((nranks - 1) * n + (algo == id_cprp2p ? 0 : n - rootblock)) * es;
    }
    MT_CHECK(&T, all == expect, "%s n=%zu root=%d: %llu bytes compressed, expected %llu", aname, n, root, all,
             expect);

    /* compressions whose errors add up in one element of the result */
    int hops = algo != id_cprp2p ? nranks - 1 : k->op == MPI_SUM ? nranks - 1 : mt_ceil_log2(nranks);
    double bound = rt_bound(k, R, nranks, hops, algo == id_cprp2p ? 0 : 1);
    rt_result res = {0, 0.0, 0.0, -1};
    if (is_root) {
        snprintf(what, sizeof what, "%s %s %s %s %s n=%zu root=%d inplace=%d data=%d", aname, rt_type_name(k->type),
                 rt_mode_name(k->mode), rt_scope_name(k->scope), rt_op_name(k->op), n, root, inplace, (int)data);
        res = rt_check_result(&T, what, k, got, wref, n, bound);
    }
    if (report) {
        /* ratio over what all ranks sent */
        unsigned long long rs[2] = {s1.bytes_raw - s0.bytes_raw, s1.bytes_sent - s0.bytes_sent}, g[2] = {0, 0};
        MPI_Reduce(rs, g, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, root, comm);
        snprintf(what, sizeof what, "reduce %-6s %-6s %s %-7s %s n=%zu np=%d root=%d", aname, rt_type_name(k->type),
                 rt_mode_name(k->mode), rt_scope_name(k->scope), rt_op_name(k->op), n, nranks, root);
        if (is_root)
            rt_print_report(what, res.ratio, bound, g[0], g[1]);
    }
    free(in);
    free(got);
    free(win);
    free(wref);
}

/* Every (type, mode, scope, op) once; counts 0, 1, < ranks, not divisible
 * by ranks and 1000 cycle through them (every op meets every count), the
 * root moves, in place every other call. Small chunks: several pieces. */
static void lossy_matrix(void)
{
    size_t counts[5] = {0, 1, (size_t)(nranks > 1 ? nranks - 1 : 0), (size_t)(7 * nranks + 3), 1000};
    int algos[2] = {id_rsg, id_cprp2p};
    for (int a = 0; a < 2; a++)
        for (int i = 0; i < RT_MATRIX; i++) {
            rt_case k = rt_matrix_case(i);
            one(&k, counts[i % 5], (i * 3 + a) % nranks, (i / 5 + a) % 2, RT_FIELD, 64, 0, algos[a]);
        }
}

/* 2^20 elements of a real field (each rank its own part of it);
 * ZMPI_TEST_FULL=1 runs all 8 SUM configurations of both algorithms (the
 * report); by default rsg runs float/ABS/result and double/REL/message,
 * cprp2p float/REL/result and double/ABS/message. */
static void large(void)
{
    size_t n = (size_t)1 << 20;
    int full = getenv("ZMPI_TEST_FULL") != NULL;
    for (int i = 0; i < RT_SUM_CASES; i++) {
        rt_case k = rt_sum_case(i);
        if (full || i == 0 || i == 7) /* float/ABS/result, double/REL/message */
            one(&k, n, i % nranks, i % 2, RT_FIELD, 65536, 1, id_rsg);
        if (full || i == 2 || i == 5) /* float/REL/result, double/ABS/message */
            one(&k, n, (i + 1) % nranks, (i + 1) % 2, RT_FIELD, 65536, 1, id_cprp2p);
    }
    rt_case kmin = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_MIN};
    rt_case kmax = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    one(&kmin, n, nranks - 1, 1, RT_FIELD, 65536, 1, id_rsg);
    one(&kmax, n, 0, 0, RT_FIELD, 65536, 1, id_rsg);
    one(&kmin, n, 0, 0, RT_FIELD, 65536, 1, id_cprp2p);
    one(&kmax, n, nranks - 1, 1, RT_FIELD, 65536, 1, id_cprp2p);
}

static void hostile(int algo)
{
    size_t n = 20000;
    rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    one(&a, n, 0, 0, RT_NOISE, 4096, 0, algo);
    one(&b, n, nranks / 2, 1, RT_NOISE, 4096, 0, algo);
    rt_case d = {MPI_FLOAT, ZMPI_EB_ABS, 1e-9, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case e = {MPI_FLOAT, ZMPI_EB_ABS, 1e-9, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    rt_case f = {MPI_DOUBLE, ZMPI_EB_REL, 1e-19, ZMPI_SCOPE_RESULT, MPI_SUM};
    one(&d, n, nranks - 1, 0, RT_FIELD, 4096, 0, algo);
    one(&e, n, 0, 1, RT_FIELD, 4096, 0, algo);
    one(&f, n, nranks / 2, 0, RT_FIELD, 4096, 0, algo);
    MPI_Op ops[3] = {MPI_SUM, MPI_MIN, MPI_MAX};
    for (int oi = 0; oi < 3; oi++) {
        rt_case h = {oi % 2 ? MPI_DOUBLE : MPI_FLOAT, oi % 2 ? ZMPI_EB_REL : ZMPI_EB_ABS, oi % 2 ? 1e-4 : 1e-2,
                     oi ? ZMPI_SCOPE_MESSAGE : ZMPI_SCOPE_RESULT, ops[oi]};
        one(&h, 1000, oi % nranks, oi % 2, RT_SPECIAL, 64, 0, algo);
    }
}

/* A fallback must give exactly MPI's bytes at the root and be counted. */
static void fallback_one(const char *what, const void *in, size_t bytes, int count, MPI_Datatype type,
                         MPI_Op op, int root, int inplace, int expect_type, int expect_small, int expect_config)
{
    void *a = mt_xmalloc(bytes), *b = mt_xmalloc(bytes);
    int rc;
    MPI_Reduce(in, a, count, type, op, root, comm);
    ZMPI_Stats s0 = mt_stats(comm);
    if (inplace && rank == root) {
        memcpy(b, in, bytes);
        rc = ZMPI_Reduce(MPI_IN_PLACE, b, count, type, op, root, comm);
    } else {
        rc = ZMPI_Reduce(in, b, count, type, op, root, comm);
    }
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    if (rank == root)
        MT_CHECK(&T, !memcmp(a, b, bytes), "%s: result differs from MPI", what);
    mt_check_fallback(&T, comm, ZMPI_COLL_REDUCE, &s0, &s1, expect_type, expect_small, expect_config, what);
    free(a);
    free(b);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int n = *len * (*type == MPI_FLOAT ? 1 : 4);
    for (int i = 0; i < n; i++)
        ((float *)inout)[i] += ((float *)in)[i];
}

static void fallbacks(void)
{
    size_t n = 50000;
    int *iv, last = nranks - 1;
    float *fv, *pv;
    rt_fallback_inputs(n, rank, &iv, &fv, &pv);
    rt_case k = {MPI_FLOAT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_config(comm, &k, 0, 65536, ZMPI_COLL_REDUCE, ZMPI_ALGO_DEFAULT);
    fallback_one("MPI_INT", iv, n * sizeof(int), (int)n, MPI_INT, MPI_SUM, 0, 0, 1, 0, 0);
    /* in place only at root 0: MPICH 4.0.2 itself crashes on
     * MPI_Reduce(MPI_IN_PLACE) at a root != 0 (pmodels/mpich#6540, fixed
     * upstream by #6543), and a fallback passes the user's arguments to MPI
     * unchanged */
    fallback_one("MPI_INT in place", iv, n * sizeof(int), (int)n, MPI_INT, MPI_MAX, 0, 1, 1, 0, 0);
    MPI_Op uop;
    MPI_Op_create(user_sum, 1, &uop);
    fallback_one("user op", fv, n * sizeof(float), (int)n, MPI_FLOAT, uop, last, 0, 1, 0, 0);
    fallback_one("MPI_PROD", pv, n * sizeof(float), (int)n, MPI_FLOAT, MPI_PROD, 0, 1, 1, 0, 0);
    /* predefined ops are defined on predefined types only: a derived type
     * comes with a user op */
    MPI_Datatype vec4;
    MPI_Type_contiguous(4, MPI_FLOAT, &vec4);
    MPI_Type_commit(&vec4);
    fallback_one("contiguous type", fv, n * sizeof(float), (int)(n / 4), vec4, uop, 0, 1, 1, 0, 0);
    MPI_Type_free(&vec4);
    MPI_Op_free(&uop);
    rt_config(comm, &k, 65536, 65536, ZMPI_COLL_REDUCE, ZMPI_ALGO_DEFAULT);
    fallback_one("below min_bytes", fv, 1000 * sizeof(float), 1000, MPI_FLOAT, MPI_SUM, last, 0, 0, 1, 0);
    fallback_one("count 0 below min_bytes", fv, 0, 0, MPI_FLOAT, MPI_MIN, 0, 1, 0, 1, 0);
    rt_config(comm, &k, 0, 65536, ZMPI_COLL_REDUCE, ZMPI_ALGO_MPI);
    fallback_one("ZMPI_ALGO_MPI", fv, n * sizeof(float), (int)n, MPI_FLOAT, MPI_SUM, 0, 0, 0, 0, 1);
    rt_case nb = {MPI_FLOAT, ZMPI_EB_NONE, 0, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_config(comm, &nb, 0, 65536, ZMPI_COLL_REDUCE, ZMPI_ALGO_DEFAULT);
    fallback_one("no bound", fv, n * sizeof(float), (int)n, MPI_FLOAT, MPI_MAX, last, 0, 0, 0, 1);
    free(iv);
    free(fv);
    free(pv);
}

static void algorithms(void)
{
    const char *names[4];
    int ids[4];
    int m = ZMPI_Coll_algorithms(ZMPI_COLL_REDUCE, 4, ids, names, NULL);
    MT_CHECK(&T, m == 3 && !strcmp(names[0], "rsg") && !strcmp(names[1], "cprp2p") && !strcmp(names[2], "node"),
             "algorithms: %d", m); /* node: tests/mpi/test_node.c */
    id_rsg = ids[0];
    id_cprp2p = ids[1];
    MT_CHECK(&T, id_cprp2p == ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE, "cprp2p"), "cprp2p id %d",
             id_cprp2p);
    setenv("ZMPI_REDUCE_ALGORITHM", "rsg", 1);
    ZMPI_Config cfg;
    int rc = ZMPI_Config_from_env(&cfg, NULL);
    MT_CHECK(&T, rc == MPI_SUCCESS &&
                     cfg.algorithm[ZMPI_COLL_REDUCE] == ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE, "rsg"),
             "ZMPI_REDUCE_ALGORITHM=rsg -> %d", cfg.algorithm[ZMPI_COLL_REDUCE]);
    unsetenv("ZMPI_REDUCE_ALGORITHM");
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_reduce");
    rank = T.rank;
    nranks = T.size;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    algorithms();
    fallbacks();
    lossy_matrix();
    hostile(id_rsg);
    hostile(id_cprp2p);
    large();
    MPI_Comm_free(&comm);
    return mt_finish(&T);
}
