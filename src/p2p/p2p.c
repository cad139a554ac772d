/*
 * Compressed point-to-point calls: ZMPI_Send, ZMPI_Recv, ZMPI_Isend,
 * ZMPI_Irecv, ZMPI_Sendrecv (completion of the nonblocking ones: requests.c).
 *
 * Wire protocol
 * -------------
 * The decision is zmpi_call_begin_p2p's, taken on each end from the
 * communicator's configuration and the datatype only:
 *
 *   compressed  (a bound or lossless codec is configured on the communicator
 *               and the datatype is MPI_FLOAT or MPI_DOUBLE)
 *
 *     sender                                   receiver
 *     stream = zmpi stream of the count        staging = zmpi_block_max(recvcount)
 *              elements (below ZMPI_MIN_BYTES  PMPI_Recv(staging, MPI_BYTE, same
 *              a "stored", uncompressed one)             source / tag / comm)
 *     PMPI_Send(stream, len, MPI_BYTE,  ---->  len = bytes received (status)
 *               dest, tag, comm)               validate header: dtype, count <= recvcount
 *                                              decompress into the user's buffer
 *                                              status: real MPI_SOURCE / MPI_TAG,
 *                                              element count = uncompressed count
 *
 *     Exactly one message per ZMPI message, on the same communicator, peer
 *     and tag, so MPI's matching and non-overtaking order are unchanged:
 *     MPI_ANY_SOURCE / MPI_ANY_TAG receives work as with plain MPI, and
 *     several messages with the same (source, tag) arrive in send order.
 *     The stream describes itself (codec, dtype, count, bound), so sender and
 *     receiver need not agree on sizes, codecs or thresholds: the receiver
 *     only needs a staging buffer of the worst-case stream size, which
 *     depends on its own count alone (a sender's count is <= the receiver's).
 *     A stream holding more elements than recvcount gives MPI_ERR_TRUNCATE
 *     (or PMPI reports MPI_ERR_TRUNCATE itself when the stream is larger than
 *     the staging buffer). Error bound: one compression per message, so
 *     every element is within the configured bound (ABS: eb; REL: eb times
 *     the value range of that message).
 *
 *   plain       (any other datatype, derived types, no bound configured,
 *               intercommunicators, MPI_PROC_NULL peers)
 *
 *     both ends call the plain PMPI function with the user's arguments.
 *
 *   large       a message whose worst-case stream exceeds INT_MAX bytes (the
 *               largest MPI_BYTE count) is sent plain. Each end decides from
 *               its own count, so for messages of that size both ends must
 *               post the same count.
 *
 * Consequences for users: both ends of a message must use zmpi calls (or both
 * plain MPI), with the same communicator configuration as to whether
 * compression is on, and the same datatype classification (MPI_FLOAT /
 * MPI_DOUBLE vs anything else) - which a correct MPI program has anyway.
 * Nonblocking requests returned by ZMPI_Isend / ZMPI_Irecv must be completed
 * with ZMPI_Wait / ZMPI_Waitall / ZMPI_Test (not MPI_Request_free); the
 * MPI_Request is the underlying PMPI request, so MPI_Cancel of a receive
 * works.
 *
 * Errors detected by zmpi itself (truncation after decoding, a corrupt or
 * foreign stream, memory) are returned as MPI error codes; they do not go
 * through the communicator's error handler.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p.h"

void zmpi_p2p_op_free(zmpi_p2p_op *op)
{
    if (!op)
        return;
    zmpi_call_end(&op->call);
    free(op->staging);
    free(op);
}

static int op_new(zmpi_p2p_op **out)
{
    zmpi_p2p_op *op = calloc(1, sizeof *op);
    *out = op;
    if (!op)
        return MPI_ERR_NO_MEM;
    op->req = MPI_REQUEST_NULL;
    return MPI_SUCCESS;
}

/* Starts op's zmpi_call. Returns MPI_SUCCESS with *on = 1 when the message
 * is compressed and op->len = the worst-case stream size of count elements,
 * *on = 0 for plain MPI. */
static int op_begin(zmpi_p2p_op *op, int count, MPI_Datatype type, MPI_Comm comm, int *on)
{
    int rc = MPI_SUCCESS;
    zmpi_dtype dt;
    size_t bytes = zmpi_classify(type, &dt) ? (size_t)count * zmpi_dtype_size(dt) : 0;
    *on = 0;
    int r = zmpi_call_begin_p2p(&op->call, comm, type, bytes);
    if (r == 0)
        goto fn_exit;
    if (r != 1) {
        rc = r;
        goto fn_fail;
    }
    size_t cap = zmpi_block_max(&op->call, (size_t)count);
    if (cap == 0 || cap > (size_t)INT_MAX) {
        /* not expressible as one MPI_BYTE message: plain MPI (see "large") */
        zmpi_call_end(&op->call);
        goto fn_exit;
    }
    op->len = cap;
    *on = 1;
fn_exit:
    return rc;
fn_fail:
    goto fn_exit;
}

/* Common part of send and receive preparation: the decision, the staging
 * buffer; a send compresses sendbuf into it, a receive (is_recv) keeps
 * recvbuf for the decompression. */
static int prepare(const void *sendbuf, void *recvbuf, int is_recv, int count, MPI_Datatype type, int peer,
                   MPI_Comm comm, zmpi_p2p_op **out)
{
    int rc = MPI_SUCCESS, on = 0;
    zmpi_p2p_op *op = NULL;
    *out = NULL;
    if (count < 0) {
        rc = MPI_ERR_COUNT;
        goto fn_fail;
    }
    if (peer == MPI_PROC_NULL || comm == MPI_COMM_NULL)
        goto fn_exit; /* no message (or PMPI reports the error) */
    rc = op_new(&op);
    if (rc)
        goto fn_fail;
    rc = op_begin(op, count, type, comm, &on);
    if (rc || !on)
        goto fn_fail; /* !on: plain MPI, rc == MPI_SUCCESS */
    if (count > 0 && !(is_recv ? recvbuf : sendbuf)) {
        rc = MPI_ERR_BUFFER;
        goto fn_fail;
    }
    rc = zmpi_alloc(op->len, &op->staging);
    if (rc)
        goto fn_fail;
    if (is_recv) {
        op->is_recv = 1;
        op->buf = recvbuf;
        op->count = (size_t)count;
    } else {
        ptrdiff_t len = zmpi_block_compress(&op->call, sendbuf, (size_t)count, op->staging, op->len);
        if (len < 0) {
            rc = MPI_ERR_INTERN; /* cannot happen: the capacity is the worst case */
            goto fn_fail;
        }
        op->len = (size_t)len;
    }
    *out = op;
fn_exit:
    return rc;
fn_fail:
    zmpi_p2p_op_free(op);
    goto fn_exit;
}

int zmpi_p2p_send_prepare(const void *buf, int count, MPI_Datatype type, int dest, MPI_Comm comm,
                          zmpi_p2p_op **op)
{
    return prepare(buf, NULL, 0, count, type, dest, comm, op);
}

int zmpi_p2p_recv_prepare(void *buf, int count, MPI_Datatype type, int source, MPI_Comm comm,
                          zmpi_p2p_op **op)
{
    return prepare(NULL, buf, 1, count, type, source, comm, op);
}

/* Status of a failed receive: the real source and tag, no elements. */
static void status_failed(const MPI_Status *got, MPI_Datatype type, MPI_Status *status)
{
    if (status == MPI_STATUS_IGNORE)
        return;
    if (status != got)
        *status = *got;
    PMPI_Status_set_elements(status, type, 0);
}

int zmpi_p2p_finish(zmpi_p2p_op *op, const MPI_Status *got, MPI_Status *status)
{
    int rc = MPI_SUCCESS, cancelled = 0, nbytes = 0;
    MPI_Status st = *got;
    zmpi_stream_info info;
    if (!op->is_recv)
        goto fn_exit;
    rc = PMPI_Test_cancelled(&st, &cancelled);
    if (rc || cancelled)
        goto fn_exit;
    rc = PMPI_Get_count(&st, MPI_BYTE, &nbytes);
    if (rc)
        goto fn_fail;
    if (nbytes < 0 || (size_t)nbytes > op->len ||
        zmpi_stream_info_get(op->staging, (size_t)nbytes, &info) != ZMPI_OK) {
        rc = MPI_ERR_OTHER; /* not a zmpi stream: did the sender use plain MPI? */
        goto fn_fail;
    }
    if (info.dtype != op->call.dt) {
        rc = MPI_ERR_TYPE; /* MPI_FLOAT sent, MPI_DOUBLE received or vice versa */
        goto fn_fail;
    }
    if (info.count > op->count) {
        rc = MPI_ERR_TRUNCATE;
        goto fn_fail;
    }
    rc = zmpi_block_decompress(&op->call, op->staging, (size_t)nbytes, op->buf, (size_t)info.count);
    if (rc)
        goto fn_fail;
    rc = PMPI_Status_set_elements(&st, op->call.type, (int)info.count);
    if (rc)
        goto fn_fail;
fn_exit:
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    zmpi_p2p_op_free(op);
    return rc;
fn_fail:
    status_failed(got, op->call.type, &st);
    goto fn_exit;
}

int ZMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    zmpi_p2p_op *op = NULL;
    int rc = zmpi_p2p_send_prepare(buf, count, datatype, dest, comm, &op);
    if (rc)
        goto fn_fail;
    if (op)
        rc = PMPI_Send(op->staging, (int)op->len, MPI_BYTE, dest, tag, comm);
    else
        rc = PMPI_Send(buf, count, datatype, dest, tag, comm);
    if (rc)
        goto fn_fail;
fn_exit:
    zmpi_p2p_op_free(op);
    return rc;
fn_fail:
    goto fn_exit;
}

int ZMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
              MPI_Status *status)
{
    zmpi_p2p_op *op = NULL;
    MPI_Status got;
    memset(&got, 0, sizeof got);
    int rc = zmpi_p2p_recv_prepare(buf, count, datatype, source, comm, &op);
    if (rc)
        goto fn_fail;
    if (!op) {
        rc = PMPI_Recv(buf, count, datatype, source, tag, comm, status);
        goto fn_exit;
    }
    rc = PMPI_Recv(op->staging, (int)op->len, MPI_BYTE, source, tag, comm, &got);
    if (rc) {
        status_failed(&got, datatype, status);
        goto fn_fail;
    }
    rc = zmpi_p2p_finish(op, &got, status);
    op = NULL;
fn_exit:
    return rc;
fn_fail:
    zmpi_p2p_op_free(op);
    goto fn_exit;
}

int ZMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    zmpi_p2p_op *op = NULL;
    int rc = request ? MPI_SUCCESS : MPI_ERR_REQUEST;
    if (rc)
        goto fn_fail;
    rc = zmpi_p2p_send_prepare(buf, count, datatype, dest, comm, &op);
    if (rc)
        goto fn_fail;
    if (!op) {
        rc = PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
        goto fn_exit;
    }
    rc = zmpi_p2p_registry_ready();
    if (rc)
        goto fn_fail;
    rc = PMPI_Isend(op->staging, (int)op->len, MPI_BYTE, dest, tag, comm, &op->req);
    if (rc)
        goto fn_fail;
    *request = op->req;
    zmpi_p2p_register(op);
fn_exit:
    return rc;
fn_fail:
    zmpi_p2p_op_free(op);
    goto fn_exit;
}

int ZMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    zmpi_p2p_op *op = NULL;
    int rc = request ? MPI_SUCCESS : MPI_ERR_REQUEST;
    if (rc)
        goto fn_fail;
    rc = zmpi_p2p_recv_prepare(buf, count, datatype, source, comm, &op);
    if (rc)
        goto fn_fail;
    if (!op) {
        rc = PMPI_Irecv(buf, count, datatype, source, tag, comm, request);
        goto fn_exit;
    }
    rc = zmpi_p2p_registry_ready();
    if (rc)
        goto fn_fail;
    rc = PMPI_Irecv(op->staging, (int)op->len, MPI_BYTE, source, tag, comm, &op->req);
    if (rc)
        goto fn_fail;
    *request = op->req;
    zmpi_p2p_register(op);
fn_exit:
    return rc;
fn_fail:
    zmpi_p2p_op_free(op);
    goto fn_exit;
}

/*
 * Sendrecv = Irecv + Isend + Waitall: deadlock-free for any pairing (also a
 * rank with itself), whichever of the two messages is compressed. The
 * receive is posted first so that a failure to start the send can cancel it.
 */
int ZMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                  void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                  MPI_Comm comm, MPI_Status *status)
{
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status sts[2];
    int rc = MPI_SUCCESS;
    if (source != MPI_PROC_NULL) {
        rc = ZMPI_Irecv(recvbuf, recvcount, recvtype, source, recvtag, comm, &reqs[1]);
        if (rc)
            goto fn_fail;
    }
    rc = ZMPI_Isend(sendbuf, sendcount, sendtype, dest, sendtag, comm, &reqs[0]);
    if (rc)
        goto fn_cancel;
    rc = ZMPI_Waitall(2, reqs, sts);
    if (status != MPI_STATUS_IGNORE)
        *status = sts[1];
    if (rc)
        goto fn_in_status;
    if (source == MPI_PROC_NULL) /* the status MPI_Sendrecv gives (MPI_PROC_NULL, MPI_ANY_TAG, 0) */
        rc = PMPI_Recv(recvbuf, recvcount, recvtype, MPI_PROC_NULL, recvtag, comm, status);
fn_exit:
    return rc;
fn_in_status: {
    /* report the error of the failed half, as MPI_Sendrecv does */
    int cls = rc;
    PMPI_Error_class(rc, &cls);
    if (cls == MPI_ERR_IN_STATUS)
        for (int i = 1; i >= 0; i--)
            if (sts[i].MPI_ERROR != MPI_SUCCESS && sts[i].MPI_ERROR != MPI_ERR_PENDING)
                rc = sts[i].MPI_ERROR;
    goto fn_exit;
}
fn_cancel:
    if (reqs[1] != MPI_REQUEST_NULL && PMPI_Cancel(&reqs[1]) == MPI_SUCCESS)
        ZMPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
    goto fn_exit;
fn_fail:
    goto fn_exit;
}
