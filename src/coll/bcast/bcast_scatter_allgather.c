/*
 * Bcast, scatter + allgather of compressed pieces, compress once.
 *
 * The root cuts the buffer into N pieces (piece i: count/N elements, one more
 * for i < count % N) and compresses each once. The N stream sizes are
 * broadcast (N uint64), the streams are scattered (rank i gets stream i) and
 * then allgathered, both as exact MPI_BYTE transfers, so every rank ends up
 * with all N streams and decompresses them. The root's buffer is untouched.
 * 4 ranks:
 *
 *   root:   x = [p0 p1 p2 p3] -> Z0 Z1 Z2 Z3 (compressed once)
 *   bcast:  sizes |Z0| |Z1| |Z2| |Z3| to all
 *   scatter:    rank i <- Z_i (binomial tree)
 *   allgatherv: every rank <- Z0 Z1 Z2 Z3
 *   decompress: every non-root rank -> p0' p1' p2' p3'
 *
 * Each rank receives about 2 x |x| / ratio bytes in all (scatter +
 * allgather) instead of log2(N) x |x| / ratio in a binomial tree: the
 * large-message broadcast of MPI libraries (van de Geijn), on compressed
 * bytes. The scatter is a binomial tree over contiguous ranges of the
 * streams (a handful of large messages, not N - 1 messages of one piece
 * each); for a power-of-two N the allgather is zmpi's recursive doubling
 * (coll/common/rdb.h), which decompresses the pieces that arrived while the
 * next step travels, else the MPI library's Allgatherv.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the root's buffer (bcast.c sets it as an absolute bound for every
 * piece); message scope = result scope. NaN, Inf arrive bit-exactly.
 *
 * Edge cases: count 0 and count < N (empty pieces are header-only streams);
 * any root; non-powers of two; a total of compressed bytes above INT_MAX
 * (MPI's int displacements) falls back to the binomial algorithm, a decision
 * every rank takes alike from the broadcast sizes.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/bcast/bcast.h"
#include "coll/common/movement.h"
#include "coll/common/rdb.h"

typedef struct sa_state {
    zmpi_call *c;
    unsigned char *z;
    char *buf;
    const int *cnt, *dsp; /* for MPI's Allgatherv */
    const size_t *off;    /* off[0..N]: stream i is z[off[i], off[i + 1]) */
    size_t base, extra;
    int drc;
} sa_state;

/* Decompresses pieces [first, first + n) (non-root ranks). */
static int sa_arrived(void *arg, int first, int n)
{
    sa_state *s = arg;
    for (int i = first; i < first + n; i++) {
        size_t m = s->base + ((size_t)i < s->extra);
        size_t off = (size_t)i * s->base + ((size_t)i < s->extra ? (size_t)i : s->extra);
        int e = zmpi_block_decompress(s->c, s->z + s->off[i], s->off[i + 1] - s->off[i], s->buf + off * s->c->es, m);
        s->drc = s->drc ? s->drc : e;
    }
    return MPI_SUCCESS;
}

/* The root: piece i compressed once into *z (scratch), back to back,
 * sizes[i] its stream size. */
static int sa_compress(zmpi_call *c, const void *buf, size_t base, size_t extra, uint64_t *sizes,
                       unsigned char **z)
{
    int rc = MPI_SUCCESS, n = c->size;
    size_t cap = 0, pos = 0, off = 0;
    for (int i = 0; i < n; i++)
        cap += zmpi_block_max(c, base + ((size_t)i < extra));
    ZMPI_CHECK(zmpi_scratch_get(c, cap, z));
    for (int i = 0; i < n; i++) {
        size_t m = base + ((size_t)i < extra);
        ptrdiff_t len = zmpi_block_compress(c, (const char *)buf + off * c->es, m, *z + pos, cap - pos);
        if (len < 0) {
            rc = MPI_ERR_OTHER; /* cannot happen: cap is the worst case */
            goto fn_fail;
        }
        sizes[i] = (uint64_t)len;
        pos += (size_t)len;
        off += m;
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* The streams' offsets off[0..n] and MPI's int counts and displacements;
 * returns their total, INT_MAX + 1 if they do not fit (the same on all
 * ranks). */
static uint64_t sa_layout(const uint64_t *sizes, int n, size_t *off, int *cnt, int *dsp)
{
    uint64_t total = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] > (uint64_t)INT_MAX || total > (uint64_t)INT_MAX - sizes[i])
            return (uint64_t)INT_MAX + 1; /* beyond int displacements */
        off[i] = (size_t)total;
        dsp[i] = (int)total;
        cnt[i] = (int)sizes[i];
        total += sizes[i];
    }
    off[n] = (size_t)total;
    return total;
}

/* Sends (send != 0) or receives the streams of virtual ranks [a, b): at most
 * two contiguous ranges of z (the range wraps past rank size - 1 for a root
 * other than 0), each one exact transfer (an empty one sends nothing). */
static int sa_move(sa_state *s, int a, int b, int root, int peer, int send, zmpi_dm_reqs *r)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, n = c->size;
    int lo = zmpi_dm_real(a, root, n), hi = lo + (b - a); /* real pieces [lo, hi), hi may pass n */
    int seg[2][2] = {{lo, hi < n ? hi : n}, {0, hi > n ? hi - n : 0}};
    for (int k = 0; k < 2; k++) {
        size_t from = s->off[seg[k][0]], len = s->off[seg[k][1]] - from;
        if (send)
            ZMPI_CHECK(zmpi_dm_isend(c, s->z + from, len, peer, ZMPI_TAG_BCAST, r));
        else
            ZMPI_CHECK(zmpi_dm_irecv(c, s->z + from, len, peer, ZMPI_TAG_BCAST, r));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Binomial scatter of the streams (laid out at off): virtual
 * rank v receives the streams of its subtree from its parent, then hands
 * each child its subtree's streams, the largest subtree first and one child
 * at a time (the first child has the most to forward). Every transfer is one
 * or two large messages: the root's link carries (N - 1) / N of the
 * compressed bytes, as in a linear scatter, but never in messages of one
 * piece (short messages pay a worse bandwidth on real networks). */
static int sa_scatter(sa_state *s, int root)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, n = c->size, v = (c->rank - root + n) % n;
    zmpi_dm_reqs r = {0};
    if (v > 0) {
        int parent = zmpi_dm_real(v - zmpi_dm_lowbit(v, n), root, n);
        ZMPI_CHECK(sa_move(s, v, v + zmpi_dm_subtree(v, n), root, parent, 0, &r));
        ZMPI_CHECK(zmpi_dm_waitall(&r));
    }
    for (int m = zmpi_dm_lowbit(v, n) >> 1; m > 0; m >>= 1) {
        if (v + m >= n)
            continue;
        int child = v + m;
        ZMPI_CHECK(sa_move(s, child, child + zmpi_dm_subtree(child, n), root, zmpi_dm_real(child, root, n), 1, &r));
        ZMPI_CHECK(zmpi_dm_waitall(&r));
    }
fn_exit:
    zmpi_dm_reqs_free(&r);
    return rc;
fn_fail:
    goto fn_exit;
}

/* The allgather of the scattered streams: recursive doubling
 * for a power-of-two N (log2 N steps, decompressing while the next
 * travels), else MPI's Allgatherv, then decompression (non-root ranks). */
static int sa_allgather(sa_state *s, int root)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, n = c->size, me = c->rank;
    if (!zmpi_is_pow2(n)) {
        ZMPI_CHECK(
            PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s->z, s->cnt, s->dsp, MPI_BYTE, c->comm));
        if (me != root)
            sa_arrived(s, 0, n);
        goto fn_exit;
    }
    ZMPI_CHECK(
        zmpi_rdb_allgather(c, s->z, s->off, n, me, NULL, ZMPI_TAG_BCAST, me == root ? NULL : sa_arrived, s));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_bcast_scatter_allgather(zmpi_call *c, void *buf, size_t count, int root)
{
    zmpi_call_ran(c, ZMPI_BCAST_SCATTER_ALLGATHER);
    int rc = MPI_SUCCESS, n = c->size, me = c->rank;
    uint64_t *sizes = NULL, total = 0;
    int *cnt = NULL, *dsp = NULL;
    size_t *off = NULL;
    unsigned char *z = NULL;
    size_t base = count / (size_t)n, extra = count % (size_t)n;

    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *sizes, &sizes));
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *cnt, &cnt));
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *dsp, &dsp));
    ZMPI_CHECK(zmpi_alloc(((size_t)n + 1) * sizeof *off, &off));
    if (me == root)
        ZMPI_CHECK(sa_compress(c, buf, base, extra, sizes, &z));
    ZMPI_CHECK(PMPI_Bcast(sizes, n, MPI_UINT64_T, root, c->comm));
    total = sa_layout(sizes, n, off, cnt, dsp);
    if (total > (uint64_t)INT_MAX) { /* the same decision on all ranks */
        zmpi_scratch_put(c, z);
        z = NULL;
        rc = zmpi_bcast_binomial(c, buf, count, root);
        goto fn_exit;
    }
    if (me != root)
        ZMPI_CHECK(zmpi_scratch_get(c, (size_t)total, &z));
    sa_state s = {c, z, buf, cnt, dsp, off, base, extra, MPI_SUCCESS};
    ZMPI_CHECK(sa_scatter(&s, root));
    ZMPI_CHECK(sa_allgather(&s, root));
    rc = s.drc;
fn_exit:
    zmpi_scratch_put(c, z);
    free(sizes);
    free(cnt);
    free(dsp);
    free(off);
    return rc;
fn_fail:
    goto fn_exit;
}
