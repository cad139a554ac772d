/*
 * zmpi's requests and probes:
 *   - a zmpi request completed by MPI's own MPI_Wait (MPICH) is decoded, and
 *     a later plain request that MPI gives the same handle value is never
 *     taken for it (the stale-entry bug: wrong status, old buffer written);
 *   - every completion call (Wait, Waitall, Waitany, Waitsome, Test,
 *     Testall, Testany, Testsome) on mixed zmpi and plain requests gives
 *     MPI's statuses and decoded data; Request_free and Cancel;
 *   - ZMPI_Probe / Iprobe / Mprobe / Improbe report uncompressed element
 *     counts, and the receive that follows gets the data;
 *   - a receive counts as compressed (ZMPI_Stats.compressed) when a
 *     compressed message arrived, not because its capacity is large.
 * Every lossy result is checked on every element against the bound.
 */
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

#define N 60000
#define EB 1e-3

static mt_state T;
static MPI_Comm C;
static int right, left;

static void fill(float *a, int who, int salt)
{
    mt_fill_field(a, N, MPI_FLOAT, (size_t)who * 977 + (size_t)salt * 31);
}

/* every element of got within EB of what `who` sent with salt */
static void check(const float *got, int n, int who, int salt, const char *what)
{
    float *ref = malloc((size_t)N * 4);
    fill(ref, who, salt);
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        worst = d > worst ? d : worst;
    }
    MT_CHECK(&T, worst <= EB, "%s: max error %g > %g", what, worst, EB);
    free(ref);
}

static void check_status(const MPI_Status *st, int src, int tag, int n, const char *what)
{
    int cnt = -1;
    MPI_Get_count(st, MPI_FLOAT, &cnt);
    MT_CHECK(&T, st->MPI_SOURCE == src && st->MPI_TAG == tag && cnt == n, "%s: status (%d, %d, %d), want (%d, %d, %d)",
             what, st->MPI_SOURCE, st->MPI_TAG, cnt, src, tag, n);
}

/* The reported bug: ZMPI_Irecv finished by MPI_Wait, then an unrelated
 * plain MPI_Irecv finished by ZMPI_Wait. */
static void stale_entry(void)
{
#if defined(MPICH)
    float *a = malloc(N * 4), *b = malloc(N * 4);
    int small[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[8] = {0};
    MPI_Request r, s;
    MPI_Status st;
    fill(a, T.rank, 1);
    ZMPI_Irecv(b, N, MPI_FLOAT, left, 1, C, &r);
    ZMPI_Isend(a, N, MPI_FLOAT, right, 1, C, &s);
    int rc = MPI_Wait(&r, &st); /* MPI's own call: MPICH drives zmpi's request */
    MT_CHECK(&T, rc == MPI_SUCCESS && r == MPI_REQUEST_NULL, "MPI_Wait on a zmpi request: rc %d", rc);
    check_status(&st, left, 1, N, "MPI_Wait on a zmpi request");
    check(b, N, left, 1, "MPI_Wait on a zmpi request");
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    free(b); /* the old buffer is gone: nothing may write to it */
    /* a plain request that may get the same handle value */
    MPI_Irecv(got, 8, MPI_INT, left, 2, C, &r);
    MPI_Send(small, 8, MPI_INT, right, 2, C);
    rc = ZMPI_Wait(&r, &st);
    int cnt = -1;
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(&T, rc == MPI_SUCCESS && cnt == 8 && st.MPI_TAG == 2 && !memcmp(got, small, sizeof small),
             "plain request after a zmpi one: rc %d count %d tag %d", rc, cnt, st.MPI_TAG);
    free(a);
#endif
}

/* Four messages (tags 10..13) from the left; requests mixed with a plain
 * integer receive; completed by `how`. */
static void family(const char *how)
{
    float *a = malloc(N * 4), *b[4];
    int ia = T.rank, ib = -1;
    MPI_Request r[5], s[5];
    MPI_Status st[5];
    for (int k = 0; k < 4; k++) {
        b[k] = malloc(N * 4);
        ZMPI_Irecv(b[k], N, MPI_FLOAT, left, 10 + k, C, &r[k]);
    }
    ZMPI_Irecv(&ib, 1, MPI_INT, left, 14, C, &r[4]);
    for (int k = 0; k < 4; k++) {
        float *x = malloc(N * 4);
        fill(x, T.rank, 10 + k);
        ZMPI_Send(x, N, MPI_FLOAT, right, 10 + k, C);
        free(x);
    }
    ZMPI_Isend(&ia, 1, MPI_INT, right, 14, C, &s[0]);
    int done[5] = {0}, ndone = 0, rc = MPI_SUCCESS;
    while (ndone < 5 && rc == MPI_SUCCESS) {
        int idx[5], out = 0, flag = 0, i;
        if (!strcmp(how, "Waitall")) {
            rc = ZMPI_Waitall(5, r, st);
            for (i = 0; i < 5; i++)
                done[i] = 1;
            ndone = 5;
        } else if (!strcmp(how, "Testall")) {
            rc = ZMPI_Testall(5, r, &flag, st);
            if (flag) {
                for (i = 0; i < 5; i++)
                    done[i] = 1;
                ndone = 5;
            }
        } else if (!strcmp(how, "Waitany") || !strcmp(how, "Testany")) {
            MPI_Status one;
            rc = how[0] == 'W' ? ZMPI_Waitany(5, r, &i, &one) : ZMPI_Testany(5, r, &i, &flag, &one);
            if (rc == MPI_SUCCESS && (how[0] == 'W' || flag) && i != MPI_UNDEFINED) {
                MT_CHECK(&T, !done[i] && r[i] == MPI_REQUEST_NULL, "%s: index %d twice or still active", how, i);
                done[i] = 1;
                st[i] = one;
                ndone++;
            }
        } else if (!strcmp(how, "Waitsome") || !strcmp(how, "Testsome")) {
            MPI_Status some[5];
            rc = how[0] == 'W' ? ZMPI_Waitsome(5, r, &out, idx, some) : ZMPI_Testsome(5, r, &out, idx, some);
            for (int k = 0; rc == MPI_SUCCESS && out != MPI_UNDEFINED && k < out; k++) {
                MT_CHECK(&T, !done[idx[k]], "%s: index %d twice", how, idx[k]);
                done[idx[k]] = 1;
                st[idx[k]] = some[k];
                ndone++;
            }
        } else { /* Wait / Test one by one, last first */
            for (i = 4; i >= 0 && done[i]; i--)
                ;
            if (how[0] == 'W')
                rc = ZMPI_Wait(&r[i], &st[i]), flag = 1;
            else
                rc = ZMPI_Test(&r[i], &flag, &st[i]);
            if (flag) {
                done[i] = 1;
                ndone++;
            }
        }
    }
    MT_CHECK(&T, rc == MPI_SUCCESS && ndone == 5, "%s: rc %d, %d completed", how, rc, ndone);
    for (int k = 0; k < 4; k++) {
        check_status(&st[k], left, 10 + k, N, how);
        check(b[k], N, left, 10 + k, how);
        MT_CHECK(&T, r[k] == MPI_REQUEST_NULL, "%s: request %d not freed", how, k);
        free(b[k]);
    }
    MT_CHECK(&T, ib == left && st[4].MPI_TAG == 14, "%s: plain int message %d", how, ib);
    ZMPI_Wait(&s[0], MPI_STATUS_IGNORE);
    free(a);
}

static void free_and_cancel(void)
{
    float *a = malloc(N * 4), *b = malloc(N * 4), *never = malloc(N * 4);
    MPI_Request r, s;
    MPI_Status st;
    /* a freed send still arrives */
    fill(a, T.rank, 20);
    ZMPI_Isend(a, N, MPI_FLOAT, right, 20, C, &s);
    int rc = ZMPI_Request_free(&s);
    MT_CHECK(&T, rc == MPI_SUCCESS && s == MPI_REQUEST_NULL, "Request_free: rc %d", rc);
    rc = ZMPI_Recv(b, N, MPI_FLOAT, left, 20, C, &st);
    check_status(&st, left, 20, N, "after Request_free");
    check(b, N, left, 20, "after Request_free");
    MPI_Barrier(C); /* every freed send has been received */
    /* a zmpi call completes freed requests */
    ZMPI_Sendrecv(a, 0, MPI_FLOAT, T.rank, 99, b, 0, MPI_FLOAT, T.rank, 99, C, MPI_STATUS_IGNORE);
    /* a receive that nothing matches, cancelled */
    ZMPI_Irecv(never, N, MPI_FLOAT, left, 21, C, &r);
    rc = ZMPI_Cancel(&r);
    int cancelled = 0;
    rc |= ZMPI_Wait(&r, &st);
    MPI_Test_cancelled(&st, &cancelled);
    MT_CHECK(&T, rc == MPI_SUCCESS && cancelled && r == MPI_REQUEST_NULL, "Cancel: rc %d cancelled %d", rc,
             cancelled);
    free(a);
    free(b);
    free(never);
}

static void probes(void)
{
    float *a = malloc(N * 4), *b = malloc(N * 4);
    MPI_Status st;
    MPI_Message m;
    MPI_Request r;
    int cnt = -1, flag = 0, ia[3] = {7, 8, 9}, ib[3] = {0};
    fill(a, T.rank, 30);
    /* Probe, then a receive sized from the count */
    ZMPI_Isend(a, N - 5, MPI_FLOAT, right, 30, C, &r);
    int rc = ZMPI_Probe(left, 30, C, &st);
    ZMPI_Get_count(&st, MPI_FLOAT, &cnt);
    MT_CHECK(&T, rc == MPI_SUCCESS && cnt == N - 5 && st.MPI_SOURCE == left, "Probe: rc %d count %d", rc, cnt);
    rc = ZMPI_Recv(b, cnt, MPI_FLOAT, left, 30, C, &st);
    check_status(&st, left, 30, N - 5, "Probe + Recv");
    check(b, N - 5, left, 30, "Probe + Recv");
    ZMPI_Wait(&r, MPI_STATUS_IGNORE);
    /* Iprobe loop with MPI_ANY_SOURCE / MPI_ANY_TAG, then Irecv */
    ZMPI_Isend(a, N, MPI_FLOAT, right, 31, C, &r);
    do
        rc = ZMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, C, &flag, &st);
    while (rc == MPI_SUCCESS && !flag);
    MPI_Get_count(&st, MPI_FLOAT, &cnt); /* MPI's own Get_count reads the same status */
    MT_CHECK(&T, cnt == N && st.MPI_TAG == 31, "Iprobe: count %d tag %d", cnt, st.MPI_TAG);
    rc = ZMPI_Iprobe(left, 31, C, &flag, &st); /* the same message again */
    MT_CHECK(&T, rc == MPI_SUCCESS && flag, "second Iprobe finds the message again");
    MPI_Request rr;
    ZMPI_Irecv(b, N, MPI_FLOAT, MPI_ANY_SOURCE, MPI_ANY_TAG, C, &rr);
    ZMPI_Wait(&rr, &st);
    check_status(&st, left, 31, N, "Iprobe + Irecv");
    check(b, N, left, 30, "Iprobe + Irecv");
    ZMPI_Wait(&r, MPI_STATUS_IGNORE);
    /* Mprobe + Mrecv, and a plain int message in between */
    ZMPI_Isend(a, N, MPI_FLOAT, right, 32, C, &r);
    MPI_Request ri;
    ZMPI_Isend(ia, 3, MPI_INT, right, 33, C, &ri);
    rc = ZMPI_Mprobe(left, 32, C, &m, &st);
    ZMPI_Get_count(&st, MPI_FLOAT, &cnt);
    MT_CHECK(&T, rc == MPI_SUCCESS && cnt == N, "Mprobe: rc %d count %d", rc, cnt);
    rc = ZMPI_Probe(left, 33, C, &st); /* an int message, kept too */
    MPI_Get_count(&st, MPI_INT, &cnt);
    MT_CHECK(&T, rc == MPI_SUCCESS && cnt == 3, "Probe of ints: count %d", cnt);
    rc = ZMPI_Mrecv(b, N, MPI_FLOAT, &m, &st);
    MT_CHECK(&T, rc == MPI_SUCCESS && m == MPI_MESSAGE_NULL, "Mrecv: rc %d", rc);
    check_status(&st, left, 32, N, "Mprobe + Mrecv");
    check(b, N, left, 30, "Mprobe + Mrecv");
    rc = ZMPI_Recv(ib, 3, MPI_INT, left, 33, C, &st);
    MT_CHECK(&T, rc == MPI_SUCCESS && ib[0] == 7 && ib[2] == 9, "kept int message: rc %d", rc);
    ZMPI_Wait(&r, MPI_STATUS_IGNORE);
    ZMPI_Wait(&ri, MPI_STATUS_IGNORE);
    /* Improbe + Imrecv */
    ZMPI_Isend(a, N, MPI_FLOAT, right, 34, C, &r);
    do
        rc = ZMPI_Improbe(left, 34, C, &flag, &m, &st);
    while (rc == MPI_SUCCESS && !flag);
    ZMPI_Imrecv(b, N, MPI_FLOAT, &m, &rr);
    rc = ZMPI_Wait(&rr, &st);
    check_status(&st, left, 34, N, "Improbe + Imrecv");
    check(b, N, left, 30, "Improbe + Imrecv");
    ZMPI_Wait(&r, MPI_STATUS_IGNORE);
    /* a probed message into too small a receive: truncation, reported */
    ZMPI_Isend(a, N, MPI_FLOAT, right, 35, C, &r);
    ZMPI_Probe(left, 35, C, &st);
    rc = ZMPI_Recv(b, N / 2, MPI_FLOAT, left, 35, C, &st);
    int cls = -1;
    ZMPI_Error_class(rc, &cls);
    MT_CHECK(&T, cls == MPI_ERR_TRUNCATE, "probed message truncated: rc %d class %d", rc, cls);
    ZMPI_Wait(&r, MPI_STATUS_IGNORE);
    free(a);
    free(b);
}

/* A receive with room for a compressed message that gets a small raw one
 * moved no compressed data; one that gets a compressed message did. */
static void recv_counted(void)
{
    float *a = malloc(N * 4), *b = malloc(N * 4);
    ZMPI_Stats s0, s1, s2;
    MPI_Status st;
    fill(a, T.rank, 9);
    ZMPI_Comm_get_stats(C, &s0);
    /* 100 floats (400 bytes, below the 1024-byte threshold): raw */
    ZMPI_Sendrecv(a, 100, MPI_FLOAT, right, 70, b, N, MPI_FLOAT, left, 70, C, &st);
    ZMPI_Comm_get_stats(C, &s1);
    check_status(&st, left, 70, 100, "small message into a large receive");
    MT_CHECK(&T, s1.compressed == s0.compressed, "a raw message and its receive counted %llu compressed calls",
             s1.compressed - s0.compressed);
    ZMPI_Sendrecv(a, N, MPI_FLOAT, right, 71, b, N, MPI_FLOAT, left, 71, C, &st);
    ZMPI_Comm_get_stats(C, &s2);
    check(b, N, left, 9, "recv_counted");
    MT_CHECK(&T, s2.compressed == s1.compressed + 2, "a compressed send and its receive counted %llu compressed calls",
             s2.compressed - s1.compressed);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_requests");
    MPI_Comm_dup(MPI_COMM_WORLD, &C);
    MPI_Comm_set_errhandler(C, MPI_ERRORS_RETURN);
    right = (T.rank + 1) % T.size;
    left = (T.rank + T.size - 1) % T.size;
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.eb_mode = ZMPI_EB_ABS;
    cfg.eb = EB;
    cfg.min_bytes = 1024;
    ZMPI_Comm_set_config(C, &cfg);
    stale_entry();
    static const char *const hows[] = {"Waitall", "Testall", "Waitany", "Testany", "Waitsome", "Testsome", "Wait", "Test"};
    for (size_t i = 0; i < sizeof hows / sizeof hows[0]; i++) {
        family(hows[i]);
        MPI_Barrier(C);
    }
    free_and_cancel();
    MPI_Barrier(C);
    probes();
    MPI_Barrier(C);
    if (T.size > 1)
        recv_counted();
    ZMPI_Stats s;
    ZMPI_Comm_get_stats(C, &s);
    MT_CHECK(&T, s.bytes_sent > 0 && s.bytes_sent < s.bytes_raw / 2, "messages were compressed: %llu of %llu bytes",
             s.bytes_sent, s.bytes_raw);
    MPI_Comm_free(&C);
    return mt_finish(&T);
}
