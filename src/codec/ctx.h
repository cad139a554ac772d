/* The codec context: settings only (contexts hold no per-call state, so a
 * context may be reused for any number of calls; one context per thread). */
#ifndef ZMPI_CODEC_CTX_H
#define ZMPI_CODEC_CTX_H
#include "zmpi/codec.h"

struct zmpi_ctx {
    zmpi_codec codec;
    zmpi_eb_mode eb_mode;
    double eb;
    int threads;          /* >= 1, or 0 = all available */
    uint32_t segment;     /* elements per segment, multiple of 64 */
    uint32_t block;       /* fzl block */
    int level;            /* zstd level */
    int level_set;        /* ZMPI_P_LEVEL given: fzr codes its residual bytes with zstd at that level */
    int trunc_bits;       /* 0 = the dtype's default */
    int checksum;         /* 0/1 */
    int message;          /* 0/1: ZMPI_SF_MESSAGE in the stream's flags */
    uint32_t row, plane;  /* fzr shape hints, 0 = none */
};

#define ZMPI_DEFAULT_SEGMENT 65536u
#define ZMPI_MAX_SEGMENT (1u << 26)
#endif
