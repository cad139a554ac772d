/*
 * Building blocks of the compressed data-movement collectives (Bcast,
 * Scatter(v), Gather(v), Allgather(v), Alltoall(v)): moving zmpi streams of
 * known or bounded size between ranks, and compressing / decompressing one
 * block with the conventions those collectives share.
 *
 * Blocks. A block of count elements of the call's dtype is one
 * self-describing zmpi stream (zmpi_block_compress), compressed once at its
 * origin. A block of 0 elements is sent as 0 bytes (no stream, and no
 * message when both ends know the count is 0).
 *
 * Transfers. Internal messages are MPI_BYTE on the call's communicator with
 * the tags below; every rank posts them in the same order, and MPI's
 * non-overtaking rule on (source, tag, communicator) matches them. MPI counts
 * are ints, so a transfer is cut into pieces of at most ZMPI_DM_PIECE bytes
 * (1 GiB): no count ever exceeds INT_MAX, whatever the block size.
 *   exact      both ends know the length: zmpi_dm_isend / zmpi_dm_irecv,
 *              ceil(len / PIECE) messages (none for len 0).
 *   variable   the receiver knows only a capacity `cap` that the sender can
 *              compute too (the worst-case stream size of a count both ends
 *              know): zmpi_dm_isend_var / zmpi_dm_vrecv_*. If cap <= PIECE
 *              (always, in practice: blocks below ~1 GiB) it is one message
 *              received into a buffer of cap bytes, its size read from the
 *              status (PMPI_Get_count); above, the length goes first (one
 *              MPI_UINT64_T) and the stream follows as an exact transfer.
 *              Both ends take the same branch because both know cap.
 *   bundle     a range of blocks travelling together (binomial Scatter and
 *              Gather): a directory of one MPI_UINT64_T stream size per block
 *              (the receiver knows how many blocks), then the concatenated
 *              streams as one exact transfer.
 *
 * Datatypes. Inside the algorithms data are contiguous arrays of the call's
 * dtype (MPI_FLOAT or MPI_DOUBLE). When a rank's other datatype argument
 * (e.g. the root's recvtype in Scatter, or sendtype in Allgather) is a
 * different but matching datatype, the dispatcher converts with
 * zmpi_dm_copy_typed (PMPI_Pack + PMPI_Unpack).
 */
#ifndef ZMPI_COLL_COMMON_MOVEMENT_H
#define ZMPI_COLL_COMMON_MOVEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

/* Tags of the data-movement collectives' internal messages. */
enum {
    ZMPI_TAG_BCAST = 0x7A41,
    ZMPI_TAG_SCATTER = 0x7A42,
    ZMPI_TAG_GATHER = 0x7A43,
    ZMPI_TAG_ALLGATHER = 0x7A44,
    ZMPI_TAG_ALLTOALL = 0x7A45,
    ZMPI_TAG_BCAST_SIZES = 0x7A46 /* the Bcast root's stream sizes, beside its scatter */
};

/* Largest message in bytes (overridable at build time to test the
 * multi-piece paths with small messages). */
#ifndef ZMPI_DM_PIECE
#define ZMPI_DM_PIECE ((size_t)1 << 30)
#endif

/* A growable list of outstanding requests. A zeroed one is empty. */
typedef struct zmpi_dm_reqs {
    MPI_Request *req;
    int n, cap;
} zmpi_dm_reqs;

/* Makes room for `more` requests. */
int zmpi_dm_reqs_reserve(zmpi_dm_reqs *r, int more);
/* Completes every request and empties the list; returns the first error. */
int zmpi_dm_waitall(zmpi_dm_reqs *r);
/* Drives progress without blocking (PMPI_Testall; completes nothing early). */
int zmpi_dm_progress(zmpi_dm_reqs *r);
/* Completes what is outstanding (ignoring errors) and frees the list. */
void zmpi_dm_reqs_free(zmpi_dm_reqs *r);

/* Exact transfers of len bytes (len may be 0: nothing is sent). */
int zmpi_dm_isend(const zmpi_call *c, const void *buf, size_t len, int dest, int tag, zmpi_dm_reqs *r);
int zmpi_dm_irecv(const zmpi_call *c, void *buf, size_t len, int src, int tag, zmpi_dm_reqs *r);
/* Blocking exact receive. */
int zmpi_dm_recv(const zmpi_call *c, void *buf, size_t len, int src, int tag);

/* Worst-case stream size of a block of count elements (0 for count 0). */
size_t zmpi_dm_cap(const zmpi_call *c, size_t count);

/* Variable-length send of len <= cap bytes; *lenbuf must stay valid until the
 * requests complete (it carries the length when cap > ZMPI_DM_PIECE). */
int zmpi_dm_isend_var(const zmpi_call *c, const void *buf, size_t len, size_t cap, int dest, int tag,
                      uint64_t *lenbuf, zmpi_dm_reqs *r);

/* Variable-length receive into buf of cap bytes: post, then wait (which
 * sets len). A zeroed zmpi_dm_vrecv is inactive. With cap > ZMPI_DM_PIECE
 * the post only receives the length (the stream follows in _wait), so such
 * a receive must not be outstanding together with another receive from the
 * same source and tag. */
typedef struct zmpi_dm_vrecv {
    void *buf;
    size_t cap, len;
    int src, tag, active;
    uint64_t len64;
    MPI_Request req;
} zmpi_dm_vrecv;
int zmpi_dm_vrecv_post(const zmpi_call *c, zmpi_dm_vrecv *v, void *buf, size_t cap, int src, int tag);
int zmpi_dm_vrecv_wait(const zmpi_call *c, zmpi_dm_vrecv *v);
/* Completes an outstanding receive on an error path (ignoring errors). */
void zmpi_dm_vrecv_drop(zmpi_dm_vrecv *v);

/* Compresses a block (count may be 0: *len = 0) into dst of capacity
 * cap >= zmpi_dm_cap(count). A codec failure falls back to an uncompressed
 * stream (zmpi_block_compress). */
int zmpi_dm_compress(zmpi_call *c, const void *src, size_t count, void *dst, size_t cap, size_t *len);
/* Decompresses a received block of len bytes into dst, which holds up to
 * count elements (MPI receive semantics: fewer is allowed). len 0 means an
 * empty block. MPI_ERR_TRUNCATE if the stream holds more than count
 * elements, MPI_ERR_OTHER if it is corrupt or of the wrong dtype. */
int zmpi_dm_decompress(zmpi_call *c, const void *src, size_t len, void *dst, size_t count);
/* The same for a block sent to / received from `peer` in Alltoall(v): with
 * an inter-step codec (c->chan) through the channel of that peer
 * (ZMPI_CHAN_TAG_ALLTOALL): a block that is empty, below ZMPI_MIN_BYTES or
 * not coded by the channel drops its history on both ends. Without one,
 * zmpi_dm_compress / zmpi_dm_decompress. */
int zmpi_dm_compress_to(zmpi_call *c, int peer, const void *src, size_t count, void *dst, size_t cap, size_t *len);
int zmpi_dm_decompress_from(zmpi_call *c, int peer, const void *src, size_t len, void *dst, size_t count);

/* A raw block travelled to / from peer in Alltoall(v): the inter-step
 * channel of that direction drops its history (nothing if c->chan is 0). */
void zmpi_dm_chan_drop(zmpi_call *c, int peer, int dir);

/* Bundles: the directory dir[0..n) (stream sizes) and the data (sum of dir
 * bytes) of n consecutive blocks. The receive allocates *data (free it). */
int zmpi_dm_isend_bundle(const zmpi_call *c, const uint64_t *dir, int n, const void *data, int dest, int tag,
                         zmpi_dm_reqs *r);
int zmpi_dm_recv_bundle_dir(const zmpi_call *c, uint64_t *dir, int n, int src, int tag);
/* A whole bundle of n blocks from src: *dir and *pre (n and n + 1 entries,
 * malloc'd), the streams in *z (the call's scratch: zmpi_scratch_put),
 * block k at (*pre)[k]. The caller frees all three, on errors too. */
int zmpi_dm_recv_bundle(const zmpi_call *c, int n, int src, int tag, uint64_t **dir, size_t **pre,
                        unsigned char **z);
/* Sum of dir[0..n) as size_t; MPI_ERR_OTHER on overflow. */
int zmpi_dm_dir_total(const uint64_t *dir, int n, size_t *total);

/* counts[i] = count, displs[i] = i * count for i < size (the layout of the
 * non-v collectives; the caller checked that (size - 1) * count fits an int).
 * Frees nothing on failure; free both arrays. */
int zmpi_dm_equal_layout(int size, int count, int **counts, int **displs);

/* Local copy between two datatypes with the same type signature (e.g. the
 * root's own block in Scatter when recvtype is a derived type of floats):
 * scount elements of stype at src into dst, which holds up to rcount
 * elements of rtype. PMPI_Pack + PMPI_Unpack, for unusual datatype pairs
 * only. MPI_ERR_TRUNCATE if the data exceed rcount, MPI_ERR_TYPE if they do
 * not fill whole rtype elements, MPI_ERR_COUNT above INT_MAX bytes. */
int zmpi_dm_copy_typed(MPI_Comm comm, const void *src, int scount, MPI_Datatype stype, void *dst, int rcount,
                       MPI_Datatype rtype);
/* The same for blocks of unequal size: the first elements of (src, scount,
 * stype), at most rcount elements of the basic type rtype (MPI_FLOAT /
 * MPI_DOUBLE), into dst; dst's elements beyond them unchanged. MPI_SUCCESS,
 * MPI_ERR_TYPE if the data do not fill whole rtype elements, or MPI's
 * error. */
int zmpi_dm_copy_prefix(MPI_Comm comm, const void *src, int scount, MPI_Datatype stype, void *dst, size_t rcount,
                        MPI_Datatype rtype);

/* The root's own block, copied exactly (nothing with MPI_IN_PLACE):
 * Gather(v) from sendbuf into its place in recvbuf, Scatter(v) from its
 * place in sendbuf into recvbuf. MPI_ERR_TRUNCATE (nothing copied) if it
 * does not fit. */
int zmpi_dm_gather_own(const zmpi_call *c, const void *sendbuf, int sendcount, void *recvbuf,
                       const int *recvcounts, const int *displs, int root);
int zmpi_dm_scatter_own(const zmpi_call *c, const void *sendbuf, const int *sendcounts, const int *displs,
                        void *recvbuf, int recvcount, int root);

/* Elements of a received stream from its header; SIZE_MAX if it is not a
 * valid stream of the call's dtype (0 for an empty block, len 0). */
size_t zmpi_dm_stream_count(const zmpi_call *c, const void *src, size_t len);

/* One hop of a per-hop ("cprp2p") algorithm: decompresses the len-byte
 * stream src of n elements (zmpi_dm_stream_count) into tmp and compresses
 * it again into dst (cap >= max(zmpi_dm_cap(n), len)), *olen bytes. A
 * stream that does not decode is copied unchanged and *corrupt set.
 * Returns non-zero only on an internal error. */
int zmpi_dm_rehop(zmpi_call *c, const unsigned char *src, size_t len, size_t n, void *tmp, unsigned char *dst,
                  size_t cap, size_t *olen, int *corrupt);

/* ceil(log2 n) for n >= 1: the hops of a binomial tree over n ranks. */
static inline int zmpi_ceil_log2(int n)
{
    int d = 0;
    while ((1L << d) < n)
        d++;
    return d;
}

/* Binomial tree over virtual ranks v = (rank - root + size) % size: the
 * parent of v > 0 is v with its lowest set bit cleared; the children of v
 * are v + m for the powers of two m below lowbit(v) (below size for the
 * root) with v + m < size; the subtree of a child v + m spans the virtual
 * ranks [v + m, min(v + 2m, size)). */
static inline int zmpi_dm_lowbit(int v, int size)
{
    if (v == 0) {
        int m = 1;
        while (m < size && m < (1 << 30)) /* (trees of up to 2^30 ranks) */
            m <<= 1;
        return m; /* the root: every power of two below size */
    }
    return v & -v;
}
static inline int zmpi_dm_real(int v, int root, int size)
{
    return (int)(((long)v + root) % size);
}
/* Virtual ranks in v's subtree (v included). */
static inline int zmpi_dm_subtree(int v, int size)
{
    int m = zmpi_dm_lowbit(v, size);
    return size - v < m ? size - v : m;
}

#endif
