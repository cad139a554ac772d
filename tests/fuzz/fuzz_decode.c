/*
 * libFuzzer target for one codec's segment decoder (FUZZ_CODEC, set by
 * CMake), called directly so the fuzzer reaches the decoder without having
 * to forge checksums. Input: 1 byte dtype/flags, 2 bytes count, 1 byte
 * parameter selector, 1 byte bound selector, then the segment payload.
 * The decoder must return an error or decode exactly n elements, without
 * touching memory outside its buffers (ASan/UBSan).
 *
 * fzr's target has a mutator of its own besides libFuzzer's: one input in
 * four gets one outlier record's position set to n - 1, n, n + 1, its
 * predecessor's position or one above it (the edges its decoder checks,
 * which random byte changes rarely hit exactly).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#ifndef FUZZ_CODEC
#error "FUZZ_CODEC must name a codec id"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifdef FUZZ_FZR_RECORDS /* set by CMake for fzr */
_Static_assert(FUZZ_CODEC == ZMPI_CODEC_FZR, "the record mutator is fzr's");
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
    if ((r >> 33) % 4 != 0 || size < 5 + 24)
        return LLVMFuzzerMutate(data, size, max_size);
    /* the payload (after the 5-byte prefix): 24-byte head, nout at 12, records at the end */
    size_t es = (data[0] & 1) ? 8 : 4, rs = 4 + es, n = 1 + (((size_t)data[1] | (size_t)data[2] << 8) % 4096);
    size_t nout = zc_get_u32(data + 5 + 12);
    if (nout == 0 || nout > (size - 5 - 24) / rs)
        return LLVMFuzzerMutate(data, size, max_size);
    size_t rec = size - nout * rs, i = (size_t)(r >> 40) % nout;
    uint32_t prev = i ? zc_get_u32(data + rec + (i - 1) * rs) : 0, pos[5] = {(uint32_t)n - 1, (uint32_t)n,
                                                                              (uint32_t)n + 1, prev, prev + 1};
    zc_put_u32(data + rec + i * rs, pos[(r >> 20) % 5]);
    return size;
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const double ebs[] = {1e-1, 1e-3, 1e-6, 1e-30, 1e30, 5e-324, 1.0, 0.25};
    static const long long params[] = {0, 8, 16, 32, 64, 1, 12, 23, 32, 40, 52, 3, 9, 19};
    if (size < 5)
        return 0;
    const zc_codec_ops *ops = zc_codec_get((zmpi_codec)FUZZ_CODEC);
    zmpi_dtype dt = (data[0] & 1) ? ZMPI_DOUBLE : ZMPI_FLOAT;
    if (!(ops->dtypes & (1u << dt)))
        dt = dt == ZMPI_FLOAT ? ZMPI_DOUBLE : ZMPI_FLOAT;
    size_t n = 1 + (((size_t)data[1] | (size_t)data[2] << 8) % 4096);
    long long p = params[data[3] % (sizeof params / sizeof *params)];
    if (ops->param_check) {
        p = ops->param_check(dt, p);
        if (p < 0)
            return 0;
    } else
        p = 0;
    zc_seg s = {.dtype = dt, .n = n, .param = (uint32_t)p, .hist = NULL,
                .eb = ops->kind == ZMPI_KIND_BOUNDED ? ebs[data[4] % 8] : 0.0};
    size_t es = zmpi_dtype_size(dt);
    void *hist = NULL;
    if (ops->inter && (data[0] & 2)) {
        size_t hb = n * ops->hist_elem_size(dt);
        hist = malloc(hb);
        for (size_t i = 0; i < hb; i++)
            ((uint8_t *)hist)[i] = (uint8_t)(i * 131u + data[0]);
        s.hist = hist;
    }
    /* exact-size copies so any over-read or over-write is caught */
    size_t psize = size - 5;
    uint8_t *payload = malloc(psize ? psize : 1);
    memcpy(payload, data + 5, psize);
    void *out = malloc(n * es);
    int rc = ops->decode(&s, payload, psize, out);
    if (rc != ZMPI_OK && rc != ZMPI_ERR_CORRUPT)
        abort(); /* a decoder may only succeed or report corruption */
    if (rc == ZMPI_OK && ops->inter) {
        void *h2 = malloc(n * ops->hist_elem_size(dt));
        ops->hist_update(&s, out, h2);
        free(h2);
    }
    free(out);
    free(payload);
    free(hist);
    return 0;
}
