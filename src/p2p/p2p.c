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
 * (a compressed one packed into a scratch buffer before sending unless the
 * type is dense, a raw one sent with the user's type - the same bytes -
 * unless its first element could start a stream; received into a staging
 * buffer and unpacked after decoding). So a
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

/* 1 if type lays its data out as plain bytes from the buffer's address, in
 * order (so that a message received with it is the buffer's first bytes):
 * a named type, or contiguous or duplicated copies of one. */
static int bytes_layout(MPI_Datatype type)
{
    int ni, na, nd, comb, rc;
    if (PMPI_Type_get_envelope(type, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        return 0;
    if (comb == MPI_COMBINER_NAMED)
        return 1;
    if ((comb != MPI_COMBINER_DUP && comb != MPI_COMBINER_CONTIGUOUS) || ni > 1 || na != 0 || nd != 1)
        return 0;
    int ints[1];
    MPI_Aint addr[1];
    MPI_Datatype inner;
    if (PMPI_Type_get_contents(type, ni, 0, 1, ints, addr, &inner) != MPI_SUCCESS)
        return 0;
    MPI_Aint lb, ext;
    int size = 0, ninner, nai, ndi, cinner;
    rc = PMPI_Type_get_envelope(inner, &ninner, &nai, &ndi, &cinner) == MPI_SUCCESS &&
         PMPI_Type_get_extent(inner, &lb, &ext) == MPI_SUCCESS && PMPI_Type_size(inner, &size) == MPI_SUCCESS &&
         lb == 0 && ext == size && bytes_layout(inner);
    if (cinner != MPI_COMBINER_NAMED)
        PMPI_Type_free(&inner);
    return rc;
}

/* The plan of a receive of another datatype (rplan "other"). */
static int rplan_other(void *buf, int count, MPI_Datatype type, MPI_Comm comm, zmpi_p2p_rplan *pl, int *rc)
{
    pl->other = 1;
    pl->rcount = count;
    pl->rtype = type;
    if (bytes_layout(type)) {
        pl->rbuf = buf;
        pl->pn = count;
        pl->pt = type;
        return 1;
    }
    int psize = 0;
    if ((*rc = PMPI_Pack_size(count, type, comm, &psize)) != MPI_SUCCESS)
        return -1;
    if ((*rc = zmpi_alloc(psize > 0 ? (size_t)psize : 1, &pl->stage)) != MPI_SUCCESS)
        return -1;
    pl->rbuf = pl->stage;
    pl->pn = psize;
    pl->pt = MPI_BYTE;
    return 1;
}

/* 1 if a receive of (count, type) holds at most ZMPI_P2P_RAW_MAX bytes. */
static int small_recv(int count, MPI_Datatype type)
{
    int tsz = 0;
    return PMPI_Type_size(type, &tsz) == MPI_SUCCESS && tsz >= 0 &&
           (size_t)count * (size_t)tsz <= ZMPI_P2P_RAW_MAX;
}

int zmpi_p2p_rplan_make(void *buf, int count, MPI_Datatype type, MPI_Comm comm, zmpi_p2p_rplan *pl, int *rc)
{
    memset(pl, 0, sizeof *pl);
    *rc = MPI_SUCCESS;
    if (count < 0)
        return 0; /* MPI reports the error */
    if (small_recv(count, type))
        return 0; /* no stream can reach it (ZMPI_P2P_RAW_MAX) */
    if (zmpi_p2p_is_float(type, &pl->es)) {
        pl->rbuf = buf;
        pl->rcount = count;
        pl->rtype = type;
        zmpi_p2p_recv_shape(count, pl->es, &pl->pn, &pl->pt);
        return 1;
    }
    zmpi_dtinfo_get(type, &pl->d);
    if (!pl->d) {
        int how = rplan_other(buf, count, type, comm, pl, rc);
        if (how < 0)
            zmpi_p2p_rplan_free(pl);
        return how;
    }
    size_t total = (size_t)count * pl->d->n;
    if (total > (size_t)INT_MAX) { /* beyond one int count: plain (see "Derived datatypes") */
        zmpi_dtinfo_release(pl->d);
        pl->d = NULL;
        return 0;
    }
    pl->es = pl->d->es;
    pl->rcount = (int)total;
    pl->rtype = pl->d->basic;
    zmpi_p2p_recv_shape(pl->rcount, pl->es, &pl->pn, &pl->pt);
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

/* 1 if data[0..n) is a whole zmpi message: a stream that a zmpi send made
 * (flag ZMPI_SF_MESSAGE), header valid, size exactly n. A stream without
 * the flag is data the program sends (made with the codec API, say). */
int zmpi_p2p_is_message(const void *data, size_t n, zmpi_stream_info *info)
{
    static const char magic[4] = {'Z', 'M', 'P', 'I'};
    if (n <= ZMPI_P2P_RAW_MAX || memcmp(data, magic, sizeof magic))
        return 0; /* a message of at most ZMPI_P2P_RAW_MAX bytes is raw */
    /* exactly n bytes, or padded to the shortest stream on the wire */
    return zmpi_stream_info_get(data, n, info) == ZMPI_OK &&
           (info->stream_size == n || (n == ZMPI_P2P_RAW_MAX + 1 && info->stream_size < n)) &&
           (info->flags & ZMPI_SF_MESSAGE);
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
static int decode(const void *data, size_t nbytes, void *buf, size_t cap, const zmpi_stream_info *info,
                  zmpi_comm_state *s, MPI_Comm comm, MPI_Status *st, uint64_t posted)
{
    int rc = MPI_SUCCESS;
    void *copy = NULL;
    zmpi_chan *c = NULL;
    zmpi_ctx *ctx = zmpi_ctx_create();
    if (!ctx)
        return MPI_ERR_NO_MEM;
    nbytes = (size_t)info->stream_size; /* without the padding of a short stream */
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
    PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)(info->count * es));
    if (s && info->codec != ZMPI_CODEC_STORED) /* a receive that moved compressed data */
        atomic_fetch_add(&s->compressed, 1);
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
    int stream = zmpi_p2p_is_message(data, nbytes, &info);
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
    if (info.dtype == ZMPI_BYTE) { /* another datatype's bytes, framed: they go as they are */
        if (info.count > cap)
            return zmpi_err(ZMPI_EK_TRUNCATE, "a message of %llu bytes reached a receive of %d %s",
                            (unsigned long long)info.count, count, type_name(dt));
        return decode(data, nbytes, buf, cap, &info, s, comm, st, posted);
    }
    if (info.dtype != dt)
        return zmpi_err(ZMPI_EK_TYPE, "a compressed message of %llu %s reached a receive of %s",
                        (unsigned long long)info.count, type_name(info.dtype), type_name(dt));
    if (info.count > (uint64_t)count)
        return zmpi_err(ZMPI_EK_TRUNCATE, "a compressed message of %llu %s reached a receive of %d",
                        (unsigned long long)info.count, type_name(dt), count);
    return decode(data, nbytes, buf, cap, &info, s, comm, st, posted);
}

int zmpi_p2p_put_bytes(const void *src, size_t n, void *buf, int count, MPI_Datatype type, MPI_Comm comm)
{
    int tsz = 0, pos = 0, rc;
    MPI_Aint lb, ext;
    if ((rc = PMPI_Type_size(type, &tsz)) != MPI_SUCCESS || (rc = PMPI_Type_get_extent(type, &lb, &ext)))
        return rc;
    size_t whole = tsz > 0 ? n / (size_t)tsz : 0, part = tsz > 0 ? n % (size_t)tsz : n;
    if (n > (size_t)INT_MAX || whole > (size_t)count || (whole == (size_t)count && part))
        return zmpi_err(ZMPI_EK_TRUNCATE, "a message of %zu bytes reached a receive of %d elements of %d bytes", n,
                        count, tsz);
    if (whole && (rc = PMPI_Unpack(src, (int)(n - part), &pos, buf, (int)whole, type, comm)) != MPI_SUCCESS)
        return rc;
    if (!part)
        return MPI_SUCCESS;
    /* the partial instance: its packed image, the message's bytes in front */
    unsigned char *one = malloc((size_t)tsz), *at = (unsigned char *)buf + (MPI_Aint)whole * ext;
    if (!one)
        return MPI_ERR_NO_MEM;
    int p1 = 0, p2 = 0;
    rc = PMPI_Pack(at, 1, type, one, tsz, &p1, comm);
    if (rc == MPI_SUCCESS) {
        memcpy(one, (const unsigned char *)src + (n - part), part);
        rc = PMPI_Unpack(one, tsz, &p2, at, 1, type, comm);
    }
    free(one);
    return rc;
}

/* The message (data, nbytes) of a receive of another datatype (rplan
 * "other"): a zmpi stream is decoded into the bytes the sender's data had,
 * raw bytes go as they are; both into (buf, count, type). *st counts bytes. */
static int deliver_other(const zmpi_p2p_rplan *pl, const void *data, size_t nbytes, void *buf, int count,
                         MPI_Datatype type, MPI_Comm comm, MPI_Status *st)
{
    zmpi_stream_info info;
    zmpi_comm_state *s = zmpi_state(comm);
    int rc = MPI_SUCCESS, stream = zmpi_p2p_is_message(data, nbytes, &info);
    if (s && s->chans && (!stream || zmpi_codec_needs_channel(info.codec) != 1))
        channel_drop(s, st->MPI_SOURCE, st->MPI_TAG);
    if (!stream) {
        if (data == buf)
            return MPI_SUCCESS; /* received in place by MPI, status and all */
        rc = zmpi_p2p_put_bytes(data, nbytes, buf, count, type, comm);
        if (rc == MPI_SUCCESS)
            PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)nbytes);
        return rc;
    }
    size_t es = zmpi_dtype_size(info.dtype), raw = (size_t)info.count * es;
    int tsz = 0;
    PMPI_Type_size(type, &tsz);
    if (raw > (size_t)count * (size_t)(tsz > 0 ? tsz : 0))
        return zmpi_err(ZMPI_EK_TRUNCATE,
                        "a compressed message of %llu %s reached a receive of %d elements of %d bytes",
                        (unsigned long long)info.count, type_name(info.dtype), count, tsz);
    if (!pl->stage && data == buf) /* a bytes layout: decoded straight into buf */
        return decode(data, nbytes, buf, raw, &info, s, comm, st, UINT64_MAX);
    void *tmp = NULL;
    if ((rc = zmpi_alloc(raw ? raw : 1, &tmp)) != MPI_SUCCESS)
        return rc;
    rc = decode(data, nbytes, tmp, raw, &info, s, comm, st, UINT64_MAX);
    if (rc == MPI_SUCCESS)
        rc = zmpi_p2p_put_bytes(tmp, raw, buf, count, type, comm);
    free(tmp);
    return rc;
}

int zmpi_p2p_rplan_deliver(const zmpi_p2p_rplan *pl, const void *data, size_t nbytes, void *buf, int count,
                           MPI_Datatype type, MPI_Comm comm, MPI_Status *st, uint64_t posted)
{
    int rc;
    if (pl->other) {
        rc = deliver_other(pl, data, nbytes, buf, count, type, comm, st);
    } else {
        rc = zmpi_p2p_deliver(data, nbytes, pl->rbuf, pl->rcount, pl->rtype, comm, st, posted);
        if (rc == MPI_SUCCESS && pl->stage) /* the elements received, from the staging buffer */
            zmpi_dtinfo_unpack(pl->d, pl->stage, zmpi_p2p_status_bytes(st) / pl->es, buf);
    }
    if (rc)
        PMPI_Status_set_elements(st, MPI_BYTE, 0);
    return rc;
}

/* ---- sending ---- */

/* Frames count elements as an uncompressed ("stored") stream in a new
 * buffer *owned of *len bytes. */
static int frame_stored(const void *buf, size_t count, zmpi_dtype dt, void **owned, int *len)
{
    zmpi_ctx *st = zmpi_ctx_create();
    int rc = st && zmpi_ctx_set_codec(st, ZMPI_CODEC_STORED) == ZMPI_OK &&
                     zmpi_ctx_set_param(st, ZMPI_P_MESSAGE, 1) == 1
                 ? MPI_SUCCESS
                 : MPI_ERR_NO_MEM;
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
static int send_body(zmpi_call *c, int on, const void *buf, int count, size_t es, int peer, int tag,
                     const void **out, int *len, void **owned);

/* A raw derived-type message of at most this many bytes goes with the
 * user's datatype; a larger one from zmpi's packed copy. MPICH 4.0 sends a
 * strided type of up to 8 KiB as fast as its packed copy (a 4 KiB face of
 * single floats: 4.1 us an exchange with the user's type, 5.6 us packed, 1.4 us
 * plain MPI), but beyond its eager size far slower than a contiguous message
 * (16 KiB: 47 us with the type, 20 us packed, 85 us plain MPI with the type at
 * both ends; bench/preload/halo). */
#define P2P_TYPED_MAX ((size_t)8192)

/* send_prepare for a type that is not MPI_FLOAT / MPI_DOUBLE: an eligible
 * derived type is sent as count*n elements of its basic type - compressed
 * from a packed copy, or raw: then, up to P2P_TYPED_MAX bytes, with the
 * user's own datatype, which puts the same bytes on the wire without a copy
 * (MPI packs it), unless its first bytes are a stream's magic (then packed
 * and checked as any raw message); others go plain. */
static int send_derived(const void *buf, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                        const void **out, int *len, void **owned)
{
    static const char magic[4] = {'Z', 'M', 'P', 'I'};
    zmpi_dtinfo *d;
    zmpi_call c;
    void *packed = NULL;
    int rc = MPI_SUCCESS, on = ZMPI_CALL_PLAIN;
    zmpi_dtinfo_get(type, &d);
    size_t total = d ? (size_t)count * d->n : 0;
    if (!d) {
        /* another datatype goes as it is - unless its bytes read as a zmpi
         * message, which would be decoded: then framed as bytes */
        int tsz = 0;
        zmpi_stream_info info;
        rc = zmpi_p2p_count(comm, type, 0);
        size_t n = rc == MPI_SUCCESS && count > 0 && bytes_layout(type) && PMPI_Type_size(type, &tsz) == MPI_SUCCESS
                       ? (size_t)count * (size_t)tsz
                       : 0;
        if (n && n <= (size_t)INT_MAX / 2 && zmpi_p2p_is_message(buf, n, &info)) {
            rc = frame_stored(buf, n, ZMPI_BYTE, owned, len);
            if (rc == MPI_SUCCESS)
                *out = *owned;
        }
        goto fn_exit;
    }
    if (total > (size_t)INT_MAX / d->es)
        goto fn_exit; /* raw beyond INT_MAX bytes: plain (uncounted), as for MPI_FLOAT */
    if (d->dense || total == 0) {
        rc = send_prepare(buf, (int)total, d->basic, peer, tag, comm, out, len, owned);
        goto fn_exit;
    }
    on = zmpi_call_begin_p2p(&c, comm, d->basic, total * d->es, peer); /* buf may be MPI_BOTTOM */
    if (on == ZMPI_CALL_ERR) {
        rc = c.err;
        goto fn_exit;
    }
    if (on == ZMPI_CALL_PLAIN && total * d->es <= P2P_TYPED_MAX &&
        (total * d->es <= ZMPI_P2P_RAW_MAX || memcmp(zmpi_at(buf, d->runs[0].disp), magic, sizeof magic)))
        goto fn_exit; /* raw, and no receiver reads it as a stream: the user's call */
    ZMPI_CHECK(zmpi_alloc(total * d->es, &packed));
    zmpi_dtinfo_pack(d, buf, (size_t)count, packed);
    rc = send_body(&c, on, packed, (int)total, d->es, peer, tag, out, len, owned);
    on = ZMPI_CALL_PLAIN; /* ended by send_body */
    if (rc)
        goto fn_fail;
    if (*out == packed) { /* sent raw from the packed copy */
        *owned = packed;
        packed = NULL;
    }
fn_exit:
    if (on == ZMPI_CALL_ON)
        zmpi_call_end(&c);
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
    zmpi_ctx_set_param(c->ctx, ZMPI_P_MESSAGE, 1);
    if (c->chan && !ch) /* no memory for a channel: the intra-step variant */
        zmpi_ctx_set_codec(c->ctx, zmpi_codec_intra(zmpi_ctx_get_codec(c->ctx)));
    if (raw >= c->min_bytes && raw > ZMPI_P2P_RAW_MAX && (*rc = zmpi_alloc(cap, owned)) == MPI_SUCCESS) {
        const uint64_t t0 = zmpi_clock_ns();
        l = ch ? zmpi_chan_compress(c->st, ch, c->ctx, buf, (size_t)count, c->dt, *owned, cap)
               : zmpi_compress(c->ctx, buf, (size_t)count, c->dt, *owned, cap);
        atomic_fetch_add(&c->st->ns_compress, zmpi_clock_ns() - t0);
        if (l < 0)
            atomic_fetch_add(&c->st->codec_errors, 1);
    }
    if (l > 0 && (size_t)l <= ZMPI_P2P_RAW_MAX && ZMPI_P2P_RAW_MAX + 1 < raw && cap > ZMPI_P2P_RAW_MAX) {
        memset((char *)*owned + l, 0, ZMPI_P2P_RAW_MAX + 1 - (size_t)l); /* the shortest stream on the wire */
        l = (ptrdiff_t)ZMPI_P2P_RAW_MAX + 1;
    }
    if (l > (ptrdiff_t)ZMPI_P2P_RAW_MAX && (size_t)l < raw) { /* a stream only where it is smaller than the data */
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
    int on = zmpi_call_begin_p2p(&c, comm, type, raw, peer);
    if (on == ZMPI_CALL_ERR)
        return c.err;
    return send_body(&c, on, buf, count, es, peer, tag, out, len, owned);
}

/* The rest of send_prepare for count elements of es bytes at buf, the call
 * begun (on, c: zmpi_call_begin_p2p; ended here): a stream where it is
 * smaller, else the raw data - framed if it reads as a stream. */
static int send_body(zmpi_call *c, int on, const void *buf, int count, size_t es, int peer, int tag,
                     const void **out, int *len, void **owned)
{
    int rc = MPI_SUCCESS;
    size_t raw = (size_t)count * es;
    zmpi_stream_info info;
    size_t l = on == ZMPI_CALL_ON ? compress_msg(c, buf, count, peer, tag, owned, &rc) : 0;
    if (l || rc)
        goto fn_exit;
    *out = buf;
    *len = (int)raw;
    if (zmpi_p2p_is_message(buf, raw, &info)) { /* raw data that reads as a stream: framed, so no receiver decodes it */
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
        zmpi_call_end(c);
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
    if (!out || !owned) { /* plain, or raw from the user's buffer: nothing to do at completion */
        *raised = 1;
        return out ? pisend(out, len, MPI_BYTE, dest, tag, comm, request)
                   : pisend(buf, count, datatype, dest, tag, comm, request);
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

/* Checks a planned receive before it is posted: the settings (a malformed
 * one is an error on every call), the arguments of a float/double one (MPI
 * checks the others'). */
static int recv_check(const zmpi_p2p_rplan *pl, MPI_Comm comm)
{
    if (!pl->other && pl->rcount > 0 && !pl->rbuf)
        return MPI_ERR_BUFFER;
    return zmpi_p2p_count_recv(comm, pl->rtype);
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
    int how = zmpi_p2p_rplan_make(buf, count, datatype, comm, &pl, &rc);
    if (how == 0) {
        rc = zmpi_p2p_count_recv(comm, datatype);
        return rc ? zmpi_raise(comm, rc) : PMPI_Recv(buf, count, datatype, source, tag, comm, status);
    }
    if (how < 0)
        return zmpi_raise(comm, rc);
    rc = recv_check(&pl, comm);
    if (rc) {
        zmpi_p2p_rplan_free(&pl);
        return zmpi_raise(comm, rc);
    }
    rc = PMPI_Recv(pl.rbuf, pl.pn, pl.pt, source, tag, comm, &st);
    if (rc) {
        zmpi_p2p_rplan_free(&pl);
        if (status != MPI_STATUS_IGNORE)
            *status = st;
        return rc; /* MPI raised it */
    }
    rc = zmpi_p2p_rplan_deliver(&pl, pl.rbuf, zmpi_p2p_status_bytes(&st), buf, count, datatype, comm, &st,
                                UINT64_MAX);
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
    int how = zmpi_p2p_rplan_make(buf, count, datatype, comm, &pl, &rc);
    if (how < 0)
        return rc;
    rc = how ? recv_check(&pl, comm) : zmpi_p2p_count_recv(comm, datatype);
    if (!rc && !how && !zmpi_p2p_has_kept(comm, source, tag)) { /* MPI's own receive, no request of zmpi's */
        *raised = 1;
        return PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
    }
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
        rc = PMPI_Irecv(pl.rbuf, pl.pn, pl.pt, source, tag, comm, &op->req);
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

/* ---- persistent operations ----
 *
 * ZMPI_Send_init (and Ssend, Rsend, Bsend) of a datatype zmpi compresses,
 * and ZMPI_Recv_init of any datatype, make a persistent operation of zmpi's
 * (requests.c): the user's handle is a persistent request of zmpi's that
 * MPI never starts; each ZMPI_Start reads the send buffer as it is then,
 * compresses it and posts the bytes (or posts the receive, which the
 * completion decodes, after a message a probe kept), exactly as
 * ZMPI_Isend / ZMPI_Irecv do. A channel of an inter-step codec (comm,
 * peer, tag) is what a persistent exchange repeats: those codecs code each
 * start against the previous one. Derived datatypes are duplicated at init
 * (the program may free its handle). Other sends are MPI's persistent
 * sends: plain data, which zmpi's receives take as it is. */

typedef int (*isend_kind_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);
typedef int (*init_kind_fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm, MPI_Request *);

static isend_kind_fn isend_of(int kind)
{
    return kind == ZMPI_P2P_SSEND ? PMPI_Issend : kind == ZMPI_P2P_RSEND ? PMPI_Irsend
         : kind == ZMPI_P2P_BSEND ? PMPI_Ibsend : PMPI_Isend;
}

static init_kind_fn init_of(int kind)
{
    return kind == ZMPI_P2P_SSEND ? PMPI_Ssend_init : kind == ZMPI_P2P_RSEND ? PMPI_Rsend_init
         : kind == ZMPI_P2P_BSEND ? PMPI_Bsend_init : PMPI_Send_init;
}

/* The datatype a persistent operation keeps: a named one as it is, a
 * derived one duplicated (*own, freed with the operation). */
static int keep_type(MPI_Datatype type, MPI_Datatype *kept, MPI_Datatype *own)
{
    int ni, na, nd, comb, rc;
    *kept = type;
    *own = MPI_DATATYPE_NULL;
    if ((rc = PMPI_Type_get_envelope(type, &ni, &na, &nd, &comb)) != MPI_SUCCESS)
        return rc;
    if (comb == MPI_COMBINER_NAMED)
        return MPI_SUCCESS;
    if ((rc = PMPI_Type_dup(type, own)) != MPI_SUCCESS)
        return rc;
    *kept = *own;
    return MPI_SUCCESS;
}

static int send_init(int kind, const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                     MPI_Request *request)
{
    zmpi_p2p_op *op = NULL;
    int flag = 0, rc;
    zmpi_p2p_reap();
    if (!request)
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Send_init: request is NULL"));
    if (dest == MPI_PROC_NULL || comm == MPI_COMM_NULL || count < 0 ||
        ZMPI_Type_compressible(datatype, &flag) != MPI_SUCCESS || !flag)
        return init_of(kind)(buf, count, datatype, dest, tag, comm, request);
    zmpi_comm_state *s = zmpi_state(comm);
    if (s && (rc = zmpi_state_error(s)) != MPI_SUCCESS)
        return zmpi_raise(comm, rc);
    if ((rc = zmpi_p2p_op_new_persistent(comm, 0, &op)) != MPI_SUCCESS)
        return zmpi_raise(comm, rc);
    if ((rc = keep_type(datatype, &op->stype, &op->own_type)) != MPI_SUCCESS) {
        zmpi_p2p_op_discard(op);
        return rc; /* raised by MPI */
    }
    op->kind = kind;
    op->sbuf = buf;
    op->scount = count;
    op->dest = dest;
    op->tag = tag;
    zmpi_p2p_register(op);
    *request = op->greq;
    return MPI_SUCCESS;
}

int ZMPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request)
{
    return send_init(ZMPI_P2P_SEND, buf, count, datatype, dest, tag, comm, request);
}

int ZMPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request *request)
{
    return send_init(ZMPI_P2P_SSEND, buf, count, datatype, dest, tag, comm, request);
}

int ZMPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request *request)
{
    return send_init(ZMPI_P2P_RSEND, buf, count, datatype, dest, tag, comm, request);
}

int ZMPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                    MPI_Request *request)
{
    return send_init(ZMPI_P2P_BSEND, buf, count, datatype, dest, tag, comm, request);
}

int ZMPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                   MPI_Request *request)
{
    zmpi_p2p_op *op = NULL;
    int rc, how;
    zmpi_p2p_reap();
    if (!request)
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Recv_init: request is NULL"));
    if (source == MPI_PROC_NULL || comm == MPI_COMM_NULL || count < 0)
        return PMPI_Recv_init(buf, count, datatype, source, tag, comm, request);
    zmpi_comm_state *s = zmpi_state(comm);
    if (s && (rc = zmpi_state_error(s)) != MPI_SUCCESS)
        return zmpi_raise(comm, rc);
    if ((rc = zmpi_p2p_op_new_persistent(comm, 1, &op)) != MPI_SUCCESS)
        return zmpi_raise(comm, rc);
    if ((rc = keep_type(datatype, &op->type, &op->own_type)) != MPI_SUCCESS) {
        zmpi_p2p_op_discard(op);
        return rc; /* raised by MPI */
    }
    how = zmpi_p2p_rplan_make(buf, count, op->type, comm, &op->plan, &rc);
    if (how < 0) { /* no memory */
        zmpi_p2p_op_discard(op);
        return zmpi_raise(comm, rc);
    }
    /* MPI's own receive at each start (at most 8 KiB, or a derived type
     * beyond INT_MAX elements), after the messages a zmpi probe kept */
    op->decode = how > 0;
    op->buf = buf;
    op->count = count;
    op->source = source;
    op->tag = tag;
    zmpi_p2p_register(op);
    *request = op->greq;
    return MPI_SUCCESS;
}

/* Starts persistent operation op: MPI_SUCCESS, or an error not raised
 * (*raised = 1 when MPI raised it). */
static int start_op(zmpi_p2p_op *op, int *raised)
{
    MPI_Status st;
    int rc = MPI_SUCCESS, kept_rc;
    *raised = 0;
    if (op->active)
        return zmpi_err(ZMPI_EK_REQUEST, "MPI_Start: the request is active (started and not yet completed)");
    memset(&op->status, 0, sizeof op->status);
    op->err = MPI_SUCCESS;
    op->finished = 0;
    op->posted = atomic_fetch_add(&op->proc->next_posted, 1);
    if (op->is_recv) {
        op->active = 1;
        if (zmpi_p2p_take_kept(op->comm, op->source, op->tag, op->buf, op->count, op->type, &kept_rc, &st)) {
            zmpi_p2p_op_done(op, &st, kept_rc); /* complete already; its error comes at completion */
            return MPI_SUCCESS;
        }
        if ((rc = op->decode ? recv_check(&op->plan, op->comm) : zmpi_p2p_count_recv(op->comm, op->type))) {
            op->active = 0;
            return rc;
        }
        rc = op->decode ? PMPI_Irecv(op->plan.rbuf, op->plan.pn, op->plan.pt, op->source, op->tag, op->comm, &op->req)
                        : PMPI_Irecv(op->buf, op->count, op->type, op->source, op->tag, op->comm, &op->req);
    } else {
        const void *out;
        void *owned;
        int len = 0;
        rc = send_prepare(op->sbuf, op->scount, op->stype, op->dest, op->tag, op->comm, &out, &len, &owned);
        if (rc)
            return rc;
        op->stream = owned;
        op->active = 1;
        rc = out ? isend_of(op->kind)(out, len, MPI_BYTE, op->dest, op->tag, op->comm, &op->req)
                 : isend_of(op->kind)(op->sbuf, op->scount, op->stype, op->dest, op->tag, op->comm, &op->req);
    }
    if (rc) {
        op->active = 0;
        free(op->stream);
        op->stream = NULL;
        *raised = 1;
    }
    return rc;
}

int ZMPI_Startall(int count, MPI_Request requests[])
{
    zmpi_p2p_reap();
    if (count < 0 || (count > 0 && !requests))
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "ZMPI_Startall: invalid arguments"));
    for (int i = 0; i < count; i++) {
        zmpi_p2p_op *op = zmpi_p2p_lookup(requests[i]);
        int raised = 0, rc;
        if (!op || !op->persistent)
            rc = PMPI_Start(&requests[i]), raised = 1;
        else
            rc = start_op(op, &raised);
        if (rc)
            return raised ? rc : zmpi_raise(op ? op->comm : MPI_COMM_WORLD, rc);
    }
    return MPI_SUCCESS;
}

int ZMPI_Start(MPI_Request *request)
{
    if (!request)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Start: request is NULL"));
    return ZMPI_Startall(1, request);
}

/* ---- MPI_Isendrecv, MPI_Isendrecv_replace ----
 *
 * One request of zmpi's with two underlying ones (requests.c: a pair): the
 * receive through zmpi's path (a kept message first, any datatype, decoded
 * at completion) and the send (compressed as ZMPI_Isend's); complete when
 * both are. The replace form sends from a copy of the buffer, taken before
 * the receive is posted into it. */

/* Isendrecv without raising: *raised = 1 when MPI raised the error.
 * send_copy: a buffer the operation takes over (freed with it), or NULL. */
static int isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                     void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                     void *send_copy, MPI_Request *request, int *raised)
{
    zmpi_p2p_op *op = NULL;
    zmpi_p2p_rplan pl;
    MPI_Status st;
    const void *out;
    void *owned = NULL;
    int rc, kept_rc, how = 0, len = 0;
    memset(&pl, 0, sizeof pl);
    *raised = 0;
    rc = request ? MPI_SUCCESS : zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Isendrecv: request is NULL");
    if (rc == MPI_SUCCESS && source != MPI_PROC_NULL && comm != MPI_COMM_NULL &&
        (how = zmpi_p2p_rplan_make(recvbuf, recvcount, recvtype, comm, &pl, &rc)) < 0)
        how = 0;
    if (rc == MPI_SUCCESS && how)
        rc = recv_check(&pl, comm);
    else if (rc == MPI_SUCCESS && source != MPI_PROC_NULL && comm != MPI_COMM_NULL)
        rc = zmpi_p2p_count_recv(comm, recvtype); /* MPI's own receive, counted */
    if (rc == MPI_SUCCESS)
        rc = send_prepare(sendbuf, sendcount, sendtype, dest, sendtag, comm, &out, &len, &owned);
    if (rc == MPI_SUCCESS)
        rc = zmpi_p2p_op_new(comm, 1, &op);
    if (rc) {
        zmpi_p2p_rplan_free(&pl);
        free(owned);
        free(send_copy);
        return rc;
    }
    op->buf = recvbuf;
    op->count = recvcount;
    op->type = recvtype;
    op->source = source;
    op->tag = recvtag;
    op->plan = pl;
    op->decode = how > 0;
    /* the send's bytes live with the operation: the stream, or the copy */
    if (owned) {
        op->stream = owned;
        free(send_copy);
    } else {
        op->stream = send_copy;
    }
    if (source != MPI_PROC_NULL && comm != MPI_COMM_NULL &&
        zmpi_p2p_take_kept(comm, source, recvtag, recvbuf, recvcount, recvtype, &kept_rc, &st)) {
        op->status = st;
        op->err = kept_rc;
    } else if (how > 0) {
        rc = PMPI_Irecv(pl.rbuf, pl.pn, pl.pt, source, recvtag, comm, &op->req);
    } else {
        rc = PMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &op->req);
    }
    if (rc == MPI_SUCCESS)
        rc = out ? PMPI_Isend(out, len, MPI_BYTE, dest, sendtag, comm, &op->req2)
                 : PMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &op->req2);
    if (rc) { /* raised by MPI; what was posted is taken back */
        if (op->req != MPI_REQUEST_NULL) {
            PMPI_Cancel(&op->req);
            PMPI_Wait(&op->req, MPI_STATUS_IGNORE);
        }
        zmpi_p2p_op_discard(op);
        *raised = 1;
        return rc;
    }
    if (op->req == MPI_REQUEST_NULL && op->req2 == MPI_REQUEST_NULL)
        zmpi_p2p_op_done(op, &op->status, op->err);
    zmpi_p2p_register(op);
    *request = op->greq;
    return MPI_SUCCESS;
}

int ZMPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                   void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                   MPI_Request *request)
{
    int raised;
    zmpi_p2p_reap();
    int rc = isendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source, recvtag,
                       comm, NULL, request, &raised);
    return raised ? rc : zmpi_raise(comm, rc);
}

int ZMPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                           int recvtag, MPI_Comm comm, MPI_Request *request)
{
    int psize = 0, pos = 0, rc, raised = 0;
    void *copy = NULL;
    size_t es;
    zmpi_dtinfo *d = NULL;
    zmpi_p2p_reap();
    if (count < 0)
        return zmpi_raise(comm, MPI_ERR_COUNT);
    /* the data to send, copied before the receive is posted into buf: the
     * elements of a floating-point type (zmpi compresses them), the packed
     * bytes of another */
    if (zmpi_p2p_is_float(datatype, &es)) {
        if ((rc = zmpi_alloc(count > 0 ? (size_t)count * es : 1, &copy)) != MPI_SUCCESS)
            return zmpi_raise(comm, rc);
        if (count > 0)
            memcpy(copy, buf, (size_t)count * es);
        rc = isendrecv(copy, count, datatype, dest, sendtag, buf, count, datatype, source, recvtag, comm, copy,
                       request, &raised);
        return raised ? rc : zmpi_raise(comm, rc);
    }
    zmpi_dtinfo_get(datatype, &d);
    if (d && (size_t)count * d->n <= (size_t)INT_MAX) { /* a derived type of one float type: its elements */
        size_t n = (size_t)count * d->n;
        MPI_Datatype basic = d->basic;
        rc = zmpi_alloc(n ? n * d->es : 1, &copy);
        if (rc == MPI_SUCCESS)
            zmpi_dtinfo_pack(d, buf, (size_t)count, copy);
        zmpi_dtinfo_release(d);
        if (rc)
            return zmpi_raise(comm, rc);
        rc = isendrecv(copy, (int)n, basic, dest, sendtag, buf, count, datatype, source, recvtag, comm, copy,
                       request, &raised);
        return raised ? rc : zmpi_raise(comm, rc);
    }
    zmpi_dtinfo_release(d);
    if ((rc = PMPI_Pack_size(count, datatype, comm, &psize)) != MPI_SUCCESS)
        return rc;
    if ((rc = zmpi_alloc(psize > 0 ? (size_t)psize : 1, &copy)) != MPI_SUCCESS)
        return zmpi_raise(comm, rc);
    if ((rc = PMPI_Pack(buf, count, datatype, copy, psize, &pos, comm)) != MPI_SUCCESS) {
        free(copy);
        return rc;
    }
    rc = isendrecv(copy, pos, MPI_PACKED, dest, sendtag, buf, count, datatype, source, recvtag, comm, copy, request,
                   &raised);
    return raised ? rc : zmpi_raise(comm, rc);
}
