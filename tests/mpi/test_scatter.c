/*
 * ZMPI_Scatter and ZMPI_Scatterv: every algorithm, float and double, ABS and
 * REL, parts of 0, 1, a few, an odd number and many elements (>= 1 Mi in
 * all, a real field), uneven parts with zeros and gaps (v), roots 0, N/2
 * and N-1 in the sweep and every root with every algorithm, MPI_IN_PLACE at
 * the root, a derived recvtype at the root; every element checked against
 * plain MPI and the bound of its part; fallbacks byte-identical; white
 * noise; statistics prove the compressed path ran, and last_algorithm that
 * the configured algorithm ran (plain MPI for the fallbacks).
 * cprp2p (compress per hop) in both scopes: result scope within the user's
 * bound (REL: of the range of all parts), message scope within one bound per
 * compression of the part; the bytes compressed over all ranks show that
 * every inner rank recompressed what it forwarded.
 */
#include "movement_util.h"

#define MAXALGO 8

typedef mv_run run;

/* Compressions of the part of virtual rank v in cprp2p: popcount(v). */
static int hops_of(int v)
{
    int h = 0;
    for (; v; v &= v - 1)
        h++;
    return h;
}

/* Part layout: counts and displacements (in elements) of the send buffer. */
typedef struct layout {
    int *counts, *displs;
    size_t total; /* elements of the send buffer */
} layout;

static layout make_layout(int size, int kind, int base)
{
    layout l;
    l.counts = calloc((size_t)size, sizeof(int));
    l.displs = calloc((size_t)size, sizeof(int));
    size_t pos = 0;
    for (int i = 0; i < size; i++) {
        if (kind == 0) /* Scatter: equal parts, in order */
            l.counts[i] = base;
        else if (kind == 1) /* uneven with zeros */
            l.counts[i] = i % 3 == 1 ? 0 : base + 37 * i;
        else /* fewer elements than ranks */
            l.counts[i] = i < 2 ? 1 : 0;
    }
    /* v-variants: parts in reverse order with gaps */
    for (int k = 0; k < size; k++) {
        int i = kind == 0 ? k : size - 1 - k;
        l.displs[i] = (int)pos;
        pos += (size_t)l.counts[i] + (kind == 0 ? 0 : 5);
    }
    l.total = pos;
    return l;
}

static void one(run *r, int kind, int base, int root, int in_place, int noise)
{
    mt_state *t = r->t;
    int size = t->size, rank = t->rank, cpr = !strcmp(r->aname, "cprp2p");
    size_t es = mv_es(r->type);
    layout l = make_layout(size, kind, base);
    size_t mine = (size_t)l.counts[rank];
    char *send = malloc(l.total * es + 8), *orig = malloc(l.total * es + 8);
    char *got = malloc(mine * es + 8), *ref = malloc(mine * es + 8);
    if (noise)
        mv_fill_noise(orig, l.total, r->type, 5 + (uint64_t)root);
    else
        mt_fill_field(orig, l.total, r->type, (size_t)root + 1);
    memcpy(send, orig, l.total * es);
    mv_fill_garbage(got, mine, r->type);
    mv_fill_garbage(ref, mine, r->type);
    if (kind == 0)
        MPI_Scatter(orig, base, r->type, ref, base, r->type, root, MPI_COMM_WORLD);
    else
        MPI_Scatterv(orig, l.counts, l.displs, r->type, ref, (int)mine, r->type, root, MPI_COMM_WORLD);
    void *rb = in_place && rank == root ? MPI_IN_PLACE : got;
    const void *sb = rank == root ? send : NULL;
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc;
    if (kind == 0)
        rc = ZMPI_Scatter(sb, base, r->type, rb, base, r->type, root, MPI_COMM_WORLD);
    else
        rc = ZMPI_Scatterv(sb, l.counts, l.displs, r->type, rb, (int)mine, r->type, root, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    char what[200];
    snprintf(what, sizeof what, "scatter%s %s %s %s eb=%g base=%d root=%d in_place=%d", kind ? "v" : "",
             r->aname, mv_tname(r->type), r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb, base, root,
             in_place);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "%s: compressed path did not run", what);
    mv_check_algo(r, ZMPI_COLL_SCATTER, what);
    /* bytes compressed over all ranks: each part once (cprp2p: once per hop,
     * popcount(vrank) times), so a silent switch of algorithm cannot pass */
    unsigned long long raw = s1.bytes_raw - s0.bytes_raw, all = 0, expect = 0;
    MPI_Allreduce(&raw, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        if (i != root)
            expect += (unsigned long long)l.counts[i] * es * (cpr ? hops_of((i - root + size) % size) : 1);
    MT_CHECK(t, all == expect, "%s: %llu bytes compressed, expected %llu", what, all, expect);
    mv_account(r, &s0, &s1);
    if (rank == root) {
        mv_same(t, what, send, orig, l.total * es); /* the send buffer is untouched */
        if (!in_place)
            mv_same(t, what, got, ref, mine * es); /* own part copied exactly */
    } else {
        double bound = mv_bound(r->mode, r->eb, ref, mine, r->type), k = 1, w = 0;
        int h = hops_of((rank - root + size) % size);
        if (cpr && r->scope == ZMPI_SCOPE_RESULT && r->mode == ZMPI_EB_REL) {
            double lo = INFINITY, hi = -INFINITY; /* range of all parts */
            for (int i = 0; i < size; i++)
                for (size_t e = 0; e < (size_t)l.counts[i]; e++) {
                    double x = mt_get(orig + (size_t)l.displs[i] * es, e, r->type);
                    if (isfinite(x)) {
                        lo = x < lo ? x : lo;
                        hi = x > hi ? x : hi;
                    }
                }
            bound = hi >= lo ? r->eb * (hi - lo) : 0;
        }
        if (cpr && r->scope == ZMPI_SCOPE_MESSAGE && h > 1) /* error per hop */
            k = r->mode == ZMPI_EB_ABS ? h : h * pow(1 + 2 * r->eb, h);
        mv_check(t, what, got, ref, mine, r->type, bound * k, &w);
        r->worst = w * k > r->worst ? w * k : r->worst; /* reported against the user's bound */
    }
    free(send);
    free(orig);
    free(got);
    free(ref);
    free(l.counts);
    free(l.displs);
}

static void sweep(mt_state *t, int algo, const char *aname)
{
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    const zmpi_eb_mode modes[2] = {ZMPI_EB_ABS, ZMPI_EB_REL};
    const double ebs[2] = {1e-3, 1e-4};
    int size = t->size, large = (1 << 20) / size + 1; /* >= 1 Mi elements in all, not divisible */
    int bases[] = {0, 1, 3, 12345};
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            run r = mv_run_make(t, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, r.mode, r.eb, r.scope, 0, 4096);
            for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++) {
                one(&r, 0, bases[bi], 0, 0, 0);
                one(&r, 0, bases[bi], size - 1, bi == 3, 0);
            }
            one(&r, 1, 1000, size - 1, 0, 0); /* uneven with zeros and gaps */
            one(&r, 1, 1000, 0, 1, 0);
            one(&r, 2, 0, size / 2, 0, 0); /* fewer elements than ranks */
            run q = mv_run_make(t, r.type, r.mode, r.eb, r.scope, aname);
            one(&q, 0, large, ti == 0 ? 0 : size - 1, 0, 0);
            mv_report(&q, "scatter", (size_t)large * (size_t)size);
        }
    /* message scope (the same bound for a compress-once algorithm; cprp2p:
     * one bound per hop) */
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            run m = mv_run_make(t, types[ti], modes[mi], mi ? 1e-3 : ebs[mi], ZMPI_SCOPE_MESSAGE, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, m.mode, m.eb, m.scope, 0, 4096);
            one(&m, 1, 5000, ti ? 0 : size - 1, ti, 0);
            run q = mv_run_make(t, m.type, m.mode, ebs[mi], m.scope, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, q.mode, q.eb, q.scope, 0, 4096);
            one(&q, 0, large, ti == 0 ? size - 1 : 0, 0, 0);
            mv_report(&q, "scatter", (size_t)large * (size_t)size);
        }
    run r;
    /* white noise with a bound below float resolution; specials-free noise in REL */
    r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-12, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 0, 5000, 0, 0, 1);
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-9, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 1, 3000, size - 1, 0, 1);
    /* Scatterv with the default threshold: small parts travel uncompressed
     * inside the compressed call, large parts compressed */
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_ABS, 1e-4, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, r.mode, r.eb, r.scope, 65536, 4096);
    one(&r, 1, 7000, 0, 0, 0);
}

/* Every root with every algorithm (the sweep uses roots 0, N/2 and N-1):
 * one Scatter (float, ABS; in place at odd roots) and one Scatterv (double,
 * REL, uneven parts with zeros and gaps) each, small. */
static void every_root(mt_state *t, int algo, const char *aname)
{
    for (int root = 0; root < t->size; root++) {
        run r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 0, 2000, root, root % 2, 0);
        r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 1, 500, root, 0, 0);
    }
}

/* The root receives its own part into a derived datatype of floats: the
 * compressed path still runs (the root's significant type is sendtype). */
static void derived_root_recvtype(mt_state *t)
{
    int size = t->size, root = size - 1, n = 4000;
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_FLOAT, &four);
    MPI_Type_commit(&four);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_DEFAULT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, 0,
              4096);
    float *send = malloc((size_t)n * (size_t)size * 4), *got = malloc((size_t)n * 4),
          *ref = malloc((size_t)n * 4);
    mt_fill_field(send, (size_t)n * (size_t)size, MPI_FLOAT, 9);
    MPI_Scatter(send, n, MPI_FLOAT, ref, n, MPI_FLOAT, root, MPI_COMM_WORLD);
    mv_fill_garbage(got, (size_t)n, MPI_FLOAT);
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc = t->rank == root ? ZMPI_Scatter(send, n, MPI_FLOAT, got, n / 4, four, root, MPI_COMM_WORLD)
                             : ZMPI_Scatter(NULL, 0, MPI_FLOAT, got, n, MPI_FLOAT, root, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    MT_CHECK(t, rc == MPI_SUCCESS, "scatter derived root recvtype: rc %d", rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "scatter derived root recvtype: not compressed");
    mv_check(t, "scatter derived root recvtype", got, ref, (size_t)n, MPI_FLOAT, t->rank == root ? 0.0 : 1e-2,
             NULL);
    MPI_Type_free(&four);
    free(send);
    free(got);
    free(ref);
}

/* Plain-MPI fallbacks: byte-identical to MPI_Scatter(v), and counted. */
static void fallbacks(mt_state *t)
{
    int size = t->size, root = size - 1, n = 3000;
    size_t total = (size_t)n * (size_t)size;
    char *send = malloc(total * 8), *a = malloc((size_t)n * 8), *b = malloc((size_t)n * 8);
    ZMPI_Stats s0, s1;
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_FLOAT, &two);
    MPI_Type_commit(&two);
    for (int k = 0; k < 5; k++) {
        MPI_Datatype type = MPI_DOUBLE;
        int cnt = n;
        if (k == 0) { /* MPI_INT */
            type = MPI_INT;
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        } else if (k == 1) { /* a contiguous derived type of floats */
            type = two;
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        } else if (k == 2) { /* below min_bytes */
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, (size_t)n * 8 + 1, 4096);
        } else if (k == 3) { /* no bound */
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_DEFAULT, ZMPI_EB_NONE, 0,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        } else { /* ZMPI_ALGO_MPI */
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_MPI, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT,
                      0, 4096);
        }
        mt_fill_field(send, total, MPI_DOUBLE, 4);
        memset(a, 0x5c, (size_t)n * 8);
        memset(b, 0x5c, (size_t)n * 8);
        s0 = mv_stats(MPI_COMM_WORLD);
        ZMPI_Scatter(send, cnt, type, a, cnt, type, root, MPI_COMM_WORLD);
        s1 = mv_stats(MPI_COMM_WORLD);
        MPI_Scatter(send, cnt, type, b, cnt, type, root, MPI_COMM_WORLD);
        mv_same(t, "scatter fallback", a, b, (size_t)n * 8);
        MT_CHECK(t, s1.compressed == s0.compressed, "scatter fallback %d ran compressed", k);
        unsigned long long d = k < 2    ? s1.fallback_type - s0.fallback_type
                               : k == 2 ? s1.fallback_small - s0.fallback_small
                                        : s1.fallback_config - s0.fallback_config;
        MT_CHECK(t, d == 1, "scatter fallback %d not counted", k);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_MPI, "scatter fallback");
        /* Scatterv, same case */
        int *counts = malloc((size_t)size * sizeof(int)), *displs = malloc((size_t)size * sizeof(int));
        for (int i = 0; i < size; i++) {
            counts[i] = i % 2 ? cnt / 2 : cnt;
            displs[i] = i * cnt;
        }
        memset(a, 0x5c, (size_t)n * 8);
        memset(b, 0x5c, (size_t)n * 8);
        ZMPI_Scatterv(send, counts, displs, type, a, counts[t->rank], type, root, MPI_COMM_WORLD);
        if (k != 2 || size == 1) /* Scatterv is compressed regardless of min_bytes (from 2 ranks) */
            mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_SCATTER, ZMPI_ALGO_MPI, "scatterv fallback");
        MPI_Scatterv(send, counts, displs, type, b, counts[t->rank], type, root, MPI_COMM_WORLD);
        if (k != 2) /* Scatterv is compressed regardless of min_bytes */
            mv_same(t, "scatterv fallback", a, b, (size_t)n * 8);
        free(counts);
        free(displs);
    }
    MPI_Type_free(&two);
    free(send);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_scatter");
    int ids[MAXALGO];
    const char *names[MAXALGO];
    int n = ZMPI_Coll_algorithms(ZMPI_COLL_SCATTER, MAXALGO, ids, names, NULL);
    MT_CHECK(&t, n >= 2, "scatter has %d algorithms", n);
    MT_CHECK(&t, ZMPI_Coll_algorithm_from_name(ZMPI_COLL_SCATTER, "cprp2p") > 0,
             "scatter: no cprp2p algorithm");
    for (int a = 0; a < n && a < MAXALGO; a++) {
        sweep(&t, ids[a], names[a]);
        every_root(&t, ids[a], names[a]);
    }
    derived_root_recvtype(&t);
    fallbacks(&t);
    return mt_finish(&t);
}
