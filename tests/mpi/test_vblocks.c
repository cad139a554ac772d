/*
 * The v-collectives on a configured network decide block by block
 * (zmpi_block_plain): on a network where compressing does not pay (12.5 GB/s)
 * Scatterv, Gatherv, Allgatherv and Alltoallv give MPI's result byte for byte
 * and compress nothing (stored streams, or raw blocks for Alltoallv); on
 * 1 Gb/s the same calls compress, every element within the bound. Uneven
 * blocks with zeros, float and double, root 0 and the last rank. Blocks of
 * exactly ZMPI_MIN_BYTES and one element fewer or more in Scatterv and
 * Alltoallv, every algorithm: compressed from the threshold on, exact below.
 */
#include <math.h>

#include "mpitest.h"

enum { SCATTERV, GATHERV, ALLGATHERV, ALLTOALLV, NCALLS };
static const char *names[NCALLS] = {"Scatterv", "Gatherv", "Allgatherv", "Alltoallv"};

static void configure(mt_state *t, double net_bw)
{
    mt_config(MPI_COMM_WORLD, ZMPI_CODEC_FZL, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_RESULT, 0);
    MT_CHECK(t, mt_set_network(MPI_COMM_WORLD, net_bw, 1e-6) == MPI_SUCCESS, "settings");
}

/* Elements of block (i, j): rank i's block for rank j (j unused by the rooted calls). */
static int count_of(int i, int j)
{
    return (i + j) % 4 == 3 ? 0 : 20000 + 1000 * i + 300 * j;
}

/* One call, ZMPI's (z) or MPI's, into out (zeroed first). */
static int call(int z, int which, MPI_Datatype type, int root, const char *send, char *out, int rank, int size)
{
    int sc[64], sd[64], rc[64], rd[64], s = 0, r = 0;
    for (int j = 0; j < size; j++) { /* send layout: in rank order */
        sc[j] = which == SCATTERV ? count_of(j, 0) : which == ALLTOALLV ? count_of(rank, j) : count_of(rank, 0);
        rc[j] = which == ALLTOALLV ? count_of(j, rank) : count_of(j, 0);
        sd[j] = s;
        s += sc[j];
    }
    for (int j = size - 1; j >= 0; j--) { /* receive layout: blocks in reverse order */
        rd[j] = r;
        r += rc[j];
    }
    switch (which) {
    case SCATTERV:
        return z ? ZMPI_Scatterv(send, sc, sd, type, out, count_of(rank, 0), type, root, MPI_COMM_WORLD)
                 : MPI_Scatterv(send, sc, sd, type, out, count_of(rank, 0), type, root, MPI_COMM_WORLD);
    case GATHERV:
        return z ? ZMPI_Gatherv(send, count_of(rank, 0), type, out, rc, rd, type, root, MPI_COMM_WORLD)
                 : MPI_Gatherv(send, count_of(rank, 0), type, out, rc, rd, type, root, MPI_COMM_WORLD);
    case ALLGATHERV:
        return z ? ZMPI_Allgatherv(send, count_of(rank, 0), type, out, rc, rd, type, MPI_COMM_WORLD)
                 : MPI_Allgatherv(send, count_of(rank, 0), type, out, rc, rd, type, MPI_COMM_WORLD);
    default:
        return z ? ZMPI_Alltoallv(send, sc, sd, type, out, rc, rd, type, MPI_COMM_WORLD)
                 : MPI_Alltoallv(send, sc, sd, type, out, rc, rd, type, MPI_COMM_WORLD);
    }
}

static void one(mt_state *t, int which, MPI_Datatype type, int root, int fast)
{
    int rank = t->rank, size = t->size;
    size_t es = type == MPI_FLOAT ? 4 : 8, total = 0;
    for (int i = 0; i < size; i++)
        for (int j = 0; j < size; j++)
            total += (size_t)count_of(i, j);
    char *send = mt_xmalloc(total * es + 8), *got = mt_xmalloc(total * es + 8), *ref = mt_xmalloc(total * es + 8);
    mt_fill_field(send, total, type, (size_t)rank * 131 + 7);
    memset(got, 0, total * es);
    memset(ref, 0, total * es);
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int e = call(1, which, type, root, send, got, rank, size);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    call(0, which, type, root, send, ref, rank, size);
    const char *net = fast ? "12.5 GB/s" : "1 Gb/s";
    const char *tn = type == MPI_FLOAT ? "float" : "double";
    MT_CHECK(t, e == MPI_SUCCESS, "%s %s %s root %d: returned %d", names[which], tn, net, root, e);
    if (size > 1)
        MT_CHECK(t, s1.compressed == s0.compressed + 1, "%s %s: not on zmpi's path", names[which], net);
    unsigned long long raw = s1.bytes_raw - s0.bytes_raw, sent = s1.bytes_sent - s0.bytes_sent;
    int receives = which != GATHERV || rank == root;
    if (fast) { /* nothing compressed: MPI's bytes exactly */
        if (receives)
            MT_CHECK(t, memcmp(got, ref, total * es) == 0, "%s %s %s root %d: not MPI's result", names[which], tn,
                     net, root);
        MT_CHECK(t, sent >= raw, "%s %s: %llu bytes compressed into %llu on a fast network", names[which], net, raw,
                 sent);
    } else {
        double worst = 0;
        for (size_t k = 0; receives && k < total; k++) {
            double a = type == MPI_FLOAT ? ((float *)got)[k] : ((double *)got)[k];
            double b = type == MPI_FLOAT ? ((float *)ref)[k] : ((double *)ref)[k];
            worst = fabs(a - b) > worst ? fabs(a - b) : worst;
        }
        MT_CHECK(t, worst <= 1e-3, "%s %s %s root %d: off by %g > 1e-3", names[which], tn, net, root, worst);
        unsigned long long all_sent = sent, all_raw = raw;
        MPI_Allreduce(MPI_IN_PLACE, &all_sent, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, &all_raw, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (size > 1)
            MT_CHECK(t, all_sent < all_raw, "%s %s: nothing compressed on 1 Gb/s (%llu of %llu)", names[which], net,
                     all_sent, all_raw);
    }
    free(send);
    free(got);
    free(ref);
}

/* ---- ZMPI_MIN_BYTES at its edge ----
 *
 * A block of exactly ZMPI_MIN_BYTES is compressed, one element fewer goes
 * plain (exact), one more is compressed; both ends of every block must
 * decide alike (an end that compares with <= where the other has < posts a
 * receive of the wrong kind: MPI_ERR_TRUNCATE or a garbled block). Scatterv
 * and Alltoallv under the default algorithm (blocks decided one by one) and
 * every algorithm configured explicitly; unknown network, so ZMPI_MIN_BYTES
 * alone decides. */
enum { EDGE_BYTES = 4096 };

/* Counts around the edge for element size es: k = 0 .. 4 -> M-1, M, M+1, 0, 3M elements. */
static int edge_count(int k, size_t es)
{
    int m = (int)(EDGE_BYTES / es);
    static const int add[5] = {-1, 0, 1, 0, 0};
    return k == 3 ? 0 : k == 4 ? 3 * m : m + add[k];
}

static int edge_plain(int count, size_t es)
{
    return (size_t)count * es < EDGE_BYTES;
}

static void edge_config(mt_state *t, ZMPI_Coll coll, int algo)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = ZMPI_EB_ABS;
    cfg.eb = 1e-3;
    cfg.scope = ZMPI_SCOPE_RESULT;
    cfg.min_bytes = EDGE_BYTES;
    cfg.net_bw = 0; /* unknown: the model compresses everything it may */
    cfg.algorithm[coll] = algo;
    MT_CHECK(t, ZMPI_Comm_set_config(MPI_COMM_WORLD, &cfg) == MPI_SUCCESS, "edge settings");
}

/* n elements of got against ref: byte-identical if plain, else within 1e-3. */
static int edge_block_ok(const char *got, const char *ref, int n, MPI_Datatype type, int plain)
{
    size_t es = type == MPI_FLOAT ? 4 : 8;
    if (plain)
        return memcmp(got, ref, (size_t)n * es) == 0;
    for (int k = 0; k < n; k++) {
        double a = mt_get(got, (size_t)k, type), b = mt_get(ref, (size_t)k, type);
        if (!(fabs(a - b) <= 1e-3))
            return 0;
    }
    return 1;
}

/* Alltoallv: block i -> j has edge_count((i + 2j) % 5) elements, so every
 * rank sends and receives blocks of each kind (from 3 ranks). */
static void edge_alltoallv(mt_state *t, MPI_Datatype type, int algo, const char *aname)
{
    int rank = t->rank, size = t->size, sc[64], sd[64], rc[64], rd[64], s = 0, r = 0;
    size_t es = type == MPI_FLOAT ? 4 : 8;
    const char *tn = type == MPI_FLOAT ? "float" : "double";
    unsigned long long want_raw = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = edge_count((rank + 2 * j) % 5, es);
        rc[j] = edge_count((j + 2 * rank) % 5, es);
        sd[j] = s;
        rd[j] = r;
        s += sc[j];
        r += rc[j];
        if (j != rank && !edge_plain(sc[j], es))
            want_raw += (unsigned long long)sc[j] * es;
    }
    char *send = mt_xmalloc((size_t)s * es + 8), *got = mt_xmalloc((size_t)r * es + 8);
    char *ref = mt_xmalloc((size_t)r * es + 8);
    mt_fill_field(send, (size_t)s, type, (size_t)rank * 977 + 3);
    memset(got, 0, (size_t)r * es);
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int e = ZMPI_Alltoallv(send, sc, sd, type, got, rc, rd, type, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    MPI_Alltoallv(send, sc, sd, type, ref, rc, rd, type, MPI_COMM_WORLD);
    MT_CHECK_RC(t, e, "edge Alltoallv");
    if (algo != ZMPI_ALGO_DEFAULT && size > 1)
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_ALLTOALL, algo, "edge Alltoallv");
    for (int j = 0; j < size; j++) {
        int plain = edge_plain(rc[j], es) || j == rank;
        MT_CHECK(t, edge_block_ok(got + (size_t)rd[j] * es, ref + (size_t)rd[j] * es, rc[j], type, plain),
                 "edge Alltoallv %s %s: the block of %d elements (%zu bytes, ZMPI_MIN_BYTES %d) from rank %d is "
                 "not %s", tn, aname, rc[j], (size_t)rc[j] * es, EDGE_BYTES, j, plain ? "exact" : "within 1e-3");
    }
    /* pairwise codes the blocks at or above ZMPI_MIN_BYTES, and only those */
    if (size > 1)
        MT_CHECK(t, s1.bytes_raw - s0.bytes_raw == want_raw,
                 "edge Alltoallv %s %s: %llu bytes coded, want %llu (the blocks of at least %d bytes)", tn, aname,
                 s1.bytes_raw - s0.bytes_raw, want_raw, EDGE_BYTES);
    free(send);
    free(got);
    free(ref);
}

/* Scatterv with every part of edge_count(k) elements (k < 3), or with the
 * parts cycling through all five counts (k = 5). */
static void edge_scatterv(mt_state *t, MPI_Datatype type, int k, int root, int algo, const char *aname)
{
    int rank = t->rank, size = t->size, sc[64], sd[64], s = 0;
    size_t es = type == MPI_FLOAT ? 4 : 8;
    const char *tn = type == MPI_FLOAT ? "float" : "double";
    for (int j = 0; j < size; j++) {
        sc[j] = edge_count(k < 5 ? k : j % 5, es);
        sd[j] = s;
        s += sc[j];
    }
    char *send = mt_xmalloc((size_t)s * es + 8), *got = mt_xmalloc((size_t)sc[rank] * es + 8);
    char *ref = mt_xmalloc((size_t)sc[rank] * es + 8);
    mt_fill_field(send, (size_t)s, type, 11);
    memset(got, 0, (size_t)sc[rank] * es);
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int e = ZMPI_Scatterv(send, sc, sd, type, got, sc[rank], type, root, MPI_COMM_WORLD);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    MPI_Scatterv(send, sc, sd, type, ref, sc[rank], type, root, MPI_COMM_WORLD);
    MT_CHECK_RC(t, e, "edge Scatterv");
    if (algo != ZMPI_ALGO_DEFAULT && size > 1)
        mt_check_ran(t, MPI_COMM_WORLD, ZMPI_COLL_SCATTER, algo, "edge Scatterv");
    int plain = edge_plain(sc[rank], es) || rank == root;
    MT_CHECK(t, edge_block_ok(got, ref, sc[rank], type, plain),
             "edge Scatterv %s %s root %d: the part of %d elements (%zu bytes, ZMPI_MIN_BYTES %d) is not %s", tn,
             aname, root, sc[rank], (size_t)sc[rank] * es, EDGE_BYTES, plain ? "exact" : "within 1e-3");
    if (k < 3 && rank == root && size > 1) {
        /* every part coded alike: smaller than its raw bytes when compressed,
         * a stored stream (raw bytes and a header) when plain */
        unsigned long long raw = s1.bytes_raw - s0.bytes_raw, sent = s1.bytes_sent - s0.bytes_sent;
        MT_CHECK(t, raw == (unsigned long long)(size - 1) * (unsigned long long)sc[0] * es,
                 "edge Scatterv %s %s: %llu bytes coded, want %llu", tn, aname, raw,
                 (unsigned long long)(size - 1) * (unsigned long long)sc[0] * es);
        MT_CHECK(t, edge_plain(sc[0], es) ? sent > raw : sent < raw,
                 "edge Scatterv %s %s: parts of %zu bytes (ZMPI_MIN_BYTES %d) sent as %llu bytes for %llu: %s", tn,
                 aname, (size_t)sc[0] * es, EDGE_BYTES, sent, raw,
                 edge_plain(sc[0], es) ? "compressed below the threshold" : "not compressed at the threshold");
    }
    free(send);
    free(got);
    free(ref);
}

static void edges(mt_state *t)
{
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    ZMPI_Coll colls[2] = {ZMPI_COLL_ALLTOALL, ZMPI_COLL_SCATTER};
    for (int ci = 0; ci < 2; ci++) {
        int ids[16];
        const char *an[16];
        int na = ZMPI_Coll_algorithms(colls[ci], 15, ids + 1, an + 1, NULL);
        ids[0] = ZMPI_ALGO_DEFAULT;
        an[0] = "default";
        for (int a = 0; a <= na && a < 16; a++) {
            edge_config(t, colls[ci], ids[a]);
            for (int ti = 0; ti < 2; ti++) {
                if (colls[ci] == ZMPI_COLL_ALLTOALL) {
                    edge_alltoallv(t, types[ti], ids[a], an[a]);
                    continue;
                }
                for (int k = 0; k < 3; k++)
                    edge_scatterv(t, types[ti], k, t->size - 1, ids[a], an[a]);
                edge_scatterv(t, types[ti], 5, 0, ids[a], an[a]);
            }
        }
    }
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_vblocks");
    if (t.size > 64)
        return mt_finish(&t);
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    for (int fast = 1; fast >= 0; fast--) {
        configure(&t, fast ? 12.5e9 : 1.25e8);
        for (int w = 0; w < NCALLS; w++)
            for (int ti = 0; ti < 2; ti++) {
                one(&t, w, types[ti], 0, fast);
                if (w <= GATHERV && t.size > 1)
                    one(&t, w, types[ti], t.size - 1, fast);
            }
    }
    edges(&t);
    return mt_finish(&t);
}
