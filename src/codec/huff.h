/*
 * Byte-symbol canonical Huffman coding, code lengths limited to HUFF_LMAX bits,
 * table-driven decoding (one lookup per symbol). Used by fzr for its residual
 * bytes.
 *
 * Encoded form of n symbols (n known to both ends):
 *   u8  kind        0 = Huffman, 1 = every symbol equals the next byte
 *   kind 0:  128 bytes of code lengths, two 4-bit lengths per byte (symbol 2i
 *            in the low nibble; 0 = symbol absent; at most HUFF_LMAX), then
 *            4 interleaved bit streams: u32 byte size of streams 0..2, then
 *            the streams. Stream s carries symbols [s*n/4, (s+1)*n/4).
 *            Bits are packed from the least significant bit of each byte
 *            upwards; a code is written with its first bit lowest
 *            (canonical codes, bit-reversed).
 *   kind 1:  u8 the symbol
 */
#ifndef ZMPI_CODEC_HUFF_H
#define ZMPI_CODEC_HUFF_H

#include <stddef.h>
#include <stdint.h>

#define HUFF_LMAX 13u /* <= 13: four codes per 56-bit refill (decoder) and flush (encoder) */

/* Upper bound of the encoded size of n symbols. */
size_t zc_huff_bound(size_t n);
/* Encodes n >= 1 symbols into dst (cap bytes); returns the size or
 * ZMPI_ERR_DST_TOO_SMALL. */
ptrdiff_t zc_huff_encode(const uint8_t *sym, size_t n, uint8_t *dst, size_t cap);
/* Decodes exactly size bytes into n symbols; returns ZMPI_OK or ZMPI_ERR_CORRUPT. */
int zc_huff_decode(const uint8_t *src, size_t size, uint8_t *sym, size_t n);

#endif
