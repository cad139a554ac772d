/*
 * ZMPI_Scatter and ZMPI_Scatterv: every algorithm, float and double, ABS and
 * REL, parts of 0, 1, a few, an odd number and many elements (>= 1 Mi in
 * all, a real field), uneven parts with zeros and gaps (v), roots 0, N/2
 * and N-1 in the sweep and every root with every algorithm, MPI_IN_PLACE at
 * the root, a derived recvtype at the root; every element checked against
 * plain MPI and the bound of its part; fallbacks byte-identical; white
 * noise; statistics prove the compressed path ran, and last_algorithm that
 * the configured algorithm ran (plain MPI for the fallbacks).
 * cprp2p (compress per hop) in both scopes: result scope within the user's
 * bound (REL: of the range of all parts), message scope within one bound per
 * compression of the part; the bytes compressed over all ranks show that
 * every inner rank recompressed what it forwarded.
 */
#include "movement.h"

/* Scatter (counts NULL) or Scatterv, ZMPI's or MPI's. */
static int scatter(int zmpi, const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                   MPI_Datatype rtype, const int *counts, const int *displs, int root)
{
    if (!counts)
        return zmpi ? ZMPI_Scatter(send, scount, stype, recv, rcount, rtype, root, MPI_COMM_WORLD)
                    : MPI_Scatter(send, scount, stype, recv, rcount, rtype, root, MPI_COMM_WORLD);
    return zmpi ? ZMPI_Scatterv(send, counts, displs, stype, recv, rcount, rtype, root, MPI_COMM_WORLD)
                : MPI_Scatterv(send, counts, displs, stype, recv, rcount, rtype, root, MPI_COMM_WORLD);
}

/* Elements of the part of rank i: kind 0 (Scatter) base; 1 uneven with
 * zeros; 2 fewer elements than ranks. */
static int count_of(int kind, int base, int i, int unused, int size)
{
    (void)unused;
    (void)size;
    if (kind == 0)
        return base;
    if (kind == 1)
        return i % 3 == 1 ? 0 : base + 37 * i;
    return i < 2 ? 1 : 0;
}

static void one(mv_run *r, int kind, int base, int root, int in_place, int noise)
{
    mt_state *t = r->t;
    int size = t->size, rank = t->rank;
    size_t es = mv_es(r->type);
    mv_layout l = mv_layout_make(count_of, kind, base, rank, size, 0, 5); /* v: reverse order, gaps */
    size_t mine = (size_t)l.counts[rank];
    mv_bufs b = mv_bufs_make(r, l.total, mine, noise, 5 + (uint64_t)root, (size_t)root + 1);
    char *send = b.send, *orig = b.orig, *got = b.got, *ref = b.ref;
    const int *counts = kind ? l.counts : NULL, *displs = kind ? l.displs : NULL;
    int n = kind ? (int)mine : base;
    scatter(0, orig, n, r->type, ref, n, r->type, counts, displs, root);
    void *rb = in_place && rank == root ? MPI_IN_PLACE : got;
    const void *sb = rank == root ? send : NULL;
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int rc = scatter(1, sb, n, r->type, rb, n, r->type, counts, displs, root);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    char what[200], desc[120];
    mv_describe(r, kind ? "scatterv" : "scatter", desc, sizeof desc);
    snprintf(what, sizeof what, "%s base=%d root=%d in_place=%d", desc, base, root, in_place);
    mv_check_call(r, what, rc, &s0, &s1);
    mv_check_bytes_rooted(r, what, &s0, &s1, &l, root);
    mv_account(r, &s0, &s1);
    if (rank == root) {
        mv_same(t, what, send, orig, l.total * es); /* the send buffer is untouched */
        if (!in_place)
            mv_same(t, what, got, ref, mine * es); /* own part copied exactly */
    } else { /* cprp2p, result scope, REL: the bound of the range of all parts */
        mv_check_block(r, what, got, ref, mine, mv_layout_range(&l, orig, r->type),
                       mv_hops((rank - root + size) % size), 0);
    }
    mv_bufs_free(&b);
    mv_layout_free(&l);
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_scatter");
    mv_rooted_algorithms(&t, ZMPI_COLL_SCATTER, 2, one);
    /* the root receives its own part into a derived datatype of floats: the
     * compressed path still runs (the root's significant type is sendtype) */
    mv_derived_root(&t, ZMPI_COLL_SCATTER, scatter, t.size - 1, 4000, 9);
    /* plain-MPI fallbacks: byte-identical to MPI_Scatter(v), and counted;
     * Scatterv: every other part a half, in order (below min_bytes it runs
     * compressed from 2 ranks) */
    mv_fallback_case f = {.coll = ZMPI_COLL_SCATTER, .call = scatter, .n = 3000,
                          .send_elems = (size_t)3000 * (size_t)t.size, .out_elems = 3000, .fill_offset = 4,
                          .v_div = 2, .v_small = 1};
    mv_fallbacks(&t, &f);
    return mt_finish(&t);
}
