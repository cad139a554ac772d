/* zstd through the system libzstd: the lossless reference and the fallback
 * for segments whose bound is 0. One frame per segment. */
#include <zstd.h>
#include <zstd_errors.h>

#include "internal.h"

ptrdiff_t zc_zstd_compress(const void *src, size_t size, uint8_t *dst, size_t cap, int level)
{
    size_t r = ZSTD_compress(dst, cap, src, size, level);
    if (ZSTD_isError(r))
        return ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall ? ZMPI_ERR_DST_TOO_SMALL
                                                                   : ZMPI_ERR_ZSTD;
    return (ptrdiff_t)r;
}

int zc_zstd_decompress(const uint8_t *src, size_t size, void *dst, size_t expect)
{
    /* The frame must declare exactly the expected size, and decode to it. */
    unsigned long long fs = ZSTD_getFrameContentSize(src, size);
    if (fs != expect)
        return ZMPI_ERR_CORRUPT;
    size_t csize = ZSTD_findFrameCompressedSize(src, size);
    if (ZSTD_isError(csize) || csize != size)
        return ZMPI_ERR_CORRUPT;
    size_t r = ZSTD_decompress(dst, expect, src, size);
    if (ZSTD_isError(r) || r != expect)
        return ZMPI_ERR_CORRUPT;
    return ZMPI_OK;
}

static ptrdiff_t zstd_encode(const zc_seg *s, const void *src, uint8_t *dst, size_t cap)
{
    return zc_zstd_compress(src, s->n * zmpi_dtype_size(s->dtype), dst, cap, (int)s->param);
}

static int zstd_decode(const zc_seg *s, const uint8_t *src, size_t size, void *dst)
{
    return zc_zstd_decompress(src, size, dst, s->n * zmpi_dtype_size(s->dtype));
}

static long long zstd_param(zmpi_dtype dtype, long long level)
{
    (void)dtype;
    if (level == 0)
        return 1;
    if (level < 1 || level > ZSTD_maxCLevel())
        return ZMPI_ERR_ARG;
    return level;
}

const zc_codec_ops zc_zstd_ops = {
    .id = ZMPI_CODEC_ZSTD, .name = "zstd",
    .description = "lossless, libzstd (level 1 unless configured)",
    .kind = ZMPI_KIND_LOSSLESS, .inter = 0,
    .dtypes = (1u << ZMPI_BYTE) | (1u << ZMPI_FLOAT) | (1u << ZMPI_DOUBLE),
    .encode = zstd_encode, .decode = zstd_decode, .param_check = zstd_param,
};
