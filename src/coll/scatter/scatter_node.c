/*
 * Node-aware Scatter(v) for clusters of multi-core nodes: the cores of the
 * root's node share the compression, what stays on a node moves plain, and
 * only compressed parts cross the network.
 *
 * The L ranks of the root's node are the coders; every rank off that node
 * is given to one of them, round-robin in rank order (zmpi_node_coders).
 * Root r0 with r1 on node A, nodes B (r2 r3) and C (r4 r5), L = 2:
 *
 *   1 inside the root's node, plain: the root hands every coder its own
 *     part and the raw parts of the ranks it codes for (after one small
 *     message with their counts)
 *        r0 -> r1: [counts of r2 r4] [part 1] [part 2] [part 4]
 *   2 every coder compresses its ranks' parts, in parallel, each sent as
 *     soon as it is compressed:
 *        r1: Z2 = compress(part 2) -> r2,  Z4 -> r4
 *        r0: Z3 = compress(part 3) -> r3,  Z5 -> r5   (its own part: copied)
 *   3 every rank off the root's node decompresses its part
 *
 * The root's node's network card carries each off-node part once,
 * compressed; the root codes 1/L of them instead of all; a rank on the
 * root's node receives its part exactly as sent.
 *
 * Sizes: the counts message gives a coder the lengths of the raw parts it
 * receives (exact transfers); a coder's own raw part is a variable-length
 * transfer checked against recvcount (fewer elements are accepted, as MPI
 * receives them; more: MPI_ERR_TRUNCATE); compressed parts as in `linear`
 * (the worst-case stream size of the count both ends know).
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the element's part (its coder computes the range); message scope =
 * result scope; the parts of the root's node exact.
 *
 * Selected by default when the communicator spans more than one node and
 * some node holds more than one of its ranks (src/core/topo.c); with the
 * layout unknown it runs `linear`.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/common/node.h"
#include "coll/scatter/scatter.h"

/* Rank i of the root's node other than the root (a coder): its own part,
 * the counts, the raw parts of the ranks it codes for, each compressed and
 * sent as soon as it is in. */
static int coder(zmpi_call *c, void *recvbuf, int recvcount, int root, const zmpi_node_coding *co)
{
    int rc = MPI_SUCCESS, drc, k;
    unsigned char *in = NULL, *z = NULL;
    uint64_t *lenbuf = NULL;
    zmpi_dm_reqs *r = NULL, s = {0};
    zmpi_dm_vrecv own = {0};
    zmpi_node_share sh;

    ZMPI_CHECK(zmpi_node_share_recv(c, co, root, ZMPI_TAG_SCATTER, &sh));
    int n = sh.n;
    ZMPI_CHECK(zmpi_alloc((size_t)(n ? n : 1) * sizeof *lenbuf, &lenbuf));
    ZMPI_CHECK(zmpi_alloc((size_t)(n ? n : 1) * sizeof *r, &r));
    memset(r, 0, (size_t)(n ? n : 1) * sizeof *r);
    /* its own part, raw; in full before the parts behind it are posted (a
     * variable-length receive above ZMPI_DM_PIECE takes two messages) */
    size_t mine = (size_t)(recvcount > 0 ? recvcount : 0) * c->es;
    ZMPI_CHECK(zmpi_dm_vrecv_post(c, &own, recvbuf, mine, root, ZMPI_TAG_SCATTER));
    /* a part longer than recvcount (MPI_ERR_TRUNCATE) is this rank's error:
     * the parts behind it are still taken and passed on */
    drc = zmpi_dm_vrecv_wait(c, &own);
    if (drc == MPI_SUCCESS && own.len % c->es)
        drc = MPI_ERR_TRUNCATE;
    ZMPI_CHECK(zmpi_scratch_get(c, sh.raw ? sh.raw : 1, &in));
    ZMPI_CHECK(zmpi_scratch_get(c, sh.zcap ? sh.zcap : 1, &z));
    size_t off = 0;
    for (k = 0; k < n; k++) { /* every raw part posted at once */
        ZMPI_CHECK(zmpi_dm_irecv(c, in + off, (size_t)sh.cnt[k] * c->es, root, ZMPI_TAG_SCATTER, &r[k]));
        off += (size_t)sh.cnt[k] * c->es;
    }
    off = 0;
    size_t zoff = 0;
    for (k = 0; k < n; k++) { /* each part compressed and sent as soon as it is in */
        size_t cn = (size_t)sh.cnt[k], cap = zmpi_dm_cap(c, cn), len = 0;
        ZMPI_CHECK(zmpi_dm_waitall(&r[k]));
        ZMPI_CHECK(zmpi_dm_compress(c, in + off, cn, z + zoff, cap, &len));
        ZMPI_CHECK(zmpi_dm_isend_var(c, z + zoff, len, cap, sh.who[k], ZMPI_TAG_SCATTER, &lenbuf[k], &s));
        ZMPI_CHECK(zmpi_dm_progress(&s));
        off += cn * c->es;
        zoff += cap;
    }
    ZMPI_CHECK(zmpi_dm_waitall(&s));
    rc = drc;
fn_exit:
    for (k = 0; r && k < sh.n; k++)
        zmpi_dm_reqs_free(&r[k]);
    zmpi_dm_reqs_free(&s);
    zmpi_scratch_put(c, in);
    zmpi_scratch_put(c, z);
    zmpi_node_share_free(&sh);
    free(r);
    free(lenbuf);
    return rc;
fn_fail:
    zmpi_dm_vrecv_drop(&own);
    goto fn_exit;
}

/* The root: every coder's counts, own part and raw parts handed out (all
 * posted at once, in the order the coders receive them), then its own
 * share compressed and sent, its own part copied. */
static int deal(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs, void *recvbuf,
                int recvcount, int root, const zmpi_node_coding *k)
{
    int rc = MPI_SUCCESS, size = c->size;
    int *cnt = NULL;
    uint64_t *lenbuf = NULL;
    unsigned char *z = NULL;
    zmpi_dm_reqs r = {0};
    const char *sb = sendbuf;

    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *cnt, &cnt));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *lenbuf, &lenbuf));
    ZMPI_CHECK(zmpi_node_share_send(c, k, sendcounts, ZMPI_TAG_SCATTER, cnt, &r));
    for (int m = 1; m < k->L; m++) { /* coder m: its own part, then the raw parts it codes */
        int d = k->h[m];
        size_t own = (size_t)sendcounts[d] * c->es;
        ZMPI_CHECK(zmpi_dm_isend_var(c, sb + (ptrdiff_t)displs[d] * (ptrdiff_t)c->es, own, own, d,
                                     ZMPI_TAG_SCATTER, &lenbuf[d], &r));
        for (int i = 0; i < size; i++)
            if (k->helper[i] == m)
                ZMPI_CHECK(zmpi_dm_isend(c, sb + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es,
                                         (size_t)sendcounts[i] * c->es, d, ZMPI_TAG_SCATTER, &r));
    }
    size_t total = 0, off = 0;
    for (int i = 0; i < size; i++)
        if (k->helper[i] == 0)
            total += zmpi_dm_cap(c, (size_t)sendcounts[i]);
    ZMPI_CHECK(zmpi_scratch_get(c, total ? total : 1, &z));
    for (int i = 0; i < size; i++) {
        if (k->helper[i] != 0)
            continue;
        size_t n = (size_t)sendcounts[i], cap = zmpi_dm_cap(c, n), len = 0;
        ZMPI_CHECK(zmpi_dm_compress(c, sb + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es, n, z + off, cap, &len));
        ZMPI_CHECK(zmpi_dm_isend_var(c, z + off, len, cap, i, ZMPI_TAG_SCATTER, &lenbuf[i], &r));
        ZMPI_CHECK(zmpi_dm_progress(&r));
        off += cap;
    }
    ZMPI_CHECK(zmpi_dm_scatter_own(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root));
    ZMPI_CHECK(zmpi_dm_waitall(&r));
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_scratch_put(c, z);
    free(cnt);
    free(lenbuf);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_scatterv_node(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                       void *recvbuf, int recvcount, int root)
{
    const zmpi_topo *t = atomic_load(&c->st->topo);
    if (!t || t->size != c->size)
        return zmpi_scatterv_linear(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root);
    zmpi_call_ran(c, ZMPI_SCATTER_NODE);
    int rc = MPI_SUCCESS;
    zmpi_node_coding k;
    unsigned char *z = NULL;
    zmpi_dm_vrecv in = {0};

    ZMPI_CHECK(zmpi_node_coders(c, t, root, &k));
    if (k.me == 0) {
        ZMPI_CHECK(deal(c, sendbuf, sendcounts, displs, recvbuf, recvcount, root, &k));
    } else if (k.me > 0) { /* a coder on the root's node */
        ZMPI_CHECK(coder(c, recvbuf, recvcount, root, &k));
    } else { /* off the root's node: its part from its coder */
        size_t cap = zmpi_dm_cap(c, (size_t)recvcount);
        if (cap == 0)
            goto fn_exit; /* nothing to receive */
        ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in, z, cap, k.h[k.helper[c->rank]], ZMPI_TAG_SCATTER));
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in));
        ZMPI_CHECK(zmpi_dm_decompress(c, z, in.len, recvbuf, (size_t)recvcount));
    }
fn_exit:
    zmpi_node_coding_free(&k);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    zmpi_dm_vrecv_drop(&in);
    goto fn_exit;
}
