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
#include "movement.h"

/* Allgather (counts NULL) or Allgatherv, ZMPI's or MPI's. */
static int allgather(int zmpi, const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                     MPI_Datatype rtype, const int *counts, const int *displs, int root)
{
    (void)root;
    if (!counts)
        return zmpi ? ZMPI_Allgather(send, scount, stype, recv, rcount, rtype, MPI_COMM_WORLD)
                    : MPI_Allgather(send, scount, stype, recv, rcount, rtype, MPI_COMM_WORLD);
    return zmpi ? ZMPI_Allgatherv(send, scount, stype, recv, counts, displs, rtype, MPI_COMM_WORLD)
                : MPI_Allgatherv(send, scount, stype, recv, counts, displs, rtype, MPI_COMM_WORLD);
}

/* Elements of the block of rank i: kind 0 (Allgather) base; 1 uneven with
 * zeros; 2 fewer elements than ranks. */
static int count_of(int kind, int base, int i, int unused, int size)
{
    (void)unused;
    if (kind == 0)
        return base;
    if (kind == 1)
        return i % 3 == 1 ? 0 : base + 41 * i;
    return i == 0 || i == size - 2 ? 1 : 0;
}

static void one(mv_run *r, int kind, int base, int root, int in_place, int noise)
{
    (void)root;
    mt_state *t = r->t;
    int size = t->size, rank = t->rank;
    size_t es = mv_es(r->type);
    mv_layout l = mv_layout_make(count_of, kind, base, rank, size, 0, 2); /* v: reverse order, gaps */
    size_t mine = (size_t)l.counts[rank];
    mv_bufs b = mv_bufs_make(r, mine, l.total, noise, 31 + (uint64_t)rank, (size_t)rank + 1);
    char *send = b.send, *orig = b.orig, *got = b.got, *ref = b.ref;
    if (kind == 0)
        MPI_Allgather(orig, base, r->type, ref, base, r->type, MPI_COMM_WORLD);
    else
        MPI_Allgatherv(orig, (int)mine, r->type, ref, l.counts, l.displs, r->type, MPI_COMM_WORLD);
    const void *sb = send;
    if (in_place) {
        memcpy(got + (size_t)l.displs[rank] * es, orig, mine * es);
        sb = MPI_IN_PLACE;
    }
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int rc;
    if (kind == 0)
        rc = ZMPI_Allgather(sb, base, r->type, got, base, r->type, MPI_COMM_WORLD);
    else
        rc = ZMPI_Allgatherv(sb, (int)mine, r->type, got, l.counts, l.displs, r->type, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    char what[200], desc[120];
    mv_describe(r, kind ? "allgatherv" : "allgather", desc, sizeof desc);
    snprintf(what, sizeof what, "%s scope=%d base=%d in_place=%d", desc, (int)r->scope, base, in_place);
    mv_check_call(r, what, rc, &s0, &s1);
    mv_same(t, what, send, orig, mine * es);
    mv_account(r, &s0, &s1);
    double global = mv_layout_range(&l, ref, r->type); /* cprp2p, result scope, REL */
    for (int i = 0; i < size; i++) { /* cprp2p, message scope: N-1 hops */
        size_t at = (size_t)l.displs[i] * es;
        mv_check_block(r, what, got + at, ref + at, (size_t)l.counts[i], global, size - 1, i == rank);
    }
    if (kind != 0)
        mv_check_gaps(t, what, got, ref, &l, r->type);
    mv_bufs_free(&b);
    mv_layout_free(&l);
}

static void sweep(mt_state *t, int algo, const char *aname, int first)
{
    const ZMPI_Coll c = ZMPI_COLL_ALLGATHER;
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
            mv_run r = mv_series(t, c, algo, aname, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, 0);
            for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++)
                one(&r, 0, bases[bi], MV_NO_ROOT, bi == 2, 0);
            one(&r, 1, 1000, MV_NO_ROOT, 0, 0);
            one(&r, 1, 1000, MV_NO_ROOT, 1, 0);
            one(&r, 2, 0, MV_NO_ROOT, 0, 0);
            mv_run q = mv_run_make(t, c, r.type, r.mode, r.eb, r.scope, aname);
            one(&q, 0, large, MV_NO_ROOT, ti == 1, 0);
            mv_report(&q, "allgather", (size_t)large * (size_t)size);
        }
    if (!first) {
        /* double/REL for the other algorithms too: blocks of 1, an odd number
         * (in place), uneven v blocks, fewer elements than ranks, and 2^18 in all */
        mv_run r = mv_series(t, c, algo, aname, MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, 0);
        one(&r, 0, 1, MV_NO_ROOT, 0, 0);
        one(&r, 0, 12345, MV_NO_ROOT, 1, 0);
        one(&r, 1, 1000, MV_NO_ROOT, 0, 0);
        one(&r, 2, 0, MV_NO_ROOT, 0, 0);
        one(&r, 0, (1 << 18) / size + 1, MV_NO_ROOT, 0, 0);
        mv_report(&r, "allgather", 0);
    }
    for (int mi = 0; mi < 2; mi++) { /* message scope: cprp2p's error grows per hop */
        mv_run r = mv_series(t, c, algo, aname, MPI_FLOAT, modes[mi], ebs[mi], ZMPI_SCOPE_MESSAGE, 0);
        one(&r, 1, 5000, MV_NO_ROOT, 0, 0);
        mv_report(&r, "allgather", 0);
    }
    mv_hostile(t, c, algo, aname, one, 5000, 1, 3000, 1);
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_allgather");
    int ids[MV_MAXALGO];
    const char *names[MV_MAXALGO];
    int n = mv_algorithms(&t, ZMPI_COLL_ALLGATHER, 2, ids, names);
    for (int a = 0; a < n; a++)
        sweep(&t, ids[a], names[a], a == 0);
    /* a derived sendtype (4 floats) on odd ranks: still compressed (recvtype
     * decides), the own block converted exactly */
    mv_derived_sendtype(&t, ZMPI_COLL_ALLGATHER, allgather, 4000, 4000, (size_t)t.rank + 40);
    /* Allgatherv: every other block a third, in reverse order */
    mv_fallback_case f = {.coll = ZMPI_COLL_ALLGATHER, .call = allgather, .n = 3000, .send_elems = 3000,
                          .out_elems = (size_t)3000 * (size_t)t.size, .fill_offset = (size_t)t.rank,
                          .v_div = 3, .v_reversed = 1};
    mv_fallbacks(&t, &f);
    return mt_finish(&t);
}
