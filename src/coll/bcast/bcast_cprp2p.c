/*
 * Bcast, binomial tree, compress per hop ("CPRP2P", the published baseline;
 * for comparison in benchmarks only).
 *
 * Same tree as `binomial` (v = (rank - root) mod N), but every hop is a
 * compressed point-to-point message of its own:
 *
 *   root:  Z = z(buf)                         0 ─Z─▶ 4, 2, 1
 *   v = 4: buf = unz(Z); Z' = z(buf)          4 ─Z'─▶ 6, 5
 *   v = 6: buf = unz(Z'); Z'' = z(buf)        6 ─Z''─▶ 7
 *   v = 7: buf = unz(Z'')                     (3 compressions on the path)
 *
 * An inner rank forwards only after it has decompressed and recompressed, so
 * compression sits on the critical path of every level and the error grows
 * with the depth. Sizes: variable-length transfer (worst-case receive
 * buffer, size from the status).
 *
 * Error per element at depth d (d <= ceil(log2 N) compressions): ABS <= d * e,
 * REL <= sum of rel * range of each hop's input. Message scope: e = eb, so up
 * to ceil(log2 N) * eb. Result scope: the dispatcher sets e = eb / ceil(log2 N)
 * (REL: rel * range of the root's buffer / ceil(log2 N)), so <= eb.
 *
 * Edge cases: count 0 / one rank: nothing moves; any root; non-powers of two
 * as in binomial. Leaves do not recompress.
 */
#include <stdlib.h>

#include "coll/bcast/bcast.h"
#include "coll/common/movement.h"

int zmpi_bcast_cprp2p(zmpi_call *c, void *buf, size_t count, int root)
{
    zmpi_call_ran(c, ZMPI_BCAST_CPRP2P);
    int rc = MPI_SUCCESS;
    int size = c->size, v = (c->rank - root + size) % size;
    int low = zmpi_dm_lowbit(v, size);
    unsigned char *z = NULL;
    size_t cap = zmpi_dm_cap(c, count), len = 0;
    uint64_t lenbuf = 0;
    zmpi_dm_reqs r = {0};
    zmpi_dm_vrecv in = {0};
    int leaf = (low == 1) || (v + 1 >= size && v != 0);

    if (count == 0 || size < 2)
        goto fn_exit;
    ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
    if (v != 0) {
        ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in, z, cap, zmpi_dm_real(v - low, root, size), ZMPI_TAG_BCAST));
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in));
        ZMPI_CHECK(zmpi_block_decompress(c, z, in.len, buf, count));
    }
    if (leaf)
        goto fn_exit;
    ZMPI_CHECK(zmpi_dm_compress(c, buf, count, z, cap, &len)); /* recompress what this rank holds */
    for (int m = low >> 1; m > 0; m >>= 1) {
        if (v + m >= size)
            continue;
        ZMPI_CHECK(
            zmpi_dm_isend_var(c, z, len, cap, zmpi_dm_real(v + m, root, size), ZMPI_TAG_BCAST, &lenbuf, &r));
    }
    ZMPI_CHECK(zmpi_dm_waitall(&r));
fn_exit:
    zmpi_dm_reqs_free(&r);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    zmpi_dm_vrecv_drop(&in);
    goto fn_exit;
}
