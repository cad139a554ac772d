/*
 * Compressed point-to-point calls: ZMPI_Send, ZMPI_Recv, ZMPI_Isend,
 * ZMPI_Irecv, ZMPI_Sendrecv (completion of the nonblocking ones:
 * requests.c; probes: probe.c).
 *
 * Wire protocol
 * -------------
 * Every message of MPI_FLOAT or MPI_DOUBLE data that zmpi sends is ONE MPI
 * message of bytes, on the user's communicator, peer and tag - so MPI's
 * matching and non-overtaking order are those of the program, and
 * MPI_ANY_SOURCE / MPI_ANY_TAG work as with plain MPI. Its bytes are either
 *
 *   a zmpi stream   when the sender's communicator has compression on, the
 *                   message is at least ZMPI_MIN_BYTES and the stream is
 *                   smaller than the raw data; the stream describes itself
 *                   (magic, version, codec, dtype, element count, bound,
 *                   header check), or
 *   the raw data    otherwise (count * element size bytes, as MPI would send
 *                   them). Raw data that happens to form a valid zmpi stream
 *                   of exactly its own size is framed as a "stored" stream,
 *                   so that it cannot be mistaken for one.
 *
 *     sender                                  receiver (any settings)
 *     len = stream < raw ? stream : raw       PMPI_Recv(buf, count*es, MPI_BYTE)
 *     PMPI_Send(bytes, len, MPI_BYTE)  ---->  n = bytes received
 *                                             a valid stream of exactly n bytes?
 *                                               yes: check dtype and count,
 *                                                    copy it aside, decode into buf
 *                                               no:  raw data, already in buf
 *                                             status: source, tag, and the
 *                                             element count of the data
 *
 * The receiver receives straight into the user's buffer (a stream is never
 * larger than the raw data it replaces, except the framed case above), so a
 * plain message costs nothing extra and a compressed one costs a copy of its
 * compressed bytes. The decision to compress is the sender's alone; a
 * receiver recognises a stream whatever its own settings (no bound, another
 * codec, compression off), and a sender with compression off still sends
 * bytes any zmpi receiver reads. A stream with more elements than the
 * receive count is MPI_ERR_TRUNCATE, a stream of doubles into a float
 * receive (or the reverse) a type error, an undecodable stream a stream
 * error - each with a message saying which, raised through the
 * communicator's error handler. Error bound: one compression per message
 * (ABS: eb; REL: eb times the value range of that message).
 *
 * Derived datatypes made of one of MPI_FLOAT / MPI_DOUBLE (core/dtype.c):
 * the message is that of the packed elements - count instances of n
 * elements are sent and received exactly as count * n contiguous elements
 * (packed into a scratch buffer before sending unless the type is dense;
 * received into a staging buffer and unpacked after decoding). So a
 * derived-type sender matches a contiguous receiver and the reverse, and
 * the status counts elements (MPI_Get_count with the derived type gives
 * whole instances, or MPI_UNDEFINED).
 *
 * Other datatypes (integers, mixed or unsupported derived types, ...) and
 * MPI_PROC_NULL peers: both ends call the plain PMPI function with the
 * user's arguments.
 * Messages above INT_MAX bytes are sent raw.
 *
 * Rules for users: both ends of a float/double message use zmpi (a plain
 * MPI_Recv would get the stream's bytes); requests from ZMPI_Isend /
 * ZMPI_Irecv are completed with the ZMPI_ completion calls (requests.c);
 * messages found by ZMPI_Probe / Iprobe are received with ZMPI_Recv /
 * Irecv (probe.c).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p.h"

int zmpi_p2p_is_float(MPI_Datatype type, size_t *es)
{
    zmpi_dtype dt;
    if (!zmpi_classify(type, &dt))
        return 0;
    *es = zmpi_dtype_size(dt);
    return 1;
}

MPI_Datatype zmpi_p2p_bytes_type(size_t es)
{
    zmpi_proc *p = zmpi_proc_get();
    if (!p)
        return MPI_DATATYPE_NULL;
    return es == 4 ? p->bytes4 : p->bytes8;
}

void zmpi_p2p_recv_shape(int count, size_t es, int *n, MPI_Datatype *type)
{
    if ((size_t)count * es <= (size_t)INT_MAX) {
        *n = (int)((size_t)count * es);
        *type = MPI_BYTE;
    } else {
        *n = count;
        *type = zmpi_p2p_bytes_type(es);
    }
}

size_t zmpi_p2p_status_bytes(const MPI_Status *st)
{
    int n = 0;
    if (PMPI_Get_count(st, MPI_BYTE, &n) == MPI_SUCCESS && n != MPI_UNDEFINED)
        return n < 0 ? 0 : (size_t)n;
    MPI_Count x = 0; /* beyond INT_MAX bytes (SimGrid's SMPI lacks the _x call; it never gets here) */
    if (PMPI_Get_elements_x(st, MPI_BYTE, &x) != MPI_SUCCESS || x < 0)
        return 0;
    return (size_t)x;
}

int zmpi_p2p_rplan_make(void *buf, int count, MPI_Datatype type, zmpi_p2p_rplan *pl, int *rc)
{
    memset(pl, 0, sizeof *pl);
    *rc = MPI_SUCCESS;
    if (zmpi_p2p_is_float(type, &pl->es)) {
        pl->rbuf = buf;
        pl->rcount = count;
        pl->rtype = type;
        return 1;
    }
    if (count < 0)
        return 0; /* a derived type: MPI reports the error */
    zmpi_dtinfo_get(type, &pl->d);
    if (!pl->d)
        return 0;
    size_t total = (size_t)count * pl->d->n;
    if (total > (size_t)INT_MAX) { /* beyond one int count: plain (see "Derived datatypes") */
        zmpi_dtinfo_release(pl->d);
        pl->d = NULL;
        return 0;
    }
    pl->es = pl->d->es;
    pl->rcount = (int)total;
    pl->rtype = pl->d->basic;
    if (pl->d->dense) {
        pl->rbuf = buf;
        return 1;
    }
    if (total > 0 && (*rc = zmpi_alloc(total * pl->es, &pl->stage)) != MPI_SUCCESS) {
        zmpi_p2p_rplan_free(pl);
        return -1;
    }
    pl->rbuf = pl->stage;
    return 1;
}

void zmpi_p2p_rplan_finish(const zmpi_p2p_rplan *pl, void *buf, const MPI_Status *st)
{
    if (pl->stage)
        zmpi_dtinfo_unpack(pl->d, pl->stage, zmpi_p2p_status_bytes(st) / pl->es, buf);
}

void zmpi_p2p_rplan_free(zmpi_p2p_rplan *pl)
{
    free(pl->stage);
    zmpi_dtinfo_release(pl->d);
    pl->stage = NULL;
    pl->d = NULL;
}

static const char *type_name(zmpi_dtype dt)
{
    return dt == ZMPI_FLOAT ? "MPI_FLOAT" : dt == ZMPI_DOUBLE ? "MPI_DOUBLE" : "bytes";
}

/* 1 if data[0..n) is a whole zmpi stream (header valid, size exactly n). */
static int is_stream(const void *data, size_t n, zmpi_stream_info *info)
{
    static const char magic[4] = {'Z', 'M', 'P', 'I'};
    if (n < sizeof magic || memcmp(data, magic, sizeof magic))
        return 0;
    return zmpi_stream_info_get(data, n, info) == ZMPI_OK && info->stream_size == n;
}

/* Anything but an inter-step stream arrived on (source, tag): the sender
 * dropped that channel's history (chan.c), so the receiver does too. */
static void channel_drop(zmpi_comm_state *s, int source, int tag)
{
    zmpi_chan *c = s ? zmpi_chan_find(s, source, tag, ZMPI_CHAN_RECV) : NULL;
    if (c) {
        zmpi_chan_forget(s, c);
        zmpi_chan_release(c);
    }
}

/* The receiving channel of an inter-step stream, locked and in step: when
 * the stream is ahead of the channel, the earlier receives of the channel
 * (posted before `posted`) are completed first - they hold the messages in
 * between (MPI matches a channel's messages to its receives in posting
 * order). Returns NULL with *rc when it stays out of step or memory fails. */
static zmpi_chan *channel_in_step(zmpi_comm_state *s, const zmpi_stream_info *info, MPI_Comm comm,
                                  const MPI_Status *st, uint64_t posted, int *rc)
{
    zmpi_chan *c = zmpi_chan_acquire(s, st->MPI_SOURCE, st->MPI_TAG, ZMPI_CHAN_RECV);
    if (c && !zmpi_chan_in_step(c, info)) {
        zmpi_chan_release(c);
        zmpi_p2p_settle_before(comm, st->MPI_SOURCE, st->MPI_TAG, posted);
        c = zmpi_chan_acquire(s, st->MPI_SOURCE, st->MPI_TAG, ZMPI_CHAN_RECV);
        if (c && !zmpi_chan_in_step(c, info)) {
            *rc = zmpi_err(ZMPI_EK_STREAM,
                           "message %llu of the inter-step channel from rank %d, tag %d arrived out of step (the "
                           "last decoded was %llu): a message in between went to another receive (a plain MPI "
                           "receive?) or was lost to an error; the channel restarts with the sender's next reset",
                           (unsigned long long)info->seq, st->MPI_SOURCE, st->MPI_TAG,
                           c->have_seq ? (unsigned long long)c->seq : 0ull);
            zmpi_chan_forget(s, c);
            zmpi_chan_release(c);
            return NULL;
        }
    }
    if (!c)
        *rc = MPI_ERR_NO_MEM;
    return c;
}

/* Decodes a checked stream of `info` into buf (capacity cap bytes), through
 * its channel for an inter-step codec. */
static int decode(const void *data, size_t nbytes, void *buf, size_t cap, MPI_Datatype type,
                  const zmpi_stream_info *info, zmpi_comm_state *s, MPI_Comm comm, MPI_Status *st, uint64_t posted)
{
    int rc = MPI_SUCCESS;
    void *copy = NULL;
    zmpi_chan *c = NULL;
    zmpi_ctx *ctx = zmpi_ctx_create();
    if (!ctx)
        return MPI_ERR_NO_MEM;
    if (data == buf) { /* the stream sits where its elements go: decode from a copy */
        copy = malloc(nbytes);
        if (!copy) {
            rc = MPI_ERR_NO_MEM;
            goto fn_exit;
        }
        memcpy(copy, data, nbytes);
        data = copy;
    }
    if (s && s->cfg.threads != 1)
        zmpi_ctx_set_param(ctx, ZMPI_P_THREADS, s->cfg.threads);
    if (zmpi_codec_needs_channel(info->codec) == 1 && !(c = s ? channel_in_step(s, info, comm, st, posted, &rc) : NULL)) {
        rc = rc ? rc : MPI_ERR_NO_MEM;
        goto fn_exit;
    }
    const uint64_t t0 = zmpi_clock_ns();
    ptrdiff_t r = c ? zmpi_chan_decompress(s, c, ctx, data, nbytes, buf, cap) : zmpi_decompress(ctx, data, nbytes, buf, cap);
    zmpi_chan_release(c);
    if (s)
        atomic_fetch_add(&s->ns_decompress, zmpi_clock_ns() - t0);
    size_t es = zmpi_dtype_size(info->dtype);
    if (r != (ptrdiff_t)(info->count * es)) {
        rc = zmpi_err(ZMPI_EK_STREAM, "a compressed message of %llu %s from rank %d, tag %d cannot be decoded: %s",
                      (unsigned long long)info->count, type_name(info->dtype), st->MPI_SOURCE, st->MPI_TAG,
                      r < 0 ? zmpi_strerror((int)r) : "wrong size");
        goto fn_exit;
    }
    PMPI_Status_set_elements_x(st, type, (MPI_Count)info->count);
fn_exit:
    free(copy);
    zmpi_ctx_free(ctx);
    return rc;
}

int zmpi_p2p_deliver(const void *data, size_t nbytes, void *buf, int count, MPI_Datatype type, MPI_Comm comm,
                     MPI_Status *st, uint64_t posted)
{
    zmpi_stream_info info;
    zmpi_dtype dt;
    zmpi_classify(type, &dt);
    size_t es = zmpi_dtype_size(dt), cap = (size_t)count * es;
    zmpi_comm_state *s = zmpi_state(comm);
    int stream = is_stream(data, nbytes, &info);
    if (s && s->chans && (!stream || zmpi_codec_needs_channel(info.codec) != 1))
        channel_drop(s, st->MPI_SOURCE, st->MPI_TAG);
    if (!stream) {
        /* raw data (MPI itself reports a message larger than the buffer) */
        if (nbytes > cap)
            return zmpi_err(ZMPI_EK_TRUNCATE, "a message of %zu bytes reached a receive of %d %s", nbytes, count,
                            type_name(dt));
        if (data != buf)
            memcpy(buf, data, nbytes);
        PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)nbytes);
        return MPI_SUCCESS;
    }
    if (info.dtype != dt)
        return zmpi_err(ZMPI_EK_TYPE, "a compressed message of %llu %s reached a receive of %s",
                        (unsigned long long)info.count, type_name(info.dtype), type_name(dt));
    if (info.count > (uint64_t)count)
        return zmpi_err(ZMPI_EK_TRUNCATE, "a compressed message of %llu %s reached a receive of %d",
                        (unsigned long long)info.count, type_name(dt), count);
    return decode(data, nbytes, buf, cap, type, &info, s, comm, st, posted);
}

/* ---- sending ---- */

/* Frames count elements as an uncompressed ("stored") stream in a new
 * buffer *owned of *len bytes. */
static int frame_stored(const void *buf, size_t count, zmpi_dtype dt, void **owned, int *len)
{
    zmpi_ctx *st = zmpi_ctx_create();
    int rc = st && zmpi_ctx_set_codec(st, ZMPI_CODEC_STORED) == ZMPI_OK ? MPI_SUCCESS : MPI_ERR_NO_MEM;
    size_t cap = rc ? 0 : zmpi_max_compressed_size(st, count, dt);
    if (rc == MPI_SUCCESS)
        rc = zmpi_alloc(cap, owned);
    ptrdiff_t l = rc ? -1 : zmpi_compress(st, buf, count, dt, *owned, cap);
    zmpi_ctx_free(st);
    if (rc == MPI_SUCCESS && (l < 0 || (size_t)l > (size_t)INT_MAX))
        rc = MPI_ERR_INTERN;
    *len = (int)l;
    return rc;
}

static int send_prepare(const void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                        const void **out, int *len, void **owned);

/* send_prepare for a type that is not MPI_FLOAT / MPI_DOUBLE: an eligible
 * derived type is packed (unless dense) and sent as count*n elements of its
 * basic type; others go plain. */
static int send_derived(const void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                        const void **out, int *len, void **owned)
{
    zmpi_dtinfo *d;
    void *packed = NULL;
    int rc = MPI_SUCCESS;
    zmpi_dtinfo_get(type, &d);
    size_t total = d ? (size_t)count * d->n : 0;
    if (!d) {
        rc = zmpi_p2p_count(comm, type, 0);
        goto fn_exit;
    }
    if (total > (size_t)INT_MAX / d->es)
        goto fn_exit; /* raw beyond INT_MAX bytes: plain (uncounted), as for MPI_FLOAT */
    if (d->dense || total == 0) {
        rc = send_prepare(buf, (int)total, d->basic, peer, tag, comm, out, len, owned);
        goto fn_exit;
    }
    ZMPI_CHECK(zmpi_alloc(total * d->es, &packed));
    zmpi_dtinfo_pack(d, buf, (size_t)count, packed);
    ZMPI_CHECK(send_prepare(packed, (int)total, d->basic, peer, tag, comm, out, len, owned));
    if (*out == packed) { /* sent raw from the packed copy */
        *owned = packed;
        packed = NULL;
    }
fn_exit:
    free(packed);
    zmpi_dtinfo_release(d);
    return rc;
fn_fail:
    goto fn_exit;
}

/* Compresses (buf, count) for the call c into a new buffer *owned:
 * returns its length when it is smaller than the raw data, else 0 (the
 * message goes raw). An inter-step codec codes against the channel of
 * (peer, tag), whose history is dropped when the stream does not go. */
static size_t compress_msg(zmpi_call *c, const void *buf, int count, int peer, int tag, void **owned, int *rc)
{
    size_t raw = (size_t)count * c->es, cap = zmpi_block_max(c, (size_t)count);
    zmpi_chan *ch = c->chan ? zmpi_chan_acquire(c->st, peer, tag, ZMPI_CHAN_SEND) : NULL;
    ptrdiff_t l = -1;
    if (c->chan && !ch) /* no memory for a channel: the intra-step variant */
        zmpi_ctx_set_codec(c->ctx, zmpi_codec_intra(zmpi_ctx_get_codec(c->ctx)));
    if (raw >= c->min_bytes && raw > 0 && (*rc = zmpi_alloc(cap, owned)) == MPI_SUCCESS) {
        const uint64_t t0 = zmpi_clock_ns();
        l = ch ? zmpi_chan_compress(c->st, ch, c->ctx, buf, (size_t)count, c->dt, *owned, cap)
               : zmpi_compress(c->ctx, buf, (size_t)count, c->dt, *owned, cap);
        atomic_fetch_add(&c->st->ns_compress, zmpi_clock_ns() - t0);
        if (l < 0)
            atomic_fetch_add(&c->st->codec_errors, 1);
    }
    if (l > 0 && (size_t)l < raw) { /* a stream only where it is smaller than the data */
        zmpi_chan_release(ch);
        zmpi_stat_sent(c, raw, (size_t)l);
        return (size_t)l;
    }
    zmpi_chan_forget(c->st, ch); /* the receiver sees no stream of the channel: both restart it */
    zmpi_chan_release(ch);
    free(*owned);
    *owned = NULL;
    return 0;
}

/* What to send for (buf, count, type) to (peer, tag) on comm: *out / *len
 * bytes (MPI_BYTE) and *owned = the buffer to free afterwards, or *out ==
 * NULL for the plain PMPI call with the user's arguments. Returns
 * MPI_SUCCESS or an error (not raised). */
static int send_prepare(const void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                        const void **out, int *len, void **owned)
{
    zmpi_call c;
    size_t es = 0;
    *out = NULL;
    *owned = NULL;
    if (count < 0)
        return MPI_ERR_COUNT; /* raised by the caller, as MPI would */
    if (peer == MPI_PROC_NULL || comm == MPI_COMM_NULL)
        return MPI_SUCCESS;
    if (!zmpi_p2p_is_float(type, &es))
        return send_derived(buf, count, type, peer, tag, comm, out, len, owned);
    size_t raw = (size_t)count * es;
    if (raw > (size_t)INT_MAX)
        return MPI_SUCCESS; /* raw: one MPI_BYTE message cannot hold it, the receiver takes any size */
    if (count > 0 && !buf)
        return MPI_ERR_BUFFER;
    int on = zmpi_call_begin_p2p(&c, comm, type, raw);
    if (on == ZMPI_CALL_ERR)
        return c.err;
    int rc = MPI_SUCCESS;
    zmpi_stream_info info;
    size_t l = on == ZMPI_CALL_ON ? compress_msg(&c, buf, count, peer, tag, owned, &rc) : 0;
    if (l || rc)
        goto fn_exit;
    *out = buf;
    *len = (int)raw;
    if (is_stream(buf, raw, &info)) { /* raw data that reads as a stream: framed, so no receiver decodes it */
        rc = frame_stored(buf, (size_t)count, es == 4 ? ZMPI_FLOAT : ZMPI_DOUBLE, owned, len);
        if (rc == MPI_SUCCESS)
            *out = *owned;
    }
fn_exit:
    if (l) {
        *out = *owned;
        *len = (int)l;
    }
    if (on == ZMPI_CALL_ON)
        zmpi_call_end(&c);
    if (rc) {
        free(*owned);
        *owned = NULL;
    }
    return rc;
}

typedef int (*send_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm);
typedef int (*isend_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

/* ZMPI_Send and ZMPI_Ssend: the stream (or the plain data) goes with psend. */
static int send_with(send_fn psend, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                     MPI_Comm comm)
{
    const void *out;
    void *owned;
    int len = 0;
    zmpi_p2p_reap();
    int rc = send_prepare(buf, count, datatype, dest, tag, comm, &out, &len, &owned);
    if (rc)
        return zmpi_raise(comm, rc);
    if (out)
        rc = psend(out, len, MPI_BYTE, dest, tag, comm);
    else
        rc = psend(buf, count, datatype, dest, tag, comm);
    free(owned);
    return rc;
}

int ZMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_with(PMPI_Send, buf, count, datatype, dest, tag, comm);
}

int ZMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    return send_with(PMPI_Ssend, buf, count, datatype, dest, tag, comm);
}

/* Isend without raising: *raised = 1 when the error came from MPI (which
 * raised it). quiet: the operation's own completion errors are not raised
 * either (ZMPI_Sendrecv reports them once). */
static int isend(isend_fn pisend, const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                 MPI_Comm comm, int quiet, MPI_Request *request, int *raised)
{
    const void *out;
    void *owned;
    int len = 0;
    zmpi_p2p_op *op = NULL;
    *raised = 0;
    if (!request)
        return zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Isend: request is NULL");
    int rc = send_prepare(buf, count, datatype, dest, tag, comm, &out, &len, &owned);
    if (rc)
        return rc;
    if (!out) {
        *raised = 1;
        return pisend(buf, count, datatype, dest, tag, comm, request);
    }
    rc = zmpi_p2p_op_new(comm, 0, &op);
    if (rc) {
        free(owned);
        return rc;
    }
    op->stream = owned;
    op->quiet = quiet;
    rc = pisend(out, len, MPI_BYTE, dest, tag, comm, &op->req);
    if (rc) {
        zmpi_p2p_op_discard(op);
        *raised = 1;
        return rc;
    }
    zmpi_p2p_register(op);
    *request = op->greq;
    return MPI_SUCCESS;
}

int ZMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    int raised;
    zmpi_p2p_reap();
    int rc = isend(PMPI_Isend, buf, count, datatype, dest, tag, comm, 0, request, &raised);
    return raised ? rc : zmpi_raise(comm, rc);
}

int ZMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    int raised;
    zmpi_p2p_reap();
    int rc = isend(PMPI_Issend, buf, count, datatype, dest, tag, comm, 0, request, &raised);
    return raised ? rc : zmpi_raise(comm, rc);
}

/* ---- receiving ---- */

/* Checks a float/double receive before it is posted: the settings (a
 * malformed one is an error on every call), the arguments. */
static int recv_check(void *buf, int count, MPI_Datatype type, size_t es, MPI_Comm comm)
{
    if (count < 0)
        return MPI_ERR_COUNT;
    if (count > 0 && !buf)
        return MPI_ERR_BUFFER;
    return zmpi_p2p_count(comm, type, (size_t)count * es);
}

int ZMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Status *status)
{
    zmpi_p2p_rplan pl;
    MPI_Status st;
    int rc;
    zmpi_p2p_reap();
    if (source == MPI_PROC_NULL || comm == MPI_COMM_NULL)
        return PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    if (zmpi_p2p_take_kept(comm, source, tag, buf, count, datatype, &rc, &st))
        goto fn_exit; /* a message a probe took out of MPI's queue */
    int how = zmpi_p2p_rplan_make(buf, count, datatype, &pl, &rc);
    if (how == 0) {
        rc = zmpi_p2p_count(comm, datatype, 0);
        return rc ? zmpi_raise(comm, rc) : PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    }
    if (how < 0)
        return zmpi_raise(comm, rc);
    rc = recv_check(pl.rbuf, pl.rcount, pl.rtype, pl.es, comm);
    if (rc) {
        zmpi_p2p_rplan_free(&pl);
        return zmpi_raise(comm, rc);
    }
    int rn;
    MPI_Datatype rt;
    zmpi_p2p_recv_shape(pl.rcount, pl.es, &rn, &rt);
    rc = PMPI_Recv(pl.rbuf, rn, rt, source, tag, comm, &st);
    if (rc) {
        zmpi_p2p_rplan_free(&pl);
        if (status != MPI_STATUS_IGNORE)
            *status = st;
        return rc; /* MPI raised it */
    }
    rc = zmpi_p2p_deliver(pl.rbuf, zmpi_p2p_status_bytes(&st), pl.rbuf, pl.rcount, pl.rtype, comm, &st,
                          UINT64_MAX);
    if (rc == MPI_SUCCESS)
        zmpi_p2p_rplan_finish(&pl, buf, &st);
    zmpi_p2p_rplan_free(&pl);
fn_exit:
    if (rc)
        PMPI_Status_set_elements(&st, MPI_BYTE, 0);
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    return zmpi_raise(comm, rc);
}

/* Irecv without raising (as isend). */
static int irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm, int quiet,
                 MPI_Request *request, int *raised)
{
    zmpi_p2p_op *op = NULL;
    zmpi_p2p_rplan pl;
    MPI_Status st;
    int rc, kept_rc;
    *raised = 0;
    if (!request)
        return zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Irecv: request is NULL");
    *raised = 1;
    if (source == MPI_PROC_NULL || comm == MPI_COMM_NULL)
        return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    *raised = 0;
    int how = zmpi_p2p_rplan_make(buf, count, datatype, &pl, &rc);
    if (how < 0)
        return rc;
    rc = how ? recv_check(pl.rbuf, pl.rcount, pl.rtype, pl.es, comm) : zmpi_p2p_count(comm, datatype, 0);
    if (!rc)
        rc = zmpi_p2p_op_new(comm, 1, &op);
    if (rc) {
        zmpi_p2p_rplan_free(&pl);
        return rc;
    }
    op->buf = buf;
    op->count = count;
    op->type = datatype;
    op->quiet = quiet;
    op->source = source;
    op->tag = tag;
    op->plan = pl; /* the operation owns the plan from here on */
    if (zmpi_p2p_take_kept(comm, source, tag, buf, count, datatype, &kept_rc, &st)) {
        zmpi_p2p_op_done(op, &st, kept_rc); /* complete already; its error comes at completion */
    } else if (!how) {
        zmpi_p2p_op_discard(op);
        *raised = 1;
        return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    } else {
        int rn;
        MPI_Datatype rt;
        zmpi_p2p_recv_shape(pl.rcount, pl.es, &rn, &rt);
        rc = PMPI_Irecv(pl.rbuf, rn, rt, source, tag, comm, &op->req);
        if (rc) {
            zmpi_p2p_op_discard(op);
            *raised = 1;
            return rc;
        }
    }
    zmpi_p2p_register(op);
    *request = op->greq;
    return MPI_SUCCESS;
}

int ZMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    int raised;
    zmpi_p2p_reap();
    int rc = irecv(buf, count, datatype, source, tag, comm, 0, request, &raised);
    return raised ? rc : zmpi_raise(comm, rc);
}

/*
 * Sendrecv = Irecv + Isend + Waitall: deadlock-free for any pairing (also a
 * rank with itself), whichever of the two messages is compressed.
 */
int ZMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, MPI_Status *status)
{
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status sts[2];
    int raised = 0, rc;
    zmpi_p2p_reap();
    /* quiet operations: their errors come back here and are raised once */
    rc = irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, 1, &reqs[1], &raised);
    if (rc == MPI_SUCCESS)
        rc = isend(PMPI_Isend, sendbuf, sendcount, sendtype, dest, sendtag, comm, 1, &reqs[0], &raised);
    if (rc == MPI_SUCCESS) {
        rc = zmpi_p2p_waitall(2, reqs, sts, &raised);
        if (rc != MPI_SUCCESS) {
            int cls = rc;
            PMPI_Error_class(rc, &cls);
            if (cls == MPI_ERR_IN_STATUS)
                for (int i = 1; i >= 0; i--)
                    if (sts[i].MPI_ERROR != MPI_SUCCESS && sts[i].MPI_ERROR != MPI_ERR_PENDING)
                        rc = sts[i].MPI_ERROR;
        }
        if (status != MPI_STATUS_IGNORE)
            *status = sts[1];
        if (rc == MPI_SUCCESS && source == MPI_PROC_NULL) /* the status MPI_Sendrecv gives (MPI_PROC_NULL, MPI_ANY_TAG, 0) */
            rc = PMPI_Recv(recvbuf, recvcount, recvtype, MPI_PROC_NULL, recvtag, comm, status);
    } else if (reqs[1] != MPI_REQUEST_NULL) { /* the send did not start: take the receive back */
        int r2;
        ZMPI_Cancel(&reqs[1]);
        zmpi_p2p_waitall(1, &reqs[1], MPI_STATUSES_IGNORE, &r2);
    }
    return raised ? rc : zmpi_raise(comm, rc);
}
