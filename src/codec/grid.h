/*
 * Internal entry points of the grid codes (grid.c; the public functions are
 * zmpi_grid_* in zmpi/codec.h): simd = 0 forces the portable code, so that
 * tests/codec compares it with the AVX2 kernels byte for byte.
 */
#ifndef ZMPI_CODEC_GRID_H
#define ZMPI_CODEC_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "zmpi/codec.h"

int zc_grid_quantize_impl(const void *x, size_t n, zmpi_dtype dtype, double step, double maxerr, int32_t *d,
                          int simd);
int zc_grid_dequantize_impl(const int32_t *d, size_t n, double step, zmpi_dtype dtype, void *y, int simd);
ptrdiff_t zc_grid_pack_impl(const int32_t *d, size_t n, void *dst, size_t cap, int simd);
int zc_grid_unpack_impl(const void *src, size_t size, const int32_t *addend, int32_t *out, size_t n, int simd);

#endif
