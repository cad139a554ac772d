/*
 * ZMPI_Alltoall and ZMPI_Alltoallv: every algorithm, float and double, ABS
 * and REL, blocks of 0, 1, a few, an odd number and many elements (>= 1 Mi
 * in all, a real field with per-block offsets), uneven blocks with zeros and
 * gaps (v), MPI_IN_PLACE (symmetric counts for v), a derived sendtype; every
 * element checked against plain MPI and the bound of its block (the block a
 * rank sends itself exact); fallbacks byte-identical; white noise;
 * statistics prove the compressed path ran, and last_algorithm that the
 * configured algorithm ran (plain MPI for the fallbacks).
 */
#include "movement_util.h"

#define MAXALGO 8

typedef mv_run run;

/* Elements rank i sends to rank j. kind 0: base; 1: uneven with zeros;
 * 2: symmetric uneven with zeros (for MPI_IN_PLACE); 3: fewer than ranks. */
static int count_of(int kind, int base, int i, int j, int size)
{
    if (kind == 0)
        return base;
    if (kind == 1)
        return (i + 2 * j) % 3 == 0 ? 0 : base + 13 * i + 7 * j;
    if (kind == 2)
        return (i + j) % 3 == 0 ? 0 : base + 5 * (i + j);
    return (i + j) == size - 1 ? 1 : 0;
}

typedef struct layout {
    int *counts, *displs;
    size_t total;
} layout;

/* send side (to = 1: counts[j] = what rank sends to j) or receive side */
static layout make_layout(int kind, int base, int rank, int size, int to)
{
    layout l;
    l.counts = calloc((size_t)size, sizeof(int));
    l.displs = calloc((size_t)size, sizeof(int));
    size_t pos = 0;
    for (int j = 0; j < size; j++)
        l.counts[j] = to ? count_of(kind, base, rank, j, size) : count_of(kind, base, j, rank, size);
    for (int k = 0; k < size; k++) {
        int j = kind == 0 ? k : size - 1 - k;
        l.displs[j] = (int)pos;
        pos += (size_t)l.counts[j] + (kind == 0 ? 0 : 2);
    }
    l.total = pos;
    return l;
}

static void one(run *r, int kind, int base, int in_place, int noise)
{
    mt_state *t = r->t;
    int size = t->size, rank = t->rank;
    size_t es = mv_es(r->type);
    layout ls = make_layout(kind, base, rank, size, 1), lr = make_layout(kind, base, rank, size, 0);
    char *send = malloc(ls.total * es + 8), *orig = malloc(ls.total * es + 8);
    char *got = malloc(lr.total * es + 8), *ref = malloc(lr.total * es + 8);
    mv_fill_garbage(orig, ls.total, r->type);
    for (int j = 0; j < size; j++) { /* each block its own piece of the field */
        char *b = orig + (size_t)ls.displs[j] * es;
        if (noise)
            mv_fill_noise(b, (size_t)ls.counts[j], r->type, 100 + (uint64_t)(rank * size + j));
        else
            mt_fill_field(b, (size_t)ls.counts[j], r->type, (size_t)(rank * size + j) + 1);
    }
    memcpy(send, orig, ls.total * es);
    mv_fill_garbage(got, lr.total, r->type);
    mv_fill_garbage(ref, lr.total, r->type);
    if (kind == 0)
        MPI_Alltoall(orig, base, r->type, ref, base, r->type, MPI_COMM_WORLD);
    else
        MPI_Alltoallv(orig, ls.counts, ls.displs, r->type, ref, lr.counts, lr.displs, r->type,
                      MPI_COMM_WORLD);
    const void *sb = send;
    if (in_place) { /* symmetric counts: the send layout is the receive layout */
        memcpy(got, orig, lr.total * es);
        sb = MPI_IN_PLACE;
    }
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc;
    if (kind == 0)
        rc = ZMPI_Alltoall(sb, base, r->type, got, base, r->type, MPI_COMM_WORLD);
    else
        rc = ZMPI_Alltoallv(sb, ls.counts, ls.displs, r->type, got, lr.counts, lr.displs, r->type,
                            MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    char what[200];
    snprintf(what, sizeof what, "alltoall%s %s %s %s eb=%g base=%d in_place=%d", kind ? "v" : "", r->aname,
             mv_tname(r->type), r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb, base, in_place);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "%s: compressed path did not run", what);
    mv_check_algo(r, ZMPI_COLL_ALLTOALL, what);
    mv_same(t, what, send, orig, ls.total * es);
    mv_account(r, &s0, &s1);
    for (int i = 0; i < size; i++) {
        size_t n = (size_t)lr.counts[i], at = (size_t)lr.displs[i] * es;
        double bound = i == rank ? 0.0 : mv_bound(r->mode, r->eb, ref + at, n, r->type);
        mv_check(t, what, got + at, ref + at, n, r->type, bound, &r->worst);
    }
    for (size_t e = 0; kind != 0 && e < lr.total; e++) { /* gaps untouched */
        int in_block = 0;
        for (int i = 0; i < size && !in_block; i++)
            in_block = e >= (size_t)lr.displs[i] && e < (size_t)lr.displs[i] + (size_t)lr.counts[i];
        if (!in_block && !in_place)
            MT_CHECK(t, !memcmp(got + e * es, ref + e * es, es), "%s: gap element %zu written", what, e);
    }
    free(send);
    free(orig);
    free(got);
    free(ref);
    free(ls.counts);
    free(ls.displs);
    free(lr.counts);
    free(lr.displs);
}

static void sweep(mt_state *t, int algo, const char *aname)
{
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    const zmpi_eb_mode modes[2] = {ZMPI_EB_ABS, ZMPI_EB_REL};
    const double ebs[2] = {1e-3, 1e-4};
    int size = t->size, large = (1 << 20) / (size * size) + 1;
    int bases[] = {0, 1, 3, 1235};
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            run r = mv_run_make(t, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, aname);
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, algo, r.mode, r.eb, r.scope, 0, 4096);
            for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++)
                one(&r, 0, bases[bi], bi == 3, 0);
            one(&r, 1, 700, 0, 0);
            one(&r, 2, 700, 1, 0);
            one(&r, 3, 0, 0, 0);
            run q = mv_run_make(t, r.type, r.mode, r.eb, r.scope, aname);
            one(&q, 0, large, ti == 1, 0);
            mv_report(&q, "alltoall", (size_t)large * (size_t)size * (size_t)size);
        }
    run r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_MESSAGE, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 1, 2000, 0, 0);
    r = mv_run_make(t, MPI_FLOAT, ZMPI_EB_ABS, 1e-12, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 0, 2000, 0, 1);
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_REL, 1e-9, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, algo, r.mode, r.eb, r.scope, 0, 4096);
    one(&r, 2, 1000, 1, 1);
    r = mv_run_make(t, MPI_DOUBLE, ZMPI_EB_ABS, 1e-4, ZMPI_SCOPE_RESULT, aname);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, algo, r.mode, r.eb, r.scope, 65536, 4096);
    one(&r, 1, 7000, 0, 0); /* v with the default threshold: small blocks uncompressed */
}

/* A derived sendtype (4 floats) on odd ranks: still compressed (recvtype
 * decides); the send blocks are converted exactly first. */
static void derived_sendtype(mt_state *t)
{
    int size = t->size, n = 2000;
    MPI_Datatype four;
    MPI_Type_contiguous(4, MPI_FLOAT, &four);
    MPI_Type_commit(&four);
    mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, ZMPI_ALGO_DEFAULT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, 0,
              4096);
    size_t total = (size_t)n * (size_t)size;
    float *send = malloc(total * 4), *got = malloc(total * 4), *ref = malloc(total * 4);
    mt_fill_field(send, total, MPI_FLOAT, (size_t)t->rank + 60);
    MPI_Alltoall(send, n, MPI_FLOAT, ref, n, MPI_FLOAT, MPI_COMM_WORLD);
    mv_fill_garbage(got, total, MPI_FLOAT);
    ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
    int rc = t->rank % 2 ? ZMPI_Alltoall(send, n / 4, four, got, n, MPI_FLOAT, MPI_COMM_WORLD)
                         : ZMPI_Alltoall(send, n, MPI_FLOAT, got, n, MPI_FLOAT, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
    MT_CHECK(t, rc == MPI_SUCCESS, "alltoall derived sendtype: rc %d", rc);
    MT_CHECK(t, s1.compressed == s0.compressed + (size > 1), "alltoall derived sendtype: not compressed");
    for (int i = 0; i < size; i++)
        mv_check(t, "alltoall derived sendtype", got + (size_t)i * (size_t)n, ref + (size_t)i * (size_t)n,
                 (size_t)n, MPI_FLOAT, i == t->rank ? 0.0 : 1e-2, NULL);
    MPI_Type_free(&four);
    free(send);
    free(got);
    free(ref);
}

static void fallbacks(mt_state *t)
{
    int size = t->size, n = 1500;
    size_t total = (size_t)n * (size_t)size;
    char *send = malloc(total * 8), *a = malloc(total * 8), *b = malloc(total * 8);
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_FLOAT, &two);
    MPI_Type_commit(&two);
    for (int k = 0; k < 5; k++) {
        MPI_Datatype type = k == 0 ? MPI_INT : k == 1 ? two : MPI_DOUBLE;
        if (k < 2)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        else if (k == 2)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, ZMPI_ALGO_DEFAULT, ZMPI_EB_REL, 1e-3,
                      ZMPI_SCOPE_RESULT, (size_t)n * 8 + 1, 4096);
        else if (k == 3)
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, ZMPI_ALGO_DEFAULT, ZMPI_EB_NONE, 0,
                      ZMPI_SCOPE_RESULT, 0, 4096);
        else
            mv_config(MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, ZMPI_ALGO_MPI, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_RESULT,
                      0, 4096);
        mt_fill_field(send, total, MPI_DOUBLE, (size_t)t->rank);
        memset(a, 0x5c, total * 8);
        memset(b, 0x5c, total * 8);
        ZMPI_Stats s0 = mv_stats(MPI_COMM_WORLD);
        ZMPI_Alltoall(send, n, type, a, n, type, MPI_COMM_WORLD);
        ZMPI_Stats s1 = mv_stats(MPI_COMM_WORLD);
        MPI_Alltoall(send, n, type, b, n, type, MPI_COMM_WORLD);
        mv_same(t, "alltoall fallback", a, b, total * 8);
        MT_CHECK(t, s1.compressed == s0.compressed, "alltoall fallback %d ran compressed", k);
        unsigned long long d = k < 2    ? s1.fallback_type - s0.fallback_type
                               : k == 2 ? s1.fallback_small - s0.fallback_small
                                        : s1.fallback_config - s0.fallback_config;
        MT_CHECK(t, d == 1, "alltoall fallback %d not counted", k);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, ZMPI_ALGO_MPI, "alltoall fallback");
        if (k == 2)
            continue;
        int *c = malloc((size_t)size * sizeof(int)), *d0 = malloc((size_t)size * sizeof(int));
        for (int j = 0; j < size; j++) { /* symmetric: what i sends j = what j expects from i */
            c[j] = (t->rank + j) % 2 ? n / 3 : n;
            d0[j] = (size - 1 - j) * n;
        }
        memset(a, 0x5c, total * 8);
        memset(b, 0x5c, total * 8);
        ZMPI_Alltoallv(send, c, d0, type, a, c, d0, type, MPI_COMM_WORLD);
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, ZMPI_ALGO_MPI, "alltoallv fallback");
        MPI_Alltoallv(send, c, d0, type, b, c, d0, type, MPI_COMM_WORLD);
        mv_same(t, "alltoallv fallback", a, b, total * 8);
        free(c);
        free(d0);
    }
    MPI_Type_free(&two);
    free(send);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_alltoall");
    int ids[MAXALGO];
    const char *names[MAXALGO];
    int n = ZMPI_Coll_algorithms(ZMPI_COLL_ALLTOALL, MAXALGO, ids, names, NULL);
    MT_CHECK(&t, n >= 1, "alltoall has %d algorithms", n);
    for (int a = 0; a < n && a < MAXALGO; a++)
        sweep(&t, ids[a], names[a]);
    derived_sendtype(&t);
    fallbacks(&t);
    return mt_finish(&t);
}
