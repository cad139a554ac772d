/*
 * fzr's encoder kernels built with AVX2 (compiled with -mavx2
 * -fno-trapping-math; called only when the CPU has AVX2). The code is
 * fzr.h's, so the bytes are the portable build's; tests/codec compare them.
 */
#include "fzr.h"

void zc_fzr_code_chunk_avx2(const fzl_q *qp, zmpi_dtype dtype, const void *src, size_t c0, size_t c1, size_t n,
                            unsigned kmax, size_t R, size_t P, fzr_scratch *w, size_t *nout, size_t *nesc)
{
    fzr_code_chunk(qp, dtype, src, c0, c1, n, kmax, R, P, w, nout, nesc);
}
