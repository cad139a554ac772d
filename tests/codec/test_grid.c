/*
 * Grid codes (zmpi_grid_*, src/codec/grid.c): the homomorphic form of the
 * SUM reductions.
 *
 *   - quantise: every code within maxerr of its value (checked here in long
 *     double), the same codes as a reference loop written here, failures
 *     (NaN, Inf, codes beyond 2^30, values beyond maxerr) reported; the
 *     AVX2 kernels give the portable code's results bit for bit;
 *   - pack / unpack: exact round trips of any int32 (widths 0..32, all
 *     zeros, all -1, all negative, INT32_MIN/MAX, counts around the block
 *     of 64), the AVX2 packing byte-identical to the portable one, unpack
 *     with an addend = the sum modulo 2^32;
 *   - add: pack(a) + pack(b) unpacks to a + b modulo 2^32 and is byte-identical
 *     to pack(a + b) (the canonical form), for random widths and signs;
 *   - hostile input: every single-byte change and every truncation of a
 *     packed array, a wrong count, a wrong magic, a too small output:
 *     ZMPI_ERR_CORRUPT / ZMPI_ERR_DST_TOO_SMALL, never a crash or a wrong
 *     success;
 *   - dequantise: the codes' prefix sums times the step, rounded once;
 *   - zmpi_value_range (which picks a grid's step): the finite min / max and
 *     the non-finite flag of a loop written here, for float and double, every
 *     count 0..67 and a NaN / +Inf / -Inf at every position (vector body and
 *     tail), all non-finite, and a dtype without values.
 */
#include "grid.h"
#include "testutil.h"

static tstate T;
static uint64_t seed = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
    return (uint32_t)(rng_next(&seed) >> 32);
}

/* Random values of at most `bits` bits in two's complement (signs: 0 mixed, 1 >= 0, 2 < 0). */
static void random_values(int32_t *v, size_t n, unsigned bits, int signs)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t u = rnd();
        int32_t x;
        if (bits == 0)
            x = 0;
        else if (bits >= 32)
            x = (int32_t)u;
        else {
            int64_t lo = -((int64_t)1 << (bits - 1)), span = (int64_t)1 << bits;
            x = (int32_t)(lo + (int64_t)(u % (uint64_t)span));
        }
        if (signs == 1 && x < 0)
            x = x == INT32_MIN ? INT32_MAX : -x;
        if (signs == 2 && x >= 0)
            x = -x - 1;
        v[i] = x;
    }
}

static void test_pack_roundtrip(void)
{
    const size_t counts[] = {0, 1, 2, 63, 64, 65, 127, 128, 1000, 4099};
    for (size_t ci = 0; ci < sizeof counts / sizeof *counts; ci++) {
        size_t n = counts[ci], cap = zmpi_grid_bound(n);
        int32_t *v = malloc((n + 1) * sizeof *v), *w = malloc((n + 1) * sizeof *w), *add = malloc((n + 1) * sizeof *add);
        uint8_t *p0 = malloc(cap), *p1 = malloc(cap);
        for (unsigned bits = 0; bits <= 32; bits += (bits < 4 ? 1 : 7)) {
            for (int signs = 0; signs < 3; signs++) {
                random_values(v, n, bits, signs);
                if (n > 3 && bits == 32) {
                    v[0] = INT32_MIN;
                    v[1] = INT32_MAX;
                    v[2] = -1;
                }
                ptrdiff_t l0 = zc_grid_pack_impl(v, n, p0, cap, 0), l1 = zc_grid_pack_impl(v, n, p1, cap, 1);
                CHECK(&T, l0 > 0 && (size_t)l0 <= cap, "pack n=%zu bits=%u: %td", n, bits, l0);
                CHECK(&T, l0 == l1 && !memcmp(p0, p1, (size_t)l0), "pack n=%zu bits=%u: simd differs", n, bits);
                for (int simd = 0; simd < 2; simd++) {
                    memset(w, 0x55, n * sizeof *w);
                    int rc = zc_grid_unpack_impl(p0, (size_t)l0, NULL, w, n, simd);
                    CHECK(&T, rc == ZMPI_OK && !memcmp(v, w, n * sizeof *v), "unpack n=%zu bits=%u simd=%d rc=%d", n,
                          bits, simd, rc);
                    random_values(add, n, 32, 0);
                    rc = zc_grid_unpack_impl(p0, (size_t)l0, add, w, n, simd);
                    int ok = rc == ZMPI_OK;
                    for (size_t i = 0; ok && i < n; i++)
                        ok = (uint32_t)w[i] == (uint32_t)v[i] + (uint32_t)add[i];
                    CHECK(&T, ok, "unpack+add n=%zu bits=%u simd=%d", n, bits, simd);
                }
            }
        }
        for (size_t i = 0; i < n; i++)
            v[i] = -1;
        ptrdiff_t l = zmpi_grid_pack(v, n, p0, cap);
        /* all -1: one byte per full block; the zero-padded last one has a sign plane */
        CHECK(&T, l == (ptrdiff_t)(16 + (n + 63) / 64 + (n % 64 ? 8 : 0)), "all -1, n=%zu: %td bytes", n, l);
        CHECK(&T, zmpi_grid_unpack(p0, (size_t)l, NULL, w, n) == ZMPI_OK && !memcmp(v, w, n * sizeof *v),
              "all -1 round trip n=%zu", n);
        free(v), free(w), free(add), free(p0), free(p1);
    }
}

static void test_add(void)
{
    for (int round = 0; round < 60; round++) {
        size_t n = 1 + rnd() % 700, cap = zmpi_grid_bound(n);
        int32_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *s = malloc(n * sizeof *s);
        int32_t *w = malloc(n * sizeof *w);
        uint8_t *pa = malloc(cap), *pb = malloc(cap), *ps = malloc(cap), *pr = malloc(cap);
        random_values(a, n, rnd() % 33, (int)(rnd() % 3));
        random_values(b, n, rnd() % 33, (int)(rnd() % 3));
        if (round % 10 == 0)
            for (size_t i = 0; i < n; i++)
                b[i] = (int32_t)(0u - (uint32_t)a[i]); /* sums to zero */
        for (size_t i = 0; i < n; i++)
            s[i] = (int32_t)((uint32_t)a[i] + (uint32_t)b[i]);
        ptrdiff_t la = zmpi_grid_pack(a, n, pa, cap), lb = zmpi_grid_pack(b, n, pb, cap);
        ptrdiff_t ls = zmpi_grid_add(pa, (size_t)la, pb, (size_t)lb, n, ps, cap);
        ptrdiff_t lr = zmpi_grid_pack(s, n, pr, cap);
        CHECK(&T, ls > 0 && ls == lr && !memcmp(ps, pr, (size_t)ls), "add round %d n=%zu: %td vs %td bytes", round, n,
              ls, lr);
        CHECK(&T, zmpi_grid_unpack(ps, (size_t)ls, NULL, w, n) == ZMPI_OK && !memcmp(w, s, n * sizeof *s),
              "add round %d: unpacked sum differs", round);
        /* a packing of another count, and a too small output */
        CHECK(&T, zmpi_grid_add(pa, (size_t)la, pb, (size_t)lb, n + 1, ps, cap) == ZMPI_ERR_CORRUPT, "add: count");
        CHECK(&T, zmpi_grid_add(pa, (size_t)la, pb, (size_t)lb, n, ps, 20) == ZMPI_ERR_DST_TOO_SMALL || ls <= 20,
              "add: small output");
        free(a), free(b), free(s), free(w), free(pa), free(pb), free(ps), free(pr);
    }
}

static void test_hostile(void)
{
    size_t n = 300, cap = zmpi_grid_bound(n);
    int32_t v[300], w[300];
    uint8_t *p = malloc(cap), *q = malloc(cap), *o = malloc(cap);
    random_values(v, n, 13, 0);
    ptrdiff_t l = zmpi_grid_pack(v, n, p, cap);
    CHECK(&T, l > 16, "pack: %td", l);
    CHECK(&T, zmpi_grid_pack(v, n, o, 16 + 3) == ZMPI_ERR_DST_TOO_SMALL, "pack: small output");
    CHECK(&T, zmpi_grid_unpack(p, (size_t)l, NULL, w, n - 1) == ZMPI_ERR_CORRUPT, "unpack: wrong count");
    long accepted = 0;
    for (ptrdiff_t i = 0; i < l; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            memcpy(q, p, (size_t)l);
            q[i] ^= (uint8_t)(1u << bit);
            int rc = zmpi_grid_unpack(q, (size_t)l, NULL, w, n);
            ptrdiff_t ra = zmpi_grid_add(q, (size_t)l, p, (size_t)l, n, o, cap);
            accepted += rc == ZMPI_OK || ra >= 0;
        }
    }
    CHECK(&T, accepted == 0, "%ld changed packings accepted", accepted);
    for (ptrdiff_t len = 0; len < l; len++)
        CHECK(&T, zmpi_grid_unpack(p, (size_t)len, NULL, w, n) == ZMPI_ERR_CORRUPT, "truncated to %td accepted", len);
    /* a wrong head behind a valid checksum: the structure is checked too */
    CHECK(&T, zmpi_grid_unpack(p, (size_t)l + 1, NULL, w, n) == ZMPI_ERR_CORRUPT, "trailing byte accepted");
    CHECK(&T, zmpi_grid_unpack(NULL, 0, NULL, w, n) == ZMPI_ERR_ARG, "NULL input");
    free(p), free(q), free(o);
}

static void test_quantize(void)
{
    const size_t n = 1000;
    for (int dt = 0; dt < 2; dt++) {
        zmpi_dtype dtype = dt ? ZMPI_DOUBLE : ZMPI_FLOAT;
        size_t es = zmpi_dtype_size(dtype);
        void *x = malloc(n * es), *y0 = malloc(n * es), *y1 = malloc(n * es);
        int32_t *d0 = malloc(n * sizeof *d0), *d1 = malloc(n * sizeof *d1);
        for (size_t i = 0; i < n; i++) {
            double val = 40.0 * sin(0.01 * (double)i) + 1e-3 * (double)(rnd() % 1000) - 7.5;
            if (dt)
                ((double *)x)[i] = val;
            else
                ((float *)x)[i] = (float)val;
        }
        double e = 1e-3, step = 2 * e * (1 - 0x1p-17), maxerr = e * (1 - 0x1p-18);
        int r0 = zc_grid_quantize_impl(x, n, dtype, step, maxerr, d0, 0);
        int r1 = zc_grid_quantize_impl(x, n, dtype, step, maxerr, d1, 1);
        CHECK(&T, r0 == ZMPI_OK && r1 == ZMPI_OK && !memcmp(d0, d1, n * sizeof *d0), "quantize dtype %d: simd differs",
              dt);
        /* the codes against their values, and a reference loop */
        int64_t q = 0;
        long bad = 0;
        for (size_t i = 0; i < n; i++) {
            q += d0[i];
            long double v = dt ? ((double *)x)[i] : ((float *)x)[i];
            if (fabsl(v - (long double)q * step) > e)
                bad++;
            if ((int64_t)nearbyint((double)v / step) != q)
                bad++;
        }
        CHECK(&T, bad == 0, "quantize dtype %d: %ld codes off", dt, bad);
        int u0 = zc_grid_dequantize_impl(d0, n, step, dtype, y0, 0), u1 = zc_grid_dequantize_impl(d0, n, step, dtype, y1, 1);
        CHECK(&T, u0 == ZMPI_OK && u1 == ZMPI_OK && !memcmp(y0, y1, n * es), "dequantize dtype %d: simd differs", dt);
        q = 0;
        bad = 0;
        for (size_t i = 0; i < n; i++) {
            q += d0[i];
            double ref = (double)q * step;
            if (dt ? ((double *)y0)[i] != ref : ((float *)y0)[i] != (float)ref)
                bad++;
        }
        CHECK(&T, bad == 0, "dequantize dtype %d: %ld values off", dt, bad);
        /* failures: NaN, Inf, a code beyond 2^30, a maxerr below the grid's error */
        for (int simd = 0; simd < 2; simd++) {
            double special[3] = {NAN, INFINITY, 3e9 * step};
            for (int k = 0; k < 3; k++) {
                size_t at = (size_t)(17 * k + 5 * simd + 100);
                if (dt)
                    ((double *)x)[at] = special[k];
                else
                    ((float *)x)[at] = (float)special[k];
                CHECK(&T, zc_grid_quantize_impl(x, n, dtype, step, maxerr, d1, simd) == ZMPI_ERR_ARG,
                      "quantize dtype %d simd %d: special %d accepted", dt, simd, k);
                if (dt)
                    ((double *)x)[at] = 1.0;
                else
                    ((float *)x)[at] = 1.0f;
            }
            CHECK(&T, zc_grid_quantize_impl(x, n, dtype, step, step / 8, d1, simd) == ZMPI_ERR_ARG,
                  "quantize dtype %d simd %d: maxerr below the grid's error accepted", dt, simd);
        }
        CHECK(&T, zmpi_grid_quantize(x, n, ZMPI_BYTE, step, maxerr, d1) == ZMPI_ERR_ARG, "bytes accepted");
        CHECK(&T, zmpi_grid_quantize(x, n, dtype, 0, maxerr, d1) == ZMPI_ERR_ARG, "step 0 accepted");
        free(x), free(y0), free(y1), free(d0), free(d1);
    }
}

/* The reference: a plain loop over the values. */
static void range_ref(const double *v, size_t n, double *mn, double *mx, int *bad)
{
    *mn = INFINITY;
    *mx = -INFINITY;
    *bad = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) {
            *bad = 1;
            continue;
        }
        *mn = v[i] < *mn ? v[i] : *mn;
        *mx = v[i] > *mx ? v[i] : *mx;
    }
}

static void test_value_range(void)
{
    enum { N = 67 };
    double v[N], d[N];
    float f[N];
    const double odd[3] = {NAN, INFINITY, -INFINITY};
    long wrong = 0;
    for (size_t n = 0; n <= N; n++) {
        for (int o = -1; o < 3; o++) {
            for (size_t at = 0; at < (o < 0 ? 1 : n); at++) {
                for (size_t i = 0; i < n; i++)
                    v[i] = (double)(float)((double)(rnd() % 20001) - 10000.0) / 8;
                if (o >= 0)
                    v[at] = odd[o];
                for (size_t i = 0; i < n; i++) {
                    f[i] = (float)v[i];
                    d[i] = v[i];
                }
                double rl, rh, l, h;
                int rb, b = -1;
                range_ref(v, n, &rl, &rh, &rb);
                int ok = zmpi_value_range(f, n, ZMPI_FLOAT, &l, &h, &b);
                wrong += ok != (rl <= rh) || l != rl || h != rh || b != rb;
                b = -1;
                ok = zmpi_value_range(d, n, ZMPI_DOUBLE, &l, &h, &b);
                wrong += ok != (rl <= rh) || l != rl || h != rh || b != rb;
            }
        }
    }
    CHECK(&T, wrong == 0, "value range: %ld cases differ from the reference loop", wrong);
    for (size_t i = 0; i < N; i++)
        f[i] = i % 2 ? NAN : -INFINITY;
    double l = 0, h = 0;
    int b = 0;
    CHECK(&T, zmpi_value_range(f, N, ZMPI_FLOAT, &l, &h, &b) == 0 && l == INFINITY && h == -INFINITY && b == 1,
          "value range: no finite value (%g %g %d)", l, h, b);
    CHECK(&T, zmpi_value_range(f, N, ZMPI_BYTE, &l, &h, &b) == 0 && b == 0, "value range: bytes have no range");
    CHECK(&T, zmpi_value_range(NULL, 0, ZMPI_FLOAT, &l, &h, NULL) == 0 && l == INFINITY, "value range: empty");
}

int main(void)
{
    test_pack_roundtrip();
    test_add();
    test_hostile();
    test_quantize();
    test_value_range();
    printf("test_grid: %ld checks, %ld failures\n", T.checks, T.failures);
    return T.failures ? 1 : 0;
}
