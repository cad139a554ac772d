/*
 * zmpi under MPI_THREAD_MULTIPLE: two threads per rank at the same time,
 * each running, round after round,
 *   - compressed collectives (Allreduce, Bcast, Allgather with explicitly
 *     configured algorithms) on a communicator of its own (a duplicate of
 *     MPI_COMM_WORLD: collectives on one communicator must be ordered, on
 *     different communicators they may overlap), and
 *   - compressed ZMPI_Isend / ZMPI_Irecv on one communicator shared by both
 *     threads, each thread with its own tags, posted by both threads at the
 *     same moment (a barrier) and completed by ZMPI_Waitall (thread 0) or
 *     ZMPI_Test + ZMPI_Wait (thread 1): the registry of pending requests is
 *     updated by both threads at once. The messages are larger than
 *     ZMPI_SCRATCH_MIN, so a point-to-point layer that takes working
 *     buffers from the communicator's scratch pool takes them from the
 *     shared pool concurrently (the present one allocates per message; the
 *     collectives' pools are per communicator, and collectives on one
 *     communicator cannot overlap).
 * Every element is checked against its bound (collectives: against plain
 * MPI's result on the thread's own communicator; point-to-point: against
 * the sender's data, which the receiver regenerates), the status counts
 * the uncompressed elements, the statistics show the compressed path ran and
 * which algorithm ran. Only the public API of zmpi/zmpi.h is used.
 *
 * An MPI that does not provide MPI_THREAD_MULTIPLE skips the test (one
 * passing check); MPICH and Open MPI provide it.
 */
#define _POSIX_C_SOURCE 200809L /* pthread_barrier_t */
#include <pthread.h>

#include "reduction.h"

#define ROUNDS 3
#define NMSG 3        /* point-to-point messages per thread, round and direction */
#define NP2P 20000    /* floats per message (80 KB, above ZMPI_SCRATCH_MIN when compressed) */
#define NRED 15000    /* Allreduce elements */
#define NBCAST 24000  /* Bcast elements (double) */
#define NBLOCK 6000   /* Allgather block (float) */

typedef struct job {
    int id;             /* thread 0 or 1 */
    MPI_Comm own;       /* this thread's communicator for the collectives */
    MPI_Comm shared;    /* both threads' communicator for point-to-point */
    mt_state t;         /* this thread's checks (merged after the join) */
    pthread_barrier_t *start; /* both threads post their messages at the same time */
    zmpi_eb_mode mode;  /* the bound of the collectives */
    double eb;
} job;

static const double P2P_EB = 1e-3; /* ABS bound of the point-to-point messages */

/* Configures coll on j->own with the job's bound, min_bytes 0 and algorithm algo. */
static void configure(job *j, ZMPI_Coll coll, int algo)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = j->mode;
    cfg.eb = j->eb;
    cfg.scope = ZMPI_SCOPE_RESULT;
    cfg.min_bytes = 0;
    cfg.chunk = 4096;
    cfg.threads = 1;
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        cfg.algorithm[k] = ZMPI_ALGO_DEFAULT;
    cfg.algorithm[coll] = algo;
    int rc = ZMPI_Comm_set_config(j->own, &cfg);
    MT_CHECK(&j->t, rc == MPI_SUCCESS, "thread %d: config rc %d", j->id, rc);
}

/* Algorithm number `round` (cyclically) of coll. */
static int pick(ZMPI_Coll coll, int round, const char **name)
{
    int ids[16];
    const char *names[16];
    int n = ZMPI_Coll_algorithms(coll, 16, ids, names, NULL);
    if (n < 1) {
        *name = "?";
        return ZMPI_ALGO_DEFAULT;
    }
    if (n > 16)
        n = 16;
    *name = names[round % n];
    return ids[round % n];
}

static void allreduce(job *j, int round)
{
    mt_state *t = &j->t;
    const char *aname;
    int algo = pick(ZMPI_COLL_ALLREDUCE, round + j->id, &aname);
    rt_case k = {MPI_FLOAT, j->mode, j->eb, ZMPI_SCOPE_RESULT, MPI_SUM};
    size_t n = NRED, wn = n * 2;
    float *in = mt_xmalloc(n * 4), *got = mt_xmalloc(n * 4);
    double *win = mt_xmalloc(wn * 8), *wref = mt_xmalloc(wn * 8);
    rt_fill(in, n, MPI_FLOAT, t->rank + 10 * j->id + 3 * round, RT_FIELD, MPI_SUM);
    rt_widen(in, n, MPI_FLOAT, MPI_SUM, win);
    MPI_Allreduce(win, wref, (int)wn, MPI_DOUBLE, MPI_SUM, j->own);
    double R = mt_global_range(in, n, MPI_FLOAT, j->own);
    configure(j, ZMPI_COLL_ALLREDUCE, algo);
    ZMPI_Stats s0 = mt_stats(j->own);
    int rc = ZMPI_Allreduce(in, got, (int)n, MPI_FLOAT, MPI_SUM, j->own);
    ZMPI_Stats s1 = mt_stats(j->own);
    char what[120];
    snprintf(what, sizeof what, "thread %d round %d allreduce %s", j->id, round, aname);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + 1, "%s: not compressed", what);
    mt_check_algo(t, j->own, ZMPI_COLL_ALLREDUCE, algo, 1, what);
    rt_result res = rt_check(&k, got, wref, n, rt_bound(&k, R, t->size, t->size - 1, 1), t->size);
    MT_CHECK(t, res.bad == 0, "%s: %zu elements beyond the bound (worst %g)", what, res.bad, res.worst);
    free(in);
    free(got);
    free(win);
    free(wref);
}

static void bcast(job *j, int round)
{
    mt_state *t = &j->t;
    const char *aname;
    int algo = pick(ZMPI_COLL_BCAST, round + 2 * j->id, &aname), root = (round + j->id) % t->size;
    size_t n = NBCAST;
    double *orig = mt_xmalloc(n * 8), *buf = mt_xmalloc(n * 8);
    mt_fill_field(orig, n, MPI_DOUBLE, (size_t)(root + 5 * round + 17 * j->id));
    if (t->rank == root)
        memcpy(buf, orig, n * 8);
    else
        for (size_t i = 0; i < n; i++)
            buf[i] = -7.25e300;
    configure(j, ZMPI_COLL_BCAST, algo);
    ZMPI_Stats s0 = mt_stats(j->own);
    int rc = ZMPI_Bcast(buf, (int)n, MPI_DOUBLE, root, j->own);
    ZMPI_Stats s1 = mt_stats(j->own);
    char what[120];
    snprintf(what, sizeof what, "thread %d round %d bcast %s root %d", j->id, round, aname, root);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + 1, "%s: not compressed", what);
    mt_check_algo(t, j->own, ZMPI_COLL_BCAST, algo, 1, what);
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        lo = orig[i] < lo ? orig[i] : lo;
        hi = orig[i] > hi ? orig[i] : hi;
    }
    double bound = t->rank == root ? 0.0 : j->mode == ZMPI_EB_ABS ? j->eb : j->eb * (hi - lo);
    double worst = 0;
    size_t bad = mt_violations(buf, orig, n, MPI_DOUBLE, bound, &worst);
    MT_CHECK(t, bad == 0, "%s: %zu elements beyond %g (worst %g)", what, bad, bound, worst);
    free(orig);
    free(buf);
}

static void allgather(job *j, int round)
{
    mt_state *t = &j->t;
    int size = t->size, ids[3], algo = -1;
    const char *names[3], *aname = "ring";
    /* the compress-once algorithms (cprp2p's bound grows with the hops) */
    int n = ZMPI_Coll_algorithms(ZMPI_COLL_ALLGATHER, 3, ids, names, NULL);
    for (int a = 0, seen = 0; a < n && a < 3; a++)
        if (strcmp(names[a], "cprp2p") && seen++ == (round + j->id) % 2)
            algo = ids[a], aname = names[a];
    if (algo < 0)
        algo = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLGATHER, "ring");
    size_t m = NBLOCK, total = m * (size_t)size;
    float *mine = mt_xmalloc(m * 4), *got = mt_xmalloc(total * 4), *ref = mt_xmalloc(total * 4);
    mt_fill_field(mine, m, MPI_FLOAT, (size_t)(t->rank * 3 + round + 11 * j->id));
    MPI_Allgather(mine, (int)m, MPI_FLOAT, ref, (int)m, MPI_FLOAT, j->own);
    configure(j, ZMPI_COLL_ALLGATHER, algo);
    ZMPI_Stats s0 = mt_stats(j->own);
    int rc = ZMPI_Allgather(mine, (int)m, MPI_FLOAT, got, (int)m, MPI_FLOAT, j->own);
    ZMPI_Stats s1 = mt_stats(j->own);
    char what[120];
    snprintf(what, sizeof what, "thread %d round %d allgather %s", j->id, round, aname);
    MT_CHECK(t, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    MT_CHECK(t, s1.compressed == s0.compressed + 1, "%s: not compressed", what);
    mt_check_algo(t, j->own, ZMPI_COLL_ALLGATHER, algo, 1, what);
    for (int b = 0; b < size; b++) {
        const float *r = ref + (size_t)b * m;
        double lo = INFINITY, hi = -INFINITY, worst = 0;
        for (size_t i = 0; i < m; i++) {
            lo = r[i] < lo ? r[i] : lo;
            hi = r[i] > hi ? r[i] : hi;
        }
        double bound = b == t->rank ? 0.0 : j->mode == ZMPI_EB_ABS ? j->eb : j->eb * (hi - lo);
        size_t bad = mt_violations(got + (size_t)b * m, r, m, MPI_FLOAT, bound, &worst);
        MT_CHECK(t, bad == 0, "%s: block %d: %zu elements beyond %g (worst %g)", what, b, bad, bound, worst);
    }
    free(mine);
    free(got);
    free(ref);
}

/* The data of message k of thread id in round from rank src. */
static void p2p_fill(float *x, size_t n, int src, int id, int round, int k)
{
    mt_fill_field(x, n, MPI_FLOAT, (size_t)(1000 + src * 97 + id * 31 + round * 7 + k));
}

static size_t p2p_count(int id, int k)
{
    return (size_t)NP2P + (size_t)(id * 1500 + k * 333); /* every message its own size */
}

static void p2p(job *j, int round)
{
    mt_state *t = &j->t;
    int size = t->size, right = (t->rank + 1) % size, left = (t->rank - 1 + size) % size;
    float *sbuf[NMSG], *rbuf[NMSG], *want = mt_xmalloc(((size_t)NP2P + 3000) * 4);
    MPI_Request req[2 * NMSG];
    MPI_Status st[2 * NMSG];
    int rc, tag0 = 100 + 10 * j->id; /* distinct tags per thread */
    pthread_barrier_wait(j->start);
    for (int k = 0; k < NMSG; k++) {
        size_t n = p2p_count(j->id, k);
        rbuf[k] = mt_xmalloc(n * 4);
        for (size_t i = 0; i < n; i++)
            rbuf[k][i] = -7.25e30f;
        rc = ZMPI_Irecv(rbuf[k], (int)n, MPI_FLOAT, left, tag0 + k, j->shared, &req[k]);
        MT_CHECK(t, rc == MPI_SUCCESS, "thread %d: Irecv rc %d", j->id, rc);
    }
    for (int k = 0; k < NMSG; k++) {
        size_t n = p2p_count(j->id, k);
        sbuf[k] = mt_xmalloc(n * 4);
        p2p_fill(sbuf[k], n, t->rank, j->id, round, k);
        rc = ZMPI_Isend(sbuf[k], (int)n, MPI_FLOAT, right, tag0 + k, j->shared, &req[NMSG + k]);
        MT_CHECK(t, rc == MPI_SUCCESS, "thread %d: Isend rc %d", j->id, rc);
    }
    if (j->id == 0) {
        rc = ZMPI_Waitall(2 * NMSG, req, st);
        MT_CHECK(t, rc == MPI_SUCCESS, "thread 0: Waitall rc %d", rc);
    } else {
        for (int k = 0; k < NMSG; k++) { /* receives by polling, sends by waiting */
            int flag = 0;
            rc = MPI_SUCCESS;
            while (!flag && rc == MPI_SUCCESS)
                rc = ZMPI_Test(&req[k], &flag, &st[k]);
            MT_CHECK(t, rc == MPI_SUCCESS && flag, "thread 1: Test rc %d flag %d", rc, flag);
        }
        for (int k = 0; k < NMSG; k++) {
            rc = ZMPI_Wait(&req[NMSG + k], &st[NMSG + k]);
            MT_CHECK(t, rc == MPI_SUCCESS, "thread 1: Wait rc %d", rc);
        }
    }
    for (int k = 0; k < NMSG; k++) {
        size_t n = p2p_count(j->id, k);
        int cnt = -1;
        MPI_Get_count(&st[k], MPI_FLOAT, &cnt);
        MT_CHECK(t, cnt == (int)n && st[k].MPI_SOURCE == left && st[k].MPI_TAG == tag0 + k,
                 "thread %d round %d message %d: count %d (want %zu) source %d tag %d", j->id, round, k, cnt, n,
                 st[k].MPI_SOURCE, st[k].MPI_TAG);
        MT_CHECK(t, req[k] == MPI_REQUEST_NULL && req[NMSG + k] == MPI_REQUEST_NULL,
                 "thread %d: requests not released", j->id);
        p2p_fill(want, n, left, j->id, round, k);
        double worst = 0;
        size_t bad = mt_violations(rbuf[k], want, n, MPI_FLOAT, P2P_EB, &worst);
        MT_CHECK(t, bad == 0, "thread %d round %d message %d: %zu elements beyond %g (worst %g)", j->id, round, k,
                 bad, P2P_EB, worst);
        free(sbuf[k]);
        free(rbuf[k]);
    }
    free(want);
}

static void *worker(void *arg)
{
    job *j = arg;
    for (int round = 0; round < ROUNDS; round++) {
        allreduce(j, round);
        p2p(j, round);
        bcast(j, round);
        allgather(j, round);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    mt_state t;
    int provided = mt_init_thread(&t, &argc, &argv, "test_threads", MPI_THREAD_MULTIPLE);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (t.rank == 0)
            printf("test_threads: SKIPPED, the MPI provides thread level %d only\n", provided);
        MT_CHECK(&t, 1, "skipped");
        return mt_finish(&t);
    }
    MPI_Comm shared;
    MPI_Comm_dup(MPI_COMM_WORLD, &shared);
    MPI_Comm_set_errhandler(shared, MPI_ERRORS_RETURN);
    /* the shared communicator's configuration is set before the threads start */
    mt_config(shared, ZMPI_CODEC_FZL, ZMPI_EB_ABS, P2P_EB, ZMPI_SCOPE_MESSAGE, 0);
    ZMPI_Stats p0 = mt_stats(shared);

    job jobs[2];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, 2);
    for (int i = 0; i < 2; i++) {
        jobs[i].start = &start;
        jobs[i].id = i;
        jobs[i].shared = shared;
        jobs[i].t = t;
        jobs[i].t.checks = jobs[i].t.failures = 0;
        jobs[i].mode = i ? ZMPI_EB_REL : ZMPI_EB_ABS;
        jobs[i].eb = i ? 1e-4 : 1e-3;
        MPI_Comm_dup(MPI_COMM_WORLD, &jobs[i].own);
        MPI_Comm_set_errhandler(jobs[i].own, MPI_ERRORS_RETURN);
    }
    pthread_t th[2];
    int started[2];
    for (int i = 0; i < 2; i++) {
        started[i] = pthread_create(&th[i], NULL, worker, &jobs[i]) == 0;
        MT_CHECK(&t, started[i], "pthread_create %d", i);
        if (!started[i])
            MPI_Abort(MPI_COMM_WORLD, 2); /* the peers' threads would wait forever */
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&start);
    for (int i = 0; i < 2; i++) {
        t.checks += jobs[i].t.checks;
        t.failures += jobs[i].t.failures;
        MPI_Comm_free(&jobs[i].own);
    }
    /* every message was sent compressed */
    ZMPI_Stats p1 = mt_stats(shared);
    MT_CHECK(&t, p1.compressed - p0.compressed >= 2ull * ROUNDS * NMSG,
             "point-to-point: %llu compressed calls, expected at least %d sends", p1.compressed - p0.compressed,
             2 * ROUNDS * NMSG);
    MT_CHECK(&t, p1.bytes_sent > p0.bytes_sent && p1.bytes_sent - p0.bytes_sent < p1.bytes_raw - p0.bytes_raw,
             "point-to-point: %llu bytes sent for %llu raw", p1.bytes_sent - p0.bytes_sent,
             p1.bytes_raw - p0.bytes_raw);
    MPI_Comm_free(&shared);
    return mt_finish(&t);
}
