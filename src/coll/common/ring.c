/*
 * Compressed pieces and overlapped exchange steps, shared by the ring
 * Reduce_scatter, the Allreduce algorithms and Reduce (see ring.h).
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
        rc = zmpi_alloc((n + 1) * sizeof *slot, &slot);
        if (rc)
            goto fn_fail;
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
        rc = zmpi_scratch_get(c, total, &p->buf);
        if (rc)
            goto fn_fail;
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
    zmpi_scratch_put(c, p->buf);
    free(p->slot);
    free(p->len);
    memset(p, 0, sizeof *p);
}

size_t zmpi_pieces_count(const zmpi_pieces *p, size_t j)
{
    size_t first = j * p->chunk;
    return p->count - first < p->chunk ? p->count - first : p->chunk;
}

size_t zmpi_pieces_first(const zmpi_pieces *p, size_t j)
{
    return j * p->chunk;
}

int zmpi_pieces_compress(zmpi_call *c, zmpi_pieces *p, size_t j, const void *src)
{
    int rc = MPI_SUCCESS;
    const unsigned char *s = (const unsigned char *)src + zmpi_pieces_first(p, j) * c->es;
    ptrdiff_t len = zmpi_block_compress(c, s, zmpi_pieces_count(p, j), p->buf + p->slot[j],
                                        p->slot[j + 1] - p->slot[j]);
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
    rc = zmpi_block_decompress(c, p->buf + p->slot[j], (size_t)p->len[j], d, zmpi_pieces_count(p, j));
    if (rc)
        goto fn_fail;
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
    rc = PMPI_Get_count(st, MPI_BYTE, &n);
    if (rc)
        goto fn_fail;
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
        rc = zmpi_alloc(need * sizeof *x->req, &x->req);
        if (!rc)
            rc = zmpi_alloc(need * sizeof *x->st, &x->st);
        if (!rc)
            rc = zmpi_alloc(need * sizeof *x->idx, &x->idx);
        if (rc)
            goto fn_fail;
        x->cap = need;
    }
    for (size_t i = 0; i < need; i++)
        x->req[i] = MPI_REQUEST_NULL;
    x->nreq = (int)need;
    for (size_t j = 0; j < nin; j++) {
        unsigned char *slot = in->buf + in->slot[j];
        int cap = (int)(in->slot[j + 1] - in->slot[j]);
        in->len[j] = -1;
        rc = PMPI_Irecv(slot, cap, MPI_BYTE, from, tag, c->comm, &x->req[j]);
        if (rc)
            goto fn_fail;
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
    rc = PMPI_Testsome(x->nreq, x->req, &n, x->idx, x->st);
    if (rc)
        goto fn_fail;
    if (n == MPI_UNDEFINED)
        n = 0;
    for (int k = 0; k < n; k++) {
        rc = record(x, x->idx[k], &x->st[k]);
        if (rc)
            goto fn_fail;
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
    rc = PMPI_Waitall(x->nreq, x->req, x->st);
    if (rc)
        goto fn_fail;
    for (int i = 0; i < x->nrecv; i++) {
        rc = record(x, i, &x->st[i]);
        if (rc)
            goto fn_fail;
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
    rc = PMPI_Wait(&x->req[j], &st);
    if (rc)
        goto fn_fail;
    rc = record(x, (int)j, &st);
    if (rc)
        goto fn_fail;
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
