/*
 * ZMPI_Gather and ZMPI_Gatherv: every algorithm, float and double, ABS and
 * REL, blocks of 0, 1, a few, an odd number and many elements (>= 1 Mi in
 * all, a real field with per-rank offsets), uneven blocks with zeros and
 * gaps (v), roots 0, N/2 and N-1 in the sweep and every root with every
 * algorithm, MPI_IN_PLACE at the root, a derived sendtype at the root; every
 * element checked against plain MPI and the bound of its block; fallbacks
 * byte-identical; white noise; statistics prove the compressed path ran,
 * and last_algorithm that the configured algorithm ran. cprp2p (compress per hop) in both scopes: result
 * scope within the user's bound (REL: of the range of all blocks), message
 * scope within one bound per compression of the block; the bytes compressed
 * over all ranks show that every inner rank recompressed its subtree.
 */
#include "movement.h"

/* Gather (counts NULL) or Gatherv, ZMPI's or MPI's. */
static int gather(int zmpi, const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                  MPI_Datatype rtype, const int *counts, const int *displs, int root)
{
    if (!counts)
        return zmpi ? ZMPI_Gather(send, scount, stype, recv, rcount, rtype, root, MPI_COMM_WORLD)
                    : MPI_Gather(send, scount, stype, recv, rcount, rtype, root, MPI_COMM_WORLD);
    return zmpi ? ZMPI_Gatherv(send, scount, stype, recv, counts, displs, rtype, root, MPI_COMM_WORLD)
                : MPI_Gatherv(send, scount, stype, recv, counts, displs, rtype, root, MPI_COMM_WORLD);
}

/* Elements of the block of rank i: kind 0 (Gather) base; 1 uneven with
 * zeros; 2 fewer elements than ranks. */
static int count_of(int kind, int base, int i, int unused, int size)
{
    (void)unused;
    if (kind == 0)
        return base;
    if (kind == 1)
        return i % 3 == 2 ? 0 : base + 53 * i;
    return i == 1 || i == size - 1 ? 1 : 0;
}

static void one(mv_run *r, int kind, int base, int root, int in_place, int noise)
{
    mt_state *t = r->t;
    int size = t->size, rank = t->rank;
    size_t es = mv_es(r->type);
    mv_layout l = mv_layout_make(count_of, kind, base, rank, size, 0, 3); /* v: reverse order, gaps */
    size_t mine = (size_t)l.counts[rank];
    mv_bufs b = mv_bufs_make(r, mine, l.total, noise, 11 + (uint64_t)rank, (size_t)rank + 1);
    char *send = b.send, *orig = b.orig, *got = b.got, *ref = b.ref;
    const int *counts = kind ? l.counts : NULL, *displs = kind ? l.displs : NULL;
    int n = kind ? (int)mine : base;
    gather(0, orig, n, r->type, ref, n, r->type, counts, displs, root);
    const void *sb = send;
    if (in_place && rank == root) { /* the root's block already in place */
        memcpy(got + (size_t)l.displs[root] * es, orig, mine * es);
        sb = MPI_IN_PLACE;
    }
    ZMPI_Stats s0 = mt_stats(MPI_COMM_WORLD);
    int rc = gather(1, sb, n, r->type, got, n, r->type, counts, displs, root);
    ZMPI_Stats s1 = mt_stats(MPI_COMM_WORLD);
    char what[200], desc[120];
    mv_describe(r, kind ? "gatherv" : "gather", desc, sizeof desc);
    snprintf(what, sizeof what, "%s base=%d root=%d in_place=%d", desc, base, root, in_place);
    mv_check_call(r, what, rc, &s0, &s1);
    mv_same(t, what, send, orig, mine * es); /* the send buffer is untouched */
    mv_account(r, &s0, &s1);
    mv_check_bytes_rooted(r, what, &s0, &s1, &l, root);
    if (rank == root) {
        double global = mv_layout_range(&l, ref, r->type); /* cprp2p, result scope, REL */
        for (int i = 0; i < size; i++) {
            size_t at = (size_t)l.displs[i] * es;
            mv_check_block(r, what, got + at, ref + at, (size_t)l.counts[i], global,
                           mv_hops((i - root + size) % size), i == root);
        }
        if (kind != 0)
            mv_check_gaps(t, what, got, ref, &l, r->type);
    }
    mv_bufs_free(&b);
    mv_layout_free(&l);
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_gather");
    mv_rooted_algorithms(&t, ZMPI_COLL_GATHER, 1, one);
    /* the root sends its own block as a derived datatype of floats */
    mv_derived_root(&t, ZMPI_COLL_GATHER, gather, 0, 4000, (size_t)t.rank + 20);
    /* plain-MPI fallbacks; Gatherv: every other block a third, in reverse order */
    mv_fallback_case f = {.coll = ZMPI_COLL_GATHER, .call = gather, .n = 3000, .send_elems = 3000,
                          .out_elems = (size_t)3000 * (size_t)t.size, .fill_offset = (size_t)t.rank,
                          .v_div = 3, .v_reversed = 1};
    mv_fallbacks(&t, &f);
    return mt_finish(&t);
}
