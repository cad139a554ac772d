/*
 * Hostile streams: every decoder must return an error code (or, where a
 * change cannot be detected, a result of the right size) and never crash,
 * read or write out of bounds, or allocate from an unchecked length.
 * Run under ASan/UBSan by scripts/test.
 *   - truncation to every shorter length,
 *   - every bit of the header flipped,
 *   - every header field set to hostile values *with a valid header check*
 *     (so the field validators themselves are exercised),
 *   - random bit flips in the payload (with checksums: detected; without:
 *     decoders must still stay in bounds),
 *   - random bytes after a valid header.
 */
#include <xxhash.h>

#include "testutil.h"

#define HDR 48

static void fix_header_check(uint8_t *s, size_t size)
{
    uint32_t nseg = (uint32_t)s[32] | (uint32_t)s[33] << 8 | (uint32_t)s[34] << 16 | (uint32_t)s[35] << 24;
    if ((size_t)nseg > (size - HDR) / 8)
        return; /* cannot cover an index longer than the buffer: leave it invalid */
    uint64_t head = XXH3_64bits(s, 36);
    uint32_t h = (uint32_t)XXH3_64bits_withSeed(s + 40, 8 + 8 * (size_t)nseg, head);
    memcpy(s + 36, &h, 4);
}

static int decode(zmpi_ctx *ctx, const uint8_t *s, size_t size, void *out, size_t cap)
{
    zmpi_channel *ch = zmpi_channel_create(0);
    ptrdiff_t r = zmpi_decompress_channel(ctx, ch, s, size, out, cap);
    zmpi_channel_free(ch);
    return r < 0 ? (int)r : 0;
}

static void attack(tstate *ts, zmpi_codec codec, zmpi_dtype dt, int checksum, uint64_t seed)
{
    size_t n = 700;
    double *v = malloc(sizeof(double) * n);
    gen_fill(v, n, GEN_SPIKES, 1e-3, seed);
    v[5] = NAN;
    size_t es = zmpi_dtype_size(dt);
    void *x = malloc(n * es);
    for (size_t i = 0; i < n; i++) {
        if (dt == ZMPI_FLOAT)
            ((float *)x)[i] = (float)v[i];
        else
            ((double *)x)[i] = v[i];
    }
    zmpi_ctx *ctx = zmpi_ctx_create();
    zmpi_ctx_set_codec(ctx, codec);
    zmpi_ctx_set_bound(ctx, ZMPI_EB_REL, 1e-3);
    zmpi_ctx_set_param(ctx, ZMPI_P_SEGMENT, 256);
    zmpi_ctx_set_param(ctx, ZMPI_P_CHECKSUM, checksum);
    size_t cap = zmpi_max_compressed_size(ctx, n, dt);
    uint8_t *s = malloc(cap), *m = malloc(cap + 64);
    size_t outcap = n * es;
    void *out = malloc(outcap);
    zmpi_channel *ch = zmpi_channel_create(0);
    ptrdiff_t len = zmpi_compress_channel(ctx, ch, x, n, dt, s, cap);
    zmpi_channel_free(ch);
    const char *name = zmpi_codec_name(codec);
    CHECK(ts, len > HDR, "%s: compress %td", name, len);
    if (len <= HDR)
        goto out;
    CHECK(ts, decode(ctx, s, (size_t)len, out, outcap) == 0, "%s: clean decode", name);

    /* truncation: exact-size heap copies so ASan sees any over-read */
    for (size_t l = 0; l < (size_t)len; l++) {
        uint8_t *t = malloc(l ? l : 1);
        memcpy(t, s, l);
        int rc = decode(ctx, t, l, out, outcap);
        CHECK(ts, rc < 0, "%s: truncated to %zu accepted", name, l);
        free(t);
    }
    /* trailing garbage */
    memcpy(m, s, (size_t)len);
    m[len] = 0;
    CHECK(ts, decode(ctx, m, (size_t)len + 1, out, outcap) == ZMPI_ERR_CORRUPT, "%s: trailing byte", name);

    /* header bit flips (the header check catches every one) */
    for (size_t bit = 0; bit < 8 * (HDR + 16); bit++) {
        memcpy(m, s, (size_t)len);
        m[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        int rc = decode(ctx, m, (size_t)len, out, outcap);
        CHECK(ts, rc < 0, "%s: header bit %zu flip accepted", name, bit);
    }

    /* hostile field values with a valid header check */
    /* must: 1 = structurally invalid, must be rejected; 0 = may decode (a
     * forged but consistent header cannot be told from a real one), must not crash */
    struct { size_t off, width; uint64_t val; int must; } fields[] = {
        {4, 1, 2, 1}, {4, 1, 0, 1}, {5, 1, 200, 1}, {5, 1, ZMPI_CODEC_STORED, 1}, {5, 1, ZMPI_CODEC_ZSTD, 0},
        {5, 1, ZMPI_CODEC_LINPRED_BIT, 0}, {6, 1, 9, 1}, {6, 1, ZMPI_BYTE, 0},
        {6, 1, dt == ZMPI_FLOAT ? ZMPI_DOUBLE : ZMPI_FLOAT, 0}, {7, 1, 0xff, 1}, {7, 1, 2, 0},
        {8, 8, UINT64_MAX, 1}, {8, 8, (uint64_t)1 << 62, 1}, {8, 8, 0, 1}, {8, 8, 699, 0}, {8, 8, 701, 0},
        {8, 8, 2000, 1}, {16, 8, 0x7ff8000000000000ull, 1}, {16, 8, 0x7ff0000000000000ull, 1},
        {16, 8, 0xbff0000000000000ull, 1}, {16, 8, 0, 0}, {16, 8, 0x3ff0000000000000ull, 0},
        {24, 4, 0, 0}, {24, 4, 12, 0}, {24, 4, UINT32_MAX, 0}, {28, 4, 0, 1}, {28, 4, 1, 1},
        {28, 4, UINT32_MAX, 1}, {32, 4, 0, 1}, {32, 4, UINT32_MAX, 1}, {32, 4, 2, 1}, {40, 8, 5, 0},
        {48, 4, 0, 1}, {48, 4, UINT32_MAX, 1}, {48, 4, 1, 1}, {52, 4, 0, 0}, {56, 4, 3, 1},
    };
    for (size_t k = 0; k < sizeof fields / sizeof *fields; k++) {
        memcpy(m, s, (size_t)len);
        uint64_t old = 0;
        memcpy(&old, m + fields[k].off, fields[k].width);
        if (old == fields[k].val)
            continue; /* not a change */
        memcpy(m + fields[k].off, &fields[k].val, fields[k].width);
        fix_header_check(m, (size_t)len);
        int rc = decode(ctx, m, (size_t)len, out, outcap);
        if (fields[k].must)
            CHECK(ts, rc < 0, "%s: field @%zu = %llu accepted", name, fields[k].off,
                  (unsigned long long)fields[k].val);
    }

    /* payload bit flips */
    uint64_t rs = seed;
    for (int t = 0; t < 400; t++) {
        memcpy(m, s, (size_t)len);
        int flips = 1 + (int)(rng_next(&rs) % 3);
        for (int f = 0; f < flips; f++) {
            size_t pos = HDR + (size_t)(rng_next(&rs) % (uint64_t)(len - HDR));
            m[pos] ^= (uint8_t)(1u << (rng_next(&rs) % 8));
        }
        int rc = decode(ctx, m, (size_t)len, out, outcap);
        if (checksum)
            CHECK(ts, rc < 0, "%s: payload flip accepted with checksums", name);
        else if (rc < 0)
            CHECK(ts, rc == ZMPI_ERR_CORRUPT || rc == ZMPI_ERR_CHECKSUM, "%s: odd error %d", name, rc);
    }
    /* random bytes after a valid header and index */
    for (int t = 0; t < 200; t++) {
        memcpy(m, s, (size_t)len);
        for (size_t i = HDR + 8 * 3; i < (size_t)len; i++)
            m[i] = (uint8_t)rng_next(&rs);
        (void)decode(ctx, m, (size_t)len, out, outcap);
    }
out:
    free(v);
    free(x);
    free(s);
    free(m);
    free(out);
    zmpi_ctx_free(ctx);
}

int main(void)
{
    tstate ts = {0, 0};
    for (int c = 0; c < ZMPI_CODEC_COUNT_; c++)
        for (int dti = 0; dti < 2; dti++) {
            zmpi_dtype dt = dti ? ZMPI_DOUBLE : ZMPI_FLOAT;
            if ((c == ZMPI_CODEC_DP2SP || c == ZMPI_CODEC_DP2SP_INTER) && dt == ZMPI_FLOAT)
                continue;
            for (int ck = 0; ck < 2; ck++)
                attack(&ts, (zmpi_codec)c, dt, ck, (uint64_t)(c * 4 + dti * 2 + ck + 1));
        }
    /* garbage that is not a zmpi stream at all */
    zmpi_ctx *ctx = zmpi_ctx_create();
    uint8_t junk[300];
    float out[64];
    uint64_t rs = 42;
    for (int t = 0; t < 2000; t++) {
        size_t l = (size_t)(rng_next(&rs) % sizeof junk);
        for (size_t i = 0; i < l; i++)
            junk[i] = (uint8_t)rng_next(&rs);
        if (t % 2 && l >= 4)
            memcpy(junk, "ZMPI", 4);
        ptrdiff_t r = zmpi_decompress(ctx, junk, l, out, sizeof out);
        CHECK(&ts, r < 0, "junk of %zu bytes accepted", l);
    }
    zmpi_ctx_free(ctx);
    printf("test_corrupt: %ld checks, %ld failures\n", ts.checks, ts.failures);
    return ts.failures ? 1 : 0;
}
