/*
 * The binomial Gather tree shared by Gather `binomial` (compress once) and
 * `cprp2p` (compress per hop): virtual ranks v = (rank - root) mod N, the
 * tree of movement.h; a rank's subtree holds sub = zmpi_dm_subtree(v)
 * vranks, v + u for u in [0, sub), and child v + m (m = 1, 2, 4, ... below
 * lowbit(v) and sub) sends the bundle of u in [m, min(2m, sub)): a
 * directory of one MPI_UINT64_T stream size per vrank, then the
 * concatenated streams as one exact transfer (movement.h).
 */
#ifndef ZMPI_COLL_COMMON_GATHER_TREE_H
#define ZMPI_COLL_COMMON_GATHER_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "coll/common/movement.h"

#define ZMPI_GTREE_MAXCHILD 32 /* a binomial tree over int ranks has at most 31 children */

typedef struct zmpi_gtree {
    int root, v, sub, low, nchild;
    int cm[ZMPI_GTREE_MAXCHILD]; /* child k is v + cm[k] */
    uint64_t *dir;               /* sub stream sizes: the own one, then the children's directories */
    size_t *pre;                 /* sub + 1 offsets of the streams (zmpi_gtree_layout) */
    zmpi_dm_reqs rd, cr[ZMPI_GTREE_MAXCHILD]; /* the directories; child k's streams */
} zmpi_gtree;

/* Sets up this rank's place (t zeroed first) and posts the receives of the
 * children's directories. */
int zmpi_gtree_start(const zmpi_call *c, zmpi_gtree *t, int root);
/* The own block: at a non-root rank compressed into z (cap >=
 * zmpi_dm_cap(sendcount)), dir[0] its size; at the root copied into place
 * (exact; nothing with MPI_IN_PLACE), *drc = MPI_ERR_TRUNCATE if it does
 * not fit, dir[0] = 0. */
int zmpi_gtree_own(zmpi_call *c, zmpi_gtree *t, const void *sendbuf, int sendcount, void *recvbuf,
                   const int *recvcounts, const int *displs, unsigned char *z, size_t cap, int *drc);
/* After the directories arrived: pre[u] = the offset of vrank u's stream,
 * the own stream first (with_own) or left out (pre[0] = pre[1] = 0). */
int zmpi_gtree_layout(zmpi_gtree *t, int with_own);
/* Posts the receives of the children's streams into z at pre[m]. */
int zmpi_gtree_post_streams(const zmpi_call *c, zmpi_gtree *t, unsigned char *z);
/* The root: waits for child k's streams (in z at pre) and decompresses
 * them into place; the first decompression error goes to *drc. */
int zmpi_gtree_unpack(zmpi_call *c, zmpi_gtree *t, int k, const unsigned char *z, void *recvbuf,
                      const int *recvcounts, const int *displs, int *drc);
/* The end of child k's bundle (vrank offset). */
static inline int zmpi_gtree_end(const zmpi_gtree *t, int k)
{
    return 2 * t->cm[k] < t->sub ? 2 * t->cm[k] : t->sub;
}
void zmpi_gtree_free(zmpi_gtree *t);

#endif
