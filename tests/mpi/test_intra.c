/*
 * What stays on a node is not compressed (ZMPI_INTRA_NODE=plain, the
 * default), asserted by the bytes on the wire:
 *   - point-to-point, emulated nodes of 2 ranks (ZMPI_NODE_RANKS=2): rank 0
 *     sends one smooth field to every rank with ZMPI_Send; each receives
 *     with plain MPI_Recv of bytes and counts them - the raw size from a
 *     rank of its own node, fewer (a stream) from another node; with
 *     ZMPI_INTRA_NODE=compress a stream from every rank; the sender counts
 *     the plain ones as fallback_node; the streams decode within the bound
 *     (ZMPI_Recv);
 *   - the MPI's own nodes (every rank of this test shares one machine): once
 *     MPI_COMM_WORLD's layout is learned (ZMPI_Comm_nodes on a duplicate),
 *     a communicator that never ran a collective (the ranks reversed) sends
 *     plain - its layout follows locally from MPI_COMM_WORLD's;
 *   - collectives on one node (the MPI's own, and ZMPI_NODE_RANKS = size):
 *     Allreduce, Bcast and Allgather run as plain MPI (results identical to
 *     MPI's, last_algorithm MPI, fallback_node counted, nothing compressed);
 *     with ZMPI_INTRA_NODE=compress they compress, within the bound;
 *   - ranks with different ZMPI_INTRA_NODE: the collectives fail on every
 *     rank (they would take different paths), no hang.
 * The test's environment has ZMPI_NODE_RANKS=1; every layout here is set
 * through ZMPI_Comm_set_config.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

enum { N = 1 << 16 }; /* floats per message: 256 KiB, above ZMPI_MIN_BYTES */
static const double EB = 1e-3;

static void configure(mt_state *T, MPI_Comm c, int node_ranks, int intra)
{
    ZMPI_Config cfg;
    ZMPI_Comm_get_config(c, &cfg);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = ZMPI_EB_ABS;
    cfg.eb = EB;
    cfg.net_bw = 0;
    cfg.node_ranks = node_ranks;
    cfg.intra_node = intra;
    MT_CHECK_RC(T, ZMPI_Comm_set_config(c, &cfg), "ZMPI_Comm_set_config");
}

/* Rank 0 sends the field to every other rank of c; each returns the bytes
 * it received (0 on rank 0). With `decode`, a second message is received by
 * ZMPI_Recv and checked against the bound. */
static int bytes_from_root(mt_state *T, MPI_Comm c, const float *field, float *buf, const char *what)
{
    int rank, size, got = 0;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            MT_CHECK_RC(T, ZMPI_Send(field, N, MPI_FLOAT, r, 7, c), "ZMPI_Send");
            MT_CHECK_RC(T, ZMPI_Send(field, N, MPI_FLOAT, r, 8, c), "ZMPI_Send");
        }
        return 0;
    }
    MPI_Status st;
    MPI_Recv(buf, N * (int)sizeof(float), MPI_BYTE, 0, 7, c, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    MT_CHECK_RC(T, ZMPI_Recv(buf, N, MPI_FLOAT, 0, 8, c, MPI_STATUS_IGNORE), "ZMPI_Recv");
    double worst = 0;
    size_t bad = mt_violations(buf, field, N, MPI_FLOAT, EB, &worst);
    MT_CHECK(T, bad == 0, "%s: %zu elements beyond the bound %g (worst %g)", what, bad, EB, worst);
    return got;
}

static void p2p_emulated(mt_state *T, MPI_Comm c, const float *field, float *buf)
{
    int rank, size, raw = N * (int)sizeof(float);
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    for (int intra = 0; intra <= 1; intra++) {
        configure(T, c, 2, intra);
        ZMPI_Stats s0 = mt_stats(c);
        int got = bytes_from_root(T, c, field, buf, intra ? "p2p, intra compress" : "p2p, k=2");
        ZMPI_Stats s1 = mt_stats(c);
        if (rank > 0 && (rank / 2 == 0) && !intra)
            MT_CHECK(T, got == raw, "k=2: rank %d shares rank 0's node, received %d bytes, not the raw %d", rank,
                     got, raw);
        else if (rank > 0)
            MT_CHECK(T, got > 0 && got < raw, "k=2%s: rank %d (node %d) received %d bytes, not a stream below %d",
                     intra ? ", ZMPI_INTRA_NODE=compress" : "", rank, rank / 2, got, raw);
        if (rank == 0) {
            unsigned long long plain = s1.fallback_node - s0.fallback_node, want = intra || size < 2 ? 0 : 2;
            MT_CHECK(T, plain == want, "k=2%s: %llu sends counted as same-node fallbacks, want %llu",
                     intra ? ", compress" : "", plain, want);
        }
    }
}

/* The MPI's own nodes: this machine is one node. */
static void p2p_machine(mt_state *T, MPI_Comm world_dup, const float *field, float *buf)
{
    int rank, size, nn = 0, raw = N * (int)sizeof(float);
    MPI_Comm_rank(world_dup, &rank);
    MPI_Comm_size(world_dup, &size);
    configure(T, world_dup, 0, 0);
    MT_CHECK_RC(T, ZMPI_Comm_nodes(world_dup, &nn, NULL, NULL, NULL, NULL), "ZMPI_Comm_nodes");
    MT_CHECK(T, nn == 1, "the ranks of one machine: %d nodes", nn);
    MPI_Comm rev;
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    configure(T, rev, 0, 0);
    MT_CHECK(T, mt_stats(rev).nodes == 0, "a fresh communicator knows its nodes before any call");
    int got = bytes_from_root(T, rev, field, buf, "p2p, one machine");
    MT_CHECK(T, rank == size - 1 || got == raw,
             "one machine, ranks reversed: received %d bytes, not the raw %d (the layout follows from "
             "MPI_COMM_WORLD's)",
             got, raw);
    MPI_Comm_free(&rev);
}

static void coll_one_node(mt_state *T, MPI_Comm c, int node_ranks, const float *field, const char *what)
{
    int rank, size;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    float *got = mt_xmalloc(sizeof(float) * N * (size_t)size), *ref = mt_xmalloc(sizeof(float) * N * (size_t)size);
    for (int intra = 0; intra <= 1; intra++) {
        configure(T, c, node_ranks, intra);
        for (int k = 0; k < 3; k++) {
            ZMPI_Coll coll = k == 0 ? ZMPI_COLL_ALLREDUCE : k == 1 ? ZMPI_COLL_BCAST : ZMPI_COLL_ALLGATHER;
            size_t n = k == 2 ? (size_t)N * (size_t)size : N;
            ZMPI_Stats s0 = mt_stats(c);
            int rc;
            if (k == 0) {
                rc = ZMPI_Allreduce(field, got, N, MPI_FLOAT, MPI_SUM, c);
                MPI_Allreduce(field, ref, N, MPI_FLOAT, MPI_SUM, c);
            } else if (k == 1) {
                memcpy(got, field, sizeof(float) * N);
                memcpy(ref, field, sizeof(float) * N);
                rc = ZMPI_Bcast(got, N, MPI_FLOAT, 0, c);
            } else {
                rc = ZMPI_Allgather(field, N, MPI_FLOAT, got, N, MPI_FLOAT, c);
                MPI_Allgather(field, N, MPI_FLOAT, ref, N, MPI_FLOAT, c);
            }
            MT_CHECK_RC(T, rc, ZMPI_Coll_name(coll));
            ZMPI_Stats s1 = mt_stats(c);
            double worst = 0, eb = intra && size > 1 ? EB : 0;
            size_t bad = mt_violations(got, ref, n, MPI_FLOAT, eb, &worst);
            MT_CHECK(T, bad == 0, "%s, %s%s: %zu elements differ from MPI's beyond %g (worst %g)", what,
                     ZMPI_Coll_name(coll), intra ? ", compress" : "", bad, eb, worst);
            if (size < 2)
                continue;
            if (!intra) {
                MT_CHECK(T, s1.compressed == s0.compressed && s1.fallback_node == s0.fallback_node + 1,
                         "%s, %s: compressed %llu -> %llu, same-node fallbacks %llu -> %llu", what,
                         ZMPI_Coll_name(coll), s0.compressed, s1.compressed, s0.fallback_node, s1.fallback_node);
                mt_check_ran(T, c, coll, ZMPI_ALGO_MPI, "a collective on one node");
            } else {
                MT_CHECK(T, s1.compressed == s0.compressed + 1 && s1.last_algorithm[coll] != ZMPI_ALGO_MPI &&
                                (s1.bytes_sent > s0.bytes_sent || coll == ZMPI_COLL_BCAST),
                         "%s, %s, ZMPI_INTRA_NODE=compress: not compressed", what, ZMPI_Coll_name(coll));
            }
        }
    }
    free(got);
    free(ref);
}

int main(int argc, char **argv)
{
    mt_state T;
    mt_init(&T, &argc, &argv, "test_intra");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    float *field = mt_xmalloc(sizeof(float) * N), *buf = mt_xmalloc(sizeof(float) * N);
    mt_fill_field(field, N, MPI_FLOAT, 0);

    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    p2p_emulated(&T, c, field, buf);
    coll_one_node(&T, c, size, field, "ZMPI_NODE_RANKS = size");
    p2p_machine(&T, c, field, buf);
    coll_one_node(&T, c, 0, field, "one machine");

    /* different ZMPI_INTRA_NODE on the ranks: every rank's collective fails */
    if (size > 1) {
        configure(&T, c, 1, rank == size - 1);
        int rc = ZMPI_Allreduce(field, buf, N, MPI_FLOAT, MPI_SUM, c), cls = 0;
        ZMPI_Error_class(rc, &cls);
        MT_CHECK(&T, rc != MPI_SUCCESS, "different ZMPI_INTRA_NODE: ZMPI_Allreduce returned success");
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        MT_CHECK(&T, rc == MPI_SUCCESS || strstr(msg, "ZMPI_INTRA_NODE"),
                 "different ZMPI_INTRA_NODE: the error does not name it: %s", msg);
    }
    MPI_Comm_free(&c);
    free(field);
    free(buf);
    return mt_finish(&T);
}
