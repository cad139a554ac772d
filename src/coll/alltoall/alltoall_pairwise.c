/*
 * Alltoall(v), pairwise exchange, compress once (each block compressed once at its origin, decompressed once
 * at its destination).
 *
 * Step s = 1 .. N-1: rank r sends Z_(r→r+s) to r+s and receives
 * Z_(r-s→r) from r-s. 4 ranks:
 *
 *            rank 0         rank 1         rank 2         rank 3
 *   s = 1    Z_01 ─▶ 1      Z_12 ─▶ 2      Z_23 ─▶ 3      Z_30 ─▶ 0
 *   s = 2    Z_02 ─▶ 2      Z_13 ─▶ 3      Z_20 ─▶ 0      Z_31 ─▶ 1
 *   s = 3    Z_03 ─▶ 3      Z_10 ─▶ 0      Z_21 ─▶ 1      Z_32 ─▶ 2
 *   own block r→r: copied (exact), or left in place with MPI_IN_PLACE
 *
 * Every outgoing block is compressed once, just before its step (the block
 * of step s+1 is compressed while step s is in flight); every incoming block
 * is decompressed once, into its place. With MPI_IN_PLACE the outgoing data
 * live in the receive buffer, so all outgoing blocks are compressed before
 * the first receive lands. A window of W steps is in flight: the sends and
 * the receive of step s+W-1 are posted before waiting for the receive of
 * step s (W receive slots). W is 2 for large blocks and grows as the blocks
 * shrink (W slots within PW_WINDOW_BYTES, at most N-1: every step at once),
 * so that small blocks pay one latency, not N-1 of them in sequence.
 *
 * Sizes: variable-length transfer (movement.h): the receiver's slot has the
 * worst-case stream size for recvcounts[src] elements, the sender computes
 * the same capacity from sendcounts[dest]; the size comes from the status.
 *
 * Error per element: one compression. ABS: <= eb; REL: <= rel * (max - min)
 * of the block; message scope = result scope.
 *
 * Inter-step codecs: the block for rank j is coded against the previous
 * block this rank sent to j on the communicator (the channel of peer j,
 * src/core/chan.c); both ends keep it. Collectives are called in the same
 * order on every rank, so the channels stay in step.
 *
 * Raw blocks: a block between two ranks of one node (unless
 * ZMPI_INTRA_NODE=compress; both ends know the layout) and, in Alltoallv, a
 * block below ZMPI_MIN_BYTES, or one the model
 * finds not worth compressing on the configured network (zmpi_block_plain:
 * its count and the settings decide, so both ends agree without a message;
 * decided once per call, per peer and direction), travels as its raw bytes
 * straight from the sender's buffer into its place in the receiver's - as
 * plain MPI moves it, no copy, no stream - its length checked on arrival. With MPI_IN_PLACE the
 * outgoing raw blocks are copied aside first, as the compressed ones are.
 *
 * Edge cases: blocks of 0 elements send nothing; uneven blocks (Alltoallv);
 * MPI_IN_PLACE; any N >= 2 (pairs come from rank + s, so no power of two is
 * needed).
 */
#include <stdlib.h>
#include <string.h>

#include "coll/alltoall/alltoall.h"
#include "coll/common/movement.h"

/* Receive slots in flight at most (bytes): the window of small blocks. */
#define PW_WINDOW_BYTES ((size_t)4 << 20)
#define PW_MAX_WINDOW 1024

/* State of one exchange. Steps are numbered 1 .. N-1. */
typedef struct pw {
    zmpi_call *c;
    const char *sendbuf;
    const int *sendcounts, *sdispls, *recvcounts, *rdispls;
    char *recvbuf;
    unsigned char *out;  /* outgoing streams, in step order, back to back */
    size_t *ooff, *olen; /* per step */
    size_t cur;          /* bytes of out used */
    int ncomp;           /* steps compressed so far */
    int in_place;
    unsigned char *raw;  /* raw[j]: the block to rank j travels raw; raw[size + j]: the one from j */
    unsigned char *slot; /* win receive slots of maxr bytes */
    size_t maxr;
    int win;             /* steps in flight */
    uint64_t *lenbuf; /* per destination (variable-length sends) */
    zmpi_dm_reqs sr;
    zmpi_dm_vrecv *in;   /* win receives */
} pw;

/* Compresses the outgoing blocks of steps ncomp+1 .. upto. */
static int compress_upto(pw *p, int upto)
{
    zmpi_call *c = p->c;
    int rc = MPI_SUCCESS;
    for (; rc == MPI_SUCCESS && p->ncomp < upto; p->ncomp++) {
        int s = p->ncomp + 1, dest = (c->rank + s) % c->size;
        size_t n = (size_t)p->sendcounts[dest];
        const char *src = p->sendbuf + (ptrdiff_t)p->sdispls[dest] * (ptrdiff_t)c->es;
        p->ooff[s] = p->cur;
        if (p->raw[dest]) {
            zmpi_dm_chan_drop(c, dest, ZMPI_CHAN_SEND);
            p->olen[s] = n * c->es;
            if (!p->in_place)
                continue; /* sent from the user's buffer */
            memcpy(p->out + p->cur, src, p->olen[s]);
        } else {
            rc = zmpi_dm_compress_to(c, dest, src, n, p->out + p->cur, zmpi_dm_cap(c, n), &p->olen[s]);
        }
        p->cur += p->olen[s];
    }
    return rc;
}

/* Posts the send and the receive of step s. */
static int start(pw *p, int s)
{
    zmpi_call *c = p->c;
    int dest = (c->rank + s) % c->size, src = (c->rank - s + c->size) % c->size;
    size_t nr = (size_t)p->recvcounts[src];
    /* a raw block: from the user's buffer unless copied aside (in place), its
     * length as capacity (both ends know it); a raw receive lands in place */
    int rs = p->raw[dest], rr = p->raw[c->size + src];
    const void *b = rs && !p->in_place ? (const void *)(p->sendbuf + (ptrdiff_t)p->sdispls[dest] * (ptrdiff_t)c->es)
                                       : (const void *)(p->out + p->ooff[s]);
    int rc = zmpi_dm_isend_var(c, b, p->olen[s], rs ? p->olen[s] : zmpi_dm_cap(c, (size_t)p->sendcounts[dest]),
                               dest, ZMPI_TAG_ALLTOALL, &p->lenbuf[dest], &p->sr);
    if (rc != MPI_SUCCESS)
        return rc;
    void *dst = rr ? (void *)(p->recvbuf + (ptrdiff_t)p->rdispls[src] * (ptrdiff_t)c->es)
                   : (void *)(p->slot + (size_t)(s % p->win) * p->maxr);
    return zmpi_dm_vrecv_post(c, &p->in[s % p->win], dst, rr ? nr * c->es : zmpi_dm_cap(c, nr), src,
                              ZMPI_TAG_ALLTOALL);
}

/* The buffers (the outgoing streams' worst cases, the window's receive
 * slots) and steps 1 .. win-1 started, each as soon as its block is
 * compressed; in place, every outgoing block is compressed first, before
 * anything lands. */
static int pw_setup(pw *p)
{
    zmpi_call *c = p->c;
    int rc = MPI_SUCCESS, size = c->size;
    size_t total = 0;
    ZMPI_CHECK(zmpi_alloc(2 * (size_t)size, &p->raw));
    for (int j = 0; j < size; j++) { /* raw blocks need no slot, nor room in out unless in place */
        size_t ns = (size_t)p->sendcounts[j], nr = (size_t)p->recvcounts[j];
        int near = zmpi_call_same_node(c, j); /* shared memory moves it faster than a codec */
        p->raw[j] = (unsigned char)(ns > 0 && (near || zmpi_block_plain(c, ns)));
        p->raw[size + j] = (unsigned char)(nr > 0 && (near || zmpi_block_plain(c, nr)));
        if (j == c->rank)
            continue;
        total += !p->raw[j] ? zmpi_dm_cap(c, ns) : p->in_place ? ns * c->es : 0;
        size_t rcap = p->raw[size + j] ? 0 : zmpi_dm_cap(c, nr);
        p->maxr = rcap > p->maxr ? rcap : p->maxr;
    }
    p->win = 2;
    while (p->win < size - 1 && p->win < PW_MAX_WINDOW && (size_t)(p->win + 1) * p->maxr <= PW_WINDOW_BYTES)
        p->win++;
    ZMPI_CHECK(zmpi_scratch_get(c, total, &p->out));
    ZMPI_CHECK(zmpi_scratch_get(c, (size_t)p->win * p->maxr, &p->slot));
    ZMPI_CHECK(zmpi_alloc((size_t)p->win * sizeof *p->in, &p->in));
    memset(p->in, 0, (size_t)p->win * sizeof *p->in);
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *p->ooff, &p->ooff));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *p->olen, &p->olen));
    ZMPI_CHECK(zmpi_alloc((size_t)size * sizeof *p->lenbuf, &p->lenbuf));
    if (p->in_place)
        ZMPI_CHECK(compress_upto(p, size - 1));
    for (int s = 1; s < p->win && s < size; s++) { /* each step goes out as soon as its block is coded */
        ZMPI_CHECK(compress_upto(p, s));
        ZMPI_CHECK(start(p, s));
    }
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

int zmpi_alltoallv_pairwise(zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *sdispls,
                            void *recvbuf, const int *recvcounts, const int *rdispls)
{
    zmpi_call_ran(c, ZMPI_ALLTOALL_PAIRWISE);
    int rc = MPI_SUCCESS, drc = MPI_SUCCESS, size = c->size, rank = c->rank;
    int in_place = sendbuf == MPI_IN_PLACE;
    pw p;

    memset(&p, 0, sizeof p);
    p.c = c;
    if (in_place) {
        sendbuf = recvbuf;
        sendcounts = recvcounts;
        sdispls = rdispls;
    }
    p.sendbuf = sendbuf;
    p.sendcounts = sendcounts;
    p.sdispls = sdispls;
    p.recvcounts = recvcounts;
    p.rdispls = rdispls;
    p.recvbuf = recvbuf;
    p.in_place = in_place;
    if (!in_place && sendcounts[rank] > 0) {
        if (sendcounts[rank] > recvcounts[rank]) {
            drc = MPI_ERR_TRUNCATE;
        } else {
            memcpy((char *)recvbuf + (ptrdiff_t)rdispls[rank] * (ptrdiff_t)c->es,
                   (const char *)sendbuf + (ptrdiff_t)sdispls[rank] * (ptrdiff_t)c->es,
                   (size_t)sendcounts[rank] * c->es);
        }
    }
    if (size < 2)
        goto fn_done;
    ZMPI_CHECK(pw_setup(&p));
    for (int s = 1; s < size; s++) {
        int src = (rank - s + size) % size, next = s + p.win - 1;
        if (next < size) { /* step s+win-1 goes out while step s arrives (into the slot of step s-1) */
            ZMPI_CHECK(compress_upto(&p, next));
            ZMPI_CHECK(start(&p, next));
        }
        zmpi_dm_vrecv *in = &p.in[s % p.win];
        ZMPI_CHECK(zmpi_dm_vrecv_wait(c, in));
        size_t nr = (size_t)recvcounts[src];
        int e;
        if (p.raw[size + src]) { /* already in place; a sender that sent less mismatched the counts */
            zmpi_dm_chan_drop(c, src, ZMPI_CHAN_RECV);
            e = in->len == nr * c->es ? MPI_SUCCESS : MPI_ERR_TRUNCATE;
        } else {
            e = zmpi_dm_decompress_from(c, src, in->buf, in->len,
                                        (char *)recvbuf + (ptrdiff_t)rdispls[src] * (ptrdiff_t)c->es, nr);
        }
        drc = drc ? drc : e;
    }
    ZMPI_CHECK(zmpi_dm_waitall(&p.sr));
fn_done:
    rc = drc;
fn_exit:
    zmpi_dm_reqs_free(&p.sr);
    free(p.lenbuf);
    free(p.raw);
    free(p.olen);
    free(p.ooff);
    free(p.in);
    zmpi_scratch_put(c, p.slot);
    zmpi_scratch_put(c, p.out);
    return rc;
fn_fail:
    for (int k = 0; p.in && k < p.win; k++)
        zmpi_dm_vrecv_drop(&p.in[k]);
    goto fn_exit;
}
