/*
 * zmpi-bench - latency of zmpi's compressed point-to-point and collectives
 * against plain MPI, with the error of every element checked.
 *
 *   mpiexec -n N zmpi-bench --coll allreduce --rel 1e-4 --min-bytes 1K --max-bytes 64M
 *
 * For every message size (powers of two from --min-bytes to --max-bytes, or
 * --bytes) and every selected collective, the benchmark runs the plain MPI
 * call, then zmpi with each algorithm of that collective (each on its own
 * duplicated communicator whose ZMPI_Config pins the algorithm). One CSV row
 * per (collective, size, algorithm):
 *
 *   time_s           per repetition: barrier, time the call on every rank, take
 *                    the max over ranks; then the median over repetitions.
 *                    p2p: ping-pong between ranks 0 and 1, half the round trip.
 *   speedup          time of plain MPI / time of this row.
 *   ratio            bytes_raw / bytes_sent of the timed calls, summed over
 *                    ranks (ZMPI_Comm_get_stats deltas); 1 if nothing was
 *                    compressed (e.g. messages below ZMPI_MIN_BYTES).
 *   compressed       share of the timed zmpi calls that moved compressed data.
 *   max_abs_err      max |zmpi result - plain MPI result| over every element of
 *                    every rank (one extra, untimed call).
 *   max_err_over_eb  max_abs_err / the bound that applies (below).
 *   violations       elements beyond that bound, summed over ranks (must be 0).
 *
 * The bound that applies: ABS: the user's eb. REL: rel * (max - min) of the
 * collective's inputs over all ranks (bcast and scatter: the root's buffer;
 * p2p: the message). In result scope zmpi guarantees it for the result of
 * every collective. In message scope it holds for p2p and the data-movement
 * collectives (each element is compressed once); for the reductions the
 * error may compound, so max_err_over_eb is reported against the user's
 * bound and violations is left empty. Lossless codecs: the bound is 0 (the
 * result must be bit-identical); fixed-precision codecs: no bound.
 *
 * Exit status: 0, 2 for bad arguments, 1 for a failure, 3 if any element
 * broke its bound. Only rank 0 prints.
 *
 * The program keeps no mutable process-global state (everything lives in a
 * `bench` passed around) and makes no assumption about MPI handle types,
 * so it also runs with SimGrid's SMPI, where all ranks share one process.
 */
#define _XOPEN_SOURCE 700 /* readlink, realpath, stat */

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "zmpi/zmpi.h"

#define BK_DEFAULT_FIELD "pop_t_384x320.f32"
#define BK_MAX_ALGOS 32
#define BK_ROOT 0
#define BK_TAG 7001
#define BK_MAX_REPEAT 25 /* with --min-time */
#define BK_STR_(x) #x
#define BK_STR(x) BK_STR_(x)

/* ---- what is benchmarked ---- */

typedef enum bk_kind {
    BK_KIND_P2P,  /* ping-pong between ranks 0 and 1 */
    BK_KIND_ROOT, /* data from the root only (bcast, scatter) */
    BK_KIND_MOVE, /* every rank's data moves unchanged (gather, allgather, alltoall) */
    BK_KIND_RED   /* reductions */
} bk_kind;

typedef enum bk_coll {
    BK_P2P = 0,
    BK_BCAST,
    BK_SCATTER,
    BK_GATHER,
    BK_ALLGATHER,
    BK_ALLTOALL,
    BK_REDUCE_SCATTER,
    BK_ALLREDUCE,
    BK_REDUCE,
    BK_NCOLL
} bk_coll;

typedef struct bk_coll_info {
    const char *name;
    int zcoll; /* ZMPI_Coll, or -1 for p2p */
    bk_kind kind;
    const char *bytes_means;
} bk_coll_info;

static const bk_coll_info bk_colls[BK_NCOLL] = {
    {"p2p", -1, BK_KIND_P2P, "the message"},
    {"bcast", ZMPI_COLL_BCAST, BK_KIND_ROOT, "the buffer"},
    {"scatter", ZMPI_COLL_SCATTER, BK_KIND_ROOT, "the root's send buffer (bytes/N per rank)"},
    {"gather", ZMPI_COLL_GATHER, BK_KIND_MOVE, "the root's receive buffer (bytes/N per rank)"},
    {"allgather", ZMPI_COLL_ALLGATHER, BK_KIND_MOVE, "each rank's receive buffer (bytes/N per rank)"},
    {"alltoall", ZMPI_COLL_ALLTOALL, BK_KIND_MOVE, "each rank's send buffer (bytes/N per peer)"},
    {"reduce_scatter", ZMPI_COLL_REDUCE_SCATTER, BK_KIND_RED, "each rank's input vector"},
    {"allreduce", ZMPI_COLL_ALLREDUCE, BK_KIND_RED, "the vector"},
    {"reduce", ZMPI_COLL_REDUCE, BK_KIND_RED, "the vector"},
};

/* ---- options and state ---- */

typedef struct bk_opts {
    int coll[BK_NCOLL];  /* selected collectives */
    size_t min_bytes, max_bytes;
    int single;          /* --bytes given: only min_bytes */
    int dbl;             /* --dtype f64 */
    zmpi_eb_mode mode;   /* ZMPI_EB_NONE: from the environment */
    double eb;
    int scope;           /* -1: from the environment */
    int codec;           /* -1: from the environment */
    const char *algos;   /* NULL or "all": every algorithm */
    int repeat;          /* 0: automatic */
    double min_time;     /* more repetitions until the timed calls add up to this (s) */
    int warmup;
    const char *file;
    const char *csv;
    int threads;         /* -1: from the environment */
} bk_opts;

typedef struct bench {
    bk_opts o;
    int rank, size;
    MPI_Comm ctl;        /* bookkeeping traffic (timing, statistics, checks) */
    ZMPI_Config cfg;     /* base configuration of every zmpi communicator */
    MPI_Datatype type;
    zmpi_dtype dt;
    size_t es;
    char path[4096];     /* data file */
    int file_dbl;        /* the data file holds doubles */
    FILE *out;           /* rank 0: CSV destination */
    int violated;        /* some row had violations */
} bench;

/* One (collective, size) case: buffers and counts of this rank. */
typedef struct bk_case {
    bk_coll coll;
    size_t bytes;        /* requested bytes per rank */
    int n;               /* elements per rank (see bytes_means) */
    int blk;             /* alltoall: elements per peer */
    int *counts;         /* reduce_scatter: recvcounts */
    void *in, *out, *ref;
    size_t in_n, out_n;  /* elements of in / of out and ref at this rank */
    int repeat;          /* at least; min_time may add more, up to cap */
    int cap;
    double *times;       /* cap entries */
    double bound;        /* absolute bound that applies at this rank; < 0: none */
    double eb_ref;       /* the user's bound in absolute terms (for max_err_over_eb) */
    int check;           /* violations are counted */
} bk_case;

typedef struct bk_row {
    double time, ratio, compressed, max_abs, over;
    unsigned long long viol;
    int have_over, have_viol;
} bk_row;

/* ---- small helpers ---- */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int bk_fail(const bench *b, int code, const char *fmt, ...)
{
    if (b->rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "zmpi-bench: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
    return code;
}

/* Parses "4096", "1K", "64KiB", "256M", "1G" (binary units). 0 on error. */
static size_t bk_parse_bytes(const char *s)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || !(v > 0) || !isfinite(v))
        return 0;
    double mul = 1;
    switch (*end) {
    case 'k': case 'K': mul = 1024.0; end++; break;
    case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
    case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
    }
    if (mul > 1 && *end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return 0;
    v *= mul;
    if (v >= 9.0e15)
        return 0;
    return (size_t)v;
}

static int bk_parse_int(const char *s, int lo, int *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > INT_MAX)
        return -1;
    *out = (int)v;
    return 0;
}

static int bk_parse_pos_double(const char *s, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v > 0) || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

static void bk_usage(const bench *b, FILE *f)
{
    if (b->rank != 0)
        return;
    fprintf(f,
            "usage: mpiexec -n N zmpi-bench --coll C (--rel X | --abs X) [options]\n"
            "  --coll C          p2p, collectives below (comma-separated), or all\n"
            "  --min-bytes B     smallest size (default 1K), then powers of 2\n"
            "  --max-bytes B     largest size (default 256M)\n"
            "  --bytes B         one size only\n"
            "  --dtype f32|f64   element type (default f32)\n"
            "  --rel X | --abs X error bound (value-range relative or absolute);\n"
            "                    default from ZMPI_EB / ZMPI_EB_MODE\n"
            "  --scope S         result (default) or message\n"
            "  --codec NAME      zmpi codec (default fzl or ZMPI_CODEC)\n"
            "  --algos LIST      all (default) or algorithm names, comma-separated\n"
            "  --repeat R        timed repetitions (default 11 up to 1 MiB, 5 above)\n"
            "  --min-time T      more repetitions (at most " BK_STR(BK_MAX_REPEAT) " in all) until the timed\n"
            "                    calls add up to T seconds: short calls on a noisy host need more\n"
            "  --warmup W        untimed calls first (default 2)\n"
            "  --file RAW        data: raw little-endian floats (.f64: doubles), tiled\n"
            "                    (default " BK_DEFAULT_FIELD " from ZMPI_DATA or ../shared/data)\n"
            "  --csv OUT         write the CSV there instead of stdout\n"
            "  --threads T       compression threads per rank (default 1 or ZMPI_THREADS)\n"
            "Bytes are per rank:\n");
    for (int c = 0; c < BK_NCOLL; c++) {
        fprintf(f, "  %-15s %s", bk_colls[c].name, bk_colls[c].bytes_means);
        if (bk_colls[c].zcoll >= 0) {
            const char *names[BK_MAX_ALGOS];
            int na = ZMPI_Coll_algorithms((ZMPI_Coll)bk_colls[c].zcoll, BK_MAX_ALGOS, NULL, names, NULL);
            fprintf(f, "; algorithms:");
            for (int i = 0; i < na && i < BK_MAX_ALGOS; i++)
                fprintf(f, " %s", names[i]);
        }
        fputc('\n', f);
    }
    fprintf(f, "Other settings (ZMPI_MIN_BYTES, ZMPI_CHUNK, ...) come from the environment.\n");
}

/* Parses the command line into b->o. Returns 0, 1 for --help, or 2. */
static int bk_parse_args(bench *b, int argc, char **argv)
{
    bk_opts *o = &b->o;
    memset(o, 0, sizeof *o);
    o->min_bytes = 1024;
    o->max_bytes = (size_t)256 << 20;
    o->mode = ZMPI_EB_NONE;
    o->scope = -1;
    o->codec = -1;
    o->warmup = 2;
    o->threads = -1;
    int have_coll = 0, have_range = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            bk_usage(b, stdout);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0)
            return bk_fail(b, 2, "unexpected argument '%s' (see --help)", a);
        if (i + 1 >= argc)
            return bk_fail(b, 2, "option %s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--coll")) {
            /* a comma-separated list of names, or all */
            for (const char *p = v; *p;) {
                const char *e = strchr(p, ',');
                size_t l = e ? (size_t)(e - p) : strlen(p);
                int found = 0;
                for (int c = 0; c < BK_NCOLL; c++) {
                    const char *nm = bk_colls[c].name;
                    if ((l == 3 && !strncmp(p, "all", 3)) || (strlen(nm) == l && !strncmp(p, nm, l))) {
                        o->coll[c] = 1;
                        found = 1;
                    }
                }
                if (!found)
                    return bk_fail(b, 2, "unknown collective '%.*s' (p2p, bcast, scatter, gather, allgather, "
                                         "alltoall, reduce_scatter, allreduce, reduce, all)", (int)l, p);
                p += l + (e ? 1 : 0);
            }
            have_coll = 1;
        } else if (!strcmp(a, "--min-bytes") || !strcmp(a, "--max-bytes") || !strcmp(a, "--bytes")) {
            size_t s = bk_parse_bytes(v);
            if (!s)
                return bk_fail(b, 2, "bad size '%s' for %s (e.g. 4096, 64K, 16M)", v, a);
            if (!strcmp(a, "--bytes")) {
                o->min_bytes = o->max_bytes = s;
                o->single = 1;
            } else {
                if (a[2] == 'm' && a[3] == 'i')
                    o->min_bytes = s;
                else
                    o->max_bytes = s;
                have_range = 1;
            }
        } else if (!strcmp(a, "--dtype")) {
            if (!strcmp(v, "f32") || !strcmp(v, "float"))
                o->dbl = 0;
            else if (!strcmp(v, "f64") || !strcmp(v, "double"))
                o->dbl = 1;
            else
                return bk_fail(b, 2, "unknown dtype '%s' (f32 or f64)", v);
        } else if (!strcmp(a, "--rel") || !strcmp(a, "--abs")) {
            if (o->mode != ZMPI_EB_NONE)
                return bk_fail(b, 2, "give one bound: --rel or --abs, not both");
            if (bk_parse_pos_double(v, &o->eb))
                return bk_fail(b, 2, "bad bound '%s' for %s (a finite number > 0)", v, a);
            o->mode = a[2] == 'r' ? ZMPI_EB_REL : ZMPI_EB_ABS;
        } else if (!strcmp(a, "--scope")) {
            if (!strcmp(v, "result"))
                o->scope = ZMPI_SCOPE_RESULT;
            else if (!strcmp(v, "message"))
                o->scope = ZMPI_SCOPE_MESSAGE;
            else
                return bk_fail(b, 2, "unknown scope '%s' (result or message)", v);
        } else if (!strcmp(a, "--codec")) {
            int c = zmpi_codec_from_name(v);
            if (c < 0)
                return bk_fail(b, 2, "unknown codec '%s' (see `zmpi codec list`)", v);
            o->codec = c;
        } else if (!strcmp(a, "--algos")) {
            if (!*v)
                return bk_fail(b, 2, "empty --algos");
            o->algos = v;
        } else if (!strcmp(a, "--repeat")) {
            if (bk_parse_int(v, 1, &o->repeat))
                return bk_fail(b, 2, "bad --repeat '%s' (an integer >= 1)", v);
        } else if (!strcmp(a, "--min-time")) {
            char *end = NULL;
            o->min_time = strtod(v, &end);
            if (!end || *end || !(o->min_time >= 0) || o->min_time > 1e6)
                return bk_fail(b, 2, "bad --min-time '%s' (seconds, >= 0)", v);
        } else if (!strcmp(a, "--warmup")) {
            if (bk_parse_int(v, 0, &o->warmup))
                return bk_fail(b, 2, "bad --warmup '%s' (an integer >= 0)", v);
        } else if (!strcmp(a, "--threads")) {
            if (bk_parse_int(v, 0, &o->threads))
                return bk_fail(b, 2, "bad --threads '%s' (an integer >= 0)", v);
        } else if (!strcmp(a, "--file")) {
            o->file = v;
        } else if (!strcmp(a, "--csv")) {
            o->csv = v;
        } else {
            return bk_fail(b, 2, "unknown option '%s' (see --help)", a);
        }
    }
    if (!have_coll)
        return bk_fail(b, 2, "missing --coll (p2p, a collective, or all; see --help)");
    if (o->single && have_range)
        return bk_fail(b, 2, "--bytes cannot be combined with --min-bytes / --max-bytes");
    if (o->min_bytes > o->max_bytes)
        return bk_fail(b, 2, "--min-bytes is larger than --max-bytes");
    return 0;
}

/* Sets b->cfg from the environment and the options. Returns 0 or 2. */
static int bk_config(bench *b)
{
    const char *bad = NULL;
    if (ZMPI_Config_from_env(&b->cfg, &bad) != MPI_SUCCESS)
        return bk_fail(b, 2, "malformed environment variable %s", bad ? bad : "?");
    const bk_opts *o = &b->o;
    if (o->codec >= 0)
        b->cfg.codec = (zmpi_codec)o->codec;
    if (o->mode != ZMPI_EB_NONE) {
        b->cfg.eb_mode = o->mode;
        b->cfg.eb = o->eb;
    }
    if (o->scope >= 0)
        b->cfg.scope = (ZMPI_Scope)o->scope;
    if (o->threads >= 0)
        b->cfg.threads = o->threads;
    for (int c = 0; c < ZMPI_COLL_COUNT; c++)
        b->cfg.algorithm[c] = ZMPI_ALGO_DEFAULT;
    int kind = zmpi_codec_kind(b->cfg.codec);
    if (kind == ZMPI_KIND_BOUNDED && b->cfg.eb_mode == ZMPI_EB_NONE)
        return bk_fail(b, 2, "codec %s needs an error bound: --rel X or --abs X",
                       zmpi_codec_name(b->cfg.codec));
    if (kind != ZMPI_KIND_BOUNDED)
        b->cfg.eb_mode = ZMPI_EB_NONE;
    if (b->o.dbl == 0 && (b->cfg.codec == ZMPI_CODEC_DP2SP || b->cfg.codec == ZMPI_CODEC_DP2SP_INTER))
        return bk_fail(b, 2, "codec %s needs --dtype f64", zmpi_codec_name(b->cfg.codec));
    /* validate once on a scratch communicator, so a bad setting is reported here */
    MPI_Comm probe;
    MPI_Comm_dup(MPI_COMM_WORLD, &probe);
    int rc = ZMPI_Comm_set_config(probe, &b->cfg);
    MPI_Comm_free(&probe);
    if (rc != MPI_SUCCESS)
        return bk_fail(b, 2, "zmpi rejected the configuration (codec %s with this bound)",
                       zmpi_codec_name(b->cfg.codec));
    return 0;
}

/* ---- data ---- */

static int bk_is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int bk_is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Looks for DIR/shared/data/<field> in the ancestors of the executable. */
static int bk_find_near(char *out, size_t cap, const char *exe)
{
    char dir[4096];
    if (!exe || strlen(exe) >= sizeof dir)
        return 0;
    strcpy(dir, exe);
    for (int up = 0; up < 8; up++) {
        char *slash = strrchr(dir, '/');
        if (!slash)
            return 0;
        *slash = '\0';
        int w = snprintf(out, cap, "%s/shared/data/%s", dir[0] ? dir : "", BK_DEFAULT_FIELD);
        if (w > 0 && (size_t)w < cap && bk_is_file(out))
            return 1;
        if (!dir[0])
            return 0;
    }
    return 0;
}

/* Chooses the data file: --file, ZMPI_DATA (a directory or a file), next to
 * the executable, the source tree. Returns 0 or 2. */
static int bk_find_data(bench *b, const char *argv0)
{
    char *p = b->path;
    size_t cap = sizeof b->path;
    p[0] = '\0';
    if (b->o.file) {
        if (strlen(b->o.file) >= cap || !bk_is_file(b->o.file))
            return bk_fail(b, 2, "cannot read data file '%s'", b->o.file);
        strcpy(p, b->o.file);
    } else {
        const char *env = getenv("ZMPI_DATA");
        int ok = 0;
        if (env && *env) {
            if (bk_is_dir(env)) {
                int w = snprintf(p, cap, "%s/%s", env, BK_DEFAULT_FIELD);
                ok = w > 0 && (size_t)w < cap && bk_is_file(p);
            } else if (bk_is_file(env) && strlen(env) < cap) {
                strcpy(p, env);
                ok = 1;
            }
            if (!ok)
                return bk_fail(b, 2, "ZMPI_DATA=%s: no %s there", env, BK_DEFAULT_FIELD);
        }
        if (!ok) {
            char exe[4096];
            ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
            if (k > 0) {
                exe[k] = '\0';
                ok = bk_find_near(p, cap, exe);
            }
        }
        if (!ok && argv0 && strchr(argv0, '/')) {
            char exe[4096];
            if (realpath(argv0, exe))
                ok = bk_find_near(p, cap, exe);
        }
#ifdef ZMPI_BENCH_DATA_DIR
        if (!ok) {
            int w = snprintf(p, cap, "%s/%s", ZMPI_BENCH_DATA_DIR, BK_DEFAULT_FIELD);
            ok = w > 0 && (size_t)w < cap && bk_is_file(p);
        }
#endif
        if (!ok)
            return bk_fail(b, 2, "no data: set ZMPI_DATA to the directory of %s, or use --file RAW",
                           BK_DEFAULT_FIELD);
    }
    size_t len = strlen(p);
    b->file_dbl = len > 4 && !strcmp(p + len - 4, ".f64");
    return 0;
}

/* Fills count elements of the benchmark's dtype from the data file, tiled,
 * starting at a per-rank offset (`seed` makes different buffers of one rank
 * differ). Reads only the elements it needs. Returns 0, or -1 on a read or
 * memory error. */
static int bk_fill(const bench *b, void *buf, size_t count, size_t seed)
{
    if (count == 0)
        return 0;
    FILE *f = fopen(b->path, "rb");
    if (!f)
        return -1;
    size_t fes = b->file_dbl ? 8 : 4;
    int rc = -1;
    void *win = NULL;
    if (fseek(f, 0, SEEK_END) != 0)
        goto out;
    long sz = ftell(f);
    if (sz < (long)fes)
        goto out;
    size_t m = (size_t)sz / fes; /* elements in the file */
    size_t start = (seed * (m / 7 + 7919)) % m;
    size_t wn = count < m ? count : m; /* window of the file this buffer tiles */
    win = malloc(wn * fes);
    if (!win)
        goto out;
    /* read wn elements from `start`, wrapping at the end of the file */
    size_t got = 0;
    while (got < wn) {
        size_t pos = (start + got) % m;
        size_t chunk = m - pos < wn - got ? m - pos : wn - got;
        if (fseek(f, (long)(pos * fes), SEEK_SET) != 0 ||
            fread((char *)win + got * fes, fes, chunk, f) != chunk)
            goto out;
        got += chunk;
    }
    for (size_t i = 0; i < count; i++) {
        size_t j = i % wn;
        double v = b->file_dbl ? ((const double *)win)[j] : (double)((const float *)win)[j];
        if (b->dt == ZMPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = v;
    }
    rc = 0;
out:
    free(win);
    fclose(f);
    return rc;
}

static double bk_get(const bench *b, const void *p, size_t i)
{
    return b->dt == ZMPI_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* ---- one call of a collective ---- */

/* Runs the case's call once, writing into `out`, with zmpi (z = 1) or plain
 * MPI. Returns an MPI error code. */
static int bk_call(const bench *b, const bk_case *k, int z, MPI_Comm comm, void *out)
{
    MPI_Datatype t = b->type;
    int n = k->n, r = b->rank;
    switch (k->coll) {
    case BK_P2P: {
        int rc = MPI_SUCCESS;
        if (r == 0) {
            rc = z ? ZMPI_Send(k->in, n, t, 1, BK_TAG, comm) : MPI_Send(k->in, n, t, 1, BK_TAG, comm);
            if (rc == MPI_SUCCESS)
                rc = z ? ZMPI_Recv(out, n, t, 1, BK_TAG, comm, MPI_STATUS_IGNORE)
                       : MPI_Recv(out, n, t, 1, BK_TAG, comm, MPI_STATUS_IGNORE);
        } else if (r == 1) {
            rc = z ? ZMPI_Recv(out, n, t, 0, BK_TAG, comm, MPI_STATUS_IGNORE)
                   : MPI_Recv(out, n, t, 0, BK_TAG, comm, MPI_STATUS_IGNORE);
            if (rc == MPI_SUCCESS)
                rc = z ? ZMPI_Send(k->in, n, t, 0, BK_TAG, comm) : MPI_Send(k->in, n, t, 0, BK_TAG, comm);
        }
        return rc;
    }
    case BK_BCAST:
        return z ? ZMPI_Bcast(out, n, t, BK_ROOT, comm) : MPI_Bcast(out, n, t, BK_ROOT, comm);
    case BK_SCATTER:
        return z ? ZMPI_Scatter(k->in, n, t, out, n, t, BK_ROOT, comm)
                 : MPI_Scatter(k->in, n, t, out, n, t, BK_ROOT, comm);
    case BK_GATHER:
        return z ? ZMPI_Gather(k->in, n, t, out, n, t, BK_ROOT, comm)
                 : MPI_Gather(k->in, n, t, out, n, t, BK_ROOT, comm);
    case BK_ALLGATHER:
        return z ? ZMPI_Allgather(k->in, n, t, out, n, t, comm) : MPI_Allgather(k->in, n, t, out, n, t, comm);
    case BK_ALLTOALL:
        return z ? ZMPI_Alltoall(k->in, k->blk, t, out, k->blk, t, comm)
                 : MPI_Alltoall(k->in, k->blk, t, out, k->blk, t, comm);
    case BK_REDUCE_SCATTER:
        return z ? ZMPI_Reduce_scatter(k->in, out, k->counts, t, MPI_SUM, comm)
                 : MPI_Reduce_scatter(k->in, out, k->counts, t, MPI_SUM, comm);
    case BK_ALLREDUCE:
        return z ? ZMPI_Allreduce(k->in, out, n, t, MPI_SUM, comm)
                 : MPI_Allreduce(k->in, out, n, t, MPI_SUM, comm);
    case BK_REDUCE:
        return z ? ZMPI_Reduce(k->in, out, n, t, MPI_SUM, BK_ROOT, comm)
                 : MPI_Reduce(k->in, out, n, t, MPI_SUM, BK_ROOT, comm);
    case BK_NCOLL:
        break;
    }
    return MPI_ERR_ARG;
}

/* The bcast root's buffer is both input and output: reload it before a call. */
static void bk_prepare(const bench *b, const bk_case *k, void *out)
{
    if (k->coll == BK_BCAST && b->rank == BK_ROOT)
        memcpy(out, k->in, k->in_n * b->es);
}

static int bk_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, c = *(const double *)y;
    return (a > c) - (a < c);
}

/* Agrees on an error: returns the error class of the first failing rank (or
 * MPI_SUCCESS) and that rank in *who. Collective over ctl. */
static int bk_agree(const bench *b, int rc, int *who)
{
    int mine[2] = {0, 0}, all[2];
    if (rc != MPI_SUCCESS) {
        int cls = MPI_ERR_OTHER;
        MPI_Error_class(rc, &cls);
        mine[0] = cls ? cls : MPI_ERR_OTHER;
        mine[1] = b->size - b->rank; /* MAX picks the lowest failing rank */
    }
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, b->ctl);
    if (who)
        *who = all[1] ? b->size - all[1] : -1;
    return all[0];
}

/* Times repetitions of the call and checks one more call against ref (z = 1),
 * or produces ref (z = 0). Fills *row. Returns an MPI error class. */
static int bk_measure(bench *b, bk_case *k, int z, MPI_Comm comm, bk_row *row, int *who)
{
    int rc = MPI_SUCCESS;
    memset(row, 0, sizeof *row);
    row->ratio = 1;
    for (int w = 0; w < b->o.warmup && rc == MPI_SUCCESS; w++) {
        bk_prepare(b, k, k->out);
        rc = bk_call(b, k, z, comm, k->out);
    }
    rc = bk_agree(b, rc, who);
    if (rc)
        return rc;
    ZMPI_Stats s0, s1;
    memset(&s0, 0, sizeof s0);
    memset(&s1, 0, sizeof s1);
    if (z)
        ZMPI_Comm_get_stats(comm, &s0);
    /* every rank sees the same times (the slowest rank's): the same count */
    int reps = 0;
    double sum = 0;
    for (int i = 0; i < k->repeat || (sum < b->o.min_time && i < k->cap); i++) {
        bk_prepare(b, k, k->out);
        MPI_Barrier(b->ctl);
        double t0 = MPI_Wtime();
        int r = bk_call(b, k, z, comm, k->out);
        double t = MPI_Wtime() - t0;
        if (k->coll == BK_P2P)
            t = b->rank < 2 ? t / 2 : 0.0;
        if (r != MPI_SUCCESS && rc == MPI_SUCCESS)
            rc = r;
        MPI_Allreduce(&t, &k->times[i], 1, MPI_DOUBLE, MPI_MAX, b->ctl);
        sum += k->times[i];
        reps = i + 1;
    }
    rc = bk_agree(b, rc, who);
    if (rc)
        return rc;
    if (z)
        ZMPI_Comm_get_stats(comm, &s1);
    qsort(k->times, (size_t)reps, sizeof(double), bk_cmp_double);
    row->time = reps % 2 ? k->times[reps / 2] : 0.5 * (k->times[reps / 2 - 1] + k->times[reps / 2]);

    /* one untimed call on a poisoned buffer (all-ones bytes: NaN) for the check */
    void *dst = z ? k->out : k->ref;
    memset(dst, 0xFF, k->out_n * b->es);
    bk_prepare(b, k, dst);
    rc = bk_agree(b, bk_call(b, k, z, comm, dst), who);
    if (rc || !z)
        return rc;

    /* ratio and compressed share, summed over ranks */
    double loc[4] = {(double)(s1.bytes_raw - s0.bytes_raw), (double)(s1.bytes_sent - s0.bytes_sent),
                     (double)(s1.compressed - s0.compressed), (double)(s1.calls - s0.calls)};
    double tot[4];
    MPI_Allreduce(loc, tot, 4, MPI_DOUBLE, MPI_SUM, b->ctl);
    row->ratio = tot[1] > 0 ? tot[0] / tot[1] : 1.0;
    row->compressed = tot[3] > 0 ? tot[2] / tot[3] : 0.0;

    /* every element against plain MPI's result */
    double worst = 0;
    unsigned long long bad = 0;
    for (size_t i = 0; i < k->out_n; i++) {
        double g = bk_get(b, k->out, i), r = bk_get(b, k->ref, i);
        long double d; /* exact difference of two floats or doubles */
        if (!isfinite(r)) {
            d = memcmp((char *)k->out + i * b->es, (char *)k->ref + i * b->es, b->es) ? INFINITY : 0.0L;
        } else {
            d = fabsl((long double)g - (long double)r);
            if (d != d)
                d = INFINITY; /* a NaN result counts as infinitely wrong */
        }
        if (d > (long double)worst)
            worst = (double)d;
        if (k->bound >= 0 && !(d <= (long double)k->bound))
            bad++;
    }
    double over = 0;
    if (k->eb_ref > 0)
        over = worst / k->eb_ref;
    else if (k->eb_ref == 0)
        over = worst > 0 ? INFINITY : 0.0;
    double gl[2] = {worst, over}, gg[2];
    MPI_Allreduce(gl, gg, 2, MPI_DOUBLE, MPI_MAX, b->ctl);
    MPI_Allreduce(&bad, &row->viol, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, b->ctl);
    row->max_abs = gg[0];
    row->over = gg[1];
    row->have_over = k->eb_ref >= 0;
    row->have_viol = k->check;
    return MPI_SUCCESS;
}

/* ---- cases ---- */

static void bk_case_free(bk_case *k)
{
    free(k->in);
    free(k->out);
    free(k->ref);
    free(k->counts);
    free(k->times);
    memset(k, 0, sizeof *k);
}

/* Finite (min, max) of count elements; (+inf, -inf) if none. */
static void bk_range(const bench *b, const void *p, size_t count, double *lo, double *hi)
{
    double l = INFINITY, h = -INFINITY;
    for (size_t i = 0; i < count; i++) {
        double v = bk_get(b, p, i);
        if (isfinite(v)) {
            l = v < l ? v : l;
            h = v > h ? v : h;
        }
    }
    *lo = l;
    *hi = h;
}

/* Allocates and fills the buffers of (coll, bytes) and derives the bound.
 * Returns 0, or 1 if this rank ran out of memory or could not read data
 * (not yet agreed with the other ranks). */
static int bk_case_init(bench *b, bk_case *k, bk_coll coll, size_t bytes)
{
    memset(k, 0, sizeof *k);
    k->coll = coll;
    k->bytes = bytes;
    size_t n = bytes / b->es;
    size_t N = (size_t)b->size;
    int root = b->rank == BK_ROOT;
    k->n = (int)n;
    k->repeat = b->o.repeat ? b->o.repeat : (bytes <= ((size_t)1 << 20) ? 11 : 5);
    switch (coll) {
    case BK_P2P:
        k->in_n = b->rank < 2 ? n : 0;
        k->out_n = k->in_n;
        break;
    case BK_BCAST:
        k->in_n = root ? n : 0;
        k->out_n = n;
        break;
    case BK_SCATTER: /* bytes: the whole vector, as MPI benchmarks count it */
        k->n = (int)(n / N ? n / N : 1);
        k->in_n = root ? N * (size_t)k->n : 0;
        k->out_n = (size_t)k->n;
        break;
    case BK_GATHER:
        k->n = (int)(n / N ? n / N : 1);
        k->in_n = (size_t)k->n;
        k->out_n = root ? N * (size_t)k->n : 0;
        break;
    case BK_ALLGATHER:
        k->n = (int)(n / N ? n / N : 1);
        k->in_n = (size_t)k->n;
        k->out_n = N * (size_t)k->n;
        break;
    case BK_ALLTOALL:
        k->blk = (int)(n / N ? n / N : 1);
        k->in_n = k->out_n = N * (size_t)k->blk;
        break;
    case BK_REDUCE_SCATTER:
        k->in_n = n;
        k->counts = malloc(N * sizeof(int));
        if (!k->counts)
            return 1;
        for (size_t i = 0; i < N; i++)
            k->counts[i] = (int)(n / N + (i < n % N));
        k->out_n = (size_t)k->counts[b->rank];
        break;
    case BK_ALLREDUCE:
        k->in_n = k->out_n = n;
        break;
    case BK_REDUCE:
        k->in_n = n;
        k->out_n = root ? n : 0;
        break;
    case BK_NCOLL:
        return 1;
    }
    k->in = malloc(k->in_n * b->es + 1);
    k->out = malloc(k->out_n * b->es + 1);
    k->ref = malloc(k->out_n * b->es + 1);
    k->cap = k->repeat > BK_MAX_REPEAT ? k->repeat : BK_MAX_REPEAT;
    k->times = malloc((size_t)k->cap * sizeof(double));
    if (!k->in || !k->out || !k->ref || !k->times)
        return 1;
    if (bk_fill(b, k->in, k->in_n, (size_t)b->rank + 1))
        return 1;
    return 0;
}

/* The bound that applies to this rank's result (collective: REL needs the
 * range of all inputs). Call after the reference result is in k->ref. */
static void bk_case_bound(const bench *b, bk_case *k)
{
    const ZMPI_Config *c = &b->cfg;
    bk_kind kind = bk_colls[k->coll].kind;
    int fixed = zmpi_codec_kind(c->codec) == ZMPI_KIND_FIXED;
    double range = 0, amax = 0;
    if (c->eb_mode == ZMPI_EB_REL || (c->eb_mode == ZMPI_EB_NONE && kind == BK_KIND_RED)) {
        double lo, hi;
        if (kind == BK_KIND_P2P) {
            bk_range(b, k->ref, k->out_n, &lo, &hi); /* the message this rank received */
        } else {
            bk_range(b, k->in, k->in_n, &lo, &hi);
            double mine[2] = {-lo, hi}, all[2];
            MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_MAX, b->ctl);
            lo = -all[0];
            hi = all[1];
        }
        range = hi > lo ? hi - lo : 0.0;
        amax = hi > lo ? fmax(fabs(lo), fabs(hi)) : 0.0;
    }
    if (fixed) {
        k->eb_ref = k->bound = -1; /* no bound to check */
        k->check = 0;
        return;
    }
    if (c->eb_mode == ZMPI_EB_NONE && kind == BK_KIND_RED) {
        /* lossless reduction: the sum may be taken in another order than
         * MPI's; two recursive sums of N terms of magnitude <= amax differ by
         * at most 2 (N-1) u N amax (u: unit roundoff) */
        double u = b->dt == ZMPI_FLOAT ? 0x1p-24 : 0x1p-53, N = (double)b->size;
        k->eb_ref = 2.0 * (N - 1) * u * N * amax * (1 + 1e-6);
    } else if (c->eb_mode == ZMPI_EB_NONE)
        k->eb_ref = 0; /* lossless data movement: bit-identical */
    else
        k->eb_ref = c->eb_mode == ZMPI_EB_ABS ? c->eb : c->eb * range;
    k->check = !(c->scope == ZMPI_SCOPE_MESSAGE && kind == BK_KIND_RED && c->eb_mode != ZMPI_EB_NONE);
    k->bound = k->check ? k->eb_ref : -1;
}

/* ---- output ---- */

static void bk_header(const bench *b)
{
    if (b->rank == 0) {
        fprintf(b->out, "coll,ranks,bytes,dtype,codec,mode,eb,scope,algo,time_s,speedup,ratio,compressed,"
                        "max_abs_err,max_err_over_eb,violations\n");
        fflush(b->out);
    }
}

static void bk_print(const bench *b, const bk_case *k, const char *algo, const bk_row *row, double t_mpi)
{
    if (b->rank != 0)
        return;
    const ZMPI_Config *c = &b->cfg;
    const char *mode = c->eb_mode == ZMPI_EB_ABS ? "abs" : c->eb_mode == ZMPI_EB_REL ? "rel" : "none";
    fprintf(b->out, "%s,%d,%zu,%s,%s,%s,%.6g,%s,%s,%.6e,%.4f,%.4f,%.3f,%.6e,", bk_colls[k->coll].name,
            b->size, k->bytes, b->dt == ZMPI_FLOAT ? "f32" : "f64", zmpi_codec_name(c->codec), mode,
            c->eb_mode == ZMPI_EB_NONE ? 0.0 : c->eb, c->scope == ZMPI_SCOPE_MESSAGE ? "message" : "result",
            algo, row->time, row->time > 0 ? t_mpi / row->time : 0.0, row->ratio, row->compressed,
            row->max_abs);
    if (row->have_over)
        fprintf(b->out, "%.6f", row->over);
    fputc(',', b->out);
    if (row->have_viol)
        fprintf(b->out, "%llu", row->viol);
    fputc('\n', b->out);
    fflush(b->out);
}

/* ---- algorithms of a collective ---- */

typedef struct bk_algos {
    int n;
    int ids[BK_MAX_ALGOS];
    const char *names[BK_MAX_ALGOS];
} bk_algos;

/* Is `name` (length len) in the comma-separated list? */
static int bk_listed(const char *list, const char *name)
{
    size_t len = strlen(name);
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == len && !strncmp(p, name, len))
            return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}

/* The algorithms of coll selected by --algos (p2p: one entry "zmpi"). */
static void bk_select(const bench *b, bk_coll coll, bk_algos *a)
{
    memset(a, 0, sizeof *a);
    int zc = bk_colls[coll].zcoll;
    int all = !b->o.algos || !strcmp(b->o.algos, "all");
    if (zc < 0) {
        a->n = 1;
        a->ids[0] = ZMPI_ALGO_DEFAULT;
        a->names[0] = "zmpi";
        return;
    }
    if (!all && bk_listed(b->o.algos, "default")) {
        a->ids[a->n] = ZMPI_ALGO_DEFAULT;
        a->names[a->n++] = "default";
    }
    int ids[BK_MAX_ALGOS];
    const char *names[BK_MAX_ALGOS];
    int na = ZMPI_Coll_algorithms((ZMPI_Coll)zc, BK_MAX_ALGOS, ids, names, NULL);
    for (int i = 0; i < na && i < BK_MAX_ALGOS && a->n < BK_MAX_ALGOS; i++) {
        if (all || bk_listed(b->o.algos, names[i])) {
            a->ids[a->n] = ids[i];
            a->names[a->n++] = names[i];
        }
    }
}

/* Every name of --algos must name an algorithm of some selected collective. */
static int bk_check_algos(const bench *b)
{
    const char *list = b->o.algos;
    if (!list || !strcmp(list, "all"))
        return 0;
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        char name[128];
        if (l == 0 || l >= sizeof name)
            return bk_fail(b, 2, "bad --algos list '%s'", list);
        memcpy(name, p, l);
        name[l] = '\0';
        int known = !strcmp(name, "default") || !strcmp(name, "mpi");
        for (int c = 0; c < BK_NCOLL && !known; c++) {
            if (!b->o.coll[c])
                continue;
            if (bk_colls[c].zcoll < 0)
                known = !strcmp(name, "zmpi");
            else
                known = ZMPI_Coll_algorithm_from_name((ZMPI_Coll)bk_colls[c].zcoll, name) > 0;
        }
        if (!known)
            return bk_fail(b, 2, "unknown algorithm '%s' for the selected collectives (see --help)", name);
        p += l + (e ? 1 : 0);
    }
    return 0;
}

/* ---- the sweep ---- */

static int bk_report_error(const bench *b, const bk_case *k, const char *algo, int cls, int who)
{
    if (b->rank == 0) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        msg[0] = '\0';
        MPI_Error_string(cls, msg, &len);
        fprintf(stderr, "zmpi-bench: %s %s at %zu bytes failed on rank %d: %s\n", bk_colls[k->coll].name,
                algo, k->bytes, who, msg);
    }
    return 1;
}

/* Runs one (collective, size): plain MPI then every selected algorithm. */
static int bk_run_case(bench *b, bk_coll coll, size_t bytes, const bk_algos *al, MPI_Comm *comms)
{
    bk_case k;
    int bad = bk_case_init(b, &k, coll, bytes), any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, b->ctl);
    if (any) {
        bk_case_free(&k);
        if (b->rank == 0)
            fprintf(stderr, "zmpi-bench: %s at %zu bytes: out of memory or unreadable data on some rank\n",
                    bk_colls[coll].name, bytes);
        return 1;
    }
    bk_row plain, row;
    int who = -1;
    int rc = bk_measure(b, &k, 0, comms[0], &plain, &who);
    if (rc) {
        bk_report_error(b, &k, "mpi", rc, who);
        bk_case_free(&k);
        return 1;
    }
    bk_case_bound(b, &k);
    plain.ratio = 1;
    plain.have_over = k.eb_ref >= 0;
    plain.have_viol = k.check;
    bk_print(b, &k, "mpi", &plain, plain.time);
    for (int i = 0; i < al->n; i++) {
        rc = bk_measure(b, &k, 1, comms[1 + i], &row, &who);
        if (rc) {
            bk_report_error(b, &k, al->names[i], rc, who);
            bk_case_free(&k);
            return 1;
        }
        if (row.have_viol && row.viol)
            b->violated = 1;
        bk_print(b, &k, al->names[i], &row, plain.time);
    }
    bk_case_free(&k);
    return 0;
}

static int bk_run_coll(bench *b, bk_coll coll)
{
    if (coll == BK_P2P && b->size < 2)
        return 0; /* reported by the caller when p2p was asked for alone */
    bk_algos al;
    bk_select(b, coll, &al);
    /* comms[0]: plain MPI; comms[1 + i]: zmpi with algorithm i pinned */
    MPI_Comm comms[1 + BK_MAX_ALGOS];
    int rc = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[0]);
    for (int i = 0; i < al.n; i++) {
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[1 + i]);
        ZMPI_Config cfg = b->cfg;
        if (bk_colls[coll].zcoll >= 0)
            cfg.algorithm[bk_colls[coll].zcoll] = al.ids[i];
        if (ZMPI_Comm_set_config(comms[1 + i], &cfg) != MPI_SUCCESS && rc == 0)
            rc = bk_fail(b, 1, "zmpi rejected algorithm %s of %s", al.names[i], bk_colls[coll].name);
    }
    for (size_t s = b->o.min_bytes; rc == 0 && s <= b->o.max_bytes;) {
        if (s / b->es > (size_t)INT_MAX) {
            rc = bk_fail(b, 2, "sizes above 2^31-1 elements are not supported");
            break;
        }
        if (s >= b->es)
            rc = bk_run_case(b, coll, s, &al, comms);
        if (b->o.single)
            break;
        /* next power of two */
        size_t p = 1;
        while (p <= s && p < ((size_t)1 << 62))
            p <<= 1;
        s = p;
    }
    for (int i = 0; i <= al.n; i++)
        MPI_Comm_free(&comms[i]);
    return rc;
}

int main(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &b.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &b.size);
    MPI_Comm_dup(MPI_COMM_WORLD, &b.ctl);
    b.out = stdout;

    int rc = bk_parse_args(&b, argc, argv);
    if (rc == 1)
        rc = -1; /* --help: exit 0 */
    if (rc == 0)
        rc = bk_config(&b);
    if (rc == 0)
        rc = bk_check_algos(&b);
    if (rc == 0) {
        b.type = b.o.dbl ? MPI_DOUBLE : MPI_FLOAT;
        b.dt = b.o.dbl ? ZMPI_DOUBLE : ZMPI_FLOAT;
        b.es = zmpi_dtype_size(b.dt);
        if (b.o.max_bytes < b.es)
            rc = bk_fail(&b, 2, "sizes must be at least one element (%d bytes)", b.o.dbl ? 8 : 4);
    }
    if (rc == 0)
        rc = bk_find_data(&b, argc > 0 ? argv[0] : NULL);
    if (rc == 0 && b.size < 2 && b.o.coll[BK_P2P]) {
        int others = 0;
        for (int c = 1; c < BK_NCOLL; c++)
            others |= b.o.coll[c];
        if (!others)
            rc = bk_fail(&b, 2, "p2p needs at least 2 ranks");
    }
    if (rc == 0 && b.rank == 0 && b.o.csv) {
        b.out = fopen(b.o.csv, "w");
        if (!b.out) {
            b.out = stdout;
            rc = bk_fail(&b, 2, "cannot write '%s'", b.o.csv);
        }
    }
    /* rank 0 decided alone about the CSV file: share its verdict */
    MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);

    if (rc == 0) {
        bk_header(&b);
        for (int c = 0; c < BK_NCOLL && rc == 0; c++)
            if (b.o.coll[c])
                rc = bk_run_coll(&b, (bk_coll)c);
        if (rc == 0 && b.violated) {
            rc = 3;
            if (b.rank == 0)
                fprintf(stderr, "zmpi-bench: some elements exceeded their error bound (see violations)\n");
        }
    }
    if (b.rank == 0 && b.out != stdout)
        fclose(b.out);
    MPI_Comm_free(&b.ctl);
    MPI_Finalize();
    return rc < 0 ? 0 : rc;
}
