/*
 * ZMPI_Alltoall and ZMPI_Alltoallv: every algorithm, float and double, ABS
 * and REL, blocks of 0, 1, a few, an odd number and many elements (>= 1 Mi
 * in all, a real field with per-block offsets), uneven blocks with zeros and
 * gaps (v), MPI_IN_PLACE (symmetric counts for v), a derived sendtype; every
 * element checked against plain MPI and the bound of its block (the block a
 * rank sends itself exact); fallbacks byte-identical; white noise;
 * statistics prove the compressed path ran, and last_algorithm that the
 * configured algorithm ran (plain MPI for the fallbacks). Raw blocks of
 * Alltoallv (below ZMPI_MIN_BYTES, or not worth compressing on the
 * configured network): byte-identical to MPI, no stream sent, mixed with
 * compressed blocks in one call, in place, and across the inter-step
 * channels of a lossless codec.
 */
#include "movement.h"

/* Alltoall (counts NULL) or Alltoallv (the same counts on both sides),
 * ZMPI's or MPI's. */
static int alltoall(int zmpi, const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                    MPI_Datatype rtype, const int *counts, const int *displs, int root)
{
    (void)root;
    if (!counts)
        return zmpi ? ZMPI_Alltoall(send, scount, stype, recv, rcount, rtype, MPI_COMM_WORLD)
                    : MPI_Alltoall(send, scount, stype, recv, rcount, rtype, MPI_COMM_WORLD);
    return zmpi ? ZMPI_Alltoallv(send, counts, displs, stype, recv, counts, displs, rtype, MPI_COMM_WORLD)
                : MPI_Alltoallv(send, counts, displs, stype, recv, counts, displs, rtype, MPI_COMM_WORLD);
}

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

static void one(mv_run *r, int kind, int base, int root, int in_place, int noise)
{
    (void)root;
    mt_state *t = r->t;
    int size = t->size, rank = t->rank;
    size_t es = mv_es(r->type);
    /* the send and the receive side; v: reverse order with gaps */
    mv_layout ls = mv_layout_make(count_of, kind, base, rank, size, 1, 2);
    mv_layout lr = mv_layout_make(count_of, kind, base, rank, size, 0, 2);
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
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int rc;
    if (kind == 0)
        rc = ZMPI_Alltoall(sb, base, r->type, got, base, r->type, MPI_COMM_WORLD);
    else
        rc = ZMPI_Alltoallv(sb, ls.counts, ls.displs, r->type, got, lr.counts, lr.displs, r->type,
                            MPI_COMM_WORLD);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    char what[200], desc[120];
    mv_describe(r, kind ? "alltoallv" : "alltoall", desc, sizeof desc);
    snprintf(what, sizeof what, "%s base=%d in_place=%d", desc, base, in_place);
    mv_check_call(r, what, rc, &s0, &s1);
    mv_same(t, what, send, orig, ls.total * es);
    mv_account(r, &s0, &s1);
    for (int i = 0; i < size; i++) { /* compressed once; the own block exact */
        size_t at = (size_t)lr.displs[i] * es;
        mv_check_block(r, what, got + at, ref + at, (size_t)lr.counts[i], -1.0, 0, i == rank);
    }
    if (kind != 0 && !in_place)
        mv_check_gaps(t, what, got, ref, &lr, r->type);
    free(send);
    free(orig);
    free(got);
    free(ref);
    mv_layout_free(&ls);
    mv_layout_free(&lr);
}

static void sweep(mt_state *t, int algo, const char *aname)
{
    const ZMPI_Coll c = ZMPI_COLL_ALLTOALL;
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    const zmpi_eb_mode modes[2] = {ZMPI_EB_ABS, ZMPI_EB_REL};
    const double ebs[2] = {1e-3, 1e-4};
    int size = t->size, large = (1 << 20) / (size * size) + 1;
    int bases[] = {0, 1, 3, 1235};
    for (int ti = 0; ti < 2; ti++)
        for (int mi = 0; mi < 2; mi++) {
            mv_run r = mv_series(t, c, algo, aname, types[ti], modes[mi], ebs[mi], ZMPI_SCOPE_RESULT, 0);
            for (size_t bi = 0; bi < sizeof bases / sizeof *bases; bi++)
                one(&r, 0, bases[bi], MV_NO_ROOT, bi == 3, 0);
            one(&r, 1, 700, MV_NO_ROOT, 0, 0);
            one(&r, 2, 700, MV_NO_ROOT, 1, 0);
            one(&r, 3, 0, MV_NO_ROOT, 0, 0);
            mv_run q = mv_run_make(t, c, r.type, r.mode, r.eb, r.scope, aname);
            one(&q, 0, large, MV_NO_ROOT, ti == 1, 0);
            mv_report(&q, "alltoall", (size_t)large * (size_t)size * (size_t)size);
        }
    mv_run r = mv_series(t, c, algo, aname, MPI_FLOAT, ZMPI_EB_REL, 1e-3, ZMPI_SCOPE_MESSAGE, 0);
    one(&r, 1, 2000, MV_NO_ROOT, 0, 0);
    mv_hostile(t, c, algo, aname, one, 2000, 2, 1000, 1);
}

/* Alltoallv with rank i sending big (compressed) or small blocks to j. */
static void raw_case(mt_state *t, const char *what, zmpi_codec codec, double net_bw, size_t min_bytes, int in_place,
                     int small, int big, uint64_t seed)
{
    int size = t->size, rank = t->rank;
    int lossy = codec == ZMPI_CODEC_FZL;
    mt_config(MPI_COMM_WORLD, codec, lossy ? ZMPI_EB_ABS : ZMPI_EB_NONE, lossy ? 1e-3 : 0.0, ZMPI_SCOPE_RESULT,
              min_bytes);
    MT_CHECK(t, mt_set_network(MPI_COMM_WORLD, net_bw, 1e-6) == MPI_SUCCESS, "%s: settings", what);
    int *sc = malloc((size_t)size * sizeof(int)), *rc = malloc((size_t)size * sizeof(int));
    int *sd = malloc((size_t)size * sizeof(int)), *rd = malloc((size_t)size * sizeof(int));
    size_t stot = 0, rtot = 0;
    for (int j = 0; j < size; j++) { /* symmetric in i, j, so in place works; block (i, j) big if i + j even */
        sc[j] = (rank + j) % 2 ? small : big;
        rc[j] = (j + rank) % 2 ? small : big;
        stot += (size_t)sc[j];
        rtot += (size_t)rc[j];
    }
    for (int j = 0, s = 0, r = 0; j < size; j++) { /* receive blocks in reverse order */
        sd[j] = s;
        s += sc[j];
        rd[size - 1 - j] = r;
        r += rc[size - 1 - j];
    }
    if (in_place)
        memcpy(rd, sd, (size_t)size * sizeof(int));
    float *send = malloc(stot * sizeof(float) + 4), *got = malloc(rtot * sizeof(float) + 4);
    float *ref = malloc(rtot * sizeof(float) + 4);
    mt_fill_field(send, stot, MPI_FLOAT, (size_t)(seed + (uint64_t)rank * 977));
    MPI_Alltoallv(send, sc, sd, MPI_FLOAT, ref, rc, rd, MPI_FLOAT, MPI_COMM_WORLD);
    if (in_place)
        memcpy(got, send, stot * sizeof(float));
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int e = ZMPI_Alltoallv(in_place ? MPI_IN_PLACE : send, sc, sd, MPI_FLOAT, got, rc, rd, MPI_FLOAT,
                           MPI_COMM_WORLD);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    MT_CHECK(t, e == MPI_SUCCESS, "%s: ZMPI_Alltoallv returned %d", what, e);
    if (size > 1)
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL,
                     ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLTOALL, "pairwise"), what);
    int any_stream = 0;
    for (int i = 0; i < size; i++) {
        size_t n = (size_t)rc[i];
        int raw = i == rank || n * sizeof(float) < min_bytes || (net_bw > 5e9 && codec == ZMPI_CODEC_FZL);
        const float *a = got + rd[i], *b = ref + rd[i];
        if (raw || !lossy) {
            MT_CHECK(t, memcmp(a, b, n * sizeof(float)) == 0, "%s: block from %d (%zu floats) not exact", what, i, n);
        } else {
            double worst = 0;
            for (size_t k = 0; k < n; k++)
                worst = fabs((double)a[k] - (double)b[k]) > worst ? fabs((double)a[k] - (double)b[k]) : worst;
            MT_CHECK(t, worst <= 1e-3, "%s: block from %d off by %g > 1e-3", what, i, worst);
            any_stream |= n > 0;
        }
    }
    unsigned long long sent = s1.bytes_sent - s0.bytes_sent;
    if (net_bw > 5e9 && codec == ZMPI_CODEC_FZL)
        MT_CHECK(t, sent == 0, "%s: %llu bytes of streams sent on a fast network", what, sent);
    else if (any_stream && size > 1)
        MT_CHECK(t, sent > 0, "%s: nothing compressed", what);
    free(sc);
    free(rc);
    free(sd);
    free(rd);
    free(send);
    free(got);
    free(ref);
}

static void raw_blocks(mt_state *t)
{
    /* 12.5 GB/s (100 Gb/s): compressing never pays, every block raw */
    raw_case(t, "raw: 100 Gb/s", ZMPI_CODEC_FZL, 12.5e9, 0, 0, 3000, 70000, 1);
    raw_case(t, "raw: 100 Gb/s in place", ZMPI_CODEC_FZL, 12.5e9, 0, 1, 3000, 70000, 2);
    /* 1 Gb/s: the blocks below ZMPI_MIN_BYTES raw, the others compressed */
    raw_case(t, "raw: below min_bytes", ZMPI_CODEC_FZL, 1.25e8, 40000, 0, 3000, 70000, 3);
    raw_case(t, "raw: below min_bytes in place", ZMPI_CODEC_FZL, 1.25e8, 40000, 1, 3000, 70000, 4);
    raw_case(t, "raw: no network given", ZMPI_CODEC_FZL, 0, 40000, 0, 5, 20000, 5);
    /* an inter-step codec: blocks of one channel raw in one call (below
     * min_bytes), coded in the next; both ends drop the history alike */
    for (int k = 0; k < 3; k++) {
        char what[64];
        snprintf(what, sizeof what, "raw: xorlzc-inter call %d", k);
        raw_case(t, what, ZMPI_CODEC_XORLZC_INTER, 1.25e8, 40000, 0, k == 1 ? 20000 : 3000, 20000, 6);
    }
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_alltoall");
    int ids[MV_MAXALGO];
    const char *names[MV_MAXALGO];
    int n = mv_algorithms(&t, ZMPI_COLL_ALLTOALL, 1, ids, names);
    for (int a = 0; a < n; a++)
        sweep(&t, ids[a], names[a]);
    /* a derived sendtype (4 floats) on odd ranks: still compressed (recvtype
     * decides); the send blocks are converted exactly first */
    size_t total = (size_t)2000 * (size_t)t.size;
    mv_derived_sendtype(&t, ZMPI_COLL_ALLTOALL, alltoall, 2000, total, (size_t)t.rank + 60);
    /* Alltoallv: symmetric counts (what i sends j = what j expects from i),
     * every other block a third, in reverse order */
    mv_fallback_case f = {.coll = ZMPI_COLL_ALLTOALL, .call = alltoall, .n = 1500,
                          .send_elems = (size_t)1500 * (size_t)t.size, .out_elems = (size_t)1500 * (size_t)t.size,
                          .fill_offset = (size_t)t.rank, .v_div = 3, .v_pairwise = 1, .v_reversed = 1};
    mv_fallbacks(&t, &f);
    raw_blocks(&t);
    return mt_finish(&t);
}
