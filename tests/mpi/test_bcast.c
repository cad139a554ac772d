/*
 * ZMPI_Bcast: every algorithm, float and double, ABS and REL (double/REL
 * for every algorithm too), counts 0, 1, fewer than ranks, not divisible,
 * large (1 Mi elements of a real field), roots 0, N/2 and N-1 in the sweep
 * and every root with every algorithm; bounds checked on every element
 * against plain MPI_Bcast; cprp2p in both scopes; fallbacks byte-identical;
 * white noise with a bound below float resolution; statistics prove the
 * compressed path ran, and ZMPI_Stats.last_algorithm that the configured
 * algorithm ran (plain MPI for the fallbacks).
 */
#include "movement_util.h"

#define MAXALGO 8

typedef mv_run run;

static int ceil_log2(int n)
{
    int d = 0;
    while ((1 << d) < n)
        d++;
    return d;
}

/* One broadcast of count elements from root, checked. */
static void one(run *r, size_t count, int root, int noise)
{
    mt_state *t = r->t;
    size_t es = mv_es(r->type), bytes = count * es;
    char *buf = malloc(bytes + 8), *ref = malloc(bytes + 8), *orig = malloc(bytes + 8);
    if (noise)
        mv_fill_noise(orig, count, r->type, 77 + (uint64_t)root);
    else
        mt_fill_field(orig, count, r->type, (size_t)root + 1);
    if (noise && count > 8) { /* values every codec must reproduce exactly */
        if (r->type == MPI_FLOAT) {
            float *f = (float *)orig;
            f[1] = NAN, f[2] = INFINITY, f[3] = -INFINITY, f[4] = -0.0f, f[5] = 1e-40f;
        } else {
            double *d = (double *)orig;
            d[1] = NAN, d[2] = INFINITY, d[3] = -INFINITY, d[4] = -0.0, d[5] = 1e-310;
        }
    }
    if (t->rank == root) {
        memcpy(buf, orig, bytes);
        memcpy(ref, orig, bytes);
    } else {
        mv_fill_garbage(buf, count, r->type);
        mv_fill_garbage(ref, count, r->type);
    }
    MPI_Bcast(ref, (int)count, r->type, root, MPI_COMM_WORLD);
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc = ZMPI_Bcast(buf, (int)count, r->type, root, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    char what[160];
    snprintf(what, sizeof what, "bcast %s %s %s eb=%g scope=%d count=%zu root=%d", r->aname,
             mv_tname(r->type), r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb, (int)r->scope, count, root);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (t->size > 1), "%s: compressed path did not run", what);
    mv_check_algo(r, ZMPI_COLL_BCAST, what);
    if (t->rank == root) {
        mv_same(t, what, buf, orig, bytes); /* the root's buffer is untouched */
        mv_account(r, &s0, &s1);
    } else {
        double bound = mv_bound(r->mode, r->eb, ref, count, r->type), k = 1, w = 0;
        int hops = ceil_log2(t->size);
        if (!strcmp(r->aname, "cprp2p") && r->scope == ZMPI_SCOPE_MESSAGE && hops > 1)
            k = r->mode == ZMPI_EB_ABS ? hops : hops * pow(1 + 2 * r->eb, hops); /* error per hop */
        mv_check(t, what, buf, ref, count, r->type, bound * k, &w);
        r->worst = w * k > r->worst ? w * k : r->worst; /* reported against the user's bound */
    }
    free(buf);
    free(ref);
    free(orig);
}

static void sweep(mt_state *t, int algo, const char *aname, int first)
{
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    const zmpi_eb_mode modes[2] = {ZMPI_EB_ABS, ZMPI_EB_REL};
    const double ebs[2] = {1e-3, 1e-4};
    int size = t->size;
    size_t counts[] = {0, 1, (size_t)(size > 1 ? size - 1 : 1), 12345, (size_t)1 << 20};
    int roots[3] = {0, size - 1, size / 2};
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            if (!first && ti == mi)
                continue; /* slow on 2 cores: all four for the default algorithm, float/REL and double/ABS
                           * for the others */
            run r = mv_run_make(t, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 4096);
            for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++)
                for (int ri = 0; ri < 3; ri++) {
                    if (ri > 0 && roots[ri] == roots[ri - 1])
                        continue;
                    if (counts[ci] == ((size_t)1 << 20)) {
                        /* large: one root per type (0 for float, N-1 for double); report the
                         * ratio and error on the real field */
                        if (ri > 0)
                            continue;
                        int root = ti == 0 ? 0 : size - 1;
                        run q = mv_run_make(t, r.type, r.mode, r.eb, r.scope, aname);
                        one(&q, counts[ci], root, 0);
                        mv_report(&q, "bcast", counts[ci]);
                        continue;
                    }
                    one(&r, counts[ci], roots[ri], 0);
                }
        }
    if (!first) {
        /* double/REL for the other algorithms too: counts 1, < ranks, odd and
         * 60001 (15 pipeline chunks), the root moving */
        run r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 4096);
        size_t dcounts[4] = {1, (size_t)(size > 1 ? size - 1 : 1), 12345, 60001};
        for (int ci = 0; ci < 4; ci++)
            one(&r, dcounts[ci], roots[ci % 3], 0);
        mv_report(&r, "bcast", 0);
    }
    /* message scope: the published per-message semantics (cprp2p: error per hop) */
    for (int mi = 0; mi < 2; mi++) {
        run r = mv_run_make(t, MPI_FLOAT, modes[mi], ebs[mi], ZMPI_SCOPE_MESSAGE, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 50000, size - 1, 0);
        mv_report(&r, "bcast", 50000);
    }
    /* white noise, a bound below float resolution, special values */
    {
        run r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-12, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 30000, 0, 1);
        r.type = MPI_DOUBLE;
        r.mode = ZMPI_EB_REL;
        r.eb = 1e-9;
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 30000, size - 1, 1);
    }
}

/* Every root with every algorithm (the sweep uses roots 0, N/2 and N-1):
 * one float/ABS and one double/REL broadcast each, small. */
static void every_root(mt_state *t, int algo, const char *aname)
{
    for (int root = 0; root < t->size; root++) {
        run r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 1024);
        one(&r, 5000, root, 0);
        r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 1024);
        one(&r, 3001 + (size_t)root, root, 0);
    }
}

/* Plain-MPI fallbacks: results byte-identical to MPI_Bcast, and counted. */
static void fallbacks(mt_state *t)
{
    int size = t->size, root = size - 1, n = 20000;
    char *a = malloc((size_t)n * 16), *b = malloc((size_t)n * 16);
    ZMPI_Stats s0, s1;
    /* MPI_INT */
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, 0,
              4096);
    for (int i = 0; i < n; i++)
        ((int *)a)[i] = ((int *)b)[i] = t->rank == root ? i * 7 - 3 : -1;
    s0 = mv_stats(MPI_COMM_WORLD);
    ZMPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD);
    s1 = mv_stats(MPI_COMM_WORLD);
    MPI_Bcast(b, n, MPI_INT, root, MPI_COMM_WORLD);
    mv_same(t, "bcast MPI_INT", a, b, (size_t)n * 4);
    MT_CHECK(t, s1.fallback_type == s0.fallback_type + 1 && s1.compressed == s0.compressed,
             "MPI_INT not counted");
    mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_MPI, "bcast MPI_INT");
    /* a contiguous derived type of floats */
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_FLOAT, &four);
    MPI_Type_commit(&four);
    mt_fill_field(a, (size_t)n, MPI_FLOAT, 3);
    memcpy(b, a, (size_t)n * 4);
    if (t->rank != root) {
        mv_fill_garbage(a, (size_t)n, MPI_FLOAT);
        mv_fill_garbage(b, (size_t)n, MPI_FLOAT);
    }
    s0 = mv_stats(MPI_COMM_WORLD);
    ZMPI_Bcast(a, n / 4, four, root, MPI_COMM_WORLD);
    s1 = mv_stats(MPI_COMM_WORLD);
    MPI_Bcast(b, n / 4, four, root, MPI_COMM_WORLD);
    mv_same(t, "bcast derived type", a, b, (size_t)n * 4);
    MT_CHECK(t, s1.fallback_type == s0.fallback_type + 1, "derived type not counted as fallback");
    mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_MPI, "bcast derived type");
    MPI_Type_free(&four);
    /* below min_bytes, no bound, ZMPI_ALGO_MPI */
    for (int k = 0; k < 3; k++) {
        if (k == 0)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, (size_t)n * 8 + 1, 4096);
        else if (k == 1)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_DEFAULT, ZMPI_EB_NONE, 0, ZMPI_SCOPE_RESULT,
                      0, 4096);
        else
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_MPI, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT, 0,
                      4096);
        mt_fill_field(a, (size_t)n, MPI_DOUBLE, 5);
        memcpy(b, a, (size_t)n * 8);
        if (t->rank != root) {
            mv_fill_garbage(a, (size_t)n, MPI_DOUBLE);
            mv_fill_garbage(b, (size_t)n, MPI_DOUBLE);
        }
        s0 = mv_stats(MPI_COMM_WORLD);
        ZMPI_Bcast(a, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
        s1 = mv_stats(MPI_COMM_WORLD);
        MPI_Bcast(b, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
        mv_same(t, "bcast fallback", a, b, (size_t)n * 8);
        MT_CHECK(t, s1.compressed == s0.compressed, "fallback %d ran compressed", k);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_MPI, "bcast fallback");
        if (k == 0)
            MT_CHECK(t, s1.fallback_small == s0.fallback_small + 1, "below min_bytes not counted");
        else
            MT_CHECK(t, s1.fallback_config == s0.fallback_config + 1, "config fallback %d not counted", k);
    }
    free(a);
    free(b);
}

/* The default algorithm switches to the pipeline for large messages below
 * 4 ranks (from 4 chunks), to scatter_allgather from 4 ranks and 4096
 * elements per rank (README). */
static void default_algo(mt_state *t)
{
    run r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-5, ZMPI_SCOPE_RESULT, "default");
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_DEFAULT, r.mode, r.eb, r.scope, 65536, 4096);
    one(&r, 40000, t->size / 2, 0); /* 40000 >= 4 chunks of 4096, >= 4096 per rank up to 9 ranks */
    int want = t->size >= 4 ? ZMPI_Coll_algorithm_from_name(ZMPI_COLL_BCAST, "scatter_allgather")
                            : ZMPI_Coll_algorithm_from_name(ZMPI_COLL_BCAST, "pipelined");
    mt_check_algo(t, MPI_COMM_WORLD, ZMPI_COLL_BCAST, want, t->size > 1, "bcast default, 40000 doubles");
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_bcast");
    int ids[MAXALGO];
    const char *names[MAXALGO];
    int n = ZMPI_Coll_algorithms(ZMPI_COLL_BCAST, MAXALGO, ids, names, NULL);
    MT_CHECK(&t, n >= 3, "bcast has %d algorithms", n);
    for (int a = 0; a < n && a < MAXALGO; a++) {
        sweep(&t, ids[a], names[a], a == 0);
        every_root(&t, ids[a], names[a]);
    }
    fallbacks(&t);
    default_algo(&t);
    return mt_finish(&t);
}
