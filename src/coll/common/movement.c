/*
 * Transfers and block helpers of the data-movement collectives (see
 * movement.h for the protocols).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/common/movement.h"

int zmpi_dm_reqs_reserve(zmpi_dm_reqs *r, int more)
{
    int rc = MPI_SUCCESS, cap = r->cap ? r->cap : 8;
    MPI_Request *p;
    if (more < 0 || r->n > INT_MAX - more) {
        rc = MPI_ERR_INTERN;
        goto fn_exit;
    }
    if (r->n + more <= r->cap)
        goto fn_exit;
    while (cap < r->n + more)
        cap = cap > INT_MAX / 2 ? INT_MAX : cap * 2;
    p = realloc(r->req, (size_t)cap * sizeof *p);
    if (!p) {
        rc = MPI_ERR_NO_MEM;
        goto fn_exit;
    }
    r->req = p;
    r->cap = cap;
fn_exit:
    return rc;
}

int zmpi_dm_waitall(zmpi_dm_reqs *r)
{
    int rc = MPI_SUCCESS;
    if (r->n > 0)
        rc = PMPI_Waitall(r->n, r->req, MPI_STATUSES_IGNORE);
    r->n = 0;
    return rc;
}

int zmpi_dm_progress(zmpi_dm_reqs *r)
{
    int rc = MPI_SUCCESS, flag = 0;
    if (r->n > 0)
        rc = PMPI_Testall(r->n, r->req, &flag, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS && flag)
        r->n = 0; /* all complete (and set to MPI_REQUEST_NULL) */
    return rc;
}

void zmpi_dm_reqs_free(zmpi_dm_reqs *r)
{
    if (r->n > 0)
        PMPI_Waitall(r->n, r->req, MPI_STATUSES_IGNORE);
    free(r->req);
    r->req = NULL;
    r->n = r->cap = 0;
}

static int npieces(size_t len)
{
    size_t n = len / ZMPI_DM_PIECE + (len % ZMPI_DM_PIECE != 0);
    return n > (size_t)INT_MAX ? -1 : (int)n;
}

int zmpi_dm_isend(const zmpi_call *c, const void *buf, size_t len, int dest, int tag, zmpi_dm_reqs *r)
{
    int np = npieces(len);
    int rc = np < 0 ? MPI_ERR_COUNT : zmpi_dm_reqs_reserve(r, np);
    for (size_t off = 0; rc == MPI_SUCCESS && off < len; off += ZMPI_DM_PIECE) {
        size_t n = len - off < ZMPI_DM_PIECE ? len - off : ZMPI_DM_PIECE;
        rc = PMPI_Isend((const char *)buf + off, (int)n, MPI_BYTE, dest, tag, c->comm, &r->req[r->n]);
        if (rc == MPI_SUCCESS)
            r->n++;
    }
    return rc;
}

int zmpi_dm_irecv(const zmpi_call *c, void *buf, size_t len, int src, int tag, zmpi_dm_reqs *r)
{
    int np = npieces(len);
    int rc = np < 0 ? MPI_ERR_COUNT : zmpi_dm_reqs_reserve(r, np);
    for (size_t off = 0; rc == MPI_SUCCESS && off < len; off += ZMPI_DM_PIECE) {
        size_t n = len - off < ZMPI_DM_PIECE ? len - off : ZMPI_DM_PIECE;
        rc = PMPI_Irecv((char *)buf + off, (int)n, MPI_BYTE, src, tag, c->comm, &r->req[r->n]);
        if (rc == MPI_SUCCESS)
            r->n++;
    }
    return rc;
}

int zmpi_dm_recv(const zmpi_call *c, void *buf, size_t len, int src, int tag)
{
    zmpi_dm_reqs r = {0};
    int rc = zmpi_dm_irecv(c, buf, len, src, tag, &r);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_waitall(&r);
    zmpi_dm_reqs_free(&r);
    return rc;
}

size_t zmpi_dm_cap(const zmpi_call *c, size_t count)
{
    return count ? zmpi_block_max(c, count) : 0;
}

int zmpi_dm_isend_var(const zmpi_call *c, const void *buf, size_t len, size_t cap, int dest, int tag,
                      uint64_t *lenbuf, zmpi_dm_reqs *r)
{
    int rc = MPI_SUCCESS;
    if (len > cap) {
        rc = MPI_ERR_INTERN;
        goto fn_exit;
    }
    if (cap == 0)
        goto fn_exit; /* both ends know the block is empty: no message */
    ZMPI_CHECK(zmpi_dm_reqs_reserve(r, 1));
    if (cap <= ZMPI_DM_PIECE) { /* one message; the receiver reads the size from the status */
        rc = PMPI_Isend(buf, (int)len, MPI_BYTE, dest, tag, c->comm, &r->req[r->n]);
        if (rc == MPI_SUCCESS)
            r->n++;
        goto fn_exit;
    }
    *lenbuf = (uint64_t)len; /* the length first, then the stream in pieces */
    rc = PMPI_Isend(lenbuf, 1, MPI_UINT64_T, dest, tag, c->comm, &r->req[r->n]);
    if (rc == MPI_SUCCESS) {
        r->n++;
        rc = zmpi_dm_isend(c, buf, len, dest, tag, r);
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_dm_vrecv_post(const zmpi_call *c, zmpi_dm_vrecv *v, void *buf, size_t cap, int src, int tag)
{
    int rc = MPI_SUCCESS;
    memset(v, 0, sizeof *v);
    v->buf = buf;
    v->cap = cap;
    v->src = src;
    v->tag = tag;
    v->req = MPI_REQUEST_NULL;
    if (cap > 0 && cap <= ZMPI_DM_PIECE)
        rc = PMPI_Irecv(buf, (int)cap, MPI_BYTE, src, tag, c->comm, &v->req);
    else if (cap > 0)
        rc = PMPI_Irecv(&v->len64, 1, MPI_UINT64_T, src, tag, c->comm, &v->req);
    if (rc == MPI_SUCCESS && cap > 0)
        v->active = 1;
    return rc;
}

int zmpi_dm_vrecv_wait(const zmpi_call *c, zmpi_dm_vrecv *v)
{
    int rc = MPI_SUCCESS, n = 0;
    MPI_Status st;
    if (!v->active)
        goto fn_exit;
    v->active = 0;
    ZMPI_CHECK(PMPI_Wait(&v->req, &st));
    if (v->cap <= ZMPI_DM_PIECE) {
        rc = PMPI_Get_count(&st, MPI_BYTE, &n);
        if (rc == MPI_SUCCESS && n < 0)
            rc = MPI_ERR_OTHER;
        v->len = rc == MPI_SUCCESS ? (size_t)n : 0;
        goto fn_exit;
    }
    if (v->len64 > (uint64_t)v->cap) {
        rc = MPI_ERR_TRUNCATE;
        goto fn_exit;
    }
    v->len = (size_t)v->len64;
    rc = zmpi_dm_recv(c, v->buf, v->len, v->src, v->tag);
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

void zmpi_dm_vrecv_drop(zmpi_dm_vrecv *v)
{
    if (v->active)
        PMPI_Wait(&v->req, MPI_STATUS_IGNORE);
    v->active = 0;
}

int zmpi_dm_compress(zmpi_call *c, const void *src, size_t count, void *dst, size_t cap, size_t *len)
{
    int rc = MPI_SUCCESS;
    ptrdiff_t n = count ? zmpi_block_compress(c, src, count, dst, cap) : 0;
    if (n < 0)
        rc = MPI_ERR_INTERN; /* cap below zmpi_dm_cap: a bug */
    *len = n > 0 ? (size_t)n : 0;
    return rc;
}

int zmpi_dm_decompress(zmpi_call *c, const void *src, size_t len, void *dst, size_t count)
{
    int rc = MPI_SUCCESS;
    zmpi_stream_info info;
    if (len == 0)
        goto fn_exit; /* an empty block */
    if (c->grid > 0) /* packed grid codes: the count is checked by the unpacking */
        rc = zmpi_block_decompress(c, src, len, dst, count);
    else if (zmpi_stream_info_get(src, len, &info) != ZMPI_OK)
        rc = MPI_ERR_OTHER;
    else if (info.count > (uint64_t)count)
        rc = MPI_ERR_TRUNCATE;
    else
        rc = zmpi_block_decompress(c, src, len, dst, (size_t)info.count);
fn_exit:
    return rc;
}

int zmpi_dm_compress_to(zmpi_call *c, int peer, const void *src, size_t count, void *dst, size_t cap, size_t *len)
{
    if (!c->chan)
        return zmpi_dm_compress(c, src, count, dst, cap, len);
    zmpi_chan *ch = zmpi_chan_acquire(c->st, peer, ZMPI_CHAN_TAG_ALLTOALL, ZMPI_CHAN_SEND);
    ptrdiff_t n = -1;
    *len = 0;
    if (ch && count > 0 && count * c->es >= c->min_bytes) {
        const uint64_t t0 = zmpi_clock_ns();
        n = zmpi_chan_compress(c->st, ch, c->ctx, src, count, c->dt, dst, cap);
        atomic_fetch_add(&c->st->ns_compress, zmpi_clock_ns() - t0);
        if (n < 0 && n != ZMPI_ERR_DST_TOO_SMALL)
            atomic_fetch_add(&c->st->codec_errors, 1);
        if (n >= 0)
            zmpi_stat_sent(c, count * c->es, (size_t)n);
    }
    if (n < 0) { /* empty, small, or a codec error: no stream of the channel goes */
        zmpi_chan_forget(c->st, ch);
        n = count ? zmpi_compress(c->raw, src, count, c->dt, dst, cap) : 0;
        if (n > 0)
            zmpi_stat_sent(c, count * c->es, (size_t)n);
    }
    zmpi_chan_release(ch);
    if (n < 0)
        return MPI_ERR_INTERN; /* cap below zmpi_dm_cap: a bug */
    *len = (size_t)n;
    return MPI_SUCCESS;
}

int zmpi_dm_decompress_from(zmpi_call *c, int peer, const void *src, size_t len, void *dst, size_t count)
{
    zmpi_stream_info info;
    if (!c->chan)
        return zmpi_dm_decompress(c, src, len, dst, count);
    int inter = len > 0 && zmpi_stream_info_get(src, len, &info) == ZMPI_OK &&
                zmpi_codec_needs_channel(info.codec) == 1;
    zmpi_chan *ch = inter ? zmpi_chan_acquire(c->st, peer, ZMPI_CHAN_TAG_ALLTOALL, ZMPI_CHAN_RECV)
                          : zmpi_chan_find(c->st, peer, ZMPI_CHAN_TAG_ALLTOALL, ZMPI_CHAN_RECV);
    int rc = MPI_SUCCESS;
    if (!inter) {
        zmpi_chan_forget(c->st, ch);
        zmpi_chan_release(ch);
        return zmpi_dm_decompress(c, src, len, dst, count);
    }
    if (!ch || info.count > (uint64_t)count || info.dtype != c->dt || !zmpi_chan_in_step(ch, &info)) {
        rc = !ch ? MPI_ERR_NO_MEM : info.count > (uint64_t)count ? MPI_ERR_TRUNCATE : MPI_ERR_OTHER;
        zmpi_chan_forget(c->st, ch);
    } else {
        const uint64_t t0 = zmpi_clock_ns();
        ptrdiff_t r = zmpi_chan_decompress(c->st, ch, c->ctx, src, len, dst, count * c->es);
        atomic_fetch_add(&c->st->ns_decompress, zmpi_clock_ns() - t0);
        rc = r == (ptrdiff_t)(info.count * c->es) ? MPI_SUCCESS : MPI_ERR_OTHER;
    }
    zmpi_chan_release(ch);
    return rc;
}

void zmpi_dm_chan_drop(zmpi_call *c, int peer, int dir)
{
    if (!c->chan)
        return;
    zmpi_chan *ch = zmpi_chan_find(c->st, peer, ZMPI_CHAN_TAG_ALLTOALL, dir);
    zmpi_chan_forget(c->st, ch);
    zmpi_chan_release(ch);
}

int zmpi_dm_dir_total(const uint64_t *dir, int n, size_t *total)
{
    int rc = MPI_SUCCESS;
    size_t t = 0;
    for (int i = 0; rc == MPI_SUCCESS && i < n; i++) {
        if (dir[i] > (uint64_t)(SIZE_MAX - t))
            rc = MPI_ERR_OTHER; /* a corrupt directory */
        else
            t += (size_t)dir[i];
    }
    *total = t;
    return rc;
}

int zmpi_dm_isend_bundle(const zmpi_call *c, const uint64_t *dir, int n, const void *data, int dest, int tag,
                         zmpi_dm_reqs *r)
{
    size_t total = 0;
    int rc = zmpi_dm_dir_total(dir, n, &total);
    if (rc == MPI_SUCCESS)
        rc = zmpi_dm_reqs_reserve(r, 1);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Isend(dir, n, MPI_UINT64_T, dest, tag, c->comm, &r->req[r->n]);
    if (rc == MPI_SUCCESS) {
        r->n++;
        rc = zmpi_dm_isend(c, data, total, dest, tag, r);
    }
    return rc;
}

int zmpi_dm_recv_bundle_dir(const zmpi_call *c, uint64_t *dir, int n, int src, int tag)
{
    return PMPI_Recv(dir, n, MPI_UINT64_T, src, tag, c->comm, MPI_STATUS_IGNORE);
}

int zmpi_dm_equal_layout(int size, int count, int **counts, int **displs)
{
    int rc = zmpi_alloc((size_t)size * sizeof **counts, counts);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc((size_t)size * sizeof **displs, displs);
    for (int i = 0; rc == MPI_SUCCESS && i < size; i++) {
        (*counts)[i] = count;
        (*displs)[i] = i * count;
    }
    return rc;
}

int zmpi_dm_copy_prefix(MPI_Comm comm, const void *src, int scount, MPI_Datatype stype, void *dst, size_t rcount,
                        MPI_Datatype rtype)
{
    int rc, psize = 0, ssz = 0, rsz = 0, pos = 0;
    void *pack = NULL;
    ZMPI_CHECK(PMPI_Type_size(stype, &ssz));
    ZMPI_CHECK(PMPI_Type_size(rtype, &rsz));
    size_t bytes = (size_t)(scount > 0 ? scount : 0) * (size_t)(ssz > 0 ? ssz : 0);
    if (rsz <= 0 || bytes % (size_t)rsz) {
        rc = MPI_ERR_TYPE;
        goto fn_fail;
    }
    size_t n = bytes / (size_t)rsz < rcount ? bytes / (size_t)rsz : rcount;
    if (n == 0)
        goto fn_exit;
    if (n > (size_t)INT_MAX || bytes > (size_t)INT_MAX) {
        rc = MPI_ERR_COUNT;
        goto fn_fail;
    }
    ZMPI_CHECK(PMPI_Pack_size(scount, stype, comm, &psize));
    ZMPI_CHECK(zmpi_alloc((size_t)psize, &pack));
    ZMPI_CHECK(PMPI_Pack(src, scount, stype, pack, psize, &pos, comm));
    psize = pos;
    pos = 0;
    ZMPI_CHECK(PMPI_Unpack(pack, psize, &pos, dst, (int)n, rtype, comm));
fn_exit:
    free(pack);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_dm_copy_typed(MPI_Comm comm, const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                       MPI_Datatype rtype)
{
    int rc, ssz = 0, rsz = 0;
    if ((rc = PMPI_Type_size(stype, &ssz)) != MPI_SUCCESS || (rc = PMPI_Type_size(rtype, &rsz)) != MPI_SUCCESS)
        return rc;
    size_t bytes = (size_t)(scount > 0 ? scount : 0) * (size_t)(ssz > 0 ? ssz : 0);
    if (bytes == 0)
        return MPI_SUCCESS;
    if (rsz <= 0 || rcount < 0 || bytes > (size_t)rcount * (size_t)rsz)
        return MPI_ERR_TRUNCATE;
    return zmpi_dm_copy_prefix(comm, src, scount, stype, dst, (size_t)rcount, rtype);
}

size_t zmpi_dm_stream_count(const zmpi_call *c, const void *src, size_t len)
{
    zmpi_stream_info info;
    if (len == 0)
        return 0;
    if (zmpi_stream_info_get(src, len, &info) != ZMPI_OK || info.dtype != c->dt || info.count > INT_MAX)
        return SIZE_MAX;
    return (size_t)info.count;
}

int zmpi_dm_rehop(zmpi_call *c, const unsigned char *src, size_t len, size_t n, void *tmp, unsigned char *dst,
                  size_t cap, size_t *olen, int *corrupt)
{
    if (n == SIZE_MAX || (n > 0 && zmpi_block_decompress(c, src, len, tmp, n) != MPI_SUCCESS)) {
        memcpy(dst, src, len);
        *olen = len;
        *corrupt = MPI_ERR_OTHER;
        return MPI_SUCCESS;
    }
    return zmpi_dm_compress(c, tmp, n, dst, cap, olen);
}

int zmpi_dm_recv_bundle(const zmpi_call *c, int n, int src, int tag, uint64_t **dir, size_t **pre,
                        unsigned char **z)
{
    int rc = MPI_SUCCESS;
    size_t total = 0;
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof **dir, dir));
    ZMPI_CHECK(zmpi_alloc(((size_t)n + 1) * sizeof **pre, pre));
    ZMPI_CHECK(zmpi_dm_recv_bundle_dir(c, *dir, n, src, tag));
    ZMPI_CHECK(zmpi_dm_dir_total(*dir, n, &total));
    ZMPI_CHECK(zmpi_scratch_get(c, total, z));
    ZMPI_CHECK(zmpi_dm_recv(c, *z, total, src, tag));
    (*pre)[0] = 0;
    for (int k = 0; k < n; k++)
        (*pre)[k + 1] = (*pre)[k] + (size_t)(*dir)[k];
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_dm_gather_own(const zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                       const int *recvcounts, const int *displs, int root)
{
    if (sendbuf == MPI_IN_PLACE || sendcount <= 0)
        return MPI_SUCCESS;
    if (sendcount > recvcounts[root])
        return MPI_ERR_TRUNCATE;
    memcpy((char *)recvbuf + (ptrdiff_t)displs[root] * (ptrdiff_t)c->es, sendbuf, (size_t)sendcount * c->es);
    return MPI_SUCCESS;
}

int zmpi_dm_scatter_own(const zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                        void *recvbuf, int recvcount, int root)
{
    if (recvbuf == MPI_IN_PLACE || sendcounts[root] <= 0)
        return MPI_SUCCESS;
    if (sendcounts[root] > recvcount)
        return MPI_ERR_TRUNCATE;
    memcpy(recvbuf, (const char *)sendbuf + (ptrdiff_t)displs[root] * (ptrdiff_t)c->es,
           (size_t)sendcounts[root] * c->es);
    return MPI_SUCCESS;
}
