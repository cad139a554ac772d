/* The codec registry: one table entry per codec, from which the CLI's
 * `zmpi codec list`, the docs and name lookup are all generated. */
#include <string.h>

#include "internal.h"

static const zc_codec_ops *const registry[ZMPI_CODEC_COUNT_] = {
    [ZMPI_CODEC_STORED] = &zc_stored_ops,
    [ZMPI_CODEC_ZSTD] = &zc_zstd_ops,
    [ZMPI_CODEC_FZL] = &zc_fzl_ops,
    [ZMPI_CODEC_XORLZC] = &zc_xorlzc_ops,
    [ZMPI_CODEC_XORLZC_INTER] = &zc_xorlzc_inter_ops,
    [ZMPI_CODEC_TRUNC] = &zc_trunc_ops,
    [ZMPI_CODEC_DP2SP] = &zc_dp2sp_ops,
    [ZMPI_CODEC_TRUNC_INTER] = &zc_trunc_inter_ops,
    [ZMPI_CODEC_DP2SP_INTER] = &zc_dp2sp_inter_ops,
    [ZMPI_CODEC_LINPRED_BYTE] = &zc_linpred_byte_ops,
    [ZMPI_CODEC_LINPRED_BIT] = &zc_linpred_bit_ops,
    [ZMPI_CODEC_FZR] = &zc_fzr_ops,
};

const zc_codec_ops *zc_codec_get(zmpi_codec id)
{
    if ((unsigned)id >= ZMPI_CODEC_COUNT_)
        return NULL;
    return registry[id];
}

const char *zmpi_codec_name(zmpi_codec codec)
{
    if (codec == ZMPI_CODEC_AUTO)
        return "auto";
    const zc_codec_ops *ops = zc_codec_get(codec);
    return ops ? ops->name : NULL;
}

const char *zmpi_codec_description(zmpi_codec codec)
{
    if (codec == ZMPI_CODEC_AUTO)
        return "fzl or fzr, whichever the MPI layer's model finds faster for the call";
    const zc_codec_ops *ops = zc_codec_get(codec);
    return ops ? ops->description : NULL;
}

int zmpi_codec_from_name(const char *name)
{
    if (!name)
        return ZMPI_ERR_CODEC;
    for (int i = 0; i < ZMPI_CODEC_COUNT_; i++)
        if (strcmp(registry[i]->name, name) == 0)
            return i;
    return ZMPI_ERR_CODEC;
}

int zmpi_codec_kind(zmpi_codec codec)
{
    if (codec == ZMPI_CODEC_AUTO)
        return ZMPI_KIND_BOUNDED;
    const zc_codec_ops *ops = zc_codec_get(codec);
    return ops ? ops->kind : ZMPI_ERR_CODEC;
}

int zmpi_codec_needs_channel(zmpi_codec codec)
{
    const zc_codec_ops *ops = zc_codec_get(codec);
    return ops ? ops->inter : 0;
}

size_t zmpi_dtype_size(zmpi_dtype dtype)
{
    switch (dtype) {
    case ZMPI_BYTE: return 1;
    case ZMPI_FLOAT: return 4;
    case ZMPI_DOUBLE: return 8;
    }
    return 0;
}

const char *zmpi_version(void)
{
    return "0.1.0";
}

const char *zmpi_error_name(int code)
{
    switch (code) {
    case ZMPI_OK: return "ZMPI_OK";
    case ZMPI_ERR_ARG: return "ZMPI_ERR_ARG";
    case ZMPI_ERR_CODEC: return "ZMPI_ERR_CODEC";
    case ZMPI_ERR_DTYPE: return "ZMPI_ERR_DTYPE";
    case ZMPI_ERR_BOUND: return "ZMPI_ERR_BOUND";
    case ZMPI_ERR_DST_TOO_SMALL: return "ZMPI_ERR_DST_TOO_SMALL";
    case ZMPI_ERR_NOMEM: return "ZMPI_ERR_NOMEM";
    case ZMPI_ERR_CORRUPT: return "ZMPI_ERR_CORRUPT";
    case ZMPI_ERR_VERSION: return "ZMPI_ERR_VERSION";
    case ZMPI_ERR_CHECKSUM: return "ZMPI_ERR_CHECKSUM";
    case ZMPI_ERR_CHANNEL: return "ZMPI_ERR_CHANNEL";
    case ZMPI_ERR_NEED_CHANNEL: return "ZMPI_ERR_NEED_CHANNEL";
    case ZMPI_ERR_ZSTD: return "ZMPI_ERR_ZSTD";
    case ZMPI_ERR_TOO_LARGE: return "ZMPI_ERR_TOO_LARGE";
    case ZMPI_ERR_INTERNAL: return "ZMPI_ERR_INTERNAL";
    }
    return "ZMPI_ERR_UNKNOWN";
}

const char *zmpi_strerror(int code)
{
    switch (code) {
    case ZMPI_OK: return "success";
    case ZMPI_ERR_ARG: return "invalid argument";
    case ZMPI_ERR_CODEC: return "unknown codec";
    case ZMPI_ERR_DTYPE: return "data type not supported by this codec";
    case ZMPI_ERR_BOUND: return "invalid or missing error bound (must be finite and > 0)";
    case ZMPI_ERR_DST_TOO_SMALL: return "output buffer too small";
    case ZMPI_ERR_NOMEM: return "out of memory";
    case ZMPI_ERR_CORRUPT: return "stream is truncated, corrupted or not a zmpi stream";
    case ZMPI_ERR_VERSION: return "stream format version not supported";
    case ZMPI_ERR_CHECKSUM: return "stream checksum mismatch (data altered in transit or storage)";
    case ZMPI_ERR_CHANNEL: return "inter-step channel out of lock-step (reset both ends)";
    case ZMPI_ERR_NEED_CHANNEL: return "inter-step codec needs a channel";
    case ZMPI_ERR_ZSTD: return "zstd library error";
    case ZMPI_ERR_TOO_LARGE: return "size exceeds what the stream format supports";
    case ZMPI_ERR_INTERNAL: return "internal error";
    }
    return "unknown error code";
}
