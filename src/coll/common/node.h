/*
 * Steps shared by the node-aware algorithms (src/coll/<coll>/<coll>_node.c):
 * the node's and the cross-node communicators, the cut of a vector into one
 * slice per core of a node, the reductions' intra-node phase, and the call
 * that runs a flat compressed algorithm among one rank per node.
 */
#ifndef ZMPI_COLL_COMMON_NODE_H
#define ZMPI_COLL_COMMON_NODE_H

#include <stddef.h>

#include "coll/common/movement.h"
#include "core/core.h"

/* One node-aware call on this rank. */
typedef struct zmpi_node_job {
    const zmpi_topo *t;
    MPI_Comm node;    /* the ranks of this rank's node */
    MPI_Comm cross;   /* the ranks of this local rank, one per node (MPI_COMM_NULL: local rank >= K) */
    int K;            /* slices: the fewest ranks on a node */
    int lr;           /* this rank's local rank */
    int *counts, *displs; /* slice of each local rank (K and above: empty), in elements */
    int root_local;   /* the root's rank on its node (0 without a root) */
    unsigned char *mine; /* this rank's slice (zmpi_node_reduce_scatter) */
    MPI_Request rs;
} zmpi_node_job;

/* Starts a node-aware call of count elements on c's known layout t (root:
 * the call's root, or -1): the communicators (made on first use,
 * collective), the slices. Release with zmpi_node_end, on errors too. */
int zmpi_node_begin(zmpi_call *c, const zmpi_topo *t, size_t count, int root, zmpi_node_job *j);
void zmpi_node_end(zmpi_call *c, zmpi_node_job *j);

/* The reductions' first phase: this rank's slice of `in` reduced over its
 * node into j->mine (plain MPI_Reduce_scatter), and *sub the call across the
 * nodes (zmpi_node_cross_call), its bound from zmpi_node_result_bound over
 * the slice of its own input each rank owns after the phase (every rank
 * scans 1/K of its input while the node reduces). */
int zmpi_node_reduce_scatter(zmpi_call *c, zmpi_node_job *j, const void *in, MPI_Op op, zmpi_call *sub);

/* The bound of a node-aware reduction's call across the nodes, *sub: in
 * result scope a REL bound becomes the absolute bound rel * (max - min) of
 * the values the ranks scanned, lo..hi on this rank (one small allreduce
 * over c's communicator) - a part of the N inputs, so never wider than
 * their range, and the flat algorithm among the nodes bounds the result by
 * it: within rel times the range of all N inputs, not of the nodes'
 * partial results; a zero range (constant or no finite value) makes it
 * lossless. Other modes and scopes keep c's bound. Collective over c. */
int zmpi_node_result_bound(zmpi_call *c, double lo, double hi, zmpi_call *sub);

/* The groups of a layout whose M nodes all hold L ranks (Allgather and
 * Reduce_scatter `node`): group k is the ranks of local rank k, one per node. */
typedef struct zmpi_node_groups {
    int M, L;
    int *member;      /* [size] member[m * L + k]: the rank of local rank k on node m (m: the node's
                         index, as the cross communicator ranks its members) */
    int *gc, *gd;     /* [M] one group's counts and displacements (zmpi_node_group) */
    MPI_Datatype *gt; /* [L] each group's blocks as one indexed type (MPI_DATATYPE_NULL: none, or empty) */
    MPI_Request *req; /* [2L] requests of the exchange inside the node */
} zmpi_node_groups;
/* The groups of layout t (every node the same size). Free with
 * zmpi_node_groups_free, on errors too. */
int zmpi_node_groups_begin(const zmpi_topo *t, zmpi_node_groups *g);
/* Group k's blocks into g->gc / g->gd (counts[r] elements at displs[r] for
 * each member r, in node order); returns their total. */
long long zmpi_node_group(zmpi_node_groups *g, int k, const int *counts, const int *displs);
/* g->gt[k] for every group k with elements: its blocks of `type` as one
 * indexed type (the same on every rank). */
int zmpi_node_group_types(zmpi_node_groups *g, const int *counts, const int *displs, MPI_Datatype type);
void zmpi_node_groups_free(zmpi_node_groups *g);

/* *sub = c run among the ranks of j->cross (left on c's communicator where
 * this rank has none), measured and reported as the whole call c: the flat
 * algorithm a node-aware one runs across the nodes. */
void zmpi_node_cross_call(const zmpi_call *c, const zmpi_node_job *j, zmpi_call *sub);

/* The coders of a rooted data-movement call (Scatter, Gather): the ranks of
 * the root's node share the coding of the parts of every rank off that
 * node. L ranks of the root's node, their ranks in h[0..L) (comm's order,
 * the root first); for every rank i off that node, helper[i] the index in h
 * of the rank that codes its part - round-robin over the off-node ranks in
 * comm's order, the root's turn last (it also hands the parts out), so that
 * consecutive ranks go to different coders - and -1 for the ranks of the
 * root's node; me: this rank's index in h (0: the root), -1 off that node.
 * The same on every rank (it depends on the layout only). */
typedef struct zmpi_node_coding {
    int L, me;
    int *h, *helper;
} zmpi_node_coding;
/* The coding of root's call on c's layout t. Free with zmpi_node_coding_free,
 * on errors too. */
int zmpi_node_coders(const zmpi_call *c, const zmpi_topo *t, int root, zmpi_node_coding *k);
void zmpi_node_coding_free(zmpi_node_coding *k);

/* The share of coder k->h[k->me] (me >= 1: not the root) of such a call: the n
 * ranks it codes for (who, in rank order) and their parts' counts, which
 * only the root knows (Scatterv, Gatherv) and sends in one message; raw and
 * zcap: their raw bytes and worst-case streams in all. */
typedef struct zmpi_node_share {
    int n;
    int *who, *cnt;
    size_t raw, zcap;
} zmpi_node_share;
/* The root: every coder's counts (counts[i] of each rank i it codes for),
 * one message each on tag, its requests added to r; buf (size ints) holds
 * them until r completes. */
int zmpi_node_share_send(const zmpi_call *c, const zmpi_node_coding *k, const int *counts, int tag, int *buf,
                         zmpi_dm_reqs *r);
/* This coder's share, the counts received from root on tag. Free with
 * zmpi_node_share_free, on errors too. */
int zmpi_node_share_recv(zmpi_call *c, const zmpi_node_coding *k, int root, int tag, zmpi_node_share *sh);
void zmpi_node_share_free(zmpi_node_share *sh);

#endif
