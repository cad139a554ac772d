/*
 * Recursive-halving reduce-scatter with compression (the first phase of
 * Rabenseifner's Allreduce), shared by Allreduce `rhd` and Reduce_scatter
 * `rhd`.
 *
 * p = 2^k members (member i = rank ranks[i] of c->comm; ranks NULL: rank i);
 * member v's whole vector is in acc (count elements); the
 * vector is cut into p blocks, block b at element displs[b] (displs[p] =
 * count). Member v holds blocks [lo, hi), initially all; in the step of
 * distance d (p/2, p/4, ..., 1) it exchanges with member v ^ d: it keeps the
 * half of its range on its side of bit d and sends the other half,
 * compressed piece by piece while the pieces already compressed travel
 * (coll/common/ring.h), and reduces the partner's pieces of the kept half
 * into acc as they arrive. At the end block v of acc is the reduction over
 * all p members; the rest of acc is scratch. p = 4:
 *
 *   d = 2   v0,v1 keep blocks 0-1, send 2-3 to v2,v3 (and the reverse)
 *   d = 1   v0 keeps 0, sends 1 to v1; v2 keeps 2, sends 3 to v3; ...
 *
 * The data sent halve at every step: (p-1)/p of the vector in log2 p
 * messages (the ring sends as much in p-1). Error: a reduction tree of p
 * leaves has p - 1 merges, each adding one decompressed partial: the result
 * is within (p-1) e for a bound e per compression (SUM; MIN/MAX likewise,
 * being 1-Lipschitz). A corrupt incoming stream sets *corrupt and the
 * exchange goes on (no other rank is left waiting).
 */
#ifndef ZMPI_COLL_COMMON_HALVING_H
#define ZMPI_COLL_COMMON_HALVING_H

#include <stddef.h>

#include "core/core.h"

int zmpi_halving_reduce_scatter(zmpi_call *c, unsigned char *acc, const size_t *displs, int p, int v,
                                const int *ranks, MPI_Op op, int tag, int *corrupt);

/* Reduce-scatter of `in` (count elements on every rank, c->size a power of
 * two, member v = rank v) into `out`: block b = counts[b] elements at
 * displs[b], block c->rank of the reduction lands in out (which may overlap
 * in: in is copied first). */
int zmpi_halving_reduce_scatter_copy(zmpi_call *c, const void *in, void *out, size_t count, const size_t *counts,
                                     const size_t *displs, MPI_Op op, int tag, int *corrupt);

/* One exchange with `peer`: elements [first, first + count) of acc leave
 * compressed in pieces while the peer's pieces of [kfirst, kfirst + kcount)
 * arrive and are reduced into acc (either count may be 0). */
int zmpi_reduce_exchange(zmpi_call *c, unsigned char *acc, size_t first, size_t count, size_t kfirst,
                         size_t kcount, int peer, MPI_Op op, int tag, int *corrupt);

#endif
