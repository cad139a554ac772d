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
#include "movement.h"

/* One broadcast of count elements from root, checked. */
static void one(mv_run *r, size_t count, int root, int noise)
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
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int rc = ZMPI_Bcast(buf, (int)count, r->type, root, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    char what[160], desc[120];
    mv_describe(r, "bcast", desc, sizeof desc);
    snprintf(what, sizeof what, "%s scope=%d count=%zu root=%d", desc, (int)r->scope, count, root);
    mv_check_call(r, what, rc, &s0, &s1);
    if (t->rank == root) {
        mv_same(t, what, buf, orig, bytes); /* the root's buffer is untouched */
        mv_account(r, &s0, &s1);
    } else { /* cprp2p, message scope: the error grows per hop of the tree */
        mv_check_block(r, what, buf, ref, count, -1.0, mt_ceil_log2(t->size), 0);
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
            mv_run r = mv_series(t, ZMPI_COLL_BCAST, algo, aname, types[ti], modes[mi], ebs[mi],
                                 ZMPI_SCOPE_RESULT, 0);
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
                        mv_run q = mv_run_make(t, ZMPI_COLL_BCAST, r.type, r.mode, r.eb, r.scope, aname);
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
        mv_run r = mv_series(t, ZMPI_COLL_BCAST, algo, aname, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, 0);
        size_t dcounts[4] = {1, (size_t)(size > 1 ? size - 1 : 1), 12345, 60001};
        for (int ci = 0; ci < 4; ci++)
            one(&r, dcounts[ci], roots[ci % 3], 0);
        mv_report(&r, "bcast", 0);
    }
    /* message scope: the published per-message semantics (cprp2p: error per hop) */
    for (int mi = 0; mi < 2; mi++) {
        mv_run r = mv_series(t, ZMPI_COLL_BCAST, algo, aname, MPI_FLOAT, modes[mi], ebs[mi], ZMPI_SCOPE_MESSAGE, 0);
        one(&r, 50000, size - 1, 0);
        mv_report(&r, "bcast", 50000);
    }
    /* white noise, a bound below float resolution, special values */
    mv_run r = mv_series(t, ZMPI_COLL_BCAST, algo, aname, MPI_FLOAT, ZMPI_EB_ABS, 1e-12, ZMPI_SCOPE_RESULT, 0);
    one(&r, 30000, 0, 1);
    r = mv_series(t, ZMPI_COLL_BCAST, algo, aname, MPI_DOUBLE, ZMPI_EB_REL, 1e-9, ZMPI_SCOPE_RESULT, 0);
    one(&r, 30000, size - 1, 1);
}

/* Every root with every algorithm (the sweep uses roots 0, N/2 and N-1):
 * one float/ABS and one double/REL broadcast each, small. */
static void every_root(mt_state *t, int algo, const char *aname)
{
    for (int root = 0; root < t->size; root++) {
        mv_run r = mv_run_make(t, ZMPI_COLL_BCAST, MPI_FLOAT, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_BCAST, algo, r.mode, r.eb, r.scope, 0, 1024);
        one(&r, 5000, root, 0);
        r = mv_run_make(t, ZMPI_COLL_BCAST, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, aname);
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
    s0 = mt_stats(MPI_COMM_WORLD);
    ZMPI_Bcast(a, n, MPI_INT, root, MPI_COMM_WORLD);
    s1 = mt_stats(MPI_COMM_WORLD);
    MPI_Bcast(b, n, MPI_INT, root, MPI_COMM_WORLD);
    mv_same(t, "bcast MPI_INT", a, b, (size_t)n * 4);
    MT_CHECK(t, s1.fallback_type == s0.fallback_type + 1 && s1.compressed == s0.compressed,
             "MPI_INT not counted");
    mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_BCAST, ZMPI_ALGO_MPI, "bcast MPI_INT");
    /* a contiguous derived type of ints (one of floats is compressed: test_derived_coll) */
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_INT, &four);
    MPI_Type_commit(&four);
    mt_fill_field(a, (size_t)n, MPI_FLOAT, 3);
    memcpy(b, a, (size_t)n * 4);
    if (t->rank != root) {
        mv_fill_garbage(a, (size_t)n, MPI_FLOAT);
        mv_fill_garbage(b, (size_t)n, MPI_FLOAT);
    }
    s0 = mt_stats(MPI_COMM_WORLD);
    ZMPI_Bcast(a, n / 4, four, root, MPI_COMM_WORLD);
    s1 = mt_stats(MPI_COMM_WORLD);
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
        s0 = mt_stats(MPI_COMM_WORLD);
        ZMPI_Bcast(a, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
        s1 = mt_stats(MPI_COMM_WORLD);
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
    mv_run r = mv_run_make(t, ZMPI_COLL_BCAST, MPI_DOUBLE, ZMPI_EB_REL, 1e-5, ZMPI_SCOPE_RESULT, "default");
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
    int ids[MV_MAXALGO];
    const char *names[MV_MAXALGO];
    int n = mv_algorithms(&t, ZMPI_COLL_BCAST, 3, ids, names);
    for (int a = 0; a < n; a++) {
        sweep(&t, ids[a], names[a], a == 0);
        every_root(&t, ids[a], names[a]);
    }
    fallbacks(&t);
    default_algo(&t);
    return mt_finish(&t);
}
