/*
 * libFuzzer target for whole streams: zmpi_stream_info_get and
 * zmpi_decompress_channel on arbitrary bytes (header, index and framework
 * validation; checksums make payload decoders mostly unreachable here, which
 * is what fuzz_decode_* are for).
 */
#include <stdlib.h>
#include <string.h>

#include "zmpi/codec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    zmpi_stream_info info;
    if (zmpi_stream_info_get(copy, size, &info) == ZMPI_OK) {
        size_t out = (size_t)info.count * zmpi_dtype_size(info.dtype);
        if (out <= (1u << 24)) {
            void *y = malloc(out ? out : 1);
            zmpi_ctx *ctx = zmpi_ctx_create();
            zmpi_channel *ch = zmpi_channel_create(1u << 24);
            (void)zmpi_decompress_channel(ctx, ch, copy, size, y, out);
            zmpi_channel_free(ch);
            zmpi_ctx_free(ctx);
            free(y);
        }
    }
    free(copy);
    return 0;
}
