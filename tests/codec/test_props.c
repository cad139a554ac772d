/*
 * Property tests of every codec: round trips over hostile and ordinary data,
 * float and double, ABS and REL, odd counts and segment edges.
 *   bounded codecs:  every finite element within the stream's eb (checked in
 *                    double), non-finite values bit-exact, eb <= rel*range;
 *   lossless codecs: bytes identical;
 *   fixed codecs:    the documented truncation, non-finite bit-exact.
 * Also: threads 1 vs 2 give identical streams and decodes on inputs of many
 * segments (so that two threads really split the work), buffers of the
 * worst-case size always suffice, and too-small buffers fail cleanly.
 *   test_props [--quick]
 *   test_props --simd   the AVX2 fzl kernels against the portable coder:
 *                       identical streams and decodes, identical value
 *                       ranges; exits 77 (skipped) if the library has no
 *                       AVX2 kernels or the CPU no AVX2, so that it never
 *                       passes by comparing the portable coder with itself.
 */
#include "fzl.h"
#include "fzr.h"
#include "testutil.h"

static const size_t counts[] = {0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65,
                                255, 256, 257, 1000, 4099};
#define SMALL_SEG 256

static int element_ok_nonfinite(const void *a, const void *b, size_t i, zmpi_dtype dt)
{
    size_t es = zmpi_dtype_size(dt);
    return memcmp((const uint8_t *)a + i * es, (const uint8_t *)b + i * es, es) == 0;
}

static double getv(const void *p, size_t i, zmpi_dtype dt)
{
    return dt == ZMPI_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* Expected reconstruction of a fixed-precision codec, or 0 if not checked exactly. */
static int fixed_expect(zmpi_codec c, uint32_t param, zmpi_dtype dt, const void *x, size_t i, double *out)
{
    double v = getv(x, i, dt);
    if (!isfinite(v))
        return 0;
    if (c == ZMPI_CODEC_DP2SP || c == ZMPI_CODEC_DP2SP_INTER) {
        if (fabs(v) > FLT_MAX)
            return 0; /* stored exactly as an exception */
        *out = (double)(float)v;
        return 1;
    }
    if (dt == ZMPI_DOUBLE) {
        uint64_t u;
        memcpy(&u, &v, 8);
        u &= ~((1ull << param) - 1);
        memcpy(out, &u, 8);
    } else {
        float f = (float)v;
        uint32_t u;
        memcpy(&u, &f, 4);
        u &= ~((1u << param) - 1);
        memcpy(&f, &u, 4);
        *out = f;
    }
    return 1;
}

typedef struct run_cfg {
    zmpi_codec codec;
    zmpi_dtype dt;
    zmpi_eb_mode mode;
    double eb;
    uint32_t segment;
    int gen;
    size_t n;
} run_cfg;

static void describe(const run_cfg *r, char *buf, size_t len)
{
    snprintf(buf, len, "codec=%s dtype=%s mode=%s eb=%g seg=%u gen=%s n=%zu", zmpi_codec_name(r->codec),
             r->dt == ZMPI_FLOAT ? "f32" : "f64", r->mode == ZMPI_EB_REL ? "rel" : r->mode == ZMPI_EB_ABS ? "abs" : "none",
             r->eb, r->segment, gen_names[r->gen], r->n);
}

/* Threads do not change the stream: the input cut into many small segments
 * (two threads then encode and decode different segments into different
 * places of one buffer) gives the same stream with 1 and 2 threads, and the
 * 2-thread decode of it gives the bytes of the 1-thread decode. */
static void check_threads_same(tstate *ts, const run_cfg *r, const void *x, const char *what)
{
    size_t es = zmpi_dtype_size(r->dt), raw = r->n * es;
    zmpi_ctx *c1 = zmpi_ctx_create(), *c2 = zmpi_ctx_create();
    zmpi_ctx_set_codec(c1, r->codec);
    zmpi_ctx_set_codec(c2, r->codec);
    if (r->mode != ZMPI_EB_NONE) {
        zmpi_ctx_set_bound(c1, r->mode, r->eb);
        zmpi_ctx_set_bound(c2, r->mode, r->eb);
    }
#ifndef ZMPI_HAVE_OPENMP
    (void)es;
    (void)raw;
    printf("test_props: %s: threads not compared (the library has no OpenMP)\n", what);
    return;
#endif
    /* about 32 segments (at least 128 elements each): 4099 elements are 33
     * segments of 128, 2^20 are 32 of 32768 */
    long long seg = ((long long)r->n / 32 + 63) / 64 * 64;
    seg = seg < 128 ? 128 : seg;
    zmpi_ctx_set_param(c1, ZMPI_P_SEGMENT, seg);
    zmpi_ctx_set_param(c2, ZMPI_P_SEGMENT, seg);
    zmpi_ctx_set_param(c1, ZMPI_P_THREADS, 1);
    CHECK(ts, zmpi_ctx_set_param(c2, ZMPI_P_THREADS, 2) == 2, "%s: 2 threads not accepted", what);
    size_t cap = zmpi_max_compressed_size(c1, r->n, r->dt);
    uint8_t *s1 = malloc(cap), *s2 = malloc(cap);
    void *y1 = malloc(raw + 1), *y2 = malloc(raw + 1);
    ptrdiff_t l1 = zmpi_compress(c1, x, r->n, r->dt, s1, cap);
    ptrdiff_t l2 = zmpi_compress(c2, x, r->n, r->dt, s2, cap);
    zmpi_stream_info info;
    int ok = l1 > 0 && zmpi_stream_info_get(s1, (size_t)l1, &info) == ZMPI_OK;
    CHECK(ts, ok && info.nsegments >= 16 && info.segment == (uint32_t)seg, "%s: %u segments of %u, not many", what,
          ok ? info.nsegments : 0, ok ? info.segment : 0);
    CHECK(ts, l1 > 0 && l2 == l1 && memcmp(s1, s2, (size_t)l1) == 0, "%s (segments of %lld): 2 threads give another stream (%td vs %td)",
          what, seg, l2, l1);
    if (l1 > 0) {
        memset(y1, 0x11, raw + 1);
        memset(y2, 0x22, raw + 1);
        ptrdiff_t g1 = zmpi_decompress(c1, s1, (size_t)l1, y1, raw);
        ptrdiff_t g2 = zmpi_decompress(c2, s1, (size_t)l1, y2, raw);
        CHECK(ts, g1 == (ptrdiff_t)raw && g2 == (ptrdiff_t)raw && memcmp(y1, y2, raw) == 0,
              "%s (segments of %lld): 2-thread decode differs (%td, %td)", what, seg, g1, g2);
    }
    free(s1);
    free(s2);
    free(y1);
    free(y2);
    zmpi_ctx_free(c1);
    zmpi_ctx_free(c2);
}

/* One round trip with all the checks. */
static void roundtrip(tstate *ts, const run_cfg *r, const void *x, int check_threads)
{
    char what[256];
    describe(r, what, sizeof what);
    size_t es = zmpi_dtype_size(r->dt), raw = r->n * es;
    int kind = zmpi_codec_kind(r->codec);
    int inter = zmpi_codec_needs_channel(r->codec);
    zmpi_ctx *ctx = zmpi_ctx_create();
    zmpi_ctx_set_codec(ctx, r->codec);
    if (r->mode != ZMPI_EB_NONE)
        zmpi_ctx_set_bound(ctx, r->mode, r->eb);
    zmpi_ctx_set_param(ctx, ZMPI_P_SEGMENT, r->segment);
    size_t cap = zmpi_max_compressed_size(ctx, r->n, r->dt);
    uint8_t *buf = malloc(cap), *buf2 = malloc(cap);
    void *y = malloc(raw + 1);
    zmpi_channel *chs = zmpi_channel_create(0), *chr = zmpi_channel_create(0);
    ptrdiff_t len = zmpi_compress_channel(ctx, chs, x, r->n, r->dt, buf, cap);
    CHECK(ts, len > 0 && (size_t)len <= cap, "%s: compress -> %td (%s)", what, len,
          len < 0 ? zmpi_strerror((int)len) : "");
    if (len <= 0)
        goto out;
    zmpi_stream_info info;
    CHECK(ts, zmpi_stream_info_get(buf, (size_t)len, &info) == ZMPI_OK && info.count == r->n &&
                  info.stream_size == (size_t)len && info.codec == r->codec,
          "%s: stream info", what);
    ptrdiff_t got = zmpi_decompress_channel(ctx, chr, buf, (size_t)len, y, raw);
    CHECK(ts, got == (ptrdiff_t)raw, "%s: decompress -> %td (%s)", what, got,
          got < 0 ? zmpi_strerror((int)got) : "");
    if (got != (ptrdiff_t)raw)
        goto out;

    if (kind == ZMPI_KIND_LOSSLESS) {
        CHECK(ts, memcmp(x, y, raw) == 0, "%s: lossless bytes differ", what);
    } else if (kind == ZMPI_KIND_BOUNDED) {
        double eb = info.eb;
        if (r->mode == ZMPI_EB_ABS)
            CHECK(ts, eb == r->eb || eb == 0.0, "%s: stream eb %g != requested", what, eb);
        else {
            double mn = INFINITY, mx = -INFINITY;
            for (size_t i = 0; i < r->n; i++) {
                double v = getv(x, i, r->dt);
                if (isfinite(v)) {
                    mn = fmin(mn, v);
                    mx = fmax(mx, v);
                }
            }
            double want = mn <= mx ? r->eb * mx - r->eb * mn : 0.0;
            CHECK(ts, eb <= want * (1 + 1e-15) + 0.0, "%s: stream eb %.17g > rel*range %.17g", what, eb, want);
        }
        size_t bad = 0, first = 0;
        double worst = 0;
        for (size_t i = 0; i < r->n; i++) {
            double a = getv(x, i, r->dt), b = getv(y, i, r->dt);
            int ok;
            if (!isfinite(a) || eb == 0.0)
                ok = element_ok_nonfinite(x, y, i, r->dt);
            else {
                long double d = fabsl((long double)a - (long double)b);
                ok = isfinite(b) && d <= (long double)eb;
                if ((double)d > worst)
                    worst = (double)d;
            }
            if (!ok && bad++ == 0)
                first = i;
        }
        CHECK(ts, bad == 0, "%s: %zu elements violate eb=%.17g (first %zu: %.17g -> %.17g), worst %.17g",
              what, bad, eb, first, getv(x, first, r->dt), getv(y, first, r->dt), worst);
    } else {
        size_t bad = 0;
        for (size_t i = 0; i < r->n; i++) {
            double want;
            if (fixed_expect(r->codec, info.param, r->dt, x, i, &want)) {
                double b = getv(y, i, r->dt);
                /* a segment that would not shrink is stored: exact values are fine too */
                if (!(b == want || (want == 0 && b == 0) || element_ok_nonfinite(x, y, i, r->dt)))
                    bad++;
            } else if (!element_ok_nonfinite(x, y, i, r->dt))
                bad++;
        }
        CHECK(ts, bad == 0, "%s: %zu elements differ from the fixed-precision result", what, bad);
    }

    /* A buffer one byte short of the actual size fails cleanly. */
    if (!inter) {
        ptrdiff_t l2 = zmpi_compress(ctx, x, r->n, r->dt, buf2, (size_t)len - 1);
        CHECK(ts, l2 == ZMPI_ERR_DST_TOO_SMALL, "%s: short buffer -> %td", what, l2);
        ptrdiff_t g2 = zmpi_decompress(ctx, buf, (size_t)len, y, raw ? raw - 1 : 0);
        CHECK(ts, raw == 0 ? g2 == 0 : g2 == ZMPI_ERR_DST_TOO_SMALL, "%s: short output -> %td", what, g2);
    }
    /* Threads do not change the stream. */
    if (check_threads && !inter)
        check_threads_same(ts, r, x, what);
out:
    zmpi_channel_free(chs);
    zmpi_channel_free(chr);
    free(buf);
    free(buf2);
    free(y);
    zmpi_ctx_free(ctx);
}

static void *make_input(const double *v, size_t n, zmpi_dtype dt)
{
    void *x = malloc(n * zmpi_dtype_size(dt) + 1);
    for (size_t i = 0; i < n; i++) {
        if (dt == ZMPI_FLOAT)
            ((float *)x)[i] = (float)v[i];
        else
            ((double *)x)[i] = v[i];
    }
    return x;
}

static void test_all_codecs(tstate *ts, int quick)
{
    const double abs_ebs[] = {1e-1, 1e-4, 1e-9};
    const double rel_ebs[] = {1e-2, 1e-4, 1e-7};
    size_t maxn = 4099;
    double *v = malloc(sizeof(double) * maxn);
    for (int c = 0; c < ZMPI_CODEC_COUNT_; c++) {
        for (int dti = 0; dti < 2; dti++) {
            zmpi_dtype dt = dti ? ZMPI_DOUBLE : ZMPI_FLOAT;
            if ((c == ZMPI_CODEC_DP2SP || c == ZMPI_CODEC_DP2SP_INTER) && dt == ZMPI_FLOAT)
                continue;
            int kind = zmpi_codec_kind((zmpi_codec)c);
            for (int g = 0; g < GEN_COUNT; g++) {
                for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
                    if (quick && ci % 3)
                        continue;
                    size_t n = counts[ci];
                    int nb = kind == ZMPI_KIND_BOUNDED ? 6 : 1;
                    for (int b = 0; b < nb; b++) {
                        run_cfg r = {.codec = (zmpi_codec)c, .dt = dt, .gen = g, .n = n,
                                     .segment = (ci & 1) ? SMALL_SEG : 65536, .mode = ZMPI_EB_NONE};
                        if (kind == ZMPI_KIND_BOUNDED) {
                            r.mode = b < 3 ? ZMPI_EB_ABS : ZMPI_EB_REL;
                            r.eb = b < 3 ? abs_ebs[b] : rel_ebs[b - 3];
                        }
                        gen_fill(v, n, g, r.mode == ZMPI_EB_ABS ? r.eb : 1e-3, (uint64_t)(ci + 1));
                        void *x = make_input(v, n, dt);
                        roundtrip(ts, &r, x, ci == sizeof counts / sizeof *counts - 1);
                        free(x);
                    }
                }
            }
        }
    }
    free(v);
}

/* Segment edges at the default segment size and a large input. */
static void test_large(tstate *ts, int quick)
{
    size_t ns[] = {65535, 65536, 65537, (size_t)1 << 20};
    for (size_t k = 0; k < sizeof ns / sizeof *ns; k++) {
        size_t n = ns[k];
        if (quick && k == 3)
            n = 200000;
        double *v = malloc(sizeof(double) * n);
        gen_fill(v, n, k % 2 ? GEN_SPIKES : GEN_SMOOTH, 1e-3, k);
        for (int dti = 0; dti < 2; dti++) {
            zmpi_dtype dt = dti ? ZMPI_DOUBLE : ZMPI_FLOAT;
            void *x = make_input(v, n, dt);
            const zmpi_codec cs[] = {ZMPI_CODEC_FZL, ZMPI_CODEC_ZSTD, ZMPI_CODEC_XORLZC,
                                     ZMPI_CODEC_LINPRED_BIT, ZMPI_CODEC_LINPRED_BYTE};
            for (size_t c = 0; c < sizeof cs / sizeof *cs; c++) {
                int bounded = zmpi_codec_kind(cs[c]) == ZMPI_KIND_BOUNDED;
                run_cfg r = {.codec = cs[c], .dt = dt, .gen = GEN_SMOOTH, .n = n, .segment = 65536,
                             .mode = bounded ? ZMPI_EB_REL : ZMPI_EB_NONE, .eb = 1e-4};
                roundtrip(ts, &r, x, 1);
            }
            free(x);
        }
        free(v);
    }
}

#ifdef ZMPI_HAVE_AVX2
/* The AVX2 and portable fzl coders write and read the same bytes, and
 * fzr's two encoder builds write the same bytes (every generator, float and
 * double, two bounds, a count with a tail after the 16-value blocks and
 * one without). */
static void test_fzl_paths(tstate *ts)
{
    const size_t ns[2] = {5003, 4096};
    const double ebs[2] = {1e-3, 1e-6};
    size_t nmax = 5003;
    double *v = malloc(sizeof(double) * nmax);
    uint8_t *a = malloc(1 << 20), *b = malloc(1 << 20);
    double *y1 = malloc(sizeof(double) * nmax), *y2 = malloc(sizeof(double) * nmax);
    for (int g = 0; g < GEN_COUNT; g++) {
        for (int k = 0; k < 4; k++) {
            size_t n = ns[k % 2];
            double eb = ebs[k / 2];
            for (int dti = 0; dti < 2; dti++) {
                zmpi_dtype dt = dti ? ZMPI_DOUBLE : ZMPI_FLOAT;
                gen_fill(v, n, g, eb, 99 + (uint64_t)k);
                void *x = make_input(v, n, dt);
                zc_seg s = {.dtype = dt, .n = n, .eb = eb, .param = 16, .hist = NULL};
                ptrdiff_t la = zc_fzl_encode_impl(&s, x, a, 1 << 20, 1);
                ptrdiff_t lb = zc_fzl_encode_impl(&s, x, b, 1 << 20, 0);
                CHECK(ts, la > 0 && la == lb && memcmp(a, b, (size_t)la) == 0,
                      "fzl simd/portable streams differ (gen %s, %s, n %zu, eb %g)", gen_names[g],
                      dti ? "f64" : "f32", n, eb);
                if (la > 0 && lb > 0) {
                    int r1 = zc_fzl_decode_impl(&s, b, (size_t)lb, y1, 1);
                    int r2 = zc_fzl_decode_impl(&s, b, (size_t)lb, y2, 0);
                    CHECK(ts, r1 == 0 && r2 == 0 && memcmp(y1, y2, n * zmpi_dtype_size(dt)) == 0,
                          "fzl simd/portable decodes differ (gen %s, %s, n %zu, eb %g)", gen_names[g],
                          dti ? "f64" : "f32", n, eb);
                }
                /* fzr's encoder kernels, portable and AVX2, without and with shape hints */
                for (int h = 0; h < 3; h++) {
                    zc_seg f = {.dtype = dt, .n = n, .eb = eb, .param = 0, .hist = NULL,
                                .dim_r = h ? 61u : 0u, .dim_p = h == 2 ? 61u * 7u : 0u};
                    ptrdiff_t fa = zc_fzr_encode_impl(&f, x, a, 1 << 20, 1);
                    ptrdiff_t fb = zc_fzr_encode_impl(&f, x, b, 1 << 20, 0);
                    CHECK(ts, fa > 0 && fa == fb && memcmp(a, b, (size_t)fa) == 0,
                          "fzr simd/portable streams differ (gen %s, %s, n %zu, eb %g, hints %d)", gen_names[g],
                          dti ? "f64" : "f32", n, eb, h);
                }
                free(x);
            }
        }
    }
    free(v);
    free(a);
    free(b);
    free(y1);
    free(y2);
}

/* The AVX2 value range (REL bounds of floats) against a plain loop over
 * the finite values, and its non-finite flag. */
int zc_range_f32_avx2(const float *x, size_t n, double *mn, double *mx, int *nonfinite);
static void test_range_avx2(tstate *ts)
{
    size_t n = 4099;
    double *v = malloc(sizeof(double) * n);
    for (int g = 0; g < GEN_COUNT; g++) {
        for (size_t m = 0; m <= n; m += m < 40 ? 1 : 1013) {
            gen_fill(v, m, g, 1e-3, 7);
            float *x = make_input(v, m, ZMPI_FLOAT);
            float lo = INFINITY, hi = -INFINITY;
            int bad = 0, nf = -1;
            for (size_t i = 0; i < m; i++)
                if (isfinite(x[i])) {
                    lo = x[i] < lo ? x[i] : lo;
                    hi = x[i] > hi ? x[i] : hi;
                } else {
                    bad = 1;
                }
            double a = 0, b = 0;
            int ok = zc_range_f32_avx2(x, m, &a, &b, &nf);
            CHECK(ts, ok == (lo <= hi) && (!ok || (a == lo && b == hi)) && nf == bad,
                  "avx2 range (gen %s, n %zu): %d [%g, %g] nonfinite %d, want [%g, %g] %d", gen_names[g], m, ok, a, b,
                  nf, lo, hi, bad);
            free(x);
        }
    }
    free(v);
}
#endif

/* test_props --simd: exit 77 (ctest: skipped) where there is nothing to compare. */
static int simd_main(void)
{
#ifndef ZMPI_HAVE_AVX2
    printf("test_props --simd: SKIPPED: the library was built without AVX2 kernels\n");
    return 77;
#else
    if (!zc_have_avx2()) {
        printf("test_props --simd: SKIPPED: this CPU has no AVX2\n");
        return 77;
    }
    tstate ts = {0, 0};
    test_fzl_paths(&ts);
    test_range_avx2(&ts);
    printf("test_props --simd: %ld checks, %ld failures\n", ts.checks, ts.failures);
    return ts.failures || ts.checks == 0 ? 1 : 0;
#endif
}

/* Inter-step channels: lock-step, reset on size change, desync detection,
 * memory bound. */
static void test_channels(tstate *ts)
{
    const zmpi_codec cs[] = {ZMPI_CODEC_XORLZC_INTER, ZMPI_CODEC_TRUNC_INTER, ZMPI_CODEC_DP2SP_INTER};
    size_t n = 3000;
    double *v = malloc(sizeof(double) * (n + 10));
    for (size_t c = 0; c < 3; c++) {
        zmpi_ctx *ctx = zmpi_ctx_create();
        zmpi_ctx_set_codec(ctx, cs[c]);
        zmpi_ctx_set_param(ctx, ZMPI_P_SEGMENT, 1024);
        zmpi_channel *s = zmpi_channel_create(0), *r = zmpi_channel_create(0);
        size_t cap = zmpi_max_compressed_size(ctx, n + 10, ZMPI_DOUBLE);
        uint8_t *buf = malloc(cap), *old = malloc(cap);
        double *y = malloc(sizeof(double) * (n + 10)), *ref = malloc(sizeof(double) * (n + 10));
        ptrdiff_t oldlen = 0;
        size_t first_len = 0;
        for (int step = 0; step < 6; step++) {
            size_t m = step == 4 ? n + 10 : n; /* steps 4 and 5 change the size: resets */
            for (size_t i = 0; i < m; i++)
                v[i] = 300.0 + sin(0.01 * (double)i + 0.001 * step) + (i == 7 && step == 2 ? NAN : 0.0);
            ptrdiff_t len = zmpi_compress_channel(ctx, s, v, m, ZMPI_DOUBLE, buf, cap);
            CHECK(ts, len > 0, "%s step %d compress %td", zmpi_codec_name(cs[c]), step, len);
            zmpi_stream_info info;
            zmpi_stream_info_get(buf, (size_t)len, &info);
            int reset = (info.flags & ZMPI_SF_RESET) != 0;
            CHECK(ts, reset == (step == 0 || step == 4 || step == 5), "%s step %d reset flag %d", zmpi_codec_name(cs[c]), step, reset);
            if (step == 0)
                first_len = (size_t)len;
            if (step == 1)
                CHECK(ts, (size_t)len < first_len, "%s: second message not smaller (%td vs %zu)",
                      zmpi_codec_name(cs[c]), len, first_len);
            ptrdiff_t got = zmpi_decompress_channel(ctx, r, buf, (size_t)len, y, sizeof(double) * m);
            CHECK(ts, got == (ptrdiff_t)(sizeof(double) * m), "%s step %d decompress %td", zmpi_codec_name(cs[c]), step, got);
            /* a plain (channel-less) reference of the same codec's lossy part */
            size_t bad = 0;
            for (size_t i = 0; i < m; i++) {
                double want;
                if (cs[c] == ZMPI_CODEC_XORLZC_INTER || !fixed_expect(cs[c], info.param, ZMPI_DOUBLE, v, i, &want)) {
                    if (memcmp(&v[i], &y[i], 8))
                        bad++;
                } else if (y[i] != want)
                    bad++;
            }
            CHECK(ts, bad == 0, "%s step %d: %zu elements wrong", zmpi_codec_name(cs[c]), step, bad);
            if (step == 2) {
                memcpy(old, buf, (size_t)len);
                oldlen = len;
            }
        }
        /* replaying an old message is detected, and the receiver resets */
        ptrdiff_t got = zmpi_decompress_channel(ctx, r, old, (size_t)oldlen, y, sizeof(double) * (n + 10));
        CHECK(ts, got == ZMPI_ERR_CHANNEL, "%s: replay -> %td", zmpi_codec_name(cs[c]), got);
        /* without a channel */
        CHECK(ts, zmpi_compress(ctx, v, n, ZMPI_DOUBLE, buf, cap) == ZMPI_ERR_NEED_CHANNEL, "need channel");
        /* memory bound: a channel too small to keep history resets every message */
        zmpi_channel *tiny = zmpi_channel_create(100), *tinyr = zmpi_channel_create(100);
        for (int k = 0; k < 3; k++) {
            ptrdiff_t len = zmpi_compress_channel(ctx, tiny, v, n, ZMPI_DOUBLE, buf, cap);
            zmpi_stream_info info;
            zmpi_stream_info_get(buf, (size_t)len, &info);
            CHECK(ts, info.flags & ZMPI_SF_RESET, "bounded channel must reset");
            CHECK(ts, zmpi_decompress_channel(ctx, tinyr, buf, (size_t)len, y, sizeof(double) * n) > 0, "bounded decode");
        }
        CHECK(ts, zmpi_channel_memory(tiny) <= 100, "channel memory %zu > bound", zmpi_channel_memory(tiny));
        zmpi_channel_free(tiny);
        zmpi_channel_free(tinyr);
        zmpi_channel_free(s);
        zmpi_channel_free(r);
        free(buf);
        free(old);
        free(y);
        free(ref);
        zmpi_ctx_free(ctx);
    }
    free(v);
}

/* Argument errors are codes, never crashes or silent lossless passes. */
static void test_api_errors(tstate *ts)
{
    zmpi_ctx *c = zmpi_ctx_create();
    float x[4] = {1, 2, 3, 4};
    uint8_t buf[512];
    CHECK(ts, zmpi_ctx_set_bound(c, ZMPI_EB_ABS, 0.0) == ZMPI_ERR_BOUND, "eb 0");
    CHECK(ts, zmpi_ctx_set_bound(c, ZMPI_EB_ABS, -1.0) == ZMPI_ERR_BOUND, "eb < 0");
    CHECK(ts, zmpi_ctx_set_bound(c, ZMPI_EB_REL, NAN) == ZMPI_ERR_BOUND, "eb NaN");
    CHECK(ts, zmpi_ctx_set_bound(c, ZMPI_EB_ABS, INFINITY) == ZMPI_ERR_BOUND, "eb Inf");
    CHECK(ts, zmpi_compress(c, x, 4, ZMPI_FLOAT, buf, sizeof buf) == ZMPI_ERR_BOUND, "fzl without bound");
    CHECK(ts, zmpi_ctx_set_codec(c, (zmpi_codec)99) == ZMPI_ERR_CODEC, "unknown codec");
    CHECK(ts, zmpi_codec_from_name("nope") == ZMPI_ERR_CODEC, "unknown codec name");
    zmpi_ctx_set_bound(c, ZMPI_EB_ABS, 0.1);
    CHECK(ts, zmpi_compress(c, x, 4, ZMPI_BYTE, buf, sizeof buf) == ZMPI_ERR_DTYPE, "fzl on bytes");
    CHECK(ts, zmpi_compress(c, x, 4, (zmpi_dtype)7, buf, sizeof buf) == ZMPI_ERR_DTYPE, "bad dtype");
    CHECK(ts, zmpi_compress(c, NULL, 4, ZMPI_FLOAT, buf, sizeof buf) == ZMPI_ERR_ARG, "NULL src");
    CHECK(ts, zmpi_compress(NULL, x, 4, ZMPI_FLOAT, buf, sizeof buf) == ZMPI_ERR_ARG, "NULL ctx");
    CHECK(ts, zmpi_compress(c, x, 4, ZMPI_FLOAT, buf, 10) == ZMPI_ERR_DST_TOO_SMALL, "tiny dst");
    zmpi_ctx_set_codec(c, ZMPI_CODEC_DP2SP);
    CHECK(ts, zmpi_compress(c, x, 4, ZMPI_FLOAT, buf, sizeof buf) == ZMPI_ERR_DTYPE, "dp2sp on float");
    CHECK(ts, zmpi_ctx_set_param(c, ZMPI_P_BLOCK, 12) == ZMPI_ERR_ARG, "block 12");
    CHECK(ts, zmpi_ctx_set_param(c, ZMPI_P_SEGMENT, 100) == 128, "segment rounds to 64s");
    CHECK(ts, zmpi_ctx_set_param(c, ZMPI_P_LEVEL, 99) == ZMPI_ERR_ARG, "zstd level 99");
    zmpi_ctx_set_codec(c, ZMPI_CODEC_TRUNC);
    zmpi_ctx_set_param(c, ZMPI_P_TRUNC_BITS, 40);
    CHECK(ts, zmpi_compress(c, x, 4, ZMPI_FLOAT, buf, sizeof buf) == ZMPI_ERR_ARG, "trunc 40 bits of a float");
    CHECK(ts, zmpi_max_compressed_size(c, SIZE_MAX / 2, ZMPI_DOUBLE) == 0, "overflowing size");
    CHECK(ts, strcmp(zmpi_strerror(ZMPI_ERR_CORRUPT), "unknown error code") != 0, "strerror");
    CHECK(ts, strcmp(zmpi_error_name(-12345), "ZMPI_ERR_UNKNOWN") == 0, "error name");
    zmpi_ctx_free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--simd"))
        return simd_main();
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    tstate ts = {0, 0};
    test_api_errors(&ts);
    test_channels(&ts);
    test_all_codecs(&ts, quick);
    test_large(&ts, quick);
    printf("test_props: %ld checks, %ld failures\n", ts.checks, ts.failures);
    return ts.failures ? 1 : 0;
}
