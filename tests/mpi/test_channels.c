/*
 * Inter-step codecs in the MPI layer (xorlzc-inter, trunc-inter,
 * dp2sp-inter): point-to-point channels (communicator, peer, tag) and
 * Alltoall(v) channels (communicator, peer), at any number of ranks.
 *
 * A field that evolves slowly from step to step is sent every step; each
 * received message must be exactly what the codec promises (xorlzc-inter:
 * bit-identical; trunc-inter: bit-identical to trunc's reconstruction;
 * dp2sp-inter: (double)(float)x), and from the second step on the channel
 * must code it in fewer bytes than the first (the inter-step gain). Also:
 * the reset rule (a size change, a message below ZMPI_MIN_BYTES in between),
 * two receives of one channel in flight completed in either order, a
 * wildcard source, a channel out of step (a message taken by a plain
 * MPI_Recv) reported as an error and never decoded wrong, the memory bound
 * (ZMPI_CHANNEL_MEM: the intra-step variant), the statistics, and the other
 * collectives (the intra-step variant).
 */
#include "mpitest.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define N 20000 /* doubles per message */
#define STEPS 5
#define TAG 21

typedef struct env {
    mt_state *t;
    MPI_Comm comm;
    int rank, size, left, right;
    double *base;
} env;

/* The field of `who` at step s: a real field, drifting slowly. */
static void field(const env *e, int who, int s, double *x, int n)
{
    for (int i = 0; i < n; i++)
        x[i] = e->base[(i + (size_t)who * 977) % N] * (1.0 + 1e-9 * s);
}

/* What the receiver must get for x under codec (the codec's own round trip). */
static void expect(zmpi_codec codec, const double *x, double *want, int n)
{
    zmpi_ctx *c = zmpi_ctx_create();
    zmpi_codec intra = codec == ZMPI_CODEC_TRUNC_INTER ? ZMPI_CODEC_TRUNC
                       : codec == ZMPI_CODEC_DP2SP_INTER ? ZMPI_CODEC_DP2SP
                                                         : ZMPI_CODEC_XORLZC;
    zmpi_ctx_set_codec(c, intra);
    size_t cap = zmpi_max_compressed_size(c, (size_t)n, ZMPI_DOUBLE);
    void *z = mt_xmalloc(cap);
    ptrdiff_t l = zmpi_compress(c, x, (size_t)n, ZMPI_DOUBLE, z, cap);
    if (l < 0 || zmpi_decompress(c, z, (size_t)l, want, (size_t)n * sizeof *want) < 0)
        memcpy(want, x, (size_t)n * sizeof *want);
    free(z);
    zmpi_ctx_free(c);
}

static MPI_Comm configured(const env *e, zmpi_codec codec, size_t min_bytes, size_t channel_mem)
{
    MPI_Comm c;
    ZMPI_Config cfg;
    MPI_Comm_dup(e->comm, &c);
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = codec;
    cfg.eb_mode = ZMPI_EB_NONE;
    cfg.min_bytes = min_bytes;
    cfg.channel_mem = channel_mem;
    ZMPI_Comm_set_config(c, &cfg);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
}

/* Ring exchange over STEPS steps (plus a size change and a small message
 * in between): every message as the codec promises; later steps smaller. */
static void ring(env *e, zmpi_codec codec, int nonblocking)
{
    MPI_Comm c = configured(e, codec, 1024, (size_t)64 << 20);
    double *x = mt_xmalloc(N * sizeof *x), *y = mt_xmalloc(N * sizeof *y), *want = mt_xmalloc(N * sizeof *want);
    unsigned long long first = 0, later = 0;
    for (int s = 0; s < STEPS + 3; s++) {
        /* a size change, then a small message, then the size before it: the
         * small one reset the channel at both ends */
        int n = s == STEPS ? N / 2 : s == STEPS + 1 ? 10 : s == STEPS + 2 ? N / 2 : N;
        ZMPI_Stats s0 = mt_stats(c), s1;
        field(e, e->rank, s, x, n);
        if (nonblocking) {
            MPI_Request r[2];
            MT_CHECK_RC(e->t, ZMPI_Irecv(y, N, MPI_DOUBLE, e->left, TAG, c, &r[0]), "Irecv");
            MT_CHECK_RC(e->t, ZMPI_Isend(x, n, MPI_DOUBLE, e->right, TAG, c, &r[1]), "Isend");
            MT_CHECK_RC(e->t, ZMPI_Waitall(2, r, MPI_STATUSES_IGNORE), "Waitall");
        } else {
            MT_CHECK_RC(e->t, ZMPI_Sendrecv(x, n, MPI_DOUBLE, e->right, TAG, y, N, MPI_DOUBLE, e->left, TAG, c,
                                            MPI_STATUS_IGNORE), "Sendrecv");
        }
        s1 = mt_stats(c);
        field(e, e->left, s, x, n);
        if ((size_t)n * sizeof *x >= 1024)
            expect(codec, x, want, n);
        else /* below ZMPI_MIN_BYTES: raw */
            memcpy(want, x, (size_t)n * sizeof *x);
        MT_CHECK(e->t, memcmp(y, want, (size_t)n * sizeof *y) == 0, "%s step %d: the message is not the codec's",
                 zmpi_codec_name(codec), s);
        if (s == 0)
            first = s1.bytes_sent - s0.bytes_sent;
        else if (s < STEPS)
            later = s1.bytes_sent - s0.bytes_sent;
        if (s > 0 && s < STEPS)
            MT_CHECK(e->t, later < first, "%s step %d: %llu bytes, not fewer than the first step's %llu",
                     zmpi_codec_name(codec), s, later, first);
    }
    ZMPI_Stats st = mt_stats(c);
    MT_CHECK(e->t, st.channel_bytes > 0, "%s: no channel memory reported", zmpi_codec_name(codec));
    free(x);
    free(y);
    free(want);
    MPI_Comm_free(&c);
}

/* Two receives of one channel in flight, completed newest first. */
static void reversed(env *e)
{
    MPI_Comm c = configured(e, ZMPI_CODEC_XORLZC_INTER, 1024, (size_t)64 << 20);
    double *x = mt_xmalloc(N * sizeof *x), *y = mt_xmalloc(2 * N * sizeof *y), *want = mt_xmalloc(N * sizeof *want);
    for (int round = 0; round < 2; round++) {
        MPI_Request r[4];
        for (int k = 0; k < 2; k++)
            MT_CHECK_RC(e->t, ZMPI_Irecv(y + k * N, N, MPI_DOUBLE, e->left, TAG, c, &r[k]), "Irecv");
        for (int k = 0; k < 2; k++) {
            field(e, e->rank, 2 * round + k, x, N);
            MT_CHECK_RC(e->t, ZMPI_Send(x, N, MPI_DOUBLE, e->right, TAG, c), "Send");
        }
        if (round == 0) { /* newest first, one by one */
            MT_CHECK_RC(e->t, ZMPI_Wait(&r[1], MPI_STATUS_IGNORE), "Wait second");
            MT_CHECK_RC(e->t, ZMPI_Wait(&r[0], MPI_STATUS_IGNORE), "Wait first");
        } else { /* newest first in one Waitall */
            r[2] = r[1];
            r[3] = r[0];
            MT_CHECK_RC(e->t, ZMPI_Waitall(2, r + 2, MPI_STATUSES_IGNORE), "Waitall");
        }
        for (int k = 0; k < 2; k++) {
            field(e, e->left, 2 * round + k, want, N);
            MT_CHECK(e->t, memcmp(y + k * N, want, N * sizeof *want) == 0, "round %d: message %d wrong", round, k);
        }
    }
    free(x);
    free(y);
    free(want);
    MPI_Comm_free(&c);
}

/* Rank 0 receives every other rank's messages with MPI_ANY_SOURCE (the
 * sources' steps interleave in any order; each source's are in order). */
static void wildcard(env *e)
{
    MPI_Comm c = configured(e, ZMPI_CODEC_XORLZC_INTER, 1024, (size_t)64 << 20);
    double *x = mt_xmalloc(N * sizeof *x), *want = mt_xmalloc(N * sizeof *want);
    int *next = calloc((size_t)e->size, sizeof *next);
    for (int s = 0; s < 3; s++) {
        if (e->rank != 0) {
            field(e, e->rank, s, x, N);
            MT_CHECK_RC(e->t, ZMPI_Send(x, N, MPI_DOUBLE, 0, TAG, c), "Send");
            continue;
        }
        for (int k = 1; k < e->size; k++) {
            MPI_Status st;
            MT_CHECK_RC(e->t, ZMPI_Recv(x, N, MPI_DOUBLE, MPI_ANY_SOURCE, TAG, c, &st), "Recv any");
            field(e, st.MPI_SOURCE, next[st.MPI_SOURCE], want, N);
            MT_CHECK(e->t, memcmp(x, want, N * sizeof *x) == 0, "message %d from %d wrong", next[st.MPI_SOURCE],
                     st.MPI_SOURCE);
            next[st.MPI_SOURCE]++;
        }
    }
    free(next);
    free(x);
    free(want);
    MPI_Comm_free(&c);
}

/* A message of the channel taken by a plain receive: the next one is an
 * error (never a wrong result); a size change (a reset) recovers. */
static void out_of_step(env *e)
{
    MPI_Comm c = configured(e, ZMPI_CODEC_XORLZC_INTER, 1024, (size_t)64 << 20);
    double *x = mt_xmalloc(N * sizeof *x), *y = mt_xmalloc(N * sizeof *y);
    int n[4] = {N, N, N, N - 1}, rc[4];
    for (int s = 0; s < 4; s++) {
        field(e, e->rank, s, x, n[s]);
        MPI_Request r;
        if (s == 1) /* the plain receive takes the stream's bytes */
            MT_CHECK_RC(e->t, MPI_Irecv(y, N * (int)sizeof *y, MPI_BYTE, e->left, TAG, c, &r), "plain Irecv");
        else
            MT_CHECK_RC(e->t, ZMPI_Irecv(y, N, MPI_DOUBLE, e->left, TAG, c, &r), "Irecv");
        MT_CHECK_RC(e->t, ZMPI_Send(x, n[s], MPI_DOUBLE, e->right, TAG, c), "Send");
        rc[s] = s == 1 ? MPI_Wait(&r, MPI_STATUS_IGNORE) : ZMPI_Wait(&r, MPI_STATUS_IGNORE);
        if (s != 1) {
            field(e, e->left, s, x, n[s]);
            if (rc[s] == MPI_SUCCESS)
                MT_CHECK(e->t, memcmp(x, y, (size_t)n[s] * sizeof *x) == 0, "step %d decoded wrong", s);
        }
    }
    int cls = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    ZMPI_Error_class(rc[2], &cls);
    MPI_Error_string(rc[2], msg, &len);
    MT_CHECK(e->t, rc[0] == MPI_SUCCESS && rc[3] == MPI_SUCCESS, "steps 0 / 3: %d %d", rc[0], rc[3]);
    MT_CHECK(e->t, rc[2] != MPI_SUCCESS && cls == MPI_ERR_OTHER && strstr(msg, "out of step"),
             "a channel out of step was not reported: rc %d class %d '%s'", rc[2], cls, msg);
    free(x);
    free(y);
    MPI_Comm_free(&c);
}

/* ZMPI_CHANNEL_MEM below one message: the intra-step variant, no history. */
static void memory_bound(env *e)
{
    MPI_Comm c = configured(e, ZMPI_CODEC_XORLZC_INTER, 1024, 1000);
    double *x = mt_xmalloc(N * sizeof *x), *y = mt_xmalloc(N * sizeof *y);
    for (int s = 0; s < 3; s++) {
        field(e, e->rank, s, x, N);
        MT_CHECK_RC(e->t, ZMPI_Sendrecv(x, N, MPI_DOUBLE, e->right, TAG, y, N, MPI_DOUBLE, e->left, TAG, c,
                                        MPI_STATUS_IGNORE), "Sendrecv");
        field(e, e->left, s, x, N);
        MT_CHECK(e->t, memcmp(x, y, N * sizeof *x) == 0, "step %d wrong", s);
    }
    ZMPI_Stats st = mt_stats(c);
    MT_CHECK(e->t, st.channel_bytes == 0, "%llu bytes of history beyond ZMPI_CHANNEL_MEM", st.channel_bytes);
    MT_CHECK(e->t, e->size == 1 || st.bytes_sent < st.bytes_raw, "the intra-step variant did not compress");
    free(x);
    free(y);
    MPI_Comm_free(&c);
}

/* Alltoall(v): the block for each peer coded against the previous one. */
static void alltoall(env *e, zmpi_codec codec)
{
    MPI_Comm c = configured(e, codec, 1024, (size_t)64 << 20);
    int m = N / 4, sz = e->size;
    double *x = mt_xmalloc((size_t)sz * m * sizeof *x), *y = mt_xmalloc((size_t)sz * m * sizeof *y);
    double *want = mt_xmalloc((size_t)m * sizeof *want);
    unsigned long long first = 0, later = 0;
    for (int s = 0; s < STEPS; s++) {
        for (int j = 0; j < sz; j++)
            field(e, e->rank * 131 + j, s, x + (size_t)j * m, m);
        ZMPI_Stats s0 = mt_stats(c);
        MT_CHECK_RC(e->t, ZMPI_Alltoall(x, m, MPI_DOUBLE, y, m, MPI_DOUBLE, c), "Alltoall");
        ZMPI_Stats s1 = mt_stats(c);
        for (int j = 0; j < sz; j++) {
            field(e, j * 131 + e->rank, s, x + (size_t)j * m, m); /* what j sent here */
            if (j == e->rank)
                memcpy(want, x + (size_t)j * m, (size_t)m * sizeof *want); /* own block: copied */
            else
                expect(codec, x + (size_t)j * m, want, m);
            MT_CHECK(e->t, memcmp(y + (size_t)j * m, want, (size_t)m * sizeof *want) == 0,
                     "%s step %d: block from %d wrong", zmpi_codec_name(codec), s, j);
        }
        if (s == 0)
            first = s1.bytes_sent - s0.bytes_sent;
        else
            later = s1.bytes_sent - s0.bytes_sent;
        if (s > 0 && sz > 1)
            MT_CHECK(e->t, later < first, "%s step %d: %llu bytes, not fewer than %llu", zmpi_codec_name(codec), s,
                     later, first);
    }
    free(x);
    free(y);
    free(want);
    MPI_Comm_free(&c);
}

/* Bcast with an inter-step codec: the intra-step variant, exact. */
static void bcast(env *e)
{
    MPI_Comm c = configured(e, ZMPI_CODEC_XORLZC_INTER, 1024, (size_t)64 << 20);
    double *x = mt_xmalloc(N * sizeof *x), *want = mt_xmalloc(N * sizeof *want);
    for (int s = 0; s < 2; s++) {
        field(e, 0, s, x, N);
        if (e->rank != 0)
            memset(x, 0, N * sizeof *x);
        MT_CHECK_RC(e->t, ZMPI_Bcast(x, N, MPI_DOUBLE, 0, c), "Bcast");
        field(e, 0, s, want, N);
        MT_CHECK(e->t, memcmp(x, want, N * sizeof *x) == 0, "Bcast step %d wrong", s);
    }
    free(x);
    free(want);
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    mt_state t;
    env e;
    mt_init(&t, &argc, &argv, "test_channels");
    memset(&e, 0, sizeof e);
    e.t = &t;
    e.comm = MPI_COMM_WORLD;
    e.rank = t.rank;
    e.size = t.size;
    e.left = (t.rank - 1 + t.size) % t.size;
    e.right = (t.rank + 1) % t.size;
    e.base = mt_xmalloc(N * sizeof *e.base);
    mt_fill_field(e.base, N, MPI_DOUBLE, 0);
    const zmpi_codec codecs[] = {ZMPI_CODEC_XORLZC_INTER, ZMPI_CODEC_TRUNC_INTER, ZMPI_CODEC_DP2SP_INTER};
    for (int k = 0; k < 3; k++) {
        ring(&e, codecs[k], k % 2);
        alltoall(&e, codecs[k]);
    }
    reversed(&e);
    wildcard(&e);
    out_of_step(&e);
    memory_bound(&e);
    bcast(&e);
    free(e.base);
    return mt_finish(&t);
}
