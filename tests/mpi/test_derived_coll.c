/*
 * Derived datatypes in the data-movement collectives: Bcast, Scatter,
 * Gather, Allgather and Alltoall with a strided block type (every other
 * element of a 2*NB array: a vector resized so that instances tile) on
 * every rank (also built as an hindexed block of single elements), or on
 * some ranks only while the others pass the same elements
 * contiguously (a root scattering a strided array to contiguous receivers,
 * even ranks strided and odd ranks contiguous) - the type signatures match,
 * so MPI allows it and every rank must take the same path (this mix hung
 * before the conversion) - and the in-place forms; float with an ABS bound,
 * double lossless (zstd).
 *
 * Every element received is checked against the value its sender computed
 * (within the bound; identical with zstd), every gap of a strided receive
 * buffer must keep its sentinel, and the call must have moved compressed
 * data on every rank that sent a block.
 */
#include <math.h>
#include <string.h>

#include "mpitest.h"

#define NB 20000         /* elements per block */
#define SENTINEL (-7777.0)

typedef struct env {
    mt_state *t;
    MPI_Comm comm;
    int rank, size;
} env;

typedef struct layout {
    MPI_Datatype basic, strided; /* strided: NB elements, every other one, extent 2*NB */
    size_t es;
    double bound; /* 0: lossless */
} layout;

/* The value element i of block `blk` sent by rank src holds. */
static double value(int src, int blk, int i)
{
    return sin(0.001 * (double)i + 0.7 * src + 0.3 * blk) * 10.0 + 0.05 * blk;
}

/* A buffer of nblk blocks, strided (2*NB elements per block) or not. */
static void *buffer(const layout *L, int nblk, int strided)
{
    size_t n = (size_t)nblk * NB * (strided ? 2 : 1);
    void *b = malloc(n * L->es + 1);
    for (size_t i = 0; i < n; i++) {
        if (L->es == 4)
            ((float *)b)[i] = (float)SENTINEL;
        else
            ((double *)b)[i] = SENTINEL;
    }
    return b;
}

static size_t slot(int blk, int i, int strided)
{
    return strided ? (size_t)blk * 2 * NB + 2 * (size_t)i : (size_t)blk * NB + (size_t)i;
}

static void put_block(const layout *L, void *b, int blk, int strided, int src, int vblk)
{
    for (int i = 0; i < NB; i++) {
        double v = value(src, vblk, i);
        if (L->es == 4)
            ((float *)b)[slot(blk, i, strided)] = (float)v;
        else
            ((double *)b)[slot(blk, i, strided)] = v;
    }
}

static double get(const layout *L, const void *b, size_t k)
{
    return L->es == 4 ? (double)((const float *)b)[k] : ((const double *)b)[k];
}

/* Block blk of b must hold rank src's block vblk; a strided buffer's gaps
 * their sentinel. */
static void check_block(env *e, const layout *L, const void *b, int blk, int strided, int src, int vblk,
                        const char *what)
{
    size_t bad = 0, gaps = 0;
    for (int i = 0; i < NB; i++) {
        double want = L->es == 4 ? (double)(float)value(src, vblk, i) : value(src, vblk, i);
        double got = get(L, b, slot(blk, i, strided));
        if (L->bound > 0 ? !(fabs(got - want) <= L->bound) : got != want)
            bad++;
        if (strided && get(L, b, slot(blk, i, 1) + 1) != (L->es == 4 ? (double)(float)SENTINEL : SENTINEL))
            gaps++;
    }
    MT_CHECK(e->t, bad == 0 && gaps == 0, "%s: block %d from rank %d: %zu elements off, %zu gaps written", what,
             blk, src, bad, gaps);
}

/* The type and count of one block. */
static MPI_Datatype type_of(const layout *L, int strided)
{
    return strided ? L->strided : L->basic;
}

static int count_of(int strided)
{
    return strided ? 1 : NB;
}

static void check_compressed(env *e, const ZMPI_Stats *s0, const char *what)
{
    ZMPI_Stats s1;
    ZMPI_Comm_get_stats(e->comm, &s1);
    MT_CHECK(e->t, s1.compressed > s0->compressed, "%s: nothing compressed", what);
}

static void run_bcast(env *e, const layout *L, int mixed, const char *what)
{
    int root = e->size - 1, strided = !mixed || e->rank == root;
    void *b = buffer(L, 1, strided);
    ZMPI_Stats s0;
    ZMPI_Comm_get_stats(e->comm, &s0);
    if (e->rank == root)
        put_block(L, b, 0, strided, root, 0);
    int rc = ZMPI_Bcast(b, count_of(strided), type_of(L, strided), root, e->comm);
    MT_CHECK(e->t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_block(e, L, b, 0, strided, root, 0, what);
    if (e->size > 1 && e->rank == root)
        check_compressed(e, &s0, what);
    free(b);
}

/* Scatter (gather = 0) or Gather from / to root 0; mixed: only the root's
 * side is strided; inplace: Gather's root passes MPI_IN_PLACE. */
static void run_rooted(env *e, const layout *L, int gather, int mixed, int inplace, const char *what)
{
    int root = 0, is_root = e->rank == root, mine_strided = !mixed, all_strided = 1;
    void *all = is_root ? buffer(L, e->size, all_strided) : NULL;
    void *mine = buffer(L, 1, mine_strided);
    ZMPI_Stats s0;
    ZMPI_Comm_get_stats(e->comm, &s0);
    int rc;
    if (!gather) {
        for (int r = 0; is_root && r < e->size; r++)
            put_block(L, all, r, 1, root, r);
        rc = ZMPI_Scatter(all, 1, L->strided, mine, count_of(mine_strided), type_of(L, mine_strided), root,
                          e->comm);
        check_block(e, L, mine, 0, mine_strided, root, e->rank, what);
    } else {
        put_block(L, mine, 0, mine_strided, e->rank, 0);
        if (is_root && inplace)
            put_block(L, all, root, 1, root, 0);
        rc = ZMPI_Gather(is_root && inplace ? MPI_IN_PLACE : mine, count_of(mine_strided), type_of(L, mine_strided),
                         all, 1, L->strided, root, e->comm);
        for (int r = 0; is_root && r < e->size; r++)
            check_block(e, L, all, r, 1, r, 0, what);
    }
    MT_CHECK(e->t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    if (e->size > 1 && (gather ? !is_root : is_root))
        check_compressed(e, &s0, what);
    free(all);
    free(mine);
}

/* Allgather (a2a = 0) or Alltoall; mixed: odd ranks contiguous. */
static void run_all(env *e, const layout *L, int a2a, int mixed, int inplace, const char *what)
{
    int strided = !mixed || e->rank % 2 == 0, nsend = a2a ? e->size : 1;
    void *sb = buffer(L, nsend, strided), *rb = buffer(L, e->size, strided);
    for (int k = 0; k < nsend; k++)
        put_block(L, inplace ? rb : sb, inplace && !a2a ? e->rank : k, strided, e->rank, a2a ? k : 0);
    ZMPI_Stats s0;
    ZMPI_Comm_get_stats(e->comm, &s0);
    const void *send = inplace ? MPI_IN_PLACE : sb;
    int c = count_of(strided), rc;
    MPI_Datatype t = type_of(L, strided);
    rc = a2a ? ZMPI_Alltoall(send, c, t, rb, c, t, e->comm) : ZMPI_Allgather(send, c, t, rb, c, t, e->comm);
    MT_CHECK(e->t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    for (int r = 0; r < e->size; r++)
        check_block(e, L, rb, r, strided, r, a2a ? e->rank : 0, what);
    if (e->size > 1)
        check_compressed(e, &s0, what);
    free(sb);
    free(rb);
}

static void run_layout(env *e, const layout *L, const char *name)
{
    char what[96];
    for (int mixed = 0; mixed < 2; mixed++) {
        const char *m = mixed ? "mixed" : "strided";
        snprintf(what, sizeof what, "%s Bcast %s", name, m);
        run_bcast(e, L, mixed, what);
        snprintf(what, sizeof what, "%s Scatter %s", name, m);
        run_rooted(e, L, 0, mixed, 0, what);
        for (int inplace = 0; inplace < 2; inplace++) {
            const char *ip = inplace ? " in place" : "";
            snprintf(what, sizeof what, "%s Gather %s%s", name, m, ip);
            run_rooted(e, L, 1, mixed, inplace, what);
            snprintf(what, sizeof what, "%s Allgather %s%s", name, m, ip);
            run_all(e, L, 0, mixed, inplace, what);
            snprintf(what, sizeof what, "%s Alltoall %s%s", name, m, ip);
            run_all(e, L, 1, mixed, inplace, what);
        }
    }
}

/* hindexed_block: the same strided block as one hindexed block of one element each */
static void make_layout(layout *L, MPI_Datatype basic, double bound, int hindexed_block)
{
    MPI_Datatype v;
    L->basic = basic;
    L->es = basic == MPI_FLOAT ? 4 : 8;
    L->bound = bound;
    if (hindexed_block) {
        MPI_Aint *d = malloc(NB * sizeof *d);
        for (int i = 0; i < NB; i++)
            d[i] = (MPI_Aint)(2 * (size_t)i * L->es);
        MPI_Type_create_hindexed_block(NB, 1, d, basic, &v);
        free(d);
    } else {
        MPI_Type_vector(NB, 1, 2, basic, &v);
    }
    MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * NB * L->es), &L->strided);
    MPI_Type_commit(&L->strided);
    MPI_Type_free(&v);
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_derived_coll");
    env e = {&t, MPI_COMM_NULL, t.rank, t.size};
    MPI_Comm_dup(MPI_COMM_WORLD, &e.comm); /* inherits MPI_ERRORS_RETURN */
    layout f, d, h;
    make_layout(&f, MPI_FLOAT, 1e-3, 0);
    make_layout(&d, MPI_DOUBLE, 0, 0);
    make_layout(&h, MPI_FLOAT, 1e-3, 1);
    mt_config(e.comm, ZMPI_CODEC_FZL, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_MESSAGE, 256);
    run_layout(&e, &f, "float abs 1e-3");
    run_layout(&e, &h, "float abs 1e-3 hindexed_block");
    mt_config(e.comm, ZMPI_CODEC_ZSTD, ZMPI_EB_NONE, 0.0, ZMPI_SCOPE_MESSAGE, 256);
    run_layout(&e, &d, "double zstd");
    MPI_Type_free(&f.strided);
    MPI_Type_free(&d.strided);
    MPI_Type_free(&h.strided);
    MPI_Comm_free(&e.comm);
    return mt_finish(&t);
}
