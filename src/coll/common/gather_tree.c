/*
 * The binomial Gather tree (see gather_tree.h).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/gather_tree.h"

int zmpi_gtree_start(const zmpi_call *c, zmpi_gtree *t, int root)
{
    int rc = MPI_SUCCESS, size = c->size;
    memset(t, 0, sizeof *t);
    t->root = root;
    t->v = (c->rank - root + size) % size;
    t->sub = zmpi_dm_subtree(t->v, size);
    t->low = zmpi_dm_lowbit(t->v, size);
    ZMPI_CHECK(zmpi_alloc((size_t)t->sub * sizeof *t->dir, &t->dir));
    ZMPI_CHECK(zmpi_alloc(((size_t)t->sub + 1) * sizeof *t->pre, &t->pre));
    /* children v + m, m = 1, 2, 4, ...: their directories first */
    for (int m = 1; m < t->low && m < t->sub; m <<= 1) {
        int end = 2 * m < t->sub ? 2 * m : t->sub;
        t->cm[t->nchild++] = m;
        ZMPI_CHECK(zmpi_dm_reqs_reserve(&t->rd, 1));
        ZMPI_CHECK(PMPI_Irecv(t->dir + m, end - m, MPI_UINT64_T, zmpi_dm_real(t->v + m, root, size),
                              ZMPI_TAG_GATHER, c->comm, &t->rd.req[t->rd.n]));
        t->rd.n++;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gtree_own(zmpi_call *c, zmpi_gtree *t, const void *sendbuf, int sendcount, void *recvbuf,
                   const int *recvcounts, const int *displs, unsigned char *z, size_t cap, int *drc)
{
    int rc = MPI_SUCCESS;
    size_t len = 0;
    t->dir[0] = 0;
    if (t->v != 0) {
        ZMPI_CHECK(zmpi_dm_compress(c, sendbuf, (size_t)sendcount, z, cap, &len));
        t->dir[0] = len;
    } else {
        *drc = zmpi_dm_gather_own(c, sendbuf, sendcount, recvbuf, recvcounts, displs, t->root);
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gtree_layout(zmpi_gtree *t, int with_own)
{
    t->pre[0] = 0;
    if (!with_own && t->sub > 0)
        t->pre[1] = 0;
    for (int k = with_own ? 0 : 1; k < t->sub; k++) {
        if (t->dir[k] > (uint64_t)(SIZE_MAX - t->pre[k]))
            return MPI_ERR_OTHER;
        t->pre[k + 1] = t->pre[k] + (size_t)t->dir[k];
    }
    return MPI_SUCCESS;
}

int zmpi_gtree_post_streams(const zmpi_call *c, zmpi_gtree *t, unsigned char *z)
{
    int rc = MPI_SUCCESS;
    for (int k = 0; k < t->nchild; k++) {
        int m = t->cm[k], end = zmpi_gtree_end(t, k);
        ZMPI_CHECK(zmpi_dm_irecv(c, z + t->pre[m], t->pre[end] - t->pre[m],
                                 zmpi_dm_real(t->v + m, t->root, c->size), ZMPI_TAG_GATHER, &t->cr[k]));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_gtree_unpack(zmpi_call *c, zmpi_gtree *t, int k, const unsigned char *z, void *recvbuf,
                      const int *recvcounts, const int *displs, int *drc)
{
    int rc = MPI_SUCCESS;
    ZMPI_CHECK(zmpi_dm_waitall(&t->cr[k]));
    for (int u = t->cm[k]; u < zmpi_gtree_end(t, k); u++) {
        int i = zmpi_dm_real(u, t->root, c->size);
        int e = zmpi_dm_decompress(c, z + t->pre[u], (size_t)t->dir[u],
                                   (char *)recvbuf + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es,
                                   (size_t)recvcounts[i]);
        *drc = *drc ? *drc : e;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

void zmpi_gtree_free(zmpi_gtree *t)
{
    zmpi_dm_reqs_free(&t->rd);
    for (int k = 0; k < ZMPI_GTREE_MAXCHILD; k++)
        zmpi_dm_reqs_free(&t->cr[k]);
    free(t->pre);
    free(t->dir);
}
