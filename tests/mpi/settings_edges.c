/*
 * Every ZMPI_ setting at the edges of its range (the edge, one past it on
 * either side) and every unit suffix, without MPI (`mpi.settings`): whether
 * ZMPI_Setting_check accepts each value (what `zmpi config`, settings files
 * and every zmpi call check), and, through ZMPI_Config_from_env, the value
 * an accepted one gives. Every row of the settings table (ZMPI_Setting_info)
 * must have cases here: at least one accepted value and, unless the row is
 * free text for zmpi's tools, one rejected.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zmpi/zmpi.h"

static long checks, failures;

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                          \
        checks++;                                                                                                 \
        if (!(cond)) {                                                                                            \
            failures++;                                                                                           \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                                  \
            fprintf(stderr, __VA_ARGS__);                                                                         \
            fprintf(stderr, "\n");                                                                                \
        }                                                                                                         \
    } while (0)

typedef struct vcase {
    const char *name, *value;
    int ok;
} vcase;

/* The rows whose value is free text (variables of zmpi's tools and the
 * preload's report directory): anything is accepted. */
static const char *const free_text[] = {"ZMPI_REPORT", "ZMPI_DATA", "ZMPI_PYTHON", "ZMPI_FUZZ_SECONDS"};

static const vcase cases[] = {
    {"ZMPI_CODEC", "auto", 1}, {"ZMPI_CODEC", "fzl", 1}, {"ZMPI_CODEC", "fzr", 1},
    {"ZMPI_CODEC", "xorlzc-inter", 1}, {"ZMPI_CODEC", "fzl2", 0}, {"ZMPI_CODEC", "AUTO", 0},
    {"ZMPI_CODEC", "", 0},
    /* > 0 and finite: the smallest normal double, the largest, and past them */
    {"ZMPI_EB", "2.2250738585072014e-308", 1}, {"ZMPI_EB", "1.7976931348623157e308", 1}, {"ZMPI_EB", "1e-3", 1},
    {"ZMPI_EB", "0", 0}, {"ZMPI_EB", "-0", 0}, {"ZMPI_EB", "-1e-3", 0}, {"ZMPI_EB", "1e-400", 0},
    {"ZMPI_EB", "1e309", 0}, {"ZMPI_EB", "inf", 0}, {"ZMPI_EB", "nan", 0}, {"ZMPI_EB", "1e-3x", 0},
    {"ZMPI_EB", "", 0},
    {"ZMPI_EB_MODE", "abs", 1}, {"ZMPI_EB_MODE", "rel", 1}, {"ZMPI_EB_MODE", "ABS", 1}, {"ZMPI_EB_MODE", "Rel", 1},
    {"ZMPI_EB_MODE", "absolute", 0}, {"ZMPI_EB_MODE", "ab", 0}, {"ZMPI_EB_MODE", "", 0},
    {"ZMPI_EB_SCOPE", "result", 1}, {"ZMPI_EB_SCOPE", "message", 1}, {"ZMPI_EB_SCOPE", "MESSAGE", 1},
    {"ZMPI_EB_SCOPE", "messages", 0}, {"ZMPI_EB_SCOPE", "msg", 0},
    /* 0 .. SIZE_MAX bytes, no suffix */
    {"ZMPI_MIN_BYTES", "0", 1}, {"ZMPI_MIN_BYTES", "1", 1}, {"ZMPI_MIN_BYTES", "18446744073709551615", 1},
    {"ZMPI_MIN_BYTES", "18446744073709551616", 0}, {"ZMPI_MIN_BYTES", "-1", 0}, {"ZMPI_MIN_BYTES", "64k", 0},
    {"ZMPI_MIN_BYTES", "1e3", 0}, {"ZMPI_MIN_BYTES", " 5", 0}, {"ZMPI_MIN_BYTES", "+5", 0},
    {"ZMPI_THREADS", "0", 1}, {"ZMPI_THREADS", "1", 1}, {"ZMPI_THREADS", "-1", 0}, {"ZMPI_THREADS", "1048577", 0},
    {"ZMPI_THREADS", "1.5", 0}, /* the node's core count and one more: threads_edges */
    /* 64 .. 2^26 elements */
    {"ZMPI_CHUNK", "63", 0}, {"ZMPI_CHUNK", "64", 1}, {"ZMPI_CHUNK", "65", 1}, {"ZMPI_CHUNK", "67108863", 1},
    {"ZMPI_CHUNK", "67108864", 1}, {"ZMPI_CHUNK", "67108865", 0}, {"ZMPI_CHUNK", "0", 0}, {"ZMPI_CHUNK", "64k", 0},
    /* 0, or bytes below 10^18 with the rate suffixes */
    {"ZMPI_SCRATCH", "0", 1}, {"ZMPI_SCRATCH", "1", 1}, {"ZMPI_SCRATCH", "64M", 1}, {"ZMPI_SCRATCH", "999999T", 1},
    {"ZMPI_SCRATCH", "1000000T", 0}, {"ZMPI_SCRATCH", "1e18", 0}, {"ZMPI_SCRATCH", "-1", 0},
    {"ZMPI_SCRATCH", "64X", 0},
    {"ZMPI_CHANNEL_MEM", "0", 1}, {"ZMPI_CHANNEL_MEM", "64M", 1}, {"ZMPI_CHANNEL_MEM", "999999T", 1},
    {"ZMPI_CHANNEL_MEM", "1000000T", 0}, {"ZMPI_CHANNEL_MEM", "-64M", 0}, {"ZMPI_CHANNEL_MEM", "64Mi", 0},
    /* 1 .. 52, or codec */
    {"ZMPI_TRUNC_BITS", "codec", 1}, {"ZMPI_TRUNC_BITS", "0", 0}, {"ZMPI_TRUNC_BITS", "1", 1},
    {"ZMPI_TRUNC_BITS", "52", 1}, {"ZMPI_TRUNC_BITS", "53", 0}, {"ZMPI_TRUNC_BITS", "-1", 0},
    {"ZMPI_TRUNC_BITS", "Codec", 0},
    /* 1 .. 2^20, or auto */
    {"ZMPI_NODE_RANKS", "auto", 1}, {"ZMPI_NODE_RANKS", "1", 1}, {"ZMPI_NODE_RANKS", "0", 0},
    {"ZMPI_NODE_RANKS", "1048576", 1}, {"ZMPI_NODE_RANKS", "1048577", 0}, {"ZMPI_NODE_RANKS", "-1", 0},
    {"ZMPI_NODE_RANKS", "8x", 0}, {"ZMPI_NODE_RANKS", "Auto", 0},
    /* plain or compress */
    {"ZMPI_INTRA_NODE", "plain", 1}, {"ZMPI_INTRA_NODE", "compress", 1}, {"ZMPI_INTRA_NODE", "Plain", 0},
    {"ZMPI_INTRA_NODE", "1", 0}, {"ZMPI_INTRA_NODE", "", 0}, {"ZMPI_INTRA_NODE", "compressed", 0},
    /* measure or always */
    {"ZMPI_DECISION", "measure", 1}, {"ZMPI_DECISION", "always", 1}, {"ZMPI_DECISION", "Always", 0},
    {"ZMPI_DECISION", "model", 0}, {"ZMPI_DECISION", "", 0}, {"ZMPI_DECISION", "0", 0},
    {"ZMPI_NET_BW", "1Gbit", 1}, {"ZMPI_NET_BW", "0", 0}, {"ZMPI_NET_BW", "-1Gbit", 0},
    {"ZMPI_NET_BW", "1gbit", 0}, {"ZMPI_NET_BW", "1Gbits", 0}, {"ZMPI_NET_BW", "1Gb/s", 0}, {"ZMPI_NET_BW", "G", 0},
    {"ZMPI_NET_BW", "1e400", 0}, {"ZMPI_NET_BW", "1e308T", 0}, {"ZMPI_NET_BW", "inf", 0},
    {"ZMPI_NET_LAT", "50us", 1}, {"ZMPI_NET_LAT", "0", 1}, {"ZMPI_NET_LAT", "-1us", 0}, {"ZMPI_NET_LAT", "50usec", 0},
    {"ZMPI_NET_LAT", "50 us", 0}, {"ZMPI_NET_LAT", "1m", 0}, {"ZMPI_NET_LAT", "1Gbit", 0},
    {"ZMPI_CODEC_SPEED", "3G,4G", 1}, {"ZMPI_CODEC_SPEED", "3G", 1}, {"ZMPI_CODEC_SPEED", "3G,", 0},
    {"ZMPI_CODEC_SPEED", ",4G", 0}, {"ZMPI_CODEC_SPEED", "3G,4G,5G", 0}, {"ZMPI_CODEC_SPEED", "0,4G", 0},
    {"ZMPI_CODEC_SPEED", "3G,0", 0}, {"ZMPI_CODEC_SPEED", "3s", 0},
    /* the first of C,D is read from a 63-character copy */
    {"ZMPI_CODEC_SPEED", "000000000000000000000000000000000000000000000000000000000000003,4G", 1},
    {"ZMPI_CODEC_SPEED", "0000000000000000000000000000000000000000000000000000000000000003,4G", 0},
    {"ZMPI_RATIO", "2.5", 1}, {"ZMPI_RATIO", "2.2250738585072014e-308", 1}, {"ZMPI_RATIO", "0", 0}, {"ZMPI_RATIO", "-2", 0},
    {"ZMPI_RATIO", "inf", 0}, {"ZMPI_RATIO", "2x", 0},
    /* the algorithms: every name is checked in algorithms() */
    {"ZMPI_BCAST_ALGORITHM", "default", 1}, {"ZMPI_BCAST_ALGORITHM", "mpi", 1}, {"ZMPI_BCAST_ALGORITHM", "ring", 0},
    {"ZMPI_SCATTER_ALGORITHM", "linear", 1}, {"ZMPI_SCATTER_ALGORITHM", "LINEAR", 1},
    {"ZMPI_SCATTER_ALGORITHM", "linear2", 0},
    {"ZMPI_GATHER_ALGORITHM", "default", 1}, {"ZMPI_GATHER_ALGORITHM", "", 0},
    {"ZMPI_ALLGATHER_ALGORITHM", "ring", 1}, {"ZMPI_ALLGATHER_ALGORITHM", "rsg", 0},
    {"ZMPI_ALLTOALL_ALGORITHM", "pairwise", 1}, {"ZMPI_ALLTOALL_ALGORITHM", "ring", 0},
    {"ZMPI_REDUCE_SCATTER_ALGORITHM", "rhd", 1}, {"ZMPI_REDUCE_SCATTER_ALGORITHM", "rsg", 0},
    {"ZMPI_ALLREDUCE_ALGORITHM", "rhd", 1}, {"ZMPI_ALLREDUCE_ALGORITHM", "bogus", 0},
    {"ZMPI_REDUCE_ALGORITHM", "rsg", 1}, {"ZMPI_REDUCE_ALGORITHM", "pairwise", 0},
    {"ZMPI_PROFILE_ONLY", "0", 1}, {"ZMPI_PROFILE_ONLY", "1", 1}, {"ZMPI_PROFILE_ONLY", "2", 0},
    {"ZMPI_PROFILE_ONLY", "01", 0}, {"ZMPI_PROFILE_ONLY", "-1", 0}, {"ZMPI_PROFILE_ONLY", "yes", 0},
    {"ZMPI_CONFIG", "/nonexistent/zmpi.conf", 0}, /* a real file: config_file() */
    {"ZMPI_CALLS", "Send", 1}, {"ZMPI_CALLS", "MPI_Allreduce", 1}, {"ZMPI_CALLS", "Send,Isend,Reduce_scatter_block", 1},
    {"ZMPI_CALLS", "Recv", 0}, {"ZMPI_CALLS", "", 0}, {"ZMPI_CALLS", "Send,,Isend", 0}, {"ZMPI_CALLS", ",Send", 0},
    {"ZMPI_CALLS", "send", 0}, {"ZMPI_CALLS", "MPI_", 0},
    {"ZMPI_EXCLUDE_CALLS", "Bcast", 1}, {"ZMPI_EXCLUDE_CALLS", "Bcastv", 0},
    {"ZMPI_INCLUDE_SITES", "halo.c:1", 1}, {"ZMPI_INCLUDE_SITES", "a.c:12,b.cpp:1073741824", 1},
    {"ZMPI_INCLUDE_SITES", "halo.c:0", 0}, {"ZMPI_INCLUDE_SITES", "halo.c:1073741825", 0},
    {"ZMPI_INCLUDE_SITES", "halo.c", 0}, {"ZMPI_INCLUDE_SITES", ":12", 0}, {"ZMPI_INCLUDE_SITES", "halo.c:-1", 0},
    {"ZMPI_INCLUDE_SITES", "halo.c:12x", 0},
    {"ZMPI_EXCLUDE_SITES", "d:/x.c:7", 1}, {"ZMPI_EXCLUDE_SITES", "x.c:", 0},
    {"ZMPI_SAMPLES", "0", 1}, {"ZMPI_SAMPLES", "1048576", 1}, {"ZMPI_SAMPLES", "1048577", 0},
    {"ZMPI_SAMPLES", "-1", 0}, {"ZMPI_SAMPLES", "8k", 0},
    {"ZMPI_SAMPLE_BUDGET", "0", 1}, {"ZMPI_SAMPLE_BUDGET", "1", 1}, {"ZMPI_SAMPLE_BUDGET", "100", 1},
    {"ZMPI_SAMPLE_BUDGET", "101", 0}, {"ZMPI_SAMPLE_BUDGET", "-1", 0}, {"ZMPI_SAMPLE_BUDGET", "5%", 0},
    {"ZMPI_REPORT", "/tmp/reports", 1}, {"ZMPI_DATA", "anything at all", 1}, {"ZMPI_PYTHON", "python3", 1},
    {"ZMPI_FUZZ_SECONDS", "abc", 1},
    /* names */
    {"ZMPI_EBMODE", "abs", 0}, {"zmpi_eb", "1e-3", 0}, {"ZMPI_", "1", 0}, {"", "1", 0},
};

static int is_free_text(const char *name)
{
    for (size_t i = 0; i < sizeof free_text / sizeof *free_text; i++)
        if (!strcmp(name, free_text[i]))
            return 1;
    return 0;
}

static void check_value(const char *name, const char *value, int ok)
{
    char why[256] = "untouched";
    int rc = ZMPI_Setting_check(name, value, why, (int)sizeof why);
    CHECK((rc == MPI_SUCCESS) == ok, "%s=%s: %s (%s)", name, value, ok ? "rejected" : "accepted", why);
    if (!ok)
        CHECK(why[0] != '\0' && strcmp(why, "untouched"), "%s=%s: rejected without a reason", name, value);
}

/* ---- the accepted values' meaning, through the environment ---- */

/* ZMPI_Config_from_env with name=value the only ZMPI_ variable (and ZMPI_EB
 * where the setting needs a bound). */
static int from_env(const char *name, const char *value, ZMPI_Config *cfg)
{
    setenv(name, value, 1);
    int rc = ZMPI_Config_from_env(cfg, NULL);
    unsetenv(name);
    return rc;
}

static void rate(const char *name, const char *value, double want)
{
    ZMPI_Config cfg;
    int rc = from_env(name, value, &cfg);
    double got = !strcmp(name, "ZMPI_NET_BW") ? cfg.net_bw : !strcmp(name, "ZMPI_CODEC_SPEED") ? cfg.comp_speed
                                                            : !strcmp(name, "ZMPI_SCRATCH") ? (double)cfg.scratch_keep
                                                                                              : (double)cfg.channel_mem;
    CHECK(rc == MPI_SUCCESS && fabs(got - want) <= 1e-12 * want, "%s=%s: %g, want %g (rc %d)", name, value, got, want,
          rc);
}

/* Every rate suffix: k/K/M/G/T (powers of 1000), then B (bytes) or
 * bit/b/bps (bits), or nothing (bytes). */
static void units(void)
{
    static const struct {
        const char *s;
        double f;
    } pre[] = {{"", 1}, {"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}};
    static const struct {
        const char *s;
        double f;
    } post[] = {{"", 1}, {"B", 1}, {"bit", 0.125}, {"b", 0.125}, {"bps", 0.125}};
    char v[64];
    for (size_t i = 0; i < sizeof pre / sizeof *pre; i++)
        for (size_t j = 0; j < sizeof post / sizeof *post; j++) {
            snprintf(v, sizeof v, "2.5%s%s", pre[i].s, post[j].s);
            rate("ZMPI_NET_BW", v, 2.5 * pre[i].f * post[j].f);
            rate("ZMPI_CODEC_SPEED", v, 2.5 * pre[i].f * post[j].f);
            if (i > 0 && j < 2) { /* whole bytes */
                snprintf(v, sizeof v, "3%s%s", pre[i].s, post[j].s);
                rate("ZMPI_SCRATCH", v, 3 * pre[i].f);
                rate("ZMPI_CHANNEL_MEM", v, 3 * pre[i].f);
            }
            snprintf(v, sizeof v, "2.5%s%sX", pre[i].s, post[j].s);
            check_value("ZMPI_NET_BW", v, 0);
        }
    rate("ZMPI_NET_BW", "1Gbit", 1.25e8);
    rate("ZMPI_NET_BW", "12.5GB", 1.25e10);
    rate("ZMPI_SCRATCH", "999999T", 999999e12);
    ZMPI_Config cfg;
    CHECK(from_env("ZMPI_CODEC_SPEED", "3G,4.5Gbit", &cfg) == MPI_SUCCESS && cfg.comp_speed == 3e9 &&
              cfg.decomp_speed == 4.5e9 / 8,
          "ZMPI_CODEC_SPEED=3G,4.5Gbit: %g, %g", cfg.comp_speed, cfg.decomp_speed);
    CHECK(from_env("ZMPI_CODEC_SPEED", "2M", &cfg) == MPI_SUCCESS && cfg.comp_speed == 2e6 && cfg.decomp_speed == 2e6,
          "ZMPI_CODEC_SPEED=2M: %g, %g", cfg.comp_speed, cfg.decomp_speed);
    /* times: ns, us, ms, s, or nothing (seconds) */
    static const struct {
        const char *v;
        double s;
    } t[] = {{"7ns", 7e-9}, {"7us", 7e-6}, {"7ms", 7e-3}, {"7s", 7}, {"7", 7}, {"0.5us", 5e-7}, {"1e300s", 1e300}};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        CHECK(from_env("ZMPI_NET_LAT", t[i].v, &cfg) == MPI_SUCCESS && fabs(cfg.net_lat - t[i].s) <= 1e-12 * t[i].s,
              "ZMPI_NET_LAT=%s: %g, want %g", t[i].v, cfg.net_lat, t[i].s);
        check_value("ZMPI_NET_LAT", t[i].v, 1);
    }
    static const char *const bad_t[] = {"7 s", "7sec", "7Ms", "7min", "7h", "7S", "7nS"};
    for (size_t i = 0; i < sizeof bad_t / sizeof *bad_t; i++)
        check_value("ZMPI_NET_LAT", bad_t[i], 0);
}

/* Whole-number settings: the parsed value at the edges. */
static void whole(void)
{
    ZMPI_Config cfg;
    CHECK(from_env("ZMPI_MIN_BYTES", "0", &cfg) == MPI_SUCCESS && cfg.min_bytes == 0, "ZMPI_MIN_BYTES=0: %zu",
          cfg.min_bytes);
    CHECK(from_env("ZMPI_MIN_BYTES", "18446744073709551615", &cfg) == MPI_SUCCESS && cfg.min_bytes == SIZE_MAX,
          "ZMPI_MIN_BYTES=SIZE_MAX: %zu", cfg.min_bytes);
    CHECK(from_env("ZMPI_CHUNK", "64", &cfg) == MPI_SUCCESS && cfg.chunk == 64, "ZMPI_CHUNK=64: %zu", cfg.chunk);
    CHECK(from_env("ZMPI_CHUNK", "67108864", &cfg) == MPI_SUCCESS && cfg.chunk == 67108864, "ZMPI_CHUNK=2^26: %zu",
          cfg.chunk);
    CHECK(from_env("ZMPI_TRUNC_BITS", "1", &cfg) == MPI_SUCCESS && cfg.trunc_bits == 1, "ZMPI_TRUNC_BITS=1: %d",
          cfg.trunc_bits);
    CHECK(from_env("ZMPI_TRUNC_BITS", "52", &cfg) == MPI_SUCCESS && cfg.trunc_bits == 52, "ZMPI_TRUNC_BITS=52: %d",
          cfg.trunc_bits);
    CHECK(from_env("ZMPI_TRUNC_BITS", "codec", &cfg) == MPI_SUCCESS && cfg.trunc_bits == 0,
          "ZMPI_TRUNC_BITS=codec: %d", cfg.trunc_bits);
    CHECK(from_env("ZMPI_NODE_RANKS", "1048576", &cfg) == MPI_SUCCESS && cfg.node_ranks == 1048576,
          "ZMPI_NODE_RANKS=2^20: %d", cfg.node_ranks);
    CHECK(from_env("ZMPI_NODE_RANKS", "auto", &cfg) == MPI_SUCCESS && cfg.node_ranks == 0,
          "ZMPI_NODE_RANKS=auto: %d", cfg.node_ranks);
    CHECK(from_env("ZMPI_INTRA_NODE", "compress", &cfg) == MPI_SUCCESS && cfg.intra_node == 1,
          "ZMPI_INTRA_NODE=compress: %d", cfg.intra_node);
    CHECK(from_env("ZMPI_INTRA_NODE", "plain", &cfg) == MPI_SUCCESS && cfg.intra_node == 0,
          "ZMPI_INTRA_NODE=plain: %d", cfg.intra_node);
    CHECK(from_env("ZMPI_DECISION", "always", &cfg) == MPI_SUCCESS && cfg.decision == 1, "ZMPI_DECISION=always: %d",
          cfg.decision);
    CHECK(from_env("ZMPI_DECISION", "measure", &cfg) == MPI_SUCCESS && cfg.decision == 0,
          "ZMPI_DECISION=measure: %d", cfg.decision);
    CHECK(from_env("ZMPI_SCRATCH", "0", &cfg) == MPI_SUCCESS && cfg.scratch_keep == 0, "ZMPI_SCRATCH=0: %zu",
          cfg.scratch_keep);
    CHECK(from_env("ZMPI_CHANNEL_MEM", "0", &cfg) == MPI_SUCCESS && cfg.channel_mem == 0,
          "ZMPI_CHANNEL_MEM=0: %zu", cfg.channel_mem);
    CHECK(from_env("ZMPI_RATIO", "2.5", &cfg) == MPI_SUCCESS && cfg.ratio == 2.5, "ZMPI_RATIO=2.5: %g", cfg.ratio);
    CHECK(from_env("ZMPI_EB", "2.2250738585072014e-308", &cfg) == MPI_SUCCESS && cfg.eb == 0x1p-1022 &&
              cfg.eb_mode == ZMPI_EB_REL,
          "ZMPI_EB=DBL_MIN: %g mode %d", cfg.eb, (int)cfg.eb_mode);
    /* a malformed value is an error of the whole environment, naming it */
    const char *bad = NULL;
    setenv("ZMPI_CHUNK", "67108865", 1);
    CHECK(ZMPI_Config_from_env(&cfg, &bad) == MPI_ERR_ARG && bad && !strcmp(bad, "ZMPI_CHUNK"),
          "ZMPI_CHUNK=67108865 in the environment: bad %s", bad ? bad : "(none)");
    unsetenv("ZMPI_CHUNK");
}

/* ZMPI_THREADS: 0 .. the node's cores. */
static void threads_edges(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char v[32];
    if (cores < 1)
        cores = 1;
    snprintf(v, sizeof v, "%ld", cores);
    check_value("ZMPI_THREADS", v, 1);
    ZMPI_Config cfg;
    CHECK(from_env("ZMPI_THREADS", v, &cfg) == MPI_SUCCESS && cfg.threads == cores, "ZMPI_THREADS=%s: %d", v,
          cfg.threads);
    snprintf(v, sizeof v, "%ld", cores + 1);
    check_value("ZMPI_THREADS", v, 0);
    if (cores > 1) {
        snprintf(v, sizeof v, "%ld", cores - 1);
        check_value("ZMPI_THREADS", v, 1);
    }
}

/* Every algorithm name of every collective, default and mpi, through the
 * environment too. */
static void algorithms(void)
{
    static const char *const var[ZMPI_COLL_COUNT] = {
        "ZMPI_BCAST_ALGORITHM",          "ZMPI_SCATTER_ALGORITHM",   "ZMPI_GATHER_ALGORITHM",
        "ZMPI_ALLGATHER_ALGORITHM",      "ZMPI_ALLTOALL_ALGORITHM",  "ZMPI_REDUCE_SCATTER_ALGORITHM",
        "ZMPI_ALLREDUCE_ALGORITHM",      "ZMPI_REDUCE_ALGORITHM"};
    for (int k = 0; k < ZMPI_COLL_COUNT; k++) {
        const char *names[32];
        int ids[32], n = ZMPI_Coll_algorithms((ZMPI_Coll)k, 32, ids, names, NULL);
        CHECK(n > 0 && n <= 32, "%s: %d algorithms", var[k], n);
        for (int i = 0; i < n && i < 32; i++) {
            ZMPI_Config cfg;
            check_value(var[k], names[i], 1);
            CHECK(from_env(var[k], names[i], &cfg) == MPI_SUCCESS && cfg.algorithm[k] == ids[i], "%s=%s: id %d, want %d",
                  var[k], names[i], cfg.algorithm[k], ids[i]);
            char v[80];
            snprintf(v, sizeof v, "%s ", names[i]);
            check_value(var[k], v, 0);
        }
        ZMPI_Config cfg;
        CHECK(from_env(var[k], "mpi", &cfg) == MPI_SUCCESS && cfg.algorithm[k] == ZMPI_ALGO_MPI, "%s=mpi: %d", var[k],
              cfg.algorithm[k]);
        CHECK(from_env(var[k], "default", &cfg) == MPI_SUCCESS && cfg.algorithm[k] == ZMPI_ALGO_DEFAULT,
              "%s=default: %d", var[k], cfg.algorithm[k]);
    }
}

/* ZMPI_CONFIG names a settings file, itself checked line by line. */
static int config_file_accepted;

static void config_file(void)
{
    char path[] = "/tmp/zmpi_settings_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    fputs("# comment\nZMPI_EB = 1e-3\nZMPI_CHUNK=64\n", f);
    fclose(f);
    check_value("ZMPI_CONFIG", path, 1);
    config_file_accepted = 1;
    f = fopen(path, "w");
    fputs("ZMPI_CHUNK=63\n", f);
    fclose(f);
    check_value("ZMPI_CONFIG", path, 0);
    unlink(path);
}

/* Every row of the table has cases above. */
static void coverage(void)
{
    int n = ZMPI_Setting_info(0, NULL, NULL, NULL);
    CHECK(n > 0, "no settings");
    for (int i = 0; i < n; i++) {
        const char *name = NULL;
        ZMPI_Setting_info(i, &name, NULL, NULL);
        int good = !strcmp(name, "ZMPI_CONFIG") && config_file_accepted, bad = 0;
        for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
            if (!strcmp(cases[k].name, name))
                cases[k].ok ? good++ : bad++;
        CHECK(good > 0 && (bad > 0 || is_free_text(name)), "%s: %d accepted and %d rejected cases here", name, good,
              bad);
    }
}

int main(void)
{
    /* only the variables set here may be in the environment */
    for (int again = 1; again;) {
        extern char **environ;
        again = 0;
        for (char **e = environ; e && *e; e++)
            if (!strncmp(*e, "ZMPI_", 5)) {
                char name[128];
                size_t l = strcspn(*e, "=");
                snprintf(name, sizeof name, "%.*s", (int)(l < 127 ? l : 127), *e);
                unsetenv(name);
                again = 1;
                break;
            }
    }
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
        check_value(cases[k].name, cases[k].value, cases[k].ok);
    units();
    whole();
    threads_edges();
    algorithms();
    config_file();
    coverage();
    printf("settings_edges: %ld checks, %ld failures\n", checks, failures);
    return failures ? 1 : 0;
}
