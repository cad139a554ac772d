/* Inter-step channels: the previous message of one stream, per end. */
#include <stdlib.h>

#include "channel.h"

zmpi_channel *zmpi_channel_create(size_t max_bytes)
{
    zmpi_channel *ch = calloc(1, sizeof *ch);
    if (!ch)
        return NULL;
    ch->max_bytes = max_bytes ? max_bytes : SIZE_MAX;
    return ch;
}

void zmpi_channel_free(zmpi_channel *ch)
{
    if (!ch)
        return;
    free(ch->buf);
    free(ch);
}

void zmpi_channel_reset(zmpi_channel *ch)
{
    if (ch)
        ch->valid = 0;
}

size_t zmpi_channel_memory(const zmpi_channel *ch)
{
    return ch ? ch->cap : 0;
}

int zc_channel_reserve(zmpi_channel *ch, size_t bytes)
{
    if (bytes <= ch->cap)
        return ZMPI_OK;
    unsigned char *b = realloc(ch->buf, bytes);
    if (!b)
        return ZMPI_ERR_NOMEM;
    ch->buf = b;
    ch->cap = bytes;
    return ZMPI_OK;
}
