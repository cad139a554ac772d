/* Compression on other MPI ranks: see mpi_work.h. */
#define _POSIX_C_SOURCE 200809L
#include "mpi_work.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { K_BLOCK = 1, K_RESULT = 2, K_QUIT = 3 };

static void nap(long *ns)
{
    struct timespec t = {0, *ns};
    nanosleep(&t, NULL);
    if (*ns < 1000000)
        *ns *= 2;
}

/* MPI_Waitall with statuses (MPICH's MPI_STATUSES_IGNORE upsets GCC 12's bounds checks). */
static int wait_all(int n, MPI_Request *r)
{
    MPI_Status st[3];
    return n <= 3 && MPI_Waitall(n, r, st) == MPI_SUCCESS ? 0 : -1;
}

static int wait_req(MPI_Request *r)
{
    long ns = 10000;
    for (;;) {
        int flag = 0;
        if (MPI_Test(r, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (flag)
            return 0;
        nap(&ns);
    }
}

static int send_wait(const void *p, size_t n, int to, int tag, MPI_Comm comm)
{
    MPI_Request r;
    if (n > INT32_MAX || MPI_Isend(p, (int)n, MPI_BYTE, to, tag, comm, &r) != MPI_SUCCESS)
        return -1;
    return wait_req(&r);
}

static int recv_wait(void *p, size_t n, int from, int tag, MPI_Comm comm)
{
    MPI_Request r;
    if (n > INT32_MAX || MPI_Irecv(p, (int)n, MPI_BYTE, from, tag, comm, &r) != MPI_SUCCESS)
        return -1;
    return wait_req(&r);
}

int mpibz_remote_compress(void *arg, const unsigned char *data, size_t n, int raw, int level, bz_block *out)
{
    const mpibz_remote *r = arg;
    uint32_t h[4] = {K_BLOCK, (uint32_t)level, (uint32_t)n, (uint32_t)raw};
    uint64_t nbits = 0;
    if (send_wait(h, sizeof h, r->rank, r->tag, r->comm) || send_wait(data, n, r->rank, r->tag, r->comm) ||
        recv_wait(h, sizeof h, r->rank, r->tag, r->comm) || h[0] != K_RESULT)
        return -200;
    int rc = (int)(int32_t)h[2];
    if (rc)
        return rc;
    if (recv_wait(&nbits, sizeof nbits, r->rank, r->tag, r->comm))
        return -200;
    size_t bytes = (size_t)((nbits + 7) / 8);
    if (bytes > out->cap) {
        unsigned char *nb = realloc(out->bits, bytes);
        if (!nb)
            return -100;
        out->bits = nb;
        out->cap = bytes;
    }
    if (recv_wait(out->bits, bytes, r->rank, r->tag, r->comm))
        return -200;
    out->nbits = nbits;
    out->crc = h[3];
    return 0;
}

int mpibz_remote_quit(const mpibz_remote *r)
{
    uint32_t h[4] = {K_QUIT, 0, 0, 0};
    return send_wait(h, sizeof h, r->rank, r->tag, r->comm);
}

/* ---- rank 0 below MPI_THREAD_MULTIPLE: the writing thread drives every channel ---- */

typedef struct chan {
    int rank, tag, h;       /* h: the block out there, -1 when idle */
    uint32_t out[4], hdr[4]; /* the block's header; the result's */
    MPI_Request send[2];
} chan;

struct mpibz_pump {
    MPI_Comm comm;
    int level, n;
    chan *c;
    MPI_Request *res; /* result header receive per channel (MPI_REQUEST_NULL when idle) */
};

mpibz_pump *mpibz_pump_new(MPI_Comm comm, int level, const int *counts, int size)
{
    mpibz_pump *p = calloc(1, sizeof *p);
    int n = 0;
    for (int r = 1; r < size; r++)
        n += counts[r];
    if (!p || !(p->c = calloc((size_t)n + 1, sizeof *p->c)) || !(p->res = calloc((size_t)n + 1, sizeof *p->res))) {
        mpibz_pump_free(p);
        return NULL;
    }
    p->comm = comm;
    p->level = level;
    for (int r = 1; r < size; r++)
        for (int t = 0; t < counts[r]; t++, p->n++) {
            p->c[p->n] = (chan){r, MPIBZ_TAG + t, -1, {0}, {0}, {MPI_REQUEST_NULL, MPI_REQUEST_NULL}};
            p->res[p->n] = MPI_REQUEST_NULL;
        }
    return p;
}

void mpibz_pump_free(mpibz_pump *p)
{
    if (!p)
        return;
    free(p->c);
    free(p->res);
    free(p);
}

/* The result of channel k's block has its header in c->hdr: receive the rest. */
static int collect(mpibz_pump *p, bz_job *j, chan *c)
{
    if (wait_all(2, c->send) || c->hdr[0] != K_RESULT)
        return -1;
    int rc = (int)(int32_t)c->hdr[2];
    bz_block *b = bz_out(j, c->h);
    if (rc == 0) {
        uint64_t nbits;
        if (MPI_Recv(&nbits, (int)sizeof nbits, MPI_BYTE, c->rank, c->tag, p->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        size_t bytes = (size_t)((nbits + 7) / 8);
        if (bytes > INT32_MAX)
            return -1;
        if (bytes > b->cap) {
            unsigned char *nb = realloc(b->bits, bytes);
            if (!nb) {
                rc = -100; /* the bits still have to be received: into a scratch buffer */
                unsigned char *tmp = malloc(bytes ? bytes : 1);
                int e = !tmp || MPI_Recv(tmp, (int)bytes, MPI_BYTE, c->rank, c->tag, p->comm, MPI_STATUS_IGNORE);
                free(tmp);
                if (e)
                    return -1;
                goto done;
            }
            b->bits = nb;
            b->cap = bytes;
        }
        if (MPI_Recv(b->bits, (int)bytes, MPI_BYTE, c->rank, c->tag, p->comm, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        b->nbits = nbits;
        b->crc = c->hdr[3];
    }
done:
    bz_put(j, c->h, rc);
    c->h = -1;
    return 0;
}

int mpibz_pump_run(void *arg, bz_job *j, int may_block)
{
    mpibz_pump *p = arg;
    int did = 0, busy = 0, more = 1;
    for (int k = 0; k < p->n; k++) {
        chan *c = &p->c[k];
        if (c->h < 0 && more) {
            const unsigned char *data;
            size_t n;
            int raw, h = bz_take(j, &data, &n, &raw);
            if (h < 0) {
                more = 0; /* no block for the other idle channels either (but count the busy ones) */
                continue;
            }
            c->h = h;
            c->out[0] = K_BLOCK;
            c->out[1] = (uint32_t)p->level;
            c->out[2] = (uint32_t)n;
            c->out[3] = (uint32_t)raw;
            if (MPI_Isend(c->out, (int)sizeof c->out, MPI_BYTE, c->rank, c->tag, p->comm, &c->send[0]) ||
                MPI_Isend(data, (int)n, MPI_BYTE, c->rank, c->tag, p->comm, &c->send[1]) ||
                MPI_Irecv(c->hdr, (int)sizeof c->hdr, MPI_BYTE, c->rank, c->tag, p->comm, &p->res[k]))
                return -1;
            did = 1;
        }
        busy += c->h >= 0;
    }
    if (!busy)
        return did;
    for (;;) {
        int k = MPI_UNDEFINED, flag = 0;
        if (may_block && !did) {
            if (MPI_Waitany(p->n, p->res, &k, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                return -1;
        } else if (MPI_Testany(p->n, p->res, &k, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            return -1;
        }
        if (k == MPI_UNDEFINED)
            return did;
        if (collect(p, j, &p->c[k]))
            return -1;
        did = 1;
    }
}

int mpibz_pump_quit(mpibz_pump *p)
{
    int rc = 0;
    for (int k = 0; p && k < p->n; k++) {
        mpibz_remote r = {p->comm, p->c[k].rank, p->c[k].tag};
        rc |= mpibz_remote_quit(&r);
    }
    return rc;
}

/* ---- worker ranks: the main thread makes every MPI call; compression threads only compress ---- */

typedef struct wchan {
    int tag, state; /* W_WAIT (header receive posted), W_WORK (block being compressed), W_CLOSED */
    uint32_t hdr[4], res[4];
    uint64_t nbits;
    MPI_Request send[3];
    unsigned char *data;
    size_t cap, n;
    int level, raw, rc, done;
    bz_block b;
    pthread_t th;
    int have_thread;
    struct wshared *sh;
} wchan;

typedef struct wshared {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int quit;
} wshared;

enum { W_WAIT = 0, W_WORK, W_CLOSED };

static void *wthread_main(void *arg)
{
    wchan *c = arg;
    wshared *sh = c->sh;
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        while (!sh->quit && !(c->state == W_WORK && !c->done))
            pthread_cond_wait(&sh->cv, &sh->mu);
        if (c->state != W_WORK || c->done)
            break;
        pthread_mutex_unlock(&sh->mu);
        int rc = bz_block_compress(c->data, c->n, c->raw, c->level, &c->b);
        pthread_mutex_lock(&sh->mu);
        c->rc = rc;
        c->done = 1;
    }
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

/* A header arrived on c: BLOCK brings its bytes (returns 0), QUIT closes
 * the channel (1); -1 on failure. The caller sets c->state. */
static int take_block(MPI_Comm comm, wchan *c)
{
    if (c->hdr[0] == K_QUIT)
        return wait_all(3, c->send) ? -1 : 1;
    if (c->hdr[0] != K_BLOCK || c->hdr[1] < 1 || c->hdr[1] > 9 || c->hdr[2] > bz_cutter_cap((int)c->hdr[1]) ||
        c->hdr[3] > 1)
        return -1;
    c->n = c->hdr[2];
    c->level = (int)c->hdr[1];
    c->raw = (int)c->hdr[3];
    if (c->n > c->cap) {
        unsigned char *p = realloc(c->data, c->n);
        if (!p)
            return -1;
        c->data = p;
        c->cap = c->n;
    }
    /* the previous result's sends are done before its buffers are reused */
    if (wait_all(3, c->send) ||
        MPI_Recv(c->data, (int)c->n, MPI_BYTE, 0, c->tag, comm, MPI_STATUS_IGNORE))
        return -1;
    return 0;
}

/* c's block is compressed: send the result, wait for the next header (the
 * caller sets c->state). */
static int give_result(MPI_Comm comm, wchan *c, MPI_Request *hreq)
{
    c->res[0] = K_RESULT;
    c->res[1] = 0;
    c->res[2] = (uint32_t)c->rc;
    c->res[3] = c->rc ? 0 : c->b.crc;
    c->nbits = c->b.nbits;
    if (MPI_Isend(c->res, (int)sizeof c->res, MPI_BYTE, 0, c->tag, comm, &c->send[0]))
        return -1;
    if (c->rc == 0 && (MPI_Isend(&c->nbits, (int)sizeof c->nbits, MPI_BYTE, 0, c->tag, comm, &c->send[1]) ||
                       MPI_Isend(c->b.bits, (int)((c->nbits + 7) / 8), MPI_BYTE, 0, c->tag, comm, &c->send[2])))
        return -1;
    return MPI_Irecv(c->hdr, (int)sizeof c->hdr, MPI_BYTE, 0, c->tag, comm, hreq) ? -1 : 0;
}

int mpibz_thread_counts(MPI_Comm comm, int *counts)
{
    int none = 0;
    return MPI_Gather(&none, 1, MPI_INT, counts, 1, MPI_INT, 0, comm) == MPI_SUCCESS ? 0 : 1;
}

int mpibz_worker(MPI_Comm comm, int threads, int use_threads)
{
    int nch = use_threads ? threads : 1, started = 0, rc = 0, open;
    wshared sh = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    wchan *c = calloc((size_t)nch, sizeof *c);
    MPI_Request *hreq = calloc((size_t)nch, sizeof *hreq);
    if (!c || !hreq)
        nch = 0; /* still answer rank 0 */
    for (; started < nch; started++) {
        wchan *w = &c[started];
        w->tag = MPIBZ_TAG + started;
        w->sh = &sh;
        for (int i = 0; i < 3; i++)
            w->send[i] = MPI_REQUEST_NULL;
        if (use_threads) {
            if (pthread_create(&w->th, NULL, wthread_main, w))
                break;
            w->have_thread = 1;
        }
        if (MPI_Irecv(w->hdr, (int)sizeof w->hdr, MPI_BYTE, 0, w->tag, comm, &hreq[started])) {
            rc = 1;
            break;
        }
    }
    /* rank 0 learns how many channels serve it (fewer if threads could not start) */
    if (MPI_Gather(&started, 1, MPI_INT, NULL, 0, MPI_INT, 0, comm) != MPI_SUCCESS)
        rc = 1;
    open = rc ? 0 : started;
    long ns = 10000;
    while (open > 0) {
        int did = 0, k = MPI_UNDEFINED, flag = 0;
        if (!use_threads) { /* one channel, compressed by this thread: block in MPI */
            int t = MPI_Wait(&hreq[0], MPI_STATUS_IGNORE) ? -1 : take_block(comm, &c[0]);
            if (t < 0)
                goto fail;
            if (t == 1) {
                open--;
                continue;
            }
            c[0].rc = bz_block_compress(c[0].data, c[0].n, c[0].raw, c[0].level, &c[0].b);
            if (give_result(comm, &c[0], &hreq[0]))
                goto fail;
            continue;
        }
        /* arrivals */
        while (MPI_Testany(started, hreq, &k, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && k != MPI_UNDEFINED) {
            int t = take_block(comm, &c[k]);
            if (t < 0)
                goto fail;
            pthread_mutex_lock(&sh.mu);
            c[k].state = t ? W_CLOSED : W_WORK;
            c[k].done = 0;
            pthread_cond_broadcast(&sh.cv);
            pthread_mutex_unlock(&sh.mu);
            open -= t;
            did = 1;
        }
        /* results */
        for (int i = 0; i < started; i++) {
            pthread_mutex_lock(&sh.mu);
            int ready = c[i].state == W_WORK && c[i].done;
            pthread_mutex_unlock(&sh.mu);
            if (ready) {
                if (give_result(comm, &c[i], &hreq[i]))
                    goto fail;
                pthread_mutex_lock(&sh.mu);
                c[i].state = W_WAIT;
                pthread_mutex_unlock(&sh.mu);
                did = 1;
            }
        }
        if (did) {
            ns = 10000;
        } else {
            nap(&ns);
        }
    }
    goto out;
fail:
    rc = 1;
out:
    pthread_mutex_lock(&sh.mu);
    sh.quit = 1;
    pthread_cond_broadcast(&sh.cv);
    pthread_mutex_unlock(&sh.mu);
    for (int i = 0; i < started; i++) {
        if (c[i].have_thread)
            pthread_join(c[i].th, NULL);
        if (!rc)
            wait_all(3, c[i].send);
        free(c[i].data);
        bz_block_free(&c[i].b);
    }
    free(c);
    free(hreq);
    return rc;
}
