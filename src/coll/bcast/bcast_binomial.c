/*
 * Bcast, binomial tree, compress once (each block compressed once at its origin, decompressed once at its
 * destination).
 *
 * Virtual ranks v = (rank - root) mod N, 8 ranks (the root is v = 0):
 *
 *   root: Z = compress(buf)                      one compression in all
 *   step 1   0 ─Z─▶ 4
 *   step 2   0 ─Z─▶ 2              4 ─Z─▶ 6
 *   step 3   0 ─Z─▶ 1   2 ─Z─▶ 3   4 ─Z─▶ 5   6 ─Z─▶ 7
 *   every v > 0: forwards Z unchanged to its children first, then
 *                buf = decompress(Z)            one decompression per rank
 *
 * Non-powers of two just lack the children beyond N - 1 (N = 5: 0→4, 0→2,
 * 0→1, 2→3). Sizes: variable-length transfer (movement.h) - each receiver
 * posts a buffer of the worst-case stream size for count elements (every
 * rank knows count) and reads the stream's size from the status, so no size
 * message precedes the data.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the root's buffer; message scope = result scope. The root's buffer is
 * not modified (exact).
 *
 * Edge cases: count 0 and one rank: nothing moves; any root (virtual ranks);
 * non-powers of two (see above). A corrupt stream is reported
 * (MPI_ERR_OTHER) after the stream has been forwarded, so other ranks finish.
 */
#include <stdlib.h>

#include "coll/bcast/bcast.h"
#include "coll/common/movement.h"

int zmpi_bcast_stream(zmpi_call *c, void *z, size_t cap, size_t *len, int root, zmpi_dm_reqs *r, uint64_t *lenbuf)
{
    int rc = MPI_SUCCESS, size = c->size, v = (c->rank - root + size) % size;
    zmpi_dm_vrecv in = {0};
    if (v != 0) {
        int parent = zmpi_dm_real(v - zmpi_dm_lowbit(v, size), root, size);
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in, z, cap, parent, ZMPI_TAG_BCAST));
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in));
        *len = in.len;
    }
    for (int m = zmpi_dm_lowbit(v, size) >> 1; m > 0; m >>= 1) {
        if (v + m >= size)
            continue;
        ZMPI_CHECK(zmpi_dm_isend_var(c, z, *len, cap, zmpi_dm_real(v + m, root, size), ZMPI_TAG_BCAST, lenbuf, r));
    }
fn_exit:
    return rc;
fn_fail:
    zmpi_dm_vrecv_drop(&in);
    goto fn_exit;
}

int zmpi_bcast_binomial(zmpi_call *c, void *buf, size_t count, int root)
{
    zmpi_call_ran(c, ZMPI_BCAST_BINOMIAL);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS;
    unsigned char *z = NULL;
    size_t cap = zmpi_dm_cap(c, count), len = 0;
    uint64_t lenbuf = 0;
    zmpi_dm_reqs r = {0};

    if (count == 0 || c->size < 2)
        goto fn_exit;
    ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
    if (c->rank == root)
        ZMPI_CHECK(zmpi_dm_compress(c, buf, count, z, cap, &len));
    ZMPI_CHECK(zmpi_bcast_stream(c, z, cap, &len, root, &r, &lenbuf));
    if (c->rank != root)
        drc = zmpi_block_decompress(c, z, len, buf, count); /* overlaps the forwarding */
    ZMPI_CHECK(zmpi_dm_waitall(&r));
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    goto fn_exit;
}
