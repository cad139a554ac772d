/* Parallel compression inside one process: see bzpar.h. */
#define _POSIX_C_SOURCE 200809L
#include "bzpar.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bzblock.h"

enum { S_FREE = 0, S_FILLED, S_BUSY, S_DONE };

typedef struct slot {
    int state;
    uint64_t seq;
    unsigned char *data; /* the block's input bytes, or RLE1 bytes (buffer swapped with the cutter's);
                            NULL once released */
    size_t n;
    int raw;
    uint64_t in_end;    /* input bytes consumed when the block closed */
    uint64_t start, in_n; /* the block's input bytes: [start, start + in_n) of the input */
    bz_block blk;
    int rc;
} slot;

struct bz_job {
    pthread_mutex_t mu;
    pthread_cond_t cv_free, cv_todo, cv_done;
    slot *s;
    int ns;
    uint64_t nread, nwritten; /* blocks cut so far / written so far */
    int eof, stop;
    int err;                  /* first error: 1 (I/O, memory) or 3 (libbz2) */
    char msg[256];
    int fd;
    const bz_compress_opts *o;
    bz_cutter cut;
    bz_coder coder;     /* the writer's, when it compresses (no threads) */
    unsigned char **spare; /* released input buffers (at most ns) */
    int nspare;
    uint64_t in_bytes;
    uint64_t cut_at;    /* input offset of the current block's first byte */
    uint64_t size;      /* input bytes to come in all (regular files), else 0 */
    uint64_t cut_done;  /* input bytes in blocks cut so far (mu) */
    unsigned char *buf; /* read buffer, and its unconsumed part [off, len) */
    size_t cap, off, len;
};
typedef struct bz_job job;

static void fail(job *j, int code, const char *what, int e)
{
    pthread_mutex_lock(&j->mu);
    if (!j->err) {
        j->err = code;
        snprintf(j->msg, sizeof j->msg, "%s%s%s", what, e ? ": " : "", e ? strerror(e) : "");
    }
    j->stop = 1;
    pthread_cond_broadcast(&j->cv_free);
    pthread_cond_broadcast(&j->cv_todo);
    pthread_cond_broadcast(&j->cv_done);
    pthread_mutex_unlock(&j->mu);
}

/* Hands the cutter's block to a free slot (waits for one). 0, or -1 if stopped. */
static int emit(job *j, uint64_t end)
{
    pthread_mutex_lock(&j->mu);
    slot *s = NULL;
    while (!j->stop) {
        for (int i = 0; i < j->ns; i++)
            if (j->s[i].state == S_FREE && (!s || (!s->data && j->s[i].data)))
                s = &j->s[i];
        if (s)
            break;
        pthread_cond_wait(&j->cv_free, &j->mu);
    }
    if (!s) {
        pthread_mutex_unlock(&j->mu);
        return -1;
    }
    s->state = S_BUSY; /* ours while we fill it */
    if (!s->data && j->nspare)
        s->data = j->spare[--j->nspare];
    pthread_mutex_unlock(&j->mu);
    if (!s->data) {
        s->data = malloc(j->cut.cap);
        if (!s->data) {
            pthread_mutex_lock(&j->mu);
            s->state = S_FREE;
            pthread_mutex_unlock(&j->mu);
            fail(j, 1, "out of memory", 0);
            return -1;
        }
    }
    unsigned char *t = s->data;
    s->data = j->cut.out;
    j->cut.out = t;
    s->n = j->cut.nout;
    s->raw = !j->cut.rle;
    s->in_end = j->in_bytes;
    s->start = j->cut_at;
    s->in_n = end - j->cut_at;
    j->cut_at = end;
    pthread_mutex_lock(&j->mu);
    j->cut_done = end;
    s->seq = j->nread++;
    s->state = S_FILLED;
    pthread_cond_signal(&j->cv_todo);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

/* Reads and cuts until one block went to a slot (1) or the input ended
 * (0: the last block, if any, went to a slot and eof is set); -1 if stopped
 * or failed. */
static int read_step(job *j)
{
    for (;;) {
        if (j->off == j->len) {
            ssize_t r = read(j->fd, j->buf, j->cap);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                fail(j, 1, "read error", errno);
                return -1;
            }
            if (r == 0)
                break;
            j->off = 0;
            j->len = (size_t)r;
        }
        int full;
        size_t k = bz_cutter_feed(&j->cut, j->buf + j->off, j->len - j->off, &full);
        j->off += k;
        j->in_bytes += k;
        if (full) {
            if (emit(j, j->in_bytes - 1)) /* the closing byte starts the next block */
                return -1;
            bz_cutter_next(&j->cut);
            return 1;
        }
    }
    bz_cutter_finish(&j->cut);
    if (j->cut.nout > 0 && emit(j, j->in_bytes))
        return -1;
    pthread_mutex_lock(&j->mu);
    j->eof = 1;
    pthread_cond_broadcast(&j->cv_todo);
    pthread_cond_broadcast(&j->cv_done);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

static void *reader(void *arg)
{
    job *j = arg;
    while (read_step(j) == 1) {
        pthread_mutex_lock(&j->mu);
        int stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        if (stop)
            break;
    }
    return NULL;
}

/* The oldest filled slot (mu held), or NULL. */
static slot *oldest_filled(job *j)
{
    slot *s = NULL;
    for (int i = 0; i < j->ns; i++)
        if (j->s[i].state == S_FILLED && (!s || j->s[i].seq < s->seq))
            s = &j->s[i];
    return s;
}

int bz_take(bz_job *j, bz_piece *b)
{
    pthread_mutex_lock(&j->mu);
    for (;;) {
        slot *s = j->stop ? NULL : oldest_filled(j);
        if (s) {
            s->state = S_BUSY;
            pthread_mutex_unlock(&j->mu);
            b->data = s->data;
            b->n = s->n;
            b->raw = s->raw;
            b->start = s->start;
            b->in_n = s->in_n;
            b->seq = s->seq;
            return (int)(s - j->s);
        }
        if (j->stop || j->eof) {
            pthread_mutex_unlock(&j->mu);
            return BZ_TAKE_NONE_LEFT;
        }
        int free_slot = 0;
        for (int i = 0; i < j->ns && !free_slot; i++)
            free_slot = j->s[i].state == S_FREE;
        pthread_mutex_unlock(&j->mu);
        if (!j->o->no_threads || !free_slot || read_step(j) < 0)
            return BZ_TAKE_NONE_NOW;
        pthread_mutex_lock(&j->mu);
    }
}

void bz_release(bz_job *j, int h)
{
    pthread_mutex_lock(&j->mu);
    slot *s = &j->s[h];
    if (s->data)
        j->spare[j->nspare++] = s->data;
    s->data = NULL;
    pthread_mutex_unlock(&j->mu);
}

int bz_blocks_left(bz_job *j)
{
    pthread_mutex_lock(&j->mu);
    int filled = 0;
    for (int i = 0; i < j->ns; i++)
        filled += j->s[i].state == S_FILLED;
    uint64_t done = j->cut_done, size = j->size;
    int eof = j->eof;
    pthread_mutex_unlock(&j->mu);
    if (eof)
        return filled;
    if (!size)
        return -1;
    uint64_t per = 100000u * (uint64_t)j->o->level, left = size > done ? (size - done + per - 1) / per : 1;
    return left > (uint64_t)(INT32_MAX / 2) ? INT32_MAX / 2 : filled + (int)left;
}

int bz_handles(bz_job *j)
{
    return j->ns;
}

bz_block *bz_out(bz_job *j, int h)
{
    return &j->s[h].blk;
}

void bz_put(bz_job *j, int h, int rc)
{
    pthread_mutex_lock(&j->mu);
    j->s[h].rc = rc;
    j->s[h].state = S_DONE;
    pthread_cond_broadcast(&j->cv_done);
    pthread_mutex_unlock(&j->mu);
}

typedef struct worker {
    job *j;
    int proxy; /* -1: compress here, else index of the proxy */
} worker;

static void *proxy(void *arg)
{
    worker *wk = arg;
    if (wk->j->o->proxy(wk->j->o->proxy_arg[wk->proxy], wk->j) < 0)
        fail(wk->j, 1, "lost a worker", 0);
    return NULL;
}

static void *compressor(void *arg)
{
    worker *wk = arg;
    job *j = wk->j;
    bz_coder k = {0};
    pthread_mutex_lock(&j->mu);
    for (;;) {
        slot *s = j->stop ? NULL : oldest_filled(j);
        if (!s) {
            if (j->stop || j->eof)
                break;
            pthread_cond_wait(&j->cv_todo, &j->mu);
            continue;
        }
        s->state = S_BUSY;
        pthread_mutex_unlock(&j->mu);
        int rc = bz_block_compress(&k, s->data, s->n, s->raw, j->o->level, &s->blk);
        pthread_mutex_lock(&j->mu);
        s->rc = rc;
        s->state = S_DONE;
        pthread_cond_broadcast(&j->cv_done);
    }
    pthread_mutex_unlock(&j->mu);
    bz_coder_free(&k);
    return NULL;
}

/* The writer has nothing to write yet (mu held, and held again on return):
 * compress a block itself (no_threads, alone), drive the remote channels
 * (pump), or wait for a local compressor. */
static void idle(job *j, int inline_compress, long *nap_ns)
{
    const bz_compress_opts *o = j->o;
    if (!o->pump && !o->no_threads) {
        pthread_cond_wait(&j->cv_done, &j->mu);
        return;
    }
    pthread_mutex_unlock(&j->mu);
    bz_piece b;
    int h, p = 0;
    if (inline_compress && (h = bz_take(j, &b)) >= 0)
        bz_put(j, h, bz_block_compress(&j->coder, b.data, b.n, b.raw, o->level, bz_out(j, h)));
    else if (o->pump)
        p = o->pump(o->pump_arg, j, o->no_threads); /* without threads, nothing else can move */
    if (p < 0)
        fail(j, 1, "lost a worker", 0);
    pthread_mutex_lock(&j->mu);
    if (o->no_threads || p > 0) {
        *nap_ns = 20000;
        return;
    }
    /* nothing moved: wait for a local block or a short while */
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += *nap_ns;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&j->cv_done, &j->mu, &t);
    if (*nap_ns < 1000000)
        *nap_ns *= 2;
}

/* Sets up j to compress in_fd with o: 0, or -1 if memory is short (the job
 * has failed). */
static int job_init(job *j, int in_fd, const bz_compress_opts *o)
{
    memset(j, 0, sizeof *j);
    j->fd = in_fd;
    struct stat st;
    off_t at = lseek(in_fd, 0, SEEK_CUR);
    if (!fstat(in_fd, &st) && S_ISREG(st.st_mode) && at >= 0 && st.st_size > at)
        j->size = (uint64_t)(st.st_size - at);
    j->o = o;
    j->ns = o->queue > 0 ? o->queue : o->threads * 2 + o->nremote * 4 + 2;
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv_free, NULL);
    pthread_cond_init(&j->cv_todo, NULL);
    pthread_cond_init(&j->cv_done, NULL);
    j->s = calloc((size_t)j->ns, sizeof *j->s);
    j->spare = calloc((size_t)j->ns, sizeof *j->spare);
    j->cap = (size_t)1 << 20;
    j->buf = malloc(j->cap);
    if (!j->s || !j->spare || !j->buf || bz_cutter_init(&j->cut, o->level)) {
        fail(j, 1, "out of memory", 0);
        return -1;
    }
    return 0;
}

/* Releases everything job_init set up. */
static void job_free(job *j)
{
    for (int i = 0; j->s && i < j->ns; i++) {
        free(j->s[i].data);
        bz_block_free(&j->s[i].blk);
    }
    for (int i = 0; i < j->nspare; i++)
        free(j->spare[i]);
    free(j->spare);
    free(j->s);
    free(j->buf);
    bz_cutter_free(&j->cut);
    bz_coder_free(&j->coder);
    pthread_cond_destroy(&j->cv_free);
    pthread_cond_destroy(&j->cv_todo);
    pthread_cond_destroy(&j->cv_done);
    pthread_mutex_destroy(&j->mu);
}

/* The threads of a job: the reader, then proxies and local compressors. */
typedef struct crew {
    pthread_t rd, *cw;
    worker *wk;
    int have_reader, nthreads;
} crew;

/* Starts the reader (unless no_threads), then `total` threads: the proxies
 * first (every worker needs its proxy; fewer local compressors is fine).
 * Returns -1 if the reader could not start (the job has failed), else 0. */
static int crew_start(job *j, crew *c, int total)
{
    const bz_compress_opts *o = j->o;
    if (!o->no_threads && pthread_create(&c->rd, NULL, reader, j)) {
        fail(j, 1, "cannot start a thread", 0);
        return -1;
    }
    c->have_reader = !o->no_threads;
    int nproxy = total - (o->no_threads ? 0 : o->threads);
    for (; c->nthreads < total; c->nthreads++) {
        worker *wk = &c->wk[c->nthreads];
        wk->j = j;
        wk->proxy = c->nthreads < nproxy ? c->nthreads : -1;
        if (pthread_create(&c->cw[c->nthreads], NULL, wk->proxy >= 0 ? proxy : compressor, wk)) {
            if (c->nthreads <= nproxy)
                fail(j, 1, "cannot start a thread", 0);
            break;
        }
    }
    return 0;
}

static void crew_join(crew *c)
{
    if (c->have_reader)
        pthread_join(c->rd, NULL);
    for (int i = 0; i < c->nthreads; i++)
        pthread_join(c->cw[i], NULL);
}

/* A block came back with rc != 0: the job fails, saying why. */
static void block_failed(job *j, int rc)
{
    const char *why = rc == BZ_BLOCK_LOST ? "lost a worker"
                      : rc == BZ_BLOCK_UNREADABLE
                          ? "a worker could not read its block from the input file (--shared-input needs "
                            "the same file at the same path on every rank)"
                          : "libbz2 failed to compress a block";
    fail(j, rc == BZ_BLOCK_LOST || rc == BZ_BLOCK_UNREADABLE ? 1 : 3, why, 0);
}

/* The compressed block to write next (mu held), or NULL. */
static slot *next_done(job *j)
{
    for (int i = 0; i < j->ns; i++)
        if (j->s[i].state == S_DONE && j->s[i].seq == j->nwritten)
            return &j->s[i];
    return NULL;
}

/* The writing thread: writes the blocks in order as they are done, until
 * every block is written or the job stops; *out_bits counts the bits. */
static void write_blocks(job *j, bz_writer *w, uint64_t *out_bits)
{
    const bz_compress_opts *o = j->o;
    int inline_compress = o->no_threads && (o->threads > 0 || !o->pump);
    long nap_ns = 20000;
    pthread_mutex_lock(&j->mu);
    while (!j->stop) {
        slot *s = next_done(j);
        if (!s) {
            if (j->eof && j->nwritten == j->nread)
                break;
            idle(j, inline_compress, &nap_ns);
            continue;
        }
        pthread_mutex_unlock(&j->mu);
        if (s->rc) {
            block_failed(j, s->rc);
            pthread_mutex_lock(&j->mu);
            break;
        }
        bz_writer_block(w, &s->blk);
        *out_bits += s->blk.nbits;
        if (w->error) {
            fail(j, 1, "write error", errno);
            pthread_mutex_lock(&j->mu);
            break;
        }
        if (o->progress)
            o->progress(o->progress_arg, s->in_end, *out_bits / 8);
        pthread_mutex_lock(&j->mu);
        s->state = S_FREE;
        j->nwritten++;
        pthread_cond_signal(&j->cv_free);
        if (o->pump) { /* between writes too: a run of writes must not keep workers waiting */
            pthread_mutex_unlock(&j->mu);
            if (o->pump(o->pump_arg, j, 0) < 0)
                fail(j, 1, "lost a worker", 0);
            pthread_mutex_lock(&j->mu);
        }
    }
    pthread_mutex_unlock(&j->mu);
}

int bz_compress(int in_fd, FILE *out, const bz_compress_opts *o, uint64_t *in_total, uint64_t *out_total,
                char *msg, size_t msglen)
{
    job j;
    /* threads compressing here, plus proxies of remote workers */
    int total = o->no_threads ? 0 : o->threads + (o->proxy ? o->nproxy : 0);
    crew c = {.cw = calloc((size_t)total + 1, sizeof *c.cw), .wk = calloc((size_t)total + 1, sizeof *c.wk)};
    uint64_t out_bits = 32;
    bz_writer w;

    if (job_init(&j, in_fd, o) == 0 && (!c.cw || !c.wk))
        fail(&j, 1, "out of memory", 0);
    if (j.err || crew_start(&j, &c, total))
        goto out;
    bz_writer_begin(&w, out, o->level);
    write_blocks(&j, &w, &out_bits);
    if (!j.err) {
        if (bz_writer_end(&w) || fflush(out))
            fail(&j, 1, "write error", errno);
        out_bits += 80;
    }
    /* after a failure, blocks may still be out with the pump's workers: take
       them back before their slots go (a receive into freed memory) */
    while (o->pump && o->pump(o->pump_arg, &j, 1) > 0)
        ;
out:
    crew_join(&c);
    if (in_total)
        *in_total = j.in_bytes;
    if (out_total)
        *out_total = (out_bits + 7) / 8;
    job_free(&j);
    free(c.cw);
    free(c.wk);
    if (j.err && msg)
        snprintf(msg, msglen, "%s", j.msg);
    return j.err;
}
