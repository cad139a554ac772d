/* Context creation and settings. */
#include <math.h>
#include <stdlib.h>

#include "ctx.h"
#include "internal.h"

zmpi_ctx *zmpi_ctx_create(void)
{
    zmpi_ctx *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    c->codec = ZMPI_CODEC_FZL;
    c->eb_mode = ZMPI_EB_NONE;
    c->eb = 0.0;
    c->threads = 1;
    c->segment = ZMPI_DEFAULT_SEGMENT;
    c->block = 16;
    c->level = 1;
    c->level_set = 0;
    c->trunc_bits = 0;
    c->checksum = 1;
    c->message = 0;
    c->row = 0;
    c->plane = 0;
    return c;
}

void zmpi_ctx_free(zmpi_ctx *ctx)
{
    free(ctx);
}

int zmpi_ctx_set_codec(zmpi_ctx *ctx, zmpi_codec codec)
{
    if (!ctx)
        return ZMPI_ERR_ARG;
    if (!zc_codec_get(codec))
        return ZMPI_ERR_CODEC;
    ctx->codec = codec;
    return ZMPI_OK;
}

int zmpi_ctx_set_bound(zmpi_ctx *ctx, zmpi_eb_mode mode, double value)
{
    if (!ctx)
        return ZMPI_ERR_ARG;
    if (mode == ZMPI_EB_NONE) {
        ctx->eb_mode = mode;
        ctx->eb = 0.0;
        return ZMPI_OK;
    }
    if (mode != ZMPI_EB_ABS && mode != ZMPI_EB_REL)
        return ZMPI_ERR_ARG;
    if (!(value > 0.0) || !isfinite(value))
        return ZMPI_ERR_BOUND;
    ctx->eb_mode = mode;
    ctx->eb = value;
    return ZMPI_OK;
}

long long zmpi_ctx_set_param(zmpi_ctx *ctx, zmpi_param param, long long v)
{
    if (!ctx)
        return ZMPI_ERR_ARG;
    switch (param) {
    case ZMPI_P_THREADS:
        if (v < 0 || v > 4096)
            return ZMPI_ERR_ARG;
        ctx->threads = (int)v;
        return v;
    case ZMPI_P_SEGMENT:
        if (v < 1 || v > ZMPI_MAX_SEGMENT)
            return ZMPI_ERR_ARG;
        ctx->segment = (uint32_t)((v + 63) / 64 * 64); /* whole fzl blocks of any size */
        return ctx->segment;
    case ZMPI_P_BLOCK:
        if (v != 8 && v != 16 && v != 32 && v != 64)
            return ZMPI_ERR_ARG;
        ctx->block = (uint32_t)v;
        return v;
    case ZMPI_P_LEVEL:
        if (zc_zstd_ops.param_check(ZMPI_BYTE, v) < 0)
            return ZMPI_ERR_ARG;
        ctx->level = (int)zc_zstd_ops.param_check(ZMPI_BYTE, v);
        ctx->level_set = v != 0;
        return ctx->level;
    case ZMPI_P_TRUNC_BITS:
        if (v < 0 || v > 52)
            return ZMPI_ERR_ARG; /* checked against the dtype at compression time */
        ctx->trunc_bits = (int)v;
        return v;
    case ZMPI_P_CHECKSUM:
        if (v != 0 && v != 1)
            return ZMPI_ERR_ARG;
        ctx->checksum = (int)v;
        return v;
    case ZMPI_P_MESSAGE:
        if (v != 0 && v != 1)
            return ZMPI_ERR_ARG;
        ctx->message = (int)v;
        return v;
    case ZMPI_P_ROW:
    case ZMPI_P_PLANE:
        if (v < 0 || v > UINT32_MAX)
            return ZMPI_ERR_ARG;
        *(param == ZMPI_P_ROW ? &ctx->row : &ctx->plane) = (uint32_t)v;
        return v;
    }
    return ZMPI_ERR_ARG;
}

long long zmpi_ctx_get_param(const zmpi_ctx *ctx, zmpi_param param)
{
    if (!ctx)
        return ZMPI_ERR_ARG;
    switch (param) {
    case ZMPI_P_THREADS: return ctx->threads;
    case ZMPI_P_SEGMENT: return ctx->segment;
    case ZMPI_P_BLOCK: return ctx->block;
    case ZMPI_P_LEVEL: return ctx->level;
    case ZMPI_P_TRUNC_BITS: return ctx->trunc_bits;
    case ZMPI_P_CHECKSUM: return ctx->checksum;
    case ZMPI_P_MESSAGE: return ctx->message;
    case ZMPI_P_ROW: return ctx->row;
    case ZMPI_P_PLANE: return ctx->plane;
    }
    return ZMPI_ERR_ARG;
}

int zmpi_ctx_set_dims(zmpi_ctx *ctx, int ndims, const size_t *dims)
{
    if (!ctx || ndims < 0 || ndims > 8 || (ndims > 0 && !dims))
        return ZMPI_ERR_ARG;
    for (int i = 0; i < ndims; i++)
        if (dims[i] == 0)
            return ZMPI_ERR_ARG;
    uint64_t row = ndims >= 2 ? dims[ndims - 1] : 0, plane = 0;
    if (ndims >= 3) {
        if (dims[ndims - 2] > UINT32_MAX || row * dims[ndims - 2] > UINT32_MAX)
            return ZMPI_ERR_ARG;
        plane = row * dims[ndims - 2];
    }
    if (row > UINT32_MAX)
        return ZMPI_ERR_ARG;
    ctx->row = (uint32_t)row;
    ctx->plane = (uint32_t)plane;
    return ZMPI_OK;
}

zmpi_codec zmpi_ctx_get_codec(const zmpi_ctx *ctx)
{
    return ctx ? ctx->codec : ZMPI_CODEC_STORED;
}

zmpi_eb_mode zmpi_ctx_get_bound(const zmpi_ctx *ctx, double *value)
{
    if (!ctx)
        return ZMPI_EB_NONE;
    if (value)
        *value = ctx->eb;
    return ctx->eb_mode;
}
