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

enum { K_BLOCK = 1, K_RESULT = 2, K_QUIT = 3, K_DECODE = 4 };

#define BLOCK_CAP bz_cutter_cap(9) /* a block's bytes at any level */
#define RES_HDR 24                 /* a result's header: kind, rc, crc, 0 (uint32), bits (uint64) */
#define NAP_MAX 2000000L           /* longest sleep of a polling wait, ns */
#define BITS_AT_ONCE 2             /* results' bits a pump receives at the same time */
#define SENDS_AT_ONCE 2            /* blocks' bytes a pump sends at the same time */

/* Sleeps *ns and doubles it, up to NAP_MAX. */
static void nap(long *ns)
{
    struct timespec t = {0, *ns};
    nanosleep(&t, NULL);
    if (*ns < NAP_MAX)
        *ns *= 2;
}

/* MPI_Waitall with statuses (MPICH's MPI_STATUSES_IGNORE upsets GCC 12's bounds checks). */
static int wait_all(int n, MPI_Request *r)
{
    MPI_Status st[2];
    return n <= 2 && MPI_Waitall(n, r, st) == MPI_SUCCESS ? 0 : -1;
}

/* The header of block b and where its bytes come from (kind BLOCK; the last
 * word: 0 RLE1 bytes follow, 1 input bytes follow, 2 a "where" message). */
static void block_header(uint32_t h[4], const bz_piece *b, int level, const char *path)
{
    h[0] = K_BLOCK;
    h[1] = (uint32_t)level;
    h[2] = (uint32_t)(path ? b->in_n : b->n); /* the worker reads in_n input bytes itself */
    h[3] = path ? 2u : (uint32_t)b->raw;
}

/* The most input bytes a block can stand for: runs of one byte, 255 input
 * bytes to 5 RLE1 bytes (--shared-input blocks are such ranges). */
#define MAX_BLOCK_INPUT(level) (52u * 100000u * (uint32_t)(level))

/* ---- rank 0: pumps ---- */

typedef struct chan {
    int rank, tag, h;        /* h: the block out there, -1 when idle */
    uint32_t out[4];         /* the block's header */
    unsigned char res[RES_HDR];
    MPI_Request hsend;       /* the header's send */
    const unsigned char *data; /* the block's bytes, to send */
    size_t len;
    int sending;             /* its bytes are on their way (counted in the pump's sending) */
    unsigned char *where;    /* the block's "where" message (--shared-input) */
    size_t wcap;
} chan;

struct mpibz_pump {
    MPI_Comm comm;
    const char *path; /* --shared-input: the input file, as the workers open it */
    int level, n, first;
    int out;          /* results awaited: headers and bits */
    int ended;        /* bz_take said no block will come */
    chan *c;
    /* requests in progress (MPI_REQUEST_NULL when none): [0, n) receives of
       result headers per channel; [n, 2n) sends of the blocks' bytes (or
       "where" messages) per channel; [2n, 2n + nh) receives of results'
       bits per block handle */
    MPI_Request *req;
    int nh;
    /* blocks' bytes go out at most SENDS_AT_ONCE at a time, the others wait
       in order (fifo of channels): over a shared link each then arrives at
       full speed, to the worker that asked first, instead of all of them
       late together */
    int *fifo, fhead, fcount, sending;
    /* results whose header came and whose bits are to be received (at
       most BITS_AT_ONCE at a time, the oldest blocks first, so that they
       arrive in the order they are written rather than all late together
       over a shared link), per handle: */
    struct pend {
        int chan;      /* -1: nothing to receive */
        uint64_t seq;
    } *pend;
    int npend, bits_out;
    int *load;        /* per rank (index rank - first): blocks out there */
    int *cores;       /* per rank: compressors (channels / 2) */
    int compressors;  /* of the whole job, on every rank */
};

mpibz_chan *mpibz_channels(MPI_Comm comm, const int *counts, int first, int last, int *n)
{
    int most = 0, k = 0;
    *n = 0;
    for (int r = first; r <= last; r++) {
        *n += counts[r];
        most = counts[r] > most ? counts[r] : most;
    }
    mpibz_chan *c = calloc((size_t)*n + 1, sizeof *c);
    if (!c)
        *n = 0;
    for (int t = 0; c && t < most; t++)
        for (int r = first; r <= last; r++)
            if (t < counts[r])
                c[k++] = (mpibz_chan){comm, r, MPIBZ_TAG + t};
    return c;
}

mpibz_pump *mpibz_pump_new(MPI_Comm comm, int level, const int *counts, int first, int last, int compressors)
{
    mpibz_pump *p = calloc(1, sizeof *p);
    int n = 0, nr = last - first + 1;
    mpibz_chan *order = mpibz_channels(comm, counts, first, last, &n);
    if (!p || !order || !(p->c = calloc((size_t)n + 1, sizeof *p->c)) ||
        !(p->req = calloc(2 * (size_t)n + 1, sizeof *p->req)) || !(p->fifo = calloc((size_t)n + 1, sizeof *p->fifo)) ||
        !(p->load = calloc((size_t)nr, sizeof *p->load)) || !(p->cores = calloc((size_t)nr, sizeof *p->cores))) {
        free(order);
        mpibz_pump_free(p);
        return NULL;
    }
    p->comm = comm;
    p->level = level;
    p->first = first;
    p->compressors = compressors;
    for (p->n = 0; p->n < n; p->n++)
        p->c[p->n] = (chan){order[p->n].rank, order[p->n].tag, -1, {0}, {0}, MPI_REQUEST_NULL, NULL, 0, 0, NULL, 0};
    free(order);
    for (int i = 0; i < 2 * p->n; i++)
        p->req[i] = MPI_REQUEST_NULL;
    for (int r = first; r <= last; r++)
        p->cores[r - first] = counts[r] > 1 ? counts[r] / 2 : 1;
    return p;
}

void mpibz_pump_free(mpibz_pump *p)
{
    if (!p)
        return;
    for (int k = 0; p->c && k < p->n; k++)
        free(p->c[k].where);
    free(p->c);
    free(p->req);
    free(p->fifo);
    free(p->pend);
    free(p->load);
    free(p->cores);
    free(p);
}

void mpibz_pump_input(mpibz_pump *p, const char *path)
{
    p->path = path;
}

/* A block's "where" message (--shared-input): its offset, then the path. */
static size_t where_msg(chan *c, uint64_t start, const char *path)
{
    size_t n = 8 + strlen(path) + 1;
    if (n > c->wcap) {
        unsigned char *b = realloc(c->where, n);
        if (!b)
            return 0;
        c->where = b;
        c->wcap = n;
    }
    memcpy(c->where, &start, 8);
    memcpy(c->where + 8, path, n - 8);
    return n;
}

/* Starts sending the bytes of channel k's block. */
static int send_data(mpibz_pump *p, int k)
{
    chan *c = &p->c[k];
    c->sending = 1;
    p->sending++;
    return MPI_Isend(c->data, (int)c->len, MPI_BYTE, c->rank, c->tag, p->comm, &p->req[p->n + k]) ? -1 : 0;
}

/* Channel k's bytes are out (the send completed): the next waiting block's go. */
static int sent(mpibz_pump *p, int k)
{
    if (p->c[k].sending) {
        p->c[k].sending = 0;
        p->sending--;
    }
    while (p->fcount > 0 && p->sending < SENDS_AT_ONCE) {
        int next = p->fifo[p->fhead];
        p->fhead = (p->fhead + 1) % p->n;
        p->fcount--;
        if (send_data(p, next))
            return -1;
    }
    return 0;
}

/* Sends block h to channel k (its bytes now or, behind SENDS_AT_ONCE
 * others, later) and posts the receive of its result's header. */
static int dispatch(mpibz_pump *p, bz_job *j, int k, int h, const bz_piece *b)
{
    chan *c = &p->c[k];
    c->h = h;
    p->pend[h].seq = b->seq;
    p->load[c->rank - p->first]++;
    p->out++;
    block_header(c->out, b, p->level, p->path);
    size_t wn = c->out[3] == 2 ? where_msg(c, b->start, p->path) : 0;
    if ((c->out[3] == 2 && !wn) ||
        MPI_Isend(c->out, (int)sizeof c->out, MPI_BYTE, c->rank, c->tag, p->comm, &c->hsend) ||
        MPI_Irecv(c->res, RES_HDR, MPI_BYTE, c->rank, c->tag, p->comm, &p->req[k]))
        return -1;
    if (wn) { /* the worker reads the bytes itself: a few bytes travel, at once */
        bz_release(j, h);
        return MPI_Isend(c->where, (int)wn, MPI_BYTE, c->rank, c->tag, p->comm, &p->req[p->n + k]) ? -1 : 0;
    }
    c->data = b->data;
    c->len = b->n;
    if (p->sending < SENDS_AT_ONCE)
        return send_data(p, k);
    p->fifo[(p->fhead + p->fcount++) % p->n] = k;
    return 0;
}

/* Posts the receives of waiting results' bits, oldest blocks first. */
static int post_bits(mpibz_pump *p, bz_job *j)
{
    while (p->npend > 0 && p->bits_out < BITS_AT_ONCE) {
        int h = -1;
        for (int i = 0; i < p->nh; i++)
            if (p->pend[i].chan >= 0 && (h < 0 || p->pend[i].seq < p->pend[h].seq))
                h = i;
        chan *c = &p->c[p->pend[h].chan];
        bz_block *b = bz_out(j, h);
        if (MPI_Irecv(b->bits, (int)((b->nbits + 7) / 8), MPI_BYTE, c->rank, c->tag - MPIBZ_TAG + MPIBZ_BITS_TAG,
                      p->comm, &p->req[2 * p->n + h]))
            return -1;
        p->pend[h].chan = -1;
        p->npend--;
        p->bits_out++;
    }
    return 0;
}

/* Request k completed: a result's header (channel k: the channel is free
 * again, and the result's bits wait for their receive), a block's bytes
 * sent (channel k - n), or a result's bits (handle k - 2n: the block is
 * back). */
static int arrived(mpibz_pump *p, bz_job *j, int k)
{
    if (k >= 2 * p->n) {
        bz_put(j, k - 2 * p->n, 0);
        p->out--;
        p->bits_out--;
        return post_bits(p, j);
    }
    if (k >= p->n)
        return sent(p, k - p->n);
    chan *c = &p->c[k];
    int h = c->h;
    uint32_t w[4];
    uint64_t nbits;
    memcpy(w, c->res, sizeof w);
    memcpy(&nbits, c->res + 16, 8);
    /* the worker has the block's bytes: their buffer goes back to the reader */
    MPI_Status st;
    if (w[0] != K_RESULT || MPI_Wait(&c->hsend, &st) || MPI_Wait(&p->req[p->n + k], &st) || sent(p, k))
        return -1;
    bz_release(j, h);
    c->h = -1;
    p->load[c->rank - p->first]--;
    if (w[1] != 0) {
        bz_put(j, h, (int)(int32_t)w[1]);
        p->out--;
        return 0;
    }
    bz_block *b = bz_out(j, h);
    size_t bytes = (size_t)((nbits + 7) / 8);
    if (nbits == 0 || bytes > BLOCK_CAP + 4096 || bz_block_reserve(b, bytes))
        return -1;
    b->nbits = nbits;
    b->crc = w[2];
    p->pend[h].chan = k;
    p->npend++;
    return post_bits(p, j);
}

int mpibz_pump_run(void *arg, bz_job *j, int may_block)
{
    mpibz_pump *p = arg;
    int did = 0;
    p->ended = 0;
    if (p->nh < bz_handles(j)) { /* a new job with a longer queue (nothing is out) */
        int nh = bz_handles(j);
        MPI_Request *r = realloc(p->req, (size_t)(2 * p->n + nh) * sizeof *r);
        if (r)
            p->req = r;
        struct pend *q = realloc(p->pend, (size_t)nh * sizeof *q);
        if (!r || !q)
            return -1;
        p->pend = q;
        for (int i = p->nh; i < nh; i++) {
            r[2 * p->n + i] = MPI_REQUEST_NULL;
            q[i].chan = -1;
        }
        p->nh = nh;
    }
    /* idle channels: first those of ranks with an idle compressor, then the
       rest. But in the last two rounds (no more blocks left than twice the
       compressors) no block waits behind another: each goes to the first
       compressor that is free, as in plain self-scheduling, so that the
       workers' last blocks end within about one block's time of each other
       (a block queued behind a slow one would end up to two blocks late) */
    int passes = 2, left = bz_blocks_left(j);
    if (left >= 0 && left <= 2 * p->compressors)
        passes = 1;
    for (int pass = 0; pass < passes && !p->ended; pass++)
        for (int k = 0; k < p->n; k++) {
            chan *c = &p->c[k];
            if (c->h >= 0 || (pass == 0 && p->load[c->rank - p->first] >= p->cores[c->rank - p->first]))
                continue;
            bz_piece b;
            int h = bz_take(j, &b);
            if (h < 0) {
                p->ended = h == BZ_TAKE_NONE_LEFT;
                pass = passes; /* no block for the other idle channels either */
                break;
            }
            if (dispatch(p, j, k, h, &b))
                return -1;
            did = 1;
        }
    for (;;) {
        int k = MPI_UNDEFINED, flag = 0, got = 0;
        MPI_Status st;
        if (p->out == 0)
            return did;
        if (may_block && !did) {
            if (MPI_Waitany(2 * p->n + p->nh, p->req, &k, &st) != MPI_SUCCESS)
                return -1;
        } else if (MPI_Testany(2 * p->n + p->nh, p->req, &k, &flag, &st) != MPI_SUCCESS) {
            return -1;
        }
        if (k == MPI_UNDEFINED)
            return did;
        /* every message is as long as its receive: a header, or the bits the header announced */
        long want = k < p->n ? RES_HDR : k >= 2 * p->n ? (long)((bz_out(j, k - 2 * p->n)->nbits + 7) / 8) : -1;
        if ((want >= 0 && (MPI_Get_count(&st, MPI_BYTE, &got) || got != want)) || arrived(p, j, k))
            return -1;
        did = 1;
    }
}

int mpibz_proxy(void *arg, bz_job *j)
{
    mpibz_pump *p = arg;
    long ns = 20000;
    for (;;) {
        int r = mpibz_pump_run(p, j, 0);
        if (r < 0)
            return -1;
        if (p->ended && p->out == 0)
            return 0;
        if (r > 0)
            ns = 20000;
        else
            nap(&ns);
    }
}

int mpibz_pump_quit(mpibz_pump *p)
{
    int rc = 0;
    for (int k = 0; p && k < p->n; k++) {
        uint32_t h[4] = {K_QUIT, 0, 0, 0};
        rc |= MPI_Send(h, (int)sizeof h, MPI_BYTE, p->c[k].rank, p->c[k].tag, p->comm) != MPI_SUCCESS;
    }
    return rc;
}

/* ---- rank 0, decompression: a thread per remote channel ---- */

/* Waits for n requests, polling with short sleeps (other threads of this
 * rank make MPI calls meanwhile, and MPICH's blocking waits spin). With
 * bytes >= 0 (n 1: a receive), the message must have been that long. */
static int wait_poll(int n, MPI_Request *r, long bytes)
{
    long ns = 20000;
    for (;;) {
        int done = 0, got = 0;
        MPI_Status st[2];
        if (n > 2 || MPI_Testall(n, r, &done, st) != MPI_SUCCESS)
            return -1;
        if (done)
            return bytes < 0 || (!MPI_Get_count(&st[0], MPI_BYTE, &got) && got == bytes) ? 0 : -1;
        nap(&ns);
    }
}

int mpibz_remote_decode(void *arg, const unsigned char *syn, size_t synlen, uint64_t nbits, int level, int want_out,
                        bz_trial *t)
{
    mpibz_chan *c = arg;
    uint32_t h[4] = {K_DECODE, (uint32_t)level | (want_out ? 1u << 8 : 0), (uint32_t)synlen, (uint32_t)nbits}, w[4];
    unsigned char res[RES_HDR];
    uint64_t outlen;
    MPI_Request r[2];
    memset(t, 0, sizeof *t);
    if (synlen > BZ_DECODE_MAX_STREAM(9) || nbits > UINT32_MAX || MPI_Isend(h, 16, MPI_BYTE, c->rank, c->tag, c->comm, &r[0]) ||
        MPI_Isend(syn, (int)synlen, MPI_BYTE, c->rank, c->tag, c->comm, &r[1]) || wait_poll(2, r, -1) ||
        MPI_Irecv(res, RES_HDR, MPI_BYTE, c->rank, c->tag, c->comm, &r[0]) || wait_poll(1, r, RES_HDR))
        return -1;
    memcpy(w, res, sizeof w);
    memcpy(&outlen, res + 16, 8);
    if (w[0] != K_RESULT || w[1] > BZ_TRIAL_MEM || outlen > (uint64_t)INT32_MAX)
        return -1;
    t->res = (int)w[1];
    t->hopeless = (int)w[2];
    t->outlen = (size_t)outlen;
    if (t->res != BZ_TRIAL_OK || !want_out || outlen == 0)
        return 0;
    if (!(t->out = malloc((size_t)outlen)) ||
        MPI_Irecv(t->out, (int)outlen, MPI_BYTE, c->rank, c->tag - MPIBZ_TAG + MPIBZ_BITS_TAG, c->comm, &r[0]) ||
        wait_poll(1, r, (long)outlen)) {
        free(t->out); /* (the output is still on its way if malloc failed: the channel is lost either way) */
        t->out = NULL;
        return -1;
    }
    return 0;
}

int mpibz_chan_quit(const mpibz_chan *c)
{
    uint32_t h[4] = {K_QUIT, 0, 0, 0};
    return MPI_Send(h, (int)sizeof h, MPI_BYTE, c->rank, c->tag, c->comm) != MPI_SUCCESS;
}

/* ---- worker ranks: the main thread makes every MPI call; compression threads only compress ---- */

/* A channel: W_WAIT for a header, W_DATA for the block's bytes (its
 * request is then in the arrivals array), W_READY for a compressor,
 * W_WORK, W_DONE (result to send), W_CLOSED. */
enum { W_WAIT = 0, W_DATA, W_READY, W_WORK, W_DONE, W_CLOSED };

typedef struct wchan {
    int tag, state;
    uint64_t seq;        /* arrival order of its block (W_READY) */
    uint32_t hdr[4];
    MPI_Request dreq;    /* the next block's bytes (or "where" message), posted with its header's receive */
    unsigned char *data; /* BLOCK_CAP bytes */
    size_t n;
    int level, raw, rc;
    int fd;              /* --shared-input: the block is the input bytes [at, at + n) of fd (else -1) */
    uint64_t at;
    int decode, want_out, hopeless; /* a DECODE job: c->data holds a one-block stream of n bytes */
    uint64_t nbits;      /* DECODE: the block's bits */
    size_t cap;          /* bytes of data */
    bz_block b;          /* the block being compressed (DECODE: its output, nbits = 8 x its bytes) */
} wchan;

/* Does c's job (compresses its block with the coder, or decodes it): c->rc. */
static void do_job(bz_coder *coder, wchan *c)
{
    if (!c->decode) {
        c->rc = c->fd >= 0 ? bz_block_compress_file(coder, c->fd, c->at, c->n, c->data, BLOCK_CAP, c->level, &c->b)
                           : bz_block_compress(coder, c->data, c->n, c->raw, c->level, &c->b);
        return;
    }
    bz_trial t;
    bz_decode_block(c->data, c->n, c->nbits, c->level, &t);
    free(c->b.bits);
    c->b.bits = t.out;
    c->b.cap = t.outlen;
    c->b.nbits = (uint64_t)t.outlen * 8;
    c->rc = t.res;
    c->hopeless = t.hopeless;
}

/* A result on its way to rank 0: its header and bits, and their sends. */
typedef struct wsend {
    MPI_Request r[2];
    unsigned char res[RES_HDR];
    bz_block b;
} wsend;

/* Results on their way: as many as rank 0's link has not taken yet. */
typedef struct woutbox {
    wsend **s;
    int n;
} woutbox;

typedef struct wshared {
    pthread_mutex_t mu;
    pthread_cond_t work, done; /* a block is ready for a thread / a thread finished one */
    int quit, n;
    wchan *c;
} wshared;

/* The channel whose block came first among those waiting for a compressor (mu held), or NULL. */
static wchan *oldest_ready(wshared *sh)
{
    wchan *o = NULL;
    for (int i = 0; i < sh->n; i++)
        if (sh->c[i].state == W_READY && (!o || sh->c[i].seq < o->seq))
            o = &sh->c[i];
    return o;
}

static void *wthread_main(void *arg)
{
    wshared *sh = arg;
    bz_coder coder = {0};
    pthread_mutex_lock(&sh->mu);
    for (;;) {
        wchan *c = oldest_ready(sh);
        if (!c) {
            if (sh->quit)
                break;
            pthread_cond_wait(&sh->work, &sh->mu);
            continue;
        }
        c->state = W_WORK;
        pthread_mutex_unlock(&sh->mu);
        do_job(&coder, c);
        pthread_mutex_lock(&sh->mu);
        c->state = W_DONE;
        pthread_cond_signal(&sh->done);
    }
    pthread_mutex_unlock(&sh->mu);
    bz_coder_free(&coder);
    return NULL;
}

/* The input file of --shared-input blocks, kept open between blocks. */
typedef struct winput {
    int fd;
    char *path;
} winput;

/* The file at path, opened once for all its blocks: its descriptor, or -1. */
static int input_fd(winput *in, const char *path)
{
    if (!in->path || strcmp(in->path, path)) {
        if (in->fd >= 0)
            close(in->fd);
        free(in->path);
        in->path = strdup(path);
        in->fd = in->path ? open(path, O_RDONLY) : -1;
    }
    return in->fd;
}

/* What take_header and take_data found. */
enum {
    TAKE_BAD = -1,       /* a message is not what it should be: the worker fails */
    TAKE_OK = 0,         /* a header, whose bytes come next; or the bytes: the block is ready */
    TAKE_QUIT = 1,       /* QUIT: the channel closes */
    TAKE_UNREADABLE = 2, /* --shared-input: the input file cannot be opened (answered without compressing) */
};

/* c's header arrived (its request was *req): QUIT closes the channel
 * (TAKE_QUIT); BLOCK or DECODE (TAKE_OK): the receive of its bytes takes
 * the header's place in the arrivals array, so that a single-threaded
 * worker compresses what it has while the bytes travel; TAKE_BAD on a bad
 * header. */
static int take_header(wchan *c, MPI_Request *req)
{
    if (c->hdr[0] == K_QUIT)
        return TAKE_QUIT;
    c->decode = c->hdr[0] == K_DECODE;
    c->fd = -1;
    if (c->decode) {
        c->level = (int)(c->hdr[1] & 0xff);
        c->want_out = (int)(c->hdr[1] >> 8) & 1;
        c->n = c->hdr[2];
        c->nbits = c->hdr[3];
        if (c->level < 1 || c->level > 9 || c->n > c->cap || c->nbits > BZ_DECODE_MAX_BLOCK_BITS(c->level))
            return TAKE_BAD;
    } else {
        if (c->hdr[0] != K_BLOCK || c->hdr[1] < 1 || c->hdr[1] > 9 || c->hdr[3] > 2 ||
            c->hdr[2] > (c->hdr[3] == 2 ? MAX_BLOCK_INPUT(c->hdr[1]) : bz_cutter_cap((int)c->hdr[1])))
            return TAKE_BAD;
        c->n = c->hdr[2];
        c->level = (int)c->hdr[1];
        c->raw = c->hdr[3] != 0;
    }
    *req = c->dreq;
    c->dreq = MPI_REQUEST_NULL;
    return TAKE_OK;
}

/* c's bytes arrived (st): the block (or one-block stream) is in c->data,
 * or with --shared-input where it is in the input file (TAKE_OK, or
 * TAKE_UNREADABLE if that file cannot be opened); TAKE_BAD if the message
 * is not what the header said. */
static int take_data(wchan *c, const MPI_Status *st, winput *in)
{
    int len = 0;
    if (MPI_Get_count(st, MPI_BYTE, &len))
        return TAKE_BAD;
    if (c->decode || c->hdr[3] != 2)
        return (size_t)len == c->n ? TAKE_OK : TAKE_BAD;
    /* --shared-input: the block's offset and the file's path; the
       compressor reads the bytes (c->data is the buffer it reads through) */
    if (len < 10 || c->data[len - 1] != 0)
        return TAKE_BAD;
    memcpy(&c->at, c->data, 8);
    c->fd = input_fd(in, (const char *)c->data + 8);
    return c->fd < 0 ? TAKE_UNREADABLE : TAKE_OK;
}

/* Receives for c's next block: its header, then its bytes (or "where"
 * message), into c->data, which holds a block of any level; posted before
 * the block is sent, so its bytes arrive while other work goes on. */
static int expect_block(MPI_Comm comm, wchan *c, MPI_Request *hreq)
{
    return MPI_Irecv(c->hdr, (int)sizeof c->hdr, MPI_BYTE, 0, c->tag, comm, hreq) ||
                   MPI_Irecv(c->data, (int)c->cap, MPI_BYTE, 0, c->tag, comm, &c->dreq)
               ? -1
               : 0;
}

/* c's block is compressed (or could not be read): send the result, expect
 * the next block. The result goes out from a buffer of its own, which the
 * channel's next block does not touch: rank 0 hands out that block as soon
 * as the result's header arrives, while the bits may still be on their way
 * (rank 0's link carries every worker's results; where the data compresses
 * poorly they come faster than it takes them, and the workers go on
 * compressing meanwhile). */
static int give_result(MPI_Comm comm, wchan *c, MPI_Request *hreq, woutbox *ob)
{
    wsend *e = NULL;
    for (int i = 0; i < ob->n && !e; i++) {
        int done = 0;
        MPI_Status st[2];
        if (MPI_Testall(2, ob->s[i]->r, &done, st) != MPI_SUCCESS)
            return -1;
        if (done)
            e = ob->s[i];
    }
    if (!e) {
        wsend **g = realloc(ob->s, (size_t)(ob->n + 1) * sizeof *g);
        if (!g)
            return -1;
        ob->s = g;
        if (!(e = calloc(1, sizeof *e)))
            return -1;
        e->r[0] = e->r[1] = MPI_REQUEST_NULL;
        ob->s[ob->n++] = e;
    }
    bz_block t = e->b; /* its buffer takes the channel's next block */
    e->b = c->b;
    c->b = t;
    /* a compressed block: rc, CRC, its bits; a decoded one: result, hopeless, its output's bytes */
    uint32_t w[4] = {K_RESULT, (uint32_t)c->rc, c->decode ? (uint32_t)c->hopeless : c->rc ? 0 : e->b.crc, 0};
    uint64_t nbits = c->rc ? 0 : c->decode ? e->b.nbits / 8 : e->b.nbits;
    memcpy(e->res, w, sizeof w);
    memcpy(e->res + 16, &nbits, 8);
    if (MPI_Isend(e->res, RES_HDR, MPI_BYTE, 0, c->tag, comm, &e->r[0]))
        return -1;
    if (c->rc == 0 && (!c->decode || c->want_out) && e->b.nbits > 0 &&
        MPI_Isend(e->b.bits, (int)((e->b.nbits + 7) / 8), MPI_BYTE, 0, c->tag - MPIBZ_TAG + MPIBZ_BITS_TAG, comm,
                  &e->r[1]))
        return -1;
    return expect_block(comm, c, hreq);
}

int mpibz_thread_counts(MPI_Comm comm, int *counts)
{
    int none = 0;
    return MPI_Gather(&none, 1, MPI_INT, counts, 1, MPI_INT, 0, comm) == MPI_SUCCESS ? 0 : 1;
}

/* A worker rank: its channels, compression threads and results on their way. */
typedef struct wrank {
    MPI_Comm comm;
    int nth;          /* compression threads wanted (0: the calling thread compresses) */
    int nch;          /* channels allocated (c, hreq) */
    int started;      /* channels serving rank 0 */
    int nthreads;     /* threads running */
    uint64_t arrivals;
    winput in;
    woutbox ob;
    wshared sh;
    wchan *c;
    MPI_Request *hreq; /* per channel: the receive of its next header, then of its bytes */
    pthread_t *th;
    bz_coder coder;   /* without threads */
} wrank;

/* Sets up w's channels and threads and posts the receives of the first
 * blocks: 0, or 1 if MPI failed (w->started is then 0: rank 0 sends this
 * rank nothing). Short of memory, w serves fewer channels, maybe none. */
static int wrank_start(wrank *w, int decode)
{
    int rc = 0;
    w->c = calloc((size_t)w->nch, sizeof *w->c);
    w->hreq = calloc((size_t)w->nch, sizeof *w->hreq);
    w->th = calloc((size_t)w->nth + 1, sizeof *w->th);
    if (!w->c || !w->hreq || !w->th)
        w->nch = 0; /* still answer rank 0 */
    for (int i = 0; i < w->nch; i++) /* the cleanup looks at every channel's requests */
        w->c[i].dreq = w->hreq[i] = MPI_REQUEST_NULL;
    w->sh.c = w->c;
    for (; w->started < w->nch; w->started++) {
        wchan *c = &w->c[w->started];
        c->tag = MPIBZ_TAG + w->started;
        c->dreq = w->hreq[w->started] = MPI_REQUEST_NULL;
        c->cap = decode ? BZ_DECODE_MAX_STREAM(9) : BLOCK_CAP;
        if (!(c->data = malloc(c->cap)))
            break;
    }
    w->started &= ~1; /* whole compressors only: two channels each */
    w->sh.n = w->started;
    for (; w->nthreads < w->nth && w->nthreads < w->started / 2; w->nthreads++)
        if (pthread_create(&w->th[w->nthreads], NULL, wthread_main, &w->sh))
            break;
    if (w->nth)
        w->started = w->nthreads * 2; /* no channels for threads that could not start */
    pthread_mutex_lock(&w->sh.mu);
    w->sh.n = w->started;
    pthread_mutex_unlock(&w->sh.mu);
    for (int i = 0; i < w->started && !rc; i++)
        rc = expect_block(w->comm, &w->c[i], &w->hreq[i]) ? 1 : 0;
    if (rc)
        w->started = 0; /* rank 0 sends this rank nothing */
    return rc;
}

/* Takes in what arrived (headers, blocks' bytes, QUITs) until nothing more
 * has; without threads, first waits in MPI for an arrival when no block is
 * ready. *open counts the channels still open, *did is set if anything
 * came. 0, or -1 if MPI failed or a message was not what it should be. */
static int wrank_arrivals(wrank *w, int *open, int *did)
{
    wchan *c = w->c;
    int k = MPI_UNDEFINED, flag = 0;
    for (;;) {
        MPI_Status st;
        if (!w->nth && !oldest_ready(&w->sh)) {
            if (MPI_Waitany(w->started, w->hreq, &k, &st) != MPI_SUCCESS)
                return -1;
        } else if (MPI_Testany(w->started, w->hreq, &k, &flag, &st) != MPI_SUCCESS) {
            return -1;
        }
        if (k == MPI_UNDEFINED)
            return 0;
        int t;
        if (c[k].state == W_WAIT) { /* a header: then its bytes, or the channel closes */
            if ((t = take_header(&c[k], &w->hreq[k])) == TAKE_BAD)
                return -1;
            if (t == TAKE_OK) {
                pthread_mutex_lock(&w->sh.mu);
                c[k].state = W_DATA;
                pthread_mutex_unlock(&w->sh.mu);
                continue;
            }
        } else if ((t = take_data(&c[k], &st, &w->in)) == TAKE_BAD) {
            return -1;
        }
        pthread_mutex_lock(&w->sh.mu);
        c[k].state = t == TAKE_QUIT ? W_CLOSED : t == TAKE_UNREADABLE ? W_DONE : W_READY;
        /* unreadable: answered without compressing */
        c[k].rc = t == TAKE_UNREADABLE ? BZ_BLOCK_UNREADABLE : 0;
        c[k].seq = w->arrivals++;
        pthread_cond_signal(&w->sh.work);
        pthread_mutex_unlock(&w->sh.mu);
        *open -= t == TAKE_QUIT;
        *did = 1;
        if (!*open)
            return 0;
    }
}

/* Sends the results of the channels whose block is done (*did set if
 * any). 0, or -1 if MPI failed or memory is short. */
static int wrank_results(wrank *w, int *did)
{
    for (int i = 0; i < w->started; i++) {
        pthread_mutex_lock(&w->sh.mu);
        int ready = w->c[i].state == W_DONE;
        pthread_mutex_unlock(&w->sh.mu);
        if (ready) {
            if (give_result(w->comm, &w->c[i], &w->hreq[i], &w->ob))
                return -1;
            pthread_mutex_lock(&w->sh.mu);
            w->c[i].state = W_WAIT;
            pthread_mutex_unlock(&w->sh.mu);
            *did = 1;
        }
    }
    return 0;
}

/* Nothing moved: waits for a thread to finish a block, or *ns (doubled
 * for next time, up to NAP_MAX; arrivals are polled). */
static void wrank_idle(wrank *w, long *ns)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += *ns;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->sh.mu);
    int any = 0;
    for (int i = 0; i < w->started && !any; i++)
        any = w->c[i].state == W_DONE;
    if (!any)
        pthread_cond_timedwait(&w->sh.done, &w->sh.mu, &t);
    pthread_mutex_unlock(&w->sh.mu);
    if (*ns < NAP_MAX)
        *ns *= 2;
}

/* Serves the channels until every one is closed: 0, or 1 if MPI or memory
 * failed. */
static int wrank_serve(wrank *w)
{
    int open = w->started;
    long ns = 20000;
    while (open > 0) {
        int did = 0;
        if (wrank_arrivals(w, &open, &did))
            return 1;
        if (!w->nth) { /* compress the block that came first */
            wchan *c = oldest_ready(&w->sh);
            if (c) {
                do_job(&w->coder, c);
                c->state = W_DONE;
            }
        }
        if (wrank_results(w, &did))
            return 1;
        if (did || !w->nth) {
            ns = 20000;
            continue;
        }
        wrank_idle(w, &ns);
    }
    return 0;
}

/* Stops the threads, waits for the results' sends (if all went well, rc
 * 0), cancels the receives no message will match and frees w. */
static void wrank_end(wrank *w, int rc)
{
    pthread_mutex_lock(&w->sh.mu);
    w->sh.quit = 1;
    pthread_cond_broadcast(&w->sh.work);
    pthread_mutex_unlock(&w->sh.mu);
    for (int i = 0; i < w->nthreads; i++)
        pthread_join(w->th[i], NULL);
    for (int i = 0; i < w->ob.n; i++) {
        int done = 0;
        MPI_Status st[2];
        if (!rc)
            done = !wait_all(2, w->ob.s[i]->r);
        else if (MPI_Testall(2, w->ob.s[i]->r, &done, st) != MPI_SUCCESS)
            done = 0;
        if (!done)
            continue; /* a send MPI may still read from: left, not freed */
        bz_block_free(&w->ob.s[i]->b);
        free(w->ob.s[i]);
    }
    free(w->ob.s);
    for (int i = 0; w->c && i < w->nch; i++) {
        wchan *c = &w->c[i];
        MPI_Status st;
        if (c->dreq != MPI_REQUEST_NULL) { /* no block came after QUIT */
            MPI_Cancel(&c->dreq);
            MPI_Wait(&c->dreq, &st);
        }
        if (w->hreq[i] != MPI_REQUEST_NULL) { /* a receive no message will match */
            MPI_Cancel(&w->hreq[i]);
            MPI_Wait(&w->hreq[i], &st);
        }
        free(c->data);
        bz_block_free(&c->b);
    }
    bz_coder_free(&w->coder);
    free(w->c);
    free(w->hreq);
    free(w->th);
    if (w->in.fd >= 0)
        close(w->in.fd);
    free(w->in.path);
}

int mpibz_worker(MPI_Comm comm, int threads, int use_threads, int decode)
{
    wrank w = {.comm = comm,
               .nth = use_threads ? threads : 0,
               .in = {-1, NULL},
               .sh = {.mu = PTHREAD_MUTEX_INITIALIZER,
                      .work = PTHREAD_COND_INITIALIZER,
                      .done = PTHREAD_COND_INITIALIZER}};
    w.nch = 2 * (w.nth ? w.nth : 1);
    int rc = wrank_start(&w, decode);
    /* rank 0 learns how many channels serve it */
    if (MPI_Gather(&w.started, 1, MPI_INT, NULL, 0, MPI_INT, 0, comm) != MPI_SUCCESS)
        rc = 1;
    if (!rc)
        rc = wrank_serve(&w);
    wrank_end(&w, rc);
    return rc;
}
