/*
 * Working buffers kept by a communicator between calls: see zmpi_scratch in
 * core.h. A request takes the smallest idle kept buffer that fits; failing
 * that it replaces an idle buffer that is too small, or takes a free slot,
 * as long as the communicator's total stays within cfg.scratch_keep;
 * otherwise it is a plain malloc that zmpi_scratch_put frees.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"

static int pick(zmpi_scratch *s, size_t n, size_t limit, void **out)
{
    int fit = -1, idle = -1, empty = -1;
    for (int i = 0; i < ZMPI_SCRATCH_SLOTS; i++) {
        if (s->busy[i])
            continue;
        if (!s->ptr[i]) {
            if (empty < 0)
                empty = i;
        } else if (s->cap[i] >= n) {
            if (fit < 0 || s->cap[i] < s->cap[fit])
                fit = i;
        } else if (idle < 0 || s->cap[i] > s->cap[idle]) {
            idle = i; /* the largest one too small: growing it adds the least */
        }
    }
    if (fit < 0) {
        int i = idle >= 0 ? idle : empty;
        size_t old = i >= 0 ? s->cap[i] : 0;
        if (i < 0 || n > limit || s->kept - old > limit - n)
            return 0; /* not kept: the caller mallocs */
        void *p = malloc(n);
        if (!p)
            return -1;
        free(s->ptr[i]);
        s->ptr[i] = p;
        s->cap[i] = n;
        s->kept = s->kept - old + n;
        fit = i;
    }
    s->busy[fit] = 1;
    *out = s->ptr[fit];
    return 1;
}

int zmpi_scratch_get(const zmpi_call *c, size_t n, void *out_ptr)
{
    void *p = NULL;
    int got = 0;
    if (n >= ZMPI_SCRATCH_MIN && c->st && c->st->cfg.scratch_keep > 0) {
        zmpi_scratch *s = &c->st->scratch;
        pthread_mutex_lock(&s->lock);
        got = pick(s, n, c->st->cfg.scratch_keep, &p);
        pthread_mutex_unlock(&s->lock);
    }
    if (got == 0)
        return zmpi_alloc(n, out_ptr);
    memcpy(out_ptr, &p, sizeof p);
    return got > 0 ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

void zmpi_scratch_put(const zmpi_call *c, void *p)
{
    if (!p)
        return;
    if (c->st) {
        zmpi_scratch *s = &c->st->scratch;
        pthread_mutex_lock(&s->lock);
        for (int i = 0; i < ZMPI_SCRATCH_SLOTS; i++)
            if (s->ptr[i] == p && s->busy[i]) {
                s->busy[i] = 0;
                pthread_mutex_unlock(&s->lock);
                return;
            }
        pthread_mutex_unlock(&s->lock);
    }
    free(p);
}

void zmpi_scratch_release(zmpi_scratch *s)
{
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < ZMPI_SCRATCH_SLOTS; i++)
        if (s->ptr[i] && !s->busy[i]) {
            free(s->ptr[i]);
            s->kept -= s->cap[i];
            s->ptr[i] = NULL;
            s->cap[i] = 0;
        }
    pthread_mutex_unlock(&s->lock);
}
