/*
 * Pending compressed operations and their completion: ZMPI_Wait,
 * ZMPI_Waitall, ZMPI_Test.
 *
 * The MPI_Request handed to the user is the underlying PMPI request of the
 * staging buffer. A registry maps it to its pending operation (staging
 * buffer, user buffer and count, the zmpi_call with its codec contexts).
 * The registry is a context, not a global: it is an attribute of
 * MPI_COMM_SELF (keyval and registry created once, under pthread_once), so
 * MPI frees it - and any operation never completed - in MPI_Finalize. A
 * mutex protects it for MPI_THREAD_MULTIPLE programs.
 *
 * An operation leaves the registry before its request is completed (detach)
 * and only comes back if the request is still pending (Test with flag 0, an
 * error in Waitall). So the registry only holds live requests, and a handle
 * value that MPI reuses after completion can never find a stale operation.
 * Lookups compare handles with == (all MPI guarantees for handles); the
 * list is linear, which is cheap for the tens to thousands of requests that
 * programs keep in flight.
 *
 * Requests that are not in the registry (plain MPI ones, MPI_REQUEST_NULL)
 * go straight to PMPI_Wait / PMPI_Waitall / PMPI_Test.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "p2p/p2p.h"

typedef struct p2p_registry {
    pthread_mutex_t mu;
    zmpi_p2p_op *head;
} p2p_registry;

static pthread_once_t registry_once = PTHREAD_ONCE_INIT;
static int registry_key = MPI_KEYVAL_INVALID; /* written once under registry_once */

/* Runs in MPI_Finalize (or if MPI_COMM_SELF's attribute is deleted). */
static int registry_delete(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    p2p_registry *r = val;
    while (r->head) {
        zmpi_p2p_op *op = r->head;
        r->head = op->next;
        zmpi_p2p_op_free(op); /* never completed by the program */
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
    return MPI_SUCCESS;
}

static void registry_create(void)
{
    int key = MPI_KEYVAL_INVALID;
    p2p_registry *r = calloc(1, sizeof *r);
    if (!r)
        return;
    if (pthread_mutex_init(&r->mu, NULL)) {
        free(r);
        return;
    }
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, registry_delete, &key, NULL) != MPI_SUCCESS) {
        pthread_mutex_destroy(&r->mu);
        free(r);
        return;
    }
    if (PMPI_Comm_set_attr(MPI_COMM_SELF, key, r) != MPI_SUCCESS) {
        pthread_mutex_destroy(&r->mu);
        free(r);
        PMPI_Comm_free_keyval(&key);
        return;
    }
    registry_key = key;
}

/* The registry, or NULL if it could not be created (or MPI is finalized). */
static p2p_registry *registry(void)
{
    void *val = NULL;
    int flag = 0;
    pthread_once(&registry_once, registry_create);
    if (registry_key == MPI_KEYVAL_INVALID)
        return NULL;
    if (PMPI_Comm_get_attr(MPI_COMM_SELF, registry_key, &val, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    return val;
}

int zmpi_p2p_registry_ready(void)
{
    return registry() ? MPI_SUCCESS : MPI_ERR_INTERN;
}

void zmpi_p2p_register(zmpi_p2p_op *op)
{
    p2p_registry *r = registry(); /* not NULL: zmpi_p2p_registry_ready succeeded */
    pthread_mutex_lock(&r->mu);
    op->next = r->head;
    r->head = op;
    pthread_mutex_unlock(&r->mu);
}

void zmpi_p2p_reattach(zmpi_p2p_op *op)
{
    zmpi_p2p_register(op);
}

int zmpi_p2p_detach(int n, const MPI_Request *reqs, zmpi_p2p_op **ops)
{
    int found = 0;
    for (int i = 0; i < n; i++)
        ops[i] = NULL;
    p2p_registry *r = registry();
    if (!r)
        return 0;
    pthread_mutex_lock(&r->mu);
    for (int i = 0; i < n && r->head; i++) {
        if (reqs[i] == MPI_REQUEST_NULL)
            continue;
        for (zmpi_p2p_op **pp = &r->head; *pp; pp = &(*pp)->next) {
            if ((*pp)->req == reqs[i]) {
                ops[i] = *pp;
                *pp = ops[i]->next;
                ops[i]->next = NULL;
                found++;
                break;
            }
        }
    }
    pthread_mutex_unlock(&r->mu);
    return found;
}

/* After a failed completion call: an operation whose request is gone is
 * dropped, one still pending goes back to the registry. */
static void settle(zmpi_p2p_op *op, MPI_Request req)
{
    if (req == MPI_REQUEST_NULL)
        zmpi_p2p_op_free(op);
    else
        zmpi_p2p_reattach(op);
}

int ZMPI_Wait(MPI_Request *request, MPI_Status *status)
{
    zmpi_p2p_op *op = NULL;
    MPI_Status got;
    int rc = request ? MPI_SUCCESS : MPI_ERR_REQUEST;
    if (rc)
        goto fn_fail;
    zmpi_p2p_detach(1, request, &op);
    if (!op) {
        rc = PMPI_Wait(request, status);
        goto fn_exit;
    }
    memset(&got, 0, sizeof got);
    rc = PMPI_Wait(request, &got);
    if (rc)
        goto fn_fail;
    rc = zmpi_p2p_finish(op, &got, status);
fn_exit:
    return rc;
fn_fail:
    if (op) {
        if (status != MPI_STATUS_IGNORE)
            *status = got;
        settle(op, *request);
    }
    goto fn_exit;
}

int ZMPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    zmpi_p2p_op *op = NULL;
    MPI_Status got;
    int rc = request && flag ? MPI_SUCCESS : MPI_ERR_ARG;
    if (rc)
        goto fn_fail;
    zmpi_p2p_detach(1, request, &op);
    if (!op) {
        rc = PMPI_Test(request, flag, status);
        goto fn_exit;
    }
    memset(&got, 0, sizeof got);
    rc = PMPI_Test(request, flag, &got);
    if (rc)
        goto fn_fail;
    if (!*flag) {
        zmpi_p2p_reattach(op);
        goto fn_exit;
    }
    rc = zmpi_p2p_finish(op, &got, status);
fn_exit:
    return rc;
fn_fail:
    if (op) {
        if (status != MPI_STATUS_IGNORE)
            *status = got;
        settle(op, *request);
    }
    goto fn_exit;
}

static int error_class(int code)
{
    int cls = code;
    if (PMPI_Error_class(code, &cls) != MPI_SUCCESS)
        cls = code;
    return cls;
}

/*
 * Waitall: PMPI_Waitall on all underlying requests (so every transfer makes
 * progress together), then each compressed operation is finished. Errors
 * follow MPI: MPI_ERR_IN_STATUS with each status's MPI_ERROR set (when
 * statuses are not ignored) if any single operation failed.
 */
#define WAITALL_STACK 16
int ZMPI_Waitall(int count, MPI_Request *requests, MPI_Status *statuses)
{
    zmpi_p2p_op *ops_stack[WAITALL_STACK], **ops = ops_stack;
    int errs_stack[WAITALL_STACK], *errs = errs_stack;
    MPI_Status *sts = statuses, *own = NULL;
    int rc = MPI_SUCCESS, found = 0, failed = 0;
    if (count < 0 || (count > 0 && !requests)) {
        rc = count < 0 ? MPI_ERR_COUNT : MPI_ERR_REQUEST;
        goto fn_fail;
    }
    if (count > WAITALL_STACK) {
        rc = zmpi_alloc((size_t)count * sizeof *ops, &ops);
        if (rc)
            goto fn_fail;
        rc = zmpi_alloc((size_t)count * sizeof *errs, &errs);
        if (rc)
            goto fn_fail;
    }
    found = zmpi_p2p_detach(count, requests, ops);
    if (!found) {
        rc = PMPI_Waitall(count, requests, statuses);
        goto fn_exit;
    }
    if (statuses == MPI_STATUSES_IGNORE) {
        /* compressed receives need their status (byte count, source, tag) */
        rc = zmpi_alloc((size_t)count * sizeof *own, &own);
        if (rc)
            goto fn_fail;
        memset(own, 0, (size_t)count * sizeof *own);
        sts = own;
    }
    rc = PMPI_Waitall(count, requests, sts);
    int cls = rc == MPI_SUCCESS ? MPI_SUCCESS : error_class(rc);
    for (int i = 0; i < count; i++) {
        errs[i] = MPI_SUCCESS;
        if (!ops[i])
            continue;
        zmpi_p2p_op *op = ops[i];
        ops[i] = NULL;
        if (cls == MPI_SUCCESS) {
            /* completed */
        } else if (cls == MPI_ERR_IN_STATUS) {
            if (error_class(sts[i].MPI_ERROR) == MPI_ERR_PENDING) {
                zmpi_p2p_reattach(op);
                continue;
            }
            if (sts[i].MPI_ERROR != MPI_SUCCESS) {
                zmpi_p2p_op_free(op);
                continue;
            }
        } else {
            settle(op, requests[i]); /* statuses undefined: nothing to finish */
            continue;
        }
        errs[i] = zmpi_p2p_finish(op, &sts[i], &sts[i]);
        failed += errs[i] != MPI_SUCCESS;
    }
    if (failed && (cls == MPI_SUCCESS || cls == MPI_ERR_IN_STATUS)) {
        for (int i = 0; i < count; i++)
            if (cls == MPI_SUCCESS || errs[i] != MPI_SUCCESS)
                sts[i].MPI_ERROR = errs[i];
        rc = MPI_ERR_IN_STATUS;
    }
fn_exit:
    free(own);
    if (ops != ops_stack)
        free(ops);
    if (errs != errs_stack)
        free(errs);
    return rc;
fn_fail:
    /* nothing was completed: give the detached operations back */
    for (int i = 0; found && i < count; i++)
        if (ops[i])
            zmpi_p2p_reattach(ops[i]);
    goto fn_exit;
}
