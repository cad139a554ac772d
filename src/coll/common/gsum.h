/*
 * Sums on grid codes, the homomorphic path of the SUM reductions
 * (Allreduce `ring` and `rhd`, Reduce_scatter, Reduce `rsg`): instead of
 * decompressing, adding and recompressing at every step, every rank
 * quantises its input once to integer codes on one grid all ranks share,
 * and the partial sums travel as packed code differences (zmpi_grid_pack)
 * that are added packed on arrival (zmpi_grid_add: no unpacking, no floating
 * point). Integer sums are exact, so the result's error is the N
 * quantisations alone and never grows along the way.
 *
 * When. Under ZMPI_CODEC=auto (the default), for MPI_SUM in result scope
 * with a bound (ABS or REL), if all ranks' inputs are finite and the codes
 * of the sum stay below 2^30 in magnitude. One small allreduce (the finite
 * minimum and maximum and a non-finite flag of every rank's input) decides
 * it on all ranks alike; it replaces the allreduce that REL needs anyway.
 * Otherwise the algorithm runs as before (decompress-reduce-compress, NaN
 * and Inf carried exactly by the codec), with the bound set from the same
 * figures. An explicitly configured codec (ZMPI_CODEC=fzl, ...) keeps the
 * classic path: its streams are what the user asked for.
 *
 * Grid. eb the absolute bound (ABS; REL: rel * (max - min) over all ranks),
 * N ranks, e = eb / N (eb / (2N) with spread, below): step h = 2e (1 - 2^-17), and every rank checks
 * |x - q h| <= e (1 - 2^-18) for each element (in double; it cannot fail for
 * finite inputs below the agreed maximum, and a failure is an error, never
 * a silent result). The result is Q h, Q the exact integer sum of the N
 * codes, computed in double and rounded once to the datatype:
 *   |result - sum x| <= N e (1 - 2^-18) + |Q h| 2^-53 <= eb
 * plus that one rounding to the datatype (half an ulp of the result; plain
 * MPI rounds at every one of its N - 1 additions). Every rank decodes the
 * same integers: results are bit-identical on all ranks.
 *
 * Codes are quantised per block of the algorithm's final partition
 * (differences restart at every block), so that a block is decoded alone
 * (Reduce_scatter keeps one block only).
 *
 * Spreading the result (Allreduce, Reduce). After the reduce-scatter each
 * block's exact sum of codes Q lies at its owner, and the blocks then travel
 * once more (allgather, gather). The codes of a sum of N inputs on the
 * fine grid h = 2 eb / N compress poorly (~1.8:1 on real fields at 64 ranks),
 * so with `spread` and N >= 8 the bound is split in two halves: the inputs are
 * quantised with e = eb / (2N), and each owner re-quantises its block's
 * value Q h once onto the coarse grid h2 = 2 e2 (1 - 2^-17), e2 = eb / 2,
 * checking |Q h - Q2 h2| <= e2 (1 - 2^-18); the blocks travel as those
 * codes Q2, which every rank decodes alike (results stay bit-identical):
 *   |result - sum x| <= N e (1 - 2^-18) + e2 (1 - 2^-18) + 2 |Q h| 2^-53 <= eb
 * (the codes' bound 2^30 keeps |Q h| 2^-52 below eb 2^-22 / N). The coarse
 * codes take log2(N / 2) bits a value fewer, the fine ones one bit more:
 * fewer bytes in all from N = 8 (at 64 ranks: 1.4 times fewer bytes in the
 * spreading phase, 6 % more in the reduce-scatter).
 */
#ifndef ZMPI_COLL_COMMON_GSUM_H
#define ZMPI_COLL_COMMON_GSUM_H

#include <stddef.h>
#include <stdint.h>

#include "coll/common/ring.h"
#include "core/core.h"

typedef struct zmpi_gsum {
    int32_t *d;    /* the input's code differences (count), the call's scratch; NULL: not on grid */
    size_t count;
    double step; /* of the codes in d (the coarse step h2 once zmpi_gsum_spread has run) */
    double e2;   /* spread: the coarse grid's bound eb / 2 (0: no spread) */
} zmpi_gsum;

/* Decides (collectively) whether the reduction of `in` (count elements, the
 * final partition: nblocks blocks at displs with counts) runs on grid codes.
 * On: g->d holds the codes of `in`, the call is in grid mode (c->grid,
 * c->es = 4) until zmpi_gsum_end. Off: g->d is NULL and the per-compression
 * bound is set for `hops` compressions, as zmpi_call_bound does. */
int zmpi_gsum_begin(zmpi_call *c, MPI_Op op, const void *in, size_t count, const size_t *counts,
                    const size_t *displs, int nblocks, double hops, int spread, zmpi_gsum *g);
/* With spread, between the reduce-scatter and the spreading of the blocks:
 * re-quantises this rank's summed block b (b < 0: none) onto the coarse
 * grid, and from then on the codes are decoded with its step (every rank
 * calls it, with or without a block). */
int zmpi_gsum_spread(zmpi_call *c, zmpi_gsum *g, const size_t *counts, const size_t *displs, int b);
/* Decodes blocks [b0, b0 + nb) of the partition from g->d into out (block
 * b at out + (displs[b] - displs[b0]) elements of the datatype). */
int zmpi_gsum_decode(zmpi_call *c, const zmpi_gsum *g, const size_t *counts, const size_t *displs, int b0,
                     int nb, void *out);
/* Leaves grid mode and releases the codes (safe on a zeroed g). */
void zmpi_gsum_end(zmpi_call *c, zmpi_gsum *g);

/* The partial sums of a reduce-scatter on grid codes, kept packed: every
 * block of the partition cut into pieces (cfg.chunk elements from the
 * block's start, never across blocks), each piece a zmpi_grid_pack of its
 * code differences in a slot of the worst-case size. An exchange sends
 * pieces as they are and adds the arriving ones into the table with
 * zmpi_grid_add: partial sums are never unpacked on the way. */
typedef struct zmpi_gtable {
    zmpi_pieces all;  /* every piece of every block (explicit offsets) */
    size_t *bfirst;   /* nblocks + 1: the first piece of each block */
    unsigned char *sum; /* one piece of the worst-case size: zmpi_grid_add's output */
    size_t sumcap;
    int32_t *codes; /* the rank's codes (g->d): a piece is packed from them when first needed */
} zmpi_gtable;

/* Lays out the table of the partition over the codes g->d. Each piece is
 * packed once, when an exchange first needs it (the first exchange sends
 * pieces while the next ones are packed); a piece never packed is its
 * codes in g->d. */
int zmpi_gtable_layout(zmpi_call *c, const zmpi_gsum *g, const size_t *counts, const size_t *displs, int nblocks,
                       zmpi_gtable *t);
/* Unpacks the pieces of blocks [b0, b1) into the codes (g->d). A corrupt
 * piece sets *corrupt. */
int zmpi_gtable_unpack(zmpi_call *c, const zmpi_gtable *t, int b0, int b1, int *corrupt);
/* One step: the table's pieces of blocks [s0, s1) go to rank `to` as they
 * are, the pieces of blocks [k0, k1) from rank `from` are added into the
 * table as they arrive (either range may be empty). A corrupt piece sets
 * *corrupt; the step goes on. */
int zmpi_gtable_exchange(zmpi_call *c, zmpi_gtable *t, int s0, int s1, int to, int k0, int k1, int from, int tag,
                         int *corrupt);
void zmpi_gtable_free(zmpi_call *c, zmpi_gtable *t);
/* Reduce-scatter on the table: the ring over N = c->size blocks (block r
 * ends complete at rank r; pipelined across its steps, a piece forwarded as
 * soon as it has arrived and been added), or recursive halving over p = 2^k members
 * (member v = rank ranks[v], NULL: rank v; block v ends complete at member
 * v; coll/common/halving.h). */
int zmpi_gtable_ring(zmpi_call *c, zmpi_gtable *t, int tag, int *corrupt);
int zmpi_gtable_halving(zmpi_call *c, zmpi_gtable *t, int p, int v, const int *ranks, int tag, int *corrupt);
/* A whole reduce-scatter over the N = c->size blocks of the partition: the
 * table laid out over g->d (*t: release with zmpi_gtable_free), the ring or
 * (halving, N a power of two) recursive halving over all ranks, and this
 * rank's summed block unpacked into its codes in g->d. */
int zmpi_gtable_reduce_scatter(zmpi_call *c, const zmpi_gsum *g, const size_t *counts, const size_t *displs,
                               int halving, int tag, zmpi_gtable *t, int *corrupt);

#endif
