/* Parallel compression inside one process: see bzpar.h. */
#define _POSIX_C_SOURCE 200809L
#include "bzpar.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bzblock.h"

enum { S_FREE = 0, S_FILLED, S_BUSY, S_DONE };

typedef struct slot {
    int state;
    uint64_t seq;
    unsigned char *rle; /* the block's RLE1 bytes (buffer swapped with the cutter's) */
    size_t n;
    uint64_t in_end;    /* input bytes consumed when the block closed */
    bz_block blk;
    int rc;
} slot;

typedef struct job {
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
    uint64_t in_bytes;
} job;

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
static int emit(job *j)
{
    pthread_mutex_lock(&j->mu);
    slot *s = NULL;
    while (!j->stop) {
        for (int i = 0; i < j->ns && !s; i++)
            if (j->s[i].state == S_FREE)
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
    pthread_mutex_unlock(&j->mu);
    if (!s->rle) {
        s->rle = malloc((size_t)j->cut.max + 8);
        if (!s->rle) {
            pthread_mutex_lock(&j->mu);
            s->state = S_FREE;
            pthread_mutex_unlock(&j->mu);
            fail(j, 1, "out of memory", 0);
            return -1;
        }
    }
    unsigned char *t = s->rle;
    s->rle = j->cut.out;
    j->cut.out = t;
    s->n = j->cut.n;
    s->in_end = j->in_bytes;
    pthread_mutex_lock(&j->mu);
    s->seq = j->nread++;
    s->state = S_FILLED;
    pthread_cond_signal(&j->cv_todo);
    pthread_mutex_unlock(&j->mu);
    return 0;
}

static void *reader(void *arg)
{
    job *j = arg;
    size_t cap = (size_t)1 << 20;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        fail(j, 1, "out of memory", 0);
        return NULL;
    }
    for (;;) {
        ssize_t r = read(j->fd, buf, cap);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            fail(j, 1, "read error", errno);
            goto done;
        }
        if (r == 0)
            break;
        size_t off = 0;
        while (off < (size_t)r) {
            int full;
            size_t k = bz_cutter_feed(&j->cut, buf + off, (size_t)r - off, &full);
            off += k;
            j->in_bytes += k;
            if (full) {
                if (emit(j))
                    goto done;
                bz_cutter_next(&j->cut);
            }
        }
        pthread_mutex_lock(&j->mu);
        int stop = j->stop;
        pthread_mutex_unlock(&j->mu);
        if (stop)
            goto done;
    }
    bz_cutter_finish(&j->cut);
    if (j->cut.n > 0 && emit(j))
        goto done;
    pthread_mutex_lock(&j->mu);
    j->eof = 1;
    pthread_cond_broadcast(&j->cv_todo);
    pthread_cond_broadcast(&j->cv_done);
    pthread_mutex_unlock(&j->mu);
done:
    free(buf);
    return NULL;
}

typedef struct worker {
    job *j;
    int remote; /* -1: compress here, else index of the remote compressor */
} worker;

static void *compressor(void *arg)
{
    worker *wk = arg;
    job *j = wk->j;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        slot *s = NULL;
        for (int i = 0; i < j->ns; i++)
            if (j->s[i].state == S_FILLED && (!s || j->s[i].seq < s->seq))
                s = &j->s[i];
        if (!s) {
            if (j->stop || j->eof)
                break;
            pthread_cond_wait(&j->cv_todo, &j->mu);
            continue;
        }
        s->state = S_BUSY;
        pthread_mutex_unlock(&j->mu);
        int rc = wk->remote < 0 ? bz_block_compress(s->rle, s->n, j->o->level, &s->blk)
                                : j->o->remote(j->o->remote_arg[wk->remote], s->rle, s->n, j->o->level, &s->blk);
        pthread_mutex_lock(&j->mu);
        s->rc = rc;
        s->state = S_DONE;
        pthread_cond_broadcast(&j->cv_done);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

int bz_compress(int in_fd, FILE *out, const bz_compress_opts *o, uint64_t *in_total, uint64_t *out_total,
                char *msg, size_t msglen)
{
    job j;
    pthread_t rd, *cw = NULL;
    worker *wk = NULL;
    int nthreads = 0, have_reader = 0, total = o->threads + (o->remote ? o->nremote : 0);
    uint64_t out_bits = 32;
    bz_writer w;

    memset(&j, 0, sizeof j);
    j.fd = in_fd;
    j.o = o;
    j.ns = total * 2 + 2;
    pthread_mutex_init(&j.mu, NULL);
    pthread_cond_init(&j.cv_free, NULL);
    pthread_cond_init(&j.cv_todo, NULL);
    pthread_cond_init(&j.cv_done, NULL);
    j.s = calloc((size_t)j.ns, sizeof *j.s);
    cw = calloc((size_t)total, sizeof *cw);
    wk = calloc((size_t)total, sizeof *wk);
    if (!j.s || !cw || !wk || bz_cutter_init(&j.cut, o->level)) {
        fail(&j, 1, "out of memory", 0);
        goto out;
    }
    if (pthread_create(&rd, NULL, reader, &j)) {
        fail(&j, 1, "cannot start a thread", 0);
        goto out;
    }
    have_reader = 1;
    for (; nthreads < total; nthreads++) {
        wk[nthreads].j = &j;
        wk[nthreads].remote = nthreads < o->threads ? -1 : nthreads - o->threads;
        if (pthread_create(&cw[nthreads], NULL, compressor, &wk[nthreads])) {
            if (nthreads == 0)
                fail(&j, 1, "cannot start a thread", 0);
            break; /* fewer threads is fine */
        }
    }

    bz_writer_begin(&w, out, o->level);
    pthread_mutex_lock(&j.mu);
    for (;;) {
        slot *s = NULL;
        for (int i = 0; i < j.ns && !s; i++)
            if (j.s[i].state == S_DONE && j.s[i].seq == j.nwritten)
                s = &j.s[i];
        if (!s) {
            if (j.stop || (j.eof && j.nwritten == j.nread))
                break;
            pthread_cond_wait(&j.cv_done, &j.mu);
            continue;
        }
        pthread_mutex_unlock(&j.mu);
        if (s->rc) {
            fail(&j, s->rc == -200 ? 1 : 3, s->rc == -200 ? "lost a worker" : "libbz2 failed to compress a block", 0);
            pthread_mutex_lock(&j.mu);
            break;
        }
        bz_writer_block(&w, &s->blk);
        out_bits += s->blk.nbits;
        if (w.error) {
            fail(&j, 1, "write error", errno);
            pthread_mutex_lock(&j.mu);
            break;
        }
        if (o->progress)
            o->progress(o->progress_arg, s->in_end, out_bits / 8);
        pthread_mutex_lock(&j.mu);
        s->state = S_FREE;
        j.nwritten++;
        pthread_cond_signal(&j.cv_free);
    }
    pthread_mutex_unlock(&j.mu);
    if (!j.err) {
        if (bz_writer_end(&w) || fflush(out))
            fail(&j, 1, "write error", errno);
        out_bits += 80;
    }
out:
    if (have_reader)
        pthread_join(rd, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(cw[i], NULL);
    if (in_total)
        *in_total = j.in_bytes;
    if (out_total)
        *out_total = (out_bits + 7) / 8;
    for (int i = 0; j.s && i < j.ns; i++) {
        free(j.s[i].rle);
        bz_block_free(&j.s[i].blk);
    }
    free(j.s);
    free(cw);
    free(wk);
    bz_cutter_free(&j.cut);
    pthread_cond_destroy(&j.cv_free);
    pthread_cond_destroy(&j.cv_todo);
    pthread_cond_destroy(&j.cv_done);
    pthread_mutex_destroy(&j.mu);
    if (j.err && msg)
        snprintf(msg, msglen, "%s", j.msg);
    return j.err;
}
