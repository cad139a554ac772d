/*
 * The v-collectives on a configured network decide block by block
 * (zmpi_block_plain): on a network where compressing does not pay (12.5 GB/s)
 * Scatterv, Gatherv, Allgatherv and Alltoallv give MPI's result byte for byte
 * and compress nothing (stored streams, or raw blocks for Alltoallv); on
 * 1 Gb/s the same calls compress, every element within the bound. Uneven
 * blocks with zeros, float and double, root 0 and the last rank.
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
    return mt_finish(&t);
}
