/*
 * Bcast, pipelined binomial tree, compress once per chunk.
 *
 * The buffer is cut into K chunks of cfg.chunk elements (ZMPI_CHUNK; the last
 * one shorter). Each chunk is its own zmpi stream Z_k, compressed once by the
 * root, and travels down the binomial tree of `binomial` as one message per
 * edge. Ranks work on chunks in order, so the stages overlap:
 *
 *   time ─▶        t1          t2               t3                 t4
 *   root (v=0)  Z0=z(c0)    Z1=z(c1)          Z2=z(c2)           ...
 *                 Z0─▶4       Z1─▶4, Z0─▶2      Z2─▶4, Z1─▶2, Z0─▶1
 *   v=4                       recv Z0           Z0─▶6, unz(Z0)     Z1─▶6 ...
 *   v=6                                         recv Z0            unz(Z0) ...
 *
 * (the root compresses chunk k+1 while chunk k travels; every other rank
 * posts the receives of the next W chunks ahead, forwards chunk k to its
 * children and decompresses it while chunk k+1 arrives). Each chunk slot has
 * the worst-case size of its chunk; sizes travel in the status (variable
 * transfer, movement.h), no size messages. A chunk is at most 2^26 elements,
 * so each message is below 1 GiB (ZMPI_DM_PIECE; the chunk is halved until its
 * worst case fits, since receives posted ahead must each match one message).
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the root's buffer (bcast.c sets it as an absolute bound for every
 * chunk); message scope = result scope. The root's buffer is unchanged.
 *
 * Edge cases: count 0 / one rank: nothing moves; count below one chunk: one
 * chunk (= binomial); any root; non-powers of two as in binomial.
 */
#include <stdlib.h>

#include "coll/bcast/bcast.h"
#include "coll/common/movement.h"

#define WINDOW 4 /* chunks received ahead / groups of sends in flight */

int zmpi_bcast_pipelined(zmpi_call *c, void *buf, size_t count, int root)
{
    zmpi_call_ran(c, ZMPI_BCAST_PIPELINED);
    return zmpi_bcast_chunks(c, buf, count, root, 0);
}

int zmpi_bcast_chunks(zmpi_call *c, void *buf, size_t count, int root, int root_decodes)
{
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS;
    int size = c->size, v = (c->rank - root + size) % size;
    size_t chunk = c->st->cfg.chunk, nchunks, capfull, total;
    unsigned char *z = NULL;
    uint64_t lenbuf[WINDOW] = {0};
    zmpi_dm_reqs sreq[WINDOW] = {{0}};
    zmpi_dm_vrecv in[WINDOW] = {{0}};
    int parent = v ? zmpi_dm_real(v - zmpi_dm_lowbit(v, size), root, size) : -1;

    if (count == 0 || size < 2)
        goto fn_exit;
    if (chunk < 1)
        chunk = 1;
    while (chunk > 1 && zmpi_dm_cap(c, chunk) > ZMPI_DM_PIECE)
        chunk /= 2; /* one message per chunk (receives are posted ahead) */
    nchunks = count / chunk + (count % chunk != 0);
    capfull = zmpi_dm_cap(c, count < chunk ? count : chunk);
    total = (nchunks - 1) * capfull + zmpi_dm_cap(c, count - (nchunks - 1) * chunk);
    ZMPI_CHECK(zmpi_scratch_get(c, total, &z));

#define FIRST(k) ((k)*chunk)
#define NELEM(k) ((k) + 1 < nchunks ? chunk : count - (k)*chunk)
#define SLOT(k) (z + (k)*capfull)
    if (v != 0) {
        for (size_t k = 0; k < nchunks && k < WINDOW; k++) {
            ZMPI_CHECK(
                zmpi_dm_vrecv_post(c, &in[k], SLOT(k), zmpi_dm_cap(c, NELEM(k)), parent, ZMPI_TAG_BCAST));
        }
    }
    for (size_t k = 0; k < nchunks; k++) {
        size_t w = k % WINDOW, len = 0, cap = zmpi_dm_cap(c, NELEM(k));
        void *dst = (char *)buf + FIRST(k) * c->es;
        if (v == 0) {
            ZMPI_CHECK(zmpi_dm_compress(c, dst, NELEM(k), SLOT(k), cap, &len));
        } else {
            ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in[w]));
            len = in[w].len;
            if (k + WINDOW < nchunks)
                ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in[w], SLOT(k + WINDOW), zmpi_dm_cap(c, NELEM(k + WINDOW)),
                                              parent, ZMPI_TAG_BCAST));
        }
        ZMPI_CHECK(zmpi_dm_waitall(&sreq[w])); /* the sends of chunk k - WINDOW */
        for (int m = zmpi_dm_lowbit(v, size) >> 1; m > 0; m >>= 1)
            if (v + m < size)
                ZMPI_CHECK(zmpi_dm_isend_var(c, SLOT(k), len, cap, zmpi_dm_real(v + m, root, size),
                                             ZMPI_TAG_BCAST, &lenbuf[w], &sreq[w]));
        if (v != 0 || root_decodes) {
            int e = zmpi_block_decompress(c, SLOT(k), len, dst, NELEM(k));
            drc = drc ? drc : e;
        }
        for (int i = 0; i < WINDOW; i++)
            ZMPI_CHECK(zmpi_dm_progress(&sreq[i]));
    }
#undef FIRST
#undef NELEM
#undef SLOT
    for (int i = 0; i < WINDOW; i++)
        ZMPI_CHECK(zmpi_dm_waitall(&sreq[i]));
    rc = drc;
fn_exit:
    for (int i = 0; i < WINDOW; i++)
        zmpi_dm_reqs_free(&sreq[i]);
    zmpi_scratch_put(c, z);
    return rc;
fn_fail:
    for (int i = 0; i < WINDOW; i++)
        zmpi_dm_vrecv_drop(&in[i]);
    goto fn_exit;
}
