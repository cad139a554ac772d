/*
 * zmpi-reduce-step - the CPU cost of one step of a compressed SUM reduction,
 * on grid codes against decompress-reduce-compress, on one core.
 *
 *   zmpi-reduce-step [--file F.f32] [--ranks 8,16,32,64] [--rel 1e-4] [--repeat 9]
 *                    [--csv OUT.csv] [--json OUT.json]
 *
 * A reduction over N ranks (ring or recursive halving Reduce_scatter, the
 * first phase of Allreduce and Reduce) makes every rank receive a partial
 * sum, add its own input and pass the sum on. Rank i's input is the field
 * rotated by i * 4099 elements (its own part of a real field); the step
 * measured is the one at k = N/2 ranks (a partial of N/2 - 1 ranks arrives,
 * the own input of one more is added). The per-compression bound is the
 * one zmpi's Allreduce uses in result scope: e = rel * (max - min) / N.
 *
 *   classic  zmpi_decompress the partial's fzl stream, add the own input
 *            (a float loop the compiler vectorises), zmpi_compress the sum
 *            with fzl at e: what every step did before grid codes.
 *   grid     zmpi_grid_add of the partial's packed code differences and the
 *            own input's (packed once per call): the sum, packed, without
 *            unpacking either.
 *   prepare  zmpi_grid_quantize and zmpi_grid_pack of the whole input: once
 *            per call and rank on the grid path (nothing corresponds on the
 *            classic path, whose first step compresses the own input).
 *   decode   zmpi_grid_unpack and zmpi_grid_dequantize of the whole
 *            result: once per call.
 *
 * Rows are interleaved round-robin over --repeat rounds and the medians
 * taken (the machine is shared and noisy). ns/B is per byte of float input.
 * "call" compares the reduce-scatter phase of one call per rank: N - 1
 * steps on blocks of 1/N of the vector, plus the grid's preparation of the
 * whole input.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zmpi/codec.h"

#define RS_DEFAULT_FILE "trinidad_data_1201x2401.f32"
#define RS_MAX_RANKS 16

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "zmpi-reduce-step: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static float *load(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "zmpi-reduce-step: cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    *n = (size_t)sz / sizeof(float);
    float *x = xmalloc(*n * sizeof *x);
    if (fread(x, sizeof *x, *n, f) != *n) {
        fprintf(stderr, "zmpi-reduce-step: short read of %s\n", path);
        exit(1);
    }
    fclose(f);
    return x;
}

/* Rank i's input: the field rotated by i * 4099 elements. */
static void input(const float *field, size_t n, int i, float *x)
{
    size_t s = ((size_t)i * 4099u) % n;
    memcpy(x, field + s, (n - s) * sizeof *x);
    memcpy(x + (n - s), field, s * sizeof *x);
}

typedef struct row {
    int ranks;
    double classic, grid, quant, decode; /* medians, seconds per step / pass (quant: the preparation) */
    size_t classic_bytes, grid_bytes;    /* the step's outgoing message */
    double call_classic, call_grid;      /* reduce-scatter phase per rank, seconds */
} row;

static void fail(const char *what, long long rc)
{
    fprintf(stderr, "zmpi-reduce-step: %s failed: %lld\n", what, rc);
    exit(1);
}

static void measure(const float *field, size_t n, int N, double rel, int repeat, row *out)
{
    float lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lo = field[i] < lo ? field[i] : lo;
        hi = field[i] > hi ? field[i] : hi;
    }
    double e = rel * ((double)hi - (double)lo) / N;
    double step = 2.0 * e * (1.0 - 0x1p-17), maxerr = e * (1.0 - 0x1p-18);
    int k = N / 2;
    float *x = xmalloc(n * sizeof *x), *part = xmalloc(n * sizeof *part), *own = xmalloc(n * sizeof *own);
    float *work = xmalloc(n * sizeof *work);
    double *acc = xmalloc(n * sizeof *acc);
    int32_t *gpart = xmalloc(n * sizeof *gpart), *gown = xmalloc(n * sizeof *gown), *gx = xmalloc(n * sizeof *gx);
    int32_t *gwork = xmalloc(n * sizeof *gwork);
    memset(acc, 0, n * sizeof *acc);
    memset(gpart, 0, n * sizeof *gpart);
    for (int i = 0; i < k - 1 || i == 0; i++) { /* the partial of k - 1 ranks (at least one) */
        input(field, n, i, x);
        int rc = zmpi_grid_quantize(x, n, ZMPI_FLOAT, step, maxerr, gx);
        if (rc)
            fail("zmpi_grid_quantize", rc);
        for (size_t j = 0; j < n; j++) {
            acc[j] += x[j];
            gpart[j] = (int32_t)((uint32_t)gpart[j] + (uint32_t)gx[j]);
        }
    }
    for (size_t j = 0; j < n; j++)
        part[j] = (float)acc[j];
    input(field, n, k, own);
    int rc = zmpi_grid_quantize(own, n, ZMPI_FLOAT, step, maxerr, gown);
    if (rc)
        fail("zmpi_grid_quantize", rc);

    zmpi_ctx *ctx = zmpi_ctx_create();
    if (!ctx || zmpi_ctx_set_codec(ctx, ZMPI_CODEC_FZL) || zmpi_ctx_set_bound(ctx, ZMPI_EB_ABS, e))
        fail("fzl context", 0);
    size_t zcap = zmpi_max_compressed_size(ctx, n, ZMPI_FLOAT), gcap = zmpi_grid_bound(n);
    unsigned char *zin = xmalloc(zcap), *zout = xmalloc(zcap), *gin = xmalloc(gcap), *gout = xmalloc(gcap);
    unsigned char *gmine = xmalloc(gcap);
    ptrdiff_t zlen = zmpi_compress(ctx, part, n, ZMPI_FLOAT, zin, zcap);
    ptrdiff_t glen = zmpi_grid_pack(gpart, n, gin, gcap), gml = zmpi_grid_pack(gown, n, gmine, gcap);
    if (zlen < 0 || glen < 0 || gml < 0)
        fail("compressing the partial", zlen < 0 ? zlen : glen);

    double *tc = xmalloc((size_t)repeat * sizeof *tc), *tg = xmalloc((size_t)repeat * sizeof *tg);
    double *tq = xmalloc((size_t)repeat * sizeof *tq), *td = xmalloc((size_t)repeat * sizeof *td);
    ptrdiff_t zo = 0, go = 0;
    for (int r = 0; r < repeat; r++) {
        double t0 = now();
        ptrdiff_t d = zmpi_decompress(ctx, zin, (size_t)zlen, work, n * sizeof *work);
        for (size_t j = 0; j < n; j++)
            work[j] += own[j];
        zo = zmpi_compress(ctx, work, n, ZMPI_FLOAT, zout, zcap);
        double t1 = now();
        go = zmpi_grid_add(gin, (size_t)glen, gmine, (size_t)gml, n, gout, gcap);
        double t2 = now();
        int q = zmpi_grid_quantize(own, n, ZMPI_FLOAT, step, maxerr, gx);
        gml = zmpi_grid_pack(gx, n, gmine, gcap);
        double t3 = now();
        int u = zmpi_grid_unpack(gout, (size_t)go, NULL, gwork, n);
        int dq = zmpi_grid_dequantize(gwork, n, step, ZMPI_FLOAT, work);
        double t4 = now();
        if (d != (ptrdiff_t)(n * sizeof *work) || zo < 0 || u || go < 0 || q || dq || gml < 0)
            fail("a timed step", d < 0 ? d : zo < 0 ? zo : go < 0 ? go : u ? u : q ? q : dq ? dq : gml);
        tc[r] = t1 - t0;
        tg[r] = t2 - t1;
        tq[r] = t3 - t2;
        td[r] = t4 - t3;
    }
    out->ranks = N;
    out->classic = median(tc, repeat);
    out->grid = median(tg, repeat);
    out->quant = median(tq, repeat);
    out->decode = median(td, repeat);
    out->classic_bytes = (size_t)zo;
    out->grid_bytes = (size_t)go;
    /* N - 1 steps on blocks of n / N: (N - 1) / N of a whole-vector step */
    out->call_classic = out->classic * (N - 1) / N;
    out->call_grid = out->grid * (N - 1) / N + out->quant;
    zmpi_ctx_free(ctx);
    free(x), free(part), free(own), free(work), free(acc), free(gpart), free(gown), free(gx), free(gwork);
    free(zin), free(zout), free(gin), free(gout), free(gmine), free(tc), free(tg), free(tq), free(td);
}

static int parse_ranks(const char *s, int *r)
{
    int n = 0;
    while (*s && n < RS_MAX_RANKS) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 2 || v > 1 << 20)
            return -1;
        r[n++] = (int)v;
        s = *end == ',' ? end + 1 : end;
        if (*end && *end != ',')
            return -1;
    }
    return n;
}

int main(int argc, char **argv)
{
    const char *file = NULL, *csv = NULL, *json = NULL;
    char defpath[4096];
    int ranks[RS_MAX_RANKS] = {8, 16, 32, 64}, nr = 4, repeat = 9;
    double rel = 1e-4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--file") && v)
            file = v, i++;
        else if (!strcmp(a, "--ranks") && v)
            nr = parse_ranks(v, ranks), i++;
        else if (!strcmp(a, "--rel") && v)
            rel = atof(v), i++;
        else if (!strcmp(a, "--repeat") && v)
            repeat = atoi(v), i++;
        else if (!strcmp(a, "--csv") && v)
            csv = v, i++;
        else if (!strcmp(a, "--json") && v)
            json = v, i++;
        else {
            fprintf(stderr, "usage: zmpi-reduce-step [--file F.f32] [--ranks 8,16,32,64] [--rel 1e-4] "
                            "[--repeat 9] [--csv OUT.csv] [--json OUT.json]\n");
            return 2;
        }
    }
    if (nr <= 0 || repeat < 1 || !(rel > 0)) {
        fprintf(stderr, "zmpi-reduce-step: bad --ranks, --repeat or --rel\n");
        return 2;
    }
    if (!file) {
        snprintf(defpath, sizeof defpath, "%s/%s", ZMPI_BENCH_DATA_DIR, RS_DEFAULT_FILE);
        file = defpath;
    }
    size_t n;
    float *field = load(file, &n);
    if (n < 1024) {
        fprintf(stderr, "zmpi-reduce-step: %s is too small\n", file);
        return 2;
    }
    row rows[RS_MAX_RANKS];
    for (int i = 0; i < nr; i++)
        measure(field, n, ranks[i], rel, repeat, &rows[i]);

    double B = (double)n * sizeof(float);
    printf("One reduction step on one core: %s (%zu floats), REL %g, per-step bound rel*range/N, "
           "medians of %d\n", file, n, rel, repeat);
    printf("%6s %14s %14s %8s %12s %12s %10s %10s %10s\n", "ranks", "classic ns/B", "grid ns/B", "speedup",
           "prepare ns/B", "decode ns/B", "call x", "ratio fzl", "ratio grid");
    FILE *fc = csv ? fopen(csv, "w") : NULL, *fj = json ? fopen(json, "w") : NULL;
    if ((csv && !fc) || (json && !fj)) {
        fprintf(stderr, "zmpi-reduce-step: cannot write the output files\n");
        return 1;
    }
    if (fc)
        fprintf(fc, "ranks,classic_ns_per_byte,grid_ns_per_byte,step_speedup,prepare_ns_per_byte,"
                    "decode_ns_per_byte,call_speedup,ratio_fzl,ratio_grid\n");
    if (fj)
        fprintf(fj, "{\"file\": \"%s\", \"elements\": %zu, \"rel\": %g, \"repeat\": %d, \"rows\": [", file, n, rel,
                repeat);
    for (int i = 0; i < nr; i++) {
        const row *r = &rows[i];
        double c = 1e9 * r->classic / B, g = 1e9 * r->grid / B, q = 1e9 * r->quant / B, d = 1e9 * r->decode / B;
        double rz = B / (double)r->classic_bytes, rg = B / (double)r->grid_bytes;
        printf("%6d %14.3f %14.3f %7.2fx %12.3f %12.3f %9.2fx %10.2f %10.2f\n", r->ranks, c, g, c / g, q, d,
               r->call_classic / r->call_grid, rz, rg);
        if (fc)
            fprintf(fc, "%d,%.4f,%.4f,%.3f,%.4f,%.4f,%.3f,%.3f,%.3f\n", r->ranks, c, g, c / g, q, d,
                    r->call_classic / r->call_grid, rz, rg);
        if (fj)
            fprintf(fj,
                    "%s{\"ranks\": %d, \"classic_ns_per_byte\": %.4f, \"grid_ns_per_byte\": %.4f, "
                    "\"step_speedup\": %.3f, \"prepare_ns_per_byte\": %.4f, \"decode_ns_per_byte\": %.4f, "
                    "\"call_speedup\": %.3f, \"ratio_fzl\": %.3f, \"ratio_grid\": %.3f}",
                    i ? ", " : "", r->ranks, c, g, c / g, q, d, r->call_classic / r->call_grid, rz, rg);
    }
    if (fc)
        fclose(fc);
    if (fj) {
        fprintf(fj, "]}\n");
        fclose(fj);
    }
    free(field);
    return 0;
}
