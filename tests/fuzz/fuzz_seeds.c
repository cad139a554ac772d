/*
 * Writes seed corpora for the fuzz targets: valid segment payloads of every
 * codec in the input layout of fuzz_decode.c, whole streams for fuzz_stream,
 * and (built with libbz2: FUZZ_SEEDS_BZIP2) small valid .bz2 files behind
 * fuzz_bzdecode.c's 10-byte header for fuzz_bzdecode. The fields: a smooth
 * field, steps, a ramp with one NaN, and the smooth field with non-finite and
 * huge values at the first, middle and last positions (fzr's outlier records,
 * whose positions a mutation must push to n, duplicate or reorder; also at
 * 100 and 64 elements, short payloads).
 * Usage: fuzz_seeds DIR (creates DIR/fuzz_decode_<codec>/..., DIR/fuzz_stream/...,
 * DIR/fuzz_bzdecode/...).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zmpi/codec.h"

#ifdef FUZZ_SEEDS_BZIP2
#include <bzlib.h>
#endif

static const char *const names[] = {"stored", "zstd", "fzl", "xorlzc", "xorlzc_inter", "trunc",
                                    "dp2sp", "trunc_inter", "dp2sp_inter", "linpred_byte", "linpred_bit",
                                    "fzr"};
_Static_assert(sizeof names / sizeof *names == ZMPI_CODEC_COUNT_, "a fuzz name per codec");

static int write_file(const char *dir, const char *name, int k, const void *a, size_t na,
                      const void *b, size_t nb)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/seed%d", dir, name, k);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    fwrite(a, 1, na, f);
    fwrite(b, 1, nb, f);
    return fclose(f);
}

#ifdef FUZZ_SEEDS_BZIP2
/* fuzz_bzdecode's seeds: header (see fuzz_bzdecode.c) + one or more .bz2
 * streams made by libbz2, sometimes followed by trailing bytes. Returns how
 * many were written. */
static int bzdecode_seeds(const char *dir)
{
    enum { NDATA = 260000 };
    static char data[NDATA];
    static char z[2][NDATA + NDATA / 100 + 1200];
    unsigned zn[2];
    /* text-like bytes without long runs (a block of them compresses to a few hundred bytes) */
    for (int i = 0; i < NDATA; i++)
        data[i] = (char)("abcab cabx"[i % 10] + (i % 997 == 0));
    static const struct {
        unsigned n;             /* input bytes */
        int level;              /* -1 .. -9 */
        int runs;               /* runs of 1..300 equal bytes instead of the pattern */
        int twice;              /* a second stream, of the first 777 bytes at -9 */
        const char *trail;      /* trailing bytes */
        unsigned char hdr[10];  /* fuzz_bzdecode's header */
    } seeds[] = {
        {0, 9, 0, 0, "", {0}},
        {5, 9, 0, 0, "", {0}},
        {3000, 1, 0, 0, "", {0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {250000, 1, 0, 0, "", {0x01, 1, 0, 0, 0, 0, 0, 0, 0, 0}},         /* 3 blocks, 16-byte reads */
        {250000, 1, 0, 0, "", {0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0}},         /* 2 threads + 1 remote */
        {250000, 1, 0, 0, "", {0x18, 0, 0, 0, 0, 0, 0, 0, 0, 0}},         /* -t, 2 remote */
        {250000, 1, 0, 0, "", {0x01, 40, 0, 0, 0x0d, 0, 0x12, 0x34, 0, 0}}, /* planted magics */
        {250000, 1, 0, 0, "", {0x00, 0, 4, 9, 0, 0, 0, 0, 0, 0}},         /* small cuts, worker level 9 */
        {20000, 2, 1, 0, "", {0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {2000, 1, 0, 1, "", {0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0}},           /* two streams */
        {2000, 1, 0, 1, "BZh0 garbage", {0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {2000, 1, 0, 0, "BZ", {0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
        {250000, 1, 0, 0, "", {0x04, 0, 0, 0, 0, 0x31, 0, 0, 2, 0}},      /* failing remote, output, input */
        {3000, 1, 0, 0, "", {0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0}},           /* bz_decode_block */
        {1000, 3, 1, 0, "", {0x20, 0, 0, 0, 0, 0, 0, 0, 0, 3}},
    };
    int k = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
        static char in[NDATA];
        unsigned n = seeds[i].n;
        for (unsigned j = 0, r = 0; j < n; r++) { /* runs of 1..300 bytes */
            unsigned len = 1 + (r * 37 + r / 3) % 300;
            for (unsigned q = 0; q < len && j < n; q++, j++)
                in[j] = seeds[i].runs ? (char)('a' + r % 3) : data[j];
        }
        zn[0] = sizeof z[0];
        zn[1] = sizeof z[1];
        if (BZ2_bzBuffToBuffCompress(z[0], &zn[0], in, n, seeds[i].level, 0, 30) != BZ_OK ||
            (seeds[i].twice && BZ2_bzBuffToBuffCompress(z[1], &zn[1], in, 777, 9, 0, 30) != BZ_OK))
            return -1;
        size_t tl = strlen(seeds[i].trail);
        if (!seeds[i].twice)
            zn[1] = 0;
        memcpy(z[1] + zn[1], seeds[i].trail, tl);
        if (write_file(dir, "fuzz_bzdecode", k++, seeds[i].hdr, sizeof seeds[i].hdr, z[0], zn[0]))
            return -1;
        if (zn[1] + tl) { /* the rest behind the first stream */
            char path[4096];
            snprintf(path, sizeof path, "%s/fuzz_bzdecode/seed%d", dir, k - 1);
            FILE *f = fopen(path, "ab");
            if (!f || fwrite(z[1], 1, zn[1] + tl, f) != zn[1] + tl || fclose(f))
                return -1;
        }
    }
    return k;
}
#endif

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fuzz_seeds DIR\n");
        return 2;
    }
    mkdir(argv[1], 0755);
    enum { N = 300 };
    static double v[N];
    static uint8_t buf[1 << 16];
    int k = 0;
    for (int c = 0; c < ZMPI_CODEC_COUNT_; c++) {
        for (int dti = 0; dti < 2; dti++) {
            zmpi_dtype dt = dti ? ZMPI_DOUBLE : ZMPI_FLOAT;
            /* patterns 0-2 at N elements; 3 (outliers) at N and at counts of one
             * and a few blocks, whose short payloads put the records within a
             * mutation's reach */
            for (int run = 0; run < 6; run++) {
                int pat = run < 3 ? run : 3, n = run < 4 ? N : run == 4 ? 100 : 64;
                for (int i = 0; i < n; i++)
                    v[i] = pat == 0 ? 280 + 10 * sin(i * 0.05) : pat == 1 ? (i % 7) * 1e3 - (i % 3) : (i == 5 ? NAN : i * 0.5);
                if (pat == 3) { /* outliers (fzr's records) at the first and last positions and between */
                    for (int i = 0; i < n; i++)
                        v[i] = 280 + 10 * sin(i * 0.05);
                    v[0] = NAN;
                    v[1] = INFINITY;
                    v[n / 2] = 1e30;
                    v[n / 2 + 1] = -1e30;
                    v[n - 2] = -INFINITY;
                    v[n - 1] = NAN;
                }
                float f[N];
                for (int i = 0; i < n; i++)
                    f[i] = (float)v[i];
                const void *x = dt == ZMPI_FLOAT ? (const void *)f : (const void *)v;
                zmpi_ctx *ctx = zmpi_ctx_create();
                zmpi_ctx_set_codec(ctx, (zmpi_codec)c);
                zmpi_ctx_set_bound(ctx, ZMPI_EB_ABS, 1e-3);
                zmpi_ctx_set_param(ctx, ZMPI_P_SEGMENT, 320);
                if (pat == 0) /* fzr's 2-D prediction (15 rows of 20) */
                    zmpi_ctx_set_dims(ctx, 2, (const size_t[]){15, 20});
                zmpi_channel *ch = zmpi_channel_create(0);
                ptrdiff_t len = zmpi_compress_channel(ctx, ch, x, (size_t)n, dt, buf, sizeof buf);
                zmpi_channel_free(ch);
                zmpi_ctx_free(ctx);
                if (len < 0)
                    continue;
                write_file(argv[1], "fuzz_stream", k++, buf, (size_t)len, NULL, 0);
                /* one segment: header 48, index 8, then mode byte + payload */
                if (len > 57 && buf[56] == 0) {
                    int psel = c == ZMPI_CODEC_FZL ? 2 : 0;
                    uint8_t pre[5] = {(uint8_t)dti, (uint8_t)((n - 1) & 0xff), (uint8_t)((n - 1) >> 8),
                                      (uint8_t)psel, 1};
                    char name[64];
                    snprintf(name, sizeof name, "fuzz_decode_%s", names[c]);
                    write_file(argv[1], name, k++, pre, 5, buf + 57, (size_t)len - 57);
                }
            }
        }
    }
#ifdef FUZZ_SEEDS_BZIP2
    int kb = bzdecode_seeds(argv[1]);
    if (kb < 0) {
        fprintf(stderr, "fuzz_seeds: could not write the fuzz_bzdecode seeds\n");
        return 1;
    }
    k += kb;
#endif
    printf("fuzz_seeds: wrote %d seeds under %s\n", k, argv[1]);
    return 0;
}
