/*
 * Inter-step channels of a communicator: the history that the inter-step
 * codecs (xorlzc-inter, trunc-inter, dp2sp-inter) code each message
 * against - the previous message of the same channel.
 *
 * A channel is (peer, tag, direction) on one communicator: point-to-point
 * messages use the user's tag, Alltoall(v) blocks ZMPI_CHAN_TAG_ALLTOALL
 * (one channel per peer). Each end keeps its own zmpi_channel; the codec
 * numbers the messages of a channel and marks the ones that restart it
 * (ZMPI_SF_RESET), so both ends stay in lock-step or the receiver sees that
 * they are not:
 *
 *   sender                                  receiver
 *   history fits ZMPI_CHANNEL_MEM?          inter-step stream: next in
 *     yes: inter-step stream (seq + 1,        sequence (or a reset)? decode
 *          or a reset), history kept          against the history, keep it
 *     no:  intra-step stream, history         out of step: the caller first
 *          dropped                            completes earlier receives of
 *   the message travels as anything else      the channel, then an error
 *   (raw, below ZMPI_MIN_BYTES, a codec     anything else on the channel:
 *   error): history dropped                   history dropped
 *
 * so "dropped" on one side matches "dropped" on the other, and the next
 * message restarts the channel. Memory: the sending side keeps at most
 * cfg.channel_mem bytes of history per communicator (a message whose
 * history would not fit is coded by the intra-step variant: xorlzc, trunc,
 * dp2sp); a receiver keeps what its senders keep. Both are reported in
 * ZMPI_Stats.channel_bytes.
 *
 * Locking: the state's chan_lock guards the list; each channel's mutex is
 * held while one of its messages is coded (two threads sending on one
 * channel are serialised, in the order MPI will match them only if the
 * program orders them - as it must for any inter-step data).
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

zmpi_codec zmpi_codec_intra(zmpi_codec codec)
{
    switch (codec) {
    case ZMPI_CODEC_XORLZC_INTER: return ZMPI_CODEC_XORLZC;
    case ZMPI_CODEC_TRUNC_INTER: return ZMPI_CODEC_TRUNC;
    case ZMPI_CODEC_DP2SP_INTER: return ZMPI_CODEC_DP2SP;
    default: return codec;
    }
}

zmpi_chan *zmpi_chan_acquire(zmpi_comm_state *st, int peer, int tag, int dir)
{
    zmpi_chan *c;
    pthread_mutex_lock(&st->chan_lock);
    for (c = st->chans; c; c = c->next)
        if (c->peer == peer && c->tag == tag && c->dir == dir)
            break;
    if (!c && (c = calloc(1, sizeof *c)) != NULL) {
        if (pthread_mutex_init(&c->mu, NULL)) {
            free(c);
            c = NULL;
        } else {
            c->peer = peer;
            c->tag = tag;
            c->dir = dir;
            c->next = st->chans;
            st->chans = c;
        }
    }
    pthread_mutex_unlock(&st->chan_lock);
    if (c)
        pthread_mutex_lock(&c->mu);
    return c;
}

zmpi_chan *zmpi_chan_find(zmpi_comm_state *st, int peer, int tag, int dir)
{
    zmpi_chan *c = NULL;
    if (!st->chans) /* no inter-step message ever: nothing to look for */
        return NULL;
    pthread_mutex_lock(&st->chan_lock);
    for (c = st->chans; c; c = c->next)
        if (c->peer == peer && c->tag == tag && c->dir == dir)
            break;
    pthread_mutex_unlock(&st->chan_lock);
    if (c)
        pthread_mutex_lock(&c->mu);
    return c;
}

void zmpi_chan_release(zmpi_chan *c)
{
    if (c)
        pthread_mutex_unlock(&c->mu);
}

/* Accounts for the channel's memory after its history changed. */
static void account(zmpi_comm_state *st, zmpi_chan *c)
{
    size_t now = c->ch ? zmpi_channel_memory(c->ch) : 0;
    if (now >= c->mem)
        atomic_fetch_add(&st->chan_bytes, now - c->mem);
    else
        atomic_fetch_sub(&st->chan_bytes, c->mem - now);
    if (c->dir == ZMPI_CHAN_SEND) {
        if (now >= c->mem)
            atomic_fetch_add(&st->chan_send_bytes, now - c->mem);
        else
            atomic_fetch_sub(&st->chan_send_bytes, c->mem - now);
    }
    c->mem = now;
}

void zmpi_chan_forget(zmpi_comm_state *st, zmpi_chan *c)
{
    if (!c || !c->ch)
        return;
    zmpi_channel_free(c->ch);
    c->ch = NULL;
    c->have_seq = 0;
    account(st, c);
}

ptrdiff_t zmpi_chan_compress(zmpi_comm_state *st, zmpi_chan *c, zmpi_ctx *ctx, const void *src, size_t count,
                             zmpi_dtype dt, void *dst, size_t cap)
{
    size_t need = count * zmpi_dtype_size(dt); /* the history is never larger than the data */
    size_t others = atomic_load(&st->chan_send_bytes) - c->mem;
    zmpi_codec codec = zmpi_ctx_get_codec(ctx);
    if (need > st->cfg.channel_mem || others > st->cfg.channel_mem - need || (!c->ch && !(c->ch = zmpi_channel_create(0)))) {
        /* no room for its history: the intra-step variant, the channel restarts later */
        zmpi_chan_forget(st, c);
        zmpi_ctx_set_codec(ctx, zmpi_codec_intra(codec));
        ptrdiff_t len = zmpi_compress(ctx, src, count, dt, dst, cap);
        zmpi_ctx_set_codec(ctx, codec);
        return len;
    }
    ptrdiff_t len = zmpi_compress_channel(ctx, c->ch, src, count, dt, dst, cap);
    if (len < 0)
        zmpi_chan_forget(st, c);
    else
        account(st, c);
    return len;
}

int zmpi_chan_in_step(const zmpi_chan *c, const zmpi_stream_info *info)
{
    return (info->flags & ZMPI_SF_RESET) || (c->ch && c->have_seq && info->seq == c->seq + 1);
}

ptrdiff_t zmpi_chan_decompress(zmpi_comm_state *st, zmpi_chan *c, zmpi_ctx *ctx, const void *src, size_t len,
                               void *dst, size_t cap)
{
    zmpi_stream_info info;
    if (zmpi_stream_info_get(src, len, &info) != ZMPI_OK)
        return ZMPI_ERR_CORRUPT;
    if (!c->ch && !(c->ch = zmpi_channel_create(0)))
        return ZMPI_ERR_NOMEM;
    ptrdiff_t r = zmpi_decompress_channel(ctx, c->ch, src, len, dst, cap);
    if (r < 0) {
        zmpi_chan_forget(st, c);
        return r;
    }
    c->seq = info.seq;
    c->have_seq = 1;
    account(st, c);
    return r;
}

void zmpi_chans_free(zmpi_comm_state *st)
{
    while (st->chans) {
        zmpi_chan *c = st->chans;
        st->chans = c->next;
        zmpi_channel_free(c->ch);
        pthread_mutex_destroy(&c->mu);
        free(c);
    }
    atomic_store(&st->chan_bytes, 0);
    atomic_store(&st->chan_send_bytes, 0);
}
