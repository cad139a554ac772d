/*
 * Bcast, scatter + allgather of compressed pieces, compress once.
 *
 * The buffer is cut into N pieces (piece i: count/N elements, one more for
 * i < count % N); rank i ends up with piece i's stream, compressed once by
 * the root, and the streams are then allgathered, so every rank holds all N
 * and decompresses them. The root's buffer is untouched. 4 ranks, root 0:
 *
 *   root:       compresses rank 2's subtree {p2, p3}, sends it, then
 *               rank 1's {p1} (while the first travels), then its own p0
 *   scatter:    rank 2 <- Z2 Z3, rank 3 <- Z3 (from 2), rank 1 <- Z1
 *   sizes:      |Z0| .. |Z3| from the root down the same tree, sent as
 *               soon as the root has compressed them all and forwarded by
 *               each rank once it has forwarded its subtree's streams
 *   allgather:  every rank <- Z0 Z1 Z2 Z3
 *   decompress: every non-root rank -> p0' p1' p2' p3'
 *
 * Each rank receives about 2 x |x| / ratio bytes in all (scatter +
 * allgather) instead of log2(N) x |x| / ratio in a binomial tree: the
 * large-message broadcast of MPI libraries (van de Geijn), on compressed
 * bytes.
 *
 * The scatter is a binomial tree over virtual ranks (v = rank - root mod
 * N) whose messages describe themselves, so that nothing has to be known
 * before the root starts sending: the root compresses one child's subtree,
 * sends it, and compresses the next child's while it travels (the largest
 * subtree first, one child's message in flight at a time, so that the
 * first child, which has the most to forward, gets the whole link). The
 * message for the subtree of virtual rank v is
 *
 *   msg(v) = [u64 a][stream of piece v: a bytes]
 *            then, for each child w of v, largest subtree first:
 *            [u64 b][msg(w): b bytes]
 *
 * so a rank forwards each child's part as one slice of what it received.
 * Every rank can compute the largest msg(v) from the counts alone
 * (sa_cap), which is the receive's capacity (zmpi_dm_vrecv_*). A message
 * that does not parse, or an empty one (what a rank sends its children
 * after one that did not parse), leaves the streams of that subtree
 * missing, and the call fails on every rank that decompresses them; every
 * rank still takes part in every step, so none waits forever.
 *
 * The allgather: the sizes (N uint64, on a tag of their own, received by a
 * receive every rank posts first; they travel while the scatter's last
 * messages do, so no step waits for them) lay the streams out,
 * then for a power-of-two N zmpi's recursive doubling
 * (coll/common/rdb.h), which decompresses the pieces that arrived while the
 * next step travels, else the MPI library's Allgatherv.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the root's buffer (bcast.c sets it as an absolute bound for every
 * piece); message scope = result scope. NaN, Inf arrive bit-exactly.
 *
 * Edge cases: count 0 and count < N (empty pieces are header-only streams);
 * any root; non-powers of two; where the worst-case streams could exceed
 * MPI's int displacements (INT_MAX bytes) for the Allgatherv of a
 * non-power of two, the binomial algorithm, a decision every rank takes
 * alike from the count.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "coll/bcast/bcast.h"
#include "coll/common/movement.h"
#include "coll/common/rdb.h"

typedef struct sa_state {
    zmpi_call *c;
    int root;
    size_t base, extra;  /* piece i: base + (i < extra) elements */
    char *buf;
    unsigned char *z;    /* the allgathered streams: piece i at off[i] */
    size_t *off;         /* N + 1 */
    uint64_t *sizes;     /* N stream sizes, from the root */
    int drc;             /* the first corrupt or missing stream */
} sa_state;

static size_t sa_count(const sa_state *s, int real)
{
    return s->base + ((size_t)real < s->extra);
}

/* The element offset of piece `real`. */
static size_t sa_first(const sa_state *s, int real)
{
    return (size_t)real * s->base + ((size_t)real < s->extra ? (size_t)real : s->extra);
}

/* The real rank of virtual rank v's parent (v > 0). */
static int sa_parent(const sa_state *s, int v)
{
    return zmpi_dm_real(v - zmpi_dm_lowbit(v, s->c->size), s->root, s->c->size);
}

/* The largest msg(v): what virtual rank v's receive must hold. */
static size_t sa_cap(const sa_state *s, int v)
{
    int n = s->c->size;
    size_t cap = 8 + zmpi_block_max(s->c, sa_count(s, zmpi_dm_real(v, s->root, n)));
    for (int m = zmpi_dm_lowbit(v, n) >> 1; m > 0; m >>= 1)
        if (v + m < n)
            cap += 8 + sa_cap(s, v + m);
    return cap;
}

static void sa_put64(unsigned char *p, uint64_t x)
{
    memcpy(p, &x, sizeof x);
}

static uint64_t sa_get64(const unsigned char *p)
{
    uint64_t x;
    memcpy(&x, p, sizeof x);
    return x;
}

/* Compresses piece `real` behind its length at out; *len: both. The root's
 * sizes[real] records it. */
static int sa_piece(sa_state *s, int real, unsigned char *out, size_t *len)
{
    size_t cap = zmpi_block_max(s->c, sa_count(s, real));
    ptrdiff_t a = zmpi_block_compress(s->c, s->buf + sa_first(s, real) * s->c->es, sa_count(s, real), out + 8, cap);
    if (a < 0)
        return MPI_ERR_INTERN; /* cannot happen: cap is the worst case */
    sa_put64(out, (uint64_t)a);
    s->sizes[real] = (uint64_t)a;
    *len = 8 + (size_t)a;
    return MPI_SUCCESS;
}

/* The root: writes msg(v) at out (sa_cap(v) bytes), *len its length. */
static int sa_build(sa_state *s, int v, unsigned char *out, size_t *len)
{
    int rc = MPI_SUCCESS, n = s->c->size;
    size_t pos = 0, part = 0;
    ZMPI_CHECK(sa_piece(s, zmpi_dm_real(v, s->root, n), out, &pos));
    for (int m = zmpi_dm_lowbit(v, n) >> 1; m > 0; m >>= 1) {
        if (v + m >= n)
            continue;
        ZMPI_CHECK(sa_build(s, v + m, out + pos + 8, &part));
        sa_put64(out + pos, (uint64_t)part);
        pos += 8 + part;
    }
    *len = pos;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Sends the sizes to v's children (requests in *sr). */
static int sa_sizes_down(sa_state *s, int v, zmpi_dm_reqs *sr)
{
    int rc = MPI_SUCCESS, n = s->c->size;
    for (int m = zmpi_dm_lowbit(v, n) >> 1; m > 0; m >>= 1)
        if (v + m < n)
            ZMPI_CHECK(zmpi_dm_isend(s->c, s->sizes, (size_t)n * sizeof *s->sizes, zmpi_dm_real(v + m, s->root, n),
                                     ZMPI_TAG_BCAST_SIZES, sr));
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* The root's scatter: each child's msg built and sent while the previous
 * one travels, then its own piece (at *own, *own_len: the stream alone),
 * all in *held (the call's scratch, the caller's to release); then the
 * sizes to its children (requests in *sr, completed by the caller). */
static int sa_scatter_root(sa_state *s, unsigned char **held, unsigned char **own, size_t *own_len,
                           zmpi_dm_reqs *sr)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, n = c->size;
    size_t cap = sa_cap(s, 0), pos = 0, len = 0;
    uint64_t lenbuf = 0; /* one send in flight at a time */
    unsigned char *z = NULL;
    zmpi_dm_reqs r = {0};
    ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
    *held = z;
    for (int m = zmpi_dm_lowbit(0, n) >> 1; m > 0; m >>= 1) {
        if (m >= n)
            continue;
        ZMPI_CHECK(sa_build(s, m, z + pos, &len));
        ZMPI_CHECK(zmpi_dm_waitall(&r)); /* the previous child's */
        ZMPI_CHECK(zmpi_dm_isend_var(c, z + pos, len, sa_cap(s, m), zmpi_dm_real(m, s->root, n), ZMPI_TAG_BCAST,
                                     &lenbuf, &r));
        pos += len;
    }
    ZMPI_CHECK(sa_piece(s, s->root, z + pos, &len));
    ZMPI_CHECK(sa_sizes_down(s, 0, sr));
    ZMPI_CHECK(zmpi_dm_waitall(&r));
    *own = z + pos + 8;
    *own_len = len - 8;
fn_exit:
    zmpi_dm_reqs_free(&r);
    return rc;
fn_fail:
    goto fn_exit;
}

/* A non-root rank's scatter: receives msg(v) into *held (the call's
 * scratch, the caller's to release), forwards each child's slice (an empty
 * message if msg(v) did not parse); its own stream at *own, *own_len (0
 * bytes if broken). Then the sizes: their receive (posted first, in *sr)
 * completed, forwarded to the children (in *sr). */
static int sa_scatter_rank(sa_state *s, int v, unsigned char **held, unsigned char **own, size_t *own_len,
                           zmpi_dm_reqs *sr)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, n = c->size, ok;
    size_t cap = sa_cap(s, v), pos, a;
    uint64_t lenbuf = 0;
    unsigned char *z = NULL;
    zmpi_dm_vrecv in = {0};
    zmpi_dm_reqs r = {0};
    ZMPI_CHECK(zmpi_scratch_get(c, cap, &z));
    *held = z;
    ZMPI_CHECK(zmpi_dm_vrecv_post(c, &in, z, cap, sa_parent(s, v), ZMPI_TAG_BCAST));
    ZMPI_CHECK(zmpi_dm_vrecv_wait(c, &in));
    a = in.len >= 8 ? (size_t)sa_get64(z) : SIZE_MAX;
    ok = a <= zmpi_block_max(c, sa_count(s, zmpi_dm_real(v, s->root, n))) && a <= in.len - 8;
    pos = ok ? 8 + a : in.len;
    *own = z + 8;
    *own_len = ok ? a : 0;
    for (int m = zmpi_dm_lowbit(v, n) >> 1; m > 0; m >>= 1) {
        if (v + m >= n)
            continue;
        size_t b = ok && in.len - pos >= 8 ? (size_t)sa_get64(z + pos) : SIZE_MAX, bcap = sa_cap(s, v + m);
        ok = ok && b <= bcap && b <= in.len - pos - 8;
        ZMPI_CHECK(zmpi_dm_isend_var(c, z + pos + 8, ok ? b : 0, bcap, zmpi_dm_real(v + m, s->root, n),
                                     ZMPI_TAG_BCAST, &lenbuf, &r));
        ZMPI_CHECK(zmpi_dm_waitall(&r));
        pos = ok ? pos + 8 + b : pos;
    }
    if (!ok || pos != in.len) {
        s->drc = MPI_ERR_OTHER;
        *own_len = 0;
    }
    ZMPI_CHECK(zmpi_dm_waitall(sr));
    ZMPI_CHECK(sa_sizes_down(s, v, sr));
fn_exit:
    zmpi_dm_vrecv_drop(&in);
    zmpi_dm_reqs_free(&r);
    return rc;
fn_fail:
    goto fn_exit;
}

/* Decompresses pieces [first, first + n) (non-root ranks). */
static int sa_arrived(void *arg, int first, int n)
{
    sa_state *s = arg;
    for (int i = first; i < first + n; i++) {
        int e = zmpi_block_decompress(s->c, s->z + s->off[i], s->off[i + 1] - s->off[i],
                                      s->buf + sa_first(s, i) * s->c->es, sa_count(s, i));
        s->drc = s->drc ? s->drc : e;
    }
    return MPI_SUCCESS;
}

/* The streams' layout from the root's sizes, the same on every rank (a
 * size beyond what its piece can take: an empty stream there, which fails
 * to decompress everywhere), own copied into place (zeros, which fail to
 * decompress everywhere too, if it is not the size the root sent). */
static int sa_layout(sa_state *s, const unsigned char *own, size_t own_len)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, n = c->size, me = c->rank;
    s->off[0] = 0;
    for (int i = 0; i < n; i++) {
        uint64_t a = s->sizes[i];
        if (a > (uint64_t)zmpi_block_max(c, sa_count(s, i)))
            a = 0;
        s->off[i + 1] = s->off[i] + (size_t)a; /* no overflow: at most the sum of the worst cases */
    }
    ZMPI_CHECK(zmpi_scratch_get(c, s->off[n] ? s->off[n] : 1, &s->z));
    if (s->off[me + 1] - s->off[me] == own_len) {
        memcpy(s->z + s->off[me], own, own_len);
    } else {
        s->drc = MPI_ERR_OTHER;
        memset(s->z + s->off[me], 0, s->off[me + 1] - s->off[me]);
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* The allgather of the scattered streams (own: this rank's): recursive
 * doubling for a power-of-two N (log2 N steps, decompressing while the
 * next travels), else MPI's Allgatherv, then decompression (non-root
 * ranks). */
static int sa_allgather(sa_state *s, const unsigned char *own, size_t own_len)
{
    zmpi_call *c = s->c;
    int rc = MPI_SUCCESS, n = c->size, me = c->rank, *cnt = NULL, *dsp = NULL;
    size_t *off = s->off;
    ZMPI_CHECK(sa_layout(s, own, own_len));
    if (zmpi_is_pow2(n)) {
        ZMPI_CHECK(zmpi_rdb_allgather(c, s->z, off, n, me, NULL, ZMPI_TAG_BCAST, me == s->root ? NULL : sa_arrived,
                                      s));
        goto fn_exit;
    }
    /* below INT_MAX in all: sa_fits */
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *cnt, &cnt));
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *dsp, &dsp));
    for (int i = 0; i < n; i++) {
        cnt[i] = (int)(off[i + 1] - off[i]);
        dsp[i] = (int)off[i];
    }
    ZMPI_CHECK(PMPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, s->z, cnt, dsp, MPI_BYTE, c->comm));
    if (me != s->root)
        sa_arrived(s, 0, n);
fn_exit:
    free(cnt);
    free(dsp);
    return rc;
fn_fail:
    goto fn_exit;
}

/* 1 if the worst-case streams of all pieces fit MPI's int displacements
 * (or N is a power of two: zmpi's own allgather has no such limit). */
static int sa_fits(const sa_state *s)
{
    int n = s->c->size;
    size_t total = 0;
    if (zmpi_is_pow2(n))
        return 1;
    for (int i = 0; i < n; i++) {
        total += 8 + zmpi_block_max(s->c, sa_count(s, i));
        if (total > (size_t)INT_MAX)
            return 0;
    }
    return 1;
}

int zmpi_bcast_scatter_allgather(zmpi_call *c, void *buf, size_t count, int root)
{
    int rc = MPI_SUCCESS, n = c->size, v = (c->rank - root + n) % n;
    unsigned char *held = NULL, *own = NULL;
    size_t own_len = 0;
    zmpi_dm_reqs sr = {0};
    sa_state s = {c, root, count / (size_t)n, count % (size_t)n, buf, NULL, NULL, NULL, MPI_SUCCESS};
    if (!sa_fits(&s)) /* the same on all ranks: it depends on the count alone */
        return zmpi_bcast_binomial(c, buf, count, root);
    zmpi_call_ran(c, ZMPI_BCAST_SCATTER_ALLGATHER);
    ZMPI_CHECK(zmpi_alloc((size_t)n * sizeof *s.sizes, &s.sizes));
    ZMPI_CHECK(zmpi_alloc(((size_t)n + 1) * sizeof *s.off, &s.off));
    if (v == 0) {
        ZMPI_CHECK(sa_scatter_root(&s, &held, &own, &own_len, &sr));
    } else {
        ZMPI_CHECK(zmpi_dm_irecv(c, s.sizes, (size_t)n * sizeof *s.sizes, sa_parent(&s, v), ZMPI_TAG_BCAST_SIZES,
                                 &sr));
        ZMPI_CHECK(sa_scatter_rank(&s, v, &held, &own, &own_len, &sr));
    }
    ZMPI_CHECK(sa_allgather(&s, own, own_len));
    ZMPI_CHECK(zmpi_dm_waitall(&sr)); /* the sizes sent on */
    rc = s.drc;
fn_exit:
    zmpi_dm_reqs_free(&sr);
    zmpi_scratch_put(c, held);
    zmpi_scratch_put(c, s.z);
    free(s.sizes);
    free(s.off);
    return rc;
fn_fail:
    goto fn_exit;
}
