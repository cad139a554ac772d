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

/* How a receive of (buf, count, type) goes through zmpi's path: as rcount
 * elements of rtype (MPI_FLOAT / MPI_DOUBLE) received into rbuf - the
 * user's buffer for MPI_FLOAT / MPI_DOUBLE and for dense derived types, a
 * staging buffer (`stage`, owned) for other eligible derived types, whose
 * elements are unpacked into the user's buffer afterwards. */
typedef struct zmpi_p2p_rplan {
    zmpi_dtinfo *d; /* the derived type's analysis (a reference), or NULL */
    void *stage;
    void *rbuf;
    int rcount;
    MPI_Datatype rtype;
    size_t es;
} zmpi_p2p_rplan;

/* One nonblocking send or receive between its start and its completion.
 * The user holds `greq`, a generalized request that only zmpi completes, so
 * its handle value cannot be reused by MPI while the operation lives. */
typedef struct zmpi_p2p_op {
    struct zmpi_p2p_op *next; /* registry list */
    MPI_Request greq;         /* the user's handle */
    MPI_Request req;          /* the underlying PMPI request; MPI_REQUEST_NULL when there is none */
    MPI_Comm comm;            /* the user's communicator (errors are raised on it) */
    zmpi_proc *proc;          /* the registry it is in (callbacks make no MPI calls to find it) */
    int is_recv;
    int detached;             /* ZMPI_Request_free'd: completed by later zmpi calls */
    int claimed;              /* a zmpi_p2p_reap is completing it (under the registry's mutex) */
    int finished;             /* the underlying transfer is over and the result below is final */
    int quiet;                /* completion errors are not raised (ZMPI_Sendrecv raises them once) */
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
/* Plans a receive of (buf, count, type): 1 with *pl filled (release with
 * zmpi_p2p_rplan_free) when it goes through zmpi's path (MPI_FLOAT,
 * MPI_DOUBLE, eligible derived types of at most INT_MAX elements), 0 for
 * the plain PMPI receive; -1 with *rc when the staging buffer cannot be
 * allocated. */
int zmpi_p2p_rplan_make(void *buf, int count, MPI_Datatype type, zmpi_p2p_rplan *pl, int *rc);
/* After a successful zmpi_p2p_deliver into pl->rbuf: unpacks the received
 * elements (st's count) from the staging buffer into buf. */
void zmpi_p2p_rplan_finish(const zmpi_p2p_rplan *pl, void *buf, const MPI_Status *st);
void zmpi_p2p_rplan_free(zmpi_p2p_rplan *pl);
/* The bytes of a received message, from its status. */
size_t zmpi_p2p_status_bytes(const MPI_Status *st);

/* ---- requests.c ---- */

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

/* Takes the oldest kept message of comm matching (source, tag) and delivers
 * it into (buf, count, type): returns 1 (with *rc and *st set) if there was
 * one, 0 if none. */
int zmpi_p2p_take_kept(MPI_Comm comm, int source, int tag, void *buf, int count, MPI_Datatype type, int *rc,
                       MPI_Status *st);

#endif
