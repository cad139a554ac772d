/*
 * Hostile but legal MPI usage through libzmpi_preload.so: an ordinary MPI
 * program (no zmpi call) that checks what MPI promises where a compressed
 * message could leak its stream bytes or arrive out of order. Run plain and
 * under the preload (run_hostile.sh), at 2 to 4 ranks in a ring (each rank
 * sends to the right and receives from the left).
 *
 *   preload_hostile TOLERANCE [CASE...]
 *
 * CASEs (all when none is given):
 *   bytes      doubles sent as MPI_DOUBLE, received as MPI_BYTE, MPI_PACKED
 *              (+ MPI_Unpack), a contiguous type of 8 MPI_BYTEs, a strided
 *              byte type, after MPI_Probe (MPI_Get_count in bytes), by
 *              MPI_Mprobe + MPI_Mrecv, MPI_Irecv and MPI_Sendrecv: each
 *              receive holds the sender's doubles (within TOLERANCE), its
 *              count in bytes is the raw size
 *   userstream a zmpi stream the program makes itself with the codec API
 *              (when the zmpi libraries are loaded) sent as MPI_BYTE and as
 *              MPI_FLOAT, with and without the message flag: it arrives as
 *              those exact bytes
 *   replace    MPI_Sendrecv_replace of doubles in the ring with a send tag
 *              other than the receive tag
 *   getstatus  MPI_Irecv polled with MPI_Request_get_status until its flag,
 *              the data checked before MPI_Wait
 *   kept       two MPI_INT messages 1 then 2; MPI_Probe; then MPI_Recv_init
 *              + MPI_Start + MPI_Wait and MPI_Isendrecv (MPI-4): 1 before 2,
 *              or an error for the receive - never 2 first
 *   truncate   MPI_Allgather with sendcount > recvcount: MPI_ERR_TRUNCATE
 *   partial    (a run where only some ranks have a bound) MPI_Recv_init +
 *              MPI_Start and MPI_Isendrecv_replace of doubles on every rank:
 *              the doubles within TOLERANCE or an error, never stream bytes
 *   made       communicators made by MPI_Comm_dup, _dup_with_info, _split
 *              (MPI_UNDEFINED on some ranks), _split_type, _create, _create_group,
 *              MPI_Cart_create, _sub, MPI_Graph_create, MPI_Dist_graph_create,
 *              _create_adjacent and MPI_Intercomm_merge: under the preload
 *              with compression on, zmpi has set each up when it returns
 *              (its node layout is known: ZMPI_Stats.nodes, looked up with
 *              dlsym), each has the error handler MPI gives it (the
 *              parent's, or the default), and an
 *              MPI_Allreduce of doubles on it is within TOLERANCE
 *   ids        integer ids 0..N-1 carried in MPI_DOUBLE by MPI_Sendrecv and
 *              MPI_Sendrecv_replace, checked EXACTLY whatever TOLERANCE
 *              (run with a policy that excludes those calls or their sites)
 * Every error is reported; the exit status is 1 if any check failed.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zmpi/zmpi.h> /* ZMPI_Stats only: this program calls no zmpi function directly */

/* MPI_STATUSES_IGNORE passed for an array parameter: a known false positive */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define BIG 50000 /* 400 KB of doubles: compressed */

static int rank, size, left, right, errors;
static double tol;

static void fail(const char *what, const char *fmt, long a, long b)
{
    if (errors++ < 30) {
        fprintf(stderr, "preload_hostile: rank %d: %s: ", rank, what);
        fprintf(stderr, fmt, a, b);
        fputc('\n', stderr);
    }
}

static double val(int src, int id, int i)
{
    return sin(0.001 * i + 0.3 * id) * 40.0 + src;
}

static void fill(double *b, int n, int id)
{
    for (int i = 0; i < n; i++)
        b[i] = val(rank, id, i);
}

/* n doubles at b (any alignment) against what rank src sent as id. */
static void check_doubles(const char *what, const void *b, int n, int src, int id)
{
    long bad = 0, first = -1;
    for (int i = 0; i < n; i++) {
        double x;
        memcpy(&x, (const char *)b + (size_t)i * sizeof x, sizeof x);
        if (!(fabs(x - val(src, id, i)) <= tol) && !bad++)
            first = i;
    }
    if (bad)
        fail(what, "%ld of the doubles off, the first at %ld", bad, first);
}

static void check_bytes(const char *what, const MPI_Status *st, long want)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    if (n != want)
        fail(what, "MPI_Get_count(MPI_BYTE) %ld, expected %ld", n, want);
}

static MPI_Comm returning(void)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    return c;
}

/* ---- bytes: a compressed message received as bytes ---- */

static void case_bytes(void)
{
    double *s = malloc(sizeof(double) * BIG * 8);
    unsigned char *r = malloc(sizeof(double) * BIG * 2);
    MPI_Request q[8];
    MPI_Status st;
    MPI_Message m;
    MPI_Datatype b8, strided;
    int pos = 0, kind = 0;
    double *u = malloc(sizeof(double) * BIG);
    MPI_Type_contiguous(8, MPI_BYTE, &b8);
    MPI_Type_commit(&b8);
    MPI_Type_vector(BIG, 8, 16, MPI_BYTE, &strided); /* every other 8 bytes */
    MPI_Type_commit(&strided);
    for (int k = 0; k < 8; k++) {
        fill(s + (size_t)k * BIG, BIG, k);
        MPI_Isend(s + (size_t)k * BIG, BIG, MPI_DOUBLE, right, 200 + k, MPI_COMM_WORLD, &q[k]);
    }
    /* 0: MPI_BYTE */
    MPI_Recv(r, 8 * BIG, MPI_BYTE, left, 200, MPI_COMM_WORLD, &st);
    check_bytes("MPI_Recv as MPI_BYTE", &st, 8L * BIG);
    check_doubles("MPI_Recv as MPI_BYTE", r, BIG, left, 0);
    /* 1: MPI_PACKED + MPI_Unpack */
    MPI_Recv(r, 8 * BIG, MPI_PACKED, left, 201, MPI_COMM_WORLD, &st);
    check_bytes("MPI_Recv as MPI_PACKED", &st, 8L * BIG);
    MPI_Unpack(r, 8 * BIG, &pos, u, BIG, MPI_DOUBLE, MPI_COMM_WORLD);
    check_doubles("MPI_PACKED + MPI_Unpack", u, BIG, left, 1);
    /* 2: a contiguous type of 8 bytes */
    MPI_Recv(r, BIG, b8, left, 202, MPI_COMM_WORLD, &st);
    int n8 = -1;
    MPI_Get_count(&st, b8, &n8);
    if (n8 != BIG)
        fail("contiguous 8-byte type", "MPI_Get_count %ld, expected %ld", n8, BIG);
    check_doubles("contiguous 8-byte type", r, BIG, left, 2);
    /* 3: a strided byte type: doubles land at every other 8 bytes, the gaps stay */
    memset(r, 0xA5, sizeof(double) * BIG * 2);
    MPI_Recv(r, 1, strided, left, 203, MPI_COMM_WORLD, &st);
    check_bytes("strided byte type", &st, 8L * BIG);
    long gaps = 0;
    for (int i = 0; i < BIG; i++) {
        memcpy(u + i, r + 16 * (size_t)i, sizeof(double));
        for (int j = 8; j < 16; j++)
            gaps += r[16 * (size_t)i + j] != 0xA5;
    }
    check_doubles("strided byte type", u, BIG, left, 3);
    if (gaps)
        fail("strided byte type", "%ld gap bytes written (%ld)", gaps, 0);
    /* 4: MPI_Probe, then the count in bytes and a byte receive */
    MPI_Probe(left, 204, MPI_COMM_WORLD, &st);
    check_bytes("MPI_Probe", &st, 8L * BIG);
    MPI_Recv(r, 8 * BIG, MPI_BYTE, left, 204, MPI_COMM_WORLD, &st);
    check_bytes("MPI_Probe + MPI_Recv as MPI_BYTE", &st, 8L * BIG);
    check_doubles("MPI_Probe + MPI_Recv as MPI_BYTE", r, BIG, left, 4);
    /* 5: MPI_Mprobe + MPI_Mrecv as MPI_BYTE */
    MPI_Mprobe(left, 205, MPI_COMM_WORLD, &m, &st);
    check_bytes("MPI_Mprobe", &st, 8L * BIG);
    MPI_Mrecv(r, 8 * BIG, MPI_BYTE, &m, &st);
    check_bytes("MPI_Mrecv as MPI_BYTE", &st, 8L * BIG);
    check_doubles("MPI_Mrecv as MPI_BYTE", r, BIG, left, 5);
    /* 6: MPI_Irecv as MPI_BYTE */
    MPI_Request rq;
    MPI_Irecv(r, 8 * BIG, MPI_BYTE, left, 206, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, &st);
    check_bytes("MPI_Irecv as MPI_BYTE", &st, 8L * BIG);
    check_doubles("MPI_Irecv as MPI_BYTE", r, BIG, left, 6);
    /* 7: a byte receive too small for the raw doubles (not for the stream): truncation */
    MPI_Comm c = returning();
    MPI_Request q7;
    fill(s, BIG, 7);
    MPI_Isend(s, BIG, MPI_DOUBLE, right, 207, c, &q7);
    int rc = MPI_Recv(r, 4 * BIG, MPI_BYTE, left, 207, c, &st);
    MPI_Error_class(rc, &kind);
    if (kind != MPI_ERR_TRUNCATE)
        fail("half-size byte receive", "error class %ld, expected MPI_ERR_TRUNCATE (%ld)", kind, MPI_ERR_TRUNCATE);
    MPI_Wait(&q7, MPI_STATUS_IGNORE);
    MPI_Comm_free(&c);
    /* the rest: MPI_Sendrecv of doubles received as bytes */
    MPI_Recv(r, 8 * BIG, MPI_BYTE, left, 207, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Waitall(8, q, MPI_STATUSES_IGNORE);
    fill(s, BIG, 9);
    MPI_Sendrecv(s, BIG, MPI_DOUBLE, right, 209, r, 8 * BIG, MPI_BYTE, left, 209, MPI_COMM_WORLD, &st);
    check_bytes("MPI_Sendrecv into MPI_BYTE", &st, 8L * BIG);
    check_doubles("MPI_Sendrecv into MPI_BYTE", r, BIG, left, 9);
    MPI_Type_free(&b8);
    MPI_Type_free(&strided);
    free(u);
    free(s);
    free(r);
}

/* ---- userstream: the program's own zmpi streams are data ---- */

typedef struct zmpi_ctx zmpi_ctx;
typedef zmpi_ctx *(*ctx_create_fn)(void);
typedef void (*ctx_free_fn)(zmpi_ctx *);
typedef int (*set_bound_fn)(zmpi_ctx *, int, double);
typedef long long (*set_param_fn)(zmpi_ctx *, int, long long);
typedef ptrdiff_t (*compress_fn)(zmpi_ctx *, const void *, size_t, int, void *, size_t);

/* A stream of BIG doubles made with libzmpi's codec API (fzl, ABS 1e-3),
 * flagged as a zmpi message when `message`; its size, 0 when libzmpi is
 * not in the process. */
static size_t make_stream(unsigned char *out, size_t cap, int message, int id)
{
    ctx_create_fn create;
    ctx_free_fn destroy;
    set_bound_fn bound;
    set_param_fn param;
    compress_fn compress;
    void *p[5] = {dlsym(RTLD_DEFAULT, "zmpi_ctx_create"), dlsym(RTLD_DEFAULT, "zmpi_ctx_free"),
                  dlsym(RTLD_DEFAULT, "zmpi_ctx_set_bound"), dlsym(RTLD_DEFAULT, "zmpi_ctx_set_param"),
                  dlsym(RTLD_DEFAULT, "zmpi_compress")};
    for (int i = 0; i < 5; i++)
        if (!p[i])
            return 0;
    memcpy(&create, &p[0], sizeof p[0]);
    memcpy(&destroy, &p[1], sizeof p[1]);
    memcpy(&bound, &p[2], sizeof p[2]);
    memcpy(&param, &p[3], sizeof p[3]);
    memcpy(&compress, &p[4], sizeof p[4]);
    double *x = malloc(sizeof(double) * BIG);
    fill(x, BIG, id);
    zmpi_ctx *ctx = create();
    bound(ctx, 1 /* ZMPI_EB_ABS */, 1e-3);
    param(ctx, 8 /* ZMPI_P_MESSAGE */, message);
    ptrdiff_t n = compress(ctx, x, BIG, 2 /* ZMPI_DOUBLE */, out, cap);
    destroy(ctx);
    free(x);
    return n > 0 ? (size_t)n : 0;
}

static void case_userstream(void)
{
    size_t cap = sizeof(double) * BIG + 4096;
    unsigned char *s = malloc(cap), *r = malloc(cap);
    MPI_Status st;
    for (int message = 0; message < 2; message++) {
        /* as MPI_FLOAT only where floats arrive exactly (a bound would change them) */
        for (int as_float = 0; as_float < (tol == 0 ? 2 : 1); as_float++) {
            size_t n = make_stream(s, cap, message, 60 + message);
            int all = 0, mine = n > 0;
            MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
            if (!all) {
                if (rank == 0 && message == 0 && as_float == 0)
                    printf("preload_hostile: userstream: libzmpi is not in the process: skipped\n");
                break;
            }
            if (!as_float) { /* the exact stream, as bytes */
                MPI_Sendrecv(s, (int)n, MPI_BYTE, right, 300, r, (int)cap, MPI_BYTE, left, 300, MPI_COMM_WORLD, &st);
            } else { /* as whole floats: still a stream when its length allows */
                MPI_Sendrecv(s, (int)(n / 4), MPI_FLOAT, right, 301, r, (int)(cap / 4), MPI_FLOAT, left, 301,
                             MPI_COMM_WORLD, &st);
            }
            int got = -1;
            MPI_Get_count(&st, MPI_BYTE, &got);
            /* the left neighbour's stream: make it here too (same data, same codec) */
            unsigned char *want = malloc(cap);
            int saved = rank;
            rank = left;
            size_t wn = make_stream(want, cap, message, 60 + message);
            rank = saved;
            if (as_float)
                wn = wn / 4 * 4;
            if ((size_t)got != wn || memcmp(r, want, wn))
                fail(as_float ? "a zmpi stream of the program's sent as MPI_FLOAT"
                              : "a zmpi stream of the program's sent as MPI_BYTE",
                     "arrived as %ld bytes other than the %ld sent", got, (long)wn);
            free(want);
        }
    }
    free(s);
    free(r);
}

/* ---- replace: MPI_Sendrecv_replace around the ring, tags differ ---- */

static void case_replace(void)
{
    double *b = malloc(sizeof(double) * BIG);
    MPI_Status st;
    fill(b, BIG, 70);
    /* sent with tag 400 + rank, received with the left neighbour's tag */
    MPI_Sendrecv_replace(b, BIG, MPI_DOUBLE, right, 400 + rank, left, 400 + left, MPI_COMM_WORLD, &st);
    if (st.MPI_SOURCE != left || st.MPI_TAG != 400 + left)
        fail("MPI_Sendrecv_replace", "status source %ld tag %ld", st.MPI_SOURCE, st.MPI_TAG);
    int n = -1;
    MPI_Get_count(&st, MPI_DOUBLE, &n);
    if (n != BIG)
        fail("MPI_Sendrecv_replace", "MPI_Get_count %ld, expected %ld", n, BIG);
    check_doubles("MPI_Sendrecv_replace", b, BIG, left, 70);
    free(b);
}

/* ---- getstatus: MPI_Request_get_status polls a receive to its end ---- */

static void case_getstatus(void)
{
    double *s = malloc(sizeof(double) * BIG), *r = malloc(sizeof(double) * BIG);
    MPI_Request q, rq;
    MPI_Status st;
    int flag = 0;
    long polls = 0;
    fill(s, BIG, 80);
    MPI_Irecv(r, BIG, MPI_DOUBLE, left, 500, MPI_COMM_WORLD, &rq);
    MPI_Isend(s, BIG, MPI_DOUBLE, right, 500, MPI_COMM_WORLD, &q);
    while (!flag && polls < 200000000L) {
        MPI_Request_get_status(rq, &flag, &st);
        polls++;
    }
    if (!flag) {
        fail("MPI_Request_get_status", "never set its flag (%ld polls, %ld)", polls, 0);
    } else {
        int n = -1;
        MPI_Get_count(&st, MPI_DOUBLE, &n);
        if (n != BIG || st.MPI_SOURCE != left)
            fail("MPI_Request_get_status", "count %ld source %ld", n, st.MPI_SOURCE);
        check_doubles("MPI_Request_get_status, before MPI_Wait", r, BIG, left, 80);
    }
    MPI_Wait(&rq, &st);
    check_doubles("MPI_Request_get_status, after MPI_Wait", r, BIG, left, 80);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    free(s);
    free(r);
}

/* ---- kept: a probed message and the receives MPI makes itself ---- */

/* Receives one int from the left on tag with `how` (0: Recv_init + Start +
 * Wait, 1: MPI_Isendrecv with an empty send): the value, or -1 if the
 * receive was refused with an error. */
static int kept_receive(MPI_Comm c, int how, int tag)
{
    int v = -1, rc;
    MPI_Request q;
    if (how == 0) {
        rc = MPI_Recv_init(&v, 1, MPI_INT, left, tag, c, &q);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Start(&q);
            if (rc == MPI_SUCCESS)
                rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
            MPI_Request_free(&q);
        }
    } else {
#if MPI_VERSION >= 4
        rc = MPI_Isendrecv(NULL, 0, MPI_INT, MPI_PROC_NULL, 0, &v, 1, MPI_INT, left, tag, c, &q);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
#else
        rc = MPI_Irecv(&v, 1, MPI_INT, left, tag, c, &q);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
#endif
    }
    return rc == MPI_SUCCESS ? v : -1;
}

static void case_kept(void)
{
    MPI_Comm c = returning();
    for (int how = 0; how < 2; how++) {
        int one = 1, two = 2, tag = 600 + how;
        MPI_Request q[2];
        MPI_Status st;
        MPI_Isend(&one, 1, MPI_INT, right, tag, c, &q[0]);
        MPI_Isend(&two, 1, MPI_INT, right, tag, c, &q[1]);
        MPI_Probe(left, tag, c, &st); /* the first message, 1 */
        int a = kept_receive(c, how, tag);
        int b = -1;
        if (a == -1) { /* refused: both messages still come, in order */
            MPI_Recv(&a, 1, MPI_INT, left, tag, c, MPI_STATUS_IGNORE);
            if (rank == 0)
                printf("preload_hostile: kept: %s refused while a probed message waits\n",
                       how ? "MPI_Isendrecv" : "MPI_Recv_init");
        }
        MPI_Recv(&b, 1, MPI_INT, left, tag, c, MPI_STATUS_IGNORE);
        if (a != 1 || b != 2)
            fail(how ? "MPI_Probe then MPI_Isendrecv" : "MPI_Probe then MPI_Recv_init + MPI_Start",
                 "received %ld then %ld, expected 1 then 2", a, b);
        MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    }
    MPI_Comm_free(&c);
}

/* ---- truncate: MPI_Allgather with sendcount > recvcount ---- */

static void case_truncate(void)
{
    MPI_Comm c = returning();
    double *s = malloc(sizeof(double) * BIG), *r = malloc(sizeof(double) * (size_t)BIG * size);
    int kind = 0;
    fill(s, BIG, 90);
    int rc = MPI_Allgather(s, BIG, MPI_DOUBLE, r, BIG / 2, MPI_DOUBLE, c);
    MPI_Error_class(rc, &kind);
    if (size > 1 && kind != MPI_ERR_TRUNCATE)
        fail("MPI_Allgather, sendcount > recvcount", "error class %ld, expected MPI_ERR_TRUNCATE (%ld)", kind,
             MPI_ERR_TRUNCATE);
    MPI_Comm_free(&c);
    free(s);
    free(r);
}

/* ---- partial: compressed messages reach receives MPI makes itself ---- */

static void case_partial(void)
{
    MPI_Comm c = returning();
    double *s = malloc(sizeof(double) * BIG), *r = malloc(sizeof(double) * BIG);
    MPI_Request q, rq = MPI_REQUEST_NULL;
    /* MPI_Recv_init + MPI_Start */
    fill(s, BIG, 100);
    int rc = MPI_Recv_init(r, BIG, MPI_DOUBLE, left, 700, c, &rq);
    if (rc == MPI_SUCCESS)
        rc = MPI_Start(&rq);
    MPI_Isend(s, BIG, MPI_DOUBLE, right, 700, c, &q);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Wait(&rq, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            check_doubles("MPI_Recv_init + MPI_Start", r, BIG, left, 100);
    }
    if (rc != MPI_SUCCESS) /* refused: take the message */
        MPI_Recv(r, BIG, MPI_DOUBLE, left, 700, c, MPI_STATUS_IGNORE);
    if (rq != MPI_REQUEST_NULL)
        MPI_Request_free(&rq);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
#if MPI_VERSION >= 4
    /* MPI_Isendrecv_replace */
    fill(r, BIG, 101);
    rc = MPI_Isendrecv_replace(r, BIG, MPI_DOUBLE, right, 701, left, 701, c, &q);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        if (rc == MPI_SUCCESS)
            check_doubles("MPI_Isendrecv_replace", r, BIG, left, 101);
    } else { /* refused: the exchange as two calls */
        fill(s, BIG, 101);
        MPI_Sendrecv(s, BIG, MPI_DOUBLE, right, 701, r, BIG, MPI_DOUBLE, left, 701, c, MPI_STATUS_IGNORE);
    }
#endif
    MPI_Comm_free(&c);
    free(s);
    free(r);
}

/* ---- ids: integers carried in doubles must stay exact ---- */

static void case_ids(void)
{
    double *s = malloc(sizeof(double) * BIG), *r = malloc(sizeof(double) * BIG);
    for (int i = 0; i < BIG; i++)
        s[i] = (double)(rank * BIG + i);
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Sendrecv(s, BIG, MPI_DOUBLE, right, 800, r, BIG, MPI_DOUBLE, left, 800, w, MPI_STATUS_IGNORE); /* site:ids-1 */
    long bad = 0;
    for (int i = 0; i < BIG; i++)
        bad += r[i] != (double)(left * BIG + i);
    if (bad)
        fail("ids through MPI_Sendrecv", "%ld of %ld ids changed", bad, BIG);
    MPI_Sendrecv_replace(s, BIG, MPI_DOUBLE, right, 801, left, 801, w, MPI_STATUS_IGNORE); /* site:ids-2 */
    bad = 0;
    for (int i = 0; i < BIG; i++)
        bad += s[i] != (double)(left * BIG + i);
    if (bad)
        fail("ids through MPI_Sendrecv_replace", "%ld of %ld ids changed", bad, BIG);
    free(s);
    free(r);
}

/* ---- made: communicators the program makes ---- */

static int handler_calls;

static void count_error(MPI_Comm *c, int *code, ...)
{
    (void)c;
    (void)code;
    handler_calls++;
}

/* c, just made from a parent whose error handler was eh: set up by zmpi if
 * prepared (the preload runs with compression on), eh kept, and a
 * compressed MPI_Allreduce on it right. */
static void check_made(const char *what, MPI_Comm c, MPI_Errhandler eh, int prepared)
{
    int (*stats)(MPI_Comm, ZMPI_Stats *) = (int (*)(MPI_Comm, ZMPI_Stats *))dlsym(RTLD_DEFAULT, "ZMPI_Comm_get_stats");
    int n = 0, inter = 0;
    MPI_Comm_size(c, &n);
    MPI_Comm_test_inter(c, &inter);
    if (inter) {
        fail(what, "an intercommunicator (%ld, %ld)", 0, 0);
        return;
    }
    ZMPI_Stats st;
    if (stats && prepared && n > 1 && (stats(c, &st) != MPI_SUCCESS || st.nodes < 1))
        fail(what, "not set up by zmpi when made (nodes %ld, size %ld)", stats ? (long)st.nodes : -1L, n);
    MPI_Errhandler got = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(c, &got);
    if (got != eh && got != MPI_ERRORS_ARE_FATAL) /* MPICH 4.0 gives the default to MPI_Comm_create's */
        fail(what, "its error handler is neither the parent's nor MPI's default (%ld, %ld)", 0, 0);
    if (got != MPI_ERRHANDLER_NULL)
        MPI_Errhandler_free(&got);
    double *s = malloc(sizeof(double) * BIG), *r = malloc(sizeof(double) * BIG);
    int me = 0;
    MPI_Comm_rank(c, &me);
    for (int i = 0; i < BIG; i++) /* integers: the plain sum is exact in any order */
        s[i] = (double)((i / 16 + 3 * me) % 4096);
    if (MPI_Allreduce(s, r, BIG, MPI_DOUBLE, MPI_SUM, c) != MPI_SUCCESS) {
        fail(what, "MPI_Allreduce failed (%ld, %ld)", 0, 0);
    } else {
        long bad = 0;
        for (int i = 0; i < BIG; i++) {
            double want = 0;
            for (int k = 0; k < n; k++)
                want += (double)((i / 16 + 3 * k) % 4096);
            bad += !(fabs(r[i] - want) <= tol);
        }
        if (bad)
            fail(what, "MPI_Allreduce: %ld of %ld elements beyond the tolerance", bad, BIG);
    }
    free(s);
    free(r);
    MPI_Comm_free(&c);
}

static void case_made(void)
{
    int prepared = dlsym(RTLD_DEFAULT, "ZMPI_Comm_get_stats") && (getenv("ZMPI_EB") || getenv("ZMPI_CODEC"));
    MPI_Comm parent, c;
    MPI_Errhandler eh;
    MPI_Comm_dup(MPI_COMM_WORLD, &parent);
    MPI_Comm_create_errhandler(count_error, &eh);
    MPI_Comm_set_errhandler(parent, eh);
    MPI_Comm_dup(parent, &c);
    check_made("MPI_Comm_dup", c, eh, prepared);
    MPI_Comm_dup_with_info(parent, MPI_INFO_NULL, &c);
    check_made("MPI_Comm_dup_with_info", c, eh, prepared);
    MPI_Comm_split(parent, rank % 2, size - rank, &c);
    check_made("MPI_Comm_split", c, eh, prepared);
    MPI_Comm_split(parent, rank == 0 && size > 1 ? MPI_UNDEFINED : 0, rank, &c);
    if (rank == 0 && size > 1 ? c != MPI_COMM_NULL : c == MPI_COMM_NULL)
        fail("MPI_Comm_split with MPI_UNDEFINED", "rank %ld got the wrong communicator (%ld)", rank, 0);
    else if (c != MPI_COMM_NULL)
        check_made("MPI_Comm_split with MPI_UNDEFINED", c, eh, prepared);
    MPI_Comm_split_type(parent, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &c);
    check_made("MPI_Comm_split_type", c, eh, prepared);
    MPI_Group all, some;
    int last = size - 1;
    MPI_Comm_group(parent, &all);
    MPI_Group_excl(all, size > 1 ? 1 : 0, &last, &some);
    MPI_Comm_create(parent, some, &c);
    if (c != MPI_COMM_NULL)
        check_made("MPI_Comm_create", c, eh, prepared);
    if (rank != last || size == 1) {
        MPI_Comm_create_group(parent, some, 7, &c);
        check_made("MPI_Comm_create_group", c, eh, prepared);
    }
    MPI_Group_free(&some);
    MPI_Group_free(&all);
    int dims[2] = {size, 1}, periods[2] = {1, 0}, keep[2] = {1, 0};
    MPI_Comm cart;
    MPI_Cart_create(parent, 2, dims, periods, 0, &cart);
    MPI_Cart_sub(cart, keep, &c);
    check_made("MPI_Cart_sub", c, eh, prepared);
    check_made("MPI_Cart_create", cart, eh, prepared);
    int *index = malloc(sizeof(int) * (size_t)size), *edges = malloc(sizeof(int) * (size_t)size);
    for (int k = 0; k < size; k++) {
        index[k] = k + 1;
        edges[k] = (k + 1) % size;
    }
    MPI_Graph_create(parent, size, index, edges, 0, &c);
    check_made("MPI_Graph_create", c, eh, prepared);
    free(index);
    free(edges);
    /* weights given (Open MPI's MPI_UNWEIGHTED is an empty array GCC warns about) */
    int one = 1, win = 1, wout = 1;
    MPI_Dist_graph_create_adjacent(parent, 1, &left, &win, 1, &right, &wout, MPI_INFO_NULL, 0, &c);
    check_made("MPI_Dist_graph_create_adjacent", c, eh, prepared);
    MPI_Dist_graph_create(parent, 1, &rank, &one, &right, &wout, MPI_INFO_NULL, 0, &c);
    check_made("MPI_Dist_graph_create", c, eh, prepared);
    if (size > 1) {
        MPI_Comm half, ic;
        int low = rank < size / 2;
        MPI_Comm_split(parent, low, rank, &half);
        MPI_Intercomm_create(half, 0, parent, low ? size / 2 : 0, 9, &ic);
        MPI_Comm_set_errhandler(ic, eh);
        MPI_Intercomm_merge(ic, !low, &c);
        check_made("MPI_Intercomm_merge", c, eh, prepared);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&half);
    }
    if (handler_calls)
        fail("made", "the program's error handler was called %ld times", handler_calls, 0);
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&parent);
}

static const struct {
    const char *name;
    void (*run)(void);
} cases[] = {{"bytes", case_bytes},     {"userstream", case_userstream}, {"replace", case_replace},
             {"getstatus", case_getstatus}, {"kept", case_kept},       {"truncate", case_truncate},
             {"partial", case_partial}, {"ids", case_ids},            {"made", case_made}};

int main(int argc, char **argv)
{
    int total = 0, ncases = (int)(sizeof cases / sizeof cases[0]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    tol = argc > 1 ? atof(argv[1]) : 0.0;
    for (int k = 0; k < ncases; k++) {
        int want = argc <= 2;
        for (int a = 2; a < argc; a++)
            want |= !strcmp(argv[a], cases[k].name);
        if (!want)
            continue;
        int before = errors;
        cases[k].run();
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
            printf("preload_hostile: %s: %s\n", cases[k].name, errors == before ? "ok" : "FAILED");
    }
    for (int a = 2; a < argc; a++) {
        int known = 0;
        for (int k = 0; k < ncases; k++)
            known |= !strcmp(argv[a], cases[k].name);
        if (!known && rank == 0)
            fprintf(stderr, "preload_hostile: unknown case %s\n", argv[a]), errors++;
    }
    MPI_Allreduce(&errors, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("preload_hostile: %d ranks, tolerance %g: %s (%d errors)\n", size, tol, total ? "FAILED" : "OK", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
