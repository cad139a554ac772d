/* The "stored" codec: the framework's raw segments, with no codec payload. */
#include "internal.h"

static ptrdiff_t stored_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap)
{
    (void)s; (void)src; (void)dst; (void)cap;
    return ZMPI_ERR_DST_TOO_SMALL; /* always falls back to SEG_STORED */
}

static int stored_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst)
{
    (void)s; (void)src; (void)size; (void)dst;
    return ZMPI_ERR_CORRUPT; /* a stored stream never has SEG_CODEC segments */
}

const zc_codec_ops zc_stored_ops = {
    .id = ZMPI_CODEC_STORED, .name = "stored",
    .description = "no compression: raw elements in the zmpi framing",
    .kind = ZMPI_KIND_LOSSLESS, .inter = 0,
    .dtypes = (1u << ZMPI_BYTE) | (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = stored_encode, .decode = stored_decode,
};
