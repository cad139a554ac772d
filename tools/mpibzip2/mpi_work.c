/* Compression on other MPI ranks: see mpi_work.h. */
#define _POSIX_C_SOURCE 200809L
#include "mpi_work.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { K_BLOCK = 1, K_RESULT = 2, K_QUIT = 3 };

#define BLOCK_CAP bz_cutter_cap(9) /* a block's bytes at any level */

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

/* A blocking receive (where nothing else has to go on meanwhile). */
static int recv_now(void *p, size_t n, int from, int tag, MPI_Comm comm)
{
    return n > INT32_MAX || MPI_Recv(p, (int)n, MPI_BYTE, from, tag, comm, MPI_STATUS_IGNORE) != MPI_SUCCESS ? -1 : 0;
}

/* The rest of a result whose header h came from (rank, tag), received with
 * recv: returns the worker's rc (0: b holds the bits), or -200 if the
 * channel failed (also when b cannot grow: the bits are still on their way,
 * so the channel is out of step). */
static int recv_result(const uint32_t h[4], bz_block *b, int (*recv)(void *, size_t, int, int, MPI_Comm), int rank,
                       int tag, MPI_Comm comm)
{
    uint64_t nbits;
    if (h[0] != K_RESULT)
        return -200;
    if (h[2])
        return (int)(int32_t)h[2];
    if (recv(&nbits, sizeof nbits, rank, tag, comm) || bz_block_reserve(b, (size_t)((nbits + 7) / 8)) ||
        recv(b->bits, (size_t)((nbits + 7) / 8), rank, tag, comm))
        return -200;
    b->nbits = nbits;
    b->crc = h[3];
    return 0;
}

/* A block's "where" message (--shared-input): its offset, then the path. */
static size_t where_msg(unsigned char **buf, size_t *cap, uint64_t start, const char *path)
{
    size_t n = 8 + strlen(path) + 1;
    if (n > *cap) {
        unsigned char *b = realloc(*buf, n);
        if (!b)
            return 0;
        *buf = b;
        *cap = n;
    }
    memcpy(*buf, &start, 8);
    memcpy(*buf + 8, path, n - 8);
    return n;
}

/* The header of block b and where its bytes come from (kind BLOCK; the last
 * word: 0 RLE1 bytes follow, 1 input bytes follow, 2 a "where" message). */
static void block_header(uint32_t h[4], const bz_piece *b, int level, const char *path)
{
    h[0] = K_BLOCK;
    h[1] = (uint32_t)level;
    h[2] = (uint32_t)b->n;
    h[3] = b->raw && path ? 2u : (uint32_t)b->raw;
}

int mpibz_remote_compress(void *arg, const bz_piece *b, int level, bz_block *out)
{
    mpibz_remote *r = arg;
    uint32_t h[4];
    block_header(h, b, level, r->path);
    size_t wn = h[3] == 2 ? where_msg(&r->where, &r->wcap, b->start, r->path) : 0;
    if (h[3] == 2 && !wn)
        return -100;
    if (send_wait(h, sizeof h, r->rank, r->tag, r->comm) ||
        (wn ? send_wait(r->where, wn, r->rank, r->tag, r->comm) : send_wait(b->data, b->n, r->rank, r->tag, r->comm)) ||
        recv_wait(h, sizeof h, r->rank, r->tag, r->comm))
        return -200;
    return recv_result(h, out, recv_wait, r->rank, r->tag, r->comm);
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
    unsigned char *where;    /* the block's "where" message (--shared-input) */
    size_t wcap;
} chan;

struct mpibz_pump {
    MPI_Comm comm;
    const char *path; /* --shared-input: the input file, as the workers open it */
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
    /* Thread t of every rank before thread t+1 of any: the first blocks go
       one to each rank, not all to rank 1's threads. */
    int most = 0;
    for (int r = 1; r < size; r++)
        most = counts[r] > most ? counts[r] : most;
    for (int t = 0; t < most; t++)
        for (int r = 1; r < size; r++)
            if (t < counts[r]) {
                p->c[p->n] = (chan){r, MPIBZ_TAG + t, -1, {0}, {0}, {MPI_REQUEST_NULL, MPI_REQUEST_NULL}, NULL, 0};
                p->res[p->n++] = MPI_REQUEST_NULL;
            }
    return p;
}

void mpibz_pump_free(mpibz_pump *p)
{
    if (!p)
        return;
    for (int k = 0; p->c && k < p->n; k++)
        free(p->c[k].where);
    free(p->c);
    free(p->res);
    free(p);
}

/* The result of channel c's block has its header in c->hdr: receive the rest. */
static int collect(mpibz_pump *p, bz_job *j, chan *c)
{
    if (wait_all(2, c->send))
        return -1;
    int rc = recv_result(c->hdr, bz_out(j, c->h), recv_now, c->rank, c->tag, p->comm);
    if (rc == -200)
        return -1;
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
            bz_piece b;
            int h = bz_take(j, &b);
            if (h < 0) {
                more = 0; /* no block for the other idle channels either (but count the busy ones) */
                continue;
            }
            c->h = h;
            block_header(c->out, &b, p->level, p->path);
            size_t wn = c->out[3] == 2 ? where_msg(&c->where, &c->wcap, b.start, p->path) : 0;
            if ((c->out[3] == 2 && !wn) ||
                MPI_Isend(c->out, (int)sizeof c->out, MPI_BYTE, c->rank, c->tag, p->comm, &c->send[0]) ||
                (wn ? MPI_Isend(c->where, (int)wn, MPI_BYTE, c->rank, c->tag, p->comm, &c->send[1])
                    : MPI_Isend(b.data, (int)b.n, MPI_BYTE, c->rank, c->tag, p->comm, &c->send[1])) ||
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

void mpibz_pump_input(mpibz_pump *p, const char *path)
{
    p->path = path;
}

int mpibz_pump_quit(mpibz_pump *p)
{
    int rc = 0;
    for (int k = 0; p && k < p->n; k++) {
        mpibz_remote r = {p->comm, p->c[k].rank, p->c[k].tag, NULL, NULL, 0};
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
    MPI_Request dreq;   /* the next block's bytes (or "where" message), posted with its header's receive */
    unsigned char *data; /* BLOCK_CAP bytes */
    size_t n;
    int level, raw, rc, done;
    bz_block b;
    bz_coder coder; /* its compressing thread's */
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
        int rc = bz_block_compress(&c->coder, c->data, c->n, c->raw, c->level, &c->b);
        pthread_mutex_lock(&sh->mu);
        c->rc = rc;
        c->done = 1;
    }
    pthread_mutex_unlock(&sh->mu);
    return NULL;
}

/* The input file of --shared-input blocks, kept open between blocks. */
typedef struct winput {
    int fd;
    char *path;
} winput;

/* Reads n bytes at start of path into dst. 0, or -1. */
static int read_at(winput *in, const char *path, uint64_t start, unsigned char *dst, size_t n)
{
    if (!in->path || strcmp(in->path, path)) {
        if (in->fd >= 0)
            close(in->fd);
        free(in->path);
        in->path = strdup(path);
        in->fd = in->path ? open(path, O_RDONLY) : -1;
    }
    if (in->fd < 0 || start > (uint64_t)INT64_MAX - n)
        return -1;
    for (size_t got = 0; got < n;) {
        ssize_t r = pread(in->fd, dst + got, n - got, (off_t)(start + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        got += (size_t)r;
    }
    return 0;
}

/* A header arrived on c: BLOCK has its bytes in c->data (returns 0, or 2
 * if a --shared-input block could not be read), QUIT closes the channel
 * (1); -1 on failure. The caller sets c->state. */
static int take_block(wchan *c, winput *in)
{
    if (c->hdr[0] == K_QUIT)
        return wait_all(3, c->send) ? -1 : 1;
    if (c->hdr[0] != K_BLOCK || c->hdr[1] < 1 || c->hdr[1] > 9 || c->hdr[2] > bz_cutter_cap((int)c->hdr[1]) ||
        c->hdr[3] > 2)
        return -1;
    c->n = c->hdr[2];
    c->level = (int)c->hdr[1];
    c->raw = c->hdr[3] != 0;
    unsigned char w[8 + 4097];
    MPI_Status st;
    int len = 0;
    uint64_t start;
    /* the previous result's sends are done before its buffers are reused */
    if (wait_all(3, c->send) || MPI_Wait(&c->dreq, &st) || MPI_Get_count(&st, MPI_BYTE, &len))
        return -1;
    if (c->hdr[3] != 2)
        return (size_t)len == c->n ? 0 : -1;
    /* --shared-input: the block's offset and the file's path; read it here */
    if (len < 10 || len > (int)sizeof w || c->data[len - 1] != 0)
        return -1;
    memcpy(w, c->data, (size_t)len);
    memcpy(&start, w, 8);
    return read_at(in, (const char *)w + 8, start, c->data, c->n) ? 2 : 0;
}

/* Receives for c's next block: its header, then its bytes (or "where"
 * message), into c->data, which holds a block of any level; posted before
 * the block is sent, so its bytes arrive while other work goes on. */
static int expect_block(MPI_Comm comm, wchan *c, MPI_Request *hreq)
{
    return MPI_Irecv(c->hdr, (int)sizeof c->hdr, MPI_BYTE, 0, c->tag, comm, hreq) ||
                   MPI_Irecv(c->data, (int)BLOCK_CAP, MPI_BYTE, 0, c->tag, comm, &c->dreq)
               ? -1
               : 0;
}

/* c's block is compressed: send the result, expect the next block (the
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
    return expect_block(comm, c, hreq);
}

int mpibz_thread_counts(MPI_Comm comm, int *counts)
{
    int none = 0;
    return MPI_Gather(&none, 1, MPI_INT, counts, 1, MPI_INT, 0, comm) == MPI_SUCCESS ? 0 : 1;
}

int mpibz_worker(MPI_Comm comm, int threads, int use_threads)
{
    /* without threads, two channels served in turn: one block's bytes arrive while the other compresses */
    int nch = use_threads ? threads : 2, started = 0, rc = 0, open;
    winput in = {-1, NULL};
    wshared sh = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    wchan *c = calloc((size_t)nch, sizeof *c);
    MPI_Request *hreq = calloc((size_t)nch, sizeof *hreq);
    if (!c || !hreq)
        nch = 0; /* still answer rank 0 */
    for (; started < nch; started++) {
        wchan *w = &c[started];
        w->tag = MPIBZ_TAG + started;
        w->sh = &sh;
        w->dreq = MPI_REQUEST_NULL;
        for (int i = 0; i < 3; i++)
            w->send[i] = MPI_REQUEST_NULL;
        if (!(w->data = malloc(BLOCK_CAP)))
            break;
        if (use_threads) {
            if (pthread_create(&w->th, NULL, wthread_main, w)) {
                free(w->data);
                break;
            }
            w->have_thread = 1;
        }
        if (expect_block(comm, w, &hreq[started])) {
            rc = 1;
            started++; /* its thread and buffer are cleaned up below */
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
        if (!use_threads) { /* channels compressed by this thread in turn: block in MPI */
            int t = MPI_Waitany(started, hreq, &k, MPI_STATUS_IGNORE) || k == MPI_UNDEFINED
                        ? -1 : take_block(&c[k], &in);
            if (t < 0)
                goto fail;
            if (t == 1) {
                open--;
                continue;
            }
            c[k].rc = t == 2 ? -300 : bz_block_compress(&c[0].coder, c[k].data, c[k].n, c[k].raw, c[k].level, &c[k].b);
            if (give_result(comm, &c[k], &hreq[k]))
                goto fail;
            continue;
        }
        /* arrivals */
        while (MPI_Testany(started, hreq, &k, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && k != MPI_UNDEFINED) {
            int t = take_block(&c[k], &in);
            if (t < 0)
                goto fail;
            pthread_mutex_lock(&sh.mu);
            c[k].state = t == 1 ? W_CLOSED : W_WORK;
            c[k].done = t == 2; /* unreadable: answered without compressing */
            if (t == 2)
                c[k].rc = -300;
            pthread_cond_broadcast(&sh.cv);
            pthread_mutex_unlock(&sh.mu);
            open -= t == 1;
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
        if (c[i].dreq != MPI_REQUEST_NULL) { /* no block came after QUIT */
            MPI_Status st;
            MPI_Cancel(&c[i].dreq);
            MPI_Wait(&c[i].dreq, &st);
        }
        free(c[i].data);
        bz_block_free(&c[i].b);
        bz_coder_free(&c[i].coder);
    }
    free(c);
    free(hreq);
    if (in.fd >= 0)
        close(in.fd);
    free(in.path);
    return rc;
}
