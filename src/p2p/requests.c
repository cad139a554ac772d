/*
 * zmpi's requests and their completion: ZMPI_Wait, Waitall, Waitany,
 * Waitsome, Test, Testall, Testany, Testsome, Request_get_status,
 * Request_free, Cancel.
 *
 * A ZMPI_Isend / ZMPI_Irecv of float or double data hands the user a
 * generalized request (MPI_Grequest_start) that zmpi completes once the
 * underlying PMPI request is over and, for a receive, the message is
 * decoded. The handle stays allocated until a completion call frees it, so
 * MPI cannot give its value to another request meanwhile: the registry that
 * maps handles to pending operations can never match a stale entry. Other
 * requests (plain MPI ones, zmpi calls that ran as plain MPI) are MPI's own
 * and pass through.
 *
 * Which calls complete a zmpi request:
 *   - the ZMPI_ completion calls above, with any mix of zmpi and plain
 *     requests (they drive the underlying transfers);
 *   - under MPICH also MPI's own calls (MPI_Wait, MPI_Test, MPI_Waitall,
 *     ...): the request is an extended generalized request whose poll and
 *     wait functions drive the transfer;
 *   - under other MPI libraries MPI's own calls never complete it (MPI_Test
 *     keeps returning false, MPI_Wait blocks): use the ZMPI_ calls.
 *
 * A request freed with ZMPI_Request_free is completed by later zmpi
 * point-to-point calls (and its buffers released in MPI_Finalize at the
 * latest). The registry lives in the process context (core/proc.c); a
 * mutex protects it for MPI_THREAD_MULTIPLE programs.
 */
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p.h"

#if defined(MPICH) && defined(MPICH_NUMVERSION)
#define ZMPI_HAVE_GREQX 1 /* MPIX_Grequest_start: MPI's own calls can complete our requests */
#endif

/* ---- the registry ---- */

static void ops_free_all(void *head)
{
    for (zmpi_p2p_op *op = head, *next; op; op = next) {
        next = op->next;
        free(op->stream); /* never completed by the program */
        zmpi_p2p_rplan_free(&op->plan);
        free(op);
    }
}

static void unlink_op(zmpi_proc *p, zmpi_p2p_op *op)
{
    pthread_mutex_lock(&p->mu);
    for (zmpi_p2p_op **pp = (zmpi_p2p_op **)&p->ops; *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            break;
        }
    if (op->detached)
        atomic_fetch_sub(&p->ndetached, 1);
    pthread_mutex_unlock(&p->mu);
}

void zmpi_p2p_register(zmpi_p2p_op *op)
{
    zmpi_proc *p = op->proc;
    pthread_mutex_lock(&p->mu);
    op->next = p->ops;
    p->ops = op;
    p->ops_free = ops_free_all;
    pthread_mutex_unlock(&p->mu);
}

/* The operations of reqs[0..n) (NULL for requests that are not zmpi's). */
static void lookup(int n, const MPI_Request *reqs, zmpi_p2p_op **ops)
{
    zmpi_proc *p = zmpi_proc_get();
    for (int i = 0; i < n; i++)
        ops[i] = NULL;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < n && p->ops; i++) {
        if (reqs[i] == MPI_REQUEST_NULL)
            continue;
        for (zmpi_p2p_op *op = p->ops; op; op = op->next)
            if (!op->detached && op->greq == reqs[i]) {
                ops[i] = op;
                break;
            }
    }
    pthread_mutex_unlock(&p->mu);
}

zmpi_p2p_op *zmpi_p2p_lookup(MPI_Request h)
{
    zmpi_p2p_op *op;
    lookup(1, &h, &op);
    return op;
}

/* ---- the generalized request's callbacks ---- */

static int query_fn(void *extra, MPI_Status *status)
{
    zmpi_p2p_op *op = extra;
    /* a zmpi completion call reports the error itself (Open MPI raises the
     * status's MPI_ERROR on MPI_COMM_WORLD when it is set); MPI's own calls
     * (MPICH) get it from here */
    int err = op->collecting ? MPI_SUCCESS : op->err;
    *status = op->status;
    status->MPI_ERROR = err;
    return err;
}

static int free_fn(void *extra)
{
    zmpi_p2p_op *op = extra;
    if (op->proc) /* no MPI call here: MPICH runs this inside its own */
        unlink_op(op->proc, op);
    free(op->stream);
    zmpi_p2p_rplan_free(&op->plan);
    free(op);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    zmpi_p2p_op *op = extra;
    if (!complete && op->req != MPI_REQUEST_NULL)
        return PMPI_Cancel(&op->req);
    return MPI_SUCCESS;
}

/* 1 while op's transfer is under way: a started persistent operation or
 * any other, not finished. */
static int in_flight(const zmpi_p2p_op *op)
{
    return !op->finished && (!op->persistent || op->active);
}

/* One underlying request of op is over with status *s: the first (req) -
 * a receive is decoded, its status kept - or a pair's send (req2). op is
 * finished once neither is pending. */
static void op_over(zmpi_p2p_op *op, int second, const MPI_Status *s)
{
    if (second) {
        op->req2 = MPI_REQUEST_NULL;
    } else {
        int cancelled = 0;
        MPI_Status st = *s;
        op->req = MPI_REQUEST_NULL;
        PMPI_Test_cancelled(&st, &cancelled);
        if (op->is_recv && op->decode && !cancelled) {
            zmpi_p2p_rplan *pl = &op->plan;
            op->err = zmpi_p2p_rplan_deliver(pl, pl->rbuf, zmpi_p2p_status_bytes(&st), op->buf, op->count, op->type,
                                             op->comm, &st, op->posted);
        }
        op->status = st;
    }
    if (op->req == MPI_REQUEST_NULL && op->req2 == MPI_REQUEST_NULL)
        zmpi_p2p_op_done(op, &op->status, op->err);
}

void zmpi_p2p_op_done(zmpi_p2p_op *op, const MPI_Status *st, int err)
{
    if (st != &op->status)
        op->status = *st;
    op->err = err;
    op->finished = 1;
    free(op->stream); /* a send's stream is no longer needed */
    op->stream = NULL;
    if (op->persistent)
        return; /* its plan serves every start; its handle is MPI's inactive request */
    zmpi_p2p_rplan_free(&op->plan); /* nor a receive's staging buffer */
    PMPI_Grequest_complete(op->greq);
}

/* Drives op's transfer without blocking (block: until it is over). */
static int op_progress(zmpi_p2p_op *op, int block)
{
    if (!in_flight(op))
        return MPI_SUCCESS;
    for (int k = 0; k < 2 && !op->finished; k++) {
        MPI_Request *r = k ? &op->req2 : &op->req;
        MPI_Status s;
        int flag = 1, rc;
        if (*r == MPI_REQUEST_NULL)
            continue;
        memset(&s, 0, sizeof s);
        rc = block ? PMPI_Wait(r, &s) : PMPI_Test(r, &flag, &s);
        if (rc)
            return rc;
        if (flag)
            op_over(op, k, &s);
    }
    return MPI_SUCCESS;
}

#ifdef ZMPI_HAVE_GREQX
static int poll_fn(void *extra, MPI_Status *status)
{
    (void)status;
    return op_progress(extra, 0);
}

static int wait_fn(int count, void **states, double timeout, MPI_Status *status)
{
    (void)timeout;
    (void)status;
    for (int i = 0; i < count; i++) {
        int rc = op_progress(states[i], 1);
        if (rc)
            return rc;
    }
    return MPI_SUCCESS;
}
#endif

/* A new operation on comm with its user handle: a generalized request, or
 * for a persistent one a persistent request that is never started, on
 * zmpi's private communicator (MPI takes it for an inactive request). */
static int op_new(MPI_Comm comm, int is_recv, int persistent, zmpi_p2p_op **out)
{
    int rc;
    *out = NULL;
    zmpi_proc *p = zmpi_proc_get();
    if (!p)
        return MPI_ERR_INTERN;
    zmpi_p2p_op *op = calloc(1, sizeof *op);
    if (!op)
        return MPI_ERR_NO_MEM;
    op->proc = p;
    op->req = op->req2 = MPI_REQUEST_NULL;
    op->comm = comm;
    op->posted = atomic_fetch_add(&p->next_posted, 1);
    op->is_recv = op->decode = is_recv;
    op->persistent = persistent;
    op->type = op->stype = op->own_type = MPI_DATATYPE_NULL;
    if (persistent)
        rc = PMPI_Recv_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, p->self, &op->greq);
    else
#ifdef ZMPI_HAVE_GREQX
        rc = PMPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, op, &op->greq);
#else
        rc = PMPI_Grequest_start(query_fn, free_fn, cancel_fn, op, &op->greq);
#endif
    if (rc) {
        free(op);
        return rc;
    }
    *out = op;
    return MPI_SUCCESS;
}

int zmpi_p2p_op_new(MPI_Comm comm, int is_recv, zmpi_p2p_op **out)
{
    return op_new(comm, is_recv, 0, out);
}

int zmpi_p2p_op_new_persistent(MPI_Comm comm, int is_recv, zmpi_p2p_op **out)
{
    return op_new(comm, is_recv, 1, out);
}

/* Frees a persistent operation: its handle, buffers, datatype and itself. */
static void op_release(zmpi_p2p_op *op)
{
    if (op->proc)
        unlink_op(op->proc, op);
    PMPI_Request_free(&op->greq);
    if (op->own_type != MPI_DATATYPE_NULL)
        PMPI_Type_free(&op->own_type);
    free(op->stream);
    zmpi_p2p_rplan_free(&op->plan);
    free(op);
}

void zmpi_p2p_op_discard(zmpi_p2p_op *op)
{
    /* never registered; its underlying request never started */
    MPI_Status s;
    if (op->persistent) {
        op->proc = NULL; /* not in the registry */
        op_release(op);
        return;
    }
    memset(&s, 0, sizeof s);
    op->collecting = 1;
    if (!op->finished)
        zmpi_p2p_op_done(op, &s, MPI_SUCCESS);
    MPI_Request r = op->greq; /* not &op->greq: op is freed inside */
    PMPI_Wait(&r, MPI_STATUS_IGNORE); /* frees it (free_fn) */
}

/* Frees op's generalized request (*r is the handle; set to
 * MPI_REQUEST_NULL) after its transfer is over. Returns op's error, not
 * raised; *st (unless MPI_STATUS_IGNORE) gets its status; *comm and *quiet
 * say where to raise it. */
static int collect(MPI_Request *r, zmpi_p2p_op *op, MPI_Status *st, MPI_Comm *comm, int *quiet)
{
    int err = op->err;
    if (st != MPI_STATUS_IGNORE) {
        *st = op->status;
        st->MPI_ERROR = err;
    }
    *comm = op->comm;
    *quiet = op->quiet;
    op->collecting = 1;
    PMPI_Wait(r, MPI_STATUS_IGNORE); /* complete already: frees it and op (free_fn) */
    *r = MPI_REQUEST_NULL;
    return err;
}

void zmpi_p2p_reap(void)
{
    zmpi_proc *p = zmpi_proc_get();
    if (!p || !atomic_load(&p->ndetached))
        return;
    /* claim some under the mutex, progress them without it: MPI calls are
     * never made while holding the mutex (MPICH runs free_fn, which takes
     * it, inside its own lock) */
    zmpi_p2p_op *claim[16];
    int n = 0;
    pthread_mutex_lock(&p->mu);
    for (zmpi_p2p_op *op = p->ops; op && n < 16; op = op->next)
        if (op->detached && !op->claimed) {
            op->claimed = 1;
            claim[n++] = op;
        }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < n; i++) {
        zmpi_p2p_op *op = claim[i];
        op_progress(op, 0);
        if (op->persistent && !in_flight(op)) {
            op_release(op); /* freed by the program: nothing to report */
        } else if (op->finished) {
            MPI_Request r = op->greq;
            MPI_Comm comm;
            int quiet;
            collect(&r, op, MPI_STATUS_IGNORE, &comm, &quiet); /* a freed request's errors have no one to go to */
        } else {
            pthread_mutex_lock(&p->mu);
            op->claimed = 0;
            pthread_mutex_unlock(&p->mu);
        }
    }
}

/* ---- the completion calls ----
 *
 * Each maps the user's array to the requests MPI should wait on (a zmpi
 * operation's underlying request, MPI_REQUEST_NULL once it is over; a plain
 * request itself), calls the PMPI function of the same name on that array,
 * finishes the zmpi operations whose transfers completed and frees their
 * generalized requests. */

typedef struct family {
    int n;
    zmpi_p2p_op **ops;
    MPI_Request *under;
    MPI_Status *sts;
    zmpi_p2p_op *ops_s[8];
    MPI_Request under_s[8];
    MPI_Status sts_s[8];
} family;

/* Marks ops[0..n) (NULL entries skipped) as held by this thread's
 * completion call, or releases them. */
static void mark_busy(zmpi_p2p_op **ops, int n, int on)
{
    zmpi_proc *p = zmpi_proc_get();
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < n; i++)
        if (ops[i]) {
            ops[i]->busy = on;
            ops[i]->busy_by = pthread_self();
        }
    pthread_mutex_unlock(&p->mu);
}

/* The underlying request MPI should wait on for op: the first of its
 * pending ones, MPI_REQUEST_NULL when none is (finished, or an inactive
 * persistent operation: MPI's calls treat it as complete at once with an
 * empty status, as they treat an inactive persistent request). */
static MPI_Request pending(const zmpi_p2p_op *op)
{
    if (!in_flight(op))
        return MPI_REQUEST_NULL;
    return op->req != MPI_REQUEST_NULL ? op->req : op->req2;
}

static int family_begin(family *f, int n, const MPI_Request *reqs, int *nops)
{
    f->n = n;
    f->ops = f->ops_s;
    f->under = f->under_s;
    f->sts = f->sts_s;
    *nops = 0;
    if (n > 8) {
        f->ops = malloc((size_t)n * sizeof *f->ops);
        f->under = malloc((size_t)n * sizeof *f->under);
        f->sts = malloc((size_t)n * sizeof *f->sts);
        if (!f->ops || !f->under || !f->sts)
            return MPI_ERR_NO_MEM;
    }
    lookup(n, reqs, f->ops);
    mark_busy(f->ops, n, 1);
    for (int i = 0; i < n; i++) {
        f->under[i] = f->ops[i] ? pending(f->ops[i]) : reqs[i];
        *nops += f->ops[i] != NULL;
        memset(&f->sts[i], 0, sizeof f->sts[i]);
    }
    return MPI_SUCCESS;
}

static void family_end(family *f)
{
    mark_busy(f->ops, f->n, 0); /* those still alive (collected ones are NULL) */
    if (f->ops != f->ops_s)
        free(f->ops);
    if (f->under != f->under_s)
        free(f->under);
    if (f->sts != f->sts_s)
        free(f->sts);
}

/* After a PMPI completion call on f->under: element i's underlying request
 * is over if its handle became MPI_REQUEST_NULL. Settles it in zmpi
 * operation i (which finishes the operation, unless it is a pair whose
 * send is still pending: f->under[i] is then that send). */
static void settle_op(family *f, int i)
{
    zmpi_p2p_op *op = f->ops[i];
    if (!in_flight(op) || f->under[i] != MPI_REQUEST_NULL)
        return;
    op_over(op, op->req == MPI_REQUEST_NULL, &f->sts[i]); /* req already over: it was the pair's send */
    f->under[i] = pending(op);
}

/* 1 if element i is complete for the user: a plain request MPI completed
 * (or none), a zmpi operation finished or inactive. */
static int complete(const family *f, int i)
{
    return f->ops[i] ? !in_flight(f->ops[i]) : f->under[i] == MPI_REQUEST_NULL;
}

/* settle_op for the elements idx[0..n) (all when idx is NULL), in the order
 * the operations were posted: the messages of an inter-step channel are
 * decoded in the order MPI matched them. */
static void settle_in_order(family *f, const int *idx, int n)
{
    for (;;) {
        int best = -1;
        for (int k = 0; k < n; k++) {
            int i = idx ? idx[k] : k;
            zmpi_p2p_op *op = f->ops[i];
            if (op && in_flight(op) && f->under[i] == MPI_REQUEST_NULL &&
                (best < 0 || op->posted < f->ops[best]->posted))
                best = i;
        }
        if (best < 0)
            return;
        settle_op(f, best);
    }
}

void zmpi_p2p_settle_before(MPI_Comm comm, int source, int tag, uint64_t posted)
{
    zmpi_proc *p = zmpi_proc_get();
    pthread_t self = pthread_self();
    while (p) {
        zmpi_p2p_op *best = NULL;
        pthread_mutex_lock(&p->mu);
        for (zmpi_p2p_op *op = p->ops; op; op = op->next)
            if (op->is_recv && !op->finished && op->req != MPI_REQUEST_NULL && op->comm == comm &&
                op->posted < posted && !op->claimed && !op->collecting &&
                (!op->busy || pthread_equal(op->busy_by, self)) &&
                (op->source == MPI_ANY_SOURCE || op->source == source) && (op->tag == MPI_ANY_TAG || op->tag == tag) &&
                (!best || op->posted < best->posted))
                best = op;
        int was_busy = best ? best->busy : 0;
        if (best) {
            best->busy = 1;
            best->busy_by = self;
        }
        pthread_mutex_unlock(&p->mu);
        if (!best)
            return;
        op_progress(best, 1);
        pthread_mutex_lock(&p->mu);
        best->busy = was_busy;
        pthread_mutex_unlock(&p->mu);
        if (!best->finished)
            return; /* MPI failed it: its own completion reports that */
    }
}

/* Completes element i for the user: a zmpi operation is collected (error
 * into *err, status into st), a plain request's handle and status copied. */
static void deliver(family *f, MPI_Request *reqs, int i, MPI_Status *st, int *err, MPI_Comm *comm, int *quiet)
{
    zmpi_p2p_op *op = f->ops[i];
    if (op && op->persistent) { /* the handle stays: the operation becomes inactive */
        *err = op->active ? op->err : MPI_SUCCESS;
        if (st != MPI_STATUS_IGNORE) {
            *st = op->active ? op->status : f->sts[i]; /* inactive: MPI's empty status */
            st->MPI_ERROR = *err;
        }
        *comm = op->comm;
        *quiet = op->quiet;
        op->active = 0;
    } else if (op) {
        *err = collect(&reqs[i], op, st, comm, quiet);
        f->ops[i] = NULL; /* freed */
    } else {
        reqs[i] = f->under[i];
        if (st != MPI_STATUS_IGNORE)
            *st = f->sts[i];
        *err = MPI_SUCCESS;
    }
}

static int raise_first(int nerr, MPI_Comm comm, int quiet, int rc, int *raised)
{
    if (nerr && !quiet) {
        zmpi_raise(comm, rc);
        *raised = 1;
    }
    return rc;
}

/* After a successful PMPI completion of every element of f.under: finishes
 * and delivers them all. Returns MPI_SUCCESS or MPI_ERR_IN_STATUS (the
 * first failure raised unless quiet; *raised says so). */
static int deliver_all(family *f, MPI_Request *requests, MPI_Status *statuses, int *raised)
{
    int nerr = 0, first = MPI_SUCCESS, quiet = 1;
    MPI_Comm comm = MPI_COMM_NULL;
    settle_in_order(f, NULL, f->n);
    for (int i = 0; i < f->n; i++) /* a pair's send, still pending after its receive */
        if (f->ops[i] && in_flight(f->ops[i]) && op_progress(f->ops[i], 1) != MPI_SUCCESS)
            f->ops[i]->err = MPI_ERR_OTHER;
    for (int i = 0; i < f->n; i++) {
        int err, q = 1;
        MPI_Comm c = MPI_COMM_NULL;
        MPI_Status *st = statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
        deliver(f, requests, i, st, &err, &c, &q);
        if (st != MPI_STATUS_IGNORE)
            st->MPI_ERROR = err;
        if (err && !nerr++) {
            first = err;
            comm = c;
            quiet = q;
        }
    }
    if (!nerr)
        return MPI_SUCCESS;
    /* as MPI_Waitall: MPI_ERR_IN_STATUS; the first failure is raised with its
     * own message, so that a fatal handler says why */
    raise_first(nerr, comm, quiet, first, raised);
    return MPI_ERR_IN_STATUS;
}

int zmpi_p2p_waitall(int count, MPI_Request *requests, MPI_Status *statuses, int *raised)
{
    family f;
    int nops, rc;
    *raised = 0;
    if (count < 0 || (count > 0 && !requests))
        return count < 0 ? MPI_ERR_COUNT : zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Waitall: requests is NULL");
    rc = family_begin(&f, count, requests, &nops);
    if (rc || !nops) {
        family_end(&f);
        *raised = rc == MPI_SUCCESS;
        return rc ? rc : PMPI_Waitall(count, requests, statuses);
    }
    rc = PMPI_Waitall(count, f.under, f.sts);
    if (rc) { /* an MPI error (raised by MPI): finish what is over, keep the rest */
        *raised = 1;
        settle_in_order(&f, NULL, count);
        for (int i = 0; i < count; i++) {
            if (!f.ops[i])
                requests[i] = f.under[i];
            if (statuses != MPI_STATUSES_IGNORE)
                statuses[i] = f.sts[i];
        }
    } else {
        rc = deliver_all(&f, requests, statuses, raised);
    }
    family_end(&f);
    return rc;
}

int ZMPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    int raised;
    zmpi_p2p_reap();
    int rc = zmpi_p2p_waitall(count, requests, statuses, &raised);
    return raised ? rc : zmpi_raise(MPI_COMM_WORLD, rc);
}

int ZMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    MPI_Status st;
    int raised, rc;
    zmpi_p2p_reap();
    if (!request)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Wait: request is NULL"));
    rc = zmpi_p2p_waitall(1, request, &st, &raised);
    if (status != MPI_STATUS_IGNORE)
        *status = st;
    if (rc == MPI_ERR_IN_STATUS)
        rc = st.MPI_ERROR; /* Wait reports the error itself */
    return raised ? rc : zmpi_raise(MPI_COMM_WORLD, rc);
}

/* Any / some: zmpi operations already finished count as complete at once
 * (persistent ones while active: an inactive one is ignored, as MPI does). */
static int first_finished(family *f, int from)
{
    for (int i = from; i < f->n; i++)
        if (f->ops[i] && f->ops[i]->finished && (!f->ops[i]->persistent || f->ops[i]->active))
            return i;
    return -1;
}

static int any_impl(int count, MPI_Request *requests, int *index, int *flag, MPI_Status *status, int block)
{
    family f;
    int nops, rc, i, err = MPI_SUCCESS, quiet = 1, raised = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    zmpi_p2p_reap();
    if (count < 0 || !index || (count > 0 && !requests) || (!block && !flag))
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "Waitany/Testany: invalid arguments"));
    rc = family_begin(&f, count, requests, &nops);
    if (rc || !nops) {
        family_end(&f);
        if (rc)
            return zmpi_raise(MPI_COMM_WORLD, rc);
        return block ? PMPI_Waitany(count, requests, index, status)
                     : PMPI_Testany(count, requests, index, flag, status);
    }
    i = first_finished(&f, 0);
    if (i < 0) {
        int fl = 1;
        for (;;) {
            rc = block ? PMPI_Waitany(count, f.under, &i, &f.sts[0])
                       : PMPI_Testany(count, f.under, &i, &fl, &f.sts[0]);
            if (rc) {
                family_end(&f);
                return rc; /* raised by MPI */
            }
            if (i == MPI_UNDEFINED || !fl)
                break;
            f.sts[i] = f.sts[0];
            if (f.ops[i])
                settle_op(&f, i);
            if (complete(&f, i))
                break;
            if (!block) { /* half of a pair: nothing complete yet */
                fl = 0;
                i = MPI_UNDEFINED;
                break;
            }
        }
        if (!block)
            *flag = fl;
        if (i == MPI_UNDEFINED && fl && status != MPI_STATUS_IGNORE)
            *status = f.sts[0]; /* nothing active: MPI's empty status */
    } else if (!block) {
        *flag = 1;
    }
    *index = i;
    if (i != MPI_UNDEFINED)
        deliver(&f, requests, i, status, &err, &comm, &quiet);
    family_end(&f);
    raise_first(err != MPI_SUCCESS, comm, quiet, err, &raised);
    return err;
}

int ZMPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    return any_impl(count, requests, index, NULL, status, 1);
}

int ZMPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status)
{
    return any_impl(count, requests, index, flag, status, 0);
}

int ZMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    int index;
    if (!request || !flag)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "ZMPI_Test: NULL argument"));
    return any_impl(1, request, &index, flag, status, 0);
}

static int some_impl(int incount, MPI_Request *requests, int *outcount, int *indices, MPI_Status *statuses,
                     int block)
{
    family f;
    int nops, rc, n = 0, nerr = 0, first = MPI_SUCCESS, quiet = 1, raised = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    zmpi_p2p_reap();
    if (incount < 0 || !outcount || (incount > 0 && (!requests || !indices)))
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "Waitsome/Testsome: invalid arguments"));
    rc = family_begin(&f, incount, requests, &nops);
    if (rc || !nops) {
        family_end(&f);
        if (rc)
            return zmpi_raise(MPI_COMM_WORLD, rc);
        return block ? PMPI_Waitsome(incount, requests, outcount, indices, statuses)
                     : PMPI_Testsome(incount, requests, outcount, indices, statuses);
    }
    for (int i = first_finished(&f, 0); i >= 0; i = first_finished(&f, i + 1))
        indices[n++] = i;
    if (n == 0) {
        int out = 0;
        int *idx = indices;
        MPI_Status *tmp = malloc((size_t)incount * sizeof *tmp);
        if (!tmp) {
            family_end(&f);
            return zmpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
        }
        for (;;) {
            rc = block ? PMPI_Waitsome(incount, f.under, &out, idx, tmp)
                       : PMPI_Testsome(incount, f.under, &out, idx, tmp);
            if (rc != MPI_SUCCESS || out == MPI_UNDEFINED) {
                n = MPI_UNDEFINED;
                break;
            }
            for (int k = 0; k < out; k++)
                f.sts[idx[k]] = tmp[k];
            settle_in_order(&f, idx, out);
            n = 0; /* the complete ones (a pair whose send is pending is not) */
            for (int k = 0; k < out; k++)
                if (complete(&f, idx[k]))
                    idx[n++] = idx[k];
            if (n > 0 || !block)
                break;
        }
        free(tmp);
        if (rc) {
            family_end(&f);
            return rc; /* raised by MPI */
        }
    }
    *outcount = n;
    for (int k = 0; n != MPI_UNDEFINED && k < n; k++) {
        int err, q = 1, i = indices[k];
        MPI_Comm c = MPI_COMM_NULL;
        deliver(&f, requests, i, statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[k], &err, &c, &q);
        if (err && !nerr++) {
            first = err;
            comm = c;
            quiet = q;
        }
    }
    family_end(&f);
    if (!nerr)
        return MPI_SUCCESS;
    raise_first(nerr, comm, quiet, first, &raised);
    return MPI_ERR_IN_STATUS;
}

int ZMPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    return some_impl(incount, requests, outcount, indices, statuses, 1);
}

int ZMPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[])
{
    return some_impl(incount, requests, outcount, indices, statuses, 0);
}

int ZMPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    family f;
    int nops, rc, all = 1, raised = 0;
    zmpi_p2p_reap();
    if (count < 0 || !flag || (count > 0 && !requests))
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "ZMPI_Testall: invalid arguments"));
    rc = family_begin(&f, count, requests, &nops);
    if (rc || !nops) {
        family_end(&f);
        return rc ? zmpi_raise(MPI_COMM_WORLD, rc) : PMPI_Testall(count, requests, flag, statuses);
    }
    /* the zmpi operations progress one by one (a finished one stays pending
     * for the user until all are); only then are the plain ones tested, so
     * that nothing is completed unless everything is, as MPI_Testall */
    for (int i = 0; i < count; i++)
        if (f.ops[i]) {
            op_progress(f.ops[i], 0);
            all &= !in_flight(f.ops[i]);
            f.under[i] = pending(f.ops[i]); /* MPI_REQUEST_NULL once over */
        }
    *flag = 0;
    if (all) {
        rc = PMPI_Testall(count, f.under, flag, f.sts);
        if (rc == MPI_SUCCESS && *flag)
            rc = deliver_all(&f, requests, statuses, &raised);
        else if (rc)
            raised = 1;
    }
    family_end(&f);
    return raised ? rc : zmpi_raise(MPI_COMM_WORLD, rc);
}

int ZMPI_Request_free(MPI_Request *request)
{
    zmpi_p2p_op *op;
    zmpi_p2p_reap();
    if (!request)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Request_free: request is NULL"));
    lookup(1, request, &op);
    if (!op)
        return PMPI_Request_free(request);
    *request = MPI_REQUEST_NULL;
    if (op->persistent && !in_flight(op)) { /* inactive (or over): freed now */
        op_release(op);
        return MPI_SUCCESS;
    }
    zmpi_proc *p = zmpi_proc_get();
    pthread_mutex_lock(&p->mu);
    op->detached = 1; /* later zmpi calls complete it */
    op->quiet = 1;
    atomic_fetch_add(&p->ndetached, 1);
    pthread_mutex_unlock(&p->mu);
    zmpi_p2p_reap();
    return MPI_SUCCESS;
}

/* MPI_Request_get_status: drives a zmpi operation's transfer (a receive is
 * decoded once its message is in) without completing the request; an
 * inactive persistent one reports flag 1 and an empty status, as MPI does. */
int ZMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    zmpi_p2p_op *op;
    zmpi_p2p_reap();
    if (!flag)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "ZMPI_Request_get_status: flag is NULL"));
    lookup(1, &request, &op);
    if (!op)
        return PMPI_Request_get_status(request, flag, status);
    if (op->persistent && !op->active)
        return PMPI_Request_get_status(MPI_REQUEST_NULL, flag, status); /* the empty status */
    mark_busy(&op, 1, 1);
    int rc = op_progress(op, 0);
    mark_busy(&op, 1, 0);
    if (rc)
        return rc; /* raised by MPI */
    *flag = op->finished;
    if (op->finished && status != MPI_STATUS_IGNORE) {
        *status = op->status;
        status->MPI_ERROR = op->err;
    }
    return MPI_SUCCESS;
}

int ZMPI_Cancel(MPI_Request *request)
{
    zmpi_p2p_op *op;
    if (!request)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_REQUEST, "ZMPI_Cancel: request is NULL"));
    lookup(1, request, &op);
    if (!op)
        return PMPI_Cancel(request);
    return op->finished || op->req == MPI_REQUEST_NULL ? MPI_SUCCESS : PMPI_Cancel(&op->req);
}
