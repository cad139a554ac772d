/*
 * The node layout zmpi learns for a communicator (ZMPI_Comm_nodes):
 *   - the MPI's own nodes: every rank of this test runs on one machine, so
 *     one node holds them all (the test is launched on one host);
 *   - emulated nodes of k = 1, 2, 3, 4 consecutive ranks of MPI_COMM_WORLD
 *     (ZMPI_NODE_RANKS, set through ZMPI_Comm_set_config), the last node
 *     short where k does not divide the size;
 *   - the same on communicators whose ranks are not MPI_COMM_WORLD's: reversed,
 *     the even ranks then the odd ones (nodes interleaved: no node's ranks
 *     consecutive) and the odd ranks;
 *     every layout checked against one computed here the plain way (nodes
 *     numbered in the order of their lowest rank);
 *   - a compressed collective learns the layout on the way (kept, the same);
 *   - ranks with different ZMPI_NODE_RANKS: an error on every rank, no hang;
 *     MPI_COMM_NULL: an error.
 */
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

/* The layout of comm's ranks whose MPI_COMM_WORLD ranks are world[], k per
 * emulated node: node_of[r], numbered by lowest rank. */
static void expected(const int *world, int n, int k, int *node_of, int *nnodes)
{
    *nnodes = 0;
    for (int r = 0; r < n; r++) {
        node_of[r] = -1;
        for (int q = 0; q < r && node_of[r] < 0; q++)
            if (world[q] / k == world[r] / k)
                node_of[r] = node_of[q];
        if (node_of[r] < 0)
            node_of[r] = (*nnodes)++;
    }
}

static int set_nodes(MPI_Comm c, int k)
{
    ZMPI_Config cfg;
    ZMPI_Comm_get_config(c, &cfg);
    cfg.node_ranks = k;
    return ZMPI_Comm_set_config(c, &cfg);
}

/* Checks comm's layout at k ranks per emulated node (0: the MPI's own). */
static void check(mt_state *T, MPI_Comm c, int k, const char *what)
{
    int n, me, wrank;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    int *world = mt_xmalloc(sizeof(int) * (size_t)n), *want = mt_xmalloc(sizeof(int) * (size_t)n);
    int *got = mt_xmalloc(sizeof(int) * (size_t)n), nn = -1, node = -1, lr = -1, ls = -1, wn = 0;
    MPI_Allgather(&wrank, 1, MPI_INT, world, 1, MPI_INT, c);
    MT_CHECK_RC(T, set_nodes(c, k), "ZMPI_Comm_set_config");
    memset(got, 0xff, sizeof(int) * (size_t)n);
    int rc = ZMPI_Comm_nodes(c, &nn, &node, &lr, &ls, got);
    MT_CHECK_RC(T, rc, "ZMPI_Comm_nodes");
    if (k > 0)
        expected(world, n, k, want, &wn);
    else { /* one machine: one node */
        memset(want, 0, sizeof(int) * (size_t)n);
        wn = 1;
    }
    int wlr = 0, wls = 0;
    for (int r = 0; r < n; r++) {
        wls += want[r] == want[me];
        wlr += r < me && want[r] == want[me];
    }
    MT_CHECK(T, nn == wn, "%s, k=%d: %d nodes, expected %d", what, k, nn, wn);
    MT_CHECK(T, node == want[me] && lr == wlr && ls == wls, "%s, k=%d: node %d rank %d of %d, expected %d, %d of %d",
             what, k, node, lr, ls, want[me], wlr, wls);
    int bad = -1;
    for (int r = 0; r < n && bad < 0; r++)
        if (got[r] != want[r])
            bad = r;
    MT_CHECK(T, bad < 0, "%s, k=%d: rank %d on node %d, expected %d", what, k, bad, bad < 0 ? 0 : got[bad],
             bad < 0 ? 0 : want[bad]);
    free(world);
    free(want);
    free(got);
}

int main(int argc, char **argv)
{
    mt_state T;
    mt_init(&T, &argc, &argv, "test_topo");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm c, rev, odd, mix;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &rev);
    MPI_Comm_set_errhandler(rev, MPI_ERRORS_RETURN);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2 ? 0 : MPI_UNDEFINED, rank, &odd);
    MPI_Comm_split(MPI_COMM_WORLD, 0, (rank % 2) * size + rank, &mix);
    MPI_Comm_set_errhandler(mix, MPI_ERRORS_RETURN);
    for (int k = 0; k <= 4; k++) {
        check(&T, c, k, "a duplicate of MPI_COMM_WORLD");
        check(&T, rev, k, "MPI_COMM_WORLD reversed");
        check(&T, mix, k, "the even ranks, then the odd ones");
        if (odd != MPI_COMM_NULL)
            check(&T, odd, k, "the odd ranks");
    }

    /* a compressed collective learns the layout: then it is the one ZMPI_Comm_nodes gives */
    if (size > 1) {
        ZMPI_Config cfg;
        set_nodes(c, 0);
        ZMPI_Comm_get_config(c, &cfg);
        cfg.eb_mode = ZMPI_EB_ABS;
        cfg.eb = 1e-3;
        cfg.min_bytes = 0;
        cfg.node_ranks = 2;
        MT_CHECK_RC(&T, ZMPI_Comm_set_config(c, &cfg), "ZMPI_Comm_set_config");
        size_t n = 4096;
        float *a = mt_xmalloc(n * sizeof(float)), *b = mt_xmalloc(n * sizeof(float));
        mt_fill_field(a, n, MPI_FLOAT, (size_t)rank * 7);
        MT_CHECK(&T, mt_stats(c).nodes == 0, "nodes known before any collective: %d", mt_stats(c).nodes);
        MT_CHECK_RC(&T, ZMPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, c), "ZMPI_Allreduce");
        MT_CHECK(&T, mt_stats(c).nodes == (size + 1) / 2, "after a compressed collective, k=2: %d nodes known",
                 mt_stats(c).nodes);
        int nn = 0, node = -1;
        MT_CHECK_RC(&T, ZMPI_Comm_nodes(c, &nn, &node, NULL, NULL, NULL), "ZMPI_Comm_nodes after a collective");
        MT_CHECK(&T, nn == (size + 1) / 2 && node == rank / 2, "after a collective, k=2: %d nodes, node %d", nn,
                 node);
        free(a);
        free(b);

        /* different ZMPI_NODE_RANKS on the ranks: an error everywhere (the ranks cannot agree on nodes) */
        ZMPI_Comm_get_config(c, &cfg);
        cfg.node_ranks = rank == 0 ? 2 : 1;
        ZMPI_Comm_set_config(c, &cfg); /* records the mismatch; collectives refuse */
        int rc = ZMPI_Comm_nodes(c, &nn, NULL, NULL, NULL, NULL);
        MT_CHECK(&T, rc != MPI_SUCCESS, "different ZMPI_NODE_RANKS: ZMPI_Comm_nodes returned success (%d nodes)",
                 nn);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MT_CHECK(&T, ZMPI_Comm_nodes(MPI_COMM_NULL, NULL, NULL, NULL, NULL, NULL) != MPI_SUCCESS,
             "ZMPI_Comm_nodes(MPI_COMM_NULL) returned success");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (odd != MPI_COMM_NULL)
        MPI_Comm_free(&odd);
    MPI_Comm_free(&rev);
    MPI_Comm_free(&mix);
    MPI_Comm_free(&c);
    return mt_finish(&T);
}
