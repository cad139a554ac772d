/*
 * zmpi-codecbench - times zmpi codecs and reference codecs on one raw array.
 *
 * usage:
 *   zmpi-codecbench FILE [--dtype f32|f64] --codec LIST (--rel LIST | --abs LIST)
 *                   [--threads LIST] [--repeat R] [--segment N] [--block B]
 *                   [--shape AxBxC] [--min-time S]
 *   zmpi-codecbench --list [--dtype f32|f64]
 *   zmpi-codecbench --version
 *
 * FILE is a little-endian raw array in C order. The dtype defaults to the
 * file extension (.f32 / .f64); the shape (slowest dimension first, used by
 * the references ZFP and fpzip only) defaults to a trailing _AxBxC in the file
 * name, else 1-D.
 *
 * LIST is one value or several separated by commas. --codec takes zmpi codec
 * names (zmpi_codec_from_name), the references ref-zstd1 (zstd level 1),
 * ref-lz4 (LZ4 default), ref-zfp (ZFP fixed-accuracy, tolerance = the
 * absolute bound), ref-fpzip (fpzip lossless, full precision), or "all"
 * (every zmpi codec that accepts the dtype, then the four references).
 * Every bounded codec runs once per bound and thread count; lossless and
 * fixed-precision codecs ignore the bound and run once per thread count.
 * References are single-threaded and run only with threads 1.
 * A REL bound becomes the absolute bound rel * (max - min) of the finite
 * values; for zmpi codecs the bound the library stored in the stream is
 * reported and checked. Inter-step codecs (zmpi_codec_needs_channel) run
 * through zmpi_compress_channel / zmpi_decompress_channel with channels reset
 * before every run, so every message is a reset message. --segment sets
 * ZMPI_P_SEGMENT of the zmpi codecs, --block ZMPI_P_BLOCK of fzl (default:
 * the library's defaults).
 *
 * The file is loaded once. Every configuration is warmed up once (that run
 * is also the one checked for errors and quality), then R rounds follow; in
 * each round every configuration is compressed and decompressed once, in
 * round-robin order (the starting configuration rotates), so that machine
 * noise hits all codecs alike. With --min-time S > 0 one sample repeats the
 * operation back to back until it lasts about S seconds (for small arrays)
 * and records the mean per call. Times use CLOCK_MONOTONIC.
 *
 * Output: one JSON object per configuration and line on stdout, keys
 *   codec dtype file count rel eb ratio comp_gbps decomp_gbps max_abs_err
 *   max_err_over_eb psnr nrmse threads violations
 * plus kind shape bytes comp_bytes repeat inner_comp inner_decomp segment
 * nonfinite_mismatch comp_gbps_min comp_gbps_max decomp_gbps_min
 * decomp_gbps_max. Speeds are medians in GB/s of original data (1e9 bytes).
 * violations counts the elements with |x - x'| > eb (bounded codecs; a
 * non-finite value not reproduced bit-exactly also counts), the elements that
 * differ bit-wise (lossless codecs) or the non-finite values not reproduced
 * (fixed precision). Non-finite numbers (e.g. the PSNR of a lossless codec)
 * are written as null.
 *
 * Exit status: 0 if every configuration ran, 1 if some failed (each failure
 * is one line on stderr, the others are still reported), 2 for bad arguments
 * or an unreadable file.
 */
#define _POSIX_C_SOURCE 200809L

#include <zmpi/codec.h>

#include <errno.h>
#include <fpzip.h>
#include <limits.h>
#include <lz4.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zfp.h>
#include <zstd.h>

#define MAX_LIST 64
#define MAX_DIMS 8
#define ERRLEN 256

typedef enum ref_id { REF_NONE = 0, REF_ZSTD1, REF_LZ4, REF_ZFP, REF_FPZIP } ref_id;

typedef struct ref_info {
    const char *name;
    ref_id id;
    int kind;
    const char *description;
} ref_info;

static const ref_info REFS[] = {
    {"ref-zstd1", REF_ZSTD1, ZMPI_KIND_LOSSLESS, "reference: zstd level 1 on the raw bytes"},
    {"ref-lz4", REF_LZ4, ZMPI_KIND_LOSSLESS, "reference: LZ4 (LZ4_compress_default) on the raw bytes"},
    {"ref-zfp", REF_ZFP, ZMPI_KIND_BOUNDED, "reference: ZFP fixed-accuracy, tolerance = absolute bound"},
    {"ref-fpzip", REF_FPZIP, ZMPI_KIND_LOSSLESS, "reference: fpzip lossless (full precision)"},
};
#define NREFS (sizeof REFS / sizeof REFS[0])

typedef struct options {
    const char *file;
    int have_dtype;
    zmpi_dtype dtype;
    const char *codecs;
    const char *rels;
    const char *abss;
    const char *threads;
    const char *shape;
    int repeat;
    long long segment; /* 0: library default */
    long long block;   /* 0: library default */
    double min_time;
    int list;
} options;

typedef struct field {
    const char *path;
    const char *base;
    zmpi_dtype dtype;
    size_t esize, count, bytes;
    int ndims;
    size_t dims[3]; /* slowest first */
    void *data;
    double vmin, vmax; /* over the finite values */
    size_t nfinite;
} field;

typedef struct bench {
    /* what */
    char name[40];
    int zcodec; /* zmpi codec id, or -1 for a reference */
    ref_id ref;
    int kind;
    int channel;
    int shape;         /* fzr-shape: the field's shape as the codec's hint */
    zmpi_eb_mode mode; /* ZMPI_EB_NONE for unbounded codecs */
    double bound;      /* the REL or ABS value given */
    double eb;         /* absolute bound in use (0 if none) */
    int threads;
    /* state */
    zmpi_ctx *ctx;
    zmpi_channel *ch_send, *ch_recv;
    ZSTD_CCtx *zc;
    ZSTD_DCtx *zd;
    size_t cap;
    /* results */
    size_t comp_bytes;
    int inner_c, inner_d;
    double *t_comp, *t_decomp;
    zmpi_quality q;
    uint64_t violations;
    long long segment;
    int failed;
    char err[ERRLEN];
} bench;

/* ------------------------------------------------------------------ util */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void set_err(char *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, ERRLEN, fmt, ap);
    va_end(ap);
}

static void zerr(char *err, const char *what, long long code)
{
    set_err(err, "%s: %s (%s)", what, zmpi_error_name((int)code), zmpi_strerror((int)code));
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static int parse_ll(const char *s, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE)
        return -1;
    *out = v;
    return 0;
}

/* Splits a comma list into at most MAX_LIST items copied into buf. */
static int split_list(const char *s, char *buf, size_t buflen, char **items)
{
    size_t len = strlen(s);
    if (len + 1 > buflen)
        return -1;
    memcpy(buf, s, len + 1);
    int n = 0;
    char *p = buf;
    for (;;) {
        char *c = strchr(p, ',');
        if (c)
            *c = '\0';
        if (*p == '\0' || n == MAX_LIST)
            return -1;
        items[n++] = p;
        if (!c)
            break;
        p = c + 1;
    }
    return n;
}

static double median(const double *v, int n, double *tmp)
{
    memcpy(tmp, v, (size_t)n * sizeof *tmp);
    for (int i = 1; i < n; i++) { /* insertion sort: n is small */
        double x = tmp[i];
        int j = i - 1;
        while (j >= 0 && tmp[j] > x) {
            tmp[j + 1] = tmp[j];
            j--;
        }
        tmp[j + 1] = x;
    }
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

static const char *kind_name(int kind)
{
    switch (kind) {
    case ZMPI_KIND_LOSSLESS: return "lossless";
    case ZMPI_KIND_BOUNDED: return "bounded";
    case ZMPI_KIND_FIXED: return "fixed";
    default: return "unknown";
    }
}

static const char *dtype_name(zmpi_dtype d) { return d == ZMPI_DOUBLE ? "f64" : "f32"; }

static const ref_info *find_ref(const char *name)
{
    for (size_t i = 0; i < NREFS; i++)
        if (strcmp(REFS[i].name, name) == 0)
            return &REFS[i];
    return NULL;
}

/* ------------------------------------------------------------------ args */

static void usage(FILE *o)
{
    fputs("usage: zmpi-codecbench FILE [--dtype f32|f64] --codec LIST (--rel LIST | --abs LIST)\n"
          "                       [--threads LIST] [--repeat R] [--segment N] [--block B]\n"
          "                       [--shape AxBxC] [--min-time S]\n"
          "       zmpi-codecbench --list [--dtype f32|f64]\n"
          "       zmpi-codecbench --version\n"
          "LIST: comma-separated values; codecs are zmpi codec names, ref-zstd1, ref-lz4,\n"
          "ref-zfp, ref-fpzip, or all. Prints one JSON object per configuration.\n",
          o);
}

static int parse_args(int argc, char **argv, options *o, char *err)
{
    memset(o, 0, sizeof *o);
    o->repeat = 5;
    o->threads = "1";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(a, "--list") == 0) {
            o->list = 1;
            continue;
        }
        if (strcmp(a, "--version") == 0) {
            printf("zmpi %s, zstd %s, lz4 %s, zfp %s, fpzip %s\n", zmpi_version(),
                   ZSTD_versionString(), LZ4_versionString(), ZFP_VERSION_STRING,
                   FPZIP_VERSION_STRING);
            exit(0);
        }
        if (strncmp(a, "--", 2) != 0) {
            if (o->file) {
                set_err(err, "more than one input file given ('%s' and '%s')", o->file, a);
                return -1;
            }
            o->file = a;
            continue;
        }
        /* options with a value: --opt VALUE or --opt=VALUE */
        const char *val = NULL;
        char key[32];
        const char *eq = strchr(a, '=');
        if (eq) {
            size_t kl = (size_t)(eq - a);
            if (kl >= sizeof key) {
                set_err(err, "unknown option '%s'", a);
                return -1;
            }
            memcpy(key, a, kl);
            key[kl] = '\0';
            val = eq + 1;
        } else {
            if (strlen(a) >= sizeof key) {
                set_err(err, "unknown option '%s'", a);
                return -1;
            }
            strcpy(key, a);
        }
        static const char *const known[] = {"--dtype", "--codec", "--rel", "--abs", "--threads",
                                            "--repeat", "--segment", "--block", "--shape",
                                            "--min-time"};
        int ok = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++)
            ok |= strcmp(key, known[k]) == 0;
        if (!ok) {
            set_err(err, "unknown option '%s' (see --help)", a);
            return -1;
        }
        if (!val) {
            if (i + 1 >= argc) {
                set_err(err, "option %s needs a value", key);
                return -1;
            }
            val = argv[++i];
        }
        if (strcmp(key, "--dtype") == 0) {
            if (strcmp(val, "f32") == 0 || strcmp(val, "float") == 0)
                o->dtype = ZMPI_FLOAT;
            else if (strcmp(val, "f64") == 0 || strcmp(val, "double") == 0)
                o->dtype = ZMPI_DOUBLE;
            else {
                set_err(err, "--dtype must be f32 or f64, not '%s'", val);
                return -1;
            }
            o->have_dtype = 1;
        } else if (strcmp(key, "--codec") == 0) {
            o->codecs = val;
        } else if (strcmp(key, "--rel") == 0) {
            o->rels = val;
        } else if (strcmp(key, "--abs") == 0) {
            o->abss = val;
        } else if (strcmp(key, "--threads") == 0) {
            o->threads = val;
        } else if (strcmp(key, "--shape") == 0) {
            o->shape = val;
        } else if (strcmp(key, "--repeat") == 0) {
            long long r;
            if (parse_ll(val, &r) || r < 1 || r > 100000) {
                set_err(err, "--repeat must be an integer in 1..100000, not '%s'", val);
                return -1;
            }
            o->repeat = (int)r;
        } else if (strcmp(key, "--segment") == 0) {
            if (parse_ll(val, &o->segment) || o->segment < 1) {
                set_err(err, "--segment must be a positive integer, not '%s'", val);
                return -1;
            }
        } else if (strcmp(key, "--block") == 0) {
            if (parse_ll(val, &o->block) || o->block < 1) {
                set_err(err, "--block must be a positive integer, not '%s'", val);
                return -1;
            }
        } else if (strcmp(key, "--min-time") == 0) {
            if (parse_double(val, &o->min_time) || o->min_time < 0 || o->min_time > 60) {
                set_err(err, "--min-time must be a number of seconds in 0..60, not '%s'", val);
                return -1;
            }
        }
    }
    if (o->list)
        return 0;
    if (!o->file) {
        set_err(err, "no input file given (see --help)");
        return -1;
    }
    if (!o->codecs) {
        set_err(err, "no --codec given (see --help)");
        return -1;
    }
    if (o->rels && o->abss) {
        set_err(err, "give --rel or --abs, not both");
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------ input */

static int parse_dims(const char *s, size_t len, size_t *dims, int *nd)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        unsigned long long v = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9') {
            v = v * 10 + (unsigned)(s[i] - '0');
            if (v > (1ull << 40))
                return -1;
            i++;
        }
        if (v == 0 || n == MAX_DIMS)
            return -1;
        dims[n++] = (size_t)v;
        if (i < len) {
            if (s[i] != 'x')
                return -1;
            i++;
            if (i == len)
                return -1;
        }
    }
    *nd = n;
    return n > 0 ? 0 : -1;
}

/* Trailing _AxBxC before the extension of a base name; -1 if none. */
static int shape_from_name(const char *base, size_t *dims, int *nd)
{
    const char *dot = strrchr(base, '.');
    size_t end = dot ? (size_t)(dot - base) : strlen(base);
    const char *us = NULL;
    for (size_t i = 0; i < end; i++)
        if (base[i] == '_')
            us = base + i;
    if (!us)
        return -1;
    return parse_dims(us + 1, end - (size_t)(us + 1 - base), dims, nd);
}

static int load_field(const options *o, field *f, char *err)
{
    memset(f, 0, sizeof *f);
    f->path = o->file;
    const char *slash = strrchr(o->file, '/');
    f->base = slash ? slash + 1 : o->file;
    const char *dot = strrchr(f->base, '.');
    if (o->have_dtype)
        f->dtype = o->dtype;
    else if (dot && strcmp(dot, ".f32") == 0)
        f->dtype = ZMPI_FLOAT;
    else if (dot && strcmp(dot, ".f64") == 0)
        f->dtype = ZMPI_DOUBLE;
    else {
        set_err(err, "%s: cannot tell the dtype from the name, give --dtype f32|f64", o->file);
        return -1;
    }
    f->esize = zmpi_dtype_size(f->dtype);

    FILE *fp = fopen(o->file, "rb");
    if (!fp) {
        set_err(err, "%s: %s", o->file, strerror(errno));
        return -1;
    }
    long long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0)
        size = ftell(fp);
    if (size < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        set_err(err, "%s: cannot determine the file size", o->file);
        fclose(fp);
        return -1;
    }
    if (size == 0 || (size_t)size % f->esize != 0) {
        set_err(err, "%s: size %lld is not a positive multiple of %zu bytes (%s)", o->file, size,
                f->esize, dtype_name(f->dtype));
        fclose(fp);
        return -1;
    }
    f->bytes = (size_t)size;
    f->count = f->bytes / f->esize;
    f->data = aligned_alloc(64, (f->bytes + 63) / 64 * 64);
    if (!f->data) {
        set_err(err, "%s: out of memory (%zu bytes)", o->file, f->bytes);
        fclose(fp);
        return -1;
    }
    size_t got = fread(f->data, 1, f->bytes, fp);
    fclose(fp);
    if (got != f->bytes) {
        set_err(err, "%s: short read (%zu of %zu bytes)", o->file, got, f->bytes);
        return -1;
    }

    size_t dims[MAX_DIMS];
    int nd = 0;
    if (o->shape) {
        if (parse_dims(o->shape, strlen(o->shape), dims, &nd)) {
            set_err(err, "--shape must look like 17x96x192, not '%s'", o->shape);
            return -1;
        }
    } else if (shape_from_name(f->base, dims, &nd)) {
        dims[0] = f->count;
        nd = 1;
    }
    size_t prod = 1;
    for (int i = 0; i < nd; i++)
        prod *= dims[i];
    if (prod != f->count) {
        set_err(err, "%s: shape %s gives %zu elements but the file holds %zu %s values", o->file,
                o->shape ? o->shape : "from the file name", prod, f->count,
                dtype_name(f->dtype));
        return -1;
    }
    while (nd > 3) { /* fold the slowest dimensions together */
        dims[1] *= dims[0];
        memmove(dims, dims + 1, (size_t)(nd - 1) * sizeof dims[0]);
        nd--;
    }
    f->ndims = nd;
    memcpy(f->dims, dims, (size_t)nd * sizeof dims[0]);

    double mn = INFINITY, mx = -INFINITY;
    size_t nf = 0;
    for (size_t i = 0; i < f->count; i++) {
        double v = f->dtype == ZMPI_FLOAT ? (double)((const float *)f->data)[i]
                                          : ((const double *)f->data)[i];
        if (isfinite(v)) {
            nf++;
            if (v < mn)
                mn = v;
            if (v > mx)
                mx = v;
        }
    }
    f->vmin = mn;
    f->vmax = mx;
    f->nfinite = nf;
    return 0;
}

/* --------------------------------------------------------------- codecs */

/* fpzip / zfp dimensions, fastest first. */
static void dims_fast_first(const field *f, size_t *nx, size_t *ny, size_t *nz)
{
    *nx = f->dims[f->ndims - 1];
    *ny = f->ndims >= 2 ? f->dims[f->ndims - 2] : 1;
    *nz = f->ndims >= 3 ? f->dims[f->ndims - 3] : 1;
}

static zfp_field *make_zfp_field(const field *f, void *ptr)
{
    size_t nx, ny, nz;
    dims_fast_first(f, &nx, &ny, &nz);
    zfp_type t = f->dtype == ZMPI_FLOAT ? zfp_type_float : zfp_type_double;
    if (f->ndims == 1)
        return zfp_field_1d(ptr, t, nx);
    if (f->ndims == 2)
        return zfp_field_2d(ptr, t, nx, ny);
    return zfp_field_3d(ptr, t, nx, ny, nz);
}

static int zfp_comp(const bench *b, const field *f, void *dst, size_t cap, size_t *len, char *err)
{
    int rc = -1;
    zfp_field *zf = make_zfp_field(f, f->data);
    zfp_stream *zs = zfp_stream_open(NULL);
    bitstream *bs = stream_open(dst, cap);
    if (!zf || !zs || !bs) {
        set_err(err, "zfp: out of memory");
        goto out;
    }
    zfp_stream_set_accuracy(zs, b->eb);
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    if (!zfp_write_header(zs, zf, ZFP_HEADER_FULL)) {
        set_err(err, "zfp_write_header failed");
        goto out;
    }
    size_t n = zfp_compress(zs, zf);
    if (n == 0) {
        set_err(err, "zfp_compress failed");
        goto out;
    }
    *len = n;
    rc = 0;
out:
    if (bs)
        stream_close(bs);
    if (zs)
        zfp_stream_close(zs);
    if (zf)
        zfp_field_free(zf);
    return rc;
}

static int zfp_decomp(const field *f, const void *src, size_t len, void *out, char *err)
{
    int rc = -1;
    zfp_field *zf = zfp_field_alloc();
    zfp_stream *zs = zfp_stream_open(NULL);
    bitstream *bs = stream_open((void *)src, len);
    if (!zf || !zs || !bs) {
        set_err(err, "zfp: out of memory");
        goto out;
    }
    zfp_stream_set_bit_stream(zs, bs);
    zfp_stream_rewind(zs);
    if (!zfp_read_header(zs, zf, ZFP_HEADER_FULL)) {
        set_err(err, "zfp_read_header failed");
        goto out;
    }
    zfp_type want = f->dtype == ZMPI_FLOAT ? zfp_type_float : zfp_type_double;
    if (zfp_field_type(zf) != want || zfp_field_size(zf, NULL) != f->count) {
        set_err(err, "zfp stream does not describe the input array");
        goto out;
    }
    zfp_field_set_pointer(zf, out);
    if (zfp_decompress(zs, zf) == 0) {
        set_err(err, "zfp_decompress failed");
        goto out;
    }
    rc = 0;
out:
    if (bs)
        stream_close(bs);
    if (zs)
        zfp_stream_close(zs);
    if (zf)
        zfp_field_free(zf);
    return rc;
}

static const char *fpzip_msg(void)
{
    int e = (int)fpzip_errno;
    return e >= 0 && e <= (int)fpzipErrorInternal ? fpzip_errstr[e] : "unknown fpzip error";
}

static void fpzip_setup(FPZ *fpz, const field *f)
{
    size_t nx, ny, nz;
    dims_fast_first(f, &nx, &ny, &nz);
    fpz->type = f->dtype == ZMPI_FLOAT ? FPZIP_TYPE_FLOAT : FPZIP_TYPE_DOUBLE;
    fpz->prec = 0; /* full precision: lossless */
    fpz->nx = (int)nx;
    fpz->ny = (int)ny;
    fpz->nz = (int)nz;
    fpz->nf = 1;
}

static int fpzip_comp(const field *f, void *dst, size_t cap, size_t *len, char *err)
{
    FPZ *fpz = fpzip_write_to_buffer(dst, cap);
    if (!fpz) {
        set_err(err, "fpzip_write_to_buffer: %s", fpzip_msg());
        return -1;
    }
    fpzip_setup(fpz, f);
    size_t n = 0;
    if (fpzip_write_header(fpz))
        n = fpzip_write(fpz, f->data);
    fpzip_write_close(fpz);
    if (n == 0) {
        set_err(err, "fpzip_write: %s", fpzip_msg());
        return -1;
    }
    *len = n;
    return 0;
}

static int fpzip_decomp(const field *f, const void *src, void *out, char *err)
{
    FPZ *fpz = fpzip_read_from_buffer(src);
    if (!fpz) {
        set_err(err, "fpzip_read_from_buffer: %s", fpzip_msg());
        return -1;
    }
    int rc = -1;
    if (!fpzip_read_header(fpz)) {
        set_err(err, "fpzip_read_header: %s", fpzip_msg());
    } else {
        FPZ want;
        fpzip_setup(&want, f);
        if (fpz->type != want.type || fpz->nx != want.nx || fpz->ny != want.ny ||
            fpz->nz != want.nz || fpz->nf != 1) {
            set_err(err, "fpzip stream does not describe the input array");
        } else if (fpzip_read(fpz, out) == 0) {
            set_err(err, "fpzip_read: %s", fpzip_msg());
        } else {
            rc = 0;
        }
    }
    fpzip_read_close(fpz);
    return rc;
}

/* One compression of the whole array into dst. */
static int do_compress(bench *b, const field *f, void *dst, size_t cap, size_t *len)
{
    switch (b->ref) {
    case REF_NONE: {
        ptrdiff_t r;
        if (b->channel) {
            zmpi_channel_reset(b->ch_send); /* a fresh channel: the message is a reset */
            r = zmpi_compress_channel(b->ctx, b->ch_send, f->data, f->count, f->dtype, dst, cap);
        } else {
            r = zmpi_compress(b->ctx, f->data, f->count, f->dtype, dst, cap);
        }
        if (r < 0) {
            zerr(b->err, b->channel ? "zmpi_compress_channel" : "zmpi_compress", r);
            return -1;
        }
        *len = (size_t)r;
        return 0;
    }
    case REF_ZSTD1: {
        size_t r = ZSTD_compressCCtx(b->zc, dst, cap, f->data, f->bytes, 1);
        if (ZSTD_isError(r)) {
            set_err(b->err, "ZSTD_compressCCtx: %s", ZSTD_getErrorName(r));
            return -1;
        }
        *len = r;
        return 0;
    }
    case REF_LZ4: {
        int r = LZ4_compress_default(f->data, dst, (int)f->bytes, (int)(cap > INT_MAX ? INT_MAX : cap));
        if (r <= 0) {
            set_err(b->err, "LZ4_compress_default failed");
            return -1;
        }
        *len = (size_t)r;
        return 0;
    }
    case REF_ZFP:
        return zfp_comp(b, f, dst, cap, len, b->err);
    case REF_FPZIP:
        return fpzip_comp(f, dst, cap, len, b->err);
    }
    return -1;
}

/* One decompression of len bytes into out (f->bytes long). */
static int do_decompress(bench *b, const field *f, const void *src, size_t len, void *out)
{
    switch (b->ref) {
    case REF_NONE: {
        ptrdiff_t r;
        if (b->channel) {
            zmpi_channel_reset(b->ch_recv);
            r = zmpi_decompress_channel(b->ctx, b->ch_recv, src, len, out, f->bytes);
        } else {
            r = zmpi_decompress(b->ctx, src, len, out, f->bytes);
        }
        if (r < 0) {
            zerr(b->err, b->channel ? "zmpi_decompress_channel" : "zmpi_decompress", r);
            return -1;
        }
        if ((size_t)r != f->bytes) {
            set_err(b->err, "zmpi_decompress returned %td bytes, expected %zu", r, f->bytes);
            return -1;
        }
        return 0;
    }
    case REF_ZSTD1: {
        size_t r = ZSTD_decompressDCtx(b->zd, out, f->bytes, src, len);
        if (ZSTD_isError(r) || r != f->bytes) {
            set_err(b->err, "ZSTD_decompressDCtx: %s",
                    ZSTD_isError(r) ? ZSTD_getErrorName(r) : "wrong size");
            return -1;
        }
        return 0;
    }
    case REF_LZ4: {
        int r = LZ4_decompress_safe(src, out, (int)len, (int)f->bytes);
        if (r < 0 || (size_t)r != f->bytes) {
            set_err(b->err, "LZ4_decompress_safe failed");
            return -1;
        }
        return 0;
    }
    case REF_ZFP:
        return zfp_decomp(f, src, len, out, b->err);
    case REF_FPZIP:
        return fpzip_decomp(f, src, out, b->err);
    }
    return -1;
}

/* Creates the codec state and the worst-case stream size. */
static int bench_setup(bench *b, const field *f, const options *o)
{
    if (b->ref == REF_NONE) {
        b->ctx = zmpi_ctx_create();
        if (!b->ctx) {
            set_err(b->err, "zmpi_ctx_create: out of memory");
            return -1;
        }
        int rc = zmpi_ctx_set_codec(b->ctx, (zmpi_codec)b->zcodec);
        if (rc < 0) {
            zerr(b->err, "zmpi_ctx_set_codec", rc);
            return -1;
        }
        if (b->mode != ZMPI_EB_NONE) {
            rc = zmpi_ctx_set_bound(b->ctx, b->mode, b->bound);
            if (rc < 0) {
                zerr(b->err, "zmpi_ctx_set_bound", rc);
                return -1;
            }
        }
        if (b->shape && (rc = zmpi_ctx_set_dims(b->ctx, f->ndims, f->dims)) != ZMPI_OK) {
            zerr(b->err, "zmpi_ctx_set_dims", rc);
            return -1;
        }
        long long t = zmpi_ctx_set_param(b->ctx, ZMPI_P_THREADS, b->threads);
        if (t < 0) {
            zerr(b->err, "zmpi_ctx_set_param(ZMPI_P_THREADS)", t);
            return -1;
        }
        if (t != b->threads)
            fprintf(stderr, "zmpi-codecbench: %s: asked for %d threads, the library uses %lld\n",
                    b->name, b->threads, t);
        b->threads = (int)t;
        if (o->segment) {
            long long s = zmpi_ctx_set_param(b->ctx, ZMPI_P_SEGMENT, o->segment);
            if (s < 0) {
                zerr(b->err, "zmpi_ctx_set_param(ZMPI_P_SEGMENT)", s);
                return -1;
            }
        }
        if (o->block && b->zcodec == ZMPI_CODEC_FZL) {
            long long s = zmpi_ctx_set_param(b->ctx, ZMPI_P_BLOCK, o->block);
            if (s < 0) {
                zerr(b->err, "zmpi_ctx_set_param(ZMPI_P_BLOCK)", s);
                return -1;
            }
        }
        b->segment = zmpi_ctx_get_param(b->ctx, ZMPI_P_SEGMENT);
        if (b->channel) {
            b->ch_send = zmpi_channel_create(0);
            b->ch_recv = zmpi_channel_create(0);
            if (!b->ch_send || !b->ch_recv) {
                set_err(b->err, "zmpi_channel_create: out of memory");
                return -1;
            }
        }
        b->cap = zmpi_max_compressed_size(b->ctx, f->count, f->dtype);
        if (b->cap == 0) {
            set_err(b->err, "zmpi_max_compressed_size returned 0");
            return -1;
        }
        return 0;
    }
    b->segment = -1;
    switch (b->ref) {
    case REF_ZSTD1:
        b->zc = ZSTD_createCCtx();
        b->zd = ZSTD_createDCtx();
        if (!b->zc || !b->zd) {
            set_err(b->err, "ZSTD_createCCtx: out of memory");
            return -1;
        }
        b->cap = ZSTD_compressBound(f->bytes);
        return 0;
    case REF_LZ4:
        if (f->bytes > (size_t)LZ4_MAX_INPUT_SIZE) {
            set_err(b->err, "input too large for LZ4 (%zu bytes)", f->bytes);
            return -1;
        }
        b->cap = (size_t)LZ4_compressBound((int)f->bytes);
        return 0;
    case REF_ZFP: {
        if (!(b->eb > 0)) {
            set_err(b->err, "ZFP needs a positive absolute bound (constant array?)");
            return -1;
        }
        zfp_field *zf = make_zfp_field(f, f->data);
        zfp_stream *zs = zfp_stream_open(NULL);
        if (!zf || !zs) {
            if (zf)
                zfp_field_free(zf);
            if (zs)
                zfp_stream_close(zs);
            set_err(b->err, "zfp: out of memory");
            return -1;
        }
        zfp_stream_set_accuracy(zs, b->eb);
        b->cap = zfp_stream_maximum_size(zs, zf) + 64;
        zfp_stream_close(zs);
        zfp_field_free(zf);
        return 0;
    }
    case REF_FPZIP: {
        size_t nx, ny, nz;
        dims_fast_first(f, &nx, &ny, &nz);
        if (nx > INT_MAX || ny > INT_MAX || nz > INT_MAX) {
            set_err(b->err, "array dimensions too large for fpzip");
            return -1;
        }
        b->cap = f->bytes + f->bytes / 2 + 4096;
        return 0;
    }
    case REF_NONE:
        break;
    }
    return -1;
}

static void bench_free(bench *b)
{
    zmpi_ctx_free(b->ctx);
    zmpi_channel_free(b->ch_send);
    zmpi_channel_free(b->ch_recv);
    ZSTD_freeCCtx(b->zc);
    ZSTD_freeDCtx(b->zd);
    free(b->t_comp);
    free(b->t_decomp);
}

/* Checks a reconstruction: quality, bound violations, byte identity. */
static int evaluate(bench *b, const field *f, const void *stream, size_t len, const void *rec)
{
    if (b->ref == REF_NONE && b->kind == ZMPI_KIND_BOUNDED) {
        zmpi_stream_info info;
        int rc = zmpi_stream_info_get(stream, len, &info);
        if (rc < 0) {
            zerr(b->err, "zmpi_stream_info_get", rc);
            return -1;
        }
        if (b->mode == ZMPI_EB_REL) {
            double mine = b->bound * (f->vmax - f->vmin);
            if (fabs(info.eb - mine) > 1e-9 * fabs(mine))
                fprintf(stderr,
                        "zmpi-codecbench: %s: stream eb %.17g differs from rel*(max-min) = %.17g\n",
                        b->name, info.eb, mine);
        }
        b->eb = info.eb;
    }
    int rc = zmpi_quality_compare(f->data, rec, f->count, f->dtype, &b->q);
    if (rc < 0) {
        zerr(b->err, "zmpi_quality_compare", rc);
        return -1;
    }
    uint64_t viol = 0;
    if (b->kind == ZMPI_KIND_LOSSLESS) {
        for (size_t i = 0; i < f->count; i++)
            viol += (uint64_t)(memcmp((const char *)f->data + i * f->esize,
                                      (const char *)rec + i * f->esize, f->esize) != 0);
    } else {
        for (size_t i = 0; i < f->count; i++) {
            double x, y;
            int bits_differ;
            if (f->dtype == ZMPI_FLOAT) {
                float a = ((const float *)f->data)[i], c = ((const float *)rec)[i];
                x = a;
                y = c;
                bits_differ = memcmp(&a, &c, sizeof a) != 0;
            } else {
                double a = ((const double *)f->data)[i], c = ((const double *)rec)[i];
                x = a;
                y = c;
                bits_differ = memcmp(&a, &c, sizeof a) != 0;
            }
            if (!isfinite(x))
                viol += (uint64_t)bits_differ;
            else if (b->kind == ZMPI_KIND_BOUNDED)
                viol += (uint64_t)(!isfinite(y) || fabs(x - y) > b->eb);
        }
    }
    b->violations = viol;
    return 0;
}

/* ------------------------------------------------------------------ output */

typedef struct json_out {
    FILE *f;
    int first;
} json_out;

static void json_key(json_out *j, const char *key)
{
    fprintf(j->f, "%s\"%s\":", j->first ? "{" : ",", key);
    j->first = 0;
}

static void json_str(json_out *j, const char *key, const char *s)
{
    json_key(j, key);
    fputc('"', j->f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(j->f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(j->f, "\\u%04x", *p);
        else
            fputc(*p, j->f);
    }
    fputc('"', j->f);
}

static void json_num(json_out *j, const char *key, double v)
{
    json_key(j, key);
    if (isfinite(v))
        fprintf(j->f, "%.10g", v);
    else
        fputs("null", j->f);
}

static void json_int(json_out *j, const char *key, long long v)
{
    json_key(j, key);
    fprintf(j->f, "%lld", v);
}

static void print_result(const bench *b, const field *f, int repeat)
{
    double *tmp = malloc((size_t)repeat * sizeof *tmp);
    if (!tmp)
        return;
    double tc = median(b->t_comp, repeat, tmp), td = median(b->t_decomp, repeat, tmp);
    double tc_lo = b->t_comp[0], tc_hi = b->t_comp[0];
    double td_lo = b->t_decomp[0], td_hi = b->t_decomp[0];
    for (int i = 1; i < repeat; i++) {
        tc_lo = fmin(tc_lo, b->t_comp[i]);
        tc_hi = fmax(tc_hi, b->t_comp[i]);
        td_lo = fmin(td_lo, b->t_decomp[i]);
        td_hi = fmax(td_hi, b->t_decomp[i]);
    }
    free(tmp);
    double gb = (double)f->bytes / 1e9;
    char shape[96] = "";
    size_t pos = 0;
    for (int i = 0; i < f->ndims && pos < sizeof shape; i++)
        pos += (size_t)snprintf(shape + pos, sizeof shape - pos, "%s%zu", i ? "x" : "", f->dims[i]);

    json_out j = {stdout, 1};
    json_str(&j, "codec", b->name);
    json_str(&j, "kind", kind_name(b->kind));
    json_str(&j, "dtype", dtype_name(f->dtype));
    json_str(&j, "file", f->base);
    json_str(&j, "shape", shape);
    json_int(&j, "count", (long long)f->count);
    json_int(&j, "bytes", (long long)f->bytes);
    if (b->mode == ZMPI_EB_REL)
        json_num(&j, "rel", b->bound);
    else if (b->mode == ZMPI_EB_ABS)
        json_num(&j, "rel", b->bound / (f->vmax - f->vmin));
    else
        json_num(&j, "rel", NAN);
    json_num(&j, "eb", b->kind == ZMPI_KIND_BOUNDED ? b->eb : 0.0);
    json_int(&j, "comp_bytes", (long long)b->comp_bytes);
    json_num(&j, "ratio", (double)f->bytes / (double)b->comp_bytes);
    json_num(&j, "comp_gbps", gb / tc);
    json_num(&j, "decomp_gbps", gb / td);
    json_num(&j, "comp_gbps_min", gb / tc_hi);
    json_num(&j, "comp_gbps_max", gb / tc_lo);
    json_num(&j, "decomp_gbps_min", gb / td_hi);
    json_num(&j, "decomp_gbps_max", gb / td_lo);
    json_num(&j, "max_abs_err", b->q.max_abs_err);
    json_num(&j, "max_err_over_eb",
             b->kind == ZMPI_KIND_BOUNDED && b->eb > 0 ? b->q.max_abs_err / b->eb : NAN);
    json_num(&j, "psnr", b->q.psnr);
    json_num(&j, "nrmse", b->q.nrmse);
    json_int(&j, "threads", b->threads);
    json_int(&j, "segment", b->segment);
    json_int(&j, "repeat", repeat);
    json_int(&j, "inner_comp", b->inner_c);
    json_int(&j, "inner_decomp", b->inner_d);
    json_int(&j, "nonfinite_mismatch", (long long)b->q.nonfinite_mismatch);
    json_int(&j, "violations", (long long)b->violations);
    fputs("}\n", stdout);
    fflush(stdout);
}

/* ------------------------------------------------------------------ codecs list */

/* 1 if a zmpi codec accepts dtype (tried on a small ramp), else 0. */
static int zmpi_accepts(int codec, zmpi_dtype dtype)
{
    enum { N = 256 };
    double dbuf[N];
    float fbuf[N];
    for (int i = 0; i < N; i++) {
        dbuf[i] = 1.0 + 0.01 * i;
        fbuf[i] = (float)dbuf[i];
    }
    zmpi_ctx *c = zmpi_ctx_create();
    zmpi_channel *ch = zmpi_channel_create(0);
    int ok = 0;
    if (c && ch && zmpi_ctx_set_codec(c, (zmpi_codec)codec) == ZMPI_OK) {
        if (zmpi_codec_kind((zmpi_codec)codec) == ZMPI_KIND_BOUNDED)
            zmpi_ctx_set_bound(c, ZMPI_EB_REL, 1e-3);
        size_t cap = zmpi_max_compressed_size(c, N, dtype);
        void *buf = cap ? malloc(cap) : NULL;
        if (buf) {
            ptrdiff_t r = zmpi_compress_channel(c, ch, dtype == ZMPI_FLOAT ? (void *)fbuf : (void *)dbuf,
                                                N, dtype, buf, cap);
            ok = r != ZMPI_ERR_DTYPE;
            free(buf);
        }
    }
    zmpi_channel_free(ch);
    zmpi_ctx_free(c);
    return ok;
}

/* The variant of fzr that gets the field's shape (zmpi_ctx_set_dims). */
#define SHAPE_VARIANT "fzr-shape"

static void print_list(const options *o)
{
    for (int c = 0; c < (int)ZMPI_CODEC_COUNT_; c++) {
        const char *name = zmpi_codec_name((zmpi_codec)c);
        if (!name)
            continue;
        int f32 = zmpi_accepts(c, ZMPI_FLOAT), f64 = zmpi_accepts(c, ZMPI_DOUBLE);
        if (o->have_dtype && !(o->dtype == ZMPI_FLOAT ? f32 : f64))
            continue;
        const char *desc = zmpi_codec_description((zmpi_codec)c);
        printf("%s\t%s\t%s\t%s\t%s\n", name, kind_name(zmpi_codec_kind((zmpi_codec)c)),
               f32 && f64 ? "f32,f64" : f32 ? "f32" : f64 ? "f64" : "-",
               zmpi_codec_needs_channel((zmpi_codec)c) ? "channel" : "-", desc ? desc : "");
    }
    printf("%s\t%s\tf32,f64\t-\t%s\n", SHAPE_VARIANT, kind_name(ZMPI_KIND_BOUNDED),
           "fzr given the field's shape as hint (2-D / 3-D Lorenzo)");
    for (size_t i = 0; i < NREFS; i++)
        printf("%s\t%s\tf32,f64\t-\t%s\n", REFS[i].name, kind_name(REFS[i].kind),
               REFS[i].description);
}

/* ------------------------------------------------------------------ main */

typedef struct codec_sel {
    char name[40];
    int zcodec;
    ref_id ref;
    int kind;
    int channel;
    int shape;
} codec_sel;

static int add_codec(codec_sel *sel, int *n, const char *name, char *err)
{
    if (*n == MAX_LIST) {
        set_err(err, "too many codecs (at most %d)", MAX_LIST);
        return -1;
    }
    codec_sel *s = &sel[*n];
    memset(s, 0, sizeof *s);
    if (strlen(name) >= sizeof s->name) {
        set_err(err, "unknown codec '%s' (see --list)", name);
        return -1;
    }
    const ref_info *r = find_ref(name);
    if (strcmp(name, SHAPE_VARIANT) == 0) {
        s->zcodec = ZMPI_CODEC_FZR;
        s->ref = REF_NONE;
        s->kind = ZMPI_KIND_BOUNDED;
        s->shape = 1;
    } else if (r) {
        s->zcodec = -1;
        s->ref = r->id;
        s->kind = r->kind;
    } else {
        int id = zmpi_codec_from_name(name);
        if (id < 0) {
            set_err(err, "unknown codec '%s' (see --list)", name);
            return -1;
        }
        s->zcodec = id;
        s->ref = REF_NONE;
        s->kind = zmpi_codec_kind((zmpi_codec)id);
        s->channel = zmpi_codec_needs_channel((zmpi_codec)id) == 1;
    }
    memcpy(s->name, name, strlen(name) + 1);
    (*n)++;
    return 0;
}

static int build_benches(const options *o, const field *f, bench **out, int *nout, char *err)
{
    char buf[4096];
    char *items[MAX_LIST];
    codec_sel sel[MAX_LIST];
    int nsel = 0;

    int n = split_list(o->codecs, buf, sizeof buf, items);
    if (n < 0) {
        set_err(err, "bad --codec list '%s'", o->codecs);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (strcmp(items[i], "all") == 0) {
            for (int c = 0; c < (int)ZMPI_CODEC_COUNT_; c++) {
                const char *name = zmpi_codec_name((zmpi_codec)c);
                if (name && zmpi_accepts(c, f->dtype) && add_codec(sel, &nsel, name, err))
                    return -1;
            }
            for (size_t r = 0; r < NREFS; r++)
                if (add_codec(sel, &nsel, REFS[r].name, err))
                    return -1;
        } else if (add_codec(sel, &nsel, items[i], err)) {
            return -1;
        }
    }

    double bounds[MAX_LIST];
    int nb = 0;
    zmpi_eb_mode mode = ZMPI_EB_NONE;
    const char *bl = o->rels ? o->rels : o->abss;
    if (bl) {
        mode = o->rels ? ZMPI_EB_REL : ZMPI_EB_ABS;
        nb = split_list(bl, buf, sizeof buf, items);
        if (nb < 0) {
            set_err(err, "bad %s list '%s'", o->rels ? "--rel" : "--abs", bl);
            return -1;
        }
        for (int i = 0; i < nb; i++)
            if (parse_double(items[i], &bounds[i]) || !(bounds[i] > 0)) {
                set_err(err, "%s values must be positive numbers, not '%s'",
                        o->rels ? "--rel" : "--abs", items[i]);
                return -1;
            }
    }
    int threads[MAX_LIST];
    int nt = split_list(o->threads, buf, sizeof buf, items);
    if (nt < 0) {
        set_err(err, "bad --threads list '%s'", o->threads);
        return -1;
    }
    for (int i = 0; i < nt; i++) {
        long long t;
        if (parse_ll(items[i], &t) || t < 1 || t > 1024) {
            set_err(err, "--threads values must be integers in 1..1024, not '%s'", items[i]);
            return -1;
        }
        threads[i] = (int)t;
    }
    int has_one = 0;
    for (int i = 0; i < nt; i++)
        has_one |= threads[i] == 1;

    for (int i = 0; i < nsel; i++) {
        if (sel[i].kind == ZMPI_KIND_BOUNDED && nb == 0) {
            set_err(err, "codec %s needs an error bound (--rel or --abs)", sel[i].name);
            return -1;
        }
        if (sel[i].ref != REF_NONE && !has_one) {
            set_err(err, "reference %s is single-threaded: include 1 in --threads", sel[i].name);
            return -1;
        }
    }

    size_t max = (size_t)nsel * (size_t)(nb ? nb : 1) * (size_t)nt;
    bench *bs = calloc(max, sizeof *bs);
    if (!bs) {
        set_err(err, "out of memory");
        return -1;
    }
    int k = 0;
    for (int i = 0; i < nsel; i++) {
        int nbi = sel[i].kind == ZMPI_KIND_BOUNDED ? nb : 1;
        for (int e = 0; e < nbi; e++) {
            for (int t = 0; t < nt; t++) {
                if (sel[i].ref != REF_NONE && threads[t] != 1)
                    continue;
                bench *b = &bs[k++];
                memcpy(b->name, sel[i].name, sizeof b->name);
                b->zcodec = sel[i].zcodec;
                b->ref = sel[i].ref;
                b->kind = sel[i].kind;
                b->channel = sel[i].channel;
                b->shape = sel[i].shape;
                b->threads = threads[t];
                if (sel[i].kind == ZMPI_KIND_BOUNDED) {
                    b->mode = mode;
                    b->bound = bounds[e];
                    b->eb = mode == ZMPI_EB_REL ? bounds[e] * (f->vmax - f->vmin) : bounds[e];
                }
                b->t_comp = calloc((size_t)o->repeat, sizeof(double));
                b->t_decomp = calloc((size_t)o->repeat, sizeof(double));
                if (!b->t_comp || !b->t_decomp) {
                    *out = bs;
                    *nout = k;
                    set_err(err, "out of memory");
                    return -1;
                }
            }
        }
    }
    *out = bs;
    *nout = k;
    return 0;
}

static int inner_for(double t_once, double min_time)
{
    if (!(min_time > 0) || t_once >= min_time)
        return 1;
    double n = ceil(min_time / fmax(t_once, 1e-7));
    return n > 100000 ? 100000 : (int)n;
}

/* Times inner back-to-back calls; returns seconds per call, < 0 on error. */
static double time_compress(bench *b, const field *f, void *dst, size_t cap, size_t *len)
{
    double t0 = now_s();
    for (int k = 0; k < b->inner_c; k++)
        if (do_compress(b, f, dst, cap, len))
            return -1;
    return (now_s() - t0) / b->inner_c;
}

static double time_decompress(bench *b, const field *f, const void *src, size_t len, void *out)
{
    double t0 = now_s();
    for (int k = 0; k < b->inner_d; k++)
        if (do_decompress(b, f, src, len, out))
            return -1;
    return (now_s() - t0) / b->inner_d;
}

int main(int argc, char **argv)
{
    options o;
    char err[ERRLEN];
    if (parse_args(argc, argv, &o, err)) {
        fprintf(stderr, "zmpi-codecbench: %s\n", err);
        return 2;
    }
    if (o.list) {
        print_list(&o);
        return 0;
    }
    field f;
    if (load_field(&o, &f, err)) {
        fprintf(stderr, "zmpi-codecbench: %s\n", err);
        free(f.data);
        return 2;
    }
    bench *bs = NULL;
    int nb = 0;
    if (build_benches(&o, &f, &bs, &nb, err)) {
        fprintf(stderr, "zmpi-codecbench: %s\n", err);
        for (int i = 0; i < nb; i++)
            bench_free(&bs[i]);
        free(bs);
        free(f.data);
        return 2;
    }

    size_t cap = 0;
    for (int i = 0; i < nb; i++) {
        bench *b = &bs[i];
        if (bench_setup(b, &f, &o))
            b->failed = 1;
        else if (b->cap > cap)
            cap = b->cap;
    }
    size_t outcap = (f.bytes + 63) / 64 * 64;
    void *stream = cap ? aligned_alloc(64, (cap + 63) / 64 * 64) : NULL;
    void *rec = aligned_alloc(64, outcap);
    if ((cap && !stream) || !rec) {
        fprintf(stderr, "zmpi-codecbench: out of memory (%zu + %zu bytes)\n", cap, f.bytes);
        return 2;
    }
    memset(rec, 0, outcap); /* fault the pages in before any timing */
    if (stream)
        memset(stream, 0, cap);

    /* warm-up, check and calibration: one run of each configuration */
    for (int i = 0; i < nb; i++) {
        bench *b = &bs[i];
        if (b->failed)
            continue;
        size_t len = 0;
        b->inner_c = b->inner_d = 1;
        double tc = time_compress(b, &f, stream, cap, &len);
        double td = tc < 0 ? -1 : time_decompress(b, &f, stream, len, rec);
        if (tc < 0 || td < 0 || evaluate(b, &f, stream, len, rec)) {
            b->failed = 1;
            continue;
        }
        b->comp_bytes = len;
        b->inner_c = inner_for(tc, o.min_time);
        b->inner_d = inner_for(td, o.min_time);
    }

    /* timed rounds, round-robin over the configurations */
    for (int r = 0; r < o.repeat; r++) {
        for (int k = 0; k < nb; k++) {
            bench *b = &bs[(k + r) % nb];
            if (b->failed)
                continue;
            size_t len = 0;
            double tc = time_compress(b, &f, stream, cap, &len);
            if (tc >= 0 && len != b->comp_bytes) {
                set_err(b->err, "compressed size changed between runs (%zu, then %zu bytes)",
                        b->comp_bytes, len);
                b->failed = 1;
                continue;
            }
            double td = tc < 0 ? -1 : time_decompress(b, &f, stream, len, rec);
            if (tc < 0 || td < 0) {
                b->failed = 1;
                continue;
            }
            b->t_comp[r] = tc;
            b->t_decomp[r] = td;
        }
    }

    int status = 0;
    for (int i = 0; i < nb; i++) {
        bench *b = &bs[i];
        if (b->failed) {
            char what[64] = "";
            if (b->mode == ZMPI_EB_REL)
                snprintf(what, sizeof what, " rel %g", b->bound);
            else if (b->mode == ZMPI_EB_ABS)
                snprintf(what, sizeof what, " abs %g", b->bound);
            fprintf(stderr, "zmpi-codecbench: %s %s%s threads %d: %s\n", f.base, b->name, what,
                    b->threads, b->err);
            status = 1;
        } else {
            print_result(b, &f, o.repeat);
        }
        bench_free(b);
    }
    free(bs);
    free(stream);
    free(rec);
    free(f.data);
    return status;
}
