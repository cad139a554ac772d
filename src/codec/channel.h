/* Inter-step channel state (see zmpi_channel in zmpi/codec.h). */
#ifndef ZMPI_CODEC_CHANNEL_H
#define ZMPI_CODEC_CHANNEL_H
#include "zmpi/codec.h"

struct zmpi_channel {
    size_t max_bytes;  /* history memory bound */
    unsigned char *buf;
    size_t cap;        /* bytes allocated in buf */
    int valid;         /* buf holds the history of message seq */
    zmpi_codec codec;
    zmpi_dtype dtype;
    uint32_t param;
    uint64_t count;
    uint64_t seq;      /* sequence number of the last message sent/decoded */
};

/* Makes room for bytes of history; returns ZMPI_OK or ZMPI_ERR_NOMEM. */
int zc_channel_reserve(zmpi_channel *ch, size_t bytes);
#endif
