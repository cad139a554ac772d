/*
 * The process context of the MPI layer and zmpi's MPI error codes.
 *
 * Process-wide state (the registry of pending point-to-point operations,
 * zmpi's error classes) lives in one attribute of MPI_COMM_SELF, so that MPI
 * frees it in MPI_Finalize. The attribute key is written once under
 * pthread_once; nothing else is static.
 *
 * Errors. zmpi reports what it detects itself (a malformed setting, ranks
 * whose settings disagree, a truncated or foreign message, ...) as MPI error
 * codes of its own error classes (MPI_Add_error_class), each with a message
 * that says precisely what went wrong (MPI_Error_string), and raises them
 * through the communicator's error handler as MPI does: with the default
 * MPI_ERRORS_ARE_FATAL the job stops with that message; with
 * MPI_ERRORS_RETURN the code is returned. Each class has a ring of codes
 * whose strings are rewritten in turn (MPI_Add_error_string may overwrite),
 * so the latest messages of a class stay exact without creating a code per
 * message. ZMPI_Error_class maps a code to the standard MPI class nearest
 * to its meaning.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static pthread_once_t proc_once = PTHREAD_ONCE_INIT;
static int proc_key = MPI_KEYVAL_INVALID; /* written once under proc_once */

static const struct {
    const char *text;
    int std_class;
} kinds[ZMPI_EK_COUNT] = {
    [ZMPI_EK_CONFIG] = {"zmpi: invalid setting", MPI_ERR_ARG},
    [ZMPI_EK_MISMATCH] = {"zmpi: the ranks of the communicator have different settings", MPI_ERR_OTHER},
    [ZMPI_EK_TRUNCATE] = {"zmpi: message truncated", MPI_ERR_TRUNCATE},
    [ZMPI_EK_TYPE] = {"zmpi: datatype does not match the message", MPI_ERR_TYPE},
    [ZMPI_EK_STREAM] = {"zmpi: corrupt or unreadable compressed message", MPI_ERR_OTHER},
    [ZMPI_EK_REQUEST] = {"zmpi: invalid request or message handle", MPI_ERR_REQUEST},
    [ZMPI_EK_ARG] = {"zmpi: invalid argument", MPI_ERR_ARG},
};

static int proc_delete(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm;
    (void)key;
    (void)extra;
    zmpi_proc *p = val;
    if (p->ops_free && p->ops)
        p->ops_free(p->ops); /* operations the program never completed */
    if (p->bytes4 != MPI_DATATYPE_NULL)
        PMPI_Type_free(&p->bytes4);
    if (p->bytes8 != MPI_DATATYPE_NULL)
        PMPI_Type_free(&p->bytes8);
    while (p->handed) { /* ZMPI_Mprobe'd, never received: consume the placeholders */
        zmpi_kept *k = p->handed;
        p->handed = k->next;
        PMPI_Mrecv(NULL, 0, MPI_BYTE, &k->handle, MPI_STATUS_IGNORE);
        PMPI_Wait(&k->ph_send, MPI_STATUS_IGNORE);
        free(k->data);
        free(k);
    }
    if (p->self != MPI_COMM_NULL)
        PMPI_Comm_free(&p->self);
    zmpi_dtinfo_keyval_free(&p->dtype_key);
    free(atomic_load(&p->world_key));
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->err_mu);
    free(p);
    return MPI_SUCCESS;
}

static void make_errors(zmpi_proc *p)
{
    char got[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;
    for (int k = 0; k < ZMPI_EK_COUNT; k++) {
        if (PMPI_Add_error_class(&p->err_class[k]) != MPI_SUCCESS ||
            PMPI_Add_error_string(p->err_class[k], (char *)kinds[k].text) != MPI_SUCCESS)
            return;
        for (int i = 0; i < ZMPI_ERR_RING; i++)
            if (PMPI_Add_error_code(p->err_class[k], &p->err_code[k][i]) != MPI_SUCCESS ||
                PMPI_Add_error_string(p->err_code[k][i], (char *)kinds[k].text) != MPI_SUCCESS)
                return;
        /* an MPI that accepts the calls without doing them (SimGrid's SMPI)
         * gets the standard classes (checked on a code: Open MPI 4.1 gives a
         * wrong class for a user class itself) */
        if (PMPI_Error_string(p->err_code[k][0], got, &len) != MPI_SUCCESS || strcmp(got, kinds[k].text) ||
            PMPI_Error_class(p->err_code[k][0], &cls) != MPI_SUCCESS || cls != p->err_class[k])
            return;
    }
    p->err_ok = 1;
}

static void proc_create(void)
{
    int key = MPI_KEYVAL_INVALID;
    zmpi_proc *p = calloc(1, sizeof *p);
    if (!p)
        return;
    if (pthread_mutex_init(&p->mu, NULL)) {
        free(p);
        return;
    }
    if (pthread_mutex_init(&p->err_mu, NULL)) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return;
    }
    p->bytes4 = p->bytes8 = MPI_DATATYPE_NULL;
    p->self = MPI_COMM_NULL;
    p->dtype_key = MPI_KEYVAL_INVALID;
    if (PMPI_Type_contiguous(4, MPI_BYTE, &p->bytes4) != MPI_SUCCESS || PMPI_Type_commit(&p->bytes4) != MPI_SUCCESS ||
        PMPI_Type_contiguous(8, MPI_BYTE, &p->bytes8) != MPI_SUCCESS || PMPI_Type_commit(&p->bytes8) != MPI_SUCCESS ||
        PMPI_Comm_dup(MPI_COMM_SELF, &p->self) != MPI_SUCCESS) {
        pthread_mutex_destroy(&p->mu);
        pthread_mutex_destroy(&p->err_mu);
        free(p);
        return;
    }
    PMPI_Comm_set_errhandler(p->self, MPI_ERRORS_RETURN);
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, proc_delete, &key, NULL) != MPI_SUCCESS) {
        pthread_mutex_destroy(&p->mu);
        pthread_mutex_destroy(&p->err_mu);
        free(p);
        return;
    }
    if (PMPI_Comm_set_attr(MPI_COMM_SELF, key, p) != MPI_SUCCESS) {
        pthread_mutex_destroy(&p->mu);
        pthread_mutex_destroy(&p->err_mu);
        free(p);
        PMPI_Comm_free_keyval(&key);
        return;
    }
    if (zmpi_dtinfo_keyval(&p->dtype_key) != MPI_SUCCESS)
        p->dtype_key = MPI_KEYVAL_INVALID; /* derived datatypes then go plain */
    proc_key = key;
}

zmpi_proc *zmpi_proc_get(void)
{
    void *val = NULL;
    int flag = 0, fin = 1;
    if (PMPI_Finalized(&fin) != MPI_SUCCESS || fin)
        return NULL;
    pthread_once(&proc_once, proc_create);
    if (proc_key == MPI_KEYVAL_INVALID)
        return NULL;
    if (PMPI_Comm_get_attr(MPI_COMM_SELF, proc_key, &val, &flag) != MPI_SUCCESS || !flag)
        return NULL;
    return val;
}

int zmpi_err(int kind, const char *fmt, ...)
{
    zmpi_proc *p = zmpi_proc_get();
    if (kind < 0 || kind >= ZMPI_EK_COUNT)
        kind = ZMPI_EK_ARG;
    if (p) { /* the classes are made at the first error */
        pthread_mutex_lock(&p->err_mu);
        if (!p->err_tried) {
            p->err_tried = 1;
            make_errors(p);
        }
        pthread_mutex_unlock(&p->err_mu);
    }
    if (!p || !p->err_ok)
        return kinds[kind].std_class; /* no classes of our own: the standard class, MPI's message */
    char msg[256]; /* Open MPI's MPI_MAX_ERROR_STRING */
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(msg, sizeof msg, "zmpi: ");
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&p->err_mu);
    int code = p->err_code[kind][p->err_next[kind]++ % ZMPI_ERR_RING];
    PMPI_Add_error_string(code, msg);
    pthread_mutex_unlock(&p->err_mu);
    return code;
}

int zmpi_raise(MPI_Comm comm, int rc)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (rc == MPI_SUCCESS || comm == MPI_COMM_NULL)
        return rc;
    if (PMPI_Comm_get_errhandler(comm, &eh) == MPI_SUCCESS && eh != MPI_ERRHANDLER_NULL) {
        if (eh == MPI_ERRORS_ARE_FATAL) {
            /* the job ends here: make sure the reason reaches the user (Open
             * MPI's launcher sometimes loses the message of a dying rank) */
            char msg[MPI_MAX_ERROR_STRING];
            int len = 0, rank = -1;
            PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
            if (PMPI_Error_string(rc, msg, &len) == MPI_SUCCESS)
                fprintf(stderr, "[rank %d] %s\n", rank, msg);
            fflush(stderr);
        }
        PMPI_Errhandler_free(&eh);
    }
    PMPI_Comm_call_errhandler(comm, rc); /* returns only if the handler does */
    return rc;
}

int ZMPI_Error_class(int errorcode, int *errorclass)
{
    if (!errorclass)
        return MPI_ERR_ARG;
    int cls = errorcode;
    int rc = PMPI_Error_class(errorcode, &cls);
    if (rc != MPI_SUCCESS)
        return rc;
    zmpi_proc *p = zmpi_proc_get();
    for (int k = 0; p && p->err_ok && k < ZMPI_EK_COUNT; k++)
        if (cls == p->err_class[k])
            cls = kinds[k].std_class;
    *errorclass = cls;
    return MPI_SUCCESS;
}
