/*
 * Helpers and drivers shared by the tests of the data-movement collectives
 * (test_bcast, test_scatter, test_gather, test_allgather, test_alltoall);
 * movement.c of the library zmpi_mpitest.
 *
 * Every lossy result is compared element by element with plain MPI's result
 * and the documented bound: ABS eb; REL rel * (max - min) of the block that
 * was compressed (the origin's block). Statistics prove that the compressed
 * path ran, so a silent fallback cannot pass.
 */
#ifndef ZMPI_MOVEMENT_H
#define ZMPI_MOVEMENT_H

#include "mpitest.h"

size_t mv_es(MPI_Datatype type);
const char *mv_tname(MPI_Datatype type);

/* Configuration for one collective: codec fzl, the bound, scope, algorithm id
 * (or ZMPI_ALGO_DEFAULT / ZMPI_ALGO_MPI), size threshold and chunk. */
int mv_config(MPI_Comm comm, ZMPI_Coll coll, int algo, zmpi_eb_mode mode, double eb, ZMPI_Scope scope,
              size_t min_bytes, size_t chunk);

/* Deterministic white noise in [-1, 1) (poorly compressible). */
void mv_fill_noise(void *buf, size_t n, MPI_Datatype type, uint64_t seed);
/* Fills with a sentinel that no result should contain. */
void mv_fill_garbage(void *buf, size_t n, MPI_Datatype type);
/* Finite max - min of n elements (0 if none). */
double mv_range(const void *buf, size_t n, MPI_Datatype type);
/* The bound of one compression of a block: ABS eb; REL rel * range of the
 * block (a constant block is stored exactly: bound 0 = byte-identical). */
double mv_bound(zmpi_eb_mode mode, double eb, const void *block, size_t n, MPI_Datatype type);
/* Checks got[0..n) against ref[0..n) with the bound; records the worst
 * error / bound in *ratio_worst (if the bound is > 0). */
void mv_check(mt_state *t, const char *what, const void *got, const void *ref, size_t n, MPI_Datatype type,
              double bound, double *ratio_worst);
/* Byte-identical comparison. */
void mv_same(mt_state *t, const char *what, const void *got, const void *ref, size_t bytes);

/* One series of calls of one collective with the same settings, and what it
 * observed. */
typedef struct mv_run {
    mt_state *t;
    ZMPI_Coll coll;
    MPI_Datatype type;
    zmpi_eb_mode mode;
    double eb;
    ZMPI_Scope scope;
    const char *aname; /* algorithm name */
    double worst;      /* max err / bound seen on this rank */
    double raw, sent;  /* bytes compressed on this rank (statistics) */
} mv_run;

mv_run mv_run_make(mt_state *t, ZMPI_Coll coll, MPI_Datatype type, zmpi_eb_mode mode, double eb, ZMPI_Scope scope,
                   const char *aname);
/* A new series whose settings are also configured for coll on
 * MPI_COMM_WORLD (algorithm algo, the size threshold min_bytes, chunk 4096). */
mv_run mv_series(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, MPI_Datatype type, zmpi_eb_mode mode,
                 double eb, ZMPI_Scope scope, size_t min_bytes);
/* Adds the bytes compressed between s0 and s1 to the series. */
void mv_account(mv_run *r, const ZMPI_Stats *s0, const ZMPI_Stats *s1);

/* After a call of r->coll on MPI_COMM_WORLD in the series (its algorithm
 * named r->aname configured): ZMPI_Stats.last_algorithm names the algorithm
 * that must have run (ZMPI_ALGO_MPI at one rank, where every call runs
 * plain). A series named "default" runs the default choice: nothing to
 * compare. */
#define mv_check_algo(r, what) mv_check_algo_at(r, what, __FILE__, __LINE__)
void mv_check_algo_at(mv_run *r, const char *what, const char *file, int line);
/* The checks of every compressed call of the series (returned rc, between
 * the statistics s0 and s1): it succeeded, ran compressed (from 2 ranks), and
 * ran the configured algorithm (mv_check_algo). */
#define mv_check_call(r, what, rc, s0, s1) mv_check_call_at(r, what, rc, s0, s1, __FILE__, __LINE__)
void mv_check_call_at(mv_run *r, const char *what, int rc, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                      const char *file, int line);
/* A description of a call of the series: "<name> <algorithm> <type> <mode> eb=<eb>". */
void mv_describe(const mv_run *r, const char *name, char *buf, size_t size);

/* Checks one received block of n elements (got against ref) with the
 * bound of the series, and records err / user's bound in r->worst. exact:
 * the block must be byte-identical (a rank's own block). For the
 * compress-per-hop algorithm (cprp2p): global >= 0 is the range of all
 * blocks, the reference of the REL bound in result scope; in message scope
 * the error may grow with each of `hops` compressions. */
void mv_check_block(mv_run *r, const char *what, const void *got, const void *ref, size_t n, double global,
                    int hops, int exact);

/* Prints (rank 0) the max err / bound over all ranks and the compression
 * ratio over all compressions of the series: "REPORT <coll> <algo> ...".
 * n: elements of the largest call of the series (0: several sizes). */
void mv_report(const mv_run *r, const char *coll, size_t n);

/* Compressions of the block of virtual rank v in a binomial tree (cprp2p):
 * popcount(v). */
int mv_hops(int v);

/* The algorithms of coll (at most MV_MAXALGO: their ids and names); checks
 * that there are at least `least`. Returns their number. */
#define MV_MAXALGO 8
int mv_algorithms(mt_state *t, ZMPI_Coll coll, int least, int *ids, const char **names);

/* The buffers of one call: the input orig (in_elems elements of the real
 * field at offset, or white noise from seed) and its copy send, and the
 * result got and the reference ref (out_elems elements of garbage). */
typedef struct mv_bufs {
    char *send, *orig, *got, *ref;
} mv_bufs;
mv_bufs mv_bufs_make(const mv_run *r, size_t in_elems, size_t out_elems, int noise, uint64_t seed, size_t offset);
void mv_bufs_free(mv_bufs *b);

/* Block counts and displacements (in elements) of a v-collective's buffer. */
typedef struct mv_layout {
    int size;
    int *counts, *displs;
    size_t total; /* elements of the buffer */
} mv_layout;

/* count(kind, base, from, to, size): elements that rank `from` sends to
 * rank `to` (a rooted collective's blocks ignore one of the two). */
typedef int (*mv_count_fn)(int kind, int base, int from, int to, int size);
/* The layout of `rank`'s buffer: block j holds count(kind, base, rank, j,
 * size) elements (to = 1: what rank sends to j) or count(kind, base, j,
 * rank, size) (to = 0: what rank gets from j). kind 0: the blocks in order
 * without gaps; else in reverse order with `gap` elements after each. */
mv_layout mv_layout_make(mv_count_fn count, int kind, int base, int rank, int size, int to, int gap);
void mv_layout_free(mv_layout *l);
/* Finite max - min over all blocks of buf (0 if none). */
double mv_layout_range(const mv_layout *l, const void *buf, MPI_Datatype type);
/* The elements of got between the blocks are those of ref (untouched). */
void mv_check_gaps(mt_state *t, const char *what, const void *got, const void *ref, const mv_layout *l,
                   MPI_Datatype type);
/* Bytes compressed over all ranks between s0 and s1 by a rooted
 * collective: each non-root block of l once (cprp2p: once per hop), so a
 * silent switch of algorithm cannot pass. */
void mv_check_bytes_rooted(mv_run *r, const char *what, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                           const mv_layout *l, int root);

/* One checked call of a v-collective (Scatter(v), Gather(v), Allgather(v),
 * Alltoall(v)): kind 0 the plain collective with blocks of base elements,
 * else the v variant with a layout of that kind; at root (a rooted
 * collective's; MV_NO_ROOT for the others); MPI_IN_PLACE (at the root) if
 * in_place; white noise instead of the real field if noise. */
typedef void (*mv_one_fn)(mv_run *r, int kind, int base, int root, int in_place, int noise);
#define MV_NO_ROOT 0
/* The hostile calls of a series of coll: white noise with a bound below
 * float resolution (plain, blocks of plain_base at root 0), white noise in
 * REL (v of kind v_kind with v_base at root N-1, in place if v_in_place),
 * and the v variant with the default size threshold (small blocks travel
 * uncompressed inside the compressed call, large ones compressed). */
void mv_hostile(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, mv_one_fn one, int plain_base,
                int v_kind, int v_base, int v_in_place);
/* Every type, mode and scope, every layout, roots 0, N/2 and N-1, white
 * noise and the default size threshold, with algorithm algo of coll. */
void mv_sweep_rooted(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, mv_one_fn one);
/* Every root: one plain (float, ABS; in place at odd roots) and one v call
 * (double, REL, uneven blocks with zeros and gaps) each, small. */
void mv_every_root(mt_state *t, ZMPI_Coll coll, int algo, const char *aname, mv_one_fn one);
/* mv_sweep_rooted and mv_every_root with every algorithm of coll (at least
 * `least`, one of them cprp2p). */
void mv_rooted_algorithms(mt_state *t, ZMPI_Coll coll, int least, mv_one_fn one);

/* A call of a collective for the drivers below: ZMPI's if zmpi, else plain
 * MPI's. counts NULL: the plain collective (scount and rcount elements per
 * block); else its v variant with counts and displs for the blocks (both
 * sides of Alltoallv; scount and rcount are this rank's block). root: of a
 * rooted collective. */
typedef int (*mv_coll_fn)(int zmpi, const void *send, int scount, MPI_Datatype stype, void *recv, int rcount,
                          MPI_Datatype rtype, const int *counts, const int *displs, int root);

/* The plain-MPI fallbacks of a collective (Scatter, Gather, Allgather,
 * Alltoall) and of its v variant, at root N-1: MPI_INT, a contiguous type of
 * two floats, below min_bytes, no bound, ZMPI_ALGO_MPI. */
typedef struct mv_fallback_case {
    ZMPI_Coll coll;
    mv_coll_fn call;
    int n;                        /* elements per block */
    size_t send_elems, out_elems; /* doubles of the send and the result buffer */
    size_t fill_offset;           /* of the field in the send buffer */
    int v_div;      /* v: blocks of n / v_div elements where odd, else n */
    int v_pairwise; /* v: odd is rank + block (symmetric counts), else the block */
    int v_reversed; /* v: the blocks in reverse order, else in order */
    int v_small;    /* the v variant compresses regardless of min_bytes: below it, run it with the checks
                     * that still hold (else skip it) */
} mv_fallback_case;
/* The results are byte-identical to MPI's, counted as fallbacks and
 * reported as plain MPI. */
void mv_fallbacks(mt_state *t, const mv_fallback_case *f);

/* The buffers of a test of a contiguous type of 4 floats (four), with coll
 * configured for it (default algorithm, ABS 1e-2, no size threshold): send
 * (send_elems floats of the field at fill_offset), got (out_elems floats of
 * garbage) and ref (out_elems). */
typedef struct mv_four {
    MPI_Datatype four;
    float *send, *got, *ref;
} mv_four;
mv_four mv_four_begin(ZMPI_Coll coll, size_t send_elems, size_t out_elems, size_t fill_offset);
void mv_four_end(mv_four *f);
/* A call that returned rc between the statistics s0 and s1 succeeded and
 * ran compressed (from 2 ranks). */
#define mv_check_compressed(t, what, rc, s0, s1) mv_check_compressed_at(t, what, rc, s0, s1, __FILE__, __LINE__)
void mv_check_compressed_at(mt_state *t, const char *what, int rc, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                            const char *file, int line);
/* Gather or Scatter (call) with a type of 4 floats at the root on the side
 * that only the root has (Gather: its sendtype, Scatter: its recvtype): the
 * compressed path still runs (the root's significant type for the others is
 * that of the floats). The other ranks pass NULL and 0 for the buffer they
 * have not. n floats per block; the send buffer from the field at
 * fill_offset. The own block must be exact. */
void mv_derived_root(mt_state *t, ZMPI_Coll coll, mv_coll_fn call, int root, int n, size_t fill_offset);
/* Allgather or Alltoall (call) with a sendtype of 4 floats on odd ranks:
 * still compressed (recvtype decides), the own block converted exactly. n
 * floats per block, the send buffer send_elems floats of the field at
 * fill_offset. */
void mv_derived_sendtype(mt_state *t, ZMPI_Coll coll, mv_coll_fn call, int n, size_t send_elems,
                         size_t fill_offset);

#endif
