/*
 * Compressed pieces and overlapped exchange steps, shared by the ring
 * Reduce_scatter, the Allreduce algorithms and Reduce, and the ring
 * allgather of compressed pieces of Allreduce `ring` and `cprp2p` (see
 * ring.h).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/ring.h"

void zmpi_blocks_even(size_t count, int n, size_t *counts, size_t *displs)
{
    size_t q = count / (size_t)n, extra = count % (size_t)n, off = 0;
    for (int b = 0; b < n; b++) {
        counts[b] = q + ((size_t)b < extra);
        displs[b] = off;
        off += counts[b];
    }
}

int zmpi_pieces_layout(const zmpi_call *c, zmpi_pieces *p, size_t count)
{
    int rc = MPI_SUCCESS;
    size_t chunk = c->st->cfg.chunk, n, total = 0;
    if (chunk < 64)
        chunk = 64; /* the configuration is validated; stay safe anyway */
    n = count / chunk + (count % chunk != 0);
    if (n + 1 > p->ncap) {
        size_t *slot = NULL;
        int *len = NULL;
        ZMPI_CHECK(zmpi_alloc((n + 1) * sizeof *slot, &slot));
        rc = zmpi_alloc((n + 1) * sizeof *len, &len);
        if (rc) {
            free(slot);
            goto fn_fail;
        }
        free(p->slot);
        free(p->len);
        p->slot = slot;
        p->len = len;
        p->ncap = n + 1;
    }
    p->count = count;
    p->chunk = chunk;
    p->n = n;
    p->slot[0] = 0;
    for (size_t j = 0; j < n; j++) {
        size_t m = zmpi_pieces_count(p, j);
        size_t w = zmpi_block_max(c, m);
        if (w == 0 || w > (size_t)INT_MAX || total > SIZE_MAX - w) {
            rc = MPI_ERR_COUNT; /* cannot happen for pieces of <= 2^26 elements */
            goto fn_fail;
        }
        total += w;
        p->slot[j + 1] = total;
        p->len[j] = -1;
    }
    if (total > p->cap) {
        zmpi_scratch_put(c, p->buf);
        p->buf = NULL;
        p->cap = 0;
        ZMPI_CHECK(zmpi_scratch_get(c, total, &p->buf));
        p->cap = total;
    }
fn_exit:
    return rc;
fn_fail:
    p->n = 0;
    p->count = 0;
    goto fn_exit;
}

void zmpi_pieces_free(const zmpi_call *c, zmpi_pieces *p)
{
    if (!p->borrowed)
        zmpi_scratch_put(c, p->buf);
    free(p->slot);
    free(p->len);
    free(p->at);
    memset(p, 0, sizeof *p);
}

size_t zmpi_pieces_count(const zmpi_pieces *p, size_t j)
{
    if (p->at)
        return p->at[j + 1] - p->at[j];
    size_t first = j * p->chunk;
    return p->count - first < p->chunk ? p->count - first : p->chunk;
}

size_t zmpi_pieces_first(const zmpi_pieces *p, size_t j)
{
    return p->at ? p->at[j] : j * p->chunk;
}

int zmpi_pieces_compress(zmpi_call *c, zmpi_pieces *p, size_t j, const void *src)
{
    int rc = MPI_SUCCESS;
    const unsigned char *s = (const unsigned char *)src + zmpi_pieces_first(p, j) * c->es;
    ptrdiff_t len =
        zmpi_block_compress(c, s, zmpi_pieces_count(p, j), p->buf + p->slot[j], p->slot[j + 1] - p->slot[j]);
    if (len < 0 || len > INT_MAX) {
        rc = MPI_ERR_INTERN; /* the slot has the worst-case size: a bug */
        goto fn_fail;
    }
    p->len[j] = (int)len;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_pieces_decompress(zmpi_call *c, const zmpi_pieces *p, size_t j, void *dst)
{
    int rc = MPI_SUCCESS;
    unsigned char *d = (unsigned char *)dst + zmpi_pieces_first(p, j) * c->es;
    if (p->len[j] < 0) {
        rc = MPI_ERR_OTHER;
        goto fn_fail;
    }
    ZMPI_CHECK(zmpi_block_decompress(c, p->buf + p->slot[j], (size_t)p->len[j], d, zmpi_pieces_count(p, j)));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Reads the size of completed request i from its status. */
static int record(zmpi_xchg *x, int i, MPI_Status *st)
{
    int rc = MPI_SUCCESS, n = 0;
    if (i >= x->nrecv || x->in->len[i] >= 0)
        goto fn_exit; /* a send, or already recorded */
    ZMPI_CHECK(PMPI_Get_count(st, MPI_BYTE, &n));
    /* an impossible size is left for the decompression to reject */
    x->in->len[i] = n == MPI_UNDEFINED || n < 0 ? 0 : n;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_xchg_start(const zmpi_call *c, zmpi_xchg *x, int tag, int from, zmpi_pieces *in, int to,
                    zmpi_pieces *out)
{
    int rc = MPI_SUCCESS;
    size_t nin = in ? in->n : 0, nout = out ? out->n : 0, need = nin + nout;
    x->comm = c->comm;
    x->tag = tag;
    x->from = from;
    x->to = to;
    x->in = in;
    x->out = out;
    x->nrecv = x->nreq = 0;
    if (need > (size_t)INT_MAX) {
        rc = MPI_ERR_COUNT;
        goto fn_fail;
    }
    if (need > x->cap) {
        zmpi_xchg_free(x);
        ZMPI_CHECK(zmpi_alloc(need * sizeof *x->req, &x->req));
        ZMPI_CHECK(zmpi_alloc(need * sizeof *x->st, &x->st));
        ZMPI_CHECK(zmpi_alloc(need * sizeof *x->idx, &x->idx));
        x->cap = need;
    }
    for (size_t i = 0; i < need; i++)
        x->req[i] = MPI_REQUEST_NULL;
    x->nreq = (int)need;
    for (size_t j = 0; j < nin; j++) {
        unsigned char *slot = in->buf + in->slot[j];
        int cap = (int)(in->slot[j + 1] - in->slot[j]);
        in->len[j] = -1;
        ZMPI_CHECK(PMPI_Irecv(slot, cap, MPI_BYTE, from, tag, c->comm, &x->req[j]));
        x->nrecv = (int)j + 1;
    }
    x->nrecv = (int)nin;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_xchg_send(zmpi_xchg *x, size_t j)
{
    int rc = MPI_SUCCESS;
    const zmpi_pieces *p = x->out;
    rc = PMPI_Isend(p->buf + p->slot[j], p->len[j], MPI_BYTE, x->to, x->tag, x->comm,
                    &x->req[(size_t)x->nrecv + j]);
    return rc;
}

int zmpi_xchg_poll(zmpi_xchg *x)
{
    int rc = MPI_SUCCESS, n = 0;
    if (x->nreq == 0)
        goto fn_exit;
    ZMPI_CHECK(PMPI_Testsome(x->nreq, x->req, &n, x->idx, x->st));
    if (n == MPI_UNDEFINED)
        n = 0;
    for (int k = 0; k < n; k++) {
        ZMPI_CHECK(record(x, x->idx[k], &x->st[k]));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_xchg_wait(zmpi_xchg *x)
{
    int rc = MPI_SUCCESS;
    if (x->nreq == 0)
        goto fn_exit;
    ZMPI_CHECK(PMPI_Waitall(x->nreq, x->req, x->st));
    for (int i = 0; i < x->nrecv; i++) {
        ZMPI_CHECK(record(x, i, &x->st[i]));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_xchg_wait_piece(zmpi_xchg *x, size_t j)
{
    int rc = MPI_SUCCESS;
    MPI_Status st;
    if (j >= (size_t)x->nrecv || x->in->len[j] >= 0)
        goto fn_exit; /* no such receive, or it already completed */
    ZMPI_CHECK(PMPI_Wait(&x->req[j], &st));
    ZMPI_CHECK(record(x, (int)j, &st));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

void zmpi_xchg_free(zmpi_xchg *x)
{
    for (int i = 0; i < x->nreq; i++) {
        if (x->req[i] == MPI_REQUEST_NULL)
            continue;
        if (i < x->nrecv)
            PMPI_Cancel(&x->req[i]);
        PMPI_Wait(&x->req[i], MPI_STATUS_IGNORE);
    }
    free(x->req);
    free(x->st);
    free(x->idx);
    x->req = NULL;
    x->st = NULL;
    x->idx = NULL;
    x->cap = 0;
    x->nreq = x->nrecv = 0;
}

/* Decompresses every piece of z into the block at dst, polling x between
 * pieces (x NULL: no polling); a corrupt piece sets *corrupt. */
static int unz_block(zmpi_call *c, const zmpi_pieces *z, void *dst, zmpi_xchg *x, int *corrupt)
{
    int rc = MPI_SUCCESS;
    for (size_t j = 0; j < z->n; j++) {
        if (zmpi_pieces_decompress(c, z, j, dst))
            *corrupt = MPI_ERR_OTHER;
        if (x)
            ZMPI_CHECK(zmpi_xchg_poll(x));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Sends the pieces of z: compressed from src first if fresh (each sent as
 * soon as it is compressed, polling in between), else forwarded as they are. */
static int send_block(zmpi_call *c, zmpi_xchg *x, zmpi_pieces *z, const void *src, int fresh)
{
    int rc = MPI_SUCCESS;
    for (size_t j = 0; j < z->n; j++) {
        if (fresh)
            ZMPI_CHECK(zmpi_pieces_compress(c, z, j, src));
        else
            zmpi_stat_sent(c, zmpi_pieces_count(z, j) * c->es, (size_t)z->len[j]);
        ZMPI_CHECK(zmpi_xchg_send(x, j));
        if (fresh)
            ZMPI_CHECK(zmpi_xchg_poll(x));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_ring_allgather(zmpi_call *c, void *buf, const size_t *counts, const size_t *displs, int per_hop,
                        int tag, int *corrupt)
{
    int rc = MPI_SUCCESS, n = c->size, r = c->rank, left = (r - 1 + n) % n, right = (r + 1) % n, ib = r;
    size_t es = c->es;
    unsigned char *b = buf;
    zmpi_pieces z[2] = {{0}, {0}}; /* step s: z[s % 2] leaves, z[(s + 1) % 2] arrives */
    zmpi_xchg x = {0};

    for (int s = 0; s < n - 1; s++) {
        int ob = (r - s + n) % n, fresh = per_hop || s == 0;
        zmpi_pieces *out = &z[s % 2], *in = &z[(s + 1) % 2];
        ib = (r - s - 1 + n) % n;
        if (fresh) /* else out holds the streams received in step s - 1 */
            ZMPI_CHECK(zmpi_pieces_layout(c, out, counts[ob]));
        ZMPI_CHECK(zmpi_pieces_layout(c, in, counts[ib]));
        ZMPI_CHECK(zmpi_xchg_start(c, &x, tag, left, in, right, out));
        ZMPI_CHECK(send_block(c, &x, out, b + displs[ob] * es, fresh));
        if (per_hop) { /* each piece as it arrives: it is recompressed in the next step */
            for (size_t j = 0; j < in->n; j++) {
                ZMPI_CHECK(zmpi_xchg_wait_piece(&x, j));
                if (zmpi_pieces_decompress(c, in, j, b + displs[ib] * es))
                    *corrupt = MPI_ERR_OTHER;
            }
        } else { /* the block sent in this step (step 0: the own block) while it travels */
            ZMPI_CHECK(unz_block(c, out, b + displs[ob] * es, &x, corrupt));
        }
        ZMPI_CHECK(zmpi_xchg_wait(&x));
    }
    if (!per_hop && n > 1) /* the block received in the last step */
        ZMPI_CHECK(unz_block(c, &z[(n - 1) % 2], b + displs[ib] * es, NULL, corrupt));
fn_exit:
    zmpi_xchg_free(&x);
    zmpi_pieces_free(c, &z[0]);
    zmpi_pieces_free(c, &z[1]);
    return rc;
fn_fail:
    goto fn_exit;
}
