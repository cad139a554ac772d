/* The reference applications' shared part (see app.h). */
#define _GNU_SOURCE /* dladdr */
#include "app.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

double app_now(void)
{
    return MPI_Wtime();
}

void app_log(const app *a, const char *fmt, ...)
{
    if (a->rank != 0 || a->quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%s] ", a->name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

/* The message (rank 0 for the errors every rank finds alike, else the rank
 * that found it) and the stop: MPI_Finalize when every rank stops here
 * together (all = 1), else MPI_Abort, so that no rank waits forever for
 * one that stopped. */
static void die_impl(app *a, int all, int code, const char *fmt, va_list ap) __attribute__((noreturn));
static void die_impl(app *a, int all, int code, const char *fmt, va_list ap)
{
    if (!all || a->rank == 0) {
        fprintf(stderr, "%s: ", a->name);
        if (!all)
            fprintf(stderr, "rank %d: ", a->rank);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    fflush(stderr);
    if (!all)
        MPI_Abort(MPI_COMM_WORLD, code);
    MPI_Finalize();
    exit(code);
}

/* An error every rank finds in the same place (the options). */
static void die_all(app *a, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4), noreturn));
static void die_all(app *a, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    die_impl(a, 1, code, fmt, ap);
    va_end(ap);
}

void app_bad_option(app *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    die_impl(a, 1, 2, fmt, ap);
    va_end(ap);
}

void app_die(app *a, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    die_impl(a, 0, code, fmt, ap);
    va_end(ap);
}

/* ---- options ---- */

static void usage(const app *a, const char *about, const app_opt *opts, int nopts, int default_iters)
{
    if (a->rank != 0)
        return;
    printf("%s - %s\n\nusage: mpiexec -n N %s [options]\n\n", a->name, about, a->name);
    printf("common options:\n"
           "  --api mpi|zmpi    the communication calls: MPI's own (default; compressed\n"
           "                    transparently under zmpirun / libzmpi_preload.so) or zmpi's\n"
           "  --codec NAME      (--api zmpi) codec, any of `zmpi codec list`\n"
           "  --abs X | --rel X (--api zmpi) absolute / value-range-relative error bound\n"
           "                    (without them, the ZMPI_ environment variables apply)\n"
           "  --iters N         iterations (default %d); the work done never depends on timing\n"
           "  --data DIR        the real fields (default: ZMPI_DATA, else ../shared/data)\n"
           "  --save FILE       write the final output (to compare later runs with)\n"
           "  --reference FILE  compare the final output with a plain run's --save\n"
           "  --quiet           no progress messages\n",
           default_iters);
    if (nopts)
        printf("\n%s options:\n", a->name);
    for (int i = 0; i < nopts; i++) {
        char def[64] = "";
        if (opts[i].kind == 'i')
            snprintf(def, sizeof def, " (default %d)", *(int *)opts[i].ptr);
        else if (opts[i].kind == 'd')
            snprintf(def, sizeof def, " (default %g)", *(double *)opts[i].ptr);
        else if (*(const char **)opts[i].ptr)
            snprintf(def, sizeof def, " (default %s)", *(const char **)opts[i].ptr);
        printf("  --%-16s %s%s\n", opts[i].name, opts[i].help, def);
    }
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end)
        return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < -2147483647L || v > 2147483647L)
        return -1;
    *out = (int)v;
    return 0;
}

/* One option at argv[i] (its value at argv[i+1]); returns 1 if it took a
 * value, 0 if it took none, -1 if unknown, -2 if its value is bad. */
static int parse_one(app *a, const char *opt, const char *val, const app_opt *opts, int nopts)
{
    const char *name = opt + 2;
    if (!strcmp(name, "quiet")) {
        a->quiet = 1;
        return 0;
    }
    if (!val)
        return -2;
    if (!strcmp(name, "api")) {
        if (strcmp(val, "mpi") && strcmp(val, "zmpi"))
            return -2;
        a->zmpi = !strcmp(val, "zmpi");
        return 1;
    }
    if (!strcmp(name, "codec"))
        return (a->codec_name = val, 1);
    if (!strcmp(name, "abs"))
        return parse_double(val, &a->abs_eb) || !(a->abs_eb > 0) || isinf(a->abs_eb) ? -2 : 1;
    if (!strcmp(name, "rel"))
        return parse_double(val, &a->rel_eb) || !(a->rel_eb > 0) || isinf(a->rel_eb) ? -2 : 1;
    if (!strcmp(name, "iters"))
        return parse_int(val, &a->iters) || a->iters < 1 ? -2 : 1;
    if (!strcmp(name, "data"))
        return (a->data_dir = val, 1);
    if (!strcmp(name, "save"))
        return (a->save = val, 1);
    if (!strcmp(name, "reference"))
        return (a->reference = val, 1);
    for (int k = 0; k < nopts; k++) {
        if (strcmp(name, opts[k].name))
            continue;
        if (opts[k].kind == 'i')
            return parse_int(val, opts[k].ptr) ? -2 : 1;
        if (opts[k].kind == 'd')
            return parse_double(val, opts[k].ptr) ? -2 : 1;
        *(const char **)opts[k].ptr = val;
        return 1;
    }
    return -1;
}

static void parse_args(app *a, int argc, char **argv, const char *about, const app_opt *opts, int nopts,
                       int default_iters)
{
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
            usage(a, about, opts, nopts, default_iters);
            MPI_Finalize();
            exit(0);
        }
        if (strncmp(opt, "--", 2))
            die_all(a, 2, "unexpected argument '%s' (see --help)", opt);
        int r = parse_one(a, opt, i + 1 < argc ? argv[i + 1] : NULL, opts, nopts);
        if (r == -1)
            die_all(a, 2, "unknown option %s (see --help)", opt);
        if (r == -2)
            die_all(a, 2, "option %s: missing or bad value%s%s", opt, i + 1 < argc ? " " : "",
                    i + 1 < argc ? argv[i + 1] : "");
        i += r;
    }
    if (a->abs_eb > 0 && a->rel_eb > 0)
        die_all(a, 2, "give --abs or --rel, not both");
    if (!a->zmpi && (a->abs_eb > 0 || a->rel_eb > 0 || a->codec_name))
        die_all(a, 2, "--codec, --abs and --rel configure --api zmpi; under zmpirun use its --eb / --codec "
                      "(or the ZMPI_ environment variables)");
}

/* Is MPI_Send libzmpi_preload.so's? (or were its wrappers linked in) */
static int preload_loaded(void)
{
#ifdef APP_PRELOAD_LINKED
    return 1;
#else
    Dl_info info;
    int (*fn)(const void *, int, MPI_Datatype, int, int, MPI_Comm) = MPI_Send;
    void *p;
    memcpy(&p, &fn, sizeof p);
    return dladdr(p, &info) && info.dli_fname && strstr(info.dli_fname, "zmpi_preload") != NULL;
#endif
}

/* --api zmpi with --codec / --abs / --rel: the application communicator's
 * settings (duplicates inherit them). */
static void configure(app *a)
{
    ZMPI_Config cfg;
    if (!a->zmpi || (!a->codec_name && !(a->abs_eb > 0) && !(a->rel_eb > 0)))
        return;
    if (ZMPI_Comm_get_config(a->comm, &cfg) != MPI_SUCCESS)
        app_die(a, 2, "cannot read zmpi's settings");
    if (a->codec_name) {
        int id = zmpi_codec_from_name(a->codec_name);
        if (id < 0)
            die_all(a, 2, "--codec %s: unknown codec (see `zmpi codec list`)", a->codec_name);
        cfg.codec = (zmpi_codec)id;
        if (zmpi_codec_kind(cfg.codec) != ZMPI_KIND_BOUNDED && !(a->abs_eb > 0) && !(a->rel_eb > 0))
            cfg.eb_mode = ZMPI_EB_NONE;
    }
    if (a->abs_eb > 0) {
        cfg.eb_mode = ZMPI_EB_ABS;
        cfg.eb = a->abs_eb;
    } else if (a->rel_eb > 0) {
        cfg.eb_mode = ZMPI_EB_REL;
        cfg.eb = a->rel_eb;
    }
    MPI_Comm_set_errhandler(a->comm, MPI_ERRORS_RETURN);
    int rc = ZMPI_Comm_set_config(a->comm, &cfg);
    MPI_Comm_set_errhandler(a->comm, MPI_ERRORS_ARE_FATAL);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        app_die(a, 2, "invalid zmpi settings: %s", msg);
    }
}

static void track(app *a, MPI_Comm c)
{
    if (a->ncomms >= APP_MAX_COMMS)
        app_die(a, 1, "more than %d communicators", APP_MAX_COMMS);
    MPI_Comm_rank(c, &a->comm_rank[a->ncomms]);
    MPI_Comm_size(c, &a->comm_size[a->ncomms]);
    a->comms[a->ncomms++] = c;
}

void app_init(app *a, int *argc, char ***argv, const char *name, const char *about, const app_opt *opts,
              int nopts, int default_iters)
{
    memset(a, 0, sizeof *a);
    a->name = name;
    a->iters = default_iters;
    a->quality_ok = -1;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &a->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &a->size);
    parse_args(a, *argc, *argv, about, opts, nopts, default_iters);
    a->preload = preload_loaded();
    if (a->zmpi && a->preload)
        die_all(a, 2, "--api zmpi under libzmpi_preload.so: run with --api mpi (the preload compresses MPI's calls)");
    MPI_Comm_dup(MPI_COMM_WORLD, &a->comm);
    track(a, a->comm);
    configure(a);
    if (a->zmpi)
        ZMPI_Comm_prepare(a->comm); /* with settings from the environment (configure set none) */
}


/* A new communicator gets the application communicator's settings (MPI
 * does not tell zmpi where a split comes from), and zmpi's one-time set-up
 * of it is done now, not in its first (timed) collective. */
static void copy_settings(app *a, MPI_Comm to)
{
    ZMPI_Config cfg;
    if (a->zmpi && ZMPI_Comm_get_config(a->comm, &cfg) == MPI_SUCCESS)
        ZMPI_Comm_set_config(to, &cfg);
}

MPI_Comm app_comm_dup(app *a)
{
    MPI_Comm c;
    MPI_Comm_dup(a->comm, &c);
    if (a->zmpi)
        ZMPI_Comm_prepare(c);
    track(a, c);
    return c;
}

MPI_Comm app_comm_split(app *a, int color, int key)
{
    MPI_Comm c;
    MPI_Comm_split(a->comm, color, key, &c);
    app_adopt(a, c);
    return c;
}

void app_adopt(app *a, MPI_Comm c)
{
    if (c == MPI_COMM_NULL)
        return;
    copy_settings(a, c);
    track(a, c);
}

void app_start(app *a)
{
    for (int i = 0; i < a->ncomms; i++)
        if (ZMPI_Comm_get_stats(a->comms[i], &a->base[i]) != MPI_SUCCESS)
            memset(&a->base[i], 0, sizeof a->base[i]);
    a->t_comm = 0;
    a->bytes = a->calls = 0;
    MPI_Barrier(a->comm);
    if (a->preload)
        MPI_Pcontrol(2); /* the profiler of libzmpi_preload.so forgets the set-up's calls */
    a->counting = 1;
    a->t0 = app_now();
}

void app_stop(app *a)
{
    MPI_Barrier(a->comm);
    a->t_run = app_now() - a->t0;
    a->counting = 0;
    if (a->preload)
        MPI_Pcontrol(0); /* ... and ignores the checks' (SimGrid's SMPI has no MPI_Pcontrol of its own) */
}

/* ---- the counted calls ---- */

/* count elements of type in bytes; the sizes are kept, so that a profiler
 * sees no MPI call of the harness's in the timed part after the first */
static size_t type_bytes(app *a, MPI_Datatype type, long long count)
{
    int s = 0, i = 0;
    while (i < a->ntypes && a->types[i] != type)
        i++;
    if (i < a->ntypes) {
        s = a->type_size[i];
    } else {
        MPI_Type_size(type, &s);
        if (a->ntypes < 8) {
            a->types[a->ntypes] = type;
            a->type_size[a->ntypes++] = s;
        }
    }
    return count > 0 && s > 0 ? (size_t)count * (size_t)s : 0;
}

/* The rank and size of comm (kept for the application's communicators). */
static void comm_info(app *a, MPI_Comm comm, int *rank, int *size)
{
    for (int i = 0; i < a->ncomms; i++)
        if (a->comms[i] == comm) {
            *rank = a->comm_rank[i];
            *size = a->comm_size[i];
            return;
        }
    MPI_Comm_rank(comm, rank);
    MPI_Comm_size(comm, size);
}

#define APP_CALL(a, nbytes, call_zmpi, call_mpi)                                                        \
    do {                                                                                               \
        double t_ = app_now();                                                                         \
        int rc_ = (a)->zmpi ? (call_zmpi) : (call_mpi);                                                \
        if ((a)->counting) {                                                                           \
            (a)->t_comm += app_now() - t_;                                                             \
            (a)->bytes += (nbytes);                                                                    \
            (a)->calls++;                                                                              \
        }                                                                                              \
        return rc_;                                                                                    \
    } while (0)

int app_send(app *a, const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm)
{
    APP_CALL(a, dest == MPI_PROC_NULL ? 0 : type_bytes(a, type, count), ZMPI_Send(buf, count, type, dest, tag, comm),
             MPI_Send(buf, count, type, dest, tag, comm));
}

int app_recv(app *a, void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    APP_CALL(a, 0, ZMPI_Recv(buf, count, type, src, tag, comm, st), MPI_Recv(buf, count, type, src, tag, comm, st));
}

int app_isend(app *a, const void *buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    APP_CALL(a, dest == MPI_PROC_NULL ? 0 : type_bytes(a, type, count),
             ZMPI_Isend(buf, count, type, dest, tag, comm, req), MPI_Isend(buf, count, type, dest, tag, comm, req));
}

int app_irecv(app *a, void *buf, int count, MPI_Datatype type, int src, int tag, MPI_Comm comm, MPI_Request *req)
{
    APP_CALL(a, 0, ZMPI_Irecv(buf, count, type, src, tag, comm, req), MPI_Irecv(buf, count, type, src, tag, comm, req));
}

int app_waitall(app *a, int n, MPI_Request *reqs, MPI_Status *sts)
{
    APP_CALL(a, 0, ZMPI_Waitall(n, reqs, sts), MPI_Waitall(n, reqs, sts));
}

int app_bcast(app *a, void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    int rank = 0, size = 1;
    comm_info(a, comm, &rank, &size);
    APP_CALL(a, rank == root ? type_bytes(a, type, count) * (size_t)(size - 1) : 0,
             ZMPI_Bcast(buf, count, type, root, comm), MPI_Bcast(buf, count, type, root, comm));
}

int app_reduce(app *a, const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, int root,
               MPI_Comm comm)
{
    int rank = 0, size = 1;
    comm_info(a, comm, &rank, &size);
    APP_CALL(a, rank == root ? 0 : type_bytes(a, type, count), ZMPI_Reduce(sbuf, rbuf, count, type, op, root, comm),
             MPI_Reduce(sbuf, rbuf, count, type, op, root, comm));
}

int app_allreduce(app *a, const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    int rank = 0, size = 1;
    comm_info(a, comm, &rank, &size);
    APP_CALL(a, size > 1 ? type_bytes(a, type, count) : 0, ZMPI_Allreduce(sbuf, rbuf, count, type, op, comm),
             MPI_Allreduce(sbuf, rbuf, count, type, op, comm));
}

int app_scatterv(app *a, const void *sbuf, const int *counts, const int *displs, MPI_Datatype type, void *rbuf,
                 int rcount, int root, MPI_Comm comm)
{
    int rank = 0, size = 1;
    size_t n = 0;
    comm_info(a, comm, &rank, &size);
    if (rank == root)
        for (int i = 0; i < size; i++)
            n += i == root ? 0 : type_bytes(a, type, counts[i]);
    APP_CALL(a, n, ZMPI_Scatterv(sbuf, counts, displs, type, rbuf, rcount, type, root, comm),
             MPI_Scatterv(sbuf, counts, displs, type, rbuf, rcount, type, root, comm));
}

int app_gather(app *a, const void *sbuf, int count, MPI_Datatype type, void *rbuf, int root, MPI_Comm comm)
{
    int rank = 0, size = 1;
    comm_info(a, comm, &rank, &size);
    APP_CALL(a, rank == root ? 0 : type_bytes(a, type, count), ZMPI_Gather(sbuf, count, type, rbuf, count, type, root, comm),
             MPI_Gather(sbuf, count, type, rbuf, count, type, root, comm));
}

int app_allgather(app *a, const void *sbuf, int count, MPI_Datatype type, void *rbuf, MPI_Comm comm)
{
    int rank = 0, size = 1;
    comm_info(a, comm, &rank, &size);
    APP_CALL(a, type_bytes(a, type, count) * (size_t)(size - 1), ZMPI_Allgather(sbuf, count, type, rbuf, count, type, comm),
             MPI_Allgather(sbuf, count, type, rbuf, count, type, comm));
}

int app_alltoall(app *a, const void *sbuf, int count, MPI_Datatype type, void *rbuf, MPI_Comm comm)
{
    int rank = 0, size = 1;
    comm_info(a, comm, &rank, &size);
    APP_CALL(a, type_bytes(a, type, count) * (size_t)(size - 1), ZMPI_Alltoall(sbuf, count, type, rbuf, count, type, comm),
             MPI_Alltoall(sbuf, count, type, rbuf, count, type, comm));
}

int app_alltoallv(app *a, const void *sbuf, const int *scounts, const int *sdispls, void *rbuf, const int *rcounts,
                  const int *rdispls, MPI_Datatype type, MPI_Comm comm)
{
    int rank = 0, size = 1;
    size_t n = 0;
    comm_info(a, comm, &rank, &size);
    for (int i = 0; i < size; i++)
        n += i == rank ? 0 : type_bytes(a, type, scounts[i]);
    APP_CALL(a, n, ZMPI_Alltoallv(sbuf, scounts, sdispls, type, rbuf, rcounts, rdispls, type, comm),
             MPI_Alltoallv(sbuf, scounts, sdispls, type, rbuf, rcounts, rdispls, type, comm));
}

/* ---- exact transfers ---- */

size_t app_gather_bytes(app *a, const void *local, size_t nbytes, void **out)
{
    int n = (int)nbytes, *counts = NULL, *displs = NULL;
    size_t total = 0;
    *out = NULL;
    if (nbytes > 2147483647u)
        app_die(a, 1, "app_gather_bytes: %zu bytes on one rank", nbytes);
    if (a->rank == 0) {
        counts = malloc((size_t)a->size * sizeof *counts);
        displs = malloc((size_t)a->size * sizeof *displs);
        if (!counts || !displs)
            app_die(a, 1, "out of memory");
    }
    MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, a->comm);
    if (a->rank == 0) {
        for (int i = 0; i < a->size; i++) {
            if (total + (size_t)counts[i] > 2147483647u)
                app_die(a, 1, "app_gather_bytes: more than 2 GiB at rank 0");
            displs[i] = (int)total;
            total += (size_t)counts[i];
        }
        *out = malloc(total ? total : 1);
        if (!*out)
            app_die(a, 1, "out of memory");
    }
    MPI_Gatherv(local, n, MPI_BYTE, *out, counts, displs, MPI_BYTE, 0, a->comm);
    free(counts);
    free(displs);
    return total;
}

/* ---- data ---- */

static int is_dir(const char *p)
{
    struct stat s;
    return p && *p && stat(p, &s) == 0 && S_ISDIR(s.st_mode);
}

void *app_read_data(app *a, const char *file, size_t bytes, size_t *got)
{
    const char *dir = a->data_dir, *from = "--data";
    if (!dir || !*dir) {
        dir = getenv("ZMPI_DATA");
        from = "ZMPI_DATA";
    }
#ifdef APP_DATA_DIR
    if (!dir || !*dir)
        dir = APP_DATA_DIR, from = "the build's data directory";
#endif
    if (!dir || !*dir)
        app_die(a, 2, "no data directory: give --data DIR or set ZMPI_DATA (the real fields of ../shared/data)");
    if (!is_dir(dir))
        app_die(a, 2, "%s %s: not a directory (the real fields of ../shared/data)", from, dir);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (!f)
        app_die(a, 2, "cannot open %s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    if (len < 0 || (bytes && (size_t)len != bytes)) {
        fclose(f);
        app_die(a, 2, "%s: %ld bytes, expected %zu", path, len, bytes);
    }
    void *buf = malloc(len ? (size_t)len : 1);
    if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
        fclose(f);
        app_die(a, 2, "cannot read %s", path);
    }
    fclose(f);
    if (got)
        *got = (size_t)len;
    return buf;
}

void app_save_output(app *a, const void *data, size_t bytes)
{
    int ok = 1;
    if (a->save && a->rank == 0) {
        FILE *f = fopen(a->save, "wb");
        ok = f && fwrite(data, 1, bytes, f) == bytes;
        if (f && fclose(f))
            ok = 0;
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, a->comm);
    if (!ok)
        app_die(a, 2, "cannot write %s", a->save);
}

void *app_load_reference(app *a, size_t bytes)
{
    if (!a->reference || a->rank != 0)
        return NULL;
    FILE *f = fopen(a->reference, "rb");
    if (!f)
        app_die(a, 2, "--reference %s: %s", a->reference, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    void *buf = malloc(bytes ? bytes : 1);
    int ok = buf && len >= 0 && (size_t)len == bytes && fread(buf, 1, bytes, f) == bytes;
    fclose(f);
    if (!ok)
        app_die(a, 2, "--reference %s: not the output of this problem (%ld bytes, expected %zu): "
                      "run the plain case with the same options and --save",
                a->reference, len, bytes);
    return buf;
}

/* ---- the result ---- */

static void qappend(app *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void qappend(app *a, const char *fmt, ...)
{
    if (a->qlen >= sizeof a->quality - 1)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(a->quality + a->qlen, sizeof a->quality - a->qlen, fmt, ap);
    va_end(ap);
    if (n > 0)
        a->qlen += (size_t)n < sizeof a->quality - a->qlen ? (size_t)n : sizeof a->quality - a->qlen - 1;
}

static void json_num(char *out, size_t cap, double v)
{
    if (isnan(v))
        snprintf(out, cap, "null");
    else if (isinf(v))
        snprintf(out, cap, "%s", v > 0 ? "1e999" : "-1e999");
    else
        snprintf(out, cap, "%.9g", v);
}

void app_quality(app *a, const char *key, double value)
{
    char num[64];
    json_num(num, sizeof num, value);
    qappend(a, "%s\"%s\": %s", a->qlen ? ", " : "", key, num);
}

void app_quality_str(app *a, const char *key, const char *value)
{
    qappend(a, "%s\"%s\": \"%s\"", a->qlen ? ", " : "", key, value);
}

void app_verdict(app *a, int ok, const char *rule)
{
    a->quality_ok = ok;
    a->rule = rule;
}

int app_compresses(app *a)
{
    ZMPI_Config cfg;
    if (!a->zmpi && !a->preload)
        return 0;
    return ZMPI_Comm_get_config(a->comm, &cfg) == MPI_SUCCESS && ZMPI_Config_compresses(&cfg);
}

double app_bound(app *a, double range)
{
    ZMPI_Config cfg;
    if (!app_compresses(a) || ZMPI_Comm_get_config(a->comm, &cfg) != MPI_SUCCESS)
        return 0;
    int kind = zmpi_codec_kind(cfg.codec);
    if (kind == ZMPI_KIND_LOSSLESS)
        return 0;
    if (kind == ZMPI_KIND_FIXED && cfg.eb_mode == ZMPI_EB_NONE)
        return -1;
    return cfg.eb_mode == ZMPI_EB_ABS ? cfg.eb : cfg.eb * range;
}

void app_diff(const double *x, const double *y, size_t n, double *maxabs, double *sse, double *ssx)
{
    double m = 0, e = 0, s = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(x[i] - y[i]);
        if (d > m || isnan(d))
            m = isnan(d) ? INFINITY : d;
        e += (x[i] - y[i]) * (x[i] - y[i]);
        s += x[i] * x[i];
    }
    *maxabs = m;
    *sse = e;
    *ssx = s;
}

int app_finish(app *a)
{
    unsigned long long loc[4] = {0, 0, 0, 0}, tot[4];
    for (int i = 0; i < a->ncomms; i++) {
        ZMPI_Stats s;
        if (ZMPI_Comm_get_stats(a->comms[i], &s) != MPI_SUCCESS)
            continue;
        loc[0] += s.bytes_raw - a->base[i].bytes_raw;
        loc[1] += s.bytes_sent - a->base[i].bytes_sent;
        loc[2] += s.compressed - a->base[i].compressed;
    }
    loc[3] = a->bytes;
    MPI_Reduce(loc, tot, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, a->comm);
    double t[2] = {a->t_run, a->t_comm}, tmax[2];
    MPI_Reduce(t, tmax, 2, MPI_DOUBLE, MPI_MAX, 0, a->comm);
    unsigned long long calls = 0;
    MPI_Reduce(&a->calls, &calls, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, a->comm);
    ZMPI_Config cfg;
    int have = ZMPI_Comm_get_config(a->comm, &cfg) == MPI_SUCCESS;
    int on = app_compresses(a);
    if (a->rank == 0) {
        char eb[64] = "null";
        if (on && have && cfg.eb_mode != ZMPI_EB_NONE)
            json_num(eb, sizeof eb, cfg.eb);
        const char *mode = !on || !have || cfg.eb_mode == ZMPI_EB_NONE ? "none"
                           : cfg.eb_mode == ZMPI_EB_ABS                 ? "abs"
                                                                        : "rel";
        printf("{\"app\": \"%s\", \"ranks\": %d, \"api\": \"%s\", \"preload\": %s, \"codec\": \"%s\", "
               "\"eb_mode\": \"%s\", \"eb\": %s, \"iters\": %d, \"time_s\": %.9g, \"comm_s\": %.9g, "
               "\"bytes\": %llu, \"bytes_raw\": %llu, \"bytes_sent\": %llu, \"ratio\": %.6g, "
               "\"compressed_calls\": %llu, \"calls\": %llu, \"quality\": {%s}, \"quality_ok\": %s, "
               "\"rule\": \"%s\"}\n",
               a->name, a->size, a->zmpi ? "zmpi" : "mpi", a->preload ? "true" : "false",
               on && have ? zmpi_codec_name(cfg.codec) : "none", mode, eb, a->iters, tmax[0], tmax[1], tot[3],
               tot[0], tot[1], tot[1] ? (double)tot[0] / (double)tot[1] : 1.0, tot[2], calls, a->quality,
               a->quality_ok < 0 ? "null" : a->quality_ok ? "true" : "false", a->rule ? a->rule : "");
        fflush(stdout);
    }
    int ok = a->quality_ok;
    MPI_Bcast(&ok, 1, MPI_INT, 0, a->comm);
    for (int i = a->ncomms - 1; i >= 0; i--)
        MPI_Comm_free(&a->comms[i]);
    MPI_Finalize();
    return ok == 0 ? 1 : 0;
}
