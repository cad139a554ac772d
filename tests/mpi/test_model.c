/*
 * "Compress only when it pays": the model (ZMPI_Model_estimate) and the
 * fallback it drives.
 *
 * - Without a network configured (net_bw 0) every eligible call compresses.
 * - On a 1 Gbit/s network a 16 MiB Bcast / Allreduce pays, on a 100 Gbit/s
 *   one it does not (the codec is slower than the link); the estimates are
 *   positive and ordered accordingly.
 * - A collective that the model rejects runs as plain MPI: byte-identical
 *   to MPI's result and counted as fallback_model, on every rank alike.
 * - An explicitly chosen algorithm is run even where the model says no.
 * - ZMPI_NET_BW / ZMPI_NET_LAT / ZMPI_CODEC_SPEED / ZMPI_RATIO parse units
 *   and reject malformed values.
 * - The estimates of every collective and of point-to-point equal the
 *   closed-form formulas documented above model_ratio in src/core/call.c
 *   (computed here independently), for float and double, 1 and 3 codec
 *   threads, a configured ratio and the built-in ratio estimate (REL bits
 *   per value, reductions in result scope, ABS, lossless, fixed precision,
 *   the clamps).
 * - The choice the measurements make (zmpi_tune_pick, src/core/core.h) on
 *   made-up times: plain 10x faster -> plain, compressed 10x faster ->
 *   compressed, compressed 3% faster -> plain (a compressed way must be more
 *   than 5% faster), the margin's edge, the second look at the default,
 *   the rival's 10%, and the faster of two measurements kept.
 * No timing is measured: only the model's arithmetic and the decisions.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <unistd.h>

#include "core/core.h" /* zmpi_tune_pick, zmpi_tune_keep: the tuner's choice, with made-up times */
#include "mpitest.h"

static mt_state T;

static ZMPI_Config base(double bw, double lat)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = ZMPI_EB_REL;
    cfg.eb = 1e-4;
    cfg.min_bytes = 0;
    cfg.net_bw = bw;
    cfg.net_lat = lat;
    cfg.decision = 0; /* measured (the test environment has ZMPI_DECISION=always) */
    return cfg;
}

static void estimates(void)
{
    MPI_Comm comm = MPI_COMM_WORLD;
    long long n = 4 << 20; /* 16 MiB of floats */
    double tp = -1, tz = -1;
    ZMPI_Config cfg = base(0, 0);
    MT_CHECK(&T, ZMPI_Comm_set_config(comm, &cfg) == MPI_SUCCESS, "set config");
    MT_CHECK(&T, ZMPI_Model_estimate(comm, ZMPI_COLL_BCAST, n, MPI_FLOAT, &tp, &tz) == 1 && tp == 0 && tz == 0,
             "unknown network: compress, no estimate (%g %g)", tp, tz);
    MT_CHECK(&T, ZMPI_Model_estimate(comm, ZMPI_COLL_BCAST, n, MPI_INT, &tp, &tz) == 0, "MPI_INT: no model");
    if (T.size < 2)
        return;
    cfg = base(1.25e8, 50e-6); /* 1 Gbit/s */
    ZMPI_Comm_set_config(comm, &cfg);
    ZMPI_Coll colls[] = {ZMPI_COLL_BCAST, ZMPI_COLL_ALLREDUCE, ZMPI_COLL_ALLGATHER, ZMPI_COLL_COUNT};
    for (int i = 0; i < 4; i++) {
        long long cnt = colls[i] == ZMPI_COLL_ALLGATHER ? n / T.size : n;
        int pays = ZMPI_Model_estimate(comm, colls[i], cnt, MPI_FLOAT, &tp, &tz);
        MT_CHECK(&T, pays == 1 && tp > 0 && tz > 0 && tz < tp, "1 GbE coll %d: pays %d (%g vs %g)", (int)colls[i],
                 pays, tp, tz);
    }
    cfg = base(1.25e10, 1e-6); /* 100 Gbit/s */
    ZMPI_Comm_set_config(comm, &cfg);
    for (int i = 0; i < 4; i++) {
        long long cnt = colls[i] == ZMPI_COLL_ALLGATHER ? n / T.size : n;
        int pays = ZMPI_Model_estimate(comm, colls[i], cnt, MPI_FLOAT, &tp, &tz);
        MT_CHECK(&T, pays == 0 && tp > 0 && tz > tp, "100 Gb/s coll %d: pays %d (%g vs %g)", (int)colls[i], pays,
                 tp, tz);
    }
    /* a configured ratio and codec speed enter the estimate */
    cfg = base(1.25e9, 5e-6);
    cfg.ratio = 100;
    cfg.comp_speed = cfg.decomp_speed = 1e12;
    ZMPI_Comm_set_config(comm, &cfg);
    MT_CHECK(&T, ZMPI_Model_estimate(comm, ZMPI_COLL_ALLREDUCE, n, MPI_FLOAT, &tp, &tz) == 1 && tz < 0.1 * tp,
             "fast codec, high ratio: %g vs %g", tp, tz);
    cfg.ratio = 1;
    cfg.comp_speed = cfg.decomp_speed = 1e8;
    ZMPI_Comm_set_config(comm, &cfg);
    MT_CHECK(&T, ZMPI_Model_estimate(comm, ZMPI_COLL_ALLREDUCE, n, MPI_FLOAT, &tp, &tz) == 0,
             "slow codec, no ratio: %g vs %g", tp, tz);
    cfg.comp_speed = -1;
    MT_CHECK(&T, ZMPI_Comm_set_config(comm, &cfg) != MPI_SUCCESS, "negative speed rejected");
}

/* On a 100 Gbit/s network the default path falls back; an explicit algorithm still compresses. */
static void fallback(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    size_t n = (size_t)1 << 20;
    float *in = malloc(n * sizeof *in), *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    mt_fill_field(in, n, MPI_FLOAT, (size_t)T.rank * 1000);
    ZMPI_Config cfg = base(1.25e10, 1e-6);
    MT_CHECK(&T, ZMPI_Comm_set_config(comm, &cfg) == MPI_SUCCESS, "set config");
    ZMPI_Stats s0, s1;
    ZMPI_Comm_get_stats(comm, &s0);
    MPI_Allreduce(in, a, (int)n, MPI_FLOAT, MPI_SUM, comm);
    int rc = ZMPI_Allreduce(in, b, (int)n, MPI_FLOAT, MPI_SUM, comm);
    ZMPI_Comm_get_stats(comm, &s1);
    MT_CHECK(&T, rc == MPI_SUCCESS, "rc %d", rc);
    if (T.size > 1) {
        MT_CHECK(&T, s1.fallback_model == s0.fallback_model + 1 && s1.compressed == s0.compressed,
                 "100 Gb/s allreduce: model fallback %llu -> %llu, compressed %llu -> %llu", s0.fallback_model,
                 s1.fallback_model, s0.compressed, s1.compressed);
        MT_CHECK(&T, !memcmp(a, b, n * sizeof *a), "model fallback differs from MPI");
    }
    mt_check_ran(&T, comm, ZMPI_COLL_ALLREDUCE, ZMPI_ALGO_MPI, "100 Gb/s allreduce");
    memcpy(a, in, n * sizeof *a);
    memcpy(b, in, n * sizeof *b);
    MPI_Bcast(a, (int)n, MPI_FLOAT, 0, comm);
    ZMPI_Comm_get_stats(comm, &s0);
    rc = ZMPI_Bcast(b, (int)n, MPI_FLOAT, 0, comm);
    ZMPI_Comm_get_stats(comm, &s1);
    MT_CHECK(&T, rc == MPI_SUCCESS && !memcmp(a, b, n * sizeof *a), "bcast fallback rc %d / differs", rc);
    if (T.size > 1)
        MT_CHECK(&T, s1.fallback_model == s0.fallback_model + 1, "bcast: not counted as a model fallback");
    mt_check_ran(&T, comm, ZMPI_COLL_BCAST, ZMPI_ALGO_MPI, "100 Gb/s bcast");
    /* point-to-point: the decision does not depend on the size (a receiver
     * knows only its capacity): plain on both ends, exact data */
    if (T.size > 1 && T.rank < 2) {
        ZMPI_Comm_get_stats(comm, &s0);
        if (T.rank == 0) {
            rc = ZMPI_Send(in, (int)n / 2, MPI_FLOAT, 1, 7, comm);
        } else {
            MPI_Status st;
            int got = -1;
            memset(b, 0, n * sizeof *b);
            rc = ZMPI_Recv(b, (int)n, MPI_FLOAT, 0, 7, comm, &st);
            MPI_Get_count(&st, MPI_FLOAT, &got);
            mt_fill_field(a, n, MPI_FLOAT, 0); /* rank 0's data */
            MT_CHECK(&T, got == (int)n / 2 && !memcmp(b, a, n / 2 * sizeof *b), "p2p: count %d or data differ", got);
        }
        ZMPI_Comm_get_stats(comm, &s1);
        MT_CHECK(&T, rc == MPI_SUCCESS && s1.fallback_model == s0.fallback_model + 1,
                 "p2p on 100 Gb/s: rc %d, model fallbacks %llu -> %llu", rc, s0.fallback_model, s1.fallback_model);
    }
    /* an explicit algorithm is the user's choice: compressed despite the model */
    cfg.algorithm[ZMPI_COLL_BCAST] = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_BCAST, "binomial");
    ZMPI_Comm_set_config(comm, &cfg);
    memcpy(b, in, n * sizeof *b);
    ZMPI_Comm_get_stats(comm, &s0);
    rc = ZMPI_Bcast(b, (int)n, MPI_FLOAT, 0, comm);
    ZMPI_Comm_get_stats(comm, &s1);
    MT_CHECK(&T, rc == MPI_SUCCESS, "explicit bcast rc %d", rc);
    if (T.size > 1)
        MT_CHECK(&T, s1.compressed == s0.compressed + 1, "explicit algorithm not compressed");
    mt_check_algo(&T, comm, ZMPI_COLL_BCAST, cfg.algorithm[ZMPI_COLL_BCAST], T.size > 1, "explicit bcast");
    /* the same at 1 Gbit/s: the default compresses */
    cfg = base(1.25e8, 50e-6);
    ZMPI_Comm_set_config(comm, &cfg);
    ZMPI_Comm_get_stats(comm, &s0);
    rc = ZMPI_Bcast(b, (int)n, MPI_FLOAT, 0, comm);
    ZMPI_Comm_get_stats(comm, &s1);
    MT_CHECK(&T, rc == MPI_SUCCESS, "1 GbE bcast rc %d", rc);
    if (T.size > 1)
        MT_CHECK(&T, s1.compressed == s0.compressed + 1, "1 GbE bcast not compressed");
    free(in);
    free(a);
    free(b);
    MPI_Comm_free(&comm);
}

/* Measured decisions: repeated calls of one size class switch between the
 * plain and the compressed way while measuring, then keep the faster; every
 * call must be right (exact when plain, within the bound when compressed),
 * and all ranks must take the same way (or the collective would hang). */
static void measured(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    size_t n = (size_t)1 << 18;
    float *in = malloc(n * sizeof *in), *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    mt_fill_field(in, n, MPI_FLOAT, (size_t)T.rank * 777);
    double bws[3] = {1.25e10, 1.25e8, 0}; /* 0: no network told, measured all the same */
    for (int b = 0; b < 3; b++) {
        ZMPI_Config cfg = base(bws[b], 5e-6);
        cfg.eb_mode = ZMPI_EB_ABS;
        cfg.eb = 1e-2;
        ZMPI_Comm_set_config(comm, &cfg);
        MPI_Allreduce(in, ref, (int)n, MPI_FLOAT, MPI_MAX, comm);
        for (int k = 0; k < 5; k++) {
            ZMPI_Stats s0, s1;
            ZMPI_Comm_get_stats(comm, &s0);
            int rc = ZMPI_Allreduce(in, got, (int)n, MPI_FLOAT, MPI_MAX, comm);
            ZMPI_Comm_get_stats(comm, &s1);
            int z = s1.compressed > s0.compressed, bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += z ? !(fabsf(got[i] - ref[i]) <= 1e-2f * 1.0001f) : got[i] != ref[i];
            MT_CHECK(&T, rc == MPI_SUCCESS && bad == 0, "bw %g call %d (%s): rc %d, %d bad", bws[b], k,
                     z ? "compressed" : "plain", rc, bad);
            int zs[2] = {z, -z}, all[2];
            MPI_Allreduce(zs, all, 2, MPI_INT, MPI_MAX, comm);
            MT_CHECK(&T, all[0] == -all[1], "bw %g call %d: ranks took different ways", bws[b], k);
        }
    }
    free(in);
    free(ref);
    free(got);
    MPI_Comm_free(&comm);
}

/* Rivals: with the model on (bw > 0) or with no network told (bw 0: no
 * model, measured), the first calls of a Bcast size class measure
 * the default compressed algorithm (a warm-up call, then a measured one),
 * plain MPI, then the default algorithm's rival (warm-up, measured), then -
 * if the rival was fastest, or plain narrowly - the default once more;
 * later calls all run the
 * fastest - the same on every rank. ZMPI_DECISION=always (`always`): every
 * call runs the default algorithm. Every
 * call's result must be right: the root's buffer exact, the others within
 * the bound (ABS 1e-2). */
static void rivals(double bw, int always)
{
    if (T.size < 2)
        return; /* one rank: every call is plain */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    size_t n = (size_t)1 << 16;
    float *in = malloc(n * sizeof *in), *buf = malloc(n * sizeof *buf);
    mt_fill_field(in, n, MPI_FLOAT, 4242);
    ZMPI_Config cfg = base(bw, bw > 0 ? 50e-6 : 0);
    cfg.decision = always;
    cfg.eb_mode = ZMPI_EB_ABS;
    cfg.eb = 1e-2;
    cfg.chunk = 4096; /* pipelined is the default below 4 ranks */
    ZMPI_Comm_set_config(comm, &cfg);
    int sa = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_BCAST, "scatter_allgather");
    int pipe = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_BCAST, "pipelined");
    int dflt = T.size >= 4 ? sa : pipe, rival = T.size >= 4 ? pipe : sa;
    int want[5] = {dflt, dflt, ZMPI_ALGO_MPI, rival, rival}, last = -1;
    if (always)
        for (int k = 0; k < 5; k++)
            want[k] = dflt;
    for (int k = 0; k < 9; k++) {
        ZMPI_Stats st;
        memcpy(buf, in, n * sizeof *buf);
        int rc = ZMPI_Bcast(buf, (int)n, MPI_FLOAT, 0, comm), bad = 0;
        ZMPI_Comm_get_stats(comm, &st);
        int algo = st.last_algorithm[ZMPI_COLL_BCAST];
        for (size_t i = 0; i < n; i++)
            bad += T.rank == 0 ? buf[i] != in[i] : !(fabsf(buf[i] - in[i]) <= 1e-2f * 1.0001f);
        MT_CHECK(&T, rc == MPI_SUCCESS && bad == 0, "rival call %d (algorithm %d): rc %d, %d bad", k, algo, rc, bad);
        if (k < 5 || always)
            MT_CHECK(&T, algo == want[k < 5 ? k : 0], "bw %g%s: call %d ran algorithm %d, not %d", bw,
                     always ? " always" : "", k, algo, want[k < 5 ? k : 0]);
        else if (k > 6)
            MT_CHECK(&T, algo == last, "rival call %d ran algorithm %d after %d", k, algo, last);
        else /* call 5 measures the default again if the rival or plain won */
            MT_CHECK(&T, algo == dflt || algo == rival || algo == ZMPI_ALGO_MPI, "call %d: algorithm %d", k, algo);
        last = algo;
        int a[2] = {algo, -algo}, all[2];
        MPI_Allreduce(a, all, 2, MPI_INT, MPI_MAX, comm);
        MT_CHECK(&T, all[0] == -all[1], "rival call %d: ranks ran different algorithms", k);
    }
    free(in);
    free(buf);
    MPI_Comm_free(&comm);
}

/* The documented model (src/core/call.c, above model_ratio), with S the
 * whole vector in bytes, f = (N-1)/N, lg = ceil(log2 N), r the ratio, Cc /
 * Cd the codec speeds times the threads (0.85 per thread above one):
 *   coll            plain              zmpi
 *   Bcast           2fS/B + 2lg L      S/Cc + 2fS/(rB) + S/Cd + 2lg L
 *   Scatter         fS/B + lg L        S/Cc + fS/(rB) + S/(N Cd) + lg L
 *   Gather          fS/B + lg L        S/(N Cc) + fS/(rB) + S/Cd + lg L
 *   Allgather       fS/B + lg L        S/(N Cc) + fS/(rB) + S/Cd + lg L
 *   Alltoall        fS/B + (N-1)L      S/Cc + fS/(rB) + S/Cd + (N-1)L
 *   Reduce_scatter  fS/B + lg L        S/Cc + fS/(rB) + S/Cd + (N-1)L
 *   Allreduce       2fS/B + 2lg L      S/Cc + 2S/Cd + S/(N Cc) + 2fS/(rB) + 2lg L
 *   Reduce          as Allreduce
 *   point-to-point  S/B + L            S/Cc + S/(rB) + S/Cd + L
 * The count argument is the call's own: the block per rank for Scatter,
 * Gather, Allgather and Alltoall (S = N * count * size), the buffer or the
 * whole vector otherwise. */
static void formula(ZMPI_Coll coll, double N, double S, double B, double L, double r, double Cc, double Cd,
                    double *tp, double *tz)
{
    double f = (N - 1) / N, lg = 0;
    while (pow(2.0, lg) < N)
        lg++;
    switch (coll) {
    case ZMPI_COLL_BCAST:
        *tp = 2 * f * S / B + 2 * lg * L;
        *tz = S / Cc + 2 * f * S / (r * B) + S / Cd + 2 * lg * L;
        break;
    case ZMPI_COLL_SCATTER:
        *tp = f * S / B + lg * L;
        *tz = S / Cc + f * S / (r * B) + S / (N * Cd) + lg * L;
        break;
    case ZMPI_COLL_GATHER:
    case ZMPI_COLL_ALLGATHER:
        *tp = f * S / B + lg * L;
        *tz = S / (N * Cc) + f * S / (r * B) + S / Cd + lg * L;
        break;
    case ZMPI_COLL_ALLTOALL:
        *tp = f * S / B + (N - 1) * L;
        *tz = S / Cc + f * S / (r * B) + S / Cd + (N - 1) * L;
        break;
    case ZMPI_COLL_REDUCE_SCATTER:
        *tp = f * S / B + lg * L;
        *tz = S / Cc + f * S / (r * B) + S / Cd + (N - 1) * L;
        break;
    case ZMPI_COLL_ALLREDUCE:
    case ZMPI_COLL_REDUCE:
        *tp = 2 * f * S / B + 2 * lg * L;
        *tz = S / Cc + 2 * S / Cd + S / (N * Cc) + 2 * f * S / (r * B) + 2 * lg * L;
        break;
    default:
        *tp = S / B + L;
        *tz = S / Cc + S / (r * B) + S / Cd + L;
        break;
    }
}

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fabs(b) + 1e-300;
}

/* The documented ratio estimate: cfg.ratio if set; fzl / linpred under REL:
 * 8 * size / bits with bits = 2.0 + 2.3 log10(1e-2 / rel) (reductions in
 * result scope: rel / N per compression and log2 N bits more), bits >= 1.5,
 * r clamped to [1, 30]; ABS: 3; lossless 1.6; trunc and dp2sp 2. */
static double ratio_of(const ZMPI_Config *cfg, ZMPI_Coll coll, double N, double es)
{
    if (cfg->ratio > 0)
        return cfg->ratio;
    int kind = zmpi_codec_kind(cfg->codec);
    if (kind == ZMPI_KIND_LOSSLESS)
        return 1.6;
    if (kind == ZMPI_KIND_FIXED)
        return 2.0;
    if (cfg->eb_mode != ZMPI_EB_REL)
        return 3.0;
    double rel = cfg->eb, bits = 0;
    if ((coll == ZMPI_COLL_REDUCE_SCATTER || coll == ZMPI_COLL_ALLREDUCE || coll == ZMPI_COLL_REDUCE) &&
        cfg->scope == ZMPI_SCOPE_RESULT) {
        rel /= N;
        bits = log2(N);
    }
    bits += 2.0 + 2.3 * log10(1e-2 / rel);
    bits = bits < 1.5 ? 1.5 : bits;
    double r = 8.0 * es / bits;
    return r < 1 ? 1 : r > 30 ? 30 : r;
}

static void formulas(void)
{
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    const double N = T.size, B = 1.25e9, L = 20e-6;
    const long long count = 300000;
    struct {
        zmpi_codec codec;
        zmpi_eb_mode mode;
        double eb, ratio;
        ZMPI_Scope scope;
        int threads;
        double cspeed, dspeed;
    } cases[] = {
        {ZMPI_CODEC_FZL, ZMPI_EB_REL, 1e-4, 5.0, ZMPI_SCOPE_RESULT, 1, 2e9, 4e9},   /* configured ratio */
        {ZMPI_CODEC_FZL, ZMPI_EB_REL, 1e-4, 7.5, ZMPI_SCOPE_RESULT, 2, 2e9, 4e9},   /* threads (at most the cores) */
        {ZMPI_CODEC_FZL, ZMPI_EB_REL, 1e-3, 0, ZMPI_SCOPE_RESULT, 1, 0, 0},         /* built-in speeds, REL ratio */
        {ZMPI_CODEC_FZL, ZMPI_EB_REL, 1e-3, 0, ZMPI_SCOPE_MESSAGE, 1, 3e9, 3e9},    /* reductions: message scope */
        {ZMPI_CODEC_LINPRED_BIT, ZMPI_EB_REL, 0.5, 0, ZMPI_SCOPE_RESULT, 1, 2e9, 2e9}, /* bits >= 1.5, r <= 30 */
        {ZMPI_CODEC_FZL, ZMPI_EB_REL, 1e-20, 0, ZMPI_SCOPE_MESSAGE, 1, 2e9, 2e9},   /* r >= 1 */
        {ZMPI_CODEC_FZL, ZMPI_EB_ABS, 1e-2, 0, ZMPI_SCOPE_RESULT, 1, 2e9, 2e9},     /* ABS: 3 */
        {ZMPI_CODEC_ZSTD, ZMPI_EB_NONE, 0, 0, ZMPI_SCOPE_RESULT, 1, 2e9, 2e9},      /* lossless: 1.6 */
        {ZMPI_CODEC_TRUNC, ZMPI_EB_NONE, 0, 0, ZMPI_SCOPE_RESULT, 1, 2e9, 2e9},     /* fixed: 2 */
    };
    const ZMPI_Coll colls[] = {ZMPI_COLL_BCAST,     ZMPI_COLL_SCATTER,        ZMPI_COLL_GATHER,
                               ZMPI_COLL_ALLGATHER, ZMPI_COLL_ALLTOALL,       ZMPI_COLL_REDUCE_SCATTER,
                               ZMPI_COLL_ALLREDUCE, ZMPI_COLL_REDUCE,         ZMPI_COLL_COUNT};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        ZMPI_Config cfg = base(B, L);
        cfg.codec = cases[ci].codec;
        cfg.eb_mode = cases[ci].mode;
        cfg.eb = cases[ci].eb;
        cfg.ratio = cases[ci].ratio;
        cfg.scope = cases[ci].scope;
        cfg.threads = cases[ci].threads;
        if (cfg.threads > sysconf(_SC_NPROCESSORS_ONLN))
            continue; /* more threads than cores is an invalid setting */
        cfg.comp_speed = cases[ci].cspeed;
        cfg.decomp_speed = cases[ci].dspeed;
        int rc = ZMPI_Comm_set_config(comm, &cfg);
        MT_CHECK(&T, rc == MPI_SUCCESS, "formulas case %zu: config rc %d", ci, rc);
        double th = cfg.threads > 1 ? 0.85 * cfg.threads : 1;
        double Cc = (cfg.comp_speed > 0 ? cfg.comp_speed : 3.0e9) * th;
        double Cd = (cfg.decomp_speed > 0 ? cfg.decomp_speed : 3.5e9) * th;
        for (int ti = 0; ti < 2; ti++) {
            MPI_Datatype type = ti ? MPI_DOUBLE : MPI_FLOAT;
            double es = ti ? 8 : 4;
            for (size_t k = 0; k < sizeof colls / sizeof *colls; k++) {
                ZMPI_Coll coll = colls[k];
                int per_rank = coll == ZMPI_COLL_SCATTER || coll == ZMPI_COLL_GATHER ||
                               coll == ZMPI_COLL_ALLGATHER || coll == ZMPI_COLL_ALLTOALL;
                double S = (per_rank ? N : 1) * (double)count * es, wp = 0, wz = 0, tp = -1, tz = -1;
                formula(coll, N, S, B, L, ratio_of(&cfg, coll, N, es), Cc, Cd, &wp, &wz);
                int pays = ZMPI_Model_estimate(comm, coll, count, type, &tp, &tz);
                MT_CHECK(&T, close_to(tp, wp) && close_to(tz, wz) && pays == (wz < wp),
                         "formulas case %zu, %s, %s: plain %.9g (want %.9g), zmpi %.9g (want %.9g), pays %d",
                         ci, coll == ZMPI_COLL_COUNT ? "p2p" : ZMPI_Coll_name(coll), ti ? "double" : "float", tp,
                         wp, tz, wz, pays);
            }
        }
    }
    MPI_Comm_free(&comm);
}

static void environment(void)
{
    struct {
        const char *var, *val;
        int ok;
        double want;
    } cases[] = {
        {"ZMPI_NET_BW", "1Gbit", 1, 1.25e8},   {"ZMPI_NET_BW", "10Gb", 1, 1.25e9},
        {"ZMPI_NET_BW", "12.5GB", 1, 1.25e10}, {"ZMPI_NET_BW", "3e8", 1, 3e8},
        {"ZMPI_NET_BW", "1Gbitz", 0, 0},       {"ZMPI_NET_BW", "-5", 0, 0},
        {"ZMPI_NET_LAT", "50us", 1, 50e-6},    {"ZMPI_NET_LAT", "1e-3", 1, 1e-3},
        {"ZMPI_NET_LAT", "2ms", 1, 2e-3},      {"ZMPI_NET_LAT", "5 parsecs", 0, 0},
        {"ZMPI_CODEC_SPEED", "2G,3G", 1, 2e9}, {"ZMPI_CODEC_SPEED", "2G,", 0, 0},
        {"ZMPI_RATIO", "4", 1, 4},             {"ZMPI_RATIO", "four", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv(cases[i].var, cases[i].val, 1);
        ZMPI_Config cfg;
        const char *bad = NULL;
        int rc = ZMPI_Config_from_env(&cfg, &bad);
        unsetenv(cases[i].var);
        if (!cases[i].ok) {
            MT_CHECK(&T, rc != MPI_SUCCESS && bad && !strcmp(bad, cases[i].var), "%s=%s accepted", cases[i].var,
                     cases[i].val);
            continue;
        }
        double got = !strcmp(cases[i].var, "ZMPI_NET_BW")    ? cfg.net_bw
                     : !strcmp(cases[i].var, "ZMPI_NET_LAT") ? cfg.net_lat
                     : !strcmp(cases[i].var, "ZMPI_RATIO")   ? cfg.ratio
                                                             : cfg.comp_speed;
        MT_CHECK(&T, rc == MPI_SUCCESS && fabs(got - cases[i].want) <= 1e-9 * cases[i].want, "%s=%s -> %g (rc %d)",
                 cases[i].var, cases[i].val, got, rc);
        if (!strcmp(cases[i].var, "ZMPI_CODEC_SPEED"))
            MT_CHECK(&T, cfg.decomp_speed == 3e9, "decompression speed %g", cfg.decomp_speed);
    }
}

/* ZMPI_CODEC=auto: the model's estimate is the faster of fzl and fzr;
 * calls on a slow link are coded by fzr (fewer bytes than fzl for the same
 * data, every element within the bound), on a fast one by fzl (exactly fzl's
 * bytes); without a network it is fzl. */
static void auto_codec(void)
{
    for (int c = 0; c < ZMPI_COLL_COUNT + 1; c++) {
        ZMPI_Coll coll = (ZMPI_Coll)c;
        for (double bw = 1.25e6; bw <= 1.25e10; bw *= 10) {
            ZMPI_Config a = base(bw, 20e-6), f = a, r = a;
            a.codec = ZMPI_CODEC_AUTO;
            r.codec = ZMPI_CODEC_FZR;
            double tp, ta, tpf, tf, tpr, tr;
            int pa = ZMPI_Model_predict(&a, coll, 16, 1 << 22, MPI_FLOAT, &tp, &ta);
            int pf = ZMPI_Model_predict(&f, coll, 16, 1 << 22, MPI_FLOAT, &tpf, &tf);
            int pr = ZMPI_Model_predict(&r, coll, 16, 1 << 22, MPI_FLOAT, &tpr, &tr);
            MT_CHECK(&T, close_to(ta, tf < tr ? tf : tr) && close_to(tp, tpf) && pa == (pf || pr),
                     "auto coll %d at %g B/s: %g, fzl %g, fzr %g", c, bw, ta, tf, tr);
        }
    }
    ZMPI_Config slow = base(1.25e6, 50e-6), fast = base(1.25e9, 20e-6);
    MT_CHECK(&T, slow.codec == ZMPI_CODEC_FZL, "base");
    double t0, t1;
    ZMPI_Config probe = slow;
    probe.codec = ZMPI_CODEC_FZR;
    ZMPI_Model_predict(&probe, ZMPI_COLL_BCAST, T.size, 1 << 20, MPI_FLOAT, NULL, &t0);
    probe.codec = ZMPI_CODEC_FZL;
    ZMPI_Model_predict(&probe, ZMPI_COLL_BCAST, T.size, 1 << 20, MPI_FLOAT, NULL, &t1);
    MT_CHECK(&T, T.size < 2 || t0 < t1, "10 Mbit/s: the model should prefer fzr (%g vs %g)", t0, t1);
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    size_t n = (size_t)1 << 20;
    float *in = malloc(n * sizeof *in), *b = malloc(n * sizeof *b);
    mt_fill_field(in, n, MPI_FLOAT, 0);
    unsigned long long sent[2][2]; /* [slow, fast][fzl, auto] */
    for (int net = 0; net < 2; net++)
        for (int k = 0; k < 2; k++) {
            ZMPI_Config cfg = net ? fast : slow;
            cfg.codec = k ? ZMPI_CODEC_AUTO : ZMPI_CODEC_FZL;
            cfg.algorithm[ZMPI_COLL_BCAST] = ZMPI_Coll_algorithm_from_name(ZMPI_COLL_BCAST, "binomial");
            MT_CHECK(&T, ZMPI_Comm_set_config(comm, &cfg) == MPI_SUCCESS, "auto: set config");
            memcpy(b, in, n * sizeof *b);
            ZMPI_Stats s0, s1;
            ZMPI_Comm_get_stats(comm, &s0);
            int rc = ZMPI_Bcast(b, (int)n, MPI_FLOAT, 0, comm);
            ZMPI_Comm_get_stats(comm, &s1);
            MT_CHECK(&T, rc == MPI_SUCCESS, "auto bcast rc %d", rc);
            double eb = 1e-4 * mt_global_range(in, n, MPI_FLOAT, comm);
            size_t bad = 0;
            for (size_t i = 0; i < n; i++)
                bad += !(fabs((double)b[i] - (double)in[i]) <= eb);
            MT_CHECK(&T, bad == 0, "auto bcast (net %d, codec %d): %zu elements beyond %g", net, k, bad, eb);
            unsigned long long mine = s1.bytes_sent - s0.bytes_sent, all = 0;
            MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, comm);
            sent[net][k] = all;
        }
    if (T.size > 1) {
        MT_CHECK(&T, sent[0][1] < sent[0][0], "10 Mbit/s: auto sent %llu bytes, fzl %llu (fzr expected)",
                 sent[0][1], sent[0][0]);
        MT_CHECK(&T, sent[1][1] == sent[1][0], "10 Gbit/s: auto sent %llu bytes, fzl %llu (fzl expected)",
                 sent[1][1], sent[1][0]);
    }
    free(in);
    free(b);
    MPI_Comm_free(&comm);
}

/* The choice once a size class is measured (zmpi_tune_pick, core.h: the
 * function the tuner calls) with made-up times per byte: what it returns
 * with the default measured once (again 0) and, if that asks for a second
 * measurement, after it (again 1). */
static void pick_case(double mp, double mz, double mr, int want_again, int want, const char *what)
{
    for (double scale = 1e-10; scale <= 1.0; scale *= 1e5) { /* only the ratios count */
        int first = zmpi_tune_pick(mp * scale, mz * scale, mr * scale, 0);
        int second = zmpi_tune_pick(mp * scale, mz * scale, mr * scale, 1);
        MT_CHECK(&T, (first == ZMPI_TUNE_AGAIN) == want_again, "%s: way %d, want %s", what, first,
                 want_again ? "a second measurement of the default" : "no second measurement");
        MT_CHECK(&T, second == want && (want_again || first == want), "%s: way %d then %d, want %d", what, first,
                 second, want);
    }
}

static void tuner(void)
{
    const int P = ZMPI_WAY_PLAIN, D = ZMPI_WAY_DEFAULT, R = ZMPI_WAY_RIVAL;
    /* plain and the default algorithm (no rival) */
    pick_case(1.0, 10.0, 0, 0, P, "plain 10x faster");
    pick_case(10.0, 1.0, 0, 0, D, "compressed 10x faster");
    pick_case(1.0, 0.97, 0, 1, P, "compressed 3% faster (the margin is 5%)");
    pick_case(1.0, 0.94, 0, 0, D, "compressed 6% faster");
    pick_case(1.0, ZMPI_TUNE_MARGIN, 0, 1, P, "compressed exactly 5% faster");
    pick_case(1.0, nextafter(ZMPI_TUNE_MARGIN, 0), 0, 0, D, "compressed just over 5% faster");
    pick_case(1.0, 1.0, 0, 1, P, "a tie");
    pick_case(1.0, 1.4, 0, 1, P, "plain 1.4x faster (a second look)");
    pick_case(1.0, 1.5, 0, 0, P, "plain 1.5x faster (no second look)");
    /* with a rival: it must beat the better of the two by 10% */
    pick_case(2.0, 1.0, 0.5, 1, R, "rival 2x faster than the default");
    pick_case(1.0, 2.0, 0.5, 1, R, "rival 2x faster than plain");
    pick_case(2.0, 1.0, 0.92, 0, D, "rival 8% faster than the default");
    pick_case(1.0, 0.97, 0.92, 1, P, "rival 5% faster than plain, default 3%");
    pick_case(1.0, 0.94, 0.8, 1, R, "rival 15% faster than the default, both beat plain");
    pick_case(1.0, 0.94, 0.85, 0, D, "rival 9.6% faster than the default, both beat plain");
    /* a way measured twice keeps the faster time */
    MT_CHECK(&T, zmpi_tune_keep(0, 5e-9) == 5e-9, "first measurement not kept");
    MT_CHECK(&T, zmpi_tune_keep(3e-9, 5e-9) == 3e-9 && zmpi_tune_keep(5e-9, 3e-9) == 3e-9,
             "a second measurement does not keep the faster");
}

/* Ranks with different ZMPI_DECISION would take different ways (one
 * measuring, one not): every rank's collective fails, naming the setting. */
static void decision_mismatch(void)
{
    if (T.size < 2)
        return;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    ZMPI_Config cfg = base(0, 0);
    cfg.decision = T.rank == T.size - 1;
    ZMPI_Comm_set_config(comm, &cfg);
    size_t n = 4096;
    float *in = calloc(n, sizeof *in), *out = calloc(n, sizeof *out);
    int rc = ZMPI_Allreduce(in, out, (int)n, MPI_FLOAT, MPI_SUM, comm), len = 0;
    char msg[MPI_MAX_ERROR_STRING] = "";
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, msg, &len);
    MT_CHECK(&T, rc != MPI_SUCCESS && strstr(msg, "ZMPI_DECISION"),
             "different ZMPI_DECISION: rc %d, message '%s'", rc, msg);
    free(in);
    free(out);
    MPI_Comm_free(&comm);
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_model");
    tuner();
    auto_codec();
    estimates();
    formulas();
    fallback();
    measured();
    rivals(1.25e8, 0);
    rivals(0, 0);
    rivals(0, 1);
    decision_mismatch();
    environment();
    return mt_finish(&T);
}
