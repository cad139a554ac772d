/*
 * The node-aware algorithms on emulated nodes (ZMPI_NODE_RANKS = 1, 2, 3, 4
 * consecutive ranks: at 7 ranks nodes of 2 and 4 leave a short last node,
 * 3 gives 3+3+1):
 *   - Allreduce `node`: every element of every result against plain MPI's
 *     and the documented bound (result scope: the user's bound; message
 *     scope ABS: one compression per node, M * eb), float and double, ABS
 *     and REL, SUM / MIN / MAX, counts 0, 1, fewer than the slices, not
 *     divisible, a real field of 4 MiB,
 *     MPI_IN_PLACE, non-finite values, the grid codes of ZMPI_CODEC=auto;
 *     bit-identical results on all ranks;
 *   - Reduce `node`: the same checks at the root (roots first, last and in
 *     between), fewer cases;
 *   - Bcast `node`: the root's buffer unchanged, every other rank's element
 *     within one compression's bound (REL: of the root's range), the same
 *     values on every rank but the root, roots first, last and inside a
 *     node, the same counts and hostile data;
 *   - Scatterv and Gatherv `node` (the ranks of the root's node code the
 *     other nodes' parts): even and uneven parts with zeros, gaps between
 *     the parts, roots first, last and inside a node, float and double, ABS
 *     and REL, hostile values: the parts of the root's node byte-identical,
 *     every other element within one compression's bound of its part,
 *     nothing outside the parts touched, and - the same-node rule by the
 *     bytes compressed over all ranks - exactly the parts that cross a
 *     node compressed; a sender whose block is longer than the root's count
 *     is an error at the root (passed on by the coder that found it), not a
 *     hang or a silent wrong answer;
 *   - Alltoall(v) `pairwise` on emulated nodes: the blocks between ranks
 *     of one node byte-identical and - by the bytes compressed over all
 *     ranks - only the blocks that cross a node compressed (with
 *     ZMPI_INTRA_NODE=compress every block but a rank's own), every other
 *     element within one compression's bound of its block, Alltoall and
 *     uneven Alltoallv with zeros, MPI_IN_PLACE;
 *   - Allgather(v) `node` (the ranks of one local rank exchange compressed
 *     blocks, then share them inside their node): even and uneven blocks
 *     with zeros and gaps, MPI_IN_PLACE, float and double, ABS and REL,
 *     hostile values: a rank's own block and those of its node
 *     byte-identical, every other element within one compression's bound
 *     of its block, the gaps untouched, every rank of a node holding the
 *     same values; nodes of different sizes run `rdb` (flat);
 *   - Reduce_scatter(_block) `node` (each rank reduces the blocks of its
 *     group from its node's ranks, the groups reduce-scatter across the
 *     nodes): equal blocks through _block, uneven ones with zeros, a few
 *     non-empty blocks, MPI_IN_PLACE, float and double, ABS and REL, SUM /
 *     MIN / MAX, hostile values: every element against plain MPI's and
 *     the documented bound (message scope ABS: M - 1 compressions); nodes
 *     of different sizes run the ring;
 *   - the measured decision, with no network told and with a network the
 *     model finds too fast to gain: compressed first (warm-up, measured),
 *     then plain measured - except a flat default on the told network,
 *     plain at the first call (the model knows flat algorithms only, so
 *     it never vetoes a node-aware one); every result against the bound;
 *   - the algorithm that ran: `node` by default wherever the communicator
 *     spans several nodes with several ranks on one, the flat default (rhd)
 *     where every rank is a node, `node` when configured on several nodes;
 *     plain MPI where one node holds every rank (what stays on a node is
 *     not compressed), counted as a same-node fallback, whatever is
 *     configured.
 */
#include <stdlib.h>

#include "reduction.h"

static mt_state T;
static MPI_Comm comm;
static int rank, nranks, id_node, id_rhd, id_bnode, id_rnode, id_rsg, id_snode, id_gnode, id_agnode, id_agrdb, id_rsnode, id_rsring;

/* Where one node holds every rank, the call ran as plain MPI (a same-node
 * fallback); elsewhere compressed, by `want` (< 0: not the node-aware
 * algorithm `node_id`). */
static void check_way(ZMPI_Coll coll, int nnodes, const ZMPI_Stats *s0, const ZMPI_Stats *s1, int want, int node_id,
                      const char *what)
{
    if (nnodes == 1 && nranks > 1) {
        MT_CHECK(&T, s1->compressed == s0->compressed && s1->fallback_node == s0->fallback_node + 1,
                 "%s: one node, compressed %llu -> %llu, same-node fallbacks %llu -> %llu", what, s0->compressed,
                 s1->compressed, s0->fallback_node, s1->fallback_node);
        mt_check_ran(&T, comm, coll, ZMPI_ALGO_MPI, what);
        return;
    }
    rt_check_compressed(&T, s0, s1, what);
    if (want > 0)
        mt_check_algo(&T, comm, coll, want, nranks > 1, what);
    else
        MT_CHECK(&T, s1->last_algorithm[coll] != node_id, "%s: node-aware %s by default", what, ZMPI_Coll_name(coll));
}

/* One Allreduce (root < 0) or Reduce to root at node_ranks per node,
 * checked (a Reduce at its root only). */
static void one_at(const rt_case *k, int node_ranks, int algo, zmpi_codec codec, size_t n, int inplace, rt_data data,
                   int root)
{
    size_t es = rt_es(k->type), wn = n * (size_t)rt_mult(k->op);
    void *in = mt_xmalloc(n * es + 1), *got = mt_xmalloc(n * es + 1);
    void *win = mt_xmalloc(wn * rt_wes(k->type) + 1), *wref = mt_xmalloc(wn * rt_wes(k->type) + 1);
    int nnodes = (nranks + node_ranks - 1) / node_ranks;
    int multi = nnodes > 1 && nnodes < nranks, all = root < 0, mine = all || rank == root;
    ZMPI_Coll coll = all ? ZMPI_COLL_ALLREDUCE : ZMPI_COLL_REDUCE;
    int node = all ? id_node : id_rnode, want = algo > 0 ? algo : multi ? node : all ? id_rhd : id_rsg;
    char what[200];

    rt_fill(in, n, k->type, rank, data, k->op);
    rt_widen(in, n, k->type, k->op, win);
    MPI_Allreduce(win, wref, (int)wn, rt_wtype(k->type), k->op, comm);
    double R = mt_global_range(in, n, k->type, comm);

    MT_CHECK_RC(&T, rt_config_nodes(comm, k, 0, 64, coll, algo, codec, node_ranks), "ZMPI_Comm_set_config");
    ZMPI_Stats s0 = mt_stats(comm);
    int rc;
    inplace = inplace && mine;
    if (inplace)
        memcpy(got, in, n * es);
    if (all)
        rc = ZMPI_Allreduce(inplace ? MPI_IN_PLACE : in, got, (int)n, k->type, k->op, comm);
    else
        rc = ZMPI_Reduce(inplace ? MPI_IN_PLACE : in, got, (int)n, k->type, k->op, root, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    snprintf(what, sizeof what, "%s nodes of %d, algo %d, %s %s %s %s n=%zu inplace=%d data=%d codec=%d root=%d",
             ZMPI_Coll_name(coll), node_ranks, want, rt_type_name(k->type), rt_mode_name(k->mode),
             rt_scope_name(k->scope), rt_op_name(k->op), n, inplace, (int)data, (int)codec, root);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_way(coll, nnodes, &s0, &s1, want, node, what);
    MT_CHECK(&T, s1.nodes == nnodes, "%s: %d nodes, expected %d", what, s1.nodes, nnodes);

    /* node: one compression per node (M); flat rhd / rsg: N; plain: exact */
    int hops = want == node ? nnodes : nranks;
    double bound = k->scope == ZMPI_SCOPE_MESSAGE && k->mode == ZMPI_EB_ABS ? hops * k->eb
                                                                             : rt_bound(k, R, nranks, nranks - 1, 1);
    if (mine)
        rt_check_result(&T, what, k, got, wref, n, bound);
    if (all)
        MT_CHECK(&T, rt_same_everywhere(rt_hash(got, n * es), comm), "%s: ranks got different results", what);
    free(in);
    free(got);
    free(win);
    free(wref);
}

static void one(const rt_case *k, int node_ranks, int algo, zmpi_codec codec, size_t n, int inplace, rt_data data)
{
    one_at(k, node_ranks, algo, codec, n, inplace, data, -1);
}

static void reduce(void)
{
    size_t counts[5] = {0, 1, 3, (size_t)(7 * nranks + 3), 1000};
    for (int nr = 1; nr <= 4; nr++) {
        for (int i = 0; i < RT_MATRIX; i += 2) {
            rt_case k = rt_matrix_case(i);
            one_at(&k, nr, 0, ZMPI_CODEC_FZL, counts[(i + nr) % 5], (i / 4 + nr) % 2, RT_FIELD, (i + nr) % nranks);
        }
        rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
        rt_case h = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_MAX};
        one_at(&a, nr, 0, ZMPI_CODEC_AUTO, ((size_t)1 << 18) + 5, 1, RT_FIELD, nranks - 1); /* grid codes */
        one_at(&a, nr, id_rnode, ZMPI_CODEC_FZL, 20000, 0, RT_NOISE, nranks / 2); /* configured */
        one_at(&h, nr, 0, ZMPI_CODEC_AUTO, 1000, 1, RT_SPECIAL, 0);
    }
}

static void allreduce(void)
{
    size_t counts[5] = {0, 1, 3, (size_t)(7 * nranks + 3), 1000};
    for (int nr = 1; nr <= 4; nr++) {
        for (int i = 0; i < RT_MATRIX; i++) {
            rt_case k = rt_matrix_case(i);
            one(&k, nr, 0, ZMPI_CODEC_FZL, counts[(i + nr) % 5], (i / 5 + nr) % 2, RT_FIELD);
        }
        rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
        rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_SUM};
        rt_case h = {MPI_FLOAT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, MPI_SUM};
        rt_case m = {MPI_DOUBLE, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_MAX};
        /* grid codes, 4 MiB and an odd count */
        one(&a, nr, 0, ZMPI_CODEC_AUTO, ((size_t)1 << 20) + 7, nr % 2, RT_FIELD);
        one(&b, nr, 0, ZMPI_CODEC_AUTO, 50000, 0, RT_FIELD);
        one(&a, nr, id_node, ZMPI_CODEC_FZL, 20000, 1, RT_NOISE); /* configured: any layout but one node */
        one(&h, nr, 0, ZMPI_CODEC_FZL, 1000, 0, RT_SPECIAL);
        one(&h, nr, 0, ZMPI_CODEC_AUTO, 1000, 1, RT_SPECIAL);
        one(&m, nr, id_node, ZMPI_CODEC_AUTO, 1000, 0, RT_SPECIAL);
    }
}

/* One Bcast from root at node_ranks per node, checked: the root's buffer
 * unchanged, every other rank within one compression's bound of it (REL:
 * of the root's range), all of them holding the same values. */
static void bcast_one(const rt_case *k, int node_ranks, int algo, size_t n, int root, rt_data data)
{
    size_t es = rt_es(k->type);
    unsigned char *ref = mt_xmalloc(n * es + 1), *got = mt_xmalloc(n * es + 1);
    int nnodes = (nranks + node_ranks - 1) / node_ranks, multi = nnodes > 1 && nnodes < nranks;
    int want = algo > 0 ? algo : multi ? id_bnode : -1; /* -1: some flat algorithm */
    char what[200];

    rt_fill(ref, n, k->type, 0, data, MPI_SUM); /* the same on every rank: the root's data */
    if (rank == root)
        memcpy(got, ref, n * es);
    else
        memset(got, 0x5a, n * es);
    MT_CHECK_RC(&T, rt_config_nodes(comm, k, 0, 64, ZMPI_COLL_BCAST, algo, ZMPI_CODEC_AUTO, node_ranks),
                "ZMPI_Comm_set_config");
    ZMPI_Stats s0 = mt_stats(comm);
    int rc = ZMPI_Bcast(got, (int)n, k->type, root, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    snprintf(what, sizeof what, "bcast nodes of %d, algo %d, root %d, %s %s %s n=%zu data=%d", node_ranks, want,
             root, rt_type_name(k->type), rt_mode_name(k->mode), rt_scope_name(k->scope), n, (int)data);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_way(ZMPI_COLL_BCAST, nnodes, &s0, &s1, want, id_bnode, what);
    double lo = 0, hi = 0, w = 0;
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(ref, i, k->type);
        if (isfinite(v)) {
            lo = i == 0 || v < lo ? v : lo;
            hi = i == 0 || v > hi ? v : hi;
        }
    }
    double eb = rank == root ? 0.0 : k->mode == ZMPI_EB_ABS ? k->eb : k->eb * (hi - lo);
    size_t bad = mt_violations(got, ref, n, k->type, eb, &w);
    MT_CHECK(&T, bad == 0, "%s: %zu elements beyond %g (worst %g)", what, bad, eb, w);
    /* the non-root ranks agree (the root compares the next rank's values) */
    unsigned long long h = rt_hash(got, n * es), other = h;
    if (nranks > 1) {
        MPI_Bcast(&other, 1, MPI_UNSIGNED_LONG_LONG, (root + 1) % nranks, comm);
        MT_CHECK(&T, rt_same_everywhere(rank == root ? other : h, comm),
                 "%s: the ranks other than the root hold different values", what);
    }
    free(ref);
    free(got);
}

static void bcast(void)
{
    size_t counts[5] = {0, 1, 3, (size_t)(7 * nranks + 3), 5000};
    for (int nr = 1; nr <= 4; nr++) {
        for (int i = 0; i < RT_MATRIX; i++) {
            rt_case k = rt_matrix_case(i);
            int root = (i * 5 + nr) % nranks;
            bcast_one(&k, nr, 0, counts[(i + nr) % 5], root, RT_FIELD);
        }
        rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
        rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_SUM};
        bcast_one(&a, nr, 0, ((size_t)1 << 20) + 7, nranks - 1, RT_FIELD);
        bcast_one(&b, nr, id_bnode, 20000, nranks / 2, RT_NOISE); /* configured: any layout but one node */
        bcast_one(&a, nr, 0, 1000, 0, RT_SPECIAL);
        bcast_one(&b, nr, id_bnode, 1000, nranks - 1, RT_SPECIAL);
    }
}

/* Elements of rank i's part: kind 0 the same everywhere, 1 uneven with
 * zeros. */
static int part_count(int kind, int base, int i)
{
    return kind == 0 ? base : i % 3 == 1 ? 0 : base + 37 * i;
}

/* Bound of one compression of the n-element part p. */
static double part_bound(const rt_case *k, const void *p, size_t n)
{
    double lo = 0, hi = 0;
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(p, i, k->type);
        if (isfinite(v)) {
            lo = !any || v < lo ? v : lo;
            hi = !any || v > hi ? v : hi;
            any = 1;
        }
    }
    return k->mode == ZMPI_EB_ABS ? k->eb : k->eb * (hi - lo);
}

/* One Scatterv (gather 0) or Gatherv (gather 1) at node_ranks per node:
 * rank i's part is rt_fill(seed i), laid out with a gap of 3 elements after
 * each part, the gaps and the tail set to 0x5a bytes. */
static void moved_one(const rt_case *k, int gather, int node_ranks, int algo, int kind, int base, int root,
                      int in_place, rt_data data)
{
    size_t es = rt_es(k->type);
    int *counts = mt_xmalloc((size_t)nranks * sizeof *counts), *displs = mt_xmalloc((size_t)nranks * sizeof *displs);
    size_t total = 0, mine;
    for (int i = 0; i < nranks; i++) {
        counts[i] = part_count(kind, base, i);
        displs[i] = (int)total;
        total += (size_t)counts[i] + 3;
    }
    mine = (size_t)counts[rank];
    unsigned char *all = mt_xmalloc(total * es + 1), *ref = mt_xmalloc(total * es + 1);
    unsigned char *part = mt_xmalloc(mine * es + 8 * es), *keep = mt_xmalloc(total * es + 1);
    memset(ref, 0x5a, total * es);
    for (int i = 0; i < nranks; i++)
        rt_fill(ref + (size_t)displs[i] * es, (size_t)counts[i], k->type, i, data, MPI_SUM);
    int nnodes = (nranks + node_ranks - 1) / node_ranks, multi = nnodes > 1 && nnodes < nranks;
    ZMPI_Coll coll = gather ? ZMPI_COLL_GATHER : ZMPI_COLL_SCATTER;
    int node = gather ? id_gnode : id_snode, want = algo > 0 ? algo : multi ? node : -1;
    char what[220];
    snprintf(what, sizeof what, "%s nodes of %d, algo %d, root %d, %s %s kind %d base %d in_place %d data %d",
             ZMPI_Coll_name(coll), node_ranks, want, root, rt_type_name(k->type), rt_mode_name(k->mode), kind, base,
             in_place, (int)data);

    memset(all, 0x5a, total * es);
    memset(part, 0x5a, mine * es + 8 * es);
    if (gather) {
        memcpy(part, ref + (size_t)displs[rank] * es, mine * es);
        if (rank == root && in_place)
            memcpy(all + (size_t)displs[rank] * es, part, mine * es);
    } else if (rank == root) {
        memcpy(all, ref, total * es);
    }
    memcpy(keep, all, total * es);
    MT_CHECK_RC(&T, rt_config_nodes(comm, k, 0, 64, coll, algo, ZMPI_CODEC_FZL, node_ranks), "ZMPI_Comm_set_config");
    ZMPI_Stats s0 = mt_stats(comm);
    int rc, ip = in_place && rank == root;
    if (gather)
        rc = ZMPI_Gatherv(ip ? MPI_IN_PLACE : part, (int)mine, k->type, all, counts, displs, k->type, root, comm);
    else
        rc = ZMPI_Scatterv(all, counts, displs, k->type, ip ? MPI_IN_PLACE : part, (int)mine, k->type, root, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_way(coll, nnodes, &s0, &s1, want, node, what);

    /* the same-node rule: exactly the parts that cross a node compressed */
    unsigned long long raw = s1.bytes_raw - s0.bytes_raw, sum = 0, expect = 0;
    MPI_Allreduce(&raw, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    for (int i = 0; nnodes > 1 && i < nranks; i++)
        if (i / node_ranks != root / node_ranks)
            expect += (unsigned long long)counts[i] * es;
    MT_CHECK(&T, sum == expect, "%s: %llu bytes compressed, expected %llu (the parts that cross a node)", what, sum,
             expect);

    /* what each rank holds: the root's node exact, the rest within the bound */
    int at_root = gather ? rank == root : 1;
    for (int i = 0; at_root && i < nranks; i++) {
        if (!gather && i != rank)
            continue;
        const unsigned char *want_p = ref + (size_t)displs[i] * es;
        const unsigned char *got_p = gather ? all + (size_t)displs[i] * es : part;
        size_t n = (size_t)counts[i];
        if (i / node_ranks == root / node_ranks || nnodes == 1) {
            if (!gather && i == root && ip)
                continue; /* in place: nothing received */
            MT_CHECK(&T, !memcmp(got_p, want_p, n * es), "%s: the part of rank %d (root's node) not exact", what, i);
        } else {
            double w = 0, eb = part_bound(k, want_p, n);
            size_t bad = mt_violations(got_p, want_p, n, k->type, eb, &w);
            MT_CHECK(&T, bad == 0, "%s: rank %d's part: %zu elements beyond %g (worst %g)", what, i, bad, eb, w);
        }
    }
    if (gather && rank == root) { /* the gaps untouched */
        for (int i = 0; i < nranks; i++)
            MT_CHECK(&T, !memcmp(all + ((size_t)displs[i] + (size_t)counts[i]) * es, keep, 3 * es) ||
                             !memcmp(all + ((size_t)displs[i] + (size_t)counts[i]) * es,
                                     ref + ((size_t)displs[i] + (size_t)counts[i]) * es, 3 * es),
                     "%s: the gap after rank %d's part written", what, i);
    }
    if (!gather) {
        unsigned char tail[8 * 8];
        memset(tail, 0x5a, sizeof tail);
        MT_CHECK(&T, ip || !memcmp(part + mine * es, tail, 8 * es), "%s: written beyond the part", what);
        if (rank == root)
            MT_CHECK(&T, !memcmp(all, ref, total * es), "%s: the root's send buffer changed", what);
    }
    free(counts);
    free(displs);
    free(all);
    free(ref);
    free(part);
    free(keep);
}

static void moved(void)
{
    int bases[4] = {0, 1, 1000, 5003};
    for (int nr = 1; nr <= 4; nr++) {
        for (int i = 0; i < 8; i++) {
            rt_case k = rt_matrix_case(i);
            int root = (i * 3 + nr) % nranks;
            moved_one(&k, i % 2, nr, 0, i / 4, bases[(i + nr) % 4], root, i % 3 == 0, RT_FIELD);
            moved_one(&k, 1 - i % 2, nr, 0, 1 - i / 4, bases[(i + nr + 1) % 4], nranks - 1 - root, i % 3 == 1,
                      RT_FIELD);
        }
        rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
        rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, MPI_SUM};
        for (int g = 0; g < 2; g++) {
            moved_one(&a, g, nr, 0, 0, 70000, nranks / 2, 0, RT_FIELD); /* parts of 280 KB */
            moved_one(&b, g, nr, g ? id_gnode : id_snode, 1, 3000, nranks - 1, 1, RT_NOISE); /* configured */
            moved_one(&a, g, nr, 0, 1, 1000, 0, 0, RT_SPECIAL);
            moved_one(&b, g, nr, 0, 0, 1000, nranks - 1, 0, RT_SPECIAL);
        }
    }
}

/* Gatherv `node` at nodes of 2 where the last rank (off the root's node)
 * sends more than the root's count for it: its coder finds it, and the
 * root returns MPI_ERR_TRUNCATE - no hang, no silent wrong answer. */
static void gather_mismatch(void)
{
    if (nranks < 3)
        return;
    int root = 0, last = nranks - 1, n = 500;
    int *counts = mt_xmalloc((size_t)nranks * sizeof *counts), *displs = mt_xmalloc((size_t)nranks * sizeof *displs);
    for (int i = 0; i < nranks; i++) {
        counts[i] = n;
        displs[i] = i * n;
    }
    float *in = mt_xmalloc((size_t)(n + 10) * sizeof *in), *out = mt_xmalloc((size_t)nranks * (size_t)n * sizeof *out);
    rt_fill(in, (size_t)n + 10, MPI_FLOAT, rank, RT_FIELD, MPI_SUM);
    rt_case k = {MPI_FLOAT, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_RESULT, MPI_SUM};
    MT_CHECK_RC(&T, rt_config_nodes(comm, &k, 0, 64, ZMPI_COLL_GATHER, id_gnode, ZMPI_CODEC_FZL, 2),
                "ZMPI_Comm_set_config");
    int rc = ZMPI_Gatherv(in, rank == last ? n + 10 : n, MPI_FLOAT, out, counts, displs, MPI_FLOAT, root, comm);
    int cls = MPI_SUCCESS;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    if (rank == root)
        MT_CHECK(&T, cls == MPI_ERR_TRUNCATE, "gatherv, a block longer than the root's count: rc %d class %d", rc,
                 cls);
    free(counts);
    free(displs);
    free(in);
    free(out);
}

/* Elements of the block rank i sends rank j: kind 0 base, 1 uneven with
 * zeros. */
static int block_count(int kind, int base, int i, int j)
{
    return kind == 0 ? base : (i + 2 * j) % 4 == 1 ? 0 : base + 13 * i + 7 * j;
}

/* One Alltoall (kind 0) or Alltoallv (kind 1) at node_ranks per node,
 * intra: ZMPI_INTRA_NODE=compress. Block (i -> j) is rt_fill(seed
 * i * nranks + j). */
static void a2a_one(const rt_case *k, int node_ranks, int kind, int base, int in_place, int intra, rt_data data)
{
    size_t es = rt_es(k->type), stot = 0, rtot = 0;
    int *sc = mt_xmalloc((size_t)nranks * sizeof *sc), *sd = mt_xmalloc((size_t)nranks * sizeof *sd);
    int *rc_ = mt_xmalloc((size_t)nranks * sizeof *rc_), *rd = mt_xmalloc((size_t)nranks * sizeof *rd);
    for (int j = 0; j < nranks; j++) {
        sc[j] = block_count(kind, base, rank, j);
        rc_[j] = block_count(kind, base, j, rank);
    }
    if (in_place) /* the send blocks are the receive blocks: symmetric counts */
        for (int j = 0; j < nranks; j++)
            sc[j] = rc_[j] = block_count(kind, base, 0, 0);
    for (int j = 0; j < nranks; j++) {
        sd[j] = (int)stot;
        rd[j] = (int)rtot;
        stot += (size_t)sc[j];
        rtot += (size_t)rc_[j] + (kind ? 2 : 0); /* Alltoallv: gaps between the blocks */
    }
    unsigned char *send = mt_xmalloc(stot * es + 1), *got = mt_xmalloc(rtot * es + 1);
    for (int j = 0; j < nranks; j++)
        rt_fill(send + (size_t)sd[j] * es, (size_t)sc[j], k->type, rank * nranks + j, data, MPI_SUM);
    memset(got, 0x5a, rtot * es);
    if (in_place)
        for (int j = 0; j < nranks; j++)
            memcpy(got + (size_t)rd[j] * es, send + (size_t)sd[j] * es, (size_t)sc[j] * es);
    int nnodes = (nranks + node_ranks - 1) / node_ranks;
    char what[200];
    snprintf(what, sizeof what, "alltoall%s nodes of %d, %s %s base %d in_place %d intra %d data %d", kind ? "v" : "",
             node_ranks, rt_type_name(k->type), rt_mode_name(k->mode), base, in_place, intra, (int)data);
    MT_CHECK_RC(&T, rt_config_nodes(comm, k, 0, 64, ZMPI_COLL_ALLTOALL, 0, ZMPI_CODEC_FZL, node_ranks),
                "ZMPI_Comm_set_config");
    ZMPI_Config cfg;
    ZMPI_Comm_get_config(comm, &cfg);
    cfg.intra_node = intra;
    MT_CHECK_RC(&T, ZMPI_Comm_set_config(comm, &cfg), "ZMPI_Comm_set_config (intra)");
    ZMPI_Stats s0 = mt_stats(comm);
    int rc;
    if (kind == 0)
        rc = ZMPI_Alltoall(in_place ? MPI_IN_PLACE : send, base, k->type, got, base, k->type, comm);
    else
        rc = ZMPI_Alltoallv(in_place ? MPI_IN_PLACE : send, sc, sd, k->type, got, rc_, rd, k->type, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    int one_node = nnodes == 1 && !intra && nranks > 1;
    unsigned long long raw = s1.bytes_raw - s0.bytes_raw, sum = 0, expect = 0;
    MPI_Allreduce(&raw, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    for (int i = 0; !one_node && i < nranks; i++)
        for (int j = 0; j < nranks; j++)
            if (i != j && (intra || i / node_ranks != j / node_ranks))
                expect += (unsigned long long)(in_place ? block_count(kind, base, 0, 0) : block_count(kind, base, i, j)) * es;
    MT_CHECK(&T, sum == expect, "%s: %llu bytes compressed, expected %llu (the blocks that cross a node)", what, sum,
             expect);
    for (int j = 0; j < nranks; j++) {
        size_t n = (size_t)rc_[j];
        unsigned char *w = mt_xmalloc(n * es + 1);
        rt_fill(w, n, k->type, j * nranks + rank, data, MPI_SUM);
        const unsigned char *g = got + (size_t)rd[j] * es;
        if (j == rank || (!intra && j / node_ranks == rank / node_ranks)) {
            MT_CHECK(&T, !memcmp(g, w, n * es), "%s: the block from rank %d (same node) not exact", what, j);
        } else {
            double worst = 0, eb = part_bound(k, w, n);
            size_t bad = mt_violations(g, w, n, k->type, eb, &worst);
            MT_CHECK(&T, bad == 0, "%s: block from %d: %zu elements beyond %g (worst %g)", what, j, bad, eb, worst);
        }
        free(w);
    }
    free(sc);
    free(sd);
    free(rc_);
    free(rd);
    free(send);
    free(got);
}

static void a2a(void)
{
    for (int nr = 1; nr <= 4; nr++) {
        for (int i = 0; i < 4; i++) {
            rt_case k = rt_matrix_case(i);
            a2a_one(&k, nr, i % 2, i < 2 ? 3000 : 700, i == 3, 0, RT_FIELD);
        }
        rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
        a2a_one(&a, nr, 1, 2000, 0, 1, RT_FIELD); /* ZMPI_INTRA_NODE=compress */
        a2a_one(&a, nr, 0, 1000, 0, 0, RT_SPECIAL);
    }
}

/* Elements of rank i's Allgatherv block: kind 0 base, 1 uneven with zeros. */
static int ag_count(int kind, int base, int i)
{
    return kind == 0 ? base : i % 3 == 2 ? 0 : base + 29 * i;
}

/* One Allgather (kind 0) or Allgatherv (kind 1, a gap of 2 elements after
 * each block) at node_ranks per node; algo 0: the default. Rank i's block
 * is rt_fill(seed i). */
static void ag_one(const rt_case *k, int node_ranks, int algo, int kind, int base, int in_place, rt_data data)
{
    size_t es = rt_es(k->type), total = 0;
    int *counts = mt_xmalloc((size_t)nranks * sizeof *counts), *displs = mt_xmalloc((size_t)nranks * sizeof *displs);
    for (int i = 0; i < nranks; i++) {
        counts[i] = ag_count(kind, base, i);
        displs[i] = (int)total;
        total += (size_t)counts[i] + (kind ? 2 : 0);
    }
    size_t mine = (size_t)counts[rank];
    unsigned char *ref = mt_xmalloc(total * es + 1), *got = mt_xmalloc(total * es + 1);
    memset(ref, 0x5a, total * es);
    for (int i = 0; i < nranks; i++)
        rt_fill(ref + (size_t)displs[i] * es, (size_t)counts[i], k->type, i, data, MPI_SUM);
    memset(got, 0x5a, total * es);
    if (in_place)
        memcpy(got + (size_t)displs[rank] * es, ref + (size_t)displs[rank] * es, mine * es);
    int nnodes = (nranks + node_ranks - 1) / node_ranks, even = nranks % node_ranks == 0;
    int multi = nnodes > 1 && nnodes < nranks;
    /* node: configured, or the default on several multi-rank nodes; nodes of
     * different sizes run rdb (the ring where N is no power of two) */
    int node_ran = nnodes > 1 && even && (algo == id_agnode || (algo == 0 && multi));
    int want = node_ran ? id_agnode : algo == id_agnode || multi ? mt_algo_ran(ZMPI_COLL_ALLGATHER, id_agrdb, nranks) : -1;
    char what[200];
    snprintf(what, sizeof what, "allgather%s nodes of %d, algo %d, %s %s base %d in_place %d data %d", kind ? "v" : "",
             node_ranks, want, rt_type_name(k->type), rt_mode_name(k->mode), base, in_place, (int)data);
    MT_CHECK_RC(&T, rt_config_nodes(comm, k, 0, 64, ZMPI_COLL_ALLGATHER, algo, ZMPI_CODEC_FZL, node_ranks),
                "ZMPI_Comm_set_config");
    ZMPI_Stats s0 = mt_stats(comm);
    const void *send = in_place ? MPI_IN_PLACE : ref + (size_t)displs[rank] * es;
    int rc = kind == 0 ? ZMPI_Allgather(send, base, k->type, got, base, k->type, comm)
                       : ZMPI_Allgatherv(send, (int)mine, k->type, got, counts, displs, k->type, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_way(ZMPI_COLL_ALLGATHER, nnodes, &s0, &s1, want, id_agnode, what);
    for (int i = 0; i < nranks; i++) {
        const unsigned char *w = ref + (size_t)displs[i] * es, *g = got + (size_t)displs[i] * es;
        size_t n = (size_t)counts[i];
        if (i == rank || nnodes == 1 || (node_ran && i / node_ranks == rank / node_ranks)) {
            MT_CHECK(&T, !memcmp(g, w, n * es), "%s: the block of rank %d (this rank's node) not exact", what, i);
        } else {
            double worst = 0, eb = part_bound(k, w, n);
            size_t bad = mt_violations(g, w, n, k->type, eb, &worst);
            MT_CHECK(&T, bad == 0, "%s: block of rank %d: %zu elements beyond %g (worst %g)", what, i, bad, eb, worst);
        }
        if (kind)
            MT_CHECK(&T, !memcmp(g + n * es, ref + (displs[i] + n) * es, 2 * es), "%s: the gap after block %d written",
                     what, i);
    }
    /* every rank of a node holds the same values (node: what one decoded, the others copied) */
    if (node_ran) {
        unsigned long long h = rt_hash(got, total * es), *all = mt_xmalloc((size_t)nranks * sizeof *all);
        MPI_Allgather(&h, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, comm);
        for (int i = 0; i < nranks; i++)
            MT_CHECK(&T, i / node_ranks != rank / node_ranks || all[i] == h,
                     "%s: ranks %d and %d of one node hold different values", what, rank, i);
        free(all);
    }
    free(counts);
    free(displs);
    free(ref);
    free(got);
}

static void allgather(void)
{
    for (int nr = 1; nr <= 4; nr++) {
        for (int i = 0; i < 8; i++) {
            rt_case k = rt_matrix_case(i);
            ag_one(&k, nr, 0, i % 2, (int[]){1, 700, 3000, 0}[i % 4], i % 3 == 0, RT_FIELD);
        }
        rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
        rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_SUM};
        ag_one(&a, nr, 0, 0, 20000, 0, RT_FIELD); /* blocks of 80 KB, above the floor of 64 KiB */
        ag_one(&b, nr, id_agnode, 1, 2000, 1, RT_NOISE); /* configured */
        ag_one(&a, nr, 0, 1, 1000, 0, RT_SPECIAL);
        ag_one(&b, nr, id_agnode, 0, 1000, 0, RT_SPECIAL);
    }
}

/* Rank b's block of a Reduce_scatter: kind 0 base each (also through
 * Reduce_scatter_block), 1 uneven with zeros, 2 a few ranks only. */
static int rs_count(int kind, int base, int b)
{
    return kind == 0 ? base : kind == 1 ? (b % 3 == 1 ? 0 : base + 37 * b) : (b % 3 == 0);
}

/* One Reduce_scatter at node_ranks per node (algo 0: the default), checked
 * against plain MPI's in a wider type and the documented bound: result
 * scope the user's; message scope ABS M - 1 compressions (node) or N - 1
 * (the ring); REL the ring's (node's partials of L ranks over M - 1 merges
 * stay within it). */
static void rs_one(const rt_case *k, int node_ranks, int algo, zmpi_codec codec, int kind, int base, int inplace,
                   rt_data data)
{
    size_t es = rt_es(k->type), total = 0;
    int m = rt_mult(k->op), rc, block = kind == 0;
    int *counts = mt_xmalloc((size_t)nranks * sizeof *counts), *wcounts = mt_xmalloc((size_t)nranks * sizeof *wcounts);
    for (int b = 0; b < nranks; b++) {
        counts[b] = rs_count(kind, base, b);
        wcounts[b] = counts[b] * m;
        total += (size_t)counts[b];
    }
    size_t mine = (size_t)counts[rank];
    void *in = mt_xmalloc(total * es + 1), *got = mt_xmalloc(total * es + 1);
    void *win = mt_xmalloc(total * (size_t)m * rt_wes(k->type) + 1);
    void *wref = mt_xmalloc(mine * (size_t)m * rt_wes(k->type) + 1);
    rt_fill(in, total, k->type, rank, data, k->op);
    rt_widen(in, total, k->type, k->op, win);
    MPI_Reduce_scatter(win, wref, wcounts, rt_wtype(k->type), k->op, comm);
    double R = mt_global_range(in, total, k->type, comm);

    int nnodes = (nranks + node_ranks - 1) / node_ranks, even = nranks % node_ranks == 0;
    int multi = nnodes > 1 && nnodes < nranks;
    /* node: configured, or the default on several multi-rank nodes; nodes
     * of different sizes run the ring */
    int node_ran = nnodes > 1 && even && (algo == id_rsnode || (algo == 0 && multi));
    int want = node_ran ? id_rsnode : algo == id_rsnode || multi ? id_rsring : -1;
    char what[200];
    snprintf(what, sizeof what,
             "reduce_scatter%s nodes of %d, algo %d, codec %d, %s %s %s %s base %d inplace %d data %d",
             block ? "_block" : "", node_ranks, want, (int)codec, rt_type_name(k->type), rt_mode_name(k->mode),
             rt_scope_name(k->scope), rt_op_name(k->op), base, inplace, (int)data);
    MT_CHECK_RC(&T, rt_config_nodes(comm, k, 0, 64, ZMPI_COLL_REDUCE_SCATTER, algo, codec, node_ranks),
                "ZMPI_Comm_set_config");
    if (inplace)
        memcpy(got, in, total * es);
    ZMPI_Stats s0 = mt_stats(comm);
    const void *send = inplace ? MPI_IN_PLACE : in;
    rc = block ? ZMPI_Reduce_scatter_block(send, got, base, k->type, k->op, comm)
               : ZMPI_Reduce_scatter(send, got, counts, k->type, k->op, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    if (total > 0)
        check_way(ZMPI_COLL_REDUCE_SCATTER, nnodes, &s0, &s1, want, id_rsnode, what);
    int hops = node_ran ? nnodes - 1 : nranks - 1;
    double bound = k->scope == ZMPI_SCOPE_MESSAGE && k->mode == ZMPI_EB_ABS ? hops * k->eb
                                                                             : rt_bound(k, R, nranks, nranks - 1, 0);
    rt_check_result(&T, what, k, got, wref, mine, bound);
    free(counts);
    free(wcounts);
    free(in);
    free(got);
    free(win);
    free(wref);
}

static void reduce_scatter(void)
{
    for (int nr = 1; nr <= 4; nr++) {
        for (int i = 0; i < RT_MATRIX; i++) {
            rt_case k = rt_matrix_case(i);
            int base = (int[]){1, 700, 3000, 0}[(i + nr) % 4];
            rs_one(&k, nr, 0, ZMPI_CODEC_FZL, i % 3, base, (i / 3 + nr) % 2, RT_FIELD);
        }
        rt_case a = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
        rt_case b = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_MESSAGE, MPI_SUM};
        rt_case h = {MPI_FLOAT, ZMPI_EB_ABS, 1e-2, ZMPI_SCOPE_RESULT, MPI_MAX};
        rs_one(&a, nr, 0, ZMPI_CODEC_FZL, 0, 40000, 0, RT_FIELD); /* blocks of 160 KB */
        rs_one(&a, nr, 0, ZMPI_CODEC_AUTO, 1, 5000, 1, RT_FIELD); /* SUMs on grid codes */
        rs_one(&b, nr, id_rsnode, ZMPI_CODEC_AUTO, 1, 2000, 0, RT_NOISE); /* configured */
        rs_one(&a, nr, 0, ZMPI_CODEC_FZL, 0, 1000, 1, RT_SPECIAL);
        rs_one(&h, nr, id_rsnode, ZMPI_CODEC_FZL, 2, 0, 0, RT_SPECIAL);
    }
}

/* The decision, with a network configured so fast that the model finds no
 * gain and with no network told (the default). Three calls of one size
 * class each:
 * - every rank on one node: all plain, counted as same-node fallbacks;
 * - several multi-rank nodes, told or not, and no network told on any
 *   layout: the default compressed algorithm twice (a warm-up, then
 *   measured; node-aware where the nodes have several ranks, flat where
 *   each rank is a node), then plain MPI, measured - the model (of flat
 *   algorithms, one link per rank) never vetoes a node-aware default;
 * - told the fast network, each rank a node of its own: plain at the
 *   first call, as the model says (later calls follow the measurement:
 *   on oversubscribed ranks plain may measure slow enough to try).
 * Every result is checked against the bound (plain ones exactly). */
static void decision(void)
{
    size_t n = (size_t)1 << 16;
    float *in = mt_xmalloc(n * sizeof *in), *out = mt_xmalloc(n * sizeof *out);
    rt_case k = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_RESULT, MPI_SUM};
    size_t wn = n * (size_t)rt_mult(k.op);
    void *win = mt_xmalloc(wn * rt_wes(k.type)), *wref = mt_xmalloc(wn * rt_wes(k.type));
    rt_fill(in, n, MPI_FLOAT, rank, RT_FIELD, MPI_SUM);
    rt_widen(in, n, k.type, k.op, win);
    MPI_Allreduce(win, wref, (int)wn, rt_wtype(k.type), k.op, comm);
    double R = mt_global_range(in, n, k.type, comm);
    for (int told = 0; told < 2; told++)
        for (int nr = 1; nr <= 4; nr++) {
            int nnodes = (nranks + nr - 1) / nr, multi = nnodes > 1 && nnodes < nranks;
            MT_CHECK_RC(&T, rt_config_nodes(comm, &k, 0, 4096, ZMPI_COLL_ALLREDUCE, 0, ZMPI_CODEC_AUTO, nr),
                        "ZMPI_Comm_set_config");
            ZMPI_Config cfg;
            ZMPI_Comm_get_config(comm, &cfg);
            cfg.decision = 0; /* measured (the test environment has ZMPI_DECISION=always) */
            cfg.net_bw = told ? 1e13 : 0;
            cfg.net_lat = told ? 1e-7 : 0;
            MT_CHECK_RC(&T, ZMPI_Comm_set_config(comm, &cfg), "ZMPI_Comm_set_config (network)");
            int zway = nnodes > 1 && (multi || !told); /* the first two calls compressed */
            for (int call = 0; call < 3; call++) {
                char what[160];
                snprintf(what, sizeof what, "decision, %s, nodes of %d, call %d",
                         told ? "a fast network told" : "no network told", nr, call);
                ZMPI_Stats s0 = mt_stats(comm); /* the settings changed: nothing measured */
                MT_CHECK_RC(&T, ZMPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm), what);
                ZMPI_Stats s1 = mt_stats(comm);
                int z = s1.compressed > s0.compressed, want = zway && call < 2;
                if (nnodes == 1 || want) /* a same-node fallback, or compressed by the default */
                    check_way(ZMPI_COLL_ALLREDUCE, nnodes, &s0, &s1, multi ? id_node : 0, id_node, what);
                else if (zway || call == 0) { /* plain, as the decision has it; a told flat default's
                                                 later calls follow the measurement (on oversubscribed
                                                 ranks plain may measure slow enough to try) */
                    MT_CHECK(&T, !z && s1.fallback_model == s0.fallback_model + 1, "%s: not the decision's plain",
                             what);
                    mt_check_ran(&T, comm, ZMPI_COLL_ALLREDUCE, ZMPI_ALGO_MPI, what);
                }
                rt_check_result(&T, what, &k, out, wref, n, z ? rt_bound(&k, R, nranks, nranks - 1, 1) : 0);
            }
        }
    free(in);
    free(out);
    free(win);
    free(wref);
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_node");
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    id_node = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLREDUCE, "node");
    id_rhd = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLREDUCE, "rhd");
    MT_CHECK(&T, id_node > 0 && id_rhd > 0, "algorithm ids %d %d", id_node, id_rhd);
    id_bnode = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_BCAST, "node");
    MT_CHECK(&T, id_bnode > 0, "Bcast node id %d", id_bnode);
    id_rnode = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE, "node");
    id_rsg = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE, "rsg");
    MT_CHECK(&T, id_rnode > 0 && id_rsg > 0, "Reduce ids %d %d", id_rnode, id_rsg);
    id_snode = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_SCATTER, "node");
    id_gnode = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_GATHER, "node");
    MT_CHECK(&T, id_snode > 0 && id_gnode > 0, "Scatter / Gather node ids %d %d", id_snode, id_gnode);
    id_agnode = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLGATHER, "node");
    id_agrdb = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLGATHER, "rdb");
    MT_CHECK(&T, id_agnode > 0 && id_agrdb > 0, "Allgather ids %d %d", id_agnode, id_agrdb);
    id_rsnode = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE_SCATTER, "node");
    id_rsring = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_REDUCE_SCATTER, "ring");
    MT_CHECK(&T, id_rsnode > 0 && id_rsring > 0, "Reduce_scatter ids %d %d", id_rsnode, id_rsring);
    reduce_scatter();
    allgather();
    moved();
    a2a();
    gather_mismatch();
    allreduce();
    reduce();
    decision();
    bcast();
    MPI_Comm_free(&comm);
    return mt_finish(&T);
}
