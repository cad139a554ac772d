/*
 * apps/common/app.h - what the reference applications share: their common
 * options, the communication calls they make (MPI's or zmpi's, timed and
 * counted), the real data files, exact transfers for checking, the
 * reference output of a plain run, and the one-line JSON result.
 *
 * An application calls only app_* functions for the communication it
 * measures. With `--api mpi` (the default) they are MPI's own calls - so
 * under libzmpi_preload.so (zmpirun) the unmodified program is compressed
 * transparently; with `--api zmpi` they are the ZMPI_ calls, configured by
 * --codec / --abs / --rel (or the ZMPI_ environment variables). Output that
 * is checked (gathered to rank 0, compared with a plain run) travels as
 * MPI_BYTE, which zmpi never compresses, so what is checked is what the
 * application computed.
 *
 * Every application prints, on rank 0, one line holding one JSON object:
 *   {"app", "ranks", "api", "preload", "codec", "eb_mode", "eb", "iters",
 *    "time_s", "comm_s", "bytes", "bytes_raw", "bytes_sent", "ratio",
 *    "compressed_calls", "calls", "quality": {...}, "quality_ok", "rule"}
 * time_s: the timed part (max over ranks, after a barrier); comm_s: time
 * inside the counted communication calls (max over ranks); bytes: payload
 * bytes the ranks handed to those calls as senders (summed); bytes_raw /
 * bytes_sent: what zmpi compressed and what it sent for it (summed over
 * ranks and the application's communicators; ratio = raw / sent, 1 when
 * nothing was compressed); quality: the metrics of the final output;
 * quality_ok: whether they meet the application's acceptance rule (`rule`,
 * documented in docs/apps.md), null when there is no plain reference to
 * compare with. Exit status: 0, 1 when quality_ok is false, 2 for bad
 * arguments or data.
 *
 * No mutable process-global state: everything lives in the `app` (the
 * programs also run under SimGrid's SMPI, where ranks may share a process).
 */
#ifndef ZMPI_APP_H
#define ZMPI_APP_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#include "zmpi/zmpi.h"

#define APP_MAX_COMMS 16
#define APP_QUALITY_CAP 2048

/* An application-specific option: --name VALUE. */
typedef struct app_opt {
    const char *name; /* without the leading dashes */
    char kind;        /* 'i' int, 'd' double, 's' string */
    void *ptr;        /* int *, double * or const char ** (keeps its default if not given) */
    const char *help;
} app_opt;

typedef struct app {
    const char *name;
    MPI_Comm comm; /* the application's communicator: a duplicate of MPI_COMM_WORLD */
    int rank, size;
    int zmpi;      /* --api zmpi */
    int preload;   /* libzmpi_preload.so is loaded (or linked in) */
    int iters;     /* --iters (the application's default if not given) */
    const char *data_dir;
    const char *save, *reference; /* --save FILE, --reference FILE */
    const char *codec_name;       /* --codec */
    double abs_eb, rel_eb;        /* --abs / --rel (0: not given) */
    int quiet;
    /* counters of the timed part */
    double t_comm;
    unsigned long long bytes, calls;
    int counting; /* calls are counted between app_start and app_stop */
    double t0, t_run;
    MPI_Comm comms[APP_MAX_COMMS]; /* communicators whose zmpi statistics count */
    int comm_rank[APP_MAX_COMMS], comm_size[APP_MAX_COMMS];
    int ncomms;
    MPI_Datatype types[8]; /* sizes of the datatypes the counted calls met (no MPI call in the timed part) */
    int type_size[8], ntypes;
    ZMPI_Stats base[APP_MAX_COMMS]; /* their statistics at app_start */
    char quality[APP_QUALITY_CAP];
    size_t qlen;
    int quality_ok; /* -1: unknown */
    const char *rule;
} app;

/* MPI_Init, the common options and the application's (opts[0..nopts)),
 * the application communicator and, with --api zmpi and --codec / --abs /
 * --rel, its zmpi settings. On --help or an error it prints (rank 0),
 * finalizes MPI and exits (0 or 2). default_iters is --iters's default. */
void app_init(app *a, int *argc, char ***argv, const char *name, const char *about, const app_opt *opts,
              int nopts, int default_iters);
/* Stops the job with a message: an error this rank found (a file, memory,
 * an option value only it checks): it prints the message and calls
 * MPI_Abort(MPI_COMM_WORLD, code), so that no other rank waits for it. */
void app_die(app *a, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));
/* Stops the job for a bad option that every rank checks alike: rank 0
 * prints the message, every rank finalizes MPI and exits with status 2. */
void app_bad_option(app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
/* A rank-0 progress message on stderr (unless --quiet). */
void app_log(const app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A duplicate of the application communicator (its settings too) whose
 * statistics count; freed by app_finish. */
MPI_Comm app_comm_dup(app *a);
/* Splits: as MPI_Comm_split, statistics counted, settings copied. */
MPI_Comm app_comm_split(app *a, int color, int key);
/* A communicator the application made from its own (MPI_Cart_create, ...):
 * given the application communicator's settings, statistics counted, freed
 * by app_finish. */
void app_adopt(app *a, MPI_Comm c);

/* The timed part: barrier, clock, counters reset / barrier, clock. Under
 * libzmpi_preload.so its profiler sees only the timed part: MPI_Pcontrol(2)
 * (reset) at the start, MPI_Pcontrol(0) (off) at the end. */
void app_start(app *a);
void app_stop(app *a);

/* ---- the counted communication calls (MPI_ or ZMPI_ by --api) ---- */
int app_send(app *a, const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm);
int app_recv(app *a, void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Status *st);
int app_isend(app *a, const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req);
int app_irecv(app *a, void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Request *req);
int app_waitall(app *a, int n, MPI_Request *reqs, MPI_Status *sts);
int app_bcast(app *a, void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm);
int app_reduce(app *a, const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm);
int app_allreduce(app *a, const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm);
int app_scatterv(app *a, const void *sbuf, const int *counts, const int *displs, MPI_Datatype type, void *rbuf,
                 int rcount, int root, MPI_Comm comm);
int app_gather(app *a, const void *sbuf, int count, MPI_Datatype type, void *rbuf, int root, MPI_Comm comm);
int app_allgather(app *a, const void *sbuf, int count, MPI_Datatype type, void *rbuf, MPI_Comm comm);
int app_alltoall(app *a, const void *sbuf, int count, MPI_Datatype type, void *rbuf, MPI_Comm comm);
int app_alltoallv(app *a, const void *sbuf, const int *scounts, const int *sdispls, void *rbuf, const int *rcounts,
                  const int *rdispls, MPI_Datatype type, MPI_Comm comm);

/* ---- exact transfers for checking (MPI_BYTE: never compressed, not counted) ---- */
/* Rank 0 gets every rank's nbytes (may differ per rank) back to back in out
 * (allocated by the call on rank 0, NULL elsewhere; free it). Returns the
 * total bytes on rank 0. */
size_t app_gather_bytes(app *a, const void *local, size_t nbytes, void **out);

/* ---- data ---- */
/* Reads a whole file of ../shared/data (--data, ZMPI_DATA, or the source
 * tree's) into a new buffer; dies with a clear message if it is missing or
 * not of `bytes` bytes (0: any size; *got gets it). */
void *app_read_data(app *a, const char *file, size_t bytes, size_t *got);
/* Plain run's output (--save) / the reference it is compared with (--reference):
 * rank 0 writes / reads exactly `bytes` bytes (read returns NULL when no
 * --reference was given; dies when the file does not fit). */
void app_save_output(app *a, const void *data, size_t bytes);
void *app_load_reference(app *a, size_t bytes);

/* ---- the result ---- */
/* Adds "key": value to the quality object (rank 0). */
void app_quality(app *a, const char *key, double value);
void app_quality_str(app *a, const char *key, const char *value);
/* Sets quality_ok (rank 0; -1 unknown) and the rule it was judged by. */
void app_verdict(app *a, int ok, const char *rule);
/* Sums the statistics, prints the JSON line (rank 0), frees the duplicated
 * communicators, MPI_Finalize. Returns the exit status. */
int app_finish(app *a);

/* ---- small numeric helpers ---- */
/* max |x - y|, and the sums of squares of x - y and of x, over n doubles. */
void app_diff(const double *x, const double *y, size_t n, double *maxabs, double *sse, double *ssx);
/* The bound an element of compressed data may carry in this run: the ABS
 * bound, or the REL bound times `range`; 0 when zmpi is lossless or off,
 * -1 when it has no bound (fixed-precision codecs). */
double app_bound(app *a, double range);
/* 1 if this run compresses at all (a bound, or a lossless / fixed codec on). */
int app_compresses(app *a);
double app_now(void);

#endif
