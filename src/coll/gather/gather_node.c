/*
 * Node-aware Gather(v) for clusters of multi-core nodes: every rank off the
 * root's node compresses its block, the cores of the root's node share the
 * decompression, and what moves inside a node is plain.
 *
 * The L ranks of the root's node are the coders; every rank off that node
 * is given to one of them, round-robin in rank order (zmpi_node_coders).
 * Root r0 with r1 on node A, nodes B (r2 r3) and C (r4 r5), L = 2:
 *
 *   1 every rank off the root's node compresses its block, all at once,
 *     and sends it to its coder:   r2: Z2 -> r1   r4: Z4 -> r1
 *                                  r3: Z3 -> r0   r5: Z5 -> r0
 *   2 every coder decompresses the blocks of its ranks, in parallel, and
 *     (but the root) sends each to the root raw as soon as it is decoded;
 *     the root decodes its share straight into place
 *        r1 -> r0: [block 1, its own] [block 2] [block 4] [status]
 *   3 the root's node's own blocks travel raw (step 2's first message)
 *
 * The root's node's network card receives each off-node block once,
 * compressed; the root decodes 1/L of them instead of all.
 *
 * Sizes: only the root knows the counts of Gatherv: one small message gives
 * each coder the counts of its ranks' blocks (it posts their compressed
 * streams with the worst-case size of those counts, as `linear` does); the
 * coder forwards as many elements as the stream holds (fewer than the count
 * are accepted, as MPI receives them, for blocks up to ZMPI_DM_PIECE bytes;
 * more, or a stream that does not decode, is an error). A coder's status
 * (its first error, or MPI_SUCCESS) follows its blocks, so that an error
 * found while decoding on another rank is the root's error too.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the element's block (the sender computes the range); message scope =
 * result scope; the blocks of the root's node exact.
 *
 * Selected by default when the communicator spans more than one node and
 * some node holds more than one of its ranks (src/core/topo.c); with the
 * layout unknown it runs `linear`.
 */
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"
#include "coll/common/node.h"
#include "coll/gather/gather.h"

/* One block of cn elements decoded by a coder from the len-byte stream z
 * into raw and sent on to the root: as many elements as the stream holds
 * (fewer than cn: a shorter message, as an MPI receive takes it). A stream
 * that did not arrive (e: its receive's error, e.g. a sender that sent more
 * than the root's count), does not decode, or holds more, is sent as cn
 * zeros and its error kept in *drc (the root must not wait for a block that
 * never comes). */
static int forward(zmpi_call *c, int e, const unsigned char *z, size_t len, size_t cn, unsigned char *raw,
                   int root, int *drc, zmpi_dm_reqs *s)
{
    size_t got = e || len == 0 ? 0 : zmpi_dm_stream_count(c, z, len), bytes = cn * c->es;
    if (e == MPI_SUCCESS)
        e = got == SIZE_MAX ? MPI_ERR_OTHER : got > cn ? MPI_ERR_TRUNCATE : MPI_SUCCESS;
    if (e == MPI_SUCCESS && got < cn && bytes > ZMPI_DM_PIECE)
        e = MPI_ERR_TRUNCATE; /* a short block of many pieces: the root expects them all */
    if (e == MPI_SUCCESS && got > 0)
        e = zmpi_dm_decompress(c, z, len, raw, got);
    if (e != MPI_SUCCESS) {
        memset(raw, 0, bytes);
        got = cn;
        *drc = *drc ? *drc : e;
    }
    if (bytes > ZMPI_DM_PIECE)
        return zmpi_dm_isend(c, raw, bytes, root, ZMPI_TAG_GATHER, s);
    if (bytes == 0)
        return MPI_SUCCESS; /* both ends know the block is empty */
    int rc = zmpi_dm_reqs_reserve(s, 1);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Isend(raw, (int)(got * c->es), MPI_BYTE, root, ZMPI_TAG_GATHER, c->comm, &s->req[s->n]);
    if (rc == MPI_SUCCESS)
        s->n++;
    return rc;
}

/* A rank of the root's node other than the root (k->me > 0): its own block raw to
 * the root, then the blocks of the ranks it decodes for, each forwarded as
 * soon as it is decoded, then its status. */
static int coder(zmpi_call *c, const void *sendbuf, int sendcount, int root, const zmpi_node_coding *co)
{
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, k;
    unsigned char *out = NULL, *z = NULL;
    uint64_t lenbuf = 0;
    zmpi_dm_reqs s = {0};
    zmpi_dm_vrecv *in = NULL;
    zmpi_node_share sh = {0};

    size_t own = (size_t)(sendcount > 0 ? sendcount : 0) * c->es;
    ZMPI_CHECK(zmpi_dm_isend_var(c, sendbuf, own, own, root, ZMPI_TAG_GATHER, &lenbuf, &s));
    ZMPI_CHECK(zmpi_node_share_recv(c, co, root, ZMPI_TAG_GATHER, &sh));
    ZMPI_CHECK(zmpi_alloc((size_t)(sh.n ? sh.n : 1) * sizeof *in, &in));
    memset(in, 0, (size_t)(sh.n ? sh.n : 1) * sizeof *in);
    ZMPI_CHECK(zmpi_scratch_get(c, sh.raw ? sh.raw : 1, &out));
    ZMPI_CHECK(zmpi_scratch_get(c, sh.zcap ? sh.zcap : 1, &z));
    size_t zoff = 0;
    for (k = 0; k < sh.n; k++) { /* every stream posted at once */
        size_t cap = zmpi_dm_cap(c, (size_t)sh.cnt[k]);
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in[k], z + zoff, cap, sh.who[k], ZMPI_TAG_GATHER));
        zoff += cap;
    }
    size_t off = 0;
    for (k = 0; k < sh.n; k++) { /* decoded and forwarded in the order the root posts them */
        int e = zmpi_dm_vrecv_wait(c, &in[k]);
        ZMPI_CHECK(forward(c, e, in[k].buf, in[k].len, (size_t)sh.cnt[k], out + off, root, &drc, &s));
        ZMPI_CHECK(zmpi_dm_progress(&s));
        off += (size_t)sh.cnt[k] * c->es;
    }
    ZMPI_CHECK(PMPI_Send(&drc, 1, MPI_INT, root, ZMPI_TAG_GATHER, c->comm));
    ZMPI_CHECK(zmpi_dm_waitall(&s));
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&s);
    zmpi_scratch_put(c, out);
    zmpi_scratch_put(c, z);
    zmpi_node_share_free(&sh);
    free(in);
    return rc;
fn_fail:
    for (k = 0; in && k < sh.n; k++)
        zmpi_dm_vrecv_drop(&in[k]);
    goto fn_exit;
}

/* The root: the coders' counts, their own blocks and the blocks they
 * forward received in place, its own share of streams decoded in place. */
static int collect(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf, const int *recvcounts,
                   const int *displs, int root, const zmpi_node_coding *k)
{
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size;
    int *cnt = NULL, *status = NULL;
    unsigned char *z = NULL;
    zmpi_dm_reqs r = {0}, f = {0};
    zmpi_dm_vrecv *own = NULL, *in = NULL;
    char *rb = recvbuf;

    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *cnt, &cnt));
    ZMPI_CHECK(zmpi_alloc((size_t)k->L * sizeof *status, &status));
    ZMPI_CHECK(zmpi_alloc((size_t)k->L * sizeof *own, &own));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *in, &in));
    memset(own, 0, (size_t)k->L * sizeof *own);
    memset(in, 0, (size_t)size * sizeof *in);
    ZMPI_CHECK(zmpi_node_share_send(c, k, recvcounts, ZMPI_TAG_GATHER, cnt, &r));
    for (int m = 1; m < k->L; m++) /* coder m's own block, raw, into place */
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &own[m], rb + (ptrdiff_t)displs[k->h[m]] * (ptrdiff_t)c->es,
                                      (size_t)recvcounts[k->h[m]] * c->es, k->h[m], ZMPI_TAG_GATHER));
    size_t total = 0, off = 0;
    for (int i = 0; i < size; i++)
        if (k->helper[i] == 0)
            total += zmpi_dm_cap(c, (size_t)recvcounts[i]);
    ZMPI_CHECK(zmpi_scratch_get(c, total ? total : 1, &z));
    for (int i = 0; i < size; i++) { /* its own share of the streams */
        if (k->helper[i] != 0)
            continue;
        size_t cap = zmpi_dm_cap(c, (size_t)recvcounts[i]);
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in[i], z + off, cap, i, ZMPI_TAG_GATHER));
        off += cap;
    }
    drc = zmpi_dm_gather_own(c, sendbuf, sendcount, recvbuf, recvcounts, displs, root);
    for (int m = 1; m < k->L; m++) { /* coder m: its own block in full, then what it forwards, then its status */
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &own[m]));
        if (own[m].len % c->es)
            drc = drc ? drc : MPI_ERR_TRUNCATE;
        for (int i = 0; i < size; i++)
            if (k->helper[i] == m)
                ZMPI_CHECK(zmpi_dm_irecv(c, rb + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es,
                                         (size_t)recvcounts[i] * c->es, k->h[m], ZMPI_TAG_GATHER, &f));
        ZMPI_CHECK(zmpi_dm_reqs_reserve(&f, 1));
        ZMPI_CHECK(PMPI_Irecv(&status[m], 1, MPI_INT, k->h[m], ZMPI_TAG_GATHER, c->comm, &f.req[f.n]));
        f.n++;
    }
    for (int i = 0; i < size; i++) {
        if (k->helper[i] != 0)
            continue;
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in[i]));
        int e = zmpi_dm_decompress(c, in[i].buf, in[i].len, rb + (ptrdiff_t)displs[i] * (ptrdiff_t)c->es,
                                   (size_t)recvcounts[i]);
        drc = drc ? drc : e;
    }
    ZMPI_CHECK(zmpi_dm_waitall(&f));
    ZMPI_CHECK(zmpi_dm_waitall(&r));
    for (int m = 1; m < k->L; m++)
        drc = drc ? drc : status[m];
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_dm_reqs_free(&f);
    zmpi_scratch_put(c, z);
    free(cnt);
    free(status);
    free(own);
    free(in);
    return rc;
fn_fail:
    for (int m = 0; own && m < k->L; m++)
        zmpi_dm_vrecv_drop(&own[m]);
    for (int i = 0; in && i < size; i++)
        zmpi_dm_vrecv_drop(&in[i]);
    goto fn_exit;
}

int zmpi_gatherv_node(zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf, const int *recvcounts,
                      const int *displs, int root)
{
    const zmpi_topo *t = atomic_load(&c->st->topo);
    if (!t || t->size != c->size)
        return zmpi_gatherv_linear(c, sendbuf, sendcount, recvbuf, recvcounts, displs, root);
    zmpi_call_ran(c, ZMPI_GATHER_NODE);
    int rc = MPI_SUCCESS;
    zmpi_node_coding k;
    unsigned char *z = NULL;
    uint64_t lenbuf = 0;
    zmpi_dm_reqs r = {0};

    ZMPI_CHECK(zmpi_node_coders(c, t, root, &k));
    if (k.me == 0) {
        ZMPI_CHECK(collect(c, sendbuf, sendcount, recvbuf, recvcounts, displs, root, &k));
    } else if (k.me > 0) { /* a coder on the root's node */
        ZMPI_CHECK(coder(c, sendbuf, sendcount, root, &k));
    } else { /* off the root's node: its block to its coder */
        size_t n = (size_t)(sendcount > 0 ? sendcount : 0), cap = zmpi_dm_cap(c, n), len = 0;
        if (cap == 0)
            goto fn_exit;
        ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
        ZMPI_CHECK(zmpi_dm_compress(c, sendbuf, n, z, cap, &len));
        ZMPI_CHECK(zmpi_dm_isend_var(c, z, len, cap, k.h[k.helper[c->rank]], ZMPI_TAG_GATHER, &lenbuf, &r));
        ZMPI_CHECK(zmpi_dm_waitall(&r));
    }
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_node_coding_free(&k);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    goto fn_exit;
}
