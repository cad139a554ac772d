/*
 * Compressed point-to-point: ZMPI_Send / Recv / Isend / Irecv / Sendrecv and
 * ZMPI_Wait / Waitall / Test, at any number of ranks (1 rank: messages to
 * itself).
 *
 * Every received element is checked against the bound of its message:
 * |x - x'| <= eb (ABS) or <= rel * (max - min of the sent message) (REL);
 * messages below ZMPI_MIN_BYTES and every fallback (MPI_INT, a vector type,
 * no bound configured, a lossless codec) must arrive byte-identical.
 * Statuses must report the real source and tag and the sender's element count.
 */
#include <float.h>
#include <limits.h>

#include "mpitest.h"

/* GCC >= 11 flags MPI_STATUSES_IGNORE (MPICH: (MPI_Status *)1) passed to a
 * parameter declared as an array (MPI_Waitall has the same warning); the
 * calls are correct. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define MIN_BYTES 16384 /* above the 8 KiB that always travel raw */
#define BIG (1 << 20)

typedef struct env {
    mt_state *t;
    MPI_Comm comm;
    int rank, size, left, right;
    double worst; /* max error / bound over the lossy messages checked (this rank) */
} env;

typedef struct mcfg {
    MPI_Datatype type;
    zmpi_eb_mode mode;
    double eb;
    const char *name;
} mcfg;

static size_t esz(MPI_Datatype type)
{
    return type == MPI_FLOAT ? sizeof(float) : sizeof(double);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "test_p2p: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* Kinds of message content. */
enum { DATA_FIELD = 0, DATA_NOISE = 1, DATA_HOSTILE = 2 };

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

/* The content of message `id` from rank `src`: both ends can regenerate it. */
static void gen(void *buf, size_t n, MPI_Datatype type, int src, int id, int kind)
{
    if (kind == DATA_FIELD) {
        mt_fill_field(buf, n, type, (size_t)src * 131 + (size_t)id * 17);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = mix(((uint64_t)(unsigned)src << 40) ^ ((uint64_t)(unsigned)id << 20) ^ i);
        double v = (double)(h >> 11) / 9007199254740992.0 * 2.0 - 1.0; /* white noise in [-1, 1) */
        if (kind == DATA_HOSTILE) {
            switch (h % 16) {
            case 0: v = NAN; break;
            case 1: v = INFINITY; break;
            case 2: v = -INFINITY; break;
            case 3: v = -0.0; break;
            case 4: v = type == MPI_FLOAT ? FLT_MIN / 8 : DBL_MIN / 8; break; /* denormal */
            case 5: v = type == MPI_FLOAT ? FLT_MAX / 2 : 1e300; break;
            default: break;
            }
        }
        if (type == MPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = v;
    }
}

/* Absolute bound of one message: 0 (exact) below the threshold. */
static double msg_bound(const void *sent, size_t n, const mcfg *m)
{
    if (n * esz(m->type) < MIN_BYTES || m->mode == ZMPI_EB_NONE)
        return 0.0;
    if (m->mode == ZMPI_EB_ABS)
        return m->eb;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(sent, i, m->type);
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    return hi > lo ? m->eb * (hi - lo) : 0.0;
}

/* Checks a received message (status may be NULL when it was ignored). */
static void check_msg(env *e, const char *what, const mcfg *m, const void *got, const MPI_Status *st,
                      int src, int tag, int id, size_t n, int kind)
{
    mt_state *t = e->t;
    if (st) {
        int cnt = -1;
        MPI_Get_count(st, m->type, &cnt);
        MT_CHECK(t, st->MPI_SOURCE == src, "%s %s n=%zu: source %d, expected %d", what, m->name, n,
                 st->MPI_SOURCE, src);
        MT_CHECK(t, st->MPI_TAG == tag, "%s %s n=%zu: tag %d, expected %d", what, m->name, n, st->MPI_TAG,
                 tag);
        MT_CHECK(t, cnt == (int)n, "%s %s n=%zu: status count %d", what, m->name, n, cnt);
    }
    void *ref = xmalloc(n * esz(m->type));
    gen(ref, n, m->type, src, id, kind);
    double eb = msg_bound(ref, n, m), w = 0;
    size_t bad = mt_violations(got, ref, n, m->type, eb, &w);
    MT_CHECK(t, bad == 0, "%s %s n=%zu from %d: %zu elements beyond bound %g (worst %g)", what, m->name, n,
             src, bad, eb, w);
    if (eb > 0 && w / eb > e->worst)
        e->worst = w / eb;
    free(ref);
}

static void set_cfg(env *e, const mcfg *m, zmpi_codec codec)
{
    mt_config(e->comm, codec, m->mode, m->eb, ZMPI_SCOPE_MESSAGE, MIN_BYTES);
}

static const int small_counts[] = {0, 1, 2, 17, 100, 1023, 1024, 3000};
#define NSMALL ((int)(sizeof small_counts / sizeof small_counts[0]))

/* Blocking ring: rank 0 sends first, the others receive first (with one
 * rank: Isend to itself, Recv, Wait). */
static void ring_blocking(env *e, const mcfg *m, int n, int id, int ignore_status)
{
    size_t es = esz(m->type);
    void *sb = xmalloc((size_t)n * es), *rb = xmalloc((size_t)n * es);
    MPI_Status st;
    MPI_Status *stp = ignore_status ? MPI_STATUS_IGNORE : &st;
    int tag = 7 + id % 50;
    gen(sb, (size_t)n, m->type, e->rank, id, DATA_FIELD);
    if (e->size == 1) {
        MPI_Request r;
        MT_CHECK_RC(e->t, ZMPI_Isend(sb, n, m->type, 0, tag, e->comm, &r), "Isend self");
        MT_CHECK_RC(e->t, ZMPI_Recv(rb, n, m->type, 0, tag, e->comm, stp), "Recv self");
        MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait self");
    } else if (e->rank == 0) {
        MT_CHECK_RC(e->t, ZMPI_Send(sb, n, m->type, e->right, tag, e->comm), "Send");
        MT_CHECK_RC(e->t, ZMPI_Recv(rb, n, m->type, e->left, tag, e->comm, stp), "Recv");
    } else {
        MT_CHECK_RC(e->t, ZMPI_Recv(rb, n, m->type, e->left, tag, e->comm, stp), "Recv");
        MT_CHECK_RC(e->t, ZMPI_Send(sb, n, m->type, e->right, tag, e->comm), "Send");
    }
    check_msg(e, "ring Send/Recv", m, rb, ignore_status ? NULL : &st, e->left, tag, id, (size_t)n,
              DATA_FIELD);
    free(sb);
    free(rb);
}

/* Both directions at once: Irecv left/right, Isend right/left, then Waitall,
 * Wait one by one, or a Test loop. */
enum { COMPLETE_WAITALL, COMPLETE_WAIT, COMPLETE_TEST, COMPLETE_WAITALL_IGNORE };
static void ring_nonblocking(env *e, const mcfg *m, int n, int id, int how)
{
    size_t es = esz(m->type);
    void *s0 = xmalloc((size_t)n * es), *s1 = xmalloc((size_t)n * es);
    void *r0 = xmalloc((size_t)n * es), *r1 = xmalloc((size_t)n * es);
    MPI_Request req[4];
    MPI_Status st[4];
    int done[4] = {0, 0, 0, 0};
    gen(s0, (size_t)n, m->type, e->rank, id, DATA_FIELD);
    gen(s1, (size_t)n, m->type, e->rank, id + 1, DATA_FIELD);
    MT_CHECK_RC(e->t, ZMPI_Irecv(r0, n, m->type, e->left, 100, e->comm, &req[0]), "Irecv left");
    MT_CHECK_RC(e->t, ZMPI_Irecv(r1, n, m->type, e->right, 101, e->comm, &req[1]), "Irecv right");
    MT_CHECK_RC(e->t, ZMPI_Isend(s0, n, m->type, e->right, 100, e->comm, &req[2]), "Isend right");
    MT_CHECK_RC(e->t, ZMPI_Isend(s1, n, m->type, e->left, 101, e->comm, &req[3]), "Isend left");
    if (how == COMPLETE_WAITALL) {
        MT_CHECK_RC(e->t, ZMPI_Waitall(4, req, st), "Waitall");
    } else if (how == COMPLETE_WAITALL_IGNORE) {
        MT_CHECK_RC(e->t, ZMPI_Waitall(4, req, MPI_STATUSES_IGNORE), "Waitall ignore");
    } else if (how == COMPLETE_WAIT) {
        for (int i = 3; i >= 0; i--)
            MT_CHECK_RC(e->t, ZMPI_Wait(&req[i], i < 2 ? &st[i] : MPI_STATUS_IGNORE), "Wait");
    } else {
        int left = 4;
        long spins = 0;
        while (left > 0 && spins < 100000000L) {
            for (int i = 0; i < 4; i++) {
                if (done[i])
                    continue;
                int flag = 0;
                int rc = ZMPI_Test(&req[i], &flag, i < 2 ? &st[i] : MPI_STATUS_IGNORE);
                if (rc != MPI_SUCCESS) {
                    MT_CHECK_RC(e->t, rc, "Test");
                    break;
                }
                if (flag) {
                    done[i] = 1;
                    left--;
                }
            }
            spins++;
        }
        MT_CHECK(e->t, left == 0, "Test loop did not complete");
    }
    for (int i = 0; i < 4; i++)
        MT_CHECK(e->t, req[i] == MPI_REQUEST_NULL, "request %d not MPI_REQUEST_NULL after completion", i);
    int ign = how == COMPLETE_WAITALL_IGNORE;
    check_msg(e, "nonblocking from left", m, r0, ign ? NULL : &st[0], e->left, 100, id, (size_t)n,
              DATA_FIELD);
    check_msg(e, "nonblocking from right", m, r1, ign ? NULL : &st[1], e->right, 101, id + 1, (size_t)n,
              DATA_FIELD);
    free(s0);
    free(s1);
    free(r0);
    free(r1);
}

static void ring_sendrecv(env *e, const mcfg *m, int n, int id, int ignore_status)
{
    size_t es = esz(m->type);
    void *sb = xmalloc((size_t)n * es), *rb = xmalloc((size_t)n * es);
    MPI_Status st;
    gen(sb, (size_t)n, m->type, e->rank, id, DATA_FIELD);
    MT_CHECK_RC(e->t,
             ZMPI_Sendrecv(sb, n, m->type, e->right, 33, rb, n, m->type, e->left, 33, e->comm,
                           ignore_status ? MPI_STATUS_IGNORE : &st),
             "Sendrecv");
    check_msg(e, "Sendrecv", m, rb, ignore_status ? NULL : &st, e->left, 33, id, (size_t)n, DATA_FIELD);
    free(sb);
    free(rb);
}

/* The synchronous modes: Irecv from the left posted first, then Issend to
 * the right (Wait), then Ssend to the right while the next Irecv waits. */
static void ring_sync(env *e, const mcfg *m, int n, int id)
{
    size_t es = esz(m->type);
    void *sb = xmalloc((size_t)n * es), *rb = xmalloc((size_t)n * es);
    MPI_Request rr, sr;
    MPI_Status st;
    gen(sb, (size_t)n, m->type, e->rank, id, DATA_FIELD);
    MT_CHECK_RC(e->t, ZMPI_Irecv(rb, n, m->type, e->left, 40, e->comm, &rr), "Irecv for Issend");
    MT_CHECK_RC(e->t, ZMPI_Issend(sb, n, m->type, e->right, 40, e->comm, &sr), "Issend");
    MT_CHECK_RC(e->t, ZMPI_Wait(&sr, MPI_STATUS_IGNORE), "Wait Issend");
    MT_CHECK_RC(e->t, ZMPI_Wait(&rr, &st), "Wait Irecv");
    check_msg(e, "Issend", m, rb, &st, e->left, 40, id, (size_t)n, DATA_FIELD);
    gen(sb, (size_t)n, m->type, e->rank, id + 1, DATA_FIELD);
    MT_CHECK_RC(e->t, ZMPI_Irecv(rb, n, m->type, e->left, 41, e->comm, &rr), "Irecv for Ssend");
    MT_CHECK_RC(e->t, ZMPI_Ssend(sb, n, m->type, e->right, 41, e->comm), "Ssend");
    MT_CHECK_RC(e->t, ZMPI_Wait(&rr, &st), "Wait Irecv");
    check_msg(e, "Ssend", m, rb, &st, e->left, 41, id + 1, (size_t)n, DATA_FIELD);
    free(sb);
    free(rb);
}

/* Rings over the small counts (below and above the threshold), every
 * completion style, float and double, ABS and REL. */
static void test_rings(env *e)
{
    const mcfg cfgs[] = {{MPI_FLOAT, ZMPI_EB_ABS, 1e-3, "float/abs"},
                         {MPI_DOUBLE, ZMPI_EB_ABS, 1e-6, "double/abs"},
                         {MPI_FLOAT, ZMPI_EB_REL, 1e-4, "float/rel"},
                         {MPI_DOUBLE, ZMPI_EB_REL, 1e-3, "double/rel"}};
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        set_cfg(e, &cfgs[k], ZMPI_CODEC_FZL);
        for (int i = 0; i < NSMALL; i++) {
            int n = small_counts[i], id = 10 * i;
            ring_blocking(e, &cfgs[k], n, id, i % 3 == 2);
            ring_nonblocking(e, &cfgs[k], n, id + 2, i % 4);
            ring_sendrecv(e, &cfgs[k], n, id + 4, i % 3 == 1);
            ring_sync(e, &cfgs[k], n, id + 6);
        }
    }
}

/* A large real field (>= 1 Mi elements): bound and compression. Reports the
 * ratio and max error / bound on rank 0 (float ABS and double REL). */
static void test_large(env *e)
{
    const mcfg cfgs[] = {{MPI_FLOAT, ZMPI_EB_ABS, 1e-2, "float/abs"},
                         {MPI_DOUBLE, ZMPI_EB_REL, 1e-4, "double/rel"}};
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        const mcfg *m = &cfgs[k];
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        env e2 = *e;
        e2.comm = c;
        set_cfg(&e2, m, ZMPI_CODEC_FZL);
        e2.worst = 0;
        ring_nonblocking(&e2, m, BIG, 500, COMPLETE_WAITALL);
        ZMPI_Stats s;
        MPI_Barrier(c);
        MT_CHECK_RC(e->t, ZMPI_Comm_get_stats(c, &s), "get_stats");
        MT_CHECK(e->t, s.compressed >= 2 && s.bytes_raw >= 2ull * BIG * esz(m->type),
                 "%s: stats compressed %llu raw %llu", m->name, s.compressed, s.bytes_raw);
        MT_CHECK(e->t, s.bytes_sent < s.bytes_raw, "%s: no compression (%llu of %llu bytes)", m->name,
                 s.bytes_sent, s.bytes_raw);
        unsigned long long loc[2] = {s.bytes_raw, s.bytes_sent}, tot[2];
        double worst = 0;
        MPI_Reduce(loc, tot, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Reduce(&e2.worst, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (e->rank == 0)
            printf("test_p2p np=%d: real field %d x %s eb %g: ratio %.2f, max error / bound %.4f\n", e->size,
                   BIG, m->name, m->eb, tot[1] ? (double)tot[0] / (double)tot[1] : 0.0, worst);
        MPI_Comm_free(&c);
    }
}

/* Receiver posts more than the sender sends: status has the sender's count,
 * elements past it are untouched. */
static void test_larger_recv(env *e)
{
    const mcfg m = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-5, "double/abs"};
    set_cfg(e, &m, ZMPI_CODEC_FZL);
    const int sends[] = {0, 1, 17, 3000, 40000};
    for (int i = 0; i < 5; i++) {
        int n = sends[i], cap = i == 4 ? (1 << 16) : n + 100;
        double *sb = xmalloc((size_t)n * 8), *rb = xmalloc((size_t)cap * 8);
        for (int j = 0; j < cap; j++)
            rb[j] = -12345.0;
        gen(sb, (size_t)n, MPI_DOUBLE, e->rank, 600 + i, DATA_FIELD);
        MPI_Request r;
        MPI_Status st;
        MT_CHECK_RC(e->t, ZMPI_Isend(sb, n, MPI_DOUBLE, e->right, 5, e->comm, &r), "Isend");
        if (i % 2)
            MT_CHECK_RC(e->t, ZMPI_Recv(rb, cap, MPI_DOUBLE, e->left, 5, e->comm, &st), "Recv larger");
        else {
            MPI_Request rr;
            MT_CHECK_RC(e->t, ZMPI_Irecv(rb, cap, MPI_DOUBLE, e->left, 5, e->comm, &rr), "Irecv larger");
            MT_CHECK_RC(e->t, ZMPI_Wait(&rr, &st), "Wait larger");
        }
        MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait");
        check_msg(e, "larger receive", &m, rb, &st, e->left, 5, 600 + i, (size_t)n, DATA_FIELD);
        int untouched = 1;
        for (int j = n; j < cap; j++)
            untouched &= rb[j] == -12345.0;
        MT_CHECK(e->t, untouched, "larger receive n=%d: elements past the message were written", n);
        free(sb);
        free(rb);
    }
}

/* Every rank sends to rank 0 with its own tag and count; rank 0 receives
 * with MPI_ANY_SOURCE / MPI_ANY_TAG (blocking, then nonblocking). */
static void test_any(env *e)
{
    const mcfg m = {MPI_FLOAT, ZMPI_EB_REL, 1e-3, "float/rel"};
    set_cfg(e, &m, ZMPI_CODEC_FZL);
    const int counts[] = {3000, 5, 20000, 0, 1, 5000, 17, 9000};
    int maxn = 20000;
    for (int round = 0; round < 2; round++) {
        int n = counts[(e->rank + round) % 8], tag = 1000 + e->rank + 10 * round;
        float *sb = xmalloc((size_t)n * 4);
        gen(sb, (size_t)n, MPI_FLOAT, e->rank, 700 + round, DATA_FIELD);
        MPI_Request r;
        MT_CHECK_RC(e->t, ZMPI_Isend(sb, n, MPI_FLOAT, 0, tag, e->comm, &r), "Isend to 0");
        if (e->rank == 0) {
            float *rb = xmalloc((size_t)e->size * (size_t)maxn * 4);
            MPI_Request *rr = xmalloc((size_t)e->size * sizeof *rr);
            MPI_Status *st = xmalloc((size_t)e->size * sizeof *st);
            int *seen = calloc((size_t)e->size, sizeof *seen);
            for (int i = 0; i < e->size; i++) {
                float *b = rb + (size_t)i * (size_t)maxn;
                if (round == 0)
                    MT_CHECK_RC(e->t, ZMPI_Recv(b, maxn, MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG, e->comm, &st[i]),
                             "Recv any");
                else
                    MT_CHECK_RC(e->t, ZMPI_Irecv(b, maxn, MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG, e->comm, &rr[i]),
                             "Irecv any");
            }
            if (round == 1)
                MT_CHECK_RC(e->t, ZMPI_Waitall(e->size, rr, st), "Waitall any");
            for (int i = 0; i < e->size; i++) {
                int src = st[i].MPI_SOURCE;
                MT_CHECK(e->t, src >= 0 && src < e->size && !seen[src], "any: bad or repeated source %d",
                         src);
                if (src < 0 || src >= e->size || seen[src])
                    continue;
                seen[src] = 1;
                check_msg(e, "any source/tag", &m, rb + (size_t)i * (size_t)maxn, &st[i], src,
                          1000 + src + 10 * round, 700 + round, (size_t)counts[(src + round) % 8],
                          DATA_FIELD);
            }
            free(rb);
            free(rr);
            free(st);
            free(seen);
        }
        MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait to 0");
        MPI_Barrier(e->comm); /* no message of the next round can match this round's receives */
        free(sb);
    }
}

static void check_null_status(env *e, const MPI_Status *st, MPI_Datatype type, const char *what)
{
    int cnt = -1;
    MPI_Get_count(st, type, &cnt);
    MT_CHECK(e->t, st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG && cnt == 0,
             "%s: PROC_NULL status source %d tag %d count %d", what, st->MPI_SOURCE, st->MPI_TAG, cnt);
}

/* MPI_PROC_NULL peers: a non-periodic chain shift, and direct calls. */
static void test_proc_null(env *e)
{
    const mcfg m = {MPI_DOUBLE, ZMPI_EB_REL, 1e-4, "double/rel"};
    set_cfg(e, &m, ZMPI_CODEC_FZL);
    int n = 5000;
    double *sb = xmalloc((size_t)n * 8), *rb = xmalloc((size_t)n * 8);
    gen(sb, (size_t)n, MPI_DOUBLE, e->rank, 800, DATA_FIELD);
    MPI_Status st;
    MT_CHECK_RC(e->t, ZMPI_Send(sb, n, MPI_DOUBLE, MPI_PROC_NULL, 1, e->comm), "Send PROC_NULL");
    MT_CHECK_RC(e->t, ZMPI_Recv(rb, n, MPI_DOUBLE, MPI_PROC_NULL, 1, e->comm, &st), "Recv PROC_NULL");
    check_null_status(e, &st, MPI_DOUBLE, "Recv");
    MPI_Request r[2];
    MT_CHECK_RC(e->t, ZMPI_Irecv(rb, n, MPI_DOUBLE, MPI_PROC_NULL, 1, e->comm, &r[0]), "Irecv PROC_NULL");
    MT_CHECK_RC(e->t, ZMPI_Isend(sb, n, MPI_DOUBLE, MPI_PROC_NULL, 1, e->comm, &r[1]), "Isend PROC_NULL");
    MT_CHECK_RC(e->t, ZMPI_Wait(&r[0], &st), "Wait PROC_NULL");
    { /* as plain MPI (MPICH 4.0 reports source 0, tag 0 here) */
        MPI_Request pr;
        MPI_Status ps;
        int cnt = -1;
        MPI_Irecv(rb, n, MPI_DOUBLE, MPI_PROC_NULL, 1, e->comm, &pr);
        MPI_Wait(&pr, &ps);
        MPI_Get_count(&st, MPI_DOUBLE, &cnt);
        MT_CHECK(e->t, st.MPI_SOURCE == ps.MPI_SOURCE && st.MPI_TAG == ps.MPI_TAG && cnt == 0,
                 "Irecv PROC_NULL: status source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, cnt);
    }
    MT_CHECK_RC(e->t, ZMPI_Wait(&r[1], MPI_STATUS_IGNORE), "Wait PROC_NULL send");
    /* chain: rank r sends to r+1, receives from r-1; the ends talk to PROC_NULL */
    int up = e->rank + 1 < e->size ? e->rank + 1 : MPI_PROC_NULL;
    int down = e->rank > 0 ? e->rank - 1 : MPI_PROC_NULL;
    MT_CHECK_RC(e->t, ZMPI_Sendrecv(sb, n, MPI_DOUBLE, up, 2, rb, n, MPI_DOUBLE, down, 2, e->comm, &st), "chain");
    if (down == MPI_PROC_NULL)
        check_null_status(e, &st, MPI_DOUBLE, "chain");
    else
        check_msg(e, "chain", &m, rb, &st, down, 2, 800, (size_t)n, DATA_FIELD);
    free(sb);
    free(rb);
}

/* Several messages with the same (source, tag), small (stored) and large
 * (compressed) mixed, arrive in send order. */
static void test_order(env *e)
{
    const mcfg m = {MPI_FLOAT, ZMPI_EB_ABS, 1e-3, "float/abs"};
    set_cfg(e, &m, ZMPI_CODEC_FZL);
    enum { M = 8 };
    const int counts[M] = {3000, 5, 1 << 15, 17, 0, 20000, 1, 1000};
    const int maxn = 1 << 15;
    for (int round = 0; round < 2; round++) {
        float *sb[M], *rb = xmalloc((size_t)M * maxn * 4);
        MPI_Request sr[M], rr[M];
        MPI_Status st[M];
        for (int i = 0; i < M; i++) {
            sb[i] = xmalloc((size_t)counts[i] * 4);
            gen(sb[i], (size_t)counts[i], MPI_FLOAT, e->rank, 900 + i, DATA_FIELD);
        }
        if (round == 1) /* receives posted before the sends */
            for (int i = 0; i < M; i++)
                MT_CHECK_RC(e->t, ZMPI_Irecv(rb + (size_t)i * maxn, maxn, MPI_FLOAT, e->left, 77, e->comm, &rr[i]),
                         "Irecv order");
        MPI_Barrier(e->comm);
        for (int i = 0; i < M; i++)
            MT_CHECK_RC(e->t, ZMPI_Isend(sb[i], counts[i], MPI_FLOAT, e->right, 77, e->comm, &sr[i]),
                     "Isend order");
        if (round == 0)
            for (int i = 0; i < M; i++)
                MT_CHECK_RC(e->t, ZMPI_Recv(rb + (size_t)i * maxn, maxn, MPI_FLOAT, e->left, 77, e->comm, &st[i]),
                         "Recv order");
        else
            MT_CHECK_RC(e->t, ZMPI_Waitall(M, rr, st), "Waitall order");
        MT_CHECK_RC(e->t, ZMPI_Waitall(M, sr, MPI_STATUSES_IGNORE), "Waitall sends");
        for (int i = 0; i < M; i++)
            check_msg(e, "order", &m, rb + (size_t)i * maxn, &st[i], e->left, 77, 900 + i, (size_t)counts[i],
                      DATA_FIELD);
        for (int i = 0; i < M; i++)
            free(sb[i]);
        free(rb);
    }
}

/* Plain MPI fallbacks are byte-identical: MPI_INT with a bound configured,
 * doubles without a bound; and a lossless codec. A vector of doubles is
 * compressed (within the bound, gaps untouched: tests/mpi/test_derived.c
 * covers derived types). */
static void test_fallbacks(env *e)
{
    const mcfg fz = {MPI_DOUBLE, ZMPI_EB_ABS, 1e-2, "double/abs"};
    set_cfg(e, &fz, ZMPI_CODEC_FZL);
    ZMPI_Stats s0, s1;
    ZMPI_Comm_get_stats(e->comm, &s0);
    int n = 20000;
    /* MPI_INT */
    int *si = xmalloc((size_t)n * 4), *ri = xmalloc((size_t)n * 4);
    for (int i = 0; i < n; i++)
        si[i] = (int)mix((uint64_t)e->rank * 1000003u + (uint64_t)i);
    MPI_Status st;
    MT_CHECK_RC(e->t, ZMPI_Sendrecv(si, n, MPI_INT, e->right, 3, ri, n, MPI_INT, e->left, 3, e->comm, &st),
             "Sendrecv int");
    int ok = 1, cnt = -1;
    for (int i = 0; i < n; i++)
        ok &= ri[i] == (int)mix((uint64_t)e->left * 1000003u + (uint64_t)i);
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(e->t, ok && cnt == n && st.MPI_SOURCE == e->left, "MPI_INT fallback not identical");
    /* vector of doubles (every other one): compressed; the gaps stay untouched */
    MPI_Datatype vec;
    MPI_Type_vector(n / 2, 1, 2, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    double *sd = xmalloc((size_t)n * 8), *rd = xmalloc((size_t)n * 8);
    gen(sd, (size_t)n, MPI_DOUBLE, e->rank, 1000, DATA_FIELD);
    for (int i = 0; i < n; i++)
        rd[i] = -1.0;
    MPI_Request r[2];
    MT_CHECK_RC(e->t, ZMPI_Irecv(rd, 1, vec, e->left, 4, e->comm, &r[0]), "Irecv vector");
    MT_CHECK_RC(e->t, ZMPI_Isend(sd, 1, vec, e->right, 4, e->comm, &r[1]), "Isend vector");
    MT_CHECK_RC(e->t, ZMPI_Waitall(2, r, MPI_STATUSES_IGNORE), "Waitall vector");
    double *ref = xmalloc((size_t)n * 8);
    gen(ref, (size_t)n, MPI_DOUBLE, e->left, 1000, DATA_FIELD);
    ok = 1;
    for (int i = 0; i < n; i++)
        ok &= i % 2 ? rd[i] == -1.0 : fabs(rd[i] - ref[i]) <= 1e-2;
    MT_CHECK(e->t, ok, "vector of doubles: outside the bound, or a gap written");
    MPI_Type_free(&vec);
    ZMPI_Comm_get_stats(e->comm, &s1);
    MT_CHECK(e->t, s1.fallback_type >= s0.fallback_type + 2, "fallback_type %llu -> %llu", s0.fallback_type,
             s1.fallback_type);
    unsigned long long vraw = s1.bytes_raw - s0.bytes_raw, vsent = s1.bytes_sent - s0.bytes_sent;
    MT_CHECK(e->t, vraw == (unsigned long long)(n / 2) * 8 && vsent < vraw,
             "the vector of doubles was not compressed: raw %llu, sent %llu", vraw, vsent);
    /* ZMPI_MIN_BYTES: a message of exactly that many bytes is compressed, one element fewer is not */
    for (int m = MIN_BYTES / 8 - 1; m <= MIN_BYTES / 8; m++) {
        double *a = xmalloc((size_t)m * 8), *b = xmalloc((size_t)m * 8);
        gen(a, (size_t)m, MPI_DOUBLE, e->rank, 1003, DATA_FIELD);
        ZMPI_Comm_get_stats(e->comm, &s0);
        MT_CHECK_RC(e->t, ZMPI_Sendrecv(a, m, MPI_DOUBLE, e->right, 5, b, m, MPI_DOUBLE, e->left, 5, e->comm, &st),
                    "Sendrecv at ZMPI_MIN_BYTES");
        ZMPI_Comm_get_stats(e->comm, &s1);
        unsigned long long raw = s1.bytes_raw - s0.bytes_raw, small = s1.fallback_small - s0.fallback_small;
        if (m * 8 >= MIN_BYTES)
            MT_CHECK(e->t, raw == (unsigned long long)m * 8 && small == 0,
                     "%d bytes with ZMPI_MIN_BYTES=%d: %llu bytes compressed, %llu small fallbacks", m * 8,
                     MIN_BYTES, raw, small);
        else
            MT_CHECK(e->t, raw == 0 && small >= 1, "%d bytes with ZMPI_MIN_BYTES=%d: %llu bytes compressed, %llu "
                     "small fallbacks", m * 8, MIN_BYTES, raw, small);
        free(a);
        free(b);
    }
    /* no bound: doubles go as plain MPI */
    const mcfg none = {MPI_DOUBLE, ZMPI_EB_NONE, 0.0, "double/none"};
    set_cfg(e, &none, ZMPI_CODEC_FZL);
    ZMPI_Comm_get_stats(e->comm, &s0);
    ring_sendrecv(e, &none, n, 1001, 0);
    ring_nonblocking(e, &none, n, 1002, COMPLETE_TEST);
    ZMPI_Comm_get_stats(e->comm, &s1);
    MT_CHECK(e->t, s1.fallback_config >= s0.fallback_config + 6 && s1.compressed == s0.compressed,
             "no-bound fallback: config %llu -> %llu, compressed %llu -> %llu", s0.fallback_config,
             s1.fallback_config, s0.compressed, s1.compressed);
    /* a lossless codec compresses without a bound: exact */
    set_cfg(e, &none, ZMPI_CODEC_ZSTD);
    ZMPI_Comm_get_stats(e->comm, &s0);
    ring_nonblocking(e, &none, n, 1004, COMPLETE_WAITALL);
    ring_blocking(e, &none, 17, 1006, 0);
    ZMPI_Comm_get_stats(e->comm, &s1);
    MT_CHECK(e->t, s1.compressed > s0.compressed, "zstd: not compressed");
    free(si);
    free(ri);
    free(sd);
    free(rd);
    free(ref);
}

/* A mix of a plain request, MPI_REQUEST_NULL entries and compressed ones in
 * one Waitall; ZMPI_Test on MPI_REQUEST_NULL. */
static void test_mixed_waitall(env *e)
{
    const mcfg m = {MPI_FLOAT, ZMPI_EB_REL, 1e-4, "float/rel"};
    set_cfg(e, &m, ZMPI_CODEC_FZL);
    int n = 10000, ival = 42 + e->rank, iget = -1;
    float *sb = xmalloc((size_t)n * 4), *rb = xmalloc((size_t)n * 4);
    gen(sb, (size_t)n, MPI_FLOAT, e->rank, 1100, DATA_FIELD);
    MPI_Request r[6] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL,
                        MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[6];
    MT_CHECK_RC(e->t, MPI_Irecv(&iget, 1, MPI_INT, e->left, 9, e->comm, &r[1]), "MPI_Irecv");
    MT_CHECK_RC(e->t, ZMPI_Irecv(rb, n, MPI_FLOAT, e->left, 8, e->comm, &r[3]), "Irecv");
    MT_CHECK_RC(e->t, ZMPI_Isend(sb, n, MPI_FLOAT, e->right, 8, e->comm, &r[4]), "Isend");
    MT_CHECK_RC(e->t, MPI_Isend(&ival, 1, MPI_INT, e->right, 9, e->comm, &r[5]), "MPI_Isend");
    MT_CHECK_RC(e->t, ZMPI_Waitall(6, r, st), "Waitall mixed");
    MT_CHECK(e->t, iget == 42 + e->left, "plain request in Waitall: got %d", iget);
    check_msg(e, "mixed Waitall", &m, rb, &st[3], e->left, 8, 1100, (size_t)n, DATA_FIELD);
    int flag = 0;
    MPI_Request nul = MPI_REQUEST_NULL;
    MT_CHECK_RC(e->t, ZMPI_Test(&nul, &flag, MPI_STATUS_IGNORE), "Test null");
    MT_CHECK(e->t, flag == 1, "Test on MPI_REQUEST_NULL: flag %d", flag);
    MT_CHECK_RC(e->t, ZMPI_Wait(&nul, MPI_STATUS_IGNORE), "Wait null");
    MT_CHECK_RC(e->t, ZMPI_Waitall(0, NULL, MPI_STATUSES_IGNORE), "Waitall 0");
    free(sb);
    free(rb);
}

static int err_class(int rc)
{
    int cls = rc;
    ZMPI_Error_class(rc, &cls); /* zmpi's codes map to the standard classes */
    return cls;
}

/* A receive buffer too small: MPI_ERR_TRUNCATE (MPI_ERRORS_RETURN), no
 * crash, and the communicator keeps working. */
static void test_truncate(env *e)
{
    const mcfg m = {MPI_FLOAT, ZMPI_EB_REL, 1e-2, "float/rel"};
    set_cfg(e, &m, ZMPI_CODEC_FZL);
    /* stored (PMPI sees a too-small buffer), then compressed (the stream fits
     * the staging buffer, the element count does not) */
    const int sends[] = {100, 1 << 16, 1 << 16, 40, 1 << 16, 1 << 16};
    const int recvs[] = {10, 1 << 15, 1 << 15, 39, 1 << 15, (1 << 16) - 1}; /* the last: one element short */
    for (int i = 0; i < 6; i++) {
        float *sb = xmalloc((size_t)sends[i] * 4), *rb = xmalloc((size_t)recvs[i] * 4);
        gen(sb, (size_t)sends[i], MPI_FLOAT, e->rank, 1200 + i, DATA_FIELD);
        MPI_Request r, rr;
        MPI_Status st;
        int rc;
        MT_CHECK_RC(e->t, ZMPI_Isend(sb, sends[i], MPI_FLOAT, e->right, 11, e->comm, &r), "Isend trunc");
        if (i == 4) {
            /* found by zmpi inside a Waitall that also completes the send */
            MPI_Request both[2];
            MPI_Status sts[2];
            MT_CHECK_RC(e->t, ZMPI_Irecv(rb, recvs[i], MPI_FLOAT, e->left, 11, e->comm, &both[0]), "Irecv trunc");
            both[1] = r;
            rc = ZMPI_Waitall(2, both, sts);
            r = both[1];
            MT_CHECK(e->t, err_class(rc) == MPI_ERR_IN_STATUS && sts[1].MPI_ERROR == MPI_SUCCESS,
                     "truncation in Waitall: class %d, send status error %d", err_class(rc),
                     sts[1].MPI_ERROR);
            rc = sts[0].MPI_ERROR;
        } else if (i % 2 == 0) {
            rc = ZMPI_Recv(rb, recvs[i], MPI_FLOAT, e->left, 11, e->comm, &st);
        } else {
            MT_CHECK_RC(e->t, ZMPI_Irecv(rb, recvs[i], MPI_FLOAT, e->left, 11, e->comm, &rr), "Irecv trunc");
            rc = i == 1 ? ZMPI_Wait(&rr, &st) : ZMPI_Waitall(1, &rr, &st);
            if ((i == 3 || i == 5) && err_class(rc) == MPI_ERR_IN_STATUS)
                rc = st.MPI_ERROR;
        }
        MT_CHECK(e->t, err_class(rc) == MPI_ERR_TRUNCATE, "truncation %d: error class %d, expected %d", i,
                 err_class(rc), MPI_ERR_TRUNCATE);
        MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait trunc send");
        free(sb);
        free(rb);
    }
    ring_sendrecv(e, &m, 5000, 1210, 0); /* still working */
}

/* A zmpi message stream (the codec API with the message flag) of rank r's
 * field, of whole floats (MPI unpacks no partial element): its length. */
static ptrdiff_t message_stream(float *x, int r, unsigned char *z)
{
    ptrdiff_t l = -1;
    for (int n = 1000; n < 1200 && (l < 0 || l % 4); n++) {
        zmpi_ctx *ctx = zmpi_ctx_create();
        gen(x, (size_t)n, MPI_FLOAT, r, 1410, DATA_FIELD);
        zmpi_ctx_set_codec(ctx, ZMPI_CODEC_FZL);
        zmpi_ctx_set_bound(ctx, ZMPI_EB_ABS, 1e-3);
        zmpi_ctx_set_param(ctx, ZMPI_P_MESSAGE, 1);
        l = zmpi_compress(ctx, x, (size_t)n, ZMPI_FLOAT, z, 8192);
        zmpi_ctx_free(ctx);
    }
    return l;
}

/* The wire's raw floor: a message of at most 8 KiB travels raw whatever the
 * settings (ZMPI_MIN_BYTES=0 here), so a receive of at most 8 KiB is MPI's
 * own call and never decodes: the bytes of a zmpi message stream (made by
 * the codec API with the message flag, 1-2 KiB) sent as plain bytes reach a
 * zmpi receive of 2048 floats exactly as they are (before the floor they
 * were decoded). One byte more than 8 KiB is compressed; a stream shorter
 * than the floor goes padded to 8 KiB + 1 bytes and decodes; a compressed
 * message never fits a receive of at most 8 KiB (MPI_ERR_TRUNCATE, not
 * data). */
static void test_raw_floor(env *e)
{
    const mcfg m = {MPI_FLOAT, ZMPI_EB_ABS, 1e-3, "float/abs floor"};
    mt_config(e->comm, ZMPI_CODEC_FZL, m.mode, m.eb, ZMPI_SCOPE_MESSAGE, 0);
    const int big = 100000;
    float *sb = xmalloc((size_t)big * 4), *rb = xmalloc((size_t)big * 4);
    MPI_Status st;
    ZMPI_Stats s0, s1;
    for (int n = 2048; n <= 2050; n += 2) { /* 8192 bytes: raw; 8200: compressed */
        gen(sb, (size_t)n, MPI_FLOAT, e->rank, 1400 + n, DATA_FIELD);
        ZMPI_Comm_get_stats(e->comm, &s0);
        MT_CHECK_RC(e->t, ZMPI_Sendrecv(sb, n, MPI_FLOAT, e->right, 13, rb, n, MPI_FLOAT, e->left, 13, e->comm, &st),
                    "Sendrecv at the floor");
        ZMPI_Comm_get_stats(e->comm, &s1);
        unsigned long long raw = s1.bytes_raw - s0.bytes_raw;
        unsigned long long small = s1.fallback_small - s0.fallback_small;
        int as_said = n == 2048 ? raw == 0 && small == 1 : raw == (unsigned long long)n * 4;
        MT_CHECK(e->t, as_said,
                 "%d bytes with ZMPI_MIN_BYTES=0: %llu bytes compressed, small fallbacks %llu -> %llu", n * 4, raw,
                 s0.fallback_small, s1.fallback_small);
        float *ref = xmalloc((size_t)n * 4);
        gen(ref, (size_t)n, MPI_FLOAT, e->left, 1400 + n, DATA_FIELD);
        int ok = 1;
        for (int i = 0; i < n; i++)
            ok &= n == 2048 ? rb[i] == ref[i] : fabsf(rb[i] - ref[i]) <= 1e-3f;
        MT_CHECK(e->t, ok, "%d bytes at the floor: %s", n * 4, n == 2048 ? "not exact" : "beyond the bound");
        free(ref);
    }
    /* a constant vector: its stream is far shorter than 8 KiB, padded on the wire */
    for (int i = 0; i < big; i++)
        sb[i] = 1.5f;
    ZMPI_Comm_get_stats(e->comm, &s0);
    MT_CHECK_RC(e->t, ZMPI_Sendrecv(sb, big, MPI_FLOAT, e->right, 14, rb, big, MPI_FLOAT, e->left, 14, e->comm, &st),
                "Sendrecv padded");
    ZMPI_Comm_get_stats(e->comm, &s1);
    int cnt = -1, same = 1;
    MPI_Get_count(&st, MPI_FLOAT, &cnt);
    for (int i = 0; i < big; i++)
        same &= fabsf(rb[i] - 1.5f) <= 1e-3f;
    MT_CHECK(e->t, s1.bytes_sent - s0.bytes_sent == 8193 && cnt == big && same,
             "a short stream: %llu bytes on the wire (expected 8193), count %d, values %s",
             s1.bytes_sent - s0.bytes_sent, cnt, same ? "right" : "wrong");
    /* ... which never fits a receive of at most 8 KiB */
    MPI_Request r;
    MT_CHECK_RC(e->t, ZMPI_Isend(sb, big, MPI_FLOAT, e->right, 15, e->comm, &r), "Isend padded");
    int rc = ZMPI_Recv(rb, 2048, MPI_FLOAT, e->left, 15, e->comm, &st);
    MT_CHECK(e->t, err_class(rc) == MPI_ERR_TRUNCATE, "a compressed message into 8 KiB: class %d, expected %d",
             err_class(rc), MPI_ERR_TRUNCATE);
    MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait padded send");
    /* the bytes of a zmpi message stream, sent as plain bytes: raw at the receiver */
    unsigned char *z = xmalloc(8192), *want = xmalloc(8192);
    ptrdiff_t zl = message_stream(sb, e->rank, z), wl;
    MT_CHECK(e->t, zl > 0 && zl <= 8192 && zl % 4 == 0, "a message stream of %td bytes", zl);
    int zn = zl > 0 ? (int)zl : 0;
    MPI_Sendrecv(&zn, 1, MPI_INT, e->right, 16, &cnt, 1, MPI_INT, e->left, 16, e->comm, MPI_STATUS_IGNORE);
    wl = message_stream(sb, e->left, want); /* the left neighbour's stream (its rank's data) */
    for (int k = 0; k < 2; k++) { /* into 8 KiB (MPI's own receive), then into 400 KB (zmpi's) */
        MPI_Isend(z, zn, MPI_BYTE, e->right, 17, e->comm, &r);
        rc = ZMPI_Recv(rb, k ? big : 2048, MPI_FLOAT, e->left, 17, e->comm, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        int got = -1;
        MPI_Get_count(&st, MPI_BYTE, &got);
        MT_CHECK(e->t, rc == MPI_SUCCESS && got == cnt && wl == cnt && !memcmp(rb, want, (size_t)(cnt > 0 ? cnt : 0)),
                 "a stream's bytes into a receive of %d floats: rc %d, %d bytes of %d, %s", k ? big : 2048, rc, got,
                 cnt, wl == cnt && !memcmp(rb, want, (size_t)(cnt > 0 ? cnt : 0)) ? "as sent" : "decoded or changed");
    }
    free(z);
    free(want);
    free(sb);
    free(rb);
}

/* Poorly compressible data: white noise, hostile values (NaN, Inf, -0.0,
 * denormals, huge), and bounds below the float resolution. */
static void test_hostile(env *e)
{
    const mcfg cfgs[] = {{MPI_FLOAT, ZMPI_EB_ABS, 1e-10, "float/abs 1e-10"},
                         {MPI_FLOAT, ZMPI_EB_REL, 1e-9, "float/rel 1e-9"},
                         {MPI_DOUBLE, ZMPI_EB_ABS, 1e-3, "double/abs"},
                         {MPI_DOUBLE, ZMPI_EB_REL, 1e-17, "double/rel 1e-17"}};
    const int counts[] = {1, 3000, 70000};
    for (size_t k = 0; k < sizeof cfgs / sizeof cfgs[0]; k++) {
        const mcfg *m = &cfgs[k];
        set_cfg(e, m, ZMPI_CODEC_FZL);
        for (int kind = DATA_NOISE; kind <= DATA_HOSTILE; kind++) {
            for (int i = 0; i < 3; i++) {
                int n = counts[i], id = 1300 + 10 * kind + i;
                size_t es = esz(m->type);
                void *sb = xmalloc((size_t)n * es), *rb = xmalloc((size_t)n * es);
                gen(sb, (size_t)n, m->type, e->rank, id, kind);
                MPI_Status st;
                MT_CHECK_RC(e->t,
                         ZMPI_Sendrecv(sb, n, m->type, e->right, 12, rb, n, m->type, e->left, 12, e->comm,
                                       &st),
                         "Sendrecv hostile");
                check_msg(e, kind == DATA_NOISE ? "noise" : "hostile", m, rb, &st, e->left, 12, id,
                          (size_t)n, kind);
                free(sb);
                free(rb);
            }
        }
    }
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_p2p");
    env e = {&t, MPI_COMM_NULL, t.rank, t.size, (t.rank + t.size - 1) % t.size, (t.rank + 1) % t.size, 0.0};
    MPI_Comm_dup(MPI_COMM_WORLD, &e.comm); /* inherits MPI_ERRORS_RETURN */
    test_rings(&e);
    test_larger_recv(&e);
    test_any(&e);
    test_proc_null(&e);
    test_order(&e);
    test_fallbacks(&e);
    test_mixed_waitall(&e);
    test_truncate(&e);
    test_raw_floor(&e);
    test_hostile(&e);
    test_large(&e);
    MPI_Comm_free(&e.comm);
    return mt_finish(&t);
}
