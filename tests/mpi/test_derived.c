/*
 * Point-to-point of derived datatypes made of one floating-point type:
 * vector halos (a column of a 2-D float array, a face of a 3-D double
 * array), subarrays, indexed types with gaps, hindexed blocks (out of order,
 * of floats and of a vector), structs of one type, resized
 * types, negative displacements, a derived sender with a contiguous receiver
 * and the reverse - blocking, nonblocking and Sendrecv, with an ABS and a
 * REL bound and a lossless codec, in a ring (1 rank: messages to itself).
 *
 * The reference is MPI's own: the expected receive buffer is the receiver's
 * initial buffer with the sender's MPI_Pack'ed elements MPI_Unpack'ed into
 * it. Every element of the receive type map must be within the bound of its
 * message (byte-identical with the lossless codec), every other byte must
 * be unchanged. The statistics must show each derived send compressed.
 * Also: truncation errors, Get_count (whole instances / MPI_UNDEFINED, as
 * plain MPI reports them), probes, zero counts, MPI_PROC_NULL, types of no
 * element, a freed type whose handle is reused, and ineligible types
 * (MPI_INT vectors, a float+double struct) byte-identical to plain MPI.
 */
#include <float.h>
#include <limits.h>

#include "mpitest.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif

#define MIN_BYTES 256
#define RAW_MAX 8192 /* a point-to-point message of at most this many bytes travels raw */

typedef struct env {
    mt_state *t;
    MPI_Comm comm;
    int rank, size, left, right;
} env;

/* One exchange: the same buffer layout at both ends; the type maps of
 * (stype, scount) and (rtype, rcount) hold the same number of elements. */
typedef struct tcase {
    const char *name;
    MPI_Datatype basic;
    size_t nbuf;   /* elements of each buffer */
    size_t origin; /* the element passed to MPI as the buffer (negative displacements reach below it) */
    MPI_Datatype stype, rtype;
    int scount, rcount;
} tcase;

enum { MODE_BLOCKING, MODE_NONBLOCKING, MODE_SENDRECV, MODE_COUNT };
enum { CFG_ABS, CFG_REL, CFG_ZSTD, CFG_COUNT };
static const char *mode_name[MODE_COUNT] = {"blocking", "nonblocking", "sendrecv"};
static const char *cfg_name[CFG_COUNT] = {"abs", "rel", "zstd"};

static size_t esz(MPI_Datatype type)
{
    return type == MPI_FLOAT ? 4 : 8;
}

static void set_cfg(env *e, int cfg)
{
    if (cfg == CFG_ABS)
        mt_config(e->comm, ZMPI_CODEC_FZL, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_MESSAGE, MIN_BYTES);
    else if (cfg == CFG_REL)
        mt_config(e->comm, ZMPI_CODEC_FZL, ZMPI_EB_REL, 1e-4, ZMPI_SCOPE_MESSAGE, MIN_BYTES);
    else
        mt_config(e->comm, ZMPI_CODEC_ZSTD, ZMPI_EB_NONE, 0.0, ZMPI_SCOPE_MESSAGE, MIN_BYTES);
}

/* The send buffer of rank `src` for case `id` (gaps included): smooth
 * along any stride, so that even short halos compress. */
static void fill_send(void *buf, const tcase *c, int src, int id)
{
    for (size_t i = 0; i < c->nbuf; i++) {
        double v = 20.0 + 5.0 * sin(2e-3 * (double)i + 0.1 * src + 0.01 * id);
        if (c->basic == MPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = v;
    }
}

/* The initial receive buffer: a pattern no field value has. */
static void fill_recv(void *buf, const tcase *c)
{
    memset(buf, 0xA5, c->nbuf * esz(c->basic));
}

static char *at(void *buf, const tcase *c)
{
    return (char *)buf + c->origin * esz(c->basic);
}

/* Sends (sb, c->scount, c->stype) to the right and receives (rb, ...) from
 * the left in the given mode. */
static int exchange(env *e, const tcase *c, int mode, void *sb, void *rb, int tag, MPI_Status *st)
{
    MPI_Request r[2];
    MPI_Status sts[2];
    int rc;
    char *s = at(sb, c), *d = at(rb, c);
    if (mode == MODE_SENDRECV)
        return ZMPI_Sendrecv(s, c->scount, c->stype, e->right, tag, d, c->rcount, c->rtype, e->left, tag, e->comm,
                             st);
    if (mode == MODE_NONBLOCKING || e->size == 1) {
        if ((rc = ZMPI_Irecv(d, c->rcount, c->rtype, e->left, tag, e->comm, &r[0])) != MPI_SUCCESS)
            return rc;
        if ((rc = ZMPI_Isend(s, c->scount, c->stype, e->right, tag, e->comm, &r[1])) != MPI_SUCCESS)
            return rc;
        rc = ZMPI_Waitall(2, r, sts);
        *st = sts[0];
        return rc;
    }
    if (e->rank == 0) { /* a chain: rank 0 sends first, the others receive first */
        if ((rc = ZMPI_Send(s, c->scount, c->stype, e->right, tag, e->comm)) != MPI_SUCCESS)
            return rc;
        return ZMPI_Recv(d, c->rcount, c->rtype, e->left, tag, e->comm, st);
    }
    if ((rc = ZMPI_Recv(d, c->rcount, c->rtype, e->left, tag, e->comm, st)) != MPI_SUCCESS)
        return rc;
    return ZMPI_Send(s, c->scount, c->stype, e->right, tag, e->comm);
}

/* The sender's message as MPI packs it (*n elements), its bound, and the
 * receive buffer expected (the initial one with the message unpacked) and
 * the mask of the receive type map's bytes. */
static void *expected(env *e, const tcase *c, int id, int cfg, size_t *n, double *bound, void *want,
                      unsigned char *mask)
{
    size_t es = esz(c->basic), bytes = c->nbuf * es;
    int size = 0, pos = 0;
    void *lsb = mt_xmalloc(bytes);
    fill_send(lsb, c, e->left, id);
    MPI_Pack_size(c->scount, c->stype, e->comm, &size);
    void *packed = mt_xmalloc((size_t)size + 1), *ones = mt_xmalloc((size_t)size + 1);
    MPI_Pack(at(lsb, c), c->scount, c->stype, packed, size, &pos, e->comm);
    *n = (size_t)pos / es;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < *n; i++) {
        double v = mt_get(packed, i, c->basic);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    *bound = cfg == CFG_ABS ? 1e-3 : cfg == CFG_REL && hi > lo ? 1e-4 * (hi - lo) : 0.0;
    fill_recv(want, c);
    int p2 = 0;
    MPI_Unpack(packed, pos, &p2, at(want, c), c->rcount, c->rtype, e->comm);
    memset(ones, 0xFF, (size_t)pos);
    memset(mask, 0, bytes);
    p2 = 0;
    MPI_Unpack(ones, pos, &p2, mask + c->origin * es, c->rcount, c->rtype, e->comm);
    free(lsb);
    free(ones);
    return packed;
}

/* Compares the receive buffer with the expected one: type-map elements
 * within the bound, other bytes identical. Returns the violations. */
static size_t compare(const tcase *c, const void *got, const void *want, const unsigned char *mask, double bound)
{
    size_t es = esz(c->basic), bytes = c->nbuf * es, bad = 0;
    const unsigned char *g = got, *w = want;
    for (size_t b = 0; b < bytes;) {
        if (!mask[b]) {
            bad += g[b] != w[b];
            b++;
            continue;
        }
        long double x, y;
        if (es == 4) {
            float f1, f2;
            memcpy(&f1, g + b, 4);
            memcpy(&f2, w + b, 4);
            x = f1, y = f2;
        } else {
            double d1, d2;
            memcpy(&d1, g + b, 8);
            memcpy(&d2, w + b, 8);
            x = d1, y = d2;
        }
        if (bound == 0.0)
            bad += memcmp(g + b, w + b, es) != 0;
        else
            bad += !(fabsl(x - y) <= (long double)bound);
        b += es;
    }
    return bad;
}

static void run_case(env *e, const tcase *c, int id, int mode, int cfg)
{
    size_t es = esz(c->basic), bytes = c->nbuf * es, n = 0;
    void *sb = mt_xmalloc(bytes), *rb = mt_xmalloc(bytes), *want = mt_xmalloc(bytes);
    unsigned char *mask = mt_xmalloc(bytes);
    double bound = 0.0;
    MPI_Status st;
    ZMPI_Stats s0, s1;
    char what[160];
    snprintf(what, sizeof what, "%s %s %s", c->name, mode_name[mode], cfg_name[cfg]);
    set_cfg(e, cfg);
    fill_send(sb, c, e->rank, id);
    fill_recv(rb, c);
    ZMPI_Comm_get_stats(e->comm, &s0);
    MT_CHECK_RC(e->t, exchange(e, c, mode, sb, rb, 100 + id % 100, &st), what);
    ZMPI_Comm_get_stats(e->comm, &s1);
    void *packed = expected(e, c, id, cfg, &n, &bound, want, mask);
    size_t bad = compare(c, rb, want, mask, bound);
    MT_CHECK(e->t, bad == 0, "%s: %zu bytes/elements wrong (bound %g)", what, bad, bound);
    int cnt = -2, rsize = 0;
    MPI_Type_size(c->rtype, &rsize);
    MPI_Get_count(&st, c->rtype, &cnt);
    MT_CHECK(e->t, st.MPI_SOURCE == e->left && cnt == c->rcount, "%s: source %d count %d, expected %d %d", what,
             st.MPI_SOURCE, cnt, e->left, c->rcount);
    unsigned long long raw = s1.bytes_raw - s0.bytes_raw, sent = s1.bytes_sent - s0.bytes_sent;
    if (cfg != CFG_ZSTD) /* a derived send is compressed: its packed bytes are counted */
        MT_CHECK(e->t, raw == n * es && sent < raw, "%s: raw %llu (expected %zu), sent %llu, codec errors %llu",
                 what, raw, n * es, sent, s1.codec_errors - s0.codec_errors);
    free(packed);
    free(sb);
    free(rb);
    free(want);
    free(mask);
}

/* ---- the cases ---- */

#define NCASES 16

static int make_cases(tcase *cs)
{
    int k = 0;
    MPI_Datatype t, u;
    /* a column of a 64 x 96 float array; three adjacent columns through a resized column */
    MPI_Type_vector(64, 1, 96, MPI_FLOAT, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"float column", MPI_FLOAT, 64 * 96, 5, t, t, 1, 1};
    MPI_Type_create_resized(t, 0, 4, &u);
    MPI_Type_commit(&u);
    cs[k++] = (tcase){"resized columns", MPI_FLOAT, 64 * 96, 2, u, u, 3, 3};
    /* derived sender, contiguous receiver and the reverse */
    cs[k++] = (tcase){"column to contiguous", MPI_FLOAT, 64 * 96, 5, t, MPI_FLOAT, 1, 64};
    cs[k++] = (tcase){"contiguous to column", MPI_FLOAT, 64 * 96, 7, MPI_FLOAT, t, 64, 1};
    /* the x = 3 face of a 16 x 20 x 24 double array: hvector of vector */
    MPI_Type_vector(20, 1, 24, MPI_DOUBLE, &u);
    MPI_Type_create_hvector(16, 1, 20 * 24 * 8, u, &t);
    MPI_Type_free(&u);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"double x-face", MPI_DOUBLE, 16 * 20 * 24, 3, t, t, 1, 1};
    /* the y = 1 face: vector of rows */
    MPI_Type_vector(16, 24, 20 * 24, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"double y-face", MPI_DOUBLE, 16 * 20 * 24, 24, t, t, 1, 1};
    /* subarrays: C order of doubles, Fortran order of floats */
    int sz[3] = {16, 20, 24}, sub[3] = {14, 18, 4}, st[3] = {1, 1, 3};
    MPI_Type_create_subarray(3, sz, sub, st, MPI_ORDER_C, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"subarray C", MPI_DOUBLE, 16 * 20 * 24, 0, t, t, 1, 1};
    int sz2[2] = {40, 30}, sub2[2] = {3, 25}, st2[2] = {36, 2};
    MPI_Type_create_subarray(2, sz2, sub2, st2, MPI_ORDER_FORTRAN, MPI_FLOAT, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"subarray Fortran x2", MPI_FLOAT, 2 * 40 * 30, 0, t, t, 2, 2};
    /* indexed with gaps (and an empty block), two instances */
    int bl[5] = {3, 0, 7, 1, 200}, dis[5] = {0, 5, 9, 30, 40};
    MPI_Type_indexed(5, bl, dis, MPI_FLOAT, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"indexed", MPI_FLOAT, 2 * 240 + 8, 0, t, t, 2, 2};
    /* hindexed with negative displacements; an indexed block of the struct below */
    int hbl[3] = {40, 100, 60};
    MPI_Aint hd[3] = {-800, 0, 1600};
    MPI_Type_create_hindexed(3, hbl, hd, MPI_DOUBLE, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"hindexed negative", MPI_DOUBLE, 400, 120, t, t, 1, 1};
    /* a struct of one type: 3 doubles at 0, 2 at 48, extent 64; 60 instances */
    int sbl[2] = {3, 2};
    MPI_Aint sd[2] = {0, 48};
    MPI_Datatype sty[2] = {MPI_DOUBLE, MPI_DOUBLE};
    MPI_Type_create_struct(2, sbl, sd, sty, &u);
    MPI_Type_commit(&u);
    cs[k++] = (tcase){"struct", MPI_DOUBLE, 60 * 8, 0, u, u, 60, 60};
    int ib[4] = {0, 3, 7, 12};
    MPI_Type_create_indexed_block(4, 2, ib, u, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"indexed_block of struct", MPI_DOUBLE, 14 * 8 * 4, 0, t, t, 4, 4};
    /* hindexed_block: blocks of 7 floats at byte displacements out of order, one
     * negative and one not a multiple of the block's bytes, two instances; and
     * blocks of 3 instances of a double vector (extent 12 doubles) */
    MPI_Aint hb[5] = {-160, 0, 36, 400, 200};
    MPI_Type_create_hindexed_block(5, 7, hb, MPI_FLOAT, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"hindexed_block floats", MPI_FLOAT, 300, 40, t, t, 2, 2};
    MPI_Aint hv[3] = {0, 1000, 400};
    MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &u);
    MPI_Type_create_hindexed_block(3, 3, hv, u, &t);
    MPI_Type_free(&u);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"hindexed_block of vector", MPI_DOUBLE, 200, 0, t, t, 1, 1};
    /* a contiguous (dense) type and a dup of a vector */
    MPI_Type_contiguous(300, MPI_FLOAT, &t);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"contiguous", MPI_FLOAT, 900, 0, t, t, 3, 3};
    MPI_Type_vector(100, 2, 3, MPI_FLOAT, &u);
    MPI_Type_dup(u, &t);
    MPI_Type_free(&u);
    MPI_Type_commit(&t);
    cs[k++] = (tcase){"dup of vector", MPI_FLOAT, 300, 0, t, t, 1, 1};
    /* F instances of each, so that every message is longer than the 8 KiB
     * that always travel raw: each is compressed */
    for (int i = 0; i < k; i++) {
        int tsz = 0;
        MPI_Type_size(cs[i].stype, &tsz);
        size_t bytes = (size_t)tsz * (size_t)cs[i].scount;
        int f = (int)(RAW_MAX / (bytes ? bytes : 1)) + 1;
        cs[i].scount *= f;
        cs[i].rcount *= f;
        cs[i].nbuf *= (size_t)f;
    }
    return k;
}

static void free_type(MPI_Datatype *t)
{
    int ni, na, nt, comb;
    MPI_Type_get_envelope(*t, &ni, &na, &nt, &comb);
    if (comb != MPI_COMBINER_NAMED)
        MPI_Type_free(t);
}

static void free_cases(tcase *cs, int n)
{
    for (int i = 0; i < n; i++) {
        MPI_Datatype a = cs[i].stype, b = cs[i].rtype;
        for (int j = i + 1; j < n; j++) { /* shared between cases: freed once */
            if (cs[j].stype == a || cs[j].rtype == a)
                a = MPI_FLOAT;
            if (cs[j].stype == b || cs[j].rtype == b)
                b = MPI_FLOAT;
        }
        if (b == a)
            b = MPI_FLOAT;
        free_type(&a);
        free_type(&b);
    }
}

static void test_cases(env *e)
{
    tcase cs[NCASES];
    int n = make_cases(cs);
    for (int i = 0; i < n; i++)
        for (int mode = 0; mode < MODE_COUNT; mode++)
            for (int cfg = 0; cfg < CFG_COUNT; cfg++)
                run_case(e, &cs[i], i * 16 + mode * 4 + cfg, mode, cfg);
    free_cases(cs, n);
}

/* ---- errors, counts, probes, edge cases ---- */

/* The standard class of a zmpi or MPI error code. */
static int err_class(int rc)
{
    int cls = rc;
    ZMPI_Error_class(rc, &cls);
    return cls;
}

/* More elements than the receive type holds: MPI_ERR_TRUNCATE, compressed
 * (1024 floats, every other one, into a type of 512: the stream fits the
 * staging buffer, zmpi detects it) and raw (100 into 50: MPI detects it),
 * through Recv, Wait and Waitall. The raw message is small and the send is
 * posted first: Open MPI 4.1 misses the truncation of a message to self
 * that finds its receive posted, and overruns the buffer of a truncated
 * rendezvous message to self - plain MPI_Recv included. */
static void test_truncate(env *e)
{
    float *a = mt_xmalloc(2048 * 4), *b = mt_xmalloc(2048 * 4);
    MPI_Datatype big[2], small[2];
    MPI_Type_vector(1024, 1, 2, MPI_FLOAT, &big[0]);
    MPI_Type_vector(512, 1, 2, MPI_FLOAT, &big[1]);
    MPI_Type_vector(100, 1, 2, MPI_FLOAT, &small[0]);
    MPI_Type_vector(50, 1, 2, MPI_FLOAT, &small[1]);
    for (int i = 0; i < 2; i++) {
        MPI_Type_commit(&big[i]);
        MPI_Type_commit(&small[i]);
    }
    tcase c = {"truncate", MPI_FLOAT, 2048, 0, big[0], big[1], 1, 1};
    fill_send(a, &c, e->rank, 60);
    for (int k = 0; k < 6; k++) {
        MPI_Request r, rr;
        MPI_Status st, sts[2];
        int compressed = k % 2 == 0, how = k / 2, rc, rs = MPI_SUCCESS; /* how: Recv, Wait, Waitall */
        MPI_Datatype col = compressed ? big[0] : small[0], half = compressed ? big[1] : small[1];
        if (compressed)
            set_cfg(e, CFG_ABS);
        else /* below the threshold: raw data */
            mt_config(e->comm, ZMPI_CODEC_FZL, ZMPI_EB_ABS, 1e-3, ZMPI_SCOPE_MESSAGE, 1 << 20);
        MT_CHECK_RC(e->t, ZMPI_Isend(a, 1, col, e->right, 9, e->comm, &r), "Isend truncate");
        if (how == 0) {
            rc = ZMPI_Recv(b, 1, half, e->left, 9, e->comm, &st);
        } else if ((rc = ZMPI_Irecv(b, 1, half, e->left, 9, e->comm, &rr)) == MPI_SUCCESS && how == 1) {
            rc = ZMPI_Wait(&rr, &st);
        } else if (rc == MPI_SUCCESS) {
            MPI_Request both[2] = {rr, r};
            rc = ZMPI_Waitall(2, both, sts);
            r = both[1];
            if (err_class(rc) == MPI_ERR_IN_STATUS) {
                rc = sts[0].MPI_ERROR;
                rs = sts[1].MPI_ERROR == MPI_ERR_PENDING ? MPI_SUCCESS : sts[1].MPI_ERROR;
            }
        }
        if (r != MPI_REQUEST_NULL)
            rs = rs ? rs : ZMPI_Wait(&r, MPI_STATUS_IGNORE);
        MT_CHECK(e->t, err_class(rc) == MPI_ERR_TRUNCATE && rs == MPI_SUCCESS, "truncate %s %s: class %d, send %d",
                 compressed ? "compressed" : "raw", how == 0 ? "Recv" : how == 1 ? "Wait" : "Waitall",
                 err_class(rc), rs);
    }
    for (int i = 0; i < 2; i++) {
        MPI_Type_free(&big[i]);
        MPI_Type_free(&small[i]);
    }
    free(a);
    free(b);
}

/* Get_count / Get_elements of a derived receive: zmpi's equal plain MPI's
 * for whole and partial instances; probes report the same. */
static void counts_of(env *e, int use_zmpi, int nsend, MPI_Datatype rt, int probe, int *cnt, int *elems)
{
    float *a = mt_xmalloc(4000 * 4), *b = mt_xmalloc(4000 * 4);
    MPI_Request r;
    MPI_Status st, pst;
    mt_fill_field(a, 4000, MPI_FLOAT, (size_t)e->rank);
    if (use_zmpi) {
        MT_CHECK_RC(e->t, ZMPI_Isend(a, nsend, MPI_FLOAT, e->right, 11, e->comm, &r), "Isend count");
        if (probe) {
            MT_CHECK_RC(e->t, ZMPI_Probe(e->left, 11, e->comm, &pst), "Probe count");
            int pc = -2;
            ZMPI_Get_count(&pst, rt, &pc);
            *elems = pc; /* compared with the receive's count below */
        }
        MT_CHECK_RC(e->t, ZMPI_Recv(b, 3, rt, e->left, 11, e->comm, &st), "Recv count");
        MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait count");
    } else {
        MPI_Isend(a, nsend, MPI_FLOAT, e->right, 11, e->comm, &r);
        MPI_Recv(b, 3, rt, e->left, 11, e->comm, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    }
    int pc = *elems;
    MPI_Get_count(&st, rt, cnt);
    MPI_Get_elements(&st, rt, elems);
    if (probe)
        MT_CHECK(e->t, pc == *cnt, "probe count %d, receive count %d", pc, *cnt);
    free(a);
    free(b);
}

static void test_counts(env *e)
{
    MPI_Datatype t;
    MPI_Type_vector(100, 3, 4, MPI_FLOAT, &t); /* 300 elements, extent 399 floats */
    MPI_Type_commit(&t);
    const int sends[] = {600, 601, 0, 299, 900};
    for (int cfg = 0; cfg < CFG_COUNT; cfg += 2) {
        set_cfg(e, cfg);
        for (int i = 0; i < 5; i++) {
            int zc = -2, ze = -2, pc = -2, pe = -2;
            counts_of(e, 1, sends[i], t, i % 2, &zc, &ze);
            counts_of(e, 0, sends[i], t, 0, &pc, &pe);
            MT_CHECK(e->t, zc == pc && ze == pe, "%s, %d floats into a vector: count %d elements %d, MPI %d %d",
                     cfg_name[cfg], sends[i], zc, ze, pc, pe);
        }
    }
    MPI_Type_free(&t);
}

/* Zero counts, MPI_PROC_NULL, a type of no element; a freed type whose
 * handle a new type reuses. */
static void test_edges(env *e)
{
    float a[64], b[64];
    MPI_Datatype t, z;
    MPI_Status st;
    MPI_Request r;
    int cnt = -2;
    set_cfg(e, CFG_ABS);
    MPI_Type_vector(8, 1, 2, MPI_FLOAT, &t);
    MPI_Type_contiguous(0, MPI_FLOAT, &z);
    MPI_Type_commit(&t);
    MPI_Type_commit(&z);
    for (int i = 0; i < 64; i++)
        a[i] = (float)i, b[i] = -1.0f;
    /* count 0 into count 2; the empty type (count 5) into count 1 */
    MT_CHECK_RC(e->t, ZMPI_Isend(a, 0, t, e->right, 12, e->comm, &r), "Isend 0");
    MT_CHECK_RC(e->t, ZMPI_Recv(b, 2, t, e->left, 12, e->comm, &st), "Recv 0");
    MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait 0");
    MPI_Get_count(&st, t, &cnt);
    MT_CHECK(e->t, cnt == 0 && b[0] == -1.0f, "count 0: got %d", cnt);
    MT_CHECK_RC(e->t, ZMPI_Isend(a, 5, z, e->right, 13, e->comm, &r), "Isend empty type");
    MT_CHECK_RC(e->t, ZMPI_Recv(b, 1, z, e->left, 13, e->comm, &st), "Recv empty type");
    MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait empty type");
    MPI_Get_count(&st, z, &cnt);
    MT_CHECK(e->t, cnt == 0 && b[0] == -1.0f, "empty type: count %d", cnt);
    /* MPI_PROC_NULL */
    MT_CHECK_RC(e->t, ZMPI_Send(a, 2, t, MPI_PROC_NULL, 14, e->comm), "Send PROC_NULL");
    MT_CHECK_RC(e->t, ZMPI_Recv(b, 2, t, MPI_PROC_NULL, 14, e->comm, &st), "Recv PROC_NULL");
    MPI_Get_count(&st, t, &cnt);
    MT_CHECK(e->t, st.MPI_SOURCE == MPI_PROC_NULL && cnt == 0 && b[0] == -1.0f, "PROC_NULL: source %d count %d",
             st.MPI_SOURCE, cnt);
    /* a new type at a freed type's handle is analysed afresh */
    for (int round = 0; round < 3; round++) {
        MPI_Type_free(&t);
        if (round % 2 == 0)
            MPI_Type_vector(16, 1, 4, MPI_FLOAT, &t);
        else
            MPI_Type_vector(32, 1, 2, MPI_FLOAT, &t);
        MPI_Type_commit(&t);
        int n = round % 2 == 0 ? 16 : 32, stride = round % 2 == 0 ? 4 : 2;
        for (int i = 0; i < 64; i++)
            b[i] = -1.0f;
        MT_CHECK_RC(e->t, ZMPI_Isend(a, 1, t, e->right, 15, e->comm, &r), "Isend reused");
        MT_CHECK_RC(e->t, ZMPI_Recv(b, 1, t, e->left, 15, e->comm, &st), "Recv reused");
        MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait reused");
        int ok = 1;
        for (int i = 0; i < 64; i++)
            ok &= i % stride == 0 && i / stride < n ? fabsf(b[i] - a[i]) <= 1e-3f : b[i] == -1.0f;
        MT_CHECK(e->t, ok, "reused handle, round %d: wrong layout", round);
    }
    MPI_Type_free(&t);
    MPI_Type_free(&z);
    /* absolute addresses from MPI_BOTTOM (whose address may be 0): a small
     * raw message and one large enough to be compressed, each into floats */
    static float big[400];
    for (int i = 0; i < 400; i++)
        big[i] = (float)(i % 97) * 0.25f;
    for (int len = 8; len <= 100; len += 92) {
        MPI_Aint at[2];
        int bl[2] = {len, len};
        MPI_Get_address(&big[0], &at[0]);
        MPI_Get_address(&big[200], &at[1]);
        MPI_Type_create_hindexed(2, bl, at, MPI_FLOAT, &t);
        MPI_Type_commit(&t);
        float got[200];
        for (int i = 0; i < 200; i++)
            got[i] = -1.0f;
        MT_CHECK_RC(e->t, ZMPI_Sendrecv(MPI_BOTTOM, 1, t, e->right, 16, got, 200, MPI_FLOAT, e->left, 16, e->comm, &st),
                    "Sendrecv from MPI_BOTTOM");
        MPI_Get_count(&st, MPI_FLOAT, &cnt);
        int ok = cnt == 2 * len;
        for (int i = 0; i < 2 * len && ok; i++)
            ok = fabsf(got[i] - big[i < len ? i : 200 + i - len]) <= 1e-3f;
        MT_CHECK(e->t, ok, "%d floats of absolute addresses from MPI_BOTTOM: count %d or values wrong", 2 * len, cnt);
        MPI_Type_free(&t);
    }
}

/* MPI_INT vectors and a float + double struct go as plain MPI: byte
 * identical, counted as type fallbacks, nothing compressed. */
static void test_ineligible(env *e)
{
    enum { N = 3000 };
    int *ia = mt_xmalloc(N * 4), *ib = mt_xmalloc(N * 4);
    MPI_Datatype iv, mix;
    MPI_Status st;
    MPI_Request r;
    set_cfg(e, CFG_ABS);
    MPI_Type_vector(N / 3, 2, 3, MPI_INT, &iv);
    MPI_Type_commit(&iv);
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {0, 8};
    MPI_Datatype ty[2] = {MPI_FLOAT, MPI_DOUBLE};
    MPI_Type_create_struct(2, bl, d, ty, &mix);
    MPI_Type_commit(&mix);
    for (int i = 0; i < N; i++)
        ia[i] = (e->rank + 1) * 7919 + i * 31, ib[i] = -1;
    ZMPI_Stats s0, s1;
    ZMPI_Comm_get_stats(e->comm, &s0);
    MT_CHECK_RC(e->t, ZMPI_Isend(ia, 1, iv, e->right, 16, e->comm, &r), "Isend int vector");
    MT_CHECK_RC(e->t, ZMPI_Recv(ib, 1, iv, e->left, 16, e->comm, &st), "Recv int vector");
    MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait int vector");
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= ib[i] == (i % 3 == 2 ? -1 : (e->left + 1) * 7919 + i * 31);
    MT_CHECK(e->t, ok, "MPI_INT vector not identical");
    unsigned char sa[16 * 200], sb[16 * 200];
    for (int i = 0; i < 200; i++) {
        float f = (float)(e->rank * 1000 + i) * 0.37f;
        double x = (double)(e->rank * 1000 + i) * 1.37;
        memset(sa + 16 * i, 0, 16);
        memcpy(sa + 16 * i, &f, 4);
        memcpy(sa + 16 * i + 8, &x, 8);
    }
    memset(sb, 0x5A, sizeof sb);
    MT_CHECK_RC(e->t, ZMPI_Sendrecv(sa, 200, mix, e->right, 17, sb, 200, mix, e->left, 17, e->comm, &st),
             "Sendrecv mixed struct");
    ok = 1;
    for (int i = 0; i < 200; i++) {
        float f = (float)(e->left * 1000 + i) * 0.37f;
        double x = (double)(e->left * 1000 + i) * 1.37;
        ok &= !memcmp(sb + 16 * i, &f, 4) && !memcmp(sb + 16 * i + 8, &x, 8);
        for (int j = 4; j < 8; j++)
            ok &= sb[16 * i + j] == 0x5A;
    }
    MT_CHECK(e->t, ok, "mixed struct not identical");
    ZMPI_Comm_get_stats(e->comm, &s1);
    MT_CHECK(e->t, s1.fallback_type >= s0.fallback_type + 4 && s1.bytes_raw == s0.bytes_raw,
             "ineligible types: fallback_type %llu -> %llu, bytes_raw %llu -> %llu", s0.fallback_type,
             s1.fallback_type, s0.bytes_raw, s1.bytes_raw);
    MPI_Type_free(&iv);
    MPI_Type_free(&mix);
    free(ia);
    free(ib);
}

/* A column found by ZMPI_Mprobe / Improbe, received with ZMPI_Mrecv /
 * Imrecv into a column type (compressed: within the bound, gaps unchanged). */
static void test_mprobe(env *e)
{
    float *a = mt_xmalloc(4096 * 8 * 4), *b = mt_xmalloc(4096 * 8 * 4), *ref = mt_xmalloc(4096 * 8 * 4);
    MPI_Datatype col;
    MPI_Type_vector(4096, 1, 8, MPI_FLOAT, &col); /* 16 KiB: beyond the raw 8 KiB */
    MPI_Type_commit(&col);
    set_cfg(e, CFG_ABS);
    tcase c = {"mprobe", MPI_FLOAT, 4096 * 8, 0, col, col, 1, 1};
    for (int k = 0; k < 2; k++) {
        MPI_Request r, rr;
        MPI_Message m;
        MPI_Status st;
        int flag = 0, cnt = -2;
        fill_send(a, &c, e->rank, 50 + k);
        fill_send(ref, &c, e->left, 50 + k);
        memset(b, 0xA5, 4096 * 8 * 4);
        ZMPI_Stats s0 = mt_stats(e->comm), s1;
        MT_CHECK_RC(e->t, ZMPI_Isend(a + 7, 1, col, e->right, 18, e->comm, &r), "Isend mprobe");
        if (k == 0) {
            MT_CHECK_RC(e->t, ZMPI_Mprobe(e->left, 18, e->comm, &m, &st), "Mprobe");
            MT_CHECK_RC(e->t, ZMPI_Mrecv(b + 7, 1, col, &m, &st), "Mrecv");
        } else {
            while (!flag)
                MT_CHECK_RC(e->t, ZMPI_Improbe(e->left, 18, e->comm, &flag, &m, &st), "Improbe");
            MT_CHECK_RC(e->t, ZMPI_Imrecv(b + 7, 1, col, &m, &rr), "Imrecv");
            MT_CHECK_RC(e->t, ZMPI_Wait(&rr, &st), "Wait Imrecv");
        }
        MT_CHECK_RC(e->t, ZMPI_Wait(&r, MPI_STATUS_IGNORE), "Wait mprobe send");
        s1 = mt_stats(e->comm);
        MPI_Get_count(&st, col, &cnt);
        int ok = cnt == 1;
        for (int i = 0; i < 4096 * 8; i++)
            ok &= i >= 7 && (i - 7) % 8 == 0 ? fabsf(b[i] - ref[i]) <= 1e-3f : ((unsigned char *)&b[i])[0] == 0xA5;
        MT_CHECK(e->t, ok && s1.bytes_raw - s0.bytes_raw == 16384, "%s: count %d, wrong data or not compressed",
                 k ? "Improbe/Imrecv" : "Mprobe/Mrecv", cnt);
    }
    MPI_Type_free(&col);
    free(a);
    free(b);
    free(ref);
}

static void test_more(env *e)
{
    test_mprobe(e);
    test_truncate(e);
    test_counts(e);
    test_edges(e);
    test_ineligible(e);
}

int main(int argc, char **argv)
{
    mt_state t;
    mt_init(&t, &argc, &argv, "test_derived");
    env e = {&t, MPI_COMM_NULL, t.rank, t.size, (t.rank + t.size - 1) % t.size, (t.rank + 1) % t.size};
    MPI_Comm_dup(MPI_COMM_WORLD, &e.comm); /* inherits MPI_ERRORS_RETURN */
    test_cases(&e);
    test_more(&e);
    MPI_Comm_free(&e.comm);
    return mt_finish(&t);
}
