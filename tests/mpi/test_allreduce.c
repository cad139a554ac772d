/*
 * Compressed ZMPI_Allreduce (algorithms ring, rhd and cprp2p) at any
 * number of ranks.
 *
 * Every element of every lossy result is checked against plain MPI's
 * result on the same inputs and the documented bound (reduction.h):
 * result scope: the user's bound (REL: rel * (max - min) of all inputs);
 * message scope: N compressions (ring, rhd) or 2N-2 (cprp2p) of the user's
 * bound.
 * Float and double, ABS and REL, SUM / MIN / MAX, counts 0, 1, < ranks, not
 * divisible by ranks, large (2^20 elements of a real field), MPI_IN_PLACE,
 * white noise, bounds below the type's resolution, non-finite values. The
 * ring and rhd must give bit-identical results on all ranks. Every compressed call
 * must be counted as compressed (no silent fallback); every fallback
 * (MPI_INT, a user op, MPI_PROD, a contiguous derived type, below
 * min_bytes, ZMPI_ALGO_MPI, no bound) must be byte-identical to MPI.
 * ZMPI_Stats.last_algorithm must name the configured algorithm after every
 * compressed call, plain MPI after every fallback.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <stdlib.h>

#include "reduction.h"

static mt_state T;
static MPI_Comm comm;
static int rank, nranks, id_ring, id_cprp2p, id_rhd;

/* One compressed Allreduce, checked. report: print max error / bound and
 * the compression ratio (rank 0). Returns 1 if all ranks got identical results. */
static int one(const rt_case *k, size_t n, int inplace, rt_data data, int algo, size_t chunk, int report)
{
    size_t es = rt_es(k->type), wn = n * (size_t)rt_mult(k->op);
    void *in = mt_xmalloc(n * es), *got = mt_xmalloc(n * es);
    void *win = mt_xmalloc(wn * rt_wes(k->type)), *wref = mt_xmalloc(wn * rt_wes(k->type));
    const char *aname = algo == id_cprp2p ? "cprp2p" : algo == id_rhd ? "rhd" : "ring";
    char what[200];
    int rc, same;

    rt_fill(in, n, k->type, rank, data, k->op);
    rt_widen(in, n, k->type, k->op, win);
    MPI_Allreduce(win, wref, (int)wn, rt_wtype(k->type), k->op, comm);
    double R = mt_global_range(in, n, k->type, comm);

    rc = rt_config(comm, k, 0, chunk, ZMPI_COLL_ALLREDUCE, algo);
    MT_CHECK(&T, rc == MPI_SUCCESS, "config rc %d", rc);
    ZMPI_Stats s0 = mt_stats(comm);
    if (inplace) {
        memcpy(got, in, n * es);
        rc = ZMPI_Allreduce(MPI_IN_PLACE, got, (int)n, k->type, k->op, comm);
    } else {
        rc = ZMPI_Allreduce(in, got, (int)n, k->type, k->op, comm);
    }
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "ZMPI_Allreduce rc %d", rc);
    snprintf(what, sizeof what, "%s n=%zu", aname, n);
    rt_check_compressed(&T, &s0, &s1, what);
    mt_check_algo(&T, comm, ZMPI_COLL_ALLREDUCE, algo, nranks > 1, aname);
    mt_check_only(&T, &s0, &s1, ZMPI_COLL_ALLREDUCE, aname);

    int extra = algo == id_cprp2p ? nranks - 1 : 1;
    double bound = rt_bound(k, R, nranks, nranks - 1, extra); /* rhd: a tree of N-1 merges, partials no wider */
    snprintf(what, sizeof what, "%s %s %s %s %s n=%zu inplace=%d data=%d", aname, rt_type_name(k->type),
             rt_mode_name(k->mode), rt_scope_name(k->scope), rt_op_name(k->op), n, inplace, (int)data);
    rt_result res = rt_check_result(&T, what, k, got, wref, n, bound);
    same = rt_same_everywhere(rt_hash(got, n * es), comm);
    if (algo != id_cprp2p)
        MT_CHECK(&T, same, "%s: ranks got different results (n=%zu)", aname, n);
    if (report) {
        double ratio = res.ratio, worst = 0;
        MPI_Reduce(&ratio, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
        snprintf(what, sizeof what, "allreduce %-6s %-6s %s %-7s %s n=%zu np=%d", aname, rt_type_name(k->type),
                 rt_mode_name(k->mode), rt_scope_name(k->scope), rt_op_name(k->op), n, nranks);
        if (rank == 0)
            rt_print_report(what, worst, bound, s1.bytes_raw - s0.bytes_raw, s1.bytes_sent - s0.bytes_sent);
    }
    free(in);
    free(got);
    free(win);
    free(wref);
    return same;
}

/* Every (type, mode, scope, op) once; counts 0, 1, < ranks, not divisible
 * by ranks and 1000 cycle through them (every op meets every count), in
 * place every other call. Small chunks: several pieces per block. */
static void lossy_matrix(void)
{
    size_t counts[5] = {0, 1, (size_t)(nranks > 1 ? nranks - 1 : 0), (size_t)(7 * nranks + 3), 1000};
    for (int i = 0; i < RT_MATRIX; i++) {
        rt_case k = rt_matrix_case(i);
        one(&k, counts[i % 5], (i / 5) % 2, RT_FIELD, id_ring, 64, 0);
        one(&k, counts[(i + 2) % 5], (i / 5 + 1) % 2, RT_FIELD, id_rhd, 64, 0);
    }
}

/* 2^20 elements of a real field (each rank its own part of it). The full
 * set of 8 SUM configurations runs with ZMPI_TEST_FULL=1 (the report of
 * max error / bound and ratio); the default set keeps the test short on
 * an oversubscribed machine while covering both types, modes and scopes
 * (with MIN and MAX below). */
static void large(void)
{
    size_t n = (size_t)1 << 20;
    int full = getenv("ZMPI_TEST_FULL") != NULL;
    for (int i = 0; i < RT_SUM_CASES; i++) {
        if (!full && i != 0 && i != 7)
            continue; /* float/ABS/result and double/REL/message */
        rt_case k = rt_sum_case(i);
        one(&k, n, i % 2, RT_FIELD, id_ring, 65536, 1);
    }
    rt_case kmin = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_MIN};
    rt_case kmax = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    one(&kmin, n, 1, RT_FIELD, id_ring, 65536, 1);
    one(&kmax, n, 0, RT_FIELD, id_ring, 65536, 1);
    /* rhd at full size: both scopes */
    rt_case r1 = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case r2 = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_SUM};
    one(&r1, n, 0, RT_FIELD, id_rhd, 65536, 1);
    one(&r2, n, 1, RT_FIELD, id_rhd, 65536, 1);
}

static void hostile(void)
{
    size_t n = 20000;
    /* white noise compresses poorly */
    rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case c = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    one(&a, n, 0, RT_NOISE, id_ring, 4096, 0);
    one(&c, n, 1, RT_NOISE, id_ring, 4096, 0);
    /* bounds below the resolution of the type (values ~ 1..30: ulp ~ 1e-6 / 2e-15) */
    rt_case d = {MPI_FLOAT, ZMPI_EB_ABS, 1e-9, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case e = {MPI_FLOAT, ZMPI_EB_ABS, 1e-9, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    rt_case f = {MPI_DOUBLE, ZMPI_EB_REL, 1e-19, ZMPI_SCOPE_RESULT, MPI_SUM};
    one(&d, n, 0, RT_FIELD, id_ring, 4096, 0);
    one(&e, n, 1, RT_FIELD, id_ring, 4096, 0);
    one(&f, n, 0, RT_FIELD, id_ring, 4096, 0);
    /* Inf, NaN (SUM only), -0.0, denormals */
    rt_case h = {MPI_FLOAT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case r = {MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_MESSAGE, MPI_MAX};
    one(&h, 1000, 0, RT_SPECIAL, id_ring, 64, 0);
    one(&r, 1000, 1, RT_SPECIAL, id_ring, 64, 0);
    one(&a, n, 1, RT_NOISE, id_rhd, 4096, 0);
    one(&d, n, 1, RT_FIELD, id_rhd, 4096, 0);
    one(&h, 1000, 1, RT_SPECIAL, id_rhd, 64, 0);
    one(&r, 1000, 0, RT_SPECIAL, id_rhd, 64, 0);
}

/* A lossless codec without a bound also runs compressed: the result differs
 * from MPI's only by the rounding of the reduction order (MIN/MAX: exact). */
static void lossless(void)
{
    size_t n = 30000;
    MPI_Op ops[2] = {MPI_SUM, MPI_MAX};
    for (int oi = 0; oi < 2; oi++) {
        rt_case k = {oi ? MPI_FLOAT : MPI_DOUBLE, ZMPI_EB_NONE, 0, ZMPI_SCOPE_RESULT, ops[oi]};
        size_t es = rt_es(k.type), wn = n * (size_t)rt_mult(k.op);
        void *in = mt_xmalloc(n * es), *got = mt_xmalloc(n * es);
        void *win = mt_xmalloc(wn * 8), *wref = mt_xmalloc(wn * 8);
        rt_fill(in, n, k.type, rank, RT_FIELD, k.op);
        rt_widen(in, n, k.type, k.op, win);
        MPI_Allreduce(win, wref, (int)wn, rt_wtype(k.type), k.op, comm);
        ZMPI_Config cfg;
        ZMPI_Config_from_env(&cfg, NULL);
        cfg.codec = oi ? ZMPI_CODEC_ZSTD : ZMPI_CODEC_XORLZC;
        cfg.eb_mode = ZMPI_EB_NONE;
        cfg.min_bytes = 0;
        int rc = ZMPI_Comm_set_config(comm, &cfg);
        MT_CHECK(&T, rc == MPI_SUCCESS, "lossless config rc %d", rc);
        ZMPI_Stats s0 = mt_stats(comm);
        rc = ZMPI_Allreduce(in, got, (int)n, k.type, k.op, comm);
        ZMPI_Stats s1 = mt_stats(comm);
        MT_CHECK(&T, rc == MPI_SUCCESS, "lossless rc %d", rc);
        if (nranks > 1)
            MT_CHECK(&T, s1.compressed == s0.compressed + 1, "lossless: not run compressed");
        rt_result res = rt_check(&k, got, wref, n, 0.0, nranks);
        MT_CHECK(&T, res.bad == 0, "lossless %s: %zu elements differ beyond rounding, worst %g",
                 rt_op_name(k.op), res.bad, res.worst);
        MT_CHECK(&T, rt_same_everywhere(rt_hash(got, n * es), comm), "lossless: ranks differ");
        free(in);
        free(got);
        free(win);
        free(wref);
    }
}

static void algorithms(void)
{
    const char *names[8];
    int ids[8];
    int m = ZMPI_Coll_algorithms(ZMPI_COLL_ALLREDUCE, 8, ids, names, NULL);
    MT_CHECK(&T, m == 4 && !strcmp(names[0], "rhd") && !strcmp(names[1], "ring") && !strcmp(names[2], "cprp2p") &&
                     !strcmp(names[3], "node"),
             "algorithms: %d", m); /* node: tests/mpi/test_node.c */
    MT_CHECK(&T, id_ring > 0 && id_cprp2p > 0 && id_rhd > 0 && id_ring != id_cprp2p && id_rhd != id_ring &&
                     id_rhd != id_cprp2p, "ids %d %d %d", id_ring, id_cprp2p, id_rhd);
    setenv("ZMPI_ALLREDUCE_ALGORITHM", "cprp2p", 1);
    ZMPI_Config cfg;
    int rc = ZMPI_Config_from_env(&cfg, NULL);
    MT_CHECK(&T, rc == MPI_SUCCESS && cfg.algorithm[ZMPI_COLL_ALLREDUCE] == id_cprp2p,
             "ZMPI_ALLREDUCE_ALGORITHM=cprp2p -> %d", cfg.algorithm[ZMPI_COLL_ALLREDUCE]);
    unsetenv("ZMPI_ALLREDUCE_ALGORITHM");

    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    zmpi_eb_mode modes[2] = {ZMPI_EB_ABS, ZMPI_EB_REL};
    ZMPI_Scope scopes[2] = {ZMPI_SCOPE_RESULT, ZMPI_SCOPE_MESSAGE};
    MPI_Op ops[3] = {MPI_SUM, MPI_MIN, MPI_MAX};
    int i = 0;
    /* each type with both modes and both scopes (a Latin square) */
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++, i++) {
            rt_case k = {types[ti], modes[mi], rt_eb_for(modes[mi]), scopes[(ti + mi) % 2], ops[i % 3]};
            one(&k, i % 2 ? 1000 : (size_t)(3 * nranks + 1), i % 2, RT_FIELD, id_cprp2p, 64, 0);
        }
    size_t n = (size_t)1 << 20;
    rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_SUM};
    if (getenv("ZMPI_TEST_FULL"))
        one(&a, n, 0, RT_FIELD, id_cprp2p, 65536, 1);
    int same = one(&b, n, 1, RT_FIELD, id_cprp2p, 65536, 1);
    /* the owner keeps its exact block in cprp2p: the selection really ran it */
    if (nranks > 1)
        MT_CHECK(&T, !same, "cprp2p: all ranks identical, was the ring run instead?");
}

/* A fallback must give exactly MPI's bytes and be counted. */
static void fallback_one(const char *what, const void *in, size_t bytes, int count, MPI_Datatype type,
                         MPI_Op op, int inplace, int expect_type, int expect_small, int expect_config)
{
    void *a = mt_xmalloc(bytes), *b = mt_xmalloc(bytes);
    int rc;
    MPI_Allreduce(in, a, count, type, op, comm);
    ZMPI_Stats s0 = mt_stats(comm);
    if (inplace) {
        memcpy(b, in, bytes);
        rc = ZMPI_Allreduce(MPI_IN_PLACE, b, count, type, op, comm);
    } else {
        rc = ZMPI_Allreduce(in, b, count, type, op, comm);
    }
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(&T, !memcmp(a, b, bytes), "%s: result differs from MPI", what);
    mt_check_fallback(&T, comm, ZMPI_COLL_ALLREDUCE, &s0, &s1, expect_type, expect_small, expect_config, what);
    free(a);
    free(b);
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++)
        ((float *)inout)[i] += ((float *)in)[i];
}

static void user_sum4(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < 4 * *len; i++)
        ((float *)inout)[i] += ((float *)in)[i];
}

static void fallbacks(void)
{
    size_t n = 50000;
    int *iv;
    float *fv, *pv;
    rt_fallback_inputs(n, rank, &iv, &fv, &pv);
    rt_case k = {MPI_FLOAT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_config(comm, &k, 0, 65536, ZMPI_COLL_ALLREDUCE, ZMPI_ALGO_DEFAULT);
    fallback_one("MPI_INT", iv, n * sizeof(int), (int)n, MPI_INT, MPI_SUM, 0, 1, 0, 0);
    fallback_one("MPI_INT in place", iv, n * sizeof(int), (int)n, MPI_INT, MPI_MAX, 1, 1, 0, 0);
    MPI_Op uop;
    MPI_Op_create(user_sum, 1, &uop);
    fallback_one("user op", fv, n * sizeof(float), (int)n, MPI_FLOAT, uop, 0, 1, 0, 0);
    MPI_Op_free(&uop);
    fallback_one("MPI_PROD", pv, n * sizeof(float), (int)n, MPI_FLOAT, MPI_PROD, 0, 1, 0, 0);
    /* predefined ops are defined on predefined types only: a derived type
     * comes with a user op */
    MPI_Datatype vec4;
    MPI_Type_contiguous(4, MPI_FLOAT, &vec4);
    MPI_Type_commit(&vec4);
    MPI_Op_create(user_sum4, 1, &uop);
    fallback_one("contiguous type", fv, n * sizeof(float), (int)(n / 4), vec4, uop, 1, 1, 0, 0);
    MPI_Op_free(&uop);
    MPI_Type_free(&vec4);
    /* below min_bytes: 1000 floats = 4000 bytes < 65536 */
    rt_config(comm, &k, 65536, 65536, ZMPI_COLL_ALLREDUCE, ZMPI_ALGO_DEFAULT);
    fallback_one("below min_bytes", fv, 1000 * sizeof(float), 1000, MPI_FLOAT, MPI_SUM, 0, 0, 1, 0);
    fallback_one("count 0 below min_bytes", fv, 0, 0, MPI_FLOAT, MPI_SUM, 1, 0, 1, 0);
    /* ZMPI_ALGO_MPI */
    rt_config(comm, &k, 0, 65536, ZMPI_COLL_ALLREDUCE, ZMPI_ALGO_MPI);
    fallback_one("ZMPI_ALGO_MPI", fv, n * sizeof(float), (int)n, MPI_FLOAT, MPI_SUM, 0, 0, 0, 1);
    /* no bound configured */
    rt_case nb = {MPI_FLOAT, ZMPI_EB_NONE, 0, ZMPI_SCOPE_RESULT, MPI_SUM};
    rt_config(comm, &nb, 0, 65536, ZMPI_COLL_ALLREDUCE, ZMPI_ALGO_DEFAULT);
    fallback_one("no bound", fv, n * sizeof(float), (int)n, MPI_FLOAT, MPI_MIN, 1, 0, 0, 1);
    free(iv);
    free(fv);
    free(pv);
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_allreduce");
    rank = T.rank;
    nranks = T.size;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    id_ring = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLREDUCE, "ring");
    id_cprp2p = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLREDUCE, "cprp2p");
    id_rhd = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLREDUCE, "rhd");
    fallbacks();
    lossy_matrix();
    hostile();
    lossless();
    algorithms();
    large();
    MPI_Comm_free(&comm);
    return mt_finish(&T);
}
