/*
 * mpibzip2: a parallel bzip2 on MPI plus threads whose output is
 * byte-identical to bzip2's (see bzblock.h for how).
 *
 *   mpibzip2 [-zdtckfvq] [-1..-9] [-n THREADS] [FILE...]
 *   mpiexec -n R mpibzip2 ...      (rank 0 reads and writes; all ranks compress)
 *
 * Exit codes as bzip2: 0 fine, 1 environment (files, flags, I/O), 2 corrupt
 * compressed input, 3 internal error. Output goes to a temporary name in the
 * target's directory and is renamed into place only when complete.
 */
#define _XOPEN_SOURCE 700 /* realpath, and POSIX 2008 */
#include <bzlib.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bzdecode.h"
#include "bzpar.h"
#include "mpi_work.h"

#define VERSION "0.1.0"

typedef struct opts {
    char mode;      /* 'z' compress, 'd' decompress, 't' test */
    int to_stdout, keep, force, verbose, quiet, level, threads;
    int single;     /* --single-threaded: no threads on any rank (SMPI; forced by MPI_THREAD_SINGLE) */
    int shared;     /* --shared-input: workers read blocks from the input file themselves */
    int queue;      /* --queue=N: blocks in flight on rank 0 (0: bz_compress_opts' default) */
    char **files;
    int nfiles;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
            "mpibzip2 " VERSION ": parallel bzip2 on MPI + threads, output identical to bzip2's\n"
            "usage: [mpiexec -n R] mpibzip2 [flags] [files...]\n"
            "  -z --compress    compress (default)      -d --decompress  decompress\n"
            "  -t --test        test compressed files   -c --stdout      write to standard output\n"
            "  -k --keep        keep input files        -f --force       overwrite existing output\n"
            "  -v --verbose     per-file statistics     -q --quiet       no warnings, no progress bar\n"
            "  -1 .. -9         block size 100k .. 900k (default -9; --fast = -1, --best = -9)\n"
            "  -n N --threads=N compression/decompression threads per rank (default: cores online)\n"
            "  --single-threaded  no threads on any rank: rank 0 reads, hands out blocks and writes,\n"
            "                   every other rank compresses in its main thread (for SMPI; the default\n"
            "                   when MPI provides only MPI_THREAD_SINGLE)\n"
            "  --thread-level=L ask MPI for at most L: multiple (default), serialized, funneled, single\n"
            "  --shared-input   every rank can read the input files at the same path (shared file\n"
            "                   system): rank 0 sends workers block offsets instead of block bytes\n"
            "  --queue=N        blocks in flight on rank 0 when compressing: each holds its compressed\n"
            "                   bits, and up to 1.25 block sizes of input until it is compressed here\n"
            "                   or sent (default: 2 per local compression thread, 8 per remote one,\n"
            "                   + 2); fewer saves memory, may leave compressors waiting\n"
            "  -h --help, -V --version\n"
            "Without files: standard input to standard output. Exit: 0 ok, 1 files/flags/I-O, 2 corrupt\n"
            "input, 3 internal error. Started without an MPI launcher, mpibzip2 does not start MPI\n"
            "(one process, threads only; MPIBZIP2_MPI=1 starts it anyway).\n"
            "Under a launcher give file names, not standard input: MPICH's mpiexec forwards at most\n"
            "64 KiB of it (more, and the job ends with no output). Use `mpiexec -n 2 mpibzip2 -k big`\n"
            "or `mpiexec -n 2 mpibzip2 -c big > big.bz2`.\n");
}

/* The MPI thread level named by s (--thread-level=), or -1. */
static int asked_level(const char *s)
{
    return !strcmp(s, "multiple")     ? MPI_THREAD_MULTIPLE
           : !strcmp(s, "serialized") ? MPI_THREAD_SERIALIZED
           : !strcmp(s, "funneled")   ? MPI_THREAD_FUNNELED
           : !strcmp(s, "single")     ? MPI_THREAD_SINGLE
                                      : -1;
}

/* A one-letter flag (bzip2's, besides -n). Returns 0, 1 (unknown: said if
 * loud), or -1 (help or version printed). */
static int flag(opts *o, char c, int loud)
{
    switch (c) {
    case 'z': o->mode = 'z'; return 0;
    case 'd': o->mode = 'd'; return 0;
    case 't': o->mode = 't'; return 0;
    case 'c': o->to_stdout = 1; return 0;
    case 'k': o->keep = 1; return 0;
    case 'f': o->force = 1; return 0;
    case 'v': o->verbose++; return 0;
    case 'q': o->quiet = 1; return 0;
    case 's': return 0; /* bzip2's "small" decompression mode: accepted, no effect */
    case 'h':
        if (loud)
            usage(stdout);
        return -1;
    case 'V':
        if (loud)
            printf("mpibzip2 " VERSION " (libbz2 %s)\n", BZ2_bzlibVersion());
        return -1;
    default:
        if (c >= '1' && c <= '9') {
            o->level = c - '0';
            return 0;
        }
        if (loud)
            fprintf(stderr, "mpibzip2: unknown option -%c (mpibzip2 --help)\n", c);
        return 1;
    }
}

/* bzip2's long options, as the one-letter flag each stands for. */
static const struct {
    const char *name;
    char flag;
} long_flags[] = {{"compress", 'z'}, {"decompress", 'd'}, {"test", 't'},  {"stdout", 'c'},
                  {"keep", 'k'},     {"force", 'f'},      {"verbose", 'v'}, {"quiet", 'q'},
                  {"fast", '1'},     {"best", '9'},       {"help", 'h'},    {"version", 'V'}};
#define NLONG ((int)(sizeof long_flags / sizeof long_flags[0]))

/* A count from 1 to hi for the option `what` into *to. 0, or 1 (said if loud). */
static int count(int *to, const char *v, long hi, const char *what, int loud)
{
    char *end;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 1 || n > hi) {
        if (loud)
            fprintf(stderr, "mpibzip2: %s needs a count from 1 to %ld, not '%s'\n", what, hi, v);
        return 1;
    }
    *to = (int)n;
    return 0;
}

/* Parses argv into o. Returns 0, or 1 (bad usage, message printed if loud), or -1 (help/version done). */
static int parse(int argc, char **argv, opts *o, int loud)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    memset(o, 0, sizeof *o);
    o->mode = 'z';
    o->level = 9;
    o->threads = cores > 0 && cores < 4096 ? (int)cores : 1;
    o->files = calloc((size_t)argc + 1, sizeof *o->files);
    if (!o->files)
        return 1;
    int only_files = 0;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (only_files || a[0] != '-' || !a[1]) {
            o->files[o->nfiles++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_files = 1;
        } else if (a[1] == '-') {
            const char *l = a + 2;
            int k = 0;
            while (k < NLONG && strcmp(l, long_flags[k].name))
                k++;
            if (k < NLONG) {
                int r = flag(o, long_flags[k].flag, loud);
                if (r)
                    return r;
            } else if (!strcmp(l, "single-threaded")) {
                o->single = 1;
            } else if (!strcmp(l, "shared-input")) {
                o->shared = 1;
            } else if (!strncmp(l, "thread-level=", 13) && asked_level(l + 13) >= 0) {
                /* read before MPI_Init_thread */
            } else if (!strncmp(l, "threads=", 8)) {
                if (count(&o->threads, l + 8, 4096, "-n", loud))
                    return 1;
            } else if (!strncmp(l, "queue=", 6)) {
                if (count(&o->queue, l + 6, 65536, "--queue", loud))
                    return 1;
            } else {
                if (loud)
                    fprintf(stderr, "mpibzip2: unknown option %s (mpibzip2 --help)\n", a);
                return 1;
            }
        } else {
            for (const char *p = a + 1; *p; p++) {
                if (*p == 'n') { /* the rest of this argument, or the next one, is the count */
                    if (count(&o->threads, p[1] ? p + 1 : (i + 1 < argc ? argv[++i] : ""), 4096, "-n", loud))
                        return 1;
                    break;
                }
                int r = flag(o, *p, loud);
                if (r)
                    return r;
            }
        }
    }
    return 0;
}

/* ---- progress bar on a terminal ---- */
typedef struct progress {
    int on;
    const char *name;
    uint64_t total; /* input size, 0 if unknown */
    struct timespec t0, last;
} progress;

static double since(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + 1e-9 * (double)(b->tv_nsec - a->tv_nsec);
}

static void progress_cb(void *arg, uint64_t in, uint64_t out)
{
    progress *p = arg;
    (void)out;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (since(&p->last, &now) < 0.2)
        return;
    p->last = now;
    double dt = since(&p->t0, &now), mbs = dt > 0 ? (double)in / 1e6 / dt : 0;
    if (p->total) {
        double f = (double)in / (double)p->total, eta = f > 0 ? dt * (1 - f) / f : 0;
        fprintf(stderr, "\r  %s: %5.1f%% %9.1f MB %7.1f MB/s ETA %d:%02d ", p->name, 100 * f, (double)in / 1e6, mbs,
                (int)eta / 60, (int)eta % 60);
    } else {
        fprintf(stderr, "\r  %s: %9.1f MB %7.1f MB/s ", p->name, (double)in / 1e6, mbs);
    }
}

static void progress_end(progress *p)
{
    if (p->on)
        fprintf(stderr, "\r%*s\r", 70, "");
}

/* ---- files ---- */
static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a > b && !strcmp(s + a - b, suf);
}

/* bzip2's suffixes and what decompression turns them into. */
static const char *const bz_suffix[] = {".bz2", ".bz", ".tbz2", ".tbz"}, *const bz_plain[] = {"", "", ".tar", ".tar"};

/* Index of in's bzip2 suffix, or -1. */
static int which_suffix(const char *in)
{
    for (int i = 0; i < 4; i++)
        if (has_suffix(in, bz_suffix[i]))
            return i;
    return -1;
}

/* Output name for decompressing `in` (malloc'd), as bzip2 names it. */
static char *decompressed_name(const char *in, int *guessed)
{
    size_t l = strlen(in);
    int i = which_suffix(in);
    char *o = malloc(l + 5);
    if (!o)
        return NULL;
    *guessed = i >= 0;
    if (i >= 0) {
        memcpy(o, in, l - strlen(bz_suffix[i]));
        strcpy(o + l - strlen(bz_suffix[i]), bz_plain[i]);
        return o;
    }
    snprintf(o, l + 5, "%s.out", in);
    return o;
}

typedef struct world {
    MPI_Comm comm;
    int nremote;           /* remote compression channels */
    int nproxy;            /* MPI_THREAD_MULTIPLE: a pump per worker rank, each run by a proxy thread */
    mpibz_pump **proxies;
    mpibz_pump *pump;      /* below MULTIPLE, or --single-threaded: one pump, run by the writing thread */
    int ndchan;            /* decompression (MPI_THREAD_MULTIPLE): the remote channels, a thread each */
    mpibz_chan *dchan;
    void **dchan_args;
} world;

/* --shared-input: the workers read blocks from path (NULL: blocks are sent). */
static void shared_input(const world *w, const char *path)
{
    if (w->pump)
        mpibz_pump_input(w->pump, path);
    for (int k = 0; k < w->nproxy; k++)
        mpibz_pump_input(w->proxies[k], path);
}

/* One file's run (see one): its input, output and what to report. */
typedef struct run {
    const opts *o;
    const world *w;
    const char *name;  /* NULL: standard input */
    const char *shown; /* the name in messages */
    int in_fd, tmp_fd;
    struct stat st;    /* the input's, or zeros */
    FILE *in, *out;
    char *outname, *tmpname;
    char msg[512];
    int rc;            /* the exit code for this file */
    int stop;          /* as bzip2, no further file is processed after this one */
    uint64_t nin, nout;
    progress pg;
} run;

/* How a step of one ended. */
enum {
    STEP_OK = 0, /* go on */
    STEP_DONE,   /* failed, and said so */
    STEP_FAIL,   /* failed: r->msg says why (the output so far is removed) */
};

/* Opens the input file r->name (not one with a bzip2 suffix, when
 * compressing to a file). 0, or 1 when it cannot be used (said so, and
 * closed). */
static int open_input(run *r)
{
    const char *name = r->name;
    if (r->o->mode == 'z' && !r->o->to_stdout && which_suffix(name) >= 0) {
        if (!r->o->quiet)
            fprintf(stderr, "mpibzip2: Input file %s already has a bzip2 suffix: unchanged.\n", name);
        return 1;
    }
    r->in_fd = open(name, O_RDONLY);
    if (r->in_fd < 0) {
        fprintf(stderr, "mpibzip2: Can't open input file %s: %s.\n", name, strerror(errno));
        return 1;
    }
    if (fstat(r->in_fd, &r->st) || !S_ISREG(r->st.st_mode)) {
        fprintf(stderr, "mpibzip2: Input file %s is not a normal file.\n", name);
        close(r->in_fd);
        return 1;
    }
    return 0;
}

/* As bzip2, for every file: compressed data never goes to a terminal (-c
 * with files too; -f does not change that), nor is it read from one.
 * STEP_DONE (said so) if it would, else STEP_OK. */
static int terminal_check(run *r)
{
    const opts *o = r->o;
    int to_tty = o->mode == 'z' && (o->to_stdout || !r->name) && isatty(1);
    if (to_tty || (o->mode != 'z' && !r->name && isatty(0))) {
        fprintf(stderr, "mpibzip2: I won't %s compressed data %s a terminal.\n"
                        "mpibzip2: For help, type: `mpibzip2 --help'.\n",
                o->mode == 'z' ? "write" : "read", o->mode == 'z' ? "to" : "from");
        r->rc = 1;
        return STEP_DONE;
    }
    return STEP_OK;
}

/* The output: standard output, nothing (-t), or a temporary file next to
 * the output file's name, which must not exist unless -f. */
static int open_output(run *r)
{
    const opts *o = r->o;
    const char *name = r->name;
    int guessed = 1;
    if (o->mode == 't')
        return STEP_OK;
    if (o->to_stdout || !name) {
        r->out = stdout;
        return STEP_OK;
    }
    r->rc = 1; /* until the file is open */
    r->outname = o->mode == 'z' ? malloc(strlen(name) + 5) : decompressed_name(name, &guessed);
    if (!r->outname) {
        snprintf(r->msg, sizeof r->msg, "out of memory");
        return STEP_FAIL;
    }
    if (o->mode == 'z')
        sprintf(r->outname, "%s.bz2", name);
    else if (!guessed && !o->quiet)
        fprintf(stderr, "mpibzip2: Can't guess original name for %s -- using %s\n", name, r->outname);
    if (!o->force && access(r->outname, F_OK) == 0) {
        fprintf(stderr, "mpibzip2: Output file %s already exists.\n", r->outname);
        return STEP_DONE;
    }
    r->tmpname = malloc(strlen(r->outname) + 24);
    if (!r->tmpname) {
        snprintf(r->msg, sizeof r->msg, "out of memory");
        return STEP_FAIL;
    }
    sprintf(r->tmpname, "%s.mpibzip2-XXXXXX", r->outname);
    r->tmp_fd = mkstemp(r->tmpname);
    if (r->tmp_fd < 0 || !(r->out = fdopen(r->tmp_fd, "wb"))) {
        fprintf(stderr, "mpibzip2: Can't create output file %s: %s.\n", r->outname, strerror(errno));
        if (r->tmp_fd >= 0) {
            close(r->tmp_fd);
            unlink(r->tmpname);
        }
        return STEP_DONE;
    }
    r->rc = 0;
    return STEP_OK;
}

/* Compresses r's input into r->out; the other ranks compress through w. */
static void compress_one(run *r)
{
    const opts *o = r->o;
    const world *w = r->w;
    char *abs = o->shared && r->name && w->nremote ? realpath(r->name, NULL) : NULL;
    shared_input(w, abs);
    bz_compress_opts co = {o->level, o->threads, r->pg.on ? progress_cb : NULL, &r->pg, w->nremote, w->nproxy,
                           mpibz_proxy, (void **)w->proxies, NULL, NULL, o->single, o->queue};
    if (w->pump) {
        co.pump = mpibz_pump_run;
        co.pump_arg = w->pump;
    }
    if (o->single) /* rank 0 compresses only when it is alone */
        co.threads = w->nremote ? 0 : 1;
    r->rc = bz_compress(r->in_fd, r->out, &co, &r->nin, &r->nout, r->msg, sizeof r->msg);
    struct stat now, *st = &r->st;
    if (abs && !r->rc &&
        (fstat(r->in_fd, &now) || now.st_size != st->st_size || now.st_mtim.tv_sec != st->st_mtim.tv_sec ||
         now.st_mtim.tv_nsec != st->st_mtim.tv_nsec)) {
        r->rc = 1; /* the workers may have read other bytes than rank 0 */
        snprintf(r->msg, sizeof r->msg, "the file changed while it was compressed (--shared-input)");
    }
    shared_input(w, NULL);
    free(abs);
}

/* Decompresses (or tests) r's input into r->out. STEP_FAIL if the input
 * cannot be read as a stream, else STEP_OK (r->rc says how it went). */
static int decompress_one(run *r)
{
    const opts *o = r->o;
    r->in = fdopen(r->in_fd, "rb");
    if (!r->in) {
        r->rc = 1;
        snprintf(r->msg, sizeof r->msg, "%s", strerror(errno));
        return STEP_FAIL;
    }
    bz_decode_opts dopt = {o->threads, o->mode == 't', r->pg.on ? progress_cb : NULL, &r->pg, r->w->ndchan,
                           mpibz_remote_decode, r->w->dchan_args};
    r->rc = bz_decompress(r->in, r->shown, o->mode == 't' ? NULL : r->out, &dopt, r->msg, sizeof r->msg);
    if (r->rc == 0 && r->msg[0] && !o->quiet)
        fprintf(stderr, "mpibzip2: %s\n", r->msg); /* a warning, e.g. trailing garbage */
    if (r->rc == 0)
        r->msg[0] = '\0';
    return STEP_OK;
}

/* Compresses, decompresses or tests, with the progress bar on a terminal. */
static int code_one(run *r)
{
    progress *pg = &r->pg;
    pg->on = !r->o->quiet && isatty(2);
    pg->name = r->shown;
    pg->total = S_ISREG(r->st.st_mode) ? (uint64_t)r->st.st_size : 0;
    clock_gettime(CLOCK_MONOTONIC, &pg->t0);
    pg->last = pg->t0;
    if (r->o->mode == 'z')
        compress_one(r);
    else if (decompress_one(r) != STEP_OK)
        return STEP_FAIL;
    progress_end(pg);
    return r->rc ? STEP_FAIL : STEP_OK;
}

/* The output is complete: an output file gets the input's mode and times,
 * is synced and renamed into place (and the input goes unless -k);
 * standard output is flushed. */
static int finish_output(run *r)
{
    if (r->out && r->out != stdout) {
        if (r->name) {
            struct timespec times[2] = {r->st.st_atim, r->st.st_mtim};
            fchmod(r->tmp_fd, r->st.st_mode & 07777); /* best effort, as bzip2 */
            futimens(r->tmp_fd, times);
        }
        if (fflush(r->out) || fsync(r->tmp_fd) || fclose(r->out)) {
            r->out = NULL;
            r->rc = 1;
            snprintf(r->msg, sizeof r->msg, "write error: %s", strerror(errno));
            return STEP_FAIL;
        }
        r->out = NULL;
        if (rename(r->tmpname, r->outname)) {
            r->rc = 1;
            snprintf(r->msg, sizeof r->msg, "can't rename to %s: %s", r->outname, strerror(errno));
            return STEP_FAIL;
        }
        free(r->tmpname);
        r->tmpname = NULL;
        if (!r->o->keep && r->name)
            unlink(r->name);
    } else if (r->out == stdout && fflush(stdout)) {
        r->rc = 1;
        snprintf(r->msg, sizeof r->msg, "write error: %s", strerror(errno));
        return STEP_FAIL;
    }
    return STEP_OK;
}

/* -v: what became of the file. */
static void say_done(const run *r)
{
    const char *shown = r->shown;
    uint64_t nin = r->nin, nout = r->nout;
    if (r->o->mode == 'z' && nin > 0)
        fprintf(stderr, "  %s: %6.3f:1, %6.3f bits/byte, %5.2f%% saved, %llu in, %llu out.\n", shown,
                (double)nin / (double)nout, 8.0 * (double)nout / (double)nin,
                100.0 * (1.0 - (double)nout / (double)nin), (unsigned long long)nin,
                (unsigned long long)nout);
    else if (r->o->mode == 'z')
        fprintf(stderr, "  %s: no data compressed.\n", shown);
    else
        fprintf(stderr, "  %s: %s\n", shown, r->o->mode == 't' ? "ok" : "done");
}

/* A step failed with r->msg: say so, and remove the output so far. */
static void say_failed(run *r)
{
    const char *shown = r->shown;
    progress_end(&r->pg);
    if (!strncmp(r->msg, shown, strlen(shown)) && r->msg[strlen(shown)] == ':')
        fprintf(stderr, "mpibzip2: %s\n", r->msg); /* the decoder names the file itself */
    else
        fprintf(stderr, "mpibzip2: %s: %s\n", shown, r->msg[0] ? r->msg : "failed");
    if (r->out && r->out != stdout)
        fclose(r->out);
    r->out = NULL;
    if (r->tmpname)
        unlink(r->tmpname);
}

/* Whether bzip2 would process no further file after r's failed step (its
 * cleanUpAndFail: corrupt or truncated data when decompressing, a failure to
 * read or write; not a file that cannot be opened or is no bzip2 file at
 * all, nor corrupt data under -t). */
static int stops_all(const run *r)
{
    size_t l = strlen(r->msg), k = strlen(BZ_DECODE_NOT_BZIP2);
    int not_bzip2 = l >= k && !strcmp(r->msg + l - k, BZ_DECODE_NOT_BZIP2);
    return r->rc == 1 || (r->rc == 2 && r->o->mode == 'd' && !not_bzip2);
}

/* Runs one file (or stdin when name is NULL). Returns the exit code for it;
 * *stop: no further file is to be processed. */
static int one(const opts *o, const world *w, const char *name, int *stop)
{
    run r = {.o = o, .w = w, .name = name, .shown = name ? name : "(stdin)", .in_fd = 0, .tmp_fd = -1};

    if (name) {
        if (open_input(&r))
            return 1;
    } else if (fstat(0, &r.st)) {
        memset(&r.st, 0, sizeof r.st);
    }
    int step = terminal_check(&r);
    if (step == STEP_OK)
        step = open_output(&r);
    if (step == STEP_OK)
        step = code_one(&r);
    if (step == STEP_OK)
        step = finish_output(&r);
    if (step == STEP_OK && o->verbose)
        say_done(&r);
    if (step == STEP_FAIL)
        say_failed(&r);
    *stop = step == STEP_FAIL && stops_all(&r);
    free(r.tmpname);
    free(r.outname);
    if (r.in)
        fclose(r.in);
    else if (name && r.in_fd >= 0)
        close(r.in_fd);
    return r.rc;
}

static const char *level_name(int l)
{
    return l == MPI_THREAD_MULTIPLE ? "MPI_THREAD_MULTIPLE"
           : l == MPI_THREAD_SERIALIZED ? "MPI_THREAD_SERIALIZED"
           : l == MPI_THREAD_FUNNELED  ? "MPI_THREAD_FUNNELED"
                                       : "MPI_THREAD_SINGLE";
}

/* Started by an MPI launcher (mpiexec, srun, ...)? Its environment says so.
 * Started plainly, mpibzip2 is one process and skips MPI_Init: MPICH's
 * start-up costs ~13 MB and ~0.05 s of CPU that a one-rank run never uses.
 * Any sign of a launcher (or MPIBZIP2_MPI=1) means MPI: treating one rank of
 * a parallel job as a lone process would let every rank write the output. */
static int launched(void)
{
    static const char *const marks[] = {
        "PMI_RANK",         "PMI_FD",          "PMI_PORT",   "PMI_SIZE",    "PMIX_RANK",          "PMIX_NAMESPACE",
        "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_RANK", "SLURM_PROCID",
        "PALS_RANKID",      "ALPS_APP_PE",     "HYDRA_CONTROL_FD", "I_MPI_HYDRA_HOST_FILE"};
#ifdef MPIBZ_ALWAYS_MPI /* simulators (SMPI) set none of these */
    return 1;
#endif
    const char *f = getenv("MPIBZIP2_MPI");
    if (f && !strcmp(f, "1"))
        return 1;
    for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++)
        if (getenv(marks[i]))
            return 1;
    return 0;
}

/* Starts MPI if a launcher started this process (mpi), at the thread level
 * --thread-level= asks for (default MPI_THREAD_MULTIPLE): *provided, *rank,
 * *size and *comm, a duplicate of MPI_COMM_WORLD. Without MPI, one process
 * whose threads need nothing from MPI. 0, or 1 if MPI_Init_thread failed
 * (said so). */
static int mpi_start(int *argc, char ***argv, int mpi, int *provided, int *rank, int *size, MPI_Comm *comm)
{
    int want = MPI_THREAD_MULTIPLE;
    for (int i = 1; i < *argc && strcmp((*argv)[i], "--"); i++)
        if (!strncmp((*argv)[i], "--thread-level=", 15) && asked_level((*argv)[i] + 15) >= 0)
            want = asked_level((*argv)[i] + 15);
    if (!mpi) {
        *provided = want; /* one process: threads need nothing from MPI */
        return 0;
    }
    if (MPI_Init_thread(argc, argv, want, provided) != MPI_SUCCESS) {
        fprintf(stderr, "mpibzip2: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    MPI_Comm_dup(MPI_COMM_WORLD, comm);
    return 0;
}

/* Rank 0 says how the work is spread (the idle ranks; with -vv, all). */
static void say_setup(const opts *o, int size, int provided, int mpi, int remote_ok)
{
    if (size > 1 && !remote_ok && !o->quiet)
        fprintf(stderr, "mpibzip2: decompression runs on rank 0's threads (%d ranks idle: %s)\n", size - 1,
                o->single ? "--single-threaded" : "MPI_THREAD_MULTIPLE not provided");
    if (o->verbose > 1)
        fprintf(stderr, "mpibzip2: %d ranks, %d threads per rank, MPI thread level %s, %s\n", size,
                o->single ? 1 : o->threads,
                mpi ? level_name(provided) : "none (no MPI launcher: MPI not started)",
                !remote_ok                            ? "threads of rank 0 only"
                : o->mode != 'z'                      ? "one decoding thread per remote channel"
                : o->single                           ? "single-threaded master (no threads)"
                : provided == MPI_THREAD_MULTIPLE     ? "one proxy thread per worker rank"
                                                      : "the writing thread drives the remote compressors");
}

/* Sets up w to drive the workers' channels (counts[r] on rank r): for
 * decompression a thread per remote channel; for compression one pump run
 * by the writing thread, or (MPI_THREAD_MULTIPLE) a pump per worker rank,
 * each run by a proxy thread. 0, or 1 if memory is short. */
static int drive_workers(const opts *o, world *w, const int *counts, int size, int provided)
{
    /* rank 0 compresses too, unless it is the single-threaded master */
    int compressors = w->nremote / 2 + (o->single ? 0 : o->threads);
    if (o->mode != 'z') {
        int oom = !(w->dchan = mpibz_channels(w->comm, counts, 1, size - 1, &w->ndchan)) ||
                  !(w->dchan_args = calloc((size_t)w->ndchan + 1, sizeof *w->dchan_args));
        for (int k = 0; !oom && k < w->ndchan; k++)
            w->dchan_args[k] = &w->dchan[k];
        return oom;
    }
    if (o->single || provided != MPI_THREAD_MULTIPLE)
        return !(w->pump = mpibz_pump_new(w->comm, o->level, counts, 1, size - 1, compressors));
    if (!(w->proxies = calloc((size_t)size, sizeof *w->proxies)))
        return 1;
    for (int r = 1; r < size; r++)
        if (counts[r] > 0 &&
            !(w->proxies[w->nproxy++] = mpibz_pump_new(w->comm, o->level, counts, r, r, compressors)))
            return 1;
    return 0;
}

/* Learns the workers' channels and sets up w to drive them. 0, or 1 (said
 * so; every channel got its QUIT, or the job was aborted). */
static int start_workers(const opts *o, world *w, int size, int provided)
{
    int *counts = calloc((size_t)size, sizeof *counts);
    if (!counts || mpibz_thread_counts(w->comm, counts)) {
        /* the workers wait for rank 0 (in the gather, or for blocks) and
           cannot be told to stop: the job ends here rather than hang */
        fprintf(stderr, "mpibzip2: %s while starting the workers\n", counts ? "MPI failed" : "out of memory");
        free(counts);
        MPI_Abort(w->comm, 1);
        return 1;
    }
    for (int r = 1; r < size; r++)
        w->nremote += counts[r];
    if (drive_workers(o, w, counts, size, provided)) { /* every channel of every worker still gets its QUIT */
        fprintf(stderr, "mpibzip2: out of memory\n");
        for (int r = 1; r < size; r++)
            for (int t = 0; t < counts[r]; t++)
                mpibz_chan_quit(&(mpibz_chan){w->comm, r, MPIBZ_TAG + t});
        free(counts);
        return 1;
    }
    free(counts);
    return 0;
}

/* Rank 0: every file (or standard input), then QUIT to the workers'
 * channels. Returns the exit code: the worst of the files'. */
static int master(const opts *o, world *w, int size, int provided, int mpi, int remote_ok)
{
    int rc = 0, stop = 0;
    say_setup(o, size, provided, mpi, remote_ok);
    if (remote_ok && start_workers(o, w, size, provided))
        return 1;
    if (o->nfiles == 0) {
        rc = one(o, w, NULL, &stop);
    } else {
        for (int i = 0; i < o->nfiles && !stop; i++) {
            int r = one(o, w, o->files[i], &stop);
            rc = r > rc ? r : rc;
            if (stop && i + 1 < o->nfiles && !o->quiet)
                fprintf(stderr, "mpibzip2: stopped after %s: %d of %d files not processed\n", o->files[i],
                        o->nfiles - i - 1, o->nfiles);
        }
    }
    /* the workers' channels end */
    mpibz_pump_quit(w->pump);
    for (int k = 0; k < w->nproxy; k++)
        mpibz_pump_quit(w->proxies[k]);
    for (int k = 0; k < w->ndchan; k++)
        mpibz_chan_quit(&w->dchan[k]);
    return rc;
}

static void world_free(world *w)
{
    mpibz_pump_free(w->pump);
    for (int k = 0; k < w->nproxy; k++)
        mpibz_pump_free(w->proxies[k]);
    free(w->proxies);
    free(w->dchan);
    free(w->dchan_args);
}

int main(int argc, char **argv)
{
    int provided = MPI_THREAD_SINGLE, rank = 0, size = 1, rc = 0;
    opts o;
    world w = {MPI_COMM_NULL, 0, 0, NULL, NULL, 0, NULL, NULL};

    int mpi = launched();
    if (mpi_start(&argc, &argv, mpi, &provided, &rank, &size, &w.comm))
        return 1;
    int pr = parse(argc, argv, &o, rank == 0);
    if (provided == MPI_THREAD_SINGLE)
        o.single = 1; /* no thread may exist besides the main one */
    /* Other ranks compress, or decompress when rank 0 can run a thread per
       remote channel (MPI_THREAD_MULTIPLE); rank 0 decides for all. */
    int remote_ok = size > 1 && pr == 0 && (o.mode == 'z' || (provided == MPI_THREAD_MULTIPLE && !o.single));
    if (size > 1 && MPI_Bcast(&remote_ok, 1, MPI_INT, 0, w.comm) != MPI_SUCCESS)
        remote_ok = 0;
    if (rank != 0) {
        if (remote_ok)
            rc = mpibz_worker(w.comm, o.threads, !o.single, o.mode != 'z');
    } else if (pr) {
        rc = pr > 0 ? 1 : 0;
    } else {
        rc = master(&o, &w, size, provided, mpi, remote_ok);
    }
    world_free(&w);
    free(o.files);
    if (mpi) {
        MPI_Comm_free(&w.comm);
        MPI_Finalize();
    }
    return rc;
}
