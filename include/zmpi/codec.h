/*
 * zmpi/codec.h - the zmpi codec library (no MPI inside).
 *
 * Every codec compresses a contiguous array of float or double (lossless
 * codecs also raw bytes) into a self-describing stream: a receiver needs no
 * knowledge of the sender's settings to decode it.
 *
 * Usage, one context per thread (contexts are not shared between threads;
 * a context may use OpenMP threads internally, see ZMPI_P_THREADS):
 *
 *     zmpi_ctx *c = zmpi_ctx_create();
 *     zmpi_ctx_set_codec(c, ZMPI_CODEC_FZL);
 *     zmpi_ctx_set_bound(c, ZMPI_EB_REL, 1e-3);
 *     size_t cap = zmpi_max_compressed_size(c, n, ZMPI_FLOAT);
 *     void *buf = malloc(cap);
 *     ptrdiff_t len = zmpi_compress(c, data, n, ZMPI_FLOAT, buf, cap);
 *     if (len < 0) fprintf(stderr, "%s\n", zmpi_strerror((int)len));
 *     ...
 *     ptrdiff_t got = zmpi_decompress(c, buf, len, out, n * sizeof(float));
 *     zmpi_ctx_free(c);
 *
 * Error-bound semantics (lossy codecs fzl, linpred-byte, linpred-bit):
 *   ZMPI_EB_ABS: every finite value x is reconstructed as x' with |x - x'| <= eb.
 *   ZMPI_EB_REL: eb = rel * (max - min) over the finite values of the array;
 *                the absolute eb actually used is stored in the stream.
 *   NaN, +-Inf and values that cannot be quantised are reproduced bit-exactly.
 *   If the derived eb is 0 (constant array) the data are stored losslessly.
 * Fixed-precision codecs (trunc, dp2sp and their chains) give no bound.
 *
 * Errors are negative int codes (zmpi_error); zmpi_strerror names them.
 * No function of this library prints, exits or aborts.
 */
#ifndef ZMPI_CODEC_H
#define ZMPI_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "zmpi/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZMPI_VERSION_MAJOR 0
#define ZMPI_VERSION_MINOR 1
#define ZMPI_VERSION_PATCH 0
#define ZMPI_STREAM_VERSION 1 /* wire format version written by this library */

/* Error codes: every function returning int or ptrdiff_t returns one of
 * these (< 0) on failure. */
typedef enum zmpi_error {
    ZMPI_OK = 0,
    ZMPI_ERR_ARG = -1,           /* invalid argument (NULL pointer, bad value) */
    ZMPI_ERR_CODEC = -2,         /* unknown codec id or name */
    ZMPI_ERR_DTYPE = -3,         /* unknown dtype, or dtype not supported by the codec */
    ZMPI_ERR_BOUND = -4,         /* error bound missing, <= 0, NaN or Inf */
    ZMPI_ERR_DST_TOO_SMALL = -5, /* output buffer too small */
    ZMPI_ERR_NOMEM = -6,         /* memory allocation failed */
    ZMPI_ERR_CORRUPT = -7,       /* stream is truncated, corrupted or not a zmpi stream */
    ZMPI_ERR_VERSION = -8,       /* stream written by an unsupported format version */
    ZMPI_ERR_CHECKSUM = -9,      /* stream checksum mismatch (data were altered) */
    ZMPI_ERR_CHANNEL = -10,      /* inter-step channel out of lock-step (see zmpi_channel) */
    ZMPI_ERR_NEED_CHANNEL = -11, /* an inter-step codec was used without a channel */
    ZMPI_ERR_ZSTD = -12,         /* libzstd reported an error */
    ZMPI_ERR_TOO_LARGE = -13,    /* count or size exceeds what the format supports */
    ZMPI_ERR_INTERNAL = -14      /* internal error (a bug: please report) */
} zmpi_error;

/* Returns a static, human-readable message for an error code (never NULL). */
ZMPI_API const char *zmpi_strerror(int code);
/* Returns the symbolic name of an error code, e.g. "ZMPI_ERR_CORRUPT". */
ZMPI_API const char *zmpi_error_name(int code);

typedef enum zmpi_dtype {
    ZMPI_BYTE = 0,   /* raw bytes (lossless codecs only) */
    ZMPI_FLOAT = 1,  /* IEEE-754 binary32 */
    ZMPI_DOUBLE = 2  /* IEEE-754 binary64 */
} zmpi_dtype;

/* Size in bytes of one element of a dtype, or 0 if the dtype is unknown. */
ZMPI_API size_t zmpi_dtype_size(zmpi_dtype dtype);

/* The finite minimum and maximum of x[0..n) (n values of ZMPI_FLOAT or
 * ZMPI_DOUBLE; vector instructions where the CPU has them), e.g. to pick a
 * REL bound's absolute value or a grid step. Returns 1, or 0 if no value is
 * finite (*mn = +inf, *mx = -inf). *nonfinite (unless NULL): 1 if any value
 * is NaN or infinite, else 0. */
ZMPI_API int zmpi_value_range(const void *x, size_t n, zmpi_dtype dtype, double *mn, double *mx, int *nonfinite);

typedef enum zmpi_codec {
    ZMPI_CODEC_STORED = 0,       /* no compression (framing only) */
    ZMPI_CODEC_ZSTD = 1,         /* lossless, libzstd (level ZMPI_P_LEVEL, default 1) */
    ZMPI_CODEC_FZL = 2,          /* error-bounded, fZ-light class: quantise, 1-D Lorenzo, fixed-length blocks */
    ZMPI_CODEC_XORLZC = 3,       /* lossless, XOR with previous value + leading-zero-nibble count */
    ZMPI_CODEC_XORLZC_INTER = 4, /* lossless, XOR with the previous message of a channel */
    ZMPI_CODEC_TRUNC = 5,        /* fixed precision: drop the ZMPI_P_TRUNC_BITS low bits */
    ZMPI_CODEC_DP2SP = 6,        /* fixed precision: double -> float */
    ZMPI_CODEC_TRUNC_INTER = 7,  /* trunc, then xorlzc-inter */
    ZMPI_CODEC_DP2SP_INTER = 8,  /* dp2sp, then xorlzc-inter */
    ZMPI_CODEC_LINPRED_BYTE = 9, /* error-bounded, linear predictors, one symbol byte per value */
    ZMPI_CODEC_LINPRED_BIT = 10, /* error-bounded, linear predictors, bit-wise, mantissa cut */
    ZMPI_CODEC_FZR = 11,         /* error-bounded, ratio stage: fzl's quantiser, predictor per block, zstd-coded residuals */
    ZMPI_CODEC_COUNT_ = 12
} zmpi_codec;

/* Not a codec but a choice, for the MPI layer's ZMPI_Config.codec
 * (ZMPI_CODEC=auto, its default): each call is coded by fzl, or, with the
 * network configured, by fzr where the model finds that its higher ratio
 * pays for its slower coding; the stream names the codec used. Here
 * zmpi_codec_name gives "auto" and zmpi_codec_kind ZMPI_KIND_BOUNDED (it
 * needs a bound); contexts refuse it (ZMPI_ERR_CODEC). */
#define ZMPI_CODEC_AUTO ((zmpi_codec)64)

/* Codec name ("fzl", "xorlzc-inter", ...) or NULL if unknown. */
ZMPI_API const char *zmpi_codec_name(zmpi_codec codec);
/* Codec id for a name, or ZMPI_ERR_CODEC. */
ZMPI_API int zmpi_codec_from_name(const char *name);
/* One-line description of a codec, or NULL if unknown. */
ZMPI_API const char *zmpi_codec_description(zmpi_codec codec);
/* 1 if the codec is lossy with an error bound, 0 if lossless, 2 if lossy
 * with fixed precision (no bound), ZMPI_ERR_CODEC if unknown. */
ZMPI_API int zmpi_codec_kind(zmpi_codec codec);
#define ZMPI_KIND_LOSSLESS 0
#define ZMPI_KIND_BOUNDED 1
#define ZMPI_KIND_FIXED 2
/* 1 if the codec keeps inter-step state and needs a zmpi_channel. */
ZMPI_API int zmpi_codec_needs_channel(zmpi_codec codec);

typedef enum zmpi_eb_mode {
    ZMPI_EB_NONE = 0, /* no bound set (lossless / fixed-precision codecs) */
    ZMPI_EB_ABS = 1,  /* absolute bound */
    ZMPI_EB_REL = 2   /* value-range relative bound */
} zmpi_eb_mode;

/* Integer parameters of a context (zmpi_ctx_set_param). */
typedef enum zmpi_param {
    ZMPI_P_THREADS = 0,      /* OpenMP threads over segments; default 1; 0 = all available */
    ZMPI_P_SEGMENT = 1,      /* elements per independent segment; default 65536 (rounded to a block multiple) */
    ZMPI_P_BLOCK = 2,        /* fzl block length: 8, 16 (default), 32 or 64 */
    ZMPI_P_LEVEL = 3,        /* zstd level, default 1 */
    ZMPI_P_TRUNC_BITS = 4,   /* bits dropped by trunc: 1..52 for double (default 32), 1..23 for float (default 16) */
    ZMPI_P_CHECKSUM = 5,     /* 1 (default): XXH3 checksum per segment; 0: none */
    ZMPI_P_ROW = 6,          /* shape hint for fzr: elements per row (fastest dimension); 0 (default) = none */
    ZMPI_P_PLANE = 7,        /* shape hint for fzr: elements per plane (rows x row length); 0 (default) = none */
    ZMPI_P_MESSAGE = 8       /* 1: the stream is a point-to-point message of libzmpi_mpi (flag ZMPI_SF_MESSAGE);
                                0 (default) for every other stream */
} zmpi_param;

typedef struct zmpi_ctx zmpi_ctx;

/* Creates a context with default settings (codec fzl, no bound, 1 thread).
 * Returns NULL only if memory is exhausted. */
ZMPI_API zmpi_ctx *zmpi_ctx_create(void);
/* Frees a context and its scratch memory. NULL is accepted. */
ZMPI_API void zmpi_ctx_free(zmpi_ctx *ctx);

/* Selects the codec. Returns ZMPI_OK or ZMPI_ERR_CODEC / ZMPI_ERR_ARG. */
ZMPI_API int zmpi_ctx_set_codec(zmpi_ctx *ctx, zmpi_codec codec);
/* Sets the error bound. mode ZMPI_EB_NONE clears it (value ignored).
 * Returns ZMPI_OK, or ZMPI_ERR_BOUND if value is <= 0, NaN or Inf
 * (for REL also if value >= 1 is fine; only non-positive/non-finite fail). */
ZMPI_API int zmpi_ctx_set_bound(zmpi_ctx *ctx, zmpi_eb_mode mode, double value);
/* Sets an integer parameter. Returns the value actually chosen (>= 0), or
 * ZMPI_ERR_ARG if the parameter or value is invalid (the context is then
 * unchanged). */
ZMPI_API long long zmpi_ctx_set_param(zmpi_ctx *ctx, zmpi_param param, long long value);
/* Shape hint for fzr (the other codecs ignore it): the array is C-ordered
 * with dims[0] slowest. Sets ZMPI_P_ROW to dims[ndims-1] and ZMPI_P_PLANE to
 * dims[ndims-1] * dims[ndims-2] (0 for fewer than 3 dimensions); ndims 0 or 1
 * clears both. Returns ZMPI_OK or ZMPI_ERR_ARG (ndims > 8, a dimension 0, or
 * a row or plane beyond 2^32 - 1; the context is then unchanged). */
ZMPI_API int zmpi_ctx_set_dims(zmpi_ctx *ctx, int ndims, const size_t *dims);
/* Reads an integer parameter, or ZMPI_ERR_ARG. */
ZMPI_API long long zmpi_ctx_get_param(const zmpi_ctx *ctx, zmpi_param param);
ZMPI_API zmpi_codec zmpi_ctx_get_codec(const zmpi_ctx *ctx);
ZMPI_API zmpi_eb_mode zmpi_ctx_get_bound(const zmpi_ctx *ctx, double *value);

/* Worst-case stream size for count elements of dtype with the context's
 * settings: a buffer of this size always suffices for zmpi_compress.
 * Returns 0 if the arguments are invalid or the size overflows size_t. */
ZMPI_API size_t zmpi_max_compressed_size(const zmpi_ctx *ctx, size_t count, zmpi_dtype dtype);

/* Compresses count elements of dtype from src into dst (capacity dst_cap
 * bytes). src may be NULL when count is 0.
 * Returns the stream size in bytes (> 0), or a negative zmpi_error:
 * ZMPI_ERR_BOUND if a lossy codec has no valid bound, ZMPI_ERR_DTYPE if the
 * codec does not accept dtype, ZMPI_ERR_DST_TOO_SMALL if dst_cap is below
 * what this input needs (zmpi_max_compressed_size is always enough),
 * ZMPI_ERR_NEED_CHANNEL for inter-step codecs (use zmpi_compress_channel). */
ZMPI_API ptrdiff_t zmpi_compress(zmpi_ctx *ctx, const void *src, size_t count, zmpi_dtype dtype,
                                 void *dst, size_t dst_cap);

/* Decompresses a whole stream of src_size bytes into dst (capacity dst_cap
 * bytes). The stream describes itself; use zmpi_stream_info to learn the
 * dtype and count first. Only the context's thread count is used.
 * Returns the number of bytes written (count * dtype size), or a negative
 * zmpi_error: ZMPI_ERR_CORRUPT / ZMPI_ERR_CHECKSUM / ZMPI_ERR_VERSION for a
 * bad stream, ZMPI_ERR_DST_TOO_SMALL, ZMPI_ERR_NEED_CHANNEL. On error the
 * contents of dst are unspecified. */
ZMPI_API ptrdiff_t zmpi_decompress(zmpi_ctx *ctx, const void *src, size_t src_size, void *dst,
                                   size_t dst_cap);

/* What a stream header says, validated against the buffer. */
typedef struct zmpi_stream_info {
    zmpi_codec codec;
    zmpi_dtype dtype;
    uint64_t count;        /* elements */
    double eb;             /* absolute bound used (0 for lossless / fixed precision) */
    uint32_t param;        /* codec parameter (fzl block, zstd level, trunc bits) */
    uint32_t segment;      /* elements per segment */
    uint32_t nsegments;
    uint32_t flags;        /* ZMPI_SF_* */
    uint64_t seq;          /* channel sequence number (inter-step codecs) */
    size_t header_size;    /* bytes of header + segment index */
    size_t stream_size;    /* total bytes of the stream */
} zmpi_stream_info;
#define ZMPI_SF_CHECKSUM 0x1u /* segments carry XXH3 checksums */
#define ZMPI_SF_RESET 0x2u    /* inter-step: the channel is (re)started with this message */
/* A point-to-point message of libzmpi_mpi (ZMPI_P_MESSAGE): its receivers
 * decode only streams that carry this flag, so a stream a program makes
 * with the codec API and sends as data arrives as that data. */
#define ZMPI_SF_MESSAGE 0x4u

/* Parses and validates a stream header (and its segment index) in src.
 * Returns ZMPI_OK and fills *info, or ZMPI_ERR_CORRUPT / ZMPI_ERR_VERSION.
 * Does not decode or checksum the payload. */
ZMPI_API int zmpi_stream_info_get(const void *src, size_t src_size, zmpi_stream_info *info);

/* ---- Inter-step channels (codecs xorlzc-inter, trunc-inter, dp2sp-inter) ----
 *
 * A channel holds the previous message of one (peer, tag, size) stream; each
 * end keeps its own channel and both must see the same sequence of messages.
 * Reset rule: the sender starts afresh (stream flag ZMPI_SF_RESET, history
 * taken as zeros; xorlzc-inter codes such a message as xorlzc) on its first message, whenever count, dtype, codec or
 * codec parameter change, after any error on its side, after
 * zmpi_channel_reset, and whenever the message is larger than the channel's
 * memory bound (such messages are never kept). A receiver accepts a non-reset
 * stream only if its sequence number follows the last one it decoded;
 * otherwise it returns ZMPI_ERR_CHANNEL and resets itself. After any error on
 * either side, reset both ends (the MPI layer does this for you).
 */
typedef struct zmpi_channel zmpi_channel;

/* Creates a channel that keeps at most max_bytes of history (0: unlimited
 * up to SIZE_MAX). Returns NULL if memory is exhausted. */
ZMPI_API zmpi_channel *zmpi_channel_create(size_t max_bytes);
ZMPI_API void zmpi_channel_free(zmpi_channel *ch);
/* Forgets the history: the next message is a reset. */
ZMPI_API void zmpi_channel_reset(zmpi_channel *ch);
/* Bytes of history memory currently held. */
ZMPI_API size_t zmpi_channel_memory(const zmpi_channel *ch);

/* As zmpi_compress / zmpi_decompress, with a channel (required by the
 * inter-step codecs, ignored by the others; ch may then be NULL). */
ZMPI_API ptrdiff_t zmpi_compress_channel(zmpi_ctx *ctx, zmpi_channel *ch, const void *src, size_t count,
                                         zmpi_dtype dtype, void *dst, size_t dst_cap);
ZMPI_API ptrdiff_t zmpi_decompress_channel(zmpi_ctx *ctx, zmpi_channel *ch, const void *src,
                                           size_t src_size, void *dst, size_t dst_cap);

/* ---- Quality metrics (ratio, max error, RMSE, NRMSE, PSNR, throughput) ---- */
typedef struct zmpi_quality {
    double max_abs_err;  /* max |x - x'| over elements where both are finite */
    double rmse;
    double nrmse;        /* rmse / (max - min) of the original */
    double psnr;         /* 20 log10((max - min) / rmse); +inf when rmse == 0 */
    double value_range;  /* max - min of the finite original values */
    uint64_t nonfinite_mismatch; /* elements where a non-finite value was not reproduced bit-exactly */
} zmpi_quality;

/* Compares original and reconstructed arrays of count elements of dtype
 * (float or double). Returns ZMPI_OK or ZMPI_ERR_ARG / ZMPI_ERR_DTYPE. */
ZMPI_API int zmpi_quality_compare(const void *orig, const void *recon, size_t count, zmpi_dtype dtype,
                                  zmpi_quality *out);

/* ---- Codes on a shared grid: sums without decompression ----
 * Values quantised to integer codes q_i = round(x_i / step) on a grid all
 * parties share. The arrays hold the codes' differences d_i = q_i - q_{i-1}
 * (q_{-1} = 0), which are linear: the element-wise sum of several arrays'
 * differences is the differences of the sum of their codes, exact in
 * integers. The MPI layer sums reductions this way (each input quantised
 * once, partial sums travel packed and are added without going back to
 * floating point); the functions are public so that other tools can
 * combine packed arrays the same way. Differences are added modulo 2^32:
 * keep the true sums of codes below 2^30 in magnitude.
 *
 * zmpi_grid_quantize: x (n values of dtype) -> d. Returns ZMPI_OK, or
 *   ZMPI_ERR_ARG if some value is not finite, its code is 2^30 or more in
 *   magnitude, or |x_i - q_i * step| (in double) exceeds maxerr; d is then
 *   written but meaningless. step/2 plus rounding is the worst error, so
 *   pass maxerr slightly above step/2 (or step a little below 2 maxerr).
 * zmpi_grid_dequantize: d -> y_i = q_i * step with q_i = d_0 + ... + d_i,
 *   computed in double and rounded once to dtype.
 * zmpi_grid_pack: d -> a self-checking packed form (two's complement bit
 *   planes per block of 64), at most zmpi_grid_bound(n) bytes; returns its
 *   size or ZMPI_ERR_DST_TOO_SMALL.
 * zmpi_grid_unpack: a packed form of exactly n values -> out, plus addend
 *   element-wise if addend is not NULL (out may be addend): one pass for
 *   "receive a partial sum and add mine". ZMPI_ERR_CORRUPT for anything
 *   that is not such a packing (wrong count, checksum, truncation). */
ZMPI_API int zmpi_grid_quantize(const void *x, size_t n, zmpi_dtype dtype, double step, double maxerr,
                                int32_t *d);
ZMPI_API int zmpi_grid_dequantize(const int32_t *d, size_t n, double step, zmpi_dtype dtype, void *y);
ZMPI_API size_t zmpi_grid_bound(size_t n);
ZMPI_API ptrdiff_t zmpi_grid_pack(const int32_t *d, size_t n, void *dst, size_t cap);
ZMPI_API int zmpi_grid_unpack(const void *src, size_t size, const int32_t *addend, int32_t *out, size_t n);
/* zmpi_grid_add: two packed arrays of n values each -> the packed array of
 *   their sum (modulo 2^32), added plane by plane without unpacking; at most
 *   zmpi_grid_bound(n) bytes. Returns its size, ZMPI_ERR_CORRUPT if an input
 *   is not a packing of n values, or ZMPI_ERR_DST_TOO_SMALL. */
ZMPI_API ptrdiff_t zmpi_grid_add(const void *a, size_t alen, const void *b, size_t blen, size_t n, void *dst,
                                 size_t cap);

/* Library version string, e.g. "0.1.0". */
ZMPI_API const char *zmpi_version(void);

#ifdef __cplusplus
}
#endif
#endif /* ZMPI_CODEC_H */
