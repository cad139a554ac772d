/*
 * Collectives with the codecs other than fzl: Bcast, Allgather and
 * Allreduce, float and double, with
 *   linpred-byte, linpred-bit, fzr and auto (error-bounded): every element
 *       within the bound (ABS and REL, result scope), as with fzl;
 *   zstd, xorlzc (lossless, no bound): Bcast and Allgather byte-identical
 *       to MPI; Allreduce MAX byte-identical, SUM within the reduction's
 *       rounding;
 *   trunc (drops the 16 low bits of a float, 32 of a double) and dp2sp
 *       (double -> float; float falls back to plain MPI): Bcast and
 *       Allgather give exactly the truncated value of every element (or the
 *       exact one, where the codec stored a segment); Allreduce, which
 *       truncates again at every hop, within N truncations of the partial
 *       sums (sum |x_i| times the truncation's relative precision);
 *       non-finite values bit-exact.
 * The algorithms rotate over the codecs (every codec meets several), and
 * the statistics show that the compressed path ran, with that algorithm,
 * and - for every codec - that bytes were saved.
 */
#include <float.h>

#include "reduction.h"

#define NB 8000  /* Bcast elements */
#define NG 2000  /* Allgather elements per rank */
#define NR 6000  /* Allreduce elements */

static mt_state T;
static MPI_Comm comm;

typedef struct codec_case {
    zmpi_codec codec;
    zmpi_eb_mode mode; /* ZMPI_EB_NONE for the lossless and fixed codecs */
    double eb;
    double net_bw; /* > 0: the network told to the model (auto then picks fzr on slow links) */
} codec_case;

static const char *tname(MPI_Datatype type)
{
    return type == MPI_FLOAT ? "float" : "double";
}

static int kind_of(const codec_case *c)
{
    return zmpi_codec_kind(c->codec);
}

/* Algorithm number k (cyclically) of coll. */
static int algo_of(ZMPI_Coll coll, int k)
{
    int ids[16];
    int n = ZMPI_Coll_algorithms(coll, 16, ids, NULL, NULL);
    MT_CHECK(&T, n > 0, "%s: no algorithms", ZMPI_Coll_name(coll));
    return n > 0 ? ids[k % (n < 16 ? n : 16)] : ZMPI_ALGO_DEFAULT;
}

static void configure(const codec_case *c, ZMPI_Coll coll, int algo)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = c->codec;
    cfg.eb_mode = c->mode;
    cfg.eb = c->mode == ZMPI_EB_NONE ? 0.0 : c->eb;
    cfg.scope = ZMPI_SCOPE_RESULT;
    cfg.min_bytes = 0;
    cfg.chunk = 4096;
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        cfg.algorithm[k] = ZMPI_ALGO_DEFAULT;
    cfg.algorithm[coll] = algo;
    cfg.net_bw = c->net_bw;
    cfg.net_lat = c->net_bw > 0 ? 50e-6 : 0;
    cfg.node_ranks = 1; /* every rank a node: every algorithm's messages cross nodes and compress */
    int rc = ZMPI_Comm_set_config(comm, &cfg);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: config rc %d", zmpi_codec_name(c->codec), rc);
}

/* 1 if the codec runs compressed on this type (dp2sp: double only). */
static int applies(const codec_case *c, MPI_Datatype type)
{
    return !(c->codec == ZMPI_CODEC_DP2SP && type == MPI_FLOAT);
}

/* The fixed-precision value of x (trunc: the default low bits dropped;
 * dp2sp: rounded to float), or x itself where the codec keeps it exactly. */
static double fixed_value(zmpi_codec codec, MPI_Datatype type, double x)
{
    if (!isfinite(x))
        return x;
    if (codec == ZMPI_CODEC_DP2SP)
        return fabs(x) > FLT_MAX ? x : (double)(float)x;
    if (type == MPI_FLOAT) {
        float f = (float)x;
        uint32_t u;
        memcpy(&u, &f, 4);
        u &= ~((1u << 16) - 1);
        memcpy(&f, &u, 4);
        return f;
    }
    uint64_t u;
    memcpy(&u, &x, 8);
    u &= ~((1ull << 32) - 1);
    memcpy(&x, &u, 8);
    return x;
}

/* Relative precision of one fixed-precision compression. */
static double fixed_rel(zmpi_codec codec, MPI_Datatype type)
{
    if (codec == ZMPI_CODEC_DP2SP)
        return ldexp(1.0, -24);
    return type == MPI_FLOAT ? ldexp(1.0, -(23 - 16)) : ldexp(1.0, -(52 - 32));
}

/* Checks a block received through the compressions of `orig` (n
 * elements): bounded: |got - orig| <= bound (REL: of `range`, or of the
 * block's own range if range < 0); lossless: byte-identical; fixed: each
 * element the fixed-precision value (idempotent: one compression or
 * several) or exact. Non-finite values: bit-exact. own: byte-identical. */
static void check_moved(const codec_case *c, MPI_Datatype type, const void *got, const void *orig, size_t n,
                        int own, double range, const char *what)
{
    size_t es = type == MPI_FLOAT ? 4 : 8, bad = 0;
    int kind = kind_of(c);
    if (own || kind == ZMPI_KIND_LOSSLESS) {
        MT_CHECK(&T, n == 0 || memcmp(got, orig, n * es) == 0, "%s: not byte-identical", what);
        return;
    }
    if (kind == ZMPI_KIND_BOUNDED) {
        double lo = INFINITY, hi = -INFINITY, worst = 0;
        for (size_t i = 0; i < n; i++) {
            double v = mt_get(orig, i, type);
            if (isfinite(v)) {
                lo = v < lo ? v : lo;
                hi = v > hi ? v : hi;
            }
        }
        if (range < 0)
            range = hi >= lo ? hi - lo : 0.0;
        double bound = c->mode == ZMPI_EB_ABS ? c->eb : c->eb * range;
        bad = mt_violations(got, orig, n, type, bound, &worst);
        MT_CHECK(&T, bad == 0, "%s: %zu of %zu elements beyond %g (worst %g)", what, bad, n, bound, worst);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        double x = mt_get(orig, i, type), g = mt_get(got, i, type);
        int same = !memcmp((const char *)got + i * es, (const char *)orig + i * es, es);
        if (!same && (!isfinite(x) || g != fixed_value(c->codec, type, x)))
            bad++;
    }
    MT_CHECK(&T, bad == 0, "%s: %zu of %zu elements not the fixed-precision value", what, bad, n);
}

/* After a call: counted as compressed (from 2 ranks) and the configured
 * algorithm ran, or - where the codec does not apply to the type - counted
 * as a type fallback that ran plain MPI. */
static void check_ran(ZMPI_Coll coll, int algo, const ZMPI_Stats *s0, const ZMPI_Stats *s1, int on,
                      const char *what)
{
    int size = T.size;
    MT_CHECK(&T, s1->compressed == s0->compressed + (on && size > 1), "%s: compressed calls %llu -> %llu", what,
             s0->compressed, s1->compressed);
    mt_check_algo(&T, comm, coll, algo, on && size > 1, what);
    if (!on)
        MT_CHECK(&T, s1->fallback_type == s0->fallback_type + 1, "%s: type fallback not counted", what);
}

/* Finite max - min of n elements (0 if none). */
static double mv_range_all(const void *x, size_t n, MPI_Datatype type)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(x, i, type);
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    return hi >= lo ? hi - lo : 0.0;
}

/* The real field holds float values: in double, a relative change of
 * ~1e-10 makes them need more than a float's precision (so dp2sp and trunc
 * change every one of them). */
static void widen_precision(void *x, size_t n, MPI_Datatype type)
{
    if (type == MPI_DOUBLE)
        for (size_t i = 0; i < n; i++)
            ((double *)x)[i] *= 1.0 + 1e-10 * (double)(i % 13 + 1);
}

static void fill(void *x, size_t n, MPI_Datatype type, size_t salt, int specials)
{
    mt_fill_field(x, n, type, salt);
    widen_precision(x, n, type);
    if (specials && n > 8) {
        double v[4] = {NAN, INFINITY, -INFINITY, -0.0};
        for (int k = 0; k < 4; k++) {
            if (type == MPI_FLOAT)
                ((float *)x)[3 + k] = (float)v[k];
            else
                ((double *)x)[3 + k] = v[k];
        }
    }
}

static void bcast(const codec_case *c, MPI_Datatype type, int k)
{
    int algo = algo_of(ZMPI_COLL_BCAST, k), root = k % T.size, on = applies(c, type);
    size_t es = type == MPI_FLOAT ? 4 : 8;
    void *orig = mt_xmalloc(NB * es), *buf = mt_xmalloc(NB * es);
    fill(orig, NB, type, (size_t)(k + 3), 1);
    if (T.rank == root)
        memcpy(buf, orig, NB * es);
    else
        memset(buf, 0x5c, NB * es);
    configure(c, ZMPI_COLL_BCAST, algo);
    ZMPI_Stats s0 = mt_stats(comm);
    int rc = ZMPI_Bcast(buf, NB, type, root, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    char what[160];
    snprintf(what, sizeof what, "bcast %s %s algo %d root %d", zmpi_codec_name(c->codec), tname(type), algo,
             root);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_ran(ZMPI_COLL_BCAST, algo, &s0, &s1, on, what);
    check_moved(c, type, buf, orig, NB, T.rank == root || !on, -1.0, what);
    free(orig);
    free(buf);
}

static void allgather(const codec_case *c, MPI_Datatype type, int k)
{
    int algo = algo_of(ZMPI_COLL_ALLGATHER, k), size = T.size, on = applies(c, type);
    size_t es = type == MPI_FLOAT ? 4 : 8, total = (size_t)NG * (size_t)size;
    char *mine = mt_xmalloc(NG * es), *got = mt_xmalloc(total * es), *ref = mt_xmalloc(total * es);
    fill(mine, NG, type, (size_t)(T.rank * 5 + k), T.rank == size - 1);
    MPI_Allgather(mine, NG, type, ref, NG, type, comm);
    memset(got, 0x5c, total * es);
    configure(c, ZMPI_COLL_ALLGATHER, algo);
    ZMPI_Stats s0 = mt_stats(comm);
    int rc = ZMPI_Allgather(mine, NG, type, got, NG, type, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    char what[160];
    snprintf(what, sizeof what, "allgather %s %s algo %d", zmpi_codec_name(c->codec), tname(type), algo);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_ran(ZMPI_COLL_ALLGATHER, algo, &s0, &s1, on, what);
    /* cprp2p recompresses per hop: in result scope a REL bound is of the
     * range of all blocks; the compress-once algorithms: of the owner's block */
    int cpr = algo == ZMPI_Coll_algorithm_from_name(ZMPI_COLL_ALLGATHER, "cprp2p");
    double range = cpr ? mv_range_all(ref, total, type) : -1.0;
    for (int b = 0; b < size; b++)
        check_moved(c, type, got + (size_t)b * NG * es, ref + (size_t)b * NG * es, NG, b == T.rank || !on, range,
                    what);
    free(mine);
    free(got);
    free(ref);
}

static void allreduce(const codec_case *c, MPI_Datatype type, MPI_Op op, int k)
{
    int algo = algo_of(ZMPI_COLL_ALLREDUCE, k), size = T.size, on = applies(c, type);
    rt_case rc_case = {type, c->mode, c->eb, ZMPI_SCOPE_RESULT, op};
    size_t es = rt_es(type), n = NR, wn = n * (size_t)rt_mult(op);
    void *in = mt_xmalloc(n * es), *got = mt_xmalloc(n * es), *exact = mt_xmalloc(n * es);
    double *win = mt_xmalloc(wn * 8), *wref = mt_xmalloc(wn * 8);
    rt_fill(in, n, type, T.rank + 7 * k, RT_FIELD, op);
    widen_precision(in, n, type);
    rt_widen(in, n, type, op, win);
    MPI_Allreduce(win, wref, (int)wn, MPI_DOUBLE, op, comm);
    MPI_Allreduce(in, exact, (int)n, type, op, comm);
    double R = mt_global_range(in, n, type, comm);
    configure(c, ZMPI_COLL_ALLREDUCE, algo);
    ZMPI_Stats s0 = mt_stats(comm);
    int rc = ZMPI_Allreduce(in, got, (int)n, type, op, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    char what[160];
    snprintf(what, sizeof what, "allreduce %s %s %s algo %d", zmpi_codec_name(c->codec), tname(type),
             rt_op_name(op), algo);
    MT_CHECK(&T, rc == MPI_SUCCESS, "%s: rc %d", what, rc);
    check_ran(ZMPI_COLL_ALLREDUCE, algo, &s0, &s1, on, what);
    int kind = kind_of(c);
    if (!on || (kind == ZMPI_KIND_LOSSLESS && op != MPI_SUM)) {
        /* plain MPI, or MIN/MAX through a lossless codec: MPI's bytes */
        MT_CHECK(&T, memcmp(got, exact, n * es) == 0, "%s: not byte-identical to MPI", what);
    } else if (kind == ZMPI_KIND_FIXED) {
        /* every hop truncates a partial (SUM: |partial| <= sum |x_i|; MAX: an
         * input): at most N truncations in an element's path (cprp2p:
         * 2N - 2), plus the reduction's rounding */
        double d = fixed_rel(c->codec, type), u = type == MPI_FLOAT ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
        size_t bad = 0;
        double worst = 0;
        int m = rt_mult(op);
        for (size_t i = 0; i < n; i++) {
            double r = wref[i * m], s = m == 2 ? wref[i * 2 + 1] : fabs(r), g = mt_get(got, i, type);
            double allow = (2 * size * d * pow(1 + d, 2 * size) + (size + 1) * (u + DBL_EPSILON)) * s;
            double e = fabs(g - r);
            worst = e / (s > 0 ? s : 1) > worst ? e / (s > 0 ? s : 1) : worst;
            if (!(e <= allow))
                bad++;
        }
        MT_CHECK(&T, bad == 0, "%s: %zu of %zu elements beyond N truncations (worst err/sum|x| %g)", what, bad, n,
                 worst);
        if (size > 1)
            MT_CHECK(&T, memcmp(got, exact, n * es) != 0, "%s: exactly MPI's result: nothing truncated?", what);
    } else {
        double bound = kind == ZMPI_KIND_BOUNDED ? rt_bound(&rc_case, R, size, size - 1, 1) : 0.0;
        rt_result res = rt_check(&rc_case, got, wref, n, bound, size);
        MT_CHECK(&T, res.bad == 0, "%s: %zu elements beyond bound %g (+ rounding), worst %g", what, res.bad, bound,
                 res.worst);
    }
    free(in);
    free(got);
    free(exact);
    free(win);
    free(wref);
}

/* Bytes the Bcast of one field sends with codec c (the default algorithm;
 * the same data and root every time). */
static unsigned long long bcast_sent(const codec_case *c)
{
    float *buf = mt_xmalloc(NB * sizeof *buf);
    fill(buf, NB, MPI_FLOAT, 11, 1); /* every rank the root's data: nothing to check here but bytes */
    configure(c, ZMPI_COLL_BCAST, ZMPI_ALGO_DEFAULT);
    ZMPI_Stats s0 = mt_stats(comm);
    int rc = ZMPI_Bcast(buf, NB, MPI_FLOAT, 0, comm);
    ZMPI_Stats s1 = mt_stats(comm);
    MT_CHECK(&T, rc == MPI_SUCCESS, "bcast_sent %s: rc %d", zmpi_codec_name(c->codec), rc);
    free(buf);
    unsigned long long sent = s1.bytes_sent - s0.bytes_sent, all = 0;
    MPI_Allreduce(&sent, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
    return all;
}

/* ZMPI_CODEC=auto on a link slow enough for the model to pick fzr codes the
 * call with fzr (the same bytes as fzr configured), and with fzl where no
 * network is told. */
static void auto_pick(void)
{
    if (T.size < 2)
        return;
    codec_case fzr = {ZMPI_CODEC_FZR, ZMPI_EB_REL, 1e-4, 0}, fzl = {ZMPI_CODEC_FZL, ZMPI_EB_REL, 1e-4, 0};
    codec_case slow = {ZMPI_CODEC_AUTO, ZMPI_EB_REL, 1e-4, 1.25e6}, plain = {ZMPI_CODEC_AUTO, ZMPI_EB_REL, 1e-4, 0};
    unsigned long long zr = bcast_sent(&fzr), zl = bcast_sent(&fzl), as = bcast_sent(&slow), an = bcast_sent(&plain);
    MT_CHECK(&T, zr != zl, "fzr and fzl sent the same %llu bytes: the check below cannot tell them apart", zr);
    MT_CHECK(&T, as == zr, "auto on 10 Mb/s sent %llu bytes, fzr %llu, fzl %llu: not coded by fzr", as, zr, zl);
    MT_CHECK(&T, an == zl, "auto, no network told, sent %llu bytes, fzl %llu, fzr %llu: not coded by fzl", an, zl,
             zr);
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_codecs");
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const codec_case cases[] = {
        {ZMPI_CODEC_LINPRED_BYTE, ZMPI_EB_ABS, 1e-2, 0}, {ZMPI_CODEC_LINPRED_BYTE, ZMPI_EB_REL, 1e-4, 0},
        {ZMPI_CODEC_LINPRED_BIT, ZMPI_EB_REL, 1e-3, 0},  {ZMPI_CODEC_LINPRED_BIT, ZMPI_EB_ABS, 1e-3, 0},
        {ZMPI_CODEC_ZSTD, ZMPI_EB_NONE, 0, 0},           {ZMPI_CODEC_XORLZC, ZMPI_EB_NONE, 0, 0},
        {ZMPI_CODEC_TRUNC, ZMPI_EB_NONE, 0, 0},          {ZMPI_CODEC_DP2SP, ZMPI_EB_NONE, 0, 0},
        {ZMPI_CODEC_FZR, ZMPI_EB_REL, 1e-4, 0},          {ZMPI_CODEC_FZR, ZMPI_EB_ABS, 1e-3, 0},
        {ZMPI_CODEC_AUTO, ZMPI_EB_REL, 1e-3, 0},         {ZMPI_CODEC_AUTO, ZMPI_EB_REL, 1e-4, 1.25e6},
        {ZMPI_CODEC_AUTO, ZMPI_EB_ABS, 1e-3, 1.25e6},
    };
    int ncases = (int)(sizeof cases / sizeof *cases);
    MPI_Datatype types[2] = {MPI_FLOAT, MPI_DOUBLE};
    for (int i = 0; i < ncases; i++) {
        const codec_case *c = &cases[i];
        ZMPI_Stats s0 = mt_stats(comm);
        for (int ti = 0; ti < 2; ti++) {
            int k = 2 * i + ti;
            bcast(c, types[ti], k);
            allgather(c, types[ti], k);
            allreduce(c, types[ti], MPI_SUM, k);
            if (kind_of(c) != ZMPI_KIND_BOUNDED) /* MAX: byte-identical (lossless) / idempotent (fixed) */
                allreduce(c, types[ti], MPI_MAX, k + 1);
        }
        ZMPI_Stats s1 = mt_stats(comm);
        if (T.size > 1) /* the codec really ran (not the stored fallback) */
            MT_CHECK(&T, s1.bytes_sent - s0.bytes_sent < s1.bytes_raw - s0.bytes_raw,
                     "%s: %llu bytes sent for %llu raw", zmpi_codec_name(c->codec), s1.bytes_sent - s0.bytes_sent,
                     s1.bytes_raw - s0.bytes_raw);
        MT_CHECK(&T, s1.codec_errors == s0.codec_errors, "%s: %llu codec errors", zmpi_codec_name(c->codec),
                 s1.codec_errors - s0.codec_errors);
    }
    auto_pick();
    MPI_Comm_free(&comm);
    return mt_finish(&T);
}
