/*
 * ZMPI_Gather and ZMPI_Gatherv: every algorithm, float and double, ABS and
 * REL, blocks of 0, 1, a few, an odd number and many elements (>= 1 Mi in
 * all, a real field with per-rank offsets), uneven blocks with zeros and
 * gaps (v), roots 0, N/2 and N-1 in the sweep and every root with every
 * algorithm, MPI_IN_PLACE at the root, a derived sendtype at the root; every
 * element checked against plain MPI and the bound of its block; fallbacks
 * byte-identical; white noise; statistics prove the compressed path ran,
 * and last_algorithm that the configured algorithm ran. cprp2p (compress per hop) in both scopes: result
 * scope within the user's bound (REL: of the range of all blocks), message
 * scope within one bound per compression of the block; the bytes compressed
 * over all ranks show that every inner rank recompressed its subtree.
 */
#include "movement_util.h"

#define MAXALGO 8

typedef mv_run run;

/* Compressions of the block of virtual rank v in cprp2p: popcount(v). */
static int hops_of(int v)
{
    int h = 0;
    for (; v; v &= v - 1)
        h++;
    return h;
}

typedef struct layout {
    int *counts, *displs;
    size_t total; /* elements of the receive buffer */
} layout;

static layout make_layout(int size, int kind, int base)
{
    layout l;
    l.counts = calloc((size_t)size, sizeof(int));
    l.displs = calloc((size_t)size, sizeof(int));
    size_t pos = 0;
    for (int i = 0; i < size; i++) {
        if (kind == 0) /* Gather: equal blocks, in order */
            l.counts[i] = base;
        else if (kind == 1) /* uneven with zeros */
            l.counts[i] = i % 3 == 2 ? 0 : base + 53 * i;
        else /* fewer elements than ranks */
            l.counts[i] = i == 1 || i == size - 1 ? 1 : 0;
    }
    for (int k = 0; k < size; k++) { /* v: reverse order with gaps */
        int i = kind == 0 ? k : size - 1 - k;
        l.displs[i] = (int)pos;
        pos += (size_t)l.counts[i] + (kind == 0 ? 0 : 3);
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
    char *send = malloc(mine * es + 8), *orig = malloc(mine * es + 8);
    char *got = malloc(l.total * es + 8), *ref = malloc(l.total * es + 8);
    if (noise)
        mv_fill_noise(orig, mine, r->type, 11 + (uint64_t)rank);
    else
        mt_fill_field(orig, mine, r->type, (size_t)rank + 1);
    memcpy(send, orig, mine * es);
    mv_fill_garbage(got, l.total, r->type);
    mv_fill_garbage(ref, l.total, r->type);
    if (kind == 0)
        MPI_Gather(orig, base, r->type, ref, base, r->type, root, MPI_COMM_WORLD);
    else
        MPI_Gatherv(orig, (int)mine, r->type, ref, l.counts, l.displs, r->type, root, MPI_COMM_WORLD);
    const void *sb = send;
    if (in_place && rank == root) { /* the root's block already in place */
        memcpy(got + (size_t)l.displs[root] * es, orig, mine * es);
        sb = MPI_IN_PLACE;
    }
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc;
    if (kind == 0)
        rc = ZMPI_Gather(sb, base, r->type, got, base, r->type, root, MPI_COMM_WORLD);
    else
        rc = ZMPI_Gatherv(sb, (int)mine, r->type, got, l.counts, l.displs, r->type, root, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    char what[200];
    snprintf(what, sizeof what, "gather%s %s %s %s eb=%g base=%d root=%d in_place=%d", kind ? "v" : "",
             r->aname, mv_tname(r->type), r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb, base, root,
             in_place);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "%s: compressed path did not run", what);
    mv_check_algo(r, ZMPI_COLL_GATHER, what);
    mv_same(t, what, send, orig, mine * es); /* the send buffer is untouched */
    mv_account(r, &s0, &s1);
    /* bytes compressed over all ranks: each block once (cprp2p: once per
     * hop, popcount(vrank) times), so a silent switch of algorithm cannot pass */
    unsigned long long raw = s1.bytes_raw - s0.bytes_raw, all = 0, expect = 0;
    MPI_Allreduce(&raw, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        if (i != root)
            expect += (unsigned long long)l.counts[i] * es * (cpr ? hops_of((i - root + size) % size) : 1);
    MT_CHECK(t, all == expect, "%s: %llu bytes compressed, expected %llu", what, all, expect);
    if (rank == root) {
        double global = 0; /* range of all blocks (cprp2p, result scope, REL) */
        {
            double lo = INFINITY, hi = -INFINITY;
            for (int i = 0; i < size; i++)
                for (size_t e = 0; e < (size_t)l.counts[i]; e++) {
                    double x = mt_get(ref + (size_t)l.displs[i] * es, e, r->type);
                    if (isfinite(x)) {
                        lo = x < lo ? x : lo;
                        hi = x > hi ? x : hi;
                    }
                }
            global = hi >= lo ? hi - lo : 0;
        }
        for (int i = 0; i < size; i++) {
            size_t n = (size_t)l.counts[i], at = (size_t)l.displs[i] * es;
            double bound = mv_bound(r->mode, r->eb, ref + at, n, r->type), k = 1, w = 0;
            int h = hops_of((i - root + size) % size);
            if (cpr && r->scope == ZMPI_SCOPE_RESULT && r->mode == ZMPI_EB_REL)
                bound = r->eb * global;
            if (cpr && r->scope == ZMPI_SCOPE_MESSAGE && h > 1) /* error per hop */
                k = r->mode == ZMPI_EB_ABS ? h : h * pow(1 + 2 * r->eb, h);
            if (i == root)
                bound = 0.0; /* the own block is copied, never compressed */
            mv_check(t, what, got + at, ref + at, n, r->type, bound * k, &w);
            r->worst = w * k > r->worst ? w * k : r->worst; /* reported against the user's bound */
        }
        /* the gaps between blocks are untouched */
        for (size_t e = 0; kind != 0 && e < l.total; e++) {
            int in_block = 0;
            for (int i = 0; i < size && !in_block; i++)
                in_block = e >= (size_t)l.displs[i] && e < (size_t)l.displs[i] + (size_t)l.counts[i];
            if (!in_block)
                MT_CHECK(t, !memcmp(got + e * es, ref + e * es, es), "%s: gap element %zu written", what, e);
        }
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
    int size = t->size, large = (1 << 20) / size + 1;
    int bases[] = {0, 1, 3, 12345};
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            run r = mv_run_make(t, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
            for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++) {
                one(&r, 0, bases[bi], 0, 0, 0);
                one(&r, 0, bases[bi], size - 1, bi == 3, 0);
            }
            one(&r, 1, 1000, size - 1, 0, 0);
            one(&r, 1, 1000, 0, 1, 0);
            one(&r, 2, 0, size / 2, 0, 0);
            run q = mv_run_make(t, r.type, r.mode, r.eb, r.scope, aname);
            one(&q, 0, large, ti == 0 ? 0 : size - 1, 0, 0);
            mv_report(&q, "gather", (size_t)large * (size_t)size);
        }
    /* message scope (the same bound for a compress-once algorithm; cprp2p:
     * one bound per hop) */
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            run m = mv_run_make(t, types[ti], modes[mi], mi ? 1e-3 : ebs[mi], ZMPI_SCOPE_MESSAGE, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, m.mode, m.eb, m.scope, 0, 4096);
            one(&m, 1, 5000, ti ? 0 : size - 1, ti, 0);
            run q = mv_run_make(t, m.type, m.mode, ebs[mi], m.scope, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, q.mode, q.eb, q.scope, 0, 4096);
            one(&q, 0, large, ti == 0 ? size - 1 : 0, 0, 0);
            mv_report(&q, "gather", (size_t)large * (size_t)size);
        }
    run r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-12, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 0, 5000, 0, 0, 1);
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-9, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 1, 3000, size - 1, 0, 1);
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_ABS, 1e-4, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, r.mode, r.eb, r.scope, 65536, 4096);
    one(&r, 1, 7000, 0, 0, 0); /* v with the default threshold: small blocks uncompressed */
}

/* Every root with every algorithm (the sweep uses roots 0, N/2 and N-1):
 * one Gather (float, ABS; in place at odd roots) and one Gatherv (double,
 * REL, uneven blocks with zeros and gaps) each, small. */
static void every_root(mt_state *t, int algo, const char *aname)
{
    for (int root = 0; root < t->size; root++) {
        run r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 0, 2000, root, root % 2, 0);
        r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 1, 500, root, 0, 0);
    }
}

/* The root sends its own block as a derived datatype of floats. */
static void derived_root_sendtype(mt_state *t)
{
    int size = t->size, root = 0, n = 4000;
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_FLOAT, &four);
    MPI_Type_commit(&four);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, 0,
              4096);
    size_t total = (size_t)n * (size_t)size;
    float *send = malloc((size_t)n * 4), *got = malloc(total * 4), *ref = malloc(total * 4);
    mt_fill_field(send, (size_t)n, MPI_FLOAT, (size_t)t->rank + 20);
    MPI_Gather(send, n, MPI_FLOAT, ref, n, MPI_FLOAT, root, MPI_COMM_WORLD);
    mv_fill_garbage(got, total, MPI_FLOAT);
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc = t->rank == root ? ZMPI_Gather(send, n / 4, four, got, n, MPI_FLOAT, root, MPI_COMM_WORLD)
                             : ZMPI_Gather(send, n, MPI_FLOAT, NULL, 0, MPI_FLOAT, root, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    MT_CHECK(t, rc == MPI_SUCCESS, "gather derived root sendtype: rc %d", rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "gather derived root sendtype: not compressed");
    if (t->rank == root) {
        mv_check(t, "gather derived root sendtype (own)", got, ref, (size_t)n, MPI_FLOAT, 0.0, NULL);
        mv_check(t, "gather derived root sendtype", got + n, ref + n, total - (size_t)n, MPI_FLOAT, 1e-2,
                 NULL);
    }
    MPI_Type_free(&four);
    free(send);
    free(got);
    free(ref);
}

static void fallbacks(mt_state *t)
{
    int size = t->size, root = size - 1, n = 3000;
    size_t total = (size_t)n * (size_t)size;
    char *send = malloc((size_t)n * 8), *a = malloc(total * 8), *b = malloc(total * 8);
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_FLOAT, &two);
    MPI_Type_commit(&two);
    for (int k = 0; k < 5; k++) {
        MPI_Datatype type = k == 0 ? MPI_INT : k == 1 ? two : MPI_DOUBLE;
        if (k < 2)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        else if (k == 2)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, (size_t)n * 8 + 1, 4096);
        else if (k == 3)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_NONE, 0, ZMPI_SCOPE_RESULT,
                      0, 4096);
        else
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_GATHER, ZMPI_ALGO_MPI, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT,
                      0, 4096);
        mt_fill_field(send, (size_t)n, MPI_DOUBLE, (size_t)t->rank);
        memset(a, 0x5c, total * 8);
        memset(b, 0x5c, total * 8);
        ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
        ZMPI_Gather(send, n, type, a, n, type, root, MPI_COMM_WORLD);
        ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
        MPI_Gather(send, n, type, b, n, type, root, MPI_COMM_WORLD);
        mv_same(t, "gather fallback", a, b, total * 8);
        MT_CHECK(t, s1.compressed == s0.compressed, "gather fallback %d ran compressed", k);
        unsigned long long d = k < 2    ? s1.fallback_type - s0.fallback_type
                               : k == 2 ? s1.fallback_small - s0.fallback_small
                                        : s1.fallback_config - s0.fallback_config;
        MT_CHECK(t, d == 1, "gather fallback %d not counted", k);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_GATHER, ZMPI_ALGO_MPI, "gather fallback");
        if (k == 2)
            continue; /* Gatherv compresses regardless of min_bytes */
        int *counts = malloc((size_t)size * sizeof(int)), *displs = malloc((size_t)size * sizeof(int));
        for (int i = 0; i < size; i++) {
            counts[i] = i % 2 ? n / 3 : n;
            displs[i] = (size - 1 - i) * n;
        }
        memset(a, 0x5c, total * 8);
        memset(b, 0x5c, total * 8);
        ZMPI_Gatherv(send, counts[t->rank], type, a, counts, displs, type, root, MPI_COMM_WORLD);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_GATHER, ZMPI_ALGO_MPI, "gatherv fallback");
        MPI_Gatherv(send, counts[t->rank], type, b, counts, displs, type, root, MPI_COMM_WORLD);
        mv_same(t, "gatherv fallback", a, b, total * 8);
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
    mt_init(&t, &argc, &argv, "test_gather");
    int ids[MAXALGO];
    const char *names[MAXALGO];
    int n = ZMPI_Coll_algorithms(ZMPI_COLL_GATHER, MAXALGO, ids, names, NULL);
    MT_CHECK(&t, n >= 1, "gather has %d algorithms", n);
    MT_CHECK(&t, ZMPI_Coll_algorithm_from_name(ZMPI_COLL_GATHER, "cprp2p") > 0,
             "gather: no cprp2p algorithm");
    for (int a = 0; a < n && a < MAXALGO; a++) {
        sweep(&t, ids[a], names[a]);
        every_root(&t, ids[a], names[a]);
    }
    derived_root_sendtype(&t);
    fallbacks(&t);
    return mt_finish(&t);
}
