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
 * No timing is measured: only the model's arithmetic and the decisions.
 */
#define _POSIX_C_SOURCE 200809L /* setenv */
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
    memcpy(a, in, n * sizeof *a);
    memcpy(b, in, n * sizeof *b);
    MPI_Bcast(a, (int)n, MPI_FLOAT, 0, comm);
    ZMPI_Comm_get_stats(comm, &s0);
    rc = ZMPI_Bcast(b, (int)n, MPI_FLOAT, 0, comm);
    ZMPI_Comm_get_stats(comm, &s1);
    MT_CHECK(&T, rc == MPI_SUCCESS && !memcmp(a, b, n * sizeof *a), "bcast fallback rc %d / differs", rc);
    if (T.size > 1)
        MT_CHECK(&T, s1.fallback_model == s0.fallback_model + 1, "bcast: not counted as a model fallback");
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
    double bws[2] = {1.25e10, 1.25e8};
    for (int b = 0; b < 2; b++) {
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

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_model");
    estimates();
    fallback();
    measured();
    environment();
    return mt_finish(&T);
}
