/* Recursive-halving reduce-scatter with compression: see halving.h. */
#include <stdlib.h>
#include <string.h>

#include "coll/common/halving.h"
#include "coll/common/ring.h"

static int exchange(zmpi_call *c, unsigned char *acc, size_t first, size_t count, size_t kfirst,
                    size_t kcount, int peer, MPI_Op op, int tag, zmpi_pieces *pout, zmpi_pieces *pin,
                    unsigned char *tmp, int *corrupt)
{
    int rc = MPI_SUCCESS;
    size_t es = c->es;
    zmpi_xchg x = {0};

    ZMPI_CHECK(zmpi_pieces_layout(c, pout, count));
    ZMPI_CHECK(zmpi_pieces_layout(c, pin, kcount));
    ZMPI_CHECK(zmpi_xchg_start(c, &x, tag, peer, pin, peer, pout));
    for (size_t j = 0; j < pout->n; j++) {
        ZMPI_CHECK(zmpi_pieces_compress(c, pout, j, acc + first * es));
        ZMPI_CHECK(zmpi_xchg_send(&x, j));
        ZMPI_CHECK(zmpi_xchg_poll(&x));
    }
    for (size_t j = 0; j < pin->n; j++) {
        size_t f = zmpi_pieces_first(pin, j);
        ZMPI_CHECK(zmpi_xchg_wait_piece(&x, j));
        if (zmpi_pieces_decompress(c, pin, j, tmp))
            *corrupt = MPI_ERR_OTHER; /* reported at the end; no rank is left waiting */
        ZMPI_CHECK(
            zmpi_reduce_local(c, tmp + f * es, acc + (kfirst + f) * es, zmpi_pieces_count(pin, j), op));
    }
    ZMPI_CHECK(zmpi_xchg_wait(&x));
fn_exit:
    zmpi_xchg_free(&x);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_reduce_exchange(zmpi_call *c, unsigned char *acc, size_t first, size_t count, size_t kfirst,
                         size_t kcount, int peer, MPI_Op op, int tag, int *corrupt)
{
    zmpi_pieces pin = {0}, pout = {0};
    unsigned char *tmp = NULL;
    int rc = zmpi_scratch_get(c, kcount * c->es, &tmp);
    if (rc == MPI_SUCCESS)
        rc = exchange(c, acc, first, count, kfirst, kcount, peer, op, tag, &pout, &pin, tmp, corrupt);
    zmpi_pieces_free(c, &pin);
    zmpi_pieces_free(c, &pout);
    zmpi_scratch_put(c, tmp);
    return rc;
}

int zmpi_halving_reduce_scatter(zmpi_call *c, unsigned char *acc, const size_t *displs, int p, int v,
                                const int *ranks, MPI_Op op, int tag, int *corrupt)
{
    int rc = MPI_SUCCESS, lo = 0, hi = p, h = p / 2;
    zmpi_pieces pin = {0}, pout = {0};
    unsigned char *tmp = NULL;

    /* scratch for the incoming pieces: the kept ranges nest, so the first is the largest */
    size_t maxkeep = (v & h) ? displs[p] - displs[h] : displs[h] - displs[0];
    ZMPI_CHECK(zmpi_scratch_get(c, maxkeep * c->es, &tmp));
    for (int d = p / 2; d >= 1; d /= 2) {
        int mid = lo + d, klo, khi, slo, shi;
        if (v & d) {
            klo = mid, khi = hi, slo = lo, shi = mid;
        } else {
            klo = lo, khi = mid, slo = mid, shi = hi;
        }
        ZMPI_CHECK(exchange(c, acc, displs[slo], displs[shi] - displs[slo], displs[klo],
                            displs[khi] - displs[klo], ranks ? ranks[v ^ d] : v ^ d, op, tag, &pout, &pin,
                            tmp, corrupt));
        lo = klo;
        hi = khi;
    }
fn_exit:
    zmpi_pieces_free(c, &pin);
    zmpi_pieces_free(c, &pout);
    zmpi_scratch_put(c, tmp);
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_halving_reduce_scatter_copy(zmpi_call *c, const void *in, void *out, size_t count,
                                     const size_t *counts, const size_t *displs, MPI_Op op, int tag,
                                     int *corrupt)
{
    int rc = MPI_SUCCESS, n = c->size, r = c->rank;
    size_t *dp = NULL, es = c->es;
    unsigned char *acc = NULL;

    ZMPI_CHECK(zmpi_alloc(((size_t)n + 1) * sizeof *dp, &dp));
    ZMPI_CHECK(zmpi_scratch_get(c, count * es, &acc));
    memcpy(dp, displs, (size_t)n * sizeof *dp);
    dp[n] = count;
    memcpy(acc, in, count * es);
    ZMPI_CHECK(zmpi_halving_reduce_scatter(c, acc, dp, n, r, NULL, op, tag, corrupt));
    memcpy(out, acc + displs[r] * es, counts[r] * es);
fn_exit:
    free(dp);
    zmpi_scratch_put(c, acc);
    return rc;
fn_fail:
    goto fn_exit;
}
