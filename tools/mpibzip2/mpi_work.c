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

int mpibz_remote_compress(void *arg, const unsigned char *rle, size_t n, int level, bz_block *out)
{
    const mpibz_remote *r = arg;
    uint32_t h[4] = {K_BLOCK, (uint32_t)level, (uint32_t)n, 0};
    uint64_t nbits = 0;
    if (send_wait(h, sizeof h, r->rank, r->tag, r->comm) || send_wait(rle, n, r->rank, r->tag, r->comm) ||
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

typedef struct wthread {
    MPI_Comm comm;
    int tag, rc;
} wthread;

static void *serve(void *arg)
{
    wthread *t = arg;
    unsigned char *rle = NULL;
    size_t cap = 0;
    bz_block b = {0};
    for (;;) {
        uint32_t h[4];
        if (recv_wait(h, sizeof h, 0, t->tag, t->comm))
            goto fail;
        if (h[0] == K_QUIT)
            break;
        if (h[0] != K_BLOCK)
            goto fail;
        size_t n = h[2];
        if (n > cap) {
            unsigned char *p = realloc(rle, n);
            if (!p)
                goto fail;
            rle = p;
            cap = n;
        }
        if (recv_wait(rle, n, 0, t->tag, t->comm))
            goto fail;
        int rc = bz_block_compress(rle, n, (int)h[1], &b);
        uint32_t r[4] = {K_RESULT, 0, (uint32_t)rc, rc ? 0 : b.crc};
        uint64_t nbits = b.nbits;
        if (send_wait(r, sizeof r, 0, t->tag, t->comm))
            goto fail;
        if (rc == 0 && (send_wait(&nbits, sizeof nbits, 0, t->tag, t->comm) ||
                        send_wait(b.bits, (size_t)((nbits + 7) / 8), 0, t->tag, t->comm)))
            goto fail;
    }
    t->rc = 0;
    goto out;
fail:
    t->rc = 1;
out:
    free(rle);
    bz_block_free(&b);
    return NULL;
}

int mpibz_thread_counts(MPI_Comm comm, int *counts)
{
    int none = 0;
    return MPI_Gather(&none, 1, MPI_INT, counts, 1, MPI_INT, 0, comm) == MPI_SUCCESS ? 0 : 1;
}

int mpibz_worker(MPI_Comm comm, int threads)
{
    pthread_t *th = calloc((size_t)threads, sizeof *th);
    wthread *w = calloc((size_t)threads, sizeof *w);
    int started = 0, rc = 0;
    if (!th || !w)
        threads = 0; /* still answer rank 0 */
    for (; started < threads; started++) {
        w[started].comm = comm;
        w[started].tag = MPIBZ_TAG + started;
        if (pthread_create(&th[started], NULL, serve, &w[started]))
            break;
    }
    /* rank 0 learns how many threads serve it here (fewer if threads could not start) */
    if (MPI_Gather(&started, 1, MPI_INT, NULL, 0, MPI_INT, 0, comm) != MPI_SUCCESS)
        rc = 1;
    for (int k = 0; k < started; k++) {
        pthread_join(th[k], NULL);
        rc |= w[k].rc;
    }
    free(th);
    free(w);
    return rc;
}
