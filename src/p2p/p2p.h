/*
 * Private interface of the point-to-point layer: one compressed message in
 * flight (a "pending operation"), and the registry that maps the MPI_Request
 * handed to the user to its pending operation.
 *
 * p2p.c     ZMPI_Send / Recv / Isend / Irecv / Sendrecv and the wire protocol
 * requests.c the registry and ZMPI_Wait / Waitall / Test
 */
#ifndef ZMPI_P2P_H
#define ZMPI_P2P_H

#include <stddef.h>

#include "core/core.h"

/* One compressed send or receive between its start and its completion. */
typedef struct zmpi_p2p_op {
    struct zmpi_p2p_op *next; /* registry list */
    MPI_Request req;          /* the underlying PMPI request (nonblocking only) */
    int is_recv;
    zmpi_call call;           /* owns the codec contexts until completion */
    unsigned char *staging;   /* the zmpi stream (send) or the worst-case receive buffer */
    size_t len;               /* send: stream bytes; receive: staging capacity */
    void *buf;                /* receive: the user's buffer */
    size_t count;             /* receive: the user's count (elements) */
} zmpi_p2p_op;

/* Prepares a send: returns MPI_SUCCESS with *op == NULL when the message goes
 * as plain MPI, or with a new operation whose staging holds the stream to
 * send as MPI_BYTE (op->len bytes, <= INT_MAX). */
int zmpi_p2p_send_prepare(const void *buf, int count, MPI_Datatype type, int dest, MPI_Comm comm,
                          zmpi_p2p_op **op);
/* Prepares a receive: *op == NULL for plain MPI, else a new operation with a
 * staging buffer of op->len (<= INT_MAX) bytes to receive MPI_BYTE into. */
int zmpi_p2p_recv_prepare(void *buf, int count, MPI_Datatype type, int source, MPI_Comm comm,
                          zmpi_p2p_op **op);
/* Completes an operation whose underlying transfer finished with status
 * *got: a receive is validated and decompressed into the user's buffer and
 * *status (unless MPI_STATUS_IGNORE; it may equal got) gets the real source,
 * tag and the uncompressed element count. A send copies *got. Frees op.
 * Returns MPI_SUCCESS, MPI_ERR_TRUNCATE, MPI_ERR_TYPE (float/double
 * mismatch) or MPI_ERR_OTHER (not a valid zmpi stream). */
int zmpi_p2p_finish(zmpi_p2p_op *op, const MPI_Status *got, MPI_Status *status);
/* Releases an operation without completing it (its transfer must be over). */
void zmpi_p2p_op_free(zmpi_p2p_op *op);

/* ---- registry (requests.c) ---- */

/* Reserves the registry before a request is posted (so that registering
 * cannot fail afterwards). Returns MPI_SUCCESS or an MPI error code. */
int zmpi_p2p_registry_ready(void);
/* Registers op under op->req (after zmpi_p2p_registry_ready succeeded). */
void zmpi_p2p_register(zmpi_p2p_op *op);
/* Removes and returns the operations of reqs[0..n) (ops[i] = NULL for plain
 * requests); returns how many were found. The caller owns them until it
 * finishes them or gives them back with zmpi_p2p_reattach. */
int zmpi_p2p_detach(int n, const MPI_Request *reqs, zmpi_p2p_op **ops);
/* Gives back an operation whose request is still pending. */
void zmpi_p2p_reattach(zmpi_p2p_op *op);

#endif
