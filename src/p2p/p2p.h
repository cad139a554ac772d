/*
 * Private interface of the point-to-point layer.
 *
 * p2p.c      ZMPI_Send / Recv / Isend / Irecv / Sendrecv and the wire protocol
 * requests.c zmpi's requests (generalized requests) and their completion:
 *            ZMPI_Wait, Waitall, Waitany, Waitsome, Test, Testall, Testany,
 *            Testsome, Request_free, Cancel
 * probe.c    ZMPI_Probe, Iprobe, Mprobe, Improbe, Mrecv, Imrecv, Get_count
 *            and the messages they took out of MPI's queues
 */
#ifndef ZMPI_P2P_H
#define ZMPI_P2P_H

#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include "core/core.h"

/* How a receive of (buf, count, type) goes through zmpi's path. Every
 * receive is posted as PMPI_(I)Recv(rbuf, pn, pt) and its message, once
 * arrived, handed to zmpi_p2p_rplan_deliver, which decodes a zmpi stream:
 *   float  (other == 0): rcount elements of rtype (MPI_FLOAT / MPI_DOUBLE)
 *          received into rbuf - the user's buffer for MPI_FLOAT / MPI_DOUBLE
 *          and for dense derived types, a staging buffer (`stage`, owned)
 *          for other eligible derived types, whose elements are unpacked
 *          into the user's buffer afterwards;
 *   other  (other == 1): any other datatype. A type laid out as plain
 *          bytes (named, or contiguous / duplicated from one) is received
 *          into the user's buffer as the user's type; other derived types
 *          into `stage` as MPI_BYTEs of their packed size, then unpacked.
 *          A zmpi stream arriving there is decoded into the bytes the
 *          sender's data had. */
typedef struct zmpi_p2p_rplan {
    zmpi_dtinfo *d; /* the derived type's analysis (a reference), or NULL */
    void *stage;
    void *rbuf;
    int rcount;
    MPI_Datatype rtype;
    size_t es;
    int other;
    int pn;           /* the posted receive: pn elements of pt into rbuf */
    MPI_Datatype pt;
} zmpi_p2p_rplan;

/* One nonblocking send or receive between its start and its completion,
 * or a persistent one between its init and its free. The user holds `greq`:
 * a generalized request that only zmpi completes, or for a persistent
 * operation a persistent request of zmpi's that is never started (MPI
 * treats it as inactive); either way its handle value cannot be reused by
 * MPI while the operation lives. An MPI_Isendrecv(_replace) has two
 * underlying requests: the receive (req) and the send (req2); it is
 * finished when both are over. */
typedef struct zmpi_p2p_op {
    struct zmpi_p2p_op *next; /* registry list */
    MPI_Request greq;         /* the user's handle */
    MPI_Request req;          /* the underlying PMPI request; MPI_REQUEST_NULL when there is none */
    MPI_Request req2;         /* a pair's send; MPI_REQUEST_NULL otherwise */
    int persistent;           /* made by a ZMPI_*_init call: greq is a persistent handle */
    int active;               /* persistent: started, not yet completed by a completion call */
    int kind;                 /* persistent send: ZMPI_P2P_SEND / SSEND / RSEND / BSEND */
    const void *sbuf;         /* persistent send: the user's buffer, count, type and destination */
    int scount, dest;
    MPI_Datatype stype;
    MPI_Datatype own_type;    /* persistent: the user's derived datatype, duplicated at init (the user may
                                 free theirs), freed with the operation; else MPI_DATATYPE_NULL */
    MPI_Comm comm;            /* the user's communicator (errors are raised on it) */
    zmpi_proc *proc;          /* the registry it is in (callbacks make no MPI calls to find it) */
    int is_recv;
    int detached;             /* ZMPI_Request_free'd: completed by later zmpi calls */
    int claimed;              /* a zmpi_p2p_reap is completing it (under the registry's mutex) */
    int finished;             /* the underlying transfer is over and the result below is final */
    int quiet;                /* completion errors are not raised (ZMPI_Sendrecv raises them once) */
    int decode;               /* receive: its message goes through plan (else MPI's own receive, e.g.
                                 from MPI_PROC_NULL) */
    int collecting;           /* a zmpi completion call is collecting it: the query returns success */
    int busy;                 /* a completion call of thread busy_by holds it (under the registry's mutex) */
    pthread_t busy_by;
    uint64_t posted;          /* order of posting among the process's operations */
    int source, tag;          /* receive: the user's source and tag (possibly wildcards) */
    void *buf;                /* receive: the user's buffer */
    int count;                /* receive: the user's count */
    MPI_Datatype type;        /* receive: the user's datatype */
    void *stream;             /* send: the compressed stream (freed at completion) */
    zmpi_p2p_rplan plan;      /* receive through zmpi's path: where the elements go (freed at completion) */
    MPI_Status status;        /* the final status (source, tag, elements, cancelled) */
    int err;                  /* the final error (MPI_SUCCESS, or a code of zmpi's) */
} zmpi_p2p_op;

/* ---- p2p.c ---- */

/* 1 if data[0..n) is a whole zmpi message (a stream with the flag
 * ZMPI_SF_MESSAGE, header valid, exactly n bytes), with *info. */
int zmpi_p2p_is_message(const void *data, size_t n, zmpi_stream_info *info);

/* 1 if a receive of `type` goes through zmpi's receive path (MPI_FLOAT and
 * MPI_DOUBLE, whatever the communicator's settings: a compressed message
 * must be recognised by any receiver), with *es the element size. */
int zmpi_p2p_is_float(MPI_Datatype type, size_t *es);
/* The datatype of a float/double receive beyond INT_MAX bytes: es
 * contiguous MPI_BYTEs, so that raw data and compressed streams (both sent
 * as bytes) match it and such counts work. */
MPI_Datatype zmpi_p2p_bytes_type(size_t es);
/* How a float/double receive of count elements of es bytes is posted:
 * *n MPI_BYTEs (count * es) while that fits an int, else count units of
 * zmpi_p2p_bytes_type(es). (SimGrid's SMPI drops the trailing partial
 * element of a message received into a contiguous type of several bytes,
 * which a compressed stream's length usually leaves.) */
void zmpi_p2p_recv_shape(int count, size_t es, int *n, MPI_Datatype *type);
/* Finishes a float/double receive of (buf, count, type) whose message (raw
 * data or a zmpi stream, `nbytes` bytes) is at `data` - which is buf itself
 * when it was received there, or a kept message (probe.c). Decodes a
 * stream into buf, or copies raw data; sets *st's element count. `posted`:
 * the receive's place in posting order (zmpi_p2p_op.posted; UINT64_MAX for
 * a blocking receive): an inter-step stream ahead of its channel first
 * completes the channel's receives posted before it. Returns MPI_SUCCESS or
 * a zmpi error code (not raised). */
int zmpi_p2p_deliver(const void *data, size_t nbytes, void *buf, int count, MPI_Datatype type, MPI_Comm comm,
                     MPI_Status *st, uint64_t posted);
/* Plans a receive of (buf, count, type) on comm: 1 with *pl filled
 * (release with zmpi_p2p_rplan_free) when it goes through zmpi's path
 * (every datatype but an eligible derived type beyond INT_MAX elements, and
 * negative counts, which MPI reports), 0 for the plain PMPI receive; -1
 * with *rc when MPI fails or the staging buffer cannot be allocated. */
int zmpi_p2p_rplan_make(void *buf, int count, MPI_Datatype type, MPI_Comm comm, zmpi_p2p_rplan *pl, int *rc);
/* The message of a planned receive of (buf, count, type) arrived: its
 * bytes (nbytes) are at `data` - pl->rbuf when it was received there, or a
 * kept message (probe.c). Decodes or copies them into buf and sets *st's
 * element count. posted: as zmpi_p2p_deliver. Returns MPI_SUCCESS or a zmpi
 * error code (not raised; *st's count is then 0). */
int zmpi_p2p_rplan_deliver(const zmpi_p2p_rplan *pl, const void *data, size_t nbytes, void *buf, int count,
                           MPI_Datatype type, MPI_Comm comm, MPI_Status *st, uint64_t posted);
void zmpi_p2p_rplan_free(zmpi_p2p_rplan *pl);
/* Puts n bytes (a message's, in packed order) into (buf, count, type) as a
 * receive of that message would: whole instances, then the first bytes of
 * a partial one (its other bytes unchanged). MPI_SUCCESS, MPI's error, or
 * a truncation error (not raised). */
int zmpi_p2p_put_bytes(const void *src, size_t n, void *buf, int count, MPI_Datatype type, MPI_Comm comm);
/* The bytes of a received message, from its status. */
size_t zmpi_p2p_status_bytes(const MPI_Status *st);

/* ---- requests.c ---- */

enum { ZMPI_P2P_SEND = 0, ZMPI_P2P_SSEND, ZMPI_P2P_RSEND, ZMPI_P2P_BSEND };

/* A new persistent operation with its (never started) handle, unregistered. */
int zmpi_p2p_op_new_persistent(MPI_Comm comm, int is_recv, zmpi_p2p_op **out);
/* The registered, not freed operation whose handle is h, or NULL. */
zmpi_p2p_op *zmpi_p2p_lookup(MPI_Request h);

/* A new operation with its generalized request. MPI_SUCCESS or an error. */
int zmpi_p2p_op_new(MPI_Comm comm, int is_recv, zmpi_p2p_op **out);
/* Registers op (its greq becomes the user's handle). */
void zmpi_p2p_register(zmpi_p2p_op *op);
/* Releases an operation that was never registered. */
void zmpi_p2p_op_discard(zmpi_p2p_op *op);
/* Marks op finished with its status and error (a receive satisfied at once,
 * e.g. from a kept message) and completes its generalized request. */
void zmpi_p2p_op_done(zmpi_p2p_op *op, const MPI_Status *st, int err);
/* ZMPI_Waitall without raising errors: *raised = 1 when the error was
 * raised already (by MPI, or by an operation's own completion). */
int zmpi_p2p_waitall(int count, MPI_Request *requests, MPI_Status *statuses, int *raised);
/* Completes detached operations whose transfers are over. */
void zmpi_p2p_reap(void);
/* Completes (blocking) the receive operations on comm that were posted
 * before `posted`, can match (source, tag) and are still in flight, oldest
 * first: an inter-step stream that arrived ahead of its channel needs the
 * messages those hold. They are matched already (MPI matches a message to
 * the earliest posted receive that fits), so waiting on them cannot hang. */
void zmpi_p2p_settle_before(MPI_Comm comm, int source, int tag, uint64_t posted);

/* ---- probe.c ---- */

/* 1 if comm holds a kept message matching (source, tag). */
int zmpi_p2p_has_kept(MPI_Comm comm, int source, int tag);
/* Takes the oldest kept message of comm matching (source, tag) and delivers
 * it into (buf, count, type): returns 1 (with *rc and *st set) if there was
 * one, 0 if none. */
int zmpi_p2p_take_kept(MPI_Comm comm, int source, int tag, void *buf, int count, MPI_Datatype type, int *rc,
                       MPI_Status *st);

#endif
