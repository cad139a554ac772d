/*
 * Writes seed corpora for the fuzz targets: valid segment payloads of every
 * codec in the input layout of fuzz_decode.c, and whole streams for
 * fuzz_stream. Usage: fuzz_seeds DIR (creates DIR/fuzz_decode_<codec>/...).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "zmpi/codec.h"

static const char *const names[] = {"stored", "zstd", "fzl", "xorlzc", "xorlzc_inter", "trunc",
                                    "dp2sp", "trunc_inter", "dp2sp_inter", "linpred_byte", "linpred_bit"};

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
            for (int pat = 0; pat < 3; pat++) {
                for (int i = 0; i < N; i++)
                    v[i] = pat == 0 ? 280 + 10 * sin(i * 0.05) : pat == 1 ? (i % 7) * 1e3 - (i % 3) : (i == 5 ? NAN : i * 0.5);
                float f[N];
                for (int i = 0; i < N; i++)
                    f[i] = (float)v[i];
                const void *x = dt == ZMPI_FLOAT ? (const void *)f : (const void *)v;
                zmpi_ctx *ctx = zmpi_ctx_create();
                zmpi_ctx_set_codec(ctx, (zmpi_codec)c);
                zmpi_ctx_set_bound(ctx, ZMPI_EB_ABS, 1e-3);
                zmpi_ctx_set_param(ctx, ZMPI_P_SEGMENT, 320);
                zmpi_channel *ch = zmpi_channel_create(0);
                ptrdiff_t len = zmpi_compress_channel(ctx, ch, x, N, dt, buf, sizeof buf);
                zmpi_channel_free(ch);
                zmpi_ctx_free(ctx);
                if (len < 0)
                    continue;
                write_file(argv[1], "fuzz_stream", k++, buf, (size_t)len, NULL, 0);
                /* one segment: header 48, index 8, then mode byte + payload */
                if (len > 57 && buf[56] == 0) {
                    int psel = c == ZMPI_CODEC_FZL ? 2 : 0;
                    uint8_t pre[5] = {(uint8_t)dti, (uint8_t)((N - 1) & 0xff), (uint8_t)((N - 1) >> 8),
                                      (uint8_t)psel, 1};
                    char name[64];
                    snprintf(name, sizeof name, "fuzz_decode_%s", names[c]);
                    write_file(argv[1], name, k++, pre, 5, buf + 57, (size_t)len - 57);
                }
            }
        }
    }
    printf("fuzz_seeds: wrote %d seeds under %s\n", k, argv[1]);
    return 0;
}
