/*
 * The zmpi stream: header, segment index, segments (self-describing: magic, version, codec, dtype, count, bound, index).
 *
 *   offset size  field
 *   0      4     magic "ZMPI"
 *   4      1     format version (ZMPI_STREAM_VERSION)
 *   5      1     codec id
 *   6      1     dtype
 *   7      1     flags (ZMPI_SF_*)
 *   8      8     element count
 *   16     8     absolute error bound used (binary64; 0 = none)
 *   24     4     codec parameter
 *   28     4     elements per segment
 *   32     4     number of segments = ceil(count / segment)
 *   36     4     header check: low 32 bits of XXH3-64 over bytes 0..35, 40..47 and the index
 *   40     8     channel sequence number (inter-step codecs; else 0)
 *   48     8*n   index: per segment u32 byte size, u32 checksum (low 32 bits of XXH3-64 of
 *                the segment's bytes, or 0 without ZMPI_SF_CHECKSUM)
 *   ...          segments, in order; each starts with a mode byte (SEG_*)
 *
 * All integers little-endian. Segments are independent: they are encoded and
 * decoded in parallel (OpenMP) and will let the collectives pipeline chunks.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#ifdef ZMPI_HAVE_OPENMP
#include <omp.h>
#endif

#include "channel.h"
#include "ctx.h"
#include "internal.h"

#define HDR_SIZE 48u
#define IDX_ENTRY 8u
#define MAGIC0 'Z'
#define MAGIC1 'M'
#define MAGIC2 'P'
#define MAGIC3 'I'
#define SF_KNOWN (ZMPI_SF_CHECKSUM | ZMPI_SF_RESET | ZMPI_SF_MESSAGE)

static int resolve_threads(int t)
{
#ifdef ZMPI_HAVE_OPENMP
    return t > 0 ? t : omp_get_max_threads();
#else
    (void)t;
    return 1;
#endif
}

static uint32_t header_check(const uint8_t *hdr, size_t nseg)
{
    /* bytes 40.. (sequence number and index) are contiguous; chain the seed */
    XXH64_hash_t head = XXH3_64bits(hdr, 36);
    return (uint32_t)XXH3_64bits_withSeed(hdr + 40, HDR_SIZE - 40 + IDX_ENTRY * nseg, head);
}

static uint32_t seg_check(const uint8_t *p, size_t n)
{
    return (uint32_t)XXH3_64bits(p, n);
}

/* The parameter the context requests for a codec, before validation. */
static long long requested_param(const zmpi_ctx *ctx, zmpi_codec codec)
{
    switch (codec) {
    case ZMPI_CODEC_ZSTD: return ctx->level;
    case ZMPI_CODEC_FZR: return ctx->level_set ? ctx->level : 0;
    case ZMPI_CODEC_FZL: return ctx->block;
    case ZMPI_CODEC_TRUNC:
    case ZMPI_CODEC_TRUNC_INTER: return ctx->trunc_bits;
    default: return 0;
    }
}

static int check_param(const zc_codec_ops *ops, zmpi_dtype dtype, long long req, uint32_t *out)
{
    long long p = ops->param_check ? ops->param_check(dtype, req) : 0;
    if (p < 0 || p > UINT32_MAX)
        return ZMPI_ERR_ARG;
    *out = (uint32_t)p;
    return ZMPI_OK;
}

size_t zmpi_max_compressed_size(const zmpi_ctx *ctx, size_t count, zmpi_dtype dtype)
{
    size_t es = zmpi_dtype_size(dtype);
    if (!ctx || es == 0 || count > SIZE_MAX / es)
        return 0;
    size_t seg = ctx->segment;
    size_t nseg = count / seg + (count % seg != 0);
    if (nseg > UINT32_MAX)
        return 0;
    size_t raw = count * es;
    size_t extra = HDR_SIZE + nseg * (IDX_ENTRY + 1);
    if (raw > SIZE_MAX - extra)
        return 0;
    return raw + extra;
}

/* ---- value range for REL bounds ---- */
#ifdef ZMPI_HAVE_AVX2
int zc_range_f32_avx2(const float *x, size_t n, double *mn, double *mx, int *nonfinite);
int zc_have_avx2(void);
#endif

/* zmpi_value_range without vector instructions. */
static int range_scalar(const void *src, size_t n, zmpi_dtype dtype, double *mn, double *mx, int *nonfinite)
{
    double lo = INFINITY, hi = -INFINITY;
    int bad = 0;
    if (dtype == ZMPI_FLOAT) {
        const float *x = src;
        float l = INFINITY, h = -INFINITY;
        for (size_t i = 0; i < n; i++) {
            float v = x[i];
            int fin = fabsf(v) <= FLT_MAX;
            l = (fin && v < l) ? v : l;
            h = (fin && v > h) ? v : h;
            bad |= !fin;
        }
        lo = l;
        hi = h;
    } else {
        const double *x = src;
        for (size_t i = 0; i < n; i++) {
            double v = x[i];
            int fin = fabs(v) <= DBL_MAX;
            lo = (fin && v < lo) ? v : lo;
            hi = (fin && v > hi) ? v : hi;
            bad |= !fin;
        }
    }
    *mn = lo;
    *mx = hi;
    *nonfinite = bad;
    return lo <= hi;
}

int zmpi_value_range(const void *src, size_t n, zmpi_dtype dtype, double *mn, double *mx, int *nonfinite)
{
    int bad = 0, ok;
    if ((dtype != ZMPI_FLOAT && dtype != ZMPI_DOUBLE) || (!src && n)) {
        *mn = INFINITY;
        *mx = -INFINITY;
        if (nonfinite)
            *nonfinite = 0;
        return 0;
    }
#ifdef ZMPI_HAVE_AVX2
    if (dtype == ZMPI_FLOAT && zc_have_avx2())
        ok = zc_range_f32_avx2(src, n, mn, mx, &bad);
    else
#endif
        ok = range_scalar(src, n, dtype, mn, mx, &bad);
    if (nonfinite)
        *nonfinite = bad;
    return ok;
}

static void value_range(const void *src, size_t n, zmpi_dtype dtype, int threads, double *mn,
                        double *mx)
{
    double lo = INFINITY, hi = -INFINITY;
    size_t es = zmpi_dtype_size(dtype);
    size_t chunk = (size_t)1 << 18;
    size_t nchunk = n / chunk + (n % chunk != 0);
    if (threads > (int)nchunk)
        threads = (int)(nchunk ? nchunk : 1);
#ifdef ZMPI_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : lo) reduction(max : hi)
#endif
    for (size_t k = 0; k < nchunk; k++) {
        /* last chunk first: the start of the array is then still in cache
         * when compression begins there */
        size_t c = nchunk - 1 - k;
        size_t off = c * chunk, m = n - off < chunk ? n - off : chunk;
        const void *p = (const uint8_t *)src + off * es;
        double a, b;
        if (zmpi_value_range(p, m, dtype, &a, &b, NULL)) {
            lo = a < lo ? a : lo;
            hi = b > hi ? b : hi;
        }
    }
    (void)threads;
    *mn = lo;
    *mx = hi;
}

/* The absolute bound a bounded codec uses for this input (0 = store losslessly). */
static int effective_eb(const zmpi_ctx *ctx, const void *src, size_t count, zmpi_dtype dtype,
                        int threads, double *eb)
{
    if (ctx->eb_mode == ZMPI_EB_ABS) {
        *eb = ctx->eb;
        return ZMPI_OK;
    }
    if (ctx->eb_mode != ZMPI_EB_REL)
        return ZMPI_ERR_BOUND;
    double mn, mx;
    value_range(src, count, dtype, threads, &mn, &mx);
    if (!(mn <= mx)) { /* no finite value */
        *eb = 0.0;
        return ZMPI_OK;
    }
    double e = ctx->eb * mx - ctx->eb * mn; /* no overflow for ranges beyond DBL_MAX */
    *eb = (e > 0.0 && isfinite(e)) ? e : (e > 0.0 ? DBL_MAX : 0.0);
    return ZMPI_OK;
}

/* ---- one segment ---- */

typedef struct enc_job {
    const zc_codec_ops *ops;
    zc_seg seg;       /* n is set per segment */
    int lossless_eb0; /* bounded codec with eb 0: zstd segments */
    int checksum;
} enc_job;

/* Encodes one segment at out (capacity cap). Returns its size or an error. */
static ptrdiff_t encode_segment(const enc_job *j, const zc_seg *s, const void *src, uint8_t *out,
                                size_t cap)
{
    size_t raw = s->n * zmpi_dtype_size(s->dtype);
    if (cap < 1)
        return ZMPI_ERR_DST_TOO_SMALL;
    size_t ccap = (cap - 1 < raw) ? cap - 1 : raw;
    ptrdiff_t r = ZMPI_ERR_DST_TOO_SMALL;
    if (j->lossless_eb0) {
        r = zc_zstd_compress(src, raw, out + 1, ccap, 1);
        out[0] = SEG_ZSTD;
    } else if (j->ops->id != ZMPI_CODEC_STORED) {
        r = j->ops->encode(s, src, out + 1, ccap);
        out[0] = SEG_CODEC;
    }
    if (r == ZMPI_ERR_DST_TOO_SMALL || r == ZMPI_ERR_ZSTD || (r >= 0 && (size_t)r >= raw)) {
        if (cap - 1 < raw)
            return ZMPI_ERR_DST_TOO_SMALL;
        out[0] = SEG_STORED;
        memcpy(out + 1, src, raw);
        return (ptrdiff_t)(raw + 1);
    }
    if (r < 0)
        return r;
    return r + 1;
}

/* One message's encoding: the segments, where they come from and go. */
typedef struct enc_run {
    enc_job job;
    const uint8_t *src;
    uint8_t *dst;
    size_t dst_cap, count, seg, es;
    const uint8_t *hist; /* inter-step history read by the encoder (NULL = zeros) */
    size_t hes;          /* its element size */
} enc_run;

/* The segment descriptor of segment i. */
static zc_seg segment_of(const enc_run *e, size_t i)
{
    zc_seg s = e->job.seg;
    size_t off = i * e->seg;
    s.n = e->count - off < e->seg ? e->count - off : e->seg;
    s.hist = e->hist ? e->hist + off * e->hes : NULL;
    return s;
}

/* Encodes segments [s0, s1) one after the other from dst + pos and fills
 * their index entries. Returns the end position, or an error. A segment
 * never takes more than 1 + its raw size (encode_segment stores raw data
 * when the codec does not gain), which the parallel layout relies on. */
static ptrdiff_t encode_segments(const enc_run *e, size_t s0, size_t s1, size_t pos)
{
    for (size_t i = s0; i < s1; i++) {
        zc_seg s = segment_of(e, i);
        ptrdiff_t r = encode_segment(&e->job, &s, e->src + i * e->seg * e->es, e->dst + pos,
                                     e->dst_cap - pos);
        if (r < 0)
            return r;
        zc_put_u32(e->dst + HDR_SIZE + IDX_ENTRY * i, (uint32_t)r);
        zc_put_u32(e->dst + HDR_SIZE + IDX_ENTRY * i + 4,
                   e->job.checksum ? seg_check(e->dst + pos, (size_t)r) : 0);
        pos += (size_t)r;
    }
    return (ptrdiff_t)pos;
}

/* Encodes all nseg segments after the header of hsize bytes; returns the
 * stream's size or an error. With several threads (which needs room for the
 * worst case), thread t encodes segments [t*nseg/T, (t+1)*nseg/T) from the
 * worst-case offset of its first segment; the regions are then compacted. */
static ptrdiff_t encode_all(const enc_run *e, size_t nseg, size_t hsize, int threads)
{
    size_t worst_seg = 1 + e->seg * e->es, total = hsize;
    if (threads > (int)nseg)
        threads = (int)(nseg ? nseg : 1);
    if (e->dst_cap < hsize + nseg + e->count * e->es)
        threads = 1; /* parallel regions need the worst-case layout */
    if (threads > 256)
        threads = 256;
    if (threads <= 1)
        return encode_segments(e, 0, nseg, hsize);

    ptrdiff_t end[256];
#ifdef ZMPI_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#endif
    for (int t = 0; t < threads; t++) {
        size_t s0 = nseg * (size_t)t / (size_t)threads, s1 = nseg * (size_t)(t + 1) / (size_t)threads;
        end[t] = encode_segments(e, s0, s1, hsize + s0 * worst_seg);
    }
    for (int t = 0; t < threads; t++) {
        if (end[t] < 0)
            return end[t];
        size_t start = hsize + nseg * (size_t)t / (size_t)threads * worst_seg;
        size_t len = (size_t)end[t] - start;
        if (start != total)
            memmove(e->dst + total, e->dst + start, len);
        total += len;
    }
    return (ptrdiff_t)total;
}

/* Inter-step channel, before encoding: whether this message resets the
 * history, which history the encoder reads, where the new one will go. */
typedef struct chan_plan {
    uint8_t flags;
    uint64_t seq;
    uint8_t *hist, *hkeep; /* read (NULL = zeros) / written after encoding (NULL: not kept) */
    size_t hes;
} chan_plan;

static void channel_begin(zmpi_channel *ch, const zc_codec_ops *ops, zmpi_dtype dtype, uint32_t param,
                          size_t count, chan_plan *p)
{
    p->hes = ops->hist_elem_size(dtype);
    size_t need = count * p->hes;
    int same = ch->valid && ch->codec == ops->id && ch->dtype == dtype && ch->param == param &&
               ch->count == count;
    p->seq = ch->seq + 1;
    if (!same)
        p->flags |= ZMPI_SF_RESET;
    else
        p->hist = ch->buf;
    ch->valid = 0; /* until this message is complete */
    if (need <= ch->max_bytes && need > 0 && zc_channel_reserve(ch, need) == ZMPI_OK)
        p->hkeep = ch->buf;
    if (!p->hkeep)
        p->hist = NULL, p->flags |= ZMPI_SF_RESET; /* cannot keep: every message resets */
}

/* Inter-step channel, after a successful encoding: the receiver's view of
 * this message becomes the next one's history. */
static void channel_end(zmpi_channel *ch, const enc_run *e, size_t nseg, const chan_plan *p)
{
    const zc_codec_ops *ops = e->job.ops;
    if (p->hkeep) {
        for (size_t i = 0; i < nseg; i++) {
            zc_seg s = segment_of(e, i);
            ops->hist_update(&s, e->src + i * e->seg * e->es, p->hkeep + i * e->seg * p->hes);
        }
        ch->valid = 1;
    }
    ch->codec = ops->id;
    ch->dtype = e->job.seg.dtype;
    ch->param = e->job.seg.param;
    ch->count = e->count;
    ch->seq = p->seq;
}

/* The stream header (the index follows; its check is written last). */
static void put_header(uint8_t *dst, const enc_run *e, size_t nseg, uint8_t flags, uint64_t seq)
{
    dst[0] = MAGIC0; dst[1] = MAGIC1; dst[2] = MAGIC2; dst[3] = MAGIC3;
    dst[4] = ZMPI_STREAM_VERSION;
    dst[5] = (uint8_t)e->job.ops->id;
    dst[6] = (uint8_t)e->job.seg.dtype;
    dst[7] = flags;
    zc_put_u64(dst + 8, e->count);
    zc_put_f64(dst + 16, e->job.seg.eb);
    zc_put_u32(dst + 24, e->job.seg.param);
    zc_put_u32(dst + 28, (uint32_t)e->seg);
    zc_put_u32(dst + 32, (uint32_t)nseg);
    zc_put_u64(dst + 40, seq);
}

static ptrdiff_t compress_impl(zmpi_ctx *ctx, zmpi_channel *ch, const void *src, size_t count,
                               zmpi_dtype dtype, void *dstv, size_t dst_cap)
{
    uint8_t *dst = dstv;
    const zc_codec_ops *ops = zc_codec_get(ctx ? ctx->codec : ZMPI_CODEC_COUNT_);
    size_t es = zmpi_dtype_size(dtype);
    if (!ctx || !dst || (count > 0 && !src))
        return ZMPI_ERR_ARG;
    if (!ops)
        return ZMPI_ERR_CODEC;
    if (es == 0 || !(ops->dtypes & (1u << dtype)))
        return ZMPI_ERR_DTYPE;
    if (ops->inter && !ch)
        return ZMPI_ERR_NEED_CHANNEL;
    if (count > (size_t)PTRDIFF_MAX / es / 2 || count > (UINT64_MAX >> 4))
        return ZMPI_ERR_TOO_LARGE;
    size_t seg = ctx->segment;
    size_t nseg = count / seg + (count % seg != 0);
    if (nseg > UINT32_MAX / 2)
        return ZMPI_ERR_TOO_LARGE;
    size_t hsize = HDR_SIZE + IDX_ENTRY * nseg;
    if (dst_cap < hsize)
        return ZMPI_ERR_DST_TOO_SMALL;

    int threads = resolve_threads(ctx->threads);
    uint32_t param;
    int rc = check_param(ops, dtype, requested_param(ctx, ops->id), &param);
    if (rc)
        return rc;
    double eb = 0.0;
    if (ops->kind == ZMPI_KIND_BOUNDED) {
        if (ctx->eb_mode == ZMPI_EB_NONE)
            return ZMPI_ERR_BOUND;
        rc = effective_eb(ctx, src, count, dtype, threads, &eb);
        if (rc)
            return rc;
    }

    chan_plan plan = {.flags = (ctx->checksum ? ZMPI_SF_CHECKSUM : 0) | (ctx->message ? ZMPI_SF_MESSAGE : 0)};
    if (ops->inter)
        channel_begin(ch, ops, dtype, param, count, &plan);

    enc_run e = {.job = {.ops = ops, .checksum = ctx->checksum,
                         .lossless_eb0 = (ops->kind == ZMPI_KIND_BOUNDED && eb == 0.0),
                         .seg = {.dtype = dtype, .eb = eb, .param = param,
                                 .dim_r = ctx->row, .dim_p = ctx->plane}},
                 .src = src, .dst = dst, .dst_cap = dst_cap, .count = count, .seg = seg, .es = es,
                 .hist = plan.hist, .hes = plan.hes};
    put_header(dst, &e, nseg, plan.flags, plan.seq);
    ptrdiff_t total = encode_all(&e, nseg, hsize, threads);
    if (total < 0)
        return total; /* channel stays invalid: the next message resets */
    zc_put_u32(dst + 36, header_check(dst, nseg));
    if (ops->inter)
        channel_end(ch, &e, nseg, &plan);
    return total;
}

ptrdiff_t zmpi_compress(zmpi_ctx *ctx, const void *src, size_t count, zmpi_dtype dtype, void *dst,
                        size_t dst_cap)
{
    return compress_impl(ctx, NULL, src, count, dtype, dst, dst_cap);
}

ptrdiff_t zmpi_compress_channel(zmpi_ctx *ctx, zmpi_channel *ch, const void *src, size_t count,
                                zmpi_dtype dtype, void *dst, size_t dst_cap)
{
    return compress_impl(ctx, ch, src, count, dtype, dst, dst_cap);
}

/* ---- decoding ---- */

int zmpi_stream_info_get(const void *srcv, size_t size, zmpi_stream_info *info)
{
    const uint8_t *p = srcv;
    if (!p || !info)
        return ZMPI_ERR_ARG;
    if (size < HDR_SIZE || p[0] != MAGIC0 || p[1] != MAGIC1 || p[2] != MAGIC2 || p[3] != MAGIC3)
        return ZMPI_ERR_CORRUPT;
    if (p[4] != ZMPI_STREAM_VERSION)
        return ZMPI_ERR_VERSION;
    const zc_codec_ops *ops = zc_codec_get((zmpi_codec)p[5]);
    zmpi_dtype dtype = (zmpi_dtype)p[6];
    size_t es = zmpi_dtype_size(dtype);
    if (!ops || es == 0 || !(ops->dtypes & (1u << dtype)) || (p[7] & ~SF_KNOWN))
        return ZMPI_ERR_CORRUPT;
    uint64_t count = zc_get_u64(p + 8);
    double eb = zc_get_f64(p + 16);
    uint32_t param = zc_get_u32(p + 24), seg = zc_get_u32(p + 28), nseg = zc_get_u32(p + 32);
    if (count > (uint64_t)(PTRDIFF_MAX / 2) / es || seg == 0 || seg > (1u << 26))
        return ZMPI_ERR_CORRUPT;
    if (nseg != count / seg + (count % seg != 0))
        return ZMPI_ERR_CORRUPT;
    if (!(eb >= 0.0) || !isfinite(eb) || (ops->kind != ZMPI_KIND_BOUNDED && eb != 0.0))
        return ZMPI_ERR_CORRUPT;
    uint32_t chk;
    if (check_param(ops, dtype, param, &chk) != ZMPI_OK || chk != param)
        return ZMPI_ERR_CORRUPT;
    if (!ops->inter && (p[7] & ZMPI_SF_RESET))
        return ZMPI_ERR_CORRUPT;
    if (nseg > (size - HDR_SIZE) / IDX_ENTRY)
        return ZMPI_ERR_CORRUPT;
    size_t hsize = HDR_SIZE + (size_t)nseg * IDX_ENTRY;
    if (header_check(p, nseg) != zc_get_u32(p + 36))
        return ZMPI_ERR_CORRUPT;
    size_t total = hsize;
    for (uint32_t i = 0; i < nseg; i++) {
        uint32_t sz = zc_get_u32(p + HDR_SIZE + (size_t)IDX_ENTRY * i);
        if (sz == 0 || sz > size - total)
            return ZMPI_ERR_CORRUPT;
        if (!(p[7] & ZMPI_SF_CHECKSUM) && zc_get_u32(p + HDR_SIZE + (size_t)IDX_ENTRY * i + 4))
            return ZMPI_ERR_CORRUPT;
        total += sz;
    }
    info->codec = ops->id;
    info->dtype = dtype;
    info->count = count;
    info->eb = eb;
    info->param = param;
    info->segment = seg;
    info->nsegments = nseg;
    info->flags = p[7];
    info->seq = zc_get_u64(p + 40);
    info->header_size = hsize;
    info->stream_size = total;
    return ZMPI_OK;
}

static int decode_segment(const zc_codec_ops *ops, const zc_seg *s, const uint8_t *p, size_t sz,
                          uint32_t check, int checksum, void *dst)
{
    size_t raw = s->n * zmpi_dtype_size(s->dtype);
    if (checksum && seg_check(p, sz) != check)
        return ZMPI_ERR_CHECKSUM;
    switch (p[0]) {
    case SEG_STORED:
        if (sz != raw + 1)
            return ZMPI_ERR_CORRUPT;
        memcpy(dst, p + 1, raw);
        return ZMPI_OK;
    case SEG_ZSTD:
        return zc_zstd_decompress(p + 1, sz - 1, dst, raw);
    case SEG_CODEC:
        if (ops->kind == ZMPI_KIND_BOUNDED && s->eb == 0.0)
            return ZMPI_ERR_CORRUPT;
        return ops->decode(s, p + 1, sz - 1, dst);
    }
    return ZMPI_ERR_CORRUPT;
}

static ptrdiff_t decompress_impl(zmpi_ctx *ctx, zmpi_channel *ch, const void *srcv, size_t size,
                                 void *dstv, size_t dst_cap)
{
    const uint8_t *src = srcv;
    uint8_t *dst = dstv;
    zmpi_stream_info info;
    if (!ctx || !src)
        return ZMPI_ERR_ARG;
    int rc = zmpi_stream_info_get(src, size, &info);
    if (rc)
        return rc;
    if (info.stream_size != size)
        return ZMPI_ERR_CORRUPT; /* trailing bytes */
    const zc_codec_ops *ops = zc_codec_get(info.codec);
    size_t es = zmpi_dtype_size(info.dtype);
    size_t out = (size_t)info.count * es;
    if (out > dst_cap)
        return ZMPI_ERR_DST_TOO_SMALL;
    if (out > 0 && !dst)
        return ZMPI_ERR_ARG;
    if (ops->inter && !ch)
        return ZMPI_ERR_NEED_CHANNEL;

    const uint8_t *hist = NULL;
    size_t hes = 0;
    if (ops->inter) {
        hes = ops->hist_elem_size(info.dtype);
        if (!(info.flags & ZMPI_SF_RESET)) {
            int ok = ch->valid && ch->codec == info.codec && ch->dtype == info.dtype &&
                     ch->param == info.param && ch->count == info.count &&
                     ch->seq + 1 == info.seq;
            if (!ok) {
                ch->valid = 0;
                return ZMPI_ERR_CHANNEL;
            }
            hist = ch->buf;
        }
        ch->valid = 0;
    }

    size_t nseg = info.nsegments, seg = info.segment;
    int threads = resolve_threads(ctx->threads);
    if (threads > (int)nseg)
        threads = (int)(nseg ? nseg : 1);
    int checksum = (info.flags & ZMPI_SF_CHECKSUM) != 0;
    zc_seg base = {.dtype = info.dtype, .eb = info.eb, .param = info.param, .hist = NULL};

    if (threads <= 1) {
        size_t pos = info.header_size;
        for (size_t i = 0; i < nseg && !rc; i++) {
            zc_seg s = base;
            size_t off = i * seg;
            s.n = (size_t)info.count - off < seg ? (size_t)info.count - off : seg;
            s.hist = hist ? hist + off * hes : NULL;
            size_t sz = zc_get_u32(src + HDR_SIZE + IDX_ENTRY * i);
            rc = decode_segment(ops, &s, src + pos, sz, zc_get_u32(src + HDR_SIZE + IDX_ENTRY * i + 4),
                                checksum, dst + off * es);
            pos += sz;
        }
    } else {
        /* Offsets from the (validated) index, then segments in parallel. */
        int trc[256];
        if (threads > 256)
            threads = 256;
#ifdef ZMPI_HAVE_OPENMP
#pragma omp parallel for num_threads(threads) schedule(static, 1)
#endif
        for (int t = 0; t < threads; t++) {
            size_t s0 = nseg * (size_t)t / (size_t)threads, s1 = nseg * (size_t)(t + 1) / (size_t)threads;
            size_t pos = info.header_size;
            for (size_t i = 0; i < s0; i++)
                pos += zc_get_u32(src + HDR_SIZE + IDX_ENTRY * i);
            int lrc = 0;
            for (size_t i = s0; i < s1 && !lrc; i++) {
                zc_seg s = base;
                size_t off = i * seg;
                s.n = (size_t)info.count - off < seg ? (size_t)info.count - off : seg;
                s.hist = hist ? hist + off * hes : NULL;
                size_t sz = zc_get_u32(src + HDR_SIZE + IDX_ENTRY * i);
                lrc = decode_segment(ops, &s, src + pos, sz,
                                     zc_get_u32(src + HDR_SIZE + IDX_ENTRY * i + 4), checksum,
                                     dst + off * es);
                pos += sz;
            }
            trc[t] = lrc;
        }
        for (int t = 0; t < threads; t++)
            if (trc[t] && !rc)
                rc = trc[t];
    }
    if (rc)
        return rc;

    if (ops->inter) {
        size_t need = (size_t)info.count * hes;
        if (need > 0 && need <= ch->max_bytes && zc_channel_reserve(ch, need) == ZMPI_OK) {
            for (size_t i = 0; i < nseg; i++) {
                zc_seg s = base;
                size_t off = i * seg;
                s.n = (size_t)info.count - off < seg ? (size_t)info.count - off : seg;
                ops->hist_update(&s, dst + off * es, ch->buf + off * hes);
            }
            ch->valid = 1;
        }
        ch->codec = info.codec;
        ch->dtype = info.dtype;
        ch->param = info.param;
        ch->count = info.count;
        ch->seq = info.seq;
    }
    return (ptrdiff_t)out;
}

ptrdiff_t zmpi_decompress(zmpi_ctx *ctx, const void *src, size_t src_size, void *dst, size_t dst_cap)
{
    return decompress_impl(ctx, NULL, src, src_size, dst, dst_cap);
}

ptrdiff_t zmpi_decompress_channel(zmpi_ctx *ctx, zmpi_channel *ch, const void *src,
                                  size_t src_size, void *dst, size_t dst_cap)
{
    return decompress_impl(ctx, ch, src, src_size, dst, dst_cap);
}
