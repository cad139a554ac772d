/*
 * fzr (the ratio stage) and its Huffman coder beyond the generic property
 * tests of test_props:
 *   - Huffman round trips of every length class: one symbol, two, all 256,
 *     counts that force the length limit, odd n; hostile encodings rejected;
 *   - fzr with shape hints (2-D and 3-D Lorenzo, rows shorter than a block,
 *     hints beyond the segment, planes within a block), float and double,
 *     ABS and REL: every element within the stream's bound, NaN/Inf and
 *     outliers bit-exact, escapes (jumps of many bounds), zstd-coded residuals;
 *   - zmpi_ctx_set_dims argument checks;
 *   - outlier records edited by hand (a position at or beyond n, duplicated,
 *     decreasing): rejected as corrupt, nothing written past the output;
 *   - on a smooth 2-D field the 2-D hint gives a smaller stream than none.
 */
#include "huff.h"
#include "internal.h"
#include "testutil.h"

/* ---- Huffman ---- */

static void huff_case(tstate *ts, const uint8_t *sym, size_t n, const char *what)
{
    size_t cap = zc_huff_bound(n) + 64;
    uint8_t *enc = malloc(cap), *dec = malloc(n + 1);
    ptrdiff_t len = zc_huff_encode(sym, n, enc, cap);
    CHECK(ts, len > 0, "%s n=%zu: encode -> %td", what, n, len);
    if (len > 0) {
        int rc = zc_huff_decode(enc, (size_t)len, dec, n);
        CHECK(ts, rc == ZMPI_OK && memcmp(dec, sym, n) == 0, "%s n=%zu: round trip (rc %d)", what, n, rc);
        /* every truncation and one extra byte are rejected */
        for (size_t cut = 0; cut < (size_t)len; cut += 1 + (size_t)len / 50)
            CHECK(ts, zc_huff_decode(enc, cut, dec, n) == ZMPI_ERR_CORRUPT, "%s n=%zu: cut at %zu accepted",
                  what, n, cut);
        enc[len] = 0;
        CHECK(ts, zc_huff_decode(enc, (size_t)len + 1, dec, n) == ZMPI_ERR_CORRUPT, "%s n=%zu: extra byte",
              what, n);
        /* an encoder that lacks room says so */
        CHECK(ts, zc_huff_encode(sym, n, enc, (size_t)len - 1) == ZMPI_ERR_DST_TOO_SMALL,
              "%s n=%zu: cap len-1", what, n);
    }
    free(enc);
    free(dec);
}

static void test_huff(tstate *ts)
{
    const size_t ns[] = {1, 2, 3, 4, 5, 7, 16, 17, 63, 1000, 65536, 65539};
    uint8_t *s = malloc(70000);
    uint64_t r = 7;
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        size_t n = ns[k];
        memset(s, 42, n);
        huff_case(ts, s, n, "one symbol");
        for (size_t i = 0; i < n; i++)
            s[i] = (uint8_t)(i % 3 == 0 ? 255 : 0);
        huff_case(ts, s, n, "two symbols");
        for (size_t i = 0; i < n; i++)
            s[i] = (uint8_t)rng_next(&r);
        huff_case(ts, s, n, "uniform 256");
        /* counts falling by halves: unlimited Huffman would need ~20-bit codes */
        for (size_t i = 0; i < n; i++) {
            uint64_t x = rng_next(&r);
            s[i] = (uint8_t)(x ? __builtin_ctzll(x) : 63);
        }
        huff_case(ts, s, n, "geometric");
        for (size_t i = 0; i < n; i++)
            s[i] = (uint8_t)(i < 256 ? i : (rng_next(&r) % 1000 == 0 ? rng_next(&r) : 1));
        huff_case(ts, s, n, "every symbol once, then skewed");
    }
    /* hand-made hostile encodings */
    uint8_t bad[200] = {0}, out[16];
    bad[0] = 0;
    for (int i = 1; i <= 128; i++)
        bad[i] = 0x11; /* 256 codes of length 1: Kraft sum far above 1 */
    CHECK(ts, zc_huff_decode(bad, sizeof bad, out, 16) == ZMPI_ERR_CORRUPT, "over-full code accepted");
    memset(bad, 0, sizeof bad);
    CHECK(ts, zc_huff_decode(bad, sizeof bad, out, 16) == ZMPI_ERR_CORRUPT, "empty code accepted");
    bad[0] = 2;
    CHECK(ts, zc_huff_decode(bad, 2, out, 16) == ZMPI_ERR_CORRUPT, "unknown kind accepted");
    bad[0] = 1;
    CHECK(ts, zc_huff_decode(bad, 3, out, 16) == ZMPI_ERR_CORRUPT, "long constant form accepted");
    bad[1] = 0xc; /* lengths 12: beyond the limit */
    bad[0] = 0;
    CHECK(ts, zc_huff_decode(bad, sizeof bad, out, 16) == ZMPI_ERR_CORRUPT, "length 12 accepted");
    /* an incomplete code (one symbol of length 1: code 0) and long streams of
     * the unused code 1: the multi-symbol loop must stop on it, not spin */
    uint8_t odd[141 + 400];
    memset(odd, 0xff, sizeof odd);
    memset(odd, 0, 141);
    odd[1] = 0x01;
    for (int k = 0; k < 3; k++)
        odd[129 + 4 * k] = 100; /* streams 0-2: 100 bytes each (little-endian u32) */
    CHECK(ts, zc_huff_decode(odd, sizeof odd, s, 4096) == ZMPI_ERR_CORRUPT, "unused code accepted");
    odd[141] = 0; /* stream 0 starts with eight valid codes */
    CHECK(ts, zc_huff_decode(odd, sizeof odd, s, 4096) == ZMPI_ERR_CORRUPT, "unused code after valid ones accepted");
    free(s);
}

/* ---- fzr with hints ---- */

typedef struct fcase {
    zmpi_dtype dt;
    zmpi_eb_mode mode;
    double eb;
    int ndims;
    size_t dims[3];
    size_t segment;
    int level;
} fcase;

/* A field over dims: smooth waves, noise of about the bound, jumps of many
 * bounds (escapes) and, if hostile, NaN, Inf, -0 and values beyond the code range. */
static void *field(const fcase *c, size_t n, int hostile)
{
    /* hostile < 0: every row the same random walk plus a slow trend down the
     * rows (rough along a row, smooth across rows: what 2-D prediction is for) */
    size_t es = zmpi_dtype_size(c->dt);
    uint8_t *x = malloc(n * es);
    uint64_t r = 99;
    size_t nx = c->ndims ? c->dims[c->ndims - 1] : n;
    size_t ny = c->ndims >= 2 ? c->dims[c->ndims - 2] : 1;
    for (size_t i = 0; i < n; i++) {
        size_t ix = i % nx, iy = (i / nx) % ny, iz = i / nx / ny;
        double v = 280.0 + 10.0 * sin(0.05 * (double)ix) * cos(0.07 * (double)iy) + 2.0 * sin(0.3 * (double)iz);
        v += 1e-3 * (rng_unit(&r) - 0.5);
        if (ix > nx / 2 && iy % 7 < 3)
            v = 0.0; /* a "land mask": jumps of 280 */
        if (hostile < 0)
            v = 280.0 + 0.01 * (double)iy + 5.0 * sin(0.9 * (double)ix) * cos(2.3 * (double)(ix % 13));
        if (hostile > 0) {
            uint64_t k = rng_next(&r) % 500;
            v = k == 0 ? NAN : k == 1 ? INFINITY : k == 2 ? -0.0 : k == 3 ? 1e30 : k == 4 ? -1e300 : v;
        }
        if (c->dt == ZMPI_FLOAT) {
            float f = (float)v;
            memcpy(x + i * es, &f, 4);
        } else {
            memcpy(x + i * es, &v, 8);
        }
    }
    return x;
}

static size_t run_case(tstate *ts, const fcase *c, size_t n, int hostile)
{
    char what[160];
    snprintf(what, sizeof what, "fzr %s eb %g %s dims %d:%zux%zux%zu seg %zu level %d n %zu%s",
             c->dt == ZMPI_FLOAT ? "f32" : "f64", c->eb, c->mode == ZMPI_EB_ABS ? "abs" : "rel", c->ndims,
             c->dims[0], c->dims[1], c->dims[2], c->segment, c->level, n,
             hostile > 0 ? " hostile" : hostile < 0 ? " rows" : "");
    size_t es = zmpi_dtype_size(c->dt);
    void *x = field(c, n, hostile), *y = malloc(n * es + 1);
    zmpi_ctx *ctx = zmpi_ctx_create();
    zmpi_ctx_set_codec(ctx, ZMPI_CODEC_FZR);
    zmpi_ctx_set_bound(ctx, c->mode, c->eb);
    if (c->segment)
        zmpi_ctx_set_param(ctx, ZMPI_P_SEGMENT, (long long)c->segment);
    if (c->level)
        zmpi_ctx_set_param(ctx, ZMPI_P_LEVEL, c->level);
    if (c->ndims)
        CHECK(ts, zmpi_ctx_set_dims(ctx, c->ndims, c->dims) == ZMPI_OK, "%s: set_dims", what);
    size_t cap = zmpi_max_compressed_size(ctx, n, c->dt);
    uint8_t *buf = malloc(cap);
    ptrdiff_t len = zmpi_compress(ctx, x, n, c->dt, buf, cap);
    CHECK(ts, len > 0, "%s: compress -> %td", what, len);
    size_t got = 0;
    if (len > 0) {
        zmpi_stream_info info;
        zmpi_stream_info_get(buf, (size_t)len, &info);
        CHECK(ts, info.codec == ZMPI_CODEC_FZR && info.param == (uint32_t)c->level, "%s: header", what);
        ptrdiff_t d = zmpi_decompress(ctx, buf, (size_t)len, y, n * es);
        CHECK(ts, d == (ptrdiff_t)(n * es), "%s: decompress -> %td", what, d);
        size_t bad = 0;
        for (size_t i = 0; d > 0 && i < n; i++) {
            double a = c->dt == ZMPI_FLOAT ? ((float *)x)[i] : ((double *)x)[i];
            double b = c->dt == ZMPI_FLOAT ? ((float *)y)[i] : ((double *)y)[i];
            if (!isfinite(a) ? memcmp((uint8_t *)x + i * es, (uint8_t *)y + i * es, es) != 0
                             : !(fabs(a - b) <= info.eb))
                bad++;
        }
        CHECK(ts, bad == 0, "%s: %zu elements beyond eb %g or not bit-exact", what, bad, info.eb);
        got = (size_t)len;
    }
    free(buf);
    zmpi_ctx_free(ctx);
    free(x);
    free(y);
    return got;
}

static void test_hints(tstate *ts)
{
    const fcase cs[] = {
        {ZMPI_FLOAT, ZMPI_EB_REL, 1e-4, 0, {0}, 0, 0},
        {ZMPI_FLOAT, ZMPI_EB_REL, 1e-3, 2, {300, 250, 0}, 0, 0},
        {ZMPI_DOUBLE, ZMPI_EB_ABS, 1e-3, 2, {300, 250, 0}, 0, 0},
        {ZMPI_FLOAT, ZMPI_EB_REL, 1e-4, 3, {12, 40, 90}, 0, 0},
        {ZMPI_DOUBLE, ZMPI_EB_REL, 1e-6, 3, {12, 40, 90}, 0, 0},
        {ZMPI_FLOAT, ZMPI_EB_ABS, 1e-2, 3, {50, 9, 7}, 0, 0},     /* row < block, plane < block */
        {ZMPI_FLOAT, ZMPI_EB_ABS, 1e-2, 2, {3, 100000, 0}, 0, 0}, /* row beyond the segment: ignored */
        {ZMPI_FLOAT, ZMPI_EB_REL, 1e-3, 2, {300, 250, 0}, 256, 0}, /* small segments */
        {ZMPI_FLOAT, ZMPI_EB_REL, 1e-3, 3, {12, 40, 90}, 1024, 0},
        {ZMPI_FLOAT, ZMPI_EB_REL, 1e-4, 2, {300, 250, 0}, 0, 3},  /* zstd-coded residuals */
        {ZMPI_DOUBLE, ZMPI_EB_REL, 1e-4, 0, {0}, 0, 1},
        {ZMPI_FLOAT, ZMPI_EB_REL, 1e-4, 1, {75000, 0, 0}, 0, 0},
    };
    const size_t ns[] = {1, 2, 63, 64, 65, 1000, 75000};
    for (size_t k = 0; k < sizeof cs / sizeof *cs; k++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            for (int hostile = 0; hostile < 2; hostile++)
                run_case(ts, &cs[k], ns[i], hostile);
    /* a smooth 2-D field: the 2-D predictor must pay */
    fcase flat = {ZMPI_FLOAT, ZMPI_EB_REL, 1e-4, 0, {0}, 0, 0};
    fcase hint = {ZMPI_FLOAT, ZMPI_EB_REL, 1e-4, 2, {300, 250, 0}, 0, 0};
    size_t a = run_case(ts, &flat, 75000, -1), b = run_case(ts, &hint, 75000, -1);
    CHECK(ts, b > 0 && b < a, "2-D hint: %zu bytes, none: %zu", b, a);
}

static void test_dims_args(tstate *ts)
{
    zmpi_ctx *c = zmpi_ctx_create();
    size_t d[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK(ts, zmpi_ctx_set_dims(c, 3, d) == ZMPI_OK && zmpi_ctx_get_param(c, ZMPI_P_ROW) == 4 &&
                  zmpi_ctx_get_param(c, ZMPI_P_PLANE) == 12, "3-D dims");
    CHECK(ts, zmpi_ctx_set_dims(c, 9, d) == ZMPI_ERR_ARG, "9 dims accepted");
    CHECK(ts, zmpi_ctx_set_dims(c, -1, d) == ZMPI_ERR_ARG, "-1 dims accepted");
    CHECK(ts, zmpi_ctx_set_dims(c, 2, NULL) == ZMPI_ERR_ARG, "NULL dims accepted");
    size_t z[2] = {0, 5};
    CHECK(ts, zmpi_ctx_set_dims(c, 2, z) == ZMPI_ERR_ARG, "zero dim accepted");
    size_t big[3] = {2, 70000, 70000};
    CHECK(ts, zmpi_ctx_set_dims(c, 3, big) == ZMPI_ERR_ARG, "plane beyond 2^32 accepted");
    CHECK(ts, zmpi_ctx_get_param(c, ZMPI_P_ROW) == 4 && zmpi_ctx_get_param(c, ZMPI_P_PLANE) == 12,
          "failed set_dims changed the context");
    CHECK(ts, zmpi_ctx_set_dims(c, 1, d) == ZMPI_OK && zmpi_ctx_get_param(c, ZMPI_P_ROW) == 0 &&
                  zmpi_ctx_get_param(c, ZMPI_P_PLANE) == 0, "1-D clears");
    CHECK(ts, zmpi_ctx_set_param(c, ZMPI_P_ROW, -1) == ZMPI_ERR_ARG, "row -1 accepted");
    CHECK(ts, zmpi_ctx_set_param(c, ZMPI_P_PLANE, 1LL << 33) == ZMPI_ERR_ARG, "plane 2^33 accepted");
    zmpi_ctx_free(c);
}

/* ---- outlier records edited by hand ----
 *
 * A stream (one segment, no checksums) of a field with outliers at the first
 * and last positions and in between; the records {u32 position, raw element}
 * end the segment. Every edit of a position that is not strictly increasing
 * within [0, n) - position n, n + 1, 2^32 - 1, a duplicate, a decrease - must
 * be rejected as corrupt, through zmpi_decompress and through fzr's segment
 * decoder alone, and nothing may be written past the n elements: the output
 * buffers carry guard bytes that must come back unchanged. */
enum { GUARD = 64 };

static int guard_ok(const uint8_t *g)
{
    for (int i = 0; i < GUARD; i++)
        if (g[i] != 0xA5)
            return 0;
    return 1;
}

static void outlier_case(tstate *ts, zmpi_dtype dt, size_t n)
{
    size_t es = zmpi_dtype_size(dt), rs = 4 + es;
    const size_t at[] = {0, 1, n / 3, n / 2, n - 2, n - 1}; /* outliers; n >= 8 */
    uint8_t *x = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
        double v = 280.0 + 10.0 * sin(0.05 * (double)i);
        for (size_t k = 0; k < sizeof at / sizeof *at; k++)
            if (i == at[k])
                v = k % 3 == 0 ? NAN : k % 3 == 1 ? INFINITY : 1e30;
        if (dt == ZMPI_FLOAT) {
            float f = (float)v;
            memcpy(x + i * es, &f, 4);
        } else {
            memcpy(x + i * es, &v, 8);
        }
    }
    zmpi_ctx *ctx = zmpi_ctx_create();
    zmpi_ctx_set_codec(ctx, ZMPI_CODEC_FZR);
    zmpi_ctx_set_bound(ctx, ZMPI_EB_ABS, 1e-3);
    zmpi_ctx_set_param(ctx, ZMPI_P_CHECKSUM, 0);
    size_t cap = zmpi_max_compressed_size(ctx, n, dt);
    uint8_t *z = malloc(cap), *e = malloc(cap), *y = malloc(n * es + GUARD);
    ptrdiff_t len = zmpi_compress(ctx, x, n, dt, z, cap);
    zmpi_stream_info info;
    int ok = len > 0 && zmpi_stream_info_get(z, (size_t)len, &info) == ZMPI_OK;
    /* one segment: header 48, index 8, mode byte, then fzr's payload */
    const size_t pay = 57;
    ok = ok && info.nsegments == 1 && z[56] == 0 && (size_t)len > pay + 24;
    CHECK(ts, ok, "outliers %s n %zu: not one fzr segment", dt == ZMPI_FLOAT ? "f32" : "f64", n);
    if (!ok)
        goto out;
    size_t nout = zc_get_u32(z + pay + 12), rec = (size_t)len - nout * rs, psize = (size_t)len - pay;
    /* the planted outliers are records (float rounding may add others) */
    ok = nout >= sizeof at / sizeof *at && zc_get_u32(z + rec) == 0 && zc_get_u32(z + rec + rs) == 1 &&
         zc_get_u32(z + rec + (nout - 1) * rs) == n - 1;
    CHECK(ts, ok, "outliers n %zu: %zu records, first at %u", n, nout, (unsigned)zc_get_u32(z + rec));
    if (!ok)
        goto out;
    uint32_t pos[4];
    for (int k = 0; k < 4; k++)
        pos[k] = zc_get_u32(z + rec + (size_t)k * rs);
    memset(y, 0xA5, n * es + GUARD);
    CHECK(ts, zmpi_decompress(ctx, z, (size_t)len, y, n * es + GUARD) == (ptrdiff_t)(n * es) &&
                  memcmp(y, x, es) == 0 && memcmp(y + (n - 1) * es, x + (n - 1) * es, es) == 0 &&
                  guard_ok(y + n * es),
          "outliers n %zu: the unedited stream", n);
    zc_seg seg = {.dtype = dt, .n = n, .eb = info.eb, .param = info.param};
    struct {
        size_t rec;   /* the record edited */
        uint32_t pos; /* its new position */
        const char *what;
    } edits[] = {
        {nout - 1, (uint32_t)n, "the last at n"},
        {nout - 1, (uint32_t)n + 1, "the last at n + 1"},
        {nout - 1, UINT32_MAX, "the last at 2^32 - 1"},
        {0, (uint32_t)n, "the first at n"},
        {1, pos[0], "the second equal to the first"},
        {nout - 1, zc_get_u32(z + rec + (nout - 2) * rs), "the last equal to the one before"},
        {2, pos[3], "the third equal to the fourth"},
        {3, pos[1], "the fourth below the third"},
        {nout - 1, 0, "the last at 0"},
        {1, (uint32_t)(n - 1), "the second at n - 1, above the third"},
    };
    for (size_t k = 0; k < sizeof edits / sizeof *edits; k++) {
        memcpy(e, z, (size_t)len);
        zc_put_u32(e + rec + edits[k].rec * rs, edits[k].pos);
        memset(y, 0xA5, n * es + GUARD);
        ptrdiff_t d = zmpi_decompress(ctx, e, (size_t)len, y, n * es + GUARD);
        CHECK(ts, d == ZMPI_ERR_CORRUPT && guard_ok(y + n * es),
              "outliers %s n %zu, %s: zmpi_decompress -> %td%s", dt == ZMPI_FLOAT ? "f32" : "f64", n,
              edits[k].what, d, guard_ok(y + n * es) ? "" : ", wrote past the buffer");
        memset(y, 0xA5, n * es + GUARD);
        int rc = zc_fzr_ops.decode(&seg, e + pay, psize, y);
        CHECK(ts, rc == ZMPI_ERR_CORRUPT && guard_ok(y + n * es), "outliers %s n %zu, %s: decode -> %d%s",
              dt == ZMPI_FLOAT ? "f32" : "f64", n, edits[k].what, rc,
              guard_ok(y + n * es) ? "" : ", wrote past the buffer");
    }
out:
    zmpi_ctx_free(ctx);
    free(x);
    free(z);
    free(e);
    free(y);
}

static void test_outliers(tstate *ts)
{
    const size_t ns[] = {200, 1000, 20000};
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < sizeof ns / sizeof *ns; i++)
            outlier_case(ts, d ? ZMPI_DOUBLE : ZMPI_FLOAT, ns[i]);
}

int main(void)
{
    tstate ts = {0, 0};
    test_huff(&ts);
    test_hints(&ts);
    test_dims_args(&ts);
    test_outliers(&ts);
    printf("test_fzr: %ld checks, %ld failures\n", ts.checks, ts.failures);
    return ts.failures ? 1 : 0;
}
