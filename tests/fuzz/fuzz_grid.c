/*
 * libFuzzer target for packed grid codes (zmpi_grid_unpack, zmpi_grid_add):
 * the input is a count (2 bytes) and the blocks; the target writes the
 * header with a valid checksum around them, so that the block parser itself
 * is reached (a checksum would reject almost every mutation first). Oracle:
 * whatever unpacks must also add to itself, and the sum must unpack to twice
 * the values modulo 2^32.
 */
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "zmpi/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    size_t n = (size_t)data[0] | (size_t)data[1] << 8, len = 16 + size - 2;
    uint8_t *p = malloc(len);
    memcpy(p + 16, data + 2, size - 2);
    put32(p, 0x3252475Au); /* "ZGR2" */
    put32(p + 8, (uint32_t)n);
    put32(p + 12, 0);
    put32(p + 4, (uint32_t)XXH3_64bits_withSeed(p + 16, len - 16, n));
    int32_t *v = malloc((n + 1) * sizeof *v), *w = malloc((n + 1) * sizeof *w);
    size_t cap = zmpi_grid_bound(n);
    uint8_t *s = malloc(cap);
    if (zmpi_grid_unpack(p, len, NULL, v, n) == ZMPI_OK) {
        ptrdiff_t l = zmpi_grid_add(p, len, p, len, n, s, cap);
        if (l < 0 || zmpi_grid_unpack(s, (size_t)l, NULL, w, n) != ZMPI_OK)
            abort();
        for (size_t i = 0; i < n; i++)
            if ((uint32_t)w[i] != 2u * (uint32_t)v[i])
                abort();
    }
    free(p);
    free(v);
    free(w);
    free(s);
    return 0;
}
