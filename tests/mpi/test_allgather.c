/*
 * ZMPI_Allgather and ZMPI_Allgatherv: every algorithm, float and double, ABS
 * and REL, blocks of 0, 1, a few, an odd number and many elements (>= 1 Mi
 * in all, a real field with per-rank offsets), uneven blocks with zeros and
 * gaps (v), MPI_IN_PLACE, a derived sendtype; every element checked against
 * plain MPI and the bound (ring: one compression of the owner's block, the
 * own block exact; cprp2p: result scope <= eb, message scope <= (N-1) hops);
 * fallbacks byte-identical; white noise; double/REL for every algorithm;
 * statistics prove the compressed path ran, and last_algorithm that the
 * configured algorithm ran (rdb: the ring where N is not a power of two;
 * plain MPI for the fallbacks).
 */
#include "movement_util.h"

#define MAXALGO 8

typedef mv_run run;

typedef struct layout {
    int *counts, *displs;
    size_t total;
} layout;

static layout make_layout(int size, int kind, int base)
{
    layout l;
    l.counts = calloc((size_t)size, sizeof(int));
    l.displs = calloc((size_t)size, sizeof(int));
    size_t pos = 0;
    for (int i = 0; i < size; i++) {
        if (kind == 0)
            l.counts[i] = base;
        else if (kind == 1) /* uneven with zeros */
            l.counts[i] = i % 3 == 1 ? 0 : base + 41 * i;
        else /* fewer elements than ranks */
            l.counts[i] = i == 0 || i == size - 2 ? 1 : 0;
    }
    for (int k = 0; k < size; k++) { /* v: reverse order with gaps */
        int i = kind == 0 ? k : size - 1 - k;
        l.displs[i] = (int)pos;
        pos += (size_t)l.counts[i] + (kind == 0 ? 0 : 2);
    }
    l.total = pos;
    return l;
}

static void one(run *r, int kind, int base, int in_place, int noise)
{
    mt_state *t = r->t;
    int size = t->size, rank = t->rank, cpr = !strcmp(r->aname, "cprp2p");
    size_t es = mv_es(r->type);
    layout l = make_layout(size, kind, base);
    size_t mine = (size_t)l.counts[rank];
    char *send = malloc(mine * es + 8), *orig = malloc(mine * es + 8);
    char *got = malloc(l.total * es + 8), *ref = malloc(l.total * es + 8);
    if (noise)
        mv_fill_noise(orig, mine, r->type, 31 + (uint64_t)rank);
    else
        mt_fill_field(orig, mine, r->type, (size_t)rank + 1);
    memcpy(send, orig, mine * es);
    mv_fill_garbage(got, l.total, r->type);
    mv_fill_garbage(ref, l.total, r->type);
    if (kind == 0)
        MPI_Allgather(orig, base, r->type, ref, base, r->type, MPI_COMM_WORLD);
    else
        MPI_Allgatherv(orig, (int)mine, r->type, ref, l.counts, l.displs, r->type, MPI_COMM_WORLD);
    const void *sb = send;
    if (in_place) {
        memcpy(got + (size_t)l.displs[rank] * es, orig, mine * es);
        sb = MPI_IN_PLACE;
    }
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc;
    if (kind == 0)
        rc = ZMPI_Allgather(sb, base, r->type, got, base, r->type, MPI_COMM_WORLD);
    else
        rc = ZMPI_Allgatherv(sb, (int)mine, r->type, got, l.counts, l.displs, r->type, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    char what[200];
    snprintf(what, sizeof what, "allgather%s %s %s %s eb=%g scope=%d base=%d in_place=%d", kind ? "v" : "",
             r->aname, mv_tname(r->type), r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb, (int)r->scope, base,
             in_place);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "%s: compressed path did not run", what);
    mv_check_algo(r, ZMPI_COLL_ALLGATHER, what);
    mv_same(t, what, send, orig, mine * es);
    mv_account(r, &s0, &s1);
    double global = 0; /* range of all blocks (cprp2p, result scope, REL) */
    {
        double lo = INFINITY, hi = -INFINITY;
        for (int i = 0; i < size; i++)
            for (size_t e = 0; e < (size_t)l.counts[i]; e++) {
                double v = mt_get(ref + (size_t)l.displs[i] * es, e, r->type);
                if (isfinite(v)) {
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
            }
        global = hi >= lo ? hi - lo : 0;
    }
    for (int i = 0; i < size; i++) {
        size_t n = (size_t)l.counts[i], at = (size_t)l.displs[i] * es;
        double bound = mv_bound(r->mode, r->eb, ref + at, n, r->type), k = 1, w = 0;
        if (cpr && r->scope == ZMPI_SCOPE_RESULT && r->mode == ZMPI_EB_REL)
            bound = r->eb * global;
        if (cpr && r->scope == ZMPI_SCOPE_MESSAGE && size > 2) /* error per hop */
            k = r->mode == ZMPI_EB_ABS ? size - 1 : (size - 1) * pow(1 + 2 * r->eb, size - 1);
        if (i == rank)
            bound = 0.0; /* the own block is copied, never decompressed */
        mv_check(t, what, got + at, ref + at, n, r->type, bound * k, &w);
        r->worst = w * k > r->worst ? w * k : r->worst; /* reported against the user's bound */
    }
    for (size_t e = 0; kind != 0 && e < l.total; e++) { /* gaps untouched */
        int in_block = 0;
        for (int i = 0; i < size && !in_block; i++)
            in_block = e >= (size_t)l.displs[i] && e < (size_t)l.displs[i] + (size_t)l.counts[i];
        if (!in_block)
            MT_CHECK(t, !memcmp(got + e * es, ref + e * es, es), "%s: gap element %zu written", what, e);
    }
    free(send);
    free(orig);
    free(got);
    free(ref);
    free(l.counts);
    free(l.displs);
}

static void sweep(mt_state *t, int algo, const char *aname, int first)
{
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    const zmpi_eb_mode modes[2] = {ZMPI_EB_ABS, ZMPI_EB_REL};
    const double ebs[2] = {1e-3, 1e-4};
    int size = t->size, large = (1 << 20) / size + 1;
    int bases[] = {0, 1, 12345};
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            if (!first && ti == mi)
                continue; /* slow on 2 cores: all four for the default algorithm, float/REL and double/ABS
                           * for the others */
            run r = mv_run_make(t, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
            for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++)
                one(&r, 0, bases[bi], bi == 2, 0);
            one(&r, 1, 1000, 0, 0);
            one(&r, 1, 1000, 1, 0);
            one(&r, 2, 0, 0, 0);
            run q = mv_run_make(t, r.type, r.mode, r.eb, r.scope, aname);
            one(&q, 0, large, ti == 1, 0);
            mv_report(&q, "allgather", (size_t)large * (size_t)size);
        }
    if (!first) {
        /* double/REL for the other algorithms too: blocks of 1, an odd number
         * (in place), uneven v blocks, fewer elements than ranks, and 2^18 in all */
        run r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 0, 1, 0, 0);
        one(&r, 0, 12345, 1, 0);
        one(&r, 1, 1000, 0, 0);
        one(&r, 2, 0, 0, 0);
        one(&r, 0, (1 << 18) / size + 1, 0, 0);
        mv_report(&r, "allgather", 0);
    }
    for (int mi = 0; mi < 2; mi++) { /* message scope: cprp2p's error grows per hop */
        run r = mv_run_make(t, MPI_FLOAT, modes[mi], ebs[mi], ZMPI_SCOPE_MESSAGE, aname);
        mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
        one(&r, 1, 5000, 0, 0);
        mv_report(&r, "allgather", 0);
    }
    run r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-12, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 0, 5000, 0, 1);
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-9, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 1, 3000, 1, 1);
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_ABS, 1e-4, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, algo, r.mode, r.eb, r.scope, 65536, 4096);
    one(&r, 1, 7000, 0, 0); /* v with the default threshold: small blocks uncompressed */
}

/* A derived sendtype (4 floats) on odd ranks: still compressed (recvtype
 * decides), the own block converted exactly. */
static void derived_sendtype(mt_state *t)
{
    int size = t->size, n = 4000;
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_FLOAT, &four);
    MPI_Type_commit(&four);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, 0,
              4096);
    size_t total = (size_t)n * (size_t)size;
    float *send = malloc((size_t)n * 4), *got = malloc(total * 4), *ref = malloc(total * 4);
    mt_fill_field(send, (size_t)n, MPI_FLOAT, (size_t)t->rank + 40);
    MPI_Allgather(send, n, MPI_FLOAT, ref, n, MPI_FLOAT, MPI_COMM_WORLD);
    mv_fill_garbage(got, total, MPI_FLOAT);
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc = t->rank % 2 ? ZMPI_Allgather(send, n / 4, four, got, n, MPI_FLOAT, MPI_COMM_WORLD)
                         : ZMPI_Allgather(send, n, MPI_FLOAT, got, n, MPI_FLOAT, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    MT_CHECK(t, rc == MPI_SUCCESS, "allgather derived sendtype: rc %d", rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "allgather derived sendtype: not compressed");
    for (int i = 0; i < size; i++)
        mv_check(t, "allgather derived sendtype", got + (size_t)i * (size_t)n, ref + (size_t)i * (size_t)n,
                 (size_t)n, MPI_FLOAT, i == t->rank ? 0.0 : 1e-2, NULL);
    MPI_Type_free(&four);
    free(send);
    free(got);
    free(ref);
}

static void fallbacks(mt_state *t)
{
    int size = t->size, n = 3000;
    size_t total = (size_t)n * (size_t)size;
    char *send = malloc((size_t)n * 8), *a = malloc(total * 8), *b = malloc(total * 8);
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_FLOAT, &two);
    MPI_Type_commit(&two);
    for (int k = 0; k < 5; k++) {
        MPI_Datatype type = k == 0 ? MPI_INT : k == 1 ? two : MPI_DOUBLE;
        if (k < 2)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        else if (k == 2)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, (size_t)n * 8 + 1, 4096);
        else if (k == 3)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, ZMPI_ALGO_DEFAULT, ZMPI_EB_NONE, 0,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        else
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, ZMPI_ALGO_MPI, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        mt_fill_field(send, (size_t)n, MPI_DOUBLE, (size_t)t->rank);
        memset(a, 0x5c, total * 8);
        memset(b, 0x5c, total * 8);
        ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
        ZMPI_Allgather(send, n, type, a, n, type, MPI_COMM_WORLD);
        ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
        MPI_Allgather(send, n, type, b, n, type, MPI_COMM_WORLD);
        mv_same(t, "allgather fallback", a, b, total * 8);
        MT_CHECK(t, s1.compressed == s0.compressed, "allgather fallback %d ran compressed", k);
        unsigned long long d = k < 2    ? s1.fallback_type - s0.fallback_type
                               : k == 2 ? s1.fallback_small - s0.fallback_small
                                        : s1.fallback_config - s0.fallback_config;
        MT_CHECK(t, d == 1, "allgather fallback %d not counted", k);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, ZMPI_ALGO_MPI, "allgather fallback");
        if (k == 2)
            continue;
        int *counts = malloc((size_t)size * sizeof(int)), *displs = malloc((size_t)size * sizeof(int));
        for (int i = 0; i < size; i++) {
            counts[i] = i % 2 ? n / 3 : n;
            displs[i] = (size - 1 - i) * n;
        }
        memset(a, 0x5c, total * 8);
        memset(b, 0x5c, total * 8);
        ZMPI_Allgatherv(send, counts[t->rank], type, a, counts, displs, type, MPI_COMM_WORLD);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_ALLGATHER, ZMPI_ALGO_MPI, "allgatherv fallback");
        MPI_Allgatherv(send, counts[t->rank], type, b, counts, displs, type, MPI_COMM_WORLD);
        mv_same(t, "allgatherv fallback", a, b, total * 8);
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
    mt_init(&t, &argc, &argv, "test_allgather");
    int ids[MAXALGO];
    const char *names[MAXALGO];
    int n = ZMPI_Coll_algorithms(ZMPI_COLL_ALLGATHER, MAXALGO, ids, names, NULL);
    MT_CHECK(&t, n >= 2, "allgather has %d algorithms", n);
    for (int a = 0; a < n && a < MAXALGO; a++)
        sweep(&t, ids[a], names[a], a == 0);
    derived_sendtype(&t);
    fallbacks(&t);
    return mt_finish(&t);
}
