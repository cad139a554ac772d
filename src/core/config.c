/*
 * The settings of the MPI layer: one table of every ZMPI_* environment
 * variable (name, default, meaning, parser). It drives the environment
 * parsing (ZMPI_Config_from_env) and the validation of a configuration;
 * the documentation of the variables lists the same rows.
 *
 * A malformed value is an error with a message that names the variable,
 * the value and what was expected: never a silent default. A ZMPI_* name
 * that is not in the table is an error too (a mistyped name would
 * otherwise leave the setting at its default without a word).
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core.h"

extern char **environ;

static int say(char *msg, size_t cap, const char *fmt, ...)
{
    if (msg && cap) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, cap, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A number > 0 and finite, nothing after it. */
static int parse_pos(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || *end || errno || !(d > 0) || !isfinite(d))
        return 0;
    *out = d;
    return 1;
}

/* A positive number with an optional unit suffix: k/K, M, G, T (powers of
 * 1000) and then "bit"/"b"/"bps" (bits: / 8) or "B" (bytes) for rates
 * (kind 'r'); "ns", "us", "ms", "s" for times (kind 't'). */
static int parse_unit(const char *v, char kind, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || errno || !(d > 0) || !isfinite(d))
        return 0;
    if (kind == 't') {
        static const struct {
            const char *u;
            double f;
        } t[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"", 1}};
        size_t i = 0;
        while (i < sizeof t / sizeof t[0] && strcmp(end, t[i].u))
            i++;
        if (i == sizeof t / sizeof t[0])
            return 0;
        d *= t[i].f;
    } else {
        const char *u = end;
        const char *pre = strchr("kKMGT", *u);
        if (*u && pre) {
            static const double f[] = {1e3, 1e3, 1e6, 1e9, 1e12};
            d *= f[pre - "kKMGT"];
            u++;
        }
        if (!strcmp(u, "bit") || !strcmp(u, "b") || !strcmp(u, "bps"))
            d /= 8;
        else if (*u && strcmp(u, "B"))
            return 0;
    }
    if (!isfinite(d))
        return 0;
    *out = d;
    return 1;
}

/* A non-negative decimal integer <= max, nothing after it. */
static int parse_uint(const char *v, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (*v < '0' || *v > '9')
        return 0;
    unsigned long long d = strtoull(v, &end, 10);
    if (*end || errno || d > max)
        return 0;
    *out = d;
    return 1;
}

static long online_cores(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? n : 1;
}

/* ---- one parser per variable: 0, or -1 with the reason in msg ---- */
typedef int (*setting_fn)(const char *v, ZMPI_Config *cfg, char *msg, size_t cap);

static int set_codec(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    if (!strcmp(v, "auto")) {
        cfg->codec = ZMPI_CODEC_AUTO;
        return 0;
    }
    int c = zmpi_codec_from_name(v);
    if (c < 0)
        return say(msg, cap, "unknown codec (`zmpi codec list` lists them)");
    cfg->codec = (zmpi_codec)c;
    return 0;
}

static int set_eb(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    double d;
    if (!parse_pos(v, &d))
        return say(msg, cap, "the error bound must be a finite number > 0");
    cfg->eb = d;
    if (cfg->eb_mode == ZMPI_EB_NONE)
        cfg->eb_mode = ZMPI_EB_REL;
    return 0;
}

static int set_eb_mode(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    zmpi_eb_mode m;
    if (!strcasecmp(v, "abs"))
        m = ZMPI_EB_ABS;
    else if (!strcasecmp(v, "rel"))
        m = ZMPI_EB_REL;
    else
        return say(msg, cap, "expected abs or rel");
    if (cfg->eb > 0) /* without ZMPI_EB there is no bound; the value is checked all the same */
        cfg->eb_mode = m;
    return 0;
}

static int set_scope(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    if (!strcasecmp(v, "result"))
        cfg->scope = ZMPI_SCOPE_RESULT;
    else if (!strcasecmp(v, "message"))
        cfg->scope = ZMPI_SCOPE_MESSAGE;
    else
        return say(msg, cap, "expected result or message");
    return 0;
}

static int set_min_bytes(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    unsigned long long d;
    if (!parse_uint(v, SIZE_MAX, &d))
        return say(msg, cap, "expected a number of bytes (a whole number >= 0)");
    cfg->min_bytes = (size_t)d;
    return 0;
}

static int set_threads(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    unsigned long long d;
    if (!parse_uint(v, 1u << 20, &d))
        return say(msg, cap, "expected a thread count (0 = all cores of the node)");
    if ((long long)d > online_cores())
        return say(msg, cap, "more threads than the %ld cores of this node (0 = all cores)", online_cores());
    cfg->threads = (int)d;
    return 0;
}

/* Settings of libzmpi_preload.so: checked here like the others (so that a
 * malformed one stops the program at MPI_Init), read by the preload. */
static int check_flag(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    (void)cfg;
    return strcmp(v, "0") && strcmp(v, "1") ? say(msg, cap, "expected 0 or 1") : 0;
}

static int check_samples(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    unsigned long long d;
    (void)cfg;
    return parse_uint(v, 1u << 20, &d) ? 0 : say(msg, cap, "expected a number of samples per call site, 0 or more");
}

/* The calls whose data zmpi compresses when it sends (receives always
 * decode what arrives): the names ZMPI_CALLS and ZMPI_EXCLUDE_CALLS take. */
static const char *const send_calls[] = {"Send", "Ssend", "Isend", "Issend", "Sendrecv", "Sendrecv_replace",
                                         "Bcast", "Scatter", "Scatterv",
                                         "Gather", "Gatherv", "Allgather", "Allgatherv", "Alltoall", "Alltoallv",
                                         "Reduce_scatter", "Reduce_scatter_block", "Allreduce", "Reduce"};

/* Calls each item of a comma-separated list (no empty items, at most 127
 * characters each) with item(s, msg, cap); 0 or the first item's -1. */
static int each_item(const char *v, int (*item)(const char *s, char *msg, size_t cap), char *msg, size_t cap)
{
    char buf[128];
    if (!*v)
        return say(msg, cap, "an empty list");
    while (*v) {
        size_t n = strcspn(v, ",");
        if (n == 0 || n >= sizeof buf)
            return say(msg, cap, n ? "an item of more than 127 characters" : "an empty item in the list");
        memcpy(buf, v, n);
        buf[n] = '\0';
        if (item(buf, msg, cap))
            return -1;
        v += n + (v[n] == ',');
    }
    return 0;
}

static int call_item(const char *s, char *msg, size_t cap)
{
    const char *n = strncmp(s, "MPI_", 4) ? s : s + 4;
    for (size_t i = 0; i < sizeof send_calls / sizeof send_calls[0]; i++)
        if (!strcmp(n, send_calls[i]))
            return 0;
    return say(msg, cap,
               "%s: not a call zmpi compresses when sending (Send, Ssend, Isend, Issend, Sendrecv, "
               "Sendrecv_replace and the blocking collectives; receives always decode)",
               s);
}

static int site_item(const char *s, char *msg, size_t cap)
{
    const char *colon = strrchr(s, ':');
    unsigned long long line;
    if (!colon || colon == s || !parse_uint(colon + 1, 1u << 30, &line) || line == 0)
        return say(msg, cap, "%s: expected FILE:LINE (the call site's source file name and line)", s);
    return 0;
}

static int check_calls(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    (void)cfg;
    return each_item(v, call_item, msg, cap);
}

static int check_sites(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    (void)cfg;
    return each_item(v, site_item, msg, cap);
}

static int check_config_file(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    (void)cfg;
    return ZMPI_Config_file_check(v, msg, (int)(cap < INT_MAX ? cap : INT_MAX)) == MPI_SUCCESS ? 0 : -1;
}

static int check_percent(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    unsigned long long d;
    (void)cfg;
    return parse_uint(v, 100, &d) ? 0 : say(msg, cap, "expected a percentage, 0 to 100");
}

static int set_chunk(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    unsigned long long d;
    if (!parse_uint(v, 1u << 26, &d) || d < 64)
        return say(msg, cap, "expected elements per piece, 64 to 67108864");
    cfg->chunk = (size_t)d;
    return 0;
}

static int set_scratch(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    double d;
    if (!strcmp(v, "0"))
        cfg->scratch_keep = 0;
    else if (parse_unit(v, 'r', &d) && d < 1e18)
        cfg->scratch_keep = (size_t)d;
    else
        return say(msg, cap, "expected bytes, e.g. 64M or 0");
    return 0;
}

static int set_channel_mem(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    double d;
    if (!strcmp(v, "0"))
        cfg->channel_mem = 0;
    else if (parse_unit(v, 'r', &d) && d < 1e18)
        cfg->channel_mem = (size_t)d;
    else
        return say(msg, cap, "expected bytes, e.g. 64M or 0");
    return 0;
}

static int set_trunc_bits(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    unsigned long long d;
    if (!strcmp(v, "codec")) {
        cfg->trunc_bits = 0;
        return 0;
    }
    if (!parse_uint(v, 52, &d) || d < 1)
        return say(msg, cap, "expected bits to drop, 1 to 52 (at most 23 for floats), or codec");
    cfg->trunc_bits = (int)d;
    return 0;
}

static int set_node_ranks(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    unsigned long long k;
    if (!strcmp(v, "auto")) {
        cfg->node_ranks = 0;
        return 0;
    }
    if (!parse_uint(v, ZMPI_NODE_RANKS_MAX, &k) || k < 1)
        return say(msg, cap, "expected ranks per emulated node, 1 to %d, or auto (the MPI's own nodes)",
                   ZMPI_NODE_RANKS_MAX);
    cfg->node_ranks = (int)k;
    return 0;
}

/* A setting of two words, exactly as written: 0 for w0, 1 for w1, else -1. */
static int two_words(const char *v, const char *w0, const char *w1)
{
    return !strcmp(v, w0) ? 0 : !strcmp(v, w1) ? 1 : -1;
}

static int set_intra_node(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    int k = two_words(v, "plain", "compress");
    if (k < 0)
        return say(msg, cap, "expected plain (messages within a node travel uncompressed) or compress");
    cfg->intra_node = k;
    return 0;
}

static int set_decision(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    int k = two_words(v, "measure", "always");
    if (k < 0)
        return say(msg, cap, "expected measure (time compressed and plain on the first calls, keep the faster) or "
                             "always (compress every call that can be)");
    cfg->decision = k;
    return 0;
}

static int set_net_bw(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    if (!parse_unit(v, 'r', &cfg->net_bw))
        return say(msg, cap, "expected a rate, e.g. 1Gbit, 10Gbit or 12.5GB");
    return 0;
}

static int set_net_lat(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    if (!strcmp(v, "0"))
        cfg->net_lat = 0; /* the default: no latency term */
    else if (!parse_unit(v, 't', &cfg->net_lat))
        return say(msg, cap, "expected a time, e.g. 50us, or 0");
    return 0;
}

static int set_ratio(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    if (!parse_pos(v, &cfg->ratio))
        return say(msg, cap, "expected a ratio > 0");
    return 0;
}

static int set_speed(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    char tmp[64];
    const char *comma = strchr(v, ',');
    size_t l = comma ? (size_t)(comma - v) : strlen(v);
    double cs = 0, ds = 0;
    int ok = l < sizeof tmp;
    if (ok) {
        memcpy(tmp, v, l);
        tmp[l] = '\0';
        ok = parse_unit(tmp, 'r', &cs);
        ds = cs;
    }
    if (ok && comma)
        ok = parse_unit(comma + 1, 'r', &ds);
    if (!ok)
        return say(msg, cap, "expected C[,D] bytes/s, e.g. 3G,4G");
    cfg->comp_speed = cs;
    cfg->decomp_speed = ds;
    return 0;
}

static int set_algorithm(ZMPI_Coll coll, const char *v, ZMPI_Config *cfg, char *msg, size_t cap)
{
    int id = ZMPI_Coll_algorithm_from_name(coll, v);
    if (id == -2) {
        char names[256] = "mpi, default";
        const char *n[16];
        int k = ZMPI_Coll_algorithms(coll, 16, NULL, n, NULL);
        for (int i = 0; i < k && i < 16; i++) {
            size_t used = strlen(names);
            snprintf(names + used, sizeof names - used, ", %s", n[i]);
        }
        return say(msg, cap, "unknown algorithm (one of: %s)", names);
    }
    cfg->algorithm[coll] = id;
    return 0;
}

#define ALGO_SETTER(fn, coll)                                                                                     \
    static int fn(const char *v, ZMPI_Config *cfg, char *msg, size_t cap)                                         \
    {                                                                                                             \
        return set_algorithm(coll, v, cfg, msg, cap);                                                             \
    }
ALGO_SETTER(set_alg_bcast, ZMPI_COLL_BCAST)
ALGO_SETTER(set_alg_scatter, ZMPI_COLL_SCATTER)
ALGO_SETTER(set_alg_gather, ZMPI_COLL_GATHER)
ALGO_SETTER(set_alg_allgather, ZMPI_COLL_ALLGATHER)
ALGO_SETTER(set_alg_alltoall, ZMPI_COLL_ALLTOALL)
ALGO_SETTER(set_alg_reduce_scatter, ZMPI_COLL_REDUCE_SCATTER)
ALGO_SETTER(set_alg_allreduce, ZMPI_COLL_ALLREDUCE)
ALGO_SETTER(set_alg_reduce, ZMPI_COLL_REDUCE)

/* The table. Order matters where one setting reads another: ZMPI_EB before
 * ZMPI_EB_MODE. Rows with no parser are variables of zmpi's tools, listed so
 * that the unknown-name check knows them. */
static const zmpi_setting settings[] = {
    {"ZMPI_CODEC", "auto",
     "codec of the compressed messages: auto (fzl, or fzr where the model finds its higher ratio pays: needs "
     "ZMPI_NET_BW; SUM reductions in result scope add packed grid codes) or any of `zmpi codec list`; the inter-step ones (xorlzc-inter, trunc-inter, "
     "dp2sp-inter) code point-to-point and Alltoall(v) messages against the previous message of their channel, the "
     "other collectives with the intra-step variant (xorlzc, trunc, dp2sp)",
     set_codec},
    {"ZMPI_EB", "none",
     "error bound, a finite number > 0; without it the error-bounded codecs are off and calls run as plain MPI",
     set_eb},
    {"ZMPI_EB_MODE", "rel", "abs (absolute) or rel (relative to the value range)", set_eb_mode},
    {"ZMPI_EB_SCOPE", "result",
     "result: the bound holds on a collective's result (zmpi splits it over the compressions an element "
     "passes); message: per compressed message (errors can add up)",
     set_scope},
    {"ZMPI_MIN_BYTES", "65536", "messages below this size are sent uncompressed (point-to-point: never one of 8 KiB or less, the wire's raw floor)", set_min_bytes},
    {"ZMPI_THREADS", "1", "OpenMP threads per compression; 0 = all cores of the node; more than the node's cores is an error",
     set_threads},
    {"ZMPI_CHUNK", "65536", "elements per pipelined piece (64 to 67108864)", set_chunk},
    {"ZMPI_SCRATCH", "256M",
     "bytes of working buffers (compressed streams, reduction scratch) a communicator keeps between collective calls, e.g. 64M; 0: allocate and free per call",
     set_scratch},
    {"ZMPI_CHANNEL_MEM", "64M",
     "bytes of history the inter-step channels of the messages a rank sends on one communicator keep (a message "
     "whose history does not fit is coded by the intra-step variant; a receiver keeps what its senders keep)",
     set_channel_mem},
    {"ZMPI_TRUNC_BITS", "codec",
     "low bits trunc and trunc-inter drop, 1 to 52 (DP-Lossy_N; at most 23 for floats); codec: 32 for doubles, 16 "
     "for floats",
     set_trunc_bits},
    {"ZMPI_NODE_RANKS", "auto",
     "the nodes of the ranks: auto, the MPI's own (ranks that share memory, MPI_COMM_TYPE_SHARED); k: nodes of k "
     "consecutive ranks of MPI_COMM_WORLD (1: every rank a node of its own), to try node-aware behaviour on one "
     "machine",
     set_node_ranks},
    {"ZMPI_INTRA_NODE", "plain",
     "messages between ranks of one node: plain (shared memory is faster than any codec: point-to-point "
     "messages to the same node, and the collectives of a communicator on one node, go uncompressed) or compress",
     set_intra_node},
    {"ZMPI_DECISION", "measure",
     "compressed or plain, per collective and size class: measure (the first calls time both ways - after the "
     "model's estimate with ZMPI_NET_BW - and later calls take the faster) or always (every call that can be "
     "compressed is, unless ZMPI_NET_BW's model says it does not pay; no timing)",
     set_decision},
    {"ZMPI_NET_BW", "unset",
     "link bandwidth (1Gbit, 10Gbit, 12.5GB; bytes/s without a unit) for the model, which then estimates whether "
     "compression pays: the way a collective's first call takes, and point-to-point's decision",
     set_net_bw},
    {"ZMPI_NET_LAT", "0", "latency per message for the model (50us, 1ms)", set_net_lat},
    {"ZMPI_CODEC_SPEED", "3G,3.5G", "codec speed per thread for the model, C[,D] bytes/s of raw data for compression[,decompression], e.g. 3G,4G (fzl measured on the real fields: 2.7-3.6 / 2.8-6.2 GB/s)",
     set_speed},
    {"ZMPI_RATIO", "estimated", "expected compression ratio for the model (default: estimated from codec and bound)", set_ratio},
    {"ZMPI_BCAST_ALGORITHM", "default", "Bcast algorithm", set_alg_bcast},
    {"ZMPI_SCATTER_ALGORITHM", "default", "Scatter(v) algorithm", set_alg_scatter},
    {"ZMPI_GATHER_ALGORITHM", "default", "Gather(v) algorithm", set_alg_gather},
    {"ZMPI_ALLGATHER_ALGORITHM", "default", "Allgather(v) algorithm", set_alg_allgather},
    {"ZMPI_ALLTOALL_ALGORITHM", "default", "Alltoall(v) algorithm", set_alg_alltoall},
    {"ZMPI_REDUCE_SCATTER_ALGORITHM", "default", "Reduce_scatter(_block) algorithm", set_alg_reduce_scatter},
    {"ZMPI_ALLREDUCE_ALGORITHM", "default", "Allreduce algorithm", set_alg_allreduce},
    {"ZMPI_REDUCE_ALGORITHM", "default", "Reduce algorithm", set_alg_reduce},
    {"ZMPI_REPORT", "unset",
     "libzmpi_preload.so: at MPI_Finalize, rank 0 writes the profile of the run to DIR/EXE.RANKS.PID.zmpi.txt (mpiP's sections, then zmpi's compression and advisor sections) and .zmpi.json (EXE: the program name, RANKS: the size of MPI_COMM_WORLD, PID: rank 0 process id; DIR is created if missing)",
     NULL},
    {"ZMPI_PROFILE_ONLY", "0",
     "libzmpi_preload.so: 1 profiles and advises without compressing anything (every call is MPI's own)", check_flag},
    {"ZMPI_CONFIG", "unset",
     "libzmpi_preload.so: a file of settings, one NAME=VALUE per line (# comments; a repeated name takes its last value); the environment's own values win",
     check_config_file},
    {"ZMPI_CALLS", "all",
     "libzmpi_preload.so: the calls that compress, comma-separated (Send,Isend,Allreduce; the MPI_ prefix is optional, a name covers its large-count _c binding): Send, Ssend, Isend, Issend, Sendrecv, Sendrecv_replace and the blocking collectives zmpi implements",
     check_calls},
    {"ZMPI_EXCLUDE_CALLS", "none", "libzmpi_preload.so: calls that never compress (names as ZMPI_CALLS)", check_calls},
    {"ZMPI_INCLUDE_SITES", "all",
     "libzmpi_preload.so: only point-to-point sends at these call sites compress, FILE:LINE,... as the report names them (FILE: the source file's name, or its path or the path's end: ./f.c, src/f.c, /home/u/src/f.c); MPI_Finalize names entries that matched no site",
     check_sites},
    {"ZMPI_EXCLUDE_SITES", "none",
     "libzmpi_preload.so: point-to-point sends at these call sites (FILE:LINE,... as ZMPI_INCLUDE_SITES) never compress", check_sites},
    {"ZMPI_SAMPLES", "8",
     "libzmpi_preload.so: messages per call site the advisor compresses on its ladder of settings (the 1st, 2nd, 4th, 8th, ... sending call); 0: no advice",
     check_samples},
    {"ZMPI_SAMPLE_BUDGET", "1",
     "libzmpi_preload.so: percent of the application's time the advisor's sampling may take (a sample is skipped when it would exceed it); 100: no limit",
     check_percent},
    {"ZMPI_DATA", "../shared/data", "tools: the data directory or file of the demo and zmpi-bench", NULL},
    {"ZMPI_PYTHON", "unset", "tools: the Python interpreter of `zmpi report` (default: the project's .venv, else python3)",
     NULL},
    {"ZMPI_FUZZ_SECONDS", "5", "tools: seconds per fuzz target in scripts/test", NULL},
};

const zmpi_setting *zmpi_settings(size_t *n)
{
    *n = sizeof settings / sizeof settings[0];
    return settings;
}

void zmpi_config_defaults(ZMPI_Config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->codec = ZMPI_CODEC_AUTO;
    cfg->eb_mode = ZMPI_EB_NONE;
    cfg->scope = ZMPI_SCOPE_RESULT;
    cfg->threads = 1;
    cfg->min_bytes = 65536;
    cfg->chunk = 65536;
    cfg->scratch_keep = (size_t)256 << 20;
    cfg->channel_mem = (size_t)64 << 20;
}

int zmpi_config_env(ZMPI_Config *cfg, const char **bad, char *msg, size_t cap)
{
    char why[200];
    zmpi_config_defaults(cfg);
    if (bad)
        *bad = NULL;
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        const char *v = getenv(settings[i].name);
        if (!settings[i].set || !v || !*v)
            continue;
        if (settings[i].set(v, cfg, why, sizeof why)) {
            if (bad)
                *bad = settings[i].name;
            say(msg, cap, "%s=%s: %s", settings[i].name, v, why);
            return -1;
        }
    }
    /* a ZMPI_ name that no row knows is a typo of one that does */
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, "ZMPI_", 5))
            continue;
        size_t l = strcspn(*e, "=");
        size_t i = 0;
        while (i < sizeof settings / sizeof settings[0] &&
               (strlen(settings[i].name) != l || strncmp(settings[i].name, *e, l)))
            i++;
        if (i == sizeof settings / sizeof settings[0]) {
            if (bad)
                *bad = "ZMPI_*";
            say(msg, cap, "%.*s: unknown zmpi setting (`zmpi config` lists them)", (int)(l < 64 ? l : 64), *e);
            return -1;
        }
    }
    /* settings that are each valid but not together */
    if (zmpi_config_check(cfg, why, sizeof why)) {
        if (bad)
            *bad = "ZMPI_CODEC";
        say(msg, cap, "the settings together: %s", why);
        return -1;
    }
    return 0;
}

int ZMPI_Config_env_check(char *why, int cap)
{
    ZMPI_Config cfg;
    return zmpi_config_env(&cfg, NULL, why, cap > 0 ? (size_t)cap : 0) ? MPI_ERR_ARG : MPI_SUCCESS;
}

int ZMPI_Config_from_env(ZMPI_Config *cfg, const char **bad)
{
    if (!cfg)
        return MPI_ERR_ARG;
    return zmpi_config_env(cfg, bad, NULL, 0) ? MPI_ERR_ARG : MPI_SUCCESS;
}

/* 1 if id is one of coll's algorithms (ZMPI_Coll_algorithms). */
static int algorithm_known(ZMPI_Coll coll, int id)
{
    int ids[32];
    int n = ZMPI_Coll_algorithms(coll, 32, ids, NULL, NULL);
    for (int i = 0; i < n && i < 32; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

int zmpi_config_check(const ZMPI_Config *cfg, char *msg, size_t cap)
{
    if (!cfg)
        return say(msg, cap, "no configuration (NULL)");
    if (cfg->codec != ZMPI_CODEC_AUTO && zmpi_codec_kind(cfg->codec) < 0)
        return say(msg, cap, "unknown codec id %d", (int)cfg->codec);
    if (cfg->eb_mode != ZMPI_EB_NONE && cfg->eb_mode != ZMPI_EB_ABS && cfg->eb_mode != ZMPI_EB_REL)
        return say(msg, cap, "unknown bound mode %d", (int)cfg->eb_mode);
    if (cfg->eb_mode != ZMPI_EB_NONE && (!(cfg->eb > 0) || !isfinite(cfg->eb)))
        return say(msg, cap, "error bound %g: must be a finite number > 0", cfg->eb);
    if (cfg->eb_mode != ZMPI_EB_NONE && zmpi_codec_kind(cfg->codec) == ZMPI_KIND_FIXED)
        return say(msg, cap,
                   "codec %s keeps a fixed precision and cannot hold an error bound (%g): remove the bound, or "
                   "choose an error-bounded codec (auto, fzl, fzr, linpred-byte, linpred-bit)",
                   zmpi_codec_name(cfg->codec), cfg->eb);
    if (cfg->scope != ZMPI_SCOPE_RESULT && cfg->scope != ZMPI_SCOPE_MESSAGE)
        return say(msg, cap, "unknown scope %d", (int)cfg->scope);
    if (cfg->threads < 0 || cfg->threads > online_cores())
        return say(msg, cap, "threads %d: 0 (all cores) to the %ld cores of this node", cfg->threads,
                   online_cores());
    if (cfg->trunc_bits < 0 || cfg->trunc_bits > 52)
        return say(msg, cap, "trunc_bits %d: 0 (the codec's default) to 52", cfg->trunc_bits);
    if (cfg->node_ranks < 0 || cfg->node_ranks > ZMPI_NODE_RANKS_MAX)
        return say(msg, cap, "node_ranks %d: 0 (the MPI's own nodes) to %d", cfg->node_ranks, ZMPI_NODE_RANKS_MAX);
    if (cfg->decision != 0 && cfg->decision != 1)
        return say(msg, cap, "decision %d: 0 (measure) or 1 (always)", cfg->decision);
    if (cfg->intra_node != 0 && cfg->intra_node != 1)
        return say(msg, cap, "intra_node %d: 0 (plain) or 1 (compress)", cfg->intra_node);
    if (cfg->chunk < 64 || cfg->chunk > (1u << 26))
        return say(msg, cap, "chunk %zu: 64 to 67108864 elements", cfg->chunk);
    const double m[] = {cfg->net_bw, cfg->net_lat, cfg->comp_speed, cfg->decomp_speed, cfg->ratio};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!(m[i] >= 0) || !isfinite(m[i]))
            return say(msg, cap, "model parameters (net_bw, net_lat, speeds, ratio) must be finite and >= 0");
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        if (cfg->algorithm[k] != ZMPI_ALGO_DEFAULT && cfg->algorithm[k] != ZMPI_ALGO_MPI &&
            !algorithm_known((ZMPI_Coll)k, cfg->algorithm[k]))
            return say(msg, cap, "unknown %s algorithm id %d", ZMPI_Coll_name((ZMPI_Coll)k), cfg->algorithm[k]);
    return 0;
}

int ZMPI_Setting_info(int index, const char **name, const char **default_value, const char **doc)
{
    int n = (int)(sizeof settings / sizeof settings[0]);
    if (index >= 0 && index < n) {
        if (name)
            *name = settings[index].name;
        if (default_value)
            *default_value = settings[index].def;
        if (doc)
            *doc = settings[index].doc;
    }
    return n;
}

int ZMPI_Setting_check(const char *name, const char *value, char *why, int cap)
{
    ZMPI_Config cfg;
    size_t c = cap > 0 ? (size_t)cap : 0;
    if (!name || !value)
        return say(why, c, "no name or value"), MPI_ERR_ARG;
    zmpi_config_defaults(&cfg);
    cfg.eb = 1; /* so that ZMPI_EB_MODE is checked as with a bound */
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++)
        if (!strcmp(settings[i].name, name)) {
            if (settings[i].set && settings[i].set(value, &cfg, why, c))
                return MPI_ERR_ARG;
            if (why && c)
                why[0] = '\0';
            return MPI_SUCCESS;
        }
    say(why, c, "unknown zmpi setting");
    return MPI_ERR_ARG;
}

/* ---- settings files ---- */

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        s[--n] = '\0';
    return s;
}

/* One line: 0 (a setting in *name, *value, or nothing), or -1 with msg. */
static int file_line(char *line, char **name, char **value, char *msg, size_t cap)
{
    char *s = trim(line), *eq = strchr(s, '=');
    *name = *value = NULL;
    if (!*s || *s == '#')
        return 0;
    if (!eq)
        return say(msg, cap, "expected NAME=VALUE");
    *eq = '\0';
    *name = trim(s);
    *value = trim(eq + 1);
    if (!strcmp(*name, "ZMPI_CONFIG"))
        return say(msg, cap, "ZMPI_CONFIG inside a settings file");
    char why[256];
    if (ZMPI_Setting_check(*name, *value, why, (int)sizeof why) != MPI_SUCCESS)
        return say(msg, cap, "%s=%s: %s", *name, *value, why);
    return 0;
}

/* The settings of a file, each name once with its last value, in the order
 * of those last values. */
typedef struct {
    char **name, **value;
    size_t n, cap;
} file_settings;

static void file_settings_free(file_settings *fs)
{
    for (size_t i = 0; i < fs->n; i++) {
        free(fs->name[i]);
        free(fs->value[i]);
    }
    free(fs->name);
    free(fs->value);
}

/* Records name=value; an earlier value of name is dropped (the last one wins). */
static int file_settings_put(file_settings *fs, const char *name, const char *value)
{
    for (size_t i = 0; i < fs->n; i++)
        if (!strcmp(fs->name[i], name)) {
            free(fs->name[i]);
            free(fs->value[i]);
            memmove(fs->name + i, fs->name + i + 1, (fs->n - i - 1) * sizeof *fs->name);
            memmove(fs->value + i, fs->value + i + 1, (fs->n - i - 1) * sizeof *fs->value);
            fs->n--;
            break;
        }
    if (fs->n == fs->cap) {
        size_t cap = fs->cap ? 2 * fs->cap : 16;
        char **nn = realloc(fs->name, cap * sizeof *nn);
        if (nn)
            fs->name = nn;
        char **vv = nn ? realloc(fs->value, cap * sizeof *vv) : NULL;
        if (!vv)
            return MPI_ERR_NO_MEM;
        fs->value = vv;
        fs->cap = cap;
    }
    char *n = strdup(name), *v = strdup(value);
    if (!n || !v) {
        free(n);
        free(v);
        return MPI_ERR_NO_MEM;
    }
    fs->name[fs->n] = n;
    fs->value[fs->n++] = v;
    return MPI_SUCCESS;
}

#define FILE_LINE_MAX 4094 /* characters of a line, without its end */

/* Reads and checks the whole file into *fs. */
static int file_parse(const char *path, file_settings *fs, char *why, size_t cap)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return say(why, cap, "cannot read %s: %s", path, strerror(errno)), MPI_ERR_FILE;
    char *line = NULL, msg[384];
    size_t lcap = 0;
    ssize_t len;
    int rc = MPI_SUCCESS;
    for (int no = 1; rc == MPI_SUCCESS && (len = getline(&line, &lcap, f)) >= 0; no++) {
        char *name, *value;
        size_t body = (size_t)len - (len > 0 && line[len - 1] == '\n');
        if (memchr(line, '\0', (size_t)len))
            rc = (say(why, cap, "%s:%d: a NUL byte (not a text file?)", path, no), MPI_ERR_ARG);
        else if (body > FILE_LINE_MAX)
            rc = (say(why, cap, "%s:%d: a line of more than %d characters", path, no, FILE_LINE_MAX), MPI_ERR_ARG);
        else if (file_line(line, &name, &value, msg, sizeof msg))
            rc = (say(why, cap, "%s:%d: %s", path, no, msg), MPI_ERR_ARG);
        else if (name)
            rc = file_settings_put(fs, name, value);
    }
    if (rc == MPI_SUCCESS && ferror(f))
        rc = (say(why, cap, "cannot read %s: %s", path, strerror(errno)), MPI_ERR_FILE);
    free(line);
    fclose(f);
    return rc;
}

int ZMPI_Config_file_read(const char *path, int (*each)(const char *name, const char *value, void *arg), void *arg,
                          char *why, int cap)
{
    size_t c = cap > 0 ? (size_t)cap : 0;
    file_settings fs = {0};
    if (!path || !*path)
        return say(why, c, "no file name"), MPI_ERR_ARG;
    int rc = file_parse(path, &fs, why, c);
    for (size_t i = 0; rc == MPI_SUCCESS && each && i < fs.n; i++)
        rc = each(fs.name[i], fs.value[i], arg);
    file_settings_free(&fs);
    return rc;
}

int ZMPI_Config_file_check(const char *path, char *why, int cap)
{
    return ZMPI_Config_file_read(path, NULL, NULL, why, cap);
}

int ZMPI_Config_compresses(const ZMPI_Config *cfg)
{
    if (!cfg)
        return 0;
    if (cfg->eb_mode != ZMPI_EB_NONE)
        return 1;
    int kind = zmpi_codec_kind(cfg->codec);
    return kind >= 0 && kind != ZMPI_KIND_BOUNDED && cfg->codec != ZMPI_CODEC_STORED;
}
