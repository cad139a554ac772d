/*
 * Probes: ZMPI_Probe, ZMPI_Iprobe, ZMPI_Mprobe, ZMPI_Improbe, ZMPI_Mrecv,
 * ZMPI_Imrecv, ZMPI_Get_count.
 *
 * MPI's probes report a compressed message's wire size, not its element
 * count, and no MPI call reads a message's first bytes without receiving it.
 * So a zmpi probe takes the matched message out of MPI's queue
 * (PMPI_Mprobe + PMPI_Mrecv into memory of its exact size) and keeps it on
 * the communicator, oldest first; the status it returns counts the
 * elements the message really holds (MPI_Get_count / ZMPI_Get_count with
 * MPI_FLOAT or MPI_DOUBLE, or whole instances of a derived type made of
 * them), or its bytes for raw data of any type.
 *
 * Every zmpi receive on the communicator (ZMPI_Recv, Irecv, Sendrecv, Mrecv)
 * looks at the kept messages before MPI's queue: a kept message is older
 * than anything still queued from the same source, so matching order is
 * MPI's. The rule that follows: a message found by a zmpi probe is
 * received by a zmpi receive (a plain MPI_Recv looks only in MPI's queue).
 *
 * ZMPI_Mprobe / Improbe hand out a message handle that is a live MPI
 * message of zmpi's own (an empty message to self on a private
 * communicator), so its value is unique while the kept message waits for
 * ZMPI_Mrecv / Imrecv; pass it to those, not to MPI_Mrecv.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p.h"

#define PLACEHOLDER_TAG 1

static int matches(const zmpi_kept *k, int source, int tag)
{
    return k->handle == MPI_MESSAGE_NULL && (source == MPI_ANY_SOURCE || source == k->source) &&
           (tag == MPI_ANY_TAG || tag == k->tag);
}

/* The status a probe reports for k: the bytes of the data it carries (a
 * zmpi message's decoded size). */
static void kept_status(const zmpi_kept *k, MPI_Status *st)
{
    zmpi_stream_info info;
    *st = k->status;
    if (zmpi_p2p_is_message(k->data, k->bytes, &info))
        PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)(info.count * zmpi_dtype_size(info.dtype)));
    else
        PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)k->bytes);
}

/* Receives the message behind msg (from PMPI_Mprobe / Improbe) into a new
 * kept entry appended to s's list. */
static int keep(zmpi_comm_state *s, MPI_Comm comm, MPI_Message *msg, const MPI_Status *probed, zmpi_kept **out)
{
    zmpi_kept *k = calloc(1, sizeof *k);
    size_t n = zmpi_p2p_status_bytes(probed);
    int rc = MPI_ERR_NO_MEM;
    if (!k || !(k->data = malloc(n ? n : 1))) {
        free(k);
        /* the message is matched: it must be received all the same */
        PMPI_Mrecv(NULL, 0, MPI_BYTE, msg, MPI_STATUS_IGNORE);
        return rc;
    }
    if (n <= (size_t)INT_MAX) {
        rc = PMPI_Mrecv(k->data, (int)n, MPI_BYTE, msg, &k->status);
    } else { /* beyond INT_MAX bytes: as units of 8 bytes and the rest */
        MPI_Datatype t8 = zmpi_p2p_bytes_type(8), t;
        int bl[2] = {(int)(n / 8), (int)(n % 8)};
        MPI_Aint dis[2] = {0, (MPI_Aint)(n / 8 * 8)};
        MPI_Datatype ty[2] = {t8, MPI_BYTE};
        rc = PMPI_Type_create_struct(2, bl, dis, ty, &t);
        if (rc == MPI_SUCCESS && (rc = PMPI_Type_commit(&t)) == MPI_SUCCESS) {
            rc = PMPI_Mrecv(k->data, 1, t, msg, &k->status);
            PMPI_Type_free(&t);
        }
    }
    if (rc) {
        free(k->data);
        free(k);
        return rc;
    }
    k->bytes = n;
    k->source = k->status.MPI_SOURCE;
    k->tag = k->status.MPI_TAG;
    k->handle = MPI_MESSAGE_NULL;
    k->ph_send = MPI_REQUEST_NULL;
    k->comm = comm;
    pthread_mutex_lock(&s->kept_lock);
    zmpi_kept **pp = &s->kept;
    while (*pp)
        pp = &(*pp)->next;
    *pp = k;
    pthread_mutex_unlock(&s->kept_lock);
    *out = k;
    return MPI_SUCCESS;
}

/* The oldest kept message matching (source, tag), or NULL; remove: take it
 * off the list. */
static zmpi_kept *find(zmpi_comm_state *s, int source, int tag, int remove)
{
    zmpi_kept *k = NULL;
    pthread_mutex_lock(&s->kept_lock);
    for (zmpi_kept **pp = &s->kept; *pp; pp = &(*pp)->next)
        if (matches(*pp, source, tag)) {
            k = *pp;
            if (remove)
                *pp = k->next;
            break;
        }
    pthread_mutex_unlock(&s->kept_lock);
    return k;
}

/* Delivers kept message k into (buf, count, type) and frees it. */
static int deliver_kept(zmpi_kept *k, void *buf, int count, MPI_Datatype type, MPI_Comm comm, MPI_Status *st)
{
    zmpi_p2p_rplan pl;
    int rc = MPI_SUCCESS;
    *st = k->status;
    int how = zmpi_p2p_rplan_make(buf, count, type, comm, &pl, &rc);
    if (how > 0) {
        rc = zmpi_p2p_rplan_deliver(&pl, k->data, k->bytes, buf, count, type, comm, st, UINT64_MAX);
        zmpi_p2p_rplan_free(&pl);
    } else if (how == 0 && count < 0) {
        rc = MPI_ERR_COUNT;
    } else if (how == 0) { /* a derived type beyond INT_MAX elements: only raw data reaches it */
        rc = zmpi_p2p_put_bytes(k->data, k->bytes, buf, count, type, comm);
        if (rc == MPI_SUCCESS)
            PMPI_Status_set_elements_x(st, MPI_BYTE, (MPI_Count)k->bytes);
    }
    if (rc)
        PMPI_Status_set_elements(st, MPI_BYTE, 0);
    free(k->data);
    free(k);
    return rc;
}

int zmpi_p2p_has_kept(MPI_Comm comm, int source, int tag)
{
    zmpi_comm_state *s = zmpi_state(comm);
    return s && find(s, source, tag, 0) != NULL;
}

int zmpi_p2p_take_kept(MPI_Comm comm, int source, int tag, void *buf, int count, MPI_Datatype type, int *rc,
                       MPI_Status *st)
{
    zmpi_comm_state *s = zmpi_state(comm);
    zmpi_kept *k = s ? find(s, source, tag, 1) : NULL;
    if (!k)
        return 0;
    *rc = deliver_kept(k, buf, count, type, comm, st);
    return 1;
}

/* Probe without raising: flag (NULL: block) and, when found, *kept. */
static int probe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status, zmpi_kept **kept, int *raised)
{
    MPI_Message msg = MPI_MESSAGE_NULL;
    MPI_Status st;
    int rc, found = 1;
    *raised = 0;
    *kept = NULL;
    zmpi_comm_state *s = zmpi_state(comm);
    if (!s)
        return MPI_ERR_NO_MEM;
    rc = zmpi_state_error(s);
    if (rc)
        return rc;
    zmpi_kept *k = find(s, source, tag, 0);
    if (!k) {
        *raised = 1; /* errors from here on are MPI's */
        rc = flag ? PMPI_Improbe(source, tag, comm, &found, &msg, &st) : PMPI_Mprobe(source, tag, comm, &msg, &st);
        if (rc || !found) {
            if (flag)
                *flag = 0;
            return rc;
        }
        if (msg == MPI_MESSAGE_NO_PROC) { /* source MPI_PROC_NULL */
            if (flag)
                *flag = 1;
            if (status != MPI_STATUS_IGNORE)
                *status = st;
            return MPI_SUCCESS;
        }
        *raised = 0;
        rc = keep(s, comm, &msg, &st, &k);
        if (rc)
            return rc;
    }
    if (flag)
        *flag = 1;
    if (status != MPI_STATUS_IGNORE)
        kept_status(k, status);
    *kept = k;
    return MPI_SUCCESS;
}

int ZMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    zmpi_kept *k;
    int raised;
    zmpi_p2p_reap();
    int rc = probe(source, tag, comm, NULL, status, &k, &raised);
    return raised ? rc : zmpi_raise(comm, rc);
}

int ZMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    zmpi_kept *k;
    int raised;
    zmpi_p2p_reap();
    if (!flag)
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_ARG, "ZMPI_Iprobe: flag is NULL"));
    int rc = probe(source, tag, comm, flag, status, &k, &raised);
    return raised ? rc : zmpi_raise(comm, rc);
}

/* Gives kept message k (taken off its communicator's list) a handle for the
 * user: a live empty message to self on zmpi's private communicator,
 * matched with PMPI_Mprobe, and moves k to the process's handed-out list. */
static int hand_out(zmpi_kept *k, MPI_Message *message)
{
    zmpi_proc *p = zmpi_proc_get();
    MPI_Request r;
    if (!p)
        return MPI_ERR_INTERN;
    int rc = PMPI_Isend(NULL, 0, MPI_BYTE, 0, PLACEHOLDER_TAG, p->self, &r);
    if (rc)
        return rc;
    rc = PMPI_Mprobe(0, PLACEHOLDER_TAG, p->self, &k->handle, MPI_STATUS_IGNORE);
    if (rc) {
        PMPI_Cancel(&r);
        PMPI_Wait(&r, MPI_STATUS_IGNORE);
        return rc;
    }
    k->ph_send = r; /* completes when the placeholder is received */
    pthread_mutex_lock(&p->mu);
    k->next = p->handed;
    p->handed = k;
    pthread_mutex_unlock(&p->mu);
    *message = k->handle;
    return MPI_SUCCESS;
}

static int mprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    zmpi_kept *k;
    int raised, rc;
    zmpi_p2p_reap();
    if (!message)
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_ARG, "Mprobe: message is NULL"));
    *message = MPI_MESSAGE_NULL;
    rc = probe(source, tag, comm, flag, status, &k, &raised);
    if (rc)
        return raised ? rc : zmpi_raise(comm, rc);
    if (k) {
        zmpi_comm_state *s = zmpi_state(comm);
        zmpi_kept *taken = find(s, k->source, k->tag, 1); /* the oldest match is k itself */
        rc = taken == k ? hand_out(k, message) : MPI_ERR_INTERN;
        if (rc && taken == k) { /* back where it was, for a later receive */
            pthread_mutex_lock(&s->kept_lock);
            k->next = s->kept;
            s->kept = k;
            pthread_mutex_unlock(&s->kept_lock);
        }
    } else if (!flag || *flag) {
        *message = MPI_MESSAGE_NO_PROC;
    }
    return zmpi_raise(comm, rc);
}

int ZMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    return mprobe(source, tag, comm, NULL, message, status);
}

int ZMPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status)
{
    if (!flag)
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_ARG, "ZMPI_Improbe: flag is NULL"));
    return mprobe(source, tag, comm, flag, message, status);
}

/* The kept message behind handle m, taken off the handed-out list (its
 * placeholder consumed), or NULL if m is not zmpi's. */
static zmpi_kept *take_handle(MPI_Message *m)
{
    zmpi_proc *p = zmpi_proc_get();
    zmpi_kept *k = NULL;
    if (!p || *m == MPI_MESSAGE_NULL || *m == MPI_MESSAGE_NO_PROC)
        return NULL;
    pthread_mutex_lock(&p->mu);
    for (zmpi_kept **pp = &p->handed; *pp; pp = &(*pp)->next)
        if ((*pp)->handle == *m) {
            k = *pp;
            *pp = k->next;
            break;
        }
    pthread_mutex_unlock(&p->mu);
    if (k) {
        PMPI_Mrecv(NULL, 0, MPI_BYTE, &k->handle, MPI_STATUS_IGNORE);
        PMPI_Wait(&k->ph_send, MPI_STATUS_IGNORE);
        *m = MPI_MESSAGE_NULL;
    }
    return k;
}

int ZMPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status)
{
    MPI_Status st;
    zmpi_p2p_reap();
    if (!message)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Mrecv: message is NULL"));
    zmpi_kept *k = take_handle(message);
    if (!k)
        return PMPI_Mrecv(buf, count, datatype, message, status);
    MPI_Comm comm = k->comm;
    int rc = deliver_kept(k, buf, count, datatype, comm, &st);
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    return zmpi_raise(comm, rc);
}

int ZMPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request)
{
    MPI_Status st;
    zmpi_p2p_op *op;
    zmpi_p2p_reap();
    if (!message || !request)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Imrecv: NULL argument"));
    zmpi_kept *k = take_handle(message);
    if (!k)
        return PMPI_Imrecv(buf, count, datatype, message, request);
    MPI_Comm comm = k->comm;
    int rc = zmpi_p2p_op_new(comm, 1, &op);
    if (rc) {
        free(k->data);
        free(k);
        return zmpi_raise(comm, rc);
    }
    rc = deliver_kept(k, buf, count, datatype, comm, &st);
    zmpi_p2p_op_done(op, &st, rc); /* complete at once; its error comes at completion */
    zmpi_p2p_register(op);
    *request = op->greq;
    return MPI_SUCCESS;
}

int ZMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count)
{
    return PMPI_Get_count(status, datatype, count);
}
