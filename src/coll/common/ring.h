/*
 * Building blocks of the compressed computation collectives (Reduce_scatter,
 * Allreduce, Reduce): a block cut into compressed pieces, and one exchange
 * step that overlaps the pieces' compression with their transfer.
 *
 * A block of `count` elements travels as ceil(count / chunk) pieces of
 * `chunk` elements (cfg.chunk, the last piece shorter), each piece its own
 * self-describing zmpi stream and its own message (MPI_BYTE). Sizes travel
 * in the message status: a receiver posts every receive of a step up front
 * into a slot of the worst-case size (zmpi_block_max of the piece) and reads
 * the actual size from the status (PMPI_Get_count). Sender and receiver both
 * derive the piece layout from the block count and cfg.chunk, which is why
 * the configuration of a communicator must be the same on all its ranks
 * (as MPI requires of counts). A piece is at most 2^26 elements, so its
 * worst-case size always fits an int count: messages larger than INT_MAX
 * bytes are never needed.
 *
 * Internal messages use the user's communicator with the tags below; all
 * ranks issue them in the same order (collectives are ordered), and MPI's
 * non-overtaking rule on (source, tag, communicator) matches each piece with
 * the receive posted for it.
 */
#ifndef ZMPI_COLL_COMMON_RING_H
#define ZMPI_COLL_COMMON_RING_H

#include <stddef.h>

#include "core/core.h"

/* Tags of the computation collectives' internal messages. */
enum { ZMPI_TAG_REDUCE_SCATTER = 0x7A51, ZMPI_TAG_ALLREDUCE = 0x7A52, ZMPI_TAG_REDUCE = 0x7A53 };

/* A block as compressed pieces (slots of the worst-case size in one buffer). */
typedef struct zmpi_pieces {
    size_t count;       /* elements of the block */
    size_t chunk;       /* elements per piece (the last one may be shorter) */
    size_t n;           /* number of pieces: 0 for an empty block */
    unsigned char *buf; /* the slots */
    size_t cap;         /* bytes allocated for buf */
    size_t *slot;       /* n + 1 slot offsets into buf */
    int *len;           /* stream size of each piece; -1 while unknown */
    size_t ncap;        /* entries allocated for slot / len */
    size_t *at;         /* NULL: pieces of `chunk` elements; else n + 1 element offsets (grid tables, gsum.h,
                           which lay out and release their own pieces; never passed to zmpi_pieces_layout) */
    int borrowed;       /* buf belongs to another zmpi_pieces (a view): not released */
} zmpi_pieces;

/* Lays out p for a block of count elements (reusing its memory, growing it
 * if needed; the slots are the call's scratch memory); every len becomes -1. A
 * zeroed zmpi_pieces is a valid empty one. */
int zmpi_pieces_layout(const zmpi_call *c, zmpi_pieces *p, size_t count);
void zmpi_pieces_free(const zmpi_call *c, zmpi_pieces *p);
/* Elements of piece j and its first element in the block. */
size_t zmpi_pieces_count(const zmpi_pieces *p, size_t j);
size_t zmpi_pieces_first(const zmpi_pieces *p, size_t j);
/* Compresses piece j of the block at src (the whole block, count elements)
 * into its slot. A codec failure falls back to an uncompressed stream
 * (zmpi_block_compress); only an internal error returns non-zero. */
int zmpi_pieces_compress(zmpi_call *c, zmpi_pieces *p, size_t j, const void *src);
/* Decompresses piece j into the block at dst. MPI_ERR_OTHER if the stream
 * is corrupt or does not hold exactly the expected elements. */
int zmpi_pieces_decompress(zmpi_call *c, const zmpi_pieces *p, size_t j, void *dst);

/* One exchange step: the pieces of `in` from rank `from`, and the pieces of
 * `out` to rank `to` (either may be NULL). Receives are posted by _start;
 * each send by _send, as soon as its piece is compressed; _poll
 * (PMPI_Testsome) lets MPI progress the transfers between pieces of local
 * work; _wait_piece waits for one incoming piece; _wait completes the
 * step. */
typedef struct zmpi_xchg {
    MPI_Comm comm;
    int tag, from, to;
    zmpi_pieces *in, *out;
    int nrecv, nreq; /* requests: receives [0, nrecv), then sends */
    MPI_Request *req;
    MPI_Status *st;
    int *idx;
    size_t cap; /* entries allocated for req / st / idx */
} zmpi_xchg;

int zmpi_xchg_start(const zmpi_call *c, zmpi_xchg *x, int tag, int from, zmpi_pieces *in, int to,
                    zmpi_pieces *out);
int zmpi_xchg_send(zmpi_xchg *x, size_t j);
int zmpi_xchg_poll(zmpi_xchg *x);
int zmpi_xchg_wait(zmpi_xchg *x);
/* Waits for incoming piece j only (to decompress it while later pieces are
 * still in flight); _wait must still be called to complete the step. */
int zmpi_xchg_wait_piece(zmpi_xchg *x, size_t j);
/* Frees the request arrays (a zeroed zmpi_xchg is fine). On an error path
 * requests may still be active: receives are then cancelled and sends
 * completed (the peer runs the same schedule and receives them), so that
 * MPI never touches memory the caller frees next. */
void zmpi_xchg_free(zmpi_xchg *x);

/* Ring allgather of blocks as compressed pieces (Allreduce `ring` and
 * `cprp2p`, phase 2): block b (counts[b] elements at displs[b] of buf) is
 * the exact block of rank b on entry. In step s (0 .. N-2) rank r sends
 * block (r-s) mod N to r+1 and receives block (r-s-1) mod N from r-1.
 *   per_hop 0  compress once: the owner compresses its block in step 0 and
 *              the ranks forward the received streams unchanged; a rank
 *              decompresses the block it forwards while it travels, the
 *              last received one after the ring, and the owner its own
 *              stream too: every block is the same on every rank.
 *   per_hop 1  every step compresses the block it sends from buf, and the
 *              received pieces are decompressed into buf as they arrive;
 *              the owner's block stays exact.
 * Corrupt streams set *corrupt and do not stop the ring. */
int zmpi_ring_allgather(zmpi_call *c, void *buf, const size_t *counts, const size_t *displs, int per_hop,
                        int tag, int *corrupt);

/* Even partition of count elements over n blocks, MPICH style: the first
 * count % n blocks get one element more. */
void zmpi_blocks_even(size_t count, int n, size_t *counts, size_t *displs);

#endif
