/*
 * Bcast algorithms (table zmpi_bcast_table in bcast.c, signature
 * zmpi_bcast_fn in coll/registry.h).
 */
#ifndef ZMPI_COLL_BCAST_H
#define ZMPI_COLL_BCAST_H

#include <stdint.h>

#include "coll/common/movement.h"
#include "coll/registry.h"

/* Algorithm ids (ZMPI_Coll_algorithms); ZMPI_BCAST_ALGO_COUNT is one past the largest. */
typedef enum zmpi_bcast_algo {
    ZMPI_BCAST_BINOMIAL = 1,
    ZMPI_BCAST_PIPELINED = 2,
    ZMPI_BCAST_CPRP2P = 3,
    ZMPI_BCAST_SCATTER_ALLGATHER = 4,
    ZMPI_BCAST_NODE = 5,
    ZMPI_BCAST_ALGO_COUNT
} zmpi_bcast_algo;

int zmpi_bcast_binomial(zmpi_call *c, void *buf, size_t count, int root);
int zmpi_bcast_pipelined(zmpi_call *c, void *buf, size_t count, int root);
int zmpi_bcast_cprp2p(zmpi_call *c, void *buf, size_t count, int root);
int zmpi_bcast_scatter_allgather(zmpi_call *c, void *buf, size_t count, int root);
int zmpi_bcast_node(zmpi_call *c, void *buf, size_t count, int root);

/* The binomial tree of `binomial` for a stream already made: the root's z
 * (*len bytes) reaches every rank's z (capacity cap, *len set), each inner
 * rank forwarding it to its children by sends added to *r (complete them
 * with zmpi_dm_waitall; *lenbuf must live until then). */
int zmpi_bcast_stream(zmpi_call *c, void *z, size_t cap, size_t *len, int root, zmpi_dm_reqs *r, uint64_t *lenbuf);

/* The pipelined tree of `pipelined` without reporting it (the node-aware
 * Bcast runs it among one rank per node): the root's count elements of buf,
 * compressed chunk by chunk with c's bound, reach every rank's buf decoded;
 * with root_decodes the root's buf too ends holding the decoded values. */
int zmpi_bcast_chunks(zmpi_call *c, void *buf, size_t count, int root, int root_decodes);

#endif
