/*
 * The report of libzmpi_preload.so: every rank resolves its call sites to
 * source locations and sends them to rank 0 (PMPI_ calls only), which merges
 * them by location over the ranks, asks the advisor, and writes the text
 * (mpiP's sections, then zmpi's) and JSON files.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/preload.h"
#include "preload/profile.h"
#include "preload_gen.h"

/* One site of one rank as sent to the collector. */
typedef struct {
    int call, rank;
    zp_location loc;
    zp_measure m;
} zp_rec;

/* This rank's sites with their locations (malloc'd, *n of them). */
static zp_rec *local_records(int rank, int *n)
{
    size_t k = 0;
    zp_local_site *s = zp_sites_snapshot(&k);
    void **addrs = malloc(sizeof *addrs * (k ? k : 1));
    zp_location *locs = malloc(sizeof *locs * (k ? k : 1));
    zp_rec *out = malloc(sizeof *out * (k ? k : 1));
    if (!s || !addrs || !locs || !out) {
        free(s), free(addrs), free(locs), free(out);
        *n = 0;
        return NULL;
    }
    for (size_t i = 0; i < k; i++)
        addrs[i] = s[i].addr;
    zp_locate(addrs, k, locs);
    for (size_t i = 0; i < k; i++) {
        memset(&out[i], 0, sizeof out[i]);
        out[i].call = s[i].call;
        out[i].rank = rank;
        out[i].loc = locs[i];
        out[i].m = s[i].m;
    }
    free(s), free(addrs), free(locs);
    *n = (int)k;
    return out;
}

/* Gathers every rank's records at rank 0 (*all, *nall there). */
static int gather_records(int rank, int nranks, zp_rec **all, int *nall)
{
    int n = 0, rc;
    zp_rec *mine = local_records(rank, &n);
    int bytes = n * (int)sizeof(zp_rec);
    int *counts = rank == 0 ? calloc((size_t)nranks, sizeof(int)) : NULL;
    int *displs = rank == 0 ? calloc((size_t)nranks, sizeof(int)) : NULL;
    *all = NULL;
    *nall = 0;
    rc = PMPI_Gather(&bytes, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    long long total = 0;
    for (int i = 0; rank == 0 && counts && displs && rc == MPI_SUCCESS && i < nranks; i++) {
        displs[i] = (int)(total < INT_MAX ? total : 0);
        total += counts[i];
    }
    if (rank == 0 && (!counts || !displs || total > INT_MAX || !(*all = malloc((size_t)total + 1)))) {
        for (int i = 0; counts && i < nranks; i++) /* receive nothing: the ranks still send */
            counts[i] = 0;
        total = 0;
    }
    if (rc == MPI_SUCCESS)
        rc = PMPI_Gatherv(mine, bytes, MPI_BYTE, *all, counts, displs, MPI_BYTE, 0, MPI_COMM_WORLD);
    *nall = (int)(total / (long long)sizeof(zp_rec));
    free(mine), free(counts), free(displs);
    return rc;
}

static int rec_cmp(const void *pa, const void *pb)
{
    const zp_rec *a = pa, *b = pb;
    int c = strcmp(a->loc.file, b->loc.file);
    if (!c)
        c = (a->loc.line > b->loc.line) - (a->loc.line < b->loc.line);
    if (!c)
        c = strcmp(zp_call_names[a->call], zp_call_names[b->call]);
    if (!c)
        c = strcmp(a->loc.func, b->loc.func);
    if (!c)
        c = (a->rank > b->rank) - (a->rank < b->rank);
    return c;
}

static int same_site(const zp_rec *a, const zp_rec *b)
{
    return a->call == b->call && a->loc.line == b->loc.line && !strcmp(a->loc.file, b->loc.file) &&
           !strcmp(a->loc.func, b->loc.func);
}

/* Adds measure b into a: sums, maxima, minima (of non-empty ones). */
static void merge_measure(zp_measure *a, const zp_measure *b)
{
    unsigned long long ns_min = a->count && b->count ? (a->ns_min < b->ns_min ? a->ns_min : b->ns_min)
                                                     : a->count ? a->ns_min : b->ns_min;
    unsigned long long by_min = a->sends && b->sends ? (a->bytes_min < b->bytes_min ? a->bytes_min : b->bytes_min)
                                                     : a->sends ? a->bytes_min : b->bytes_min;
    a->ns_min = ns_min;
    a->bytes_min = by_min;
    a->count += b->count, a->ns += b->ns, a->sends += b->sends, a->bytes += b->bytes, a->wire += b->wire;
    a->ns_max = b->ns_max > a->ns_max ? b->ns_max : a->ns_max;
    a->bytes_max = b->bytes_max > a->bytes_max ? b->bytes_max : a->bytes_max;
    a->compressed += b->compressed, a->ns_comp += b->ns_comp, a->ns_decomp += b->ns_decomp;
    a->flt += b->flt, a->elems += b->elems;
    for (int k = 0; k < ZP_NFB; k++)
        a->fb[k] += b->fb[k];
    a->nranks = b->nranks > a->nranks ? b->nranks : a->nranks;
    a->dtsize = b->dtsize > a->dtsize ? b->dtsize : a->dtsize;
    a->nsamples += b->nsamples;
    for (int r = 0; r < ZP_NRUNG; r++) {
        a->raw[r] += b->raw[r], a->comp[r] += b->comp[r], a->ns_c[r] += b->ns_c[r], a->ns_d[r] += b->ns_d[r];
        a->err[r] = b->err[r] > a->err[r] ? b->err[r] : a->err[r];
    }
}

/* Merges the sorted records into sites (by location) and rows (by site
 * and rank). */
static int merge_records(zp_rec *recs, int n, zp_run *r)
{
    qsort(recs, (size_t)n, sizeof *recs, rec_cmp);
    r->sites = calloc((size_t)(n ? n : 1), sizeof *r->sites);
    r->rows = calloc((size_t)(n ? n : 1), sizeof *r->rows);
    if (!r->sites || !r->rows)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++) {
        if (i == 0 || !same_site(&recs[i], &recs[i - 1])) {
            zp_gsite *g = &r->sites[r->nsites++];
            g->id = r->nsites;
            g->call = recs[i].call;
            g->loc = recs[i].loc;
            g->first = r->nrows;
        }
        zp_gsite *g = &r->sites[r->nsites - 1];
        if (g->nrank == 0 || r->rows[r->nrows - 1].rank != recs[i].rank) {
            r->rows[r->nrows].rank = recs[i].rank;
            r->rows[r->nrows].site = r->nsites - 1;
            r->nrows++;
            g->nrank++;
        }
        merge_measure(&r->rows[r->nrows - 1].m, &recs[i].m);
        merge_measure(&g->all, &recs[i].m);
    }
    for (int i = 0; i < r->nsites; i++) {
        zp_gsite *g = &r->sites[i];
        for (int j = g->first; j < g->first + g->nrank; j++) {
            double t = (double)r->rows[j].m.ns * 1e-9;
            g->time_sq += t * t;
        }
    }
    return MPI_SUCCESS;
}

/* ---- files ---- */

/* mkdir -p: creates dir and its missing parents; 0, or -1 with errno. */
static int make_dirs(const char *dir)
{
    size_t n = strlen(dir);
    char *p = malloc(n + 1);
    int rc = 0;
    if (!p)
        return -1;
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n && rc == 0; i++) {
        if (p[i] != '/' && p[i] != '\0')
            continue;
        char c = p[i];
        p[i] = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            rc = -1;
        p[i] = c;
    }
    free(p);
    return rc;
}

/* The command line from /proc/self/cmdline, arguments separated by spaces
 * (malloc'd; NULL if unreadable), and in *exe the start of the program's
 * base name within it (up to the first space). */
static char *command_line(int *exe_len, const char **exe)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    size_t cap = 1 << 16, n = 0;
    char *s = f ? malloc(cap) : NULL;
    if (s)
        n = fread(s, 1, cap - 1, f);
    if (f)
        fclose(f);
    if (!s || n == 0) {
        free(s);
        return NULL;
    }
    while (n > 0 && s[n - 1] == '\0')
        n--;
    s[n] = '\0';
    size_t first = strlen(s); /* argv[0] */
    const char *base = s;
    for (size_t i = 0; i < first; i++)
        if (s[i] == '/')
            base = s + i + 1;
    *exe = base;
    *exe_len = (int)(s + first - base);
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0')
            s[i] = ' ';
    return s;
}

/* Writes one report file, DIR/EXE.RANKS.PID[-K][.INDEX].zmpi.EXT: never over
 * an existing file (a report of an earlier run whose rank 0 had the same
 * process id): K = 2, 3, ... then, starting at *k (the suffix the other file
 * of this report took; updated). */
static int write_one(const char *dir, const zp_run *r, int index, const char *ext, int verbose, int *k)
{
    char path[4096] = "(its files)";
    char num[24] = "", sfx[16] = "";
    FILE *f = NULL;
    if (index > 0)
        snprintf(num, sizeof num, ".%d", index);
    errno = 0;
    for (int fd = -1; make_dirs(dir) == 0 && *k < 10000; ++*k) {
        if (*k > 1)
            snprintf(sfx, sizeof sfx, "-%d", *k);
        snprintf(path, sizeof path, "%s/%.*s.%d.%ld%s%s.zmpi.%s", dir, r->exe_len, r->exe, r->nranks, r->pid, sfx,
                 num, ext);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 && !(f = fdopen(fd, "w")))
            close(fd);
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (f) {
        if (!strcmp(ext, "txt"))
            zp_write_text(f, r, verbose);
        else
            zp_write_json(f, r);
    }
    if (!f || fclose(f) != 0) {
        fprintf(stderr, "zmpi: ZMPI_REPORT=%s: cannot write %s: %s\n", dir, path, strerror(errno));
        return MPI_ERR_IO;
    }
    return MPI_SUCCESS;
}

static void time_string(time_t t, char *s, size_t cap)
{
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(s, cap, "%Y %m %d %H:%M:%S", &tm);
}

/* Rank 0: everything but the sites. */
static int run_header(zp_run *r, int nranks)
{
    r->nranks = nranks;
    r->pid = (long)getpid();
    r->exe = "unknown";
    r->exe_len = 7;
    r->command = command_line(&r->exe_len, &r->exe);
    r->cfg = *zp_config();
    r->profile_only = zp_profile_only();
    r->routing = zp_routing();
    time_t now = time(NULL);
    time_string(now, r->stop, sizeof r->stop);
    time_string(now - (time_t)zp_app_time(), r->start, sizeof r->start);
    return MPI_SUCCESS;
}

static void free_run(zp_run *r)
{
    free(r->command), free(r->app), free(r->mpi), free(r->hosts), free(r->sites), free(r->rows);
    free(r->calls), free(r->call_bytes), free(r->call_time);
}

/* Per rank: application and MPI time, host name; summed: the per-function
 * totals and zmpi's statistics of MPI_COMM_WORLD. */
static int gather_ranks(zp_run *r, int rank, int nranks)
{
    unsigned long long calls[ZP_NCALLS], bytes[ZP_NCALLS], zs[4] = {0, 0, 0, 0};
    double secs[ZP_NCALLS], t[2] = {zp_app_time(), 0};
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    zp_call_totals(calls, bytes, secs);
    for (int i = 0; i < ZP_NCALLS; i++)
        if (i != ZP_MPI_Init && i != ZP_MPI_Init_thread) /* before the application's time */
            t[1] += secs[i];
    ZMPI_Stats st;
    if (ZMPI_Comm_get_stats(MPI_COMM_WORLD, &st) == MPI_SUCCESS) {
        zs[0] = st.calls, zs[1] = st.compressed, zs[2] = st.bytes_raw, zs[3] = st.bytes_sent;
        r->nodes = st.nodes;
    }
    PMPI_Get_processor_name(host, &len);
    if (rank == 0) {
        r->app = calloc((size_t)nranks, sizeof(double));
        r->mpi = calloc((size_t)nranks, sizeof(double));
        r->hosts = calloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
        r->calls = calloc(ZP_NCALLS, sizeof(unsigned long long));
        r->call_bytes = calloc(ZP_NCALLS, sizeof(unsigned long long));
        r->call_time = calloc(ZP_NCALLS, sizeof(double));
        if (!r->app || !r->mpi || !r->hosts || !r->calls || !r->call_bytes || !r->call_time)
            return MPI_ERR_NO_MEM; /* (the other ranks then wait in the gather: out of memory is fatal) */
    }
    double *times = rank == 0 ? malloc(sizeof(double) * 2 * (size_t)nranks) : NULL;
    int rc = rank == 0 && !times ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    if (rc == MPI_SUCCESS)
        rc = PMPI_Gather(t, 2, MPI_DOUBLE, times, 2, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    for (int i = 0; rank == 0 && rc == MPI_SUCCESS && i < nranks; i++)
        r->app[i] = times[2 * i], r->mpi[i] = times[2 * i + 1];
    free(times);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Gather(host, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, r->hosts, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, 0,
                         MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(calls, r->calls, ZP_NCALLS, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(bytes, r->call_bytes, ZP_NCALLS, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(secs, r->call_time, ZP_NCALLS, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(zs, r->zs, 4, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    return rc;
}

int zp_report(int final, int verbose)
{
    int rank = 0, nranks = 1, want = 0, rc;
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS ||
        PMPI_Comm_size(MPI_COMM_WORLD, &nranks) != MPI_SUCCESS)
        return MPI_SUCCESS;
    /* rank 0's environment decides, so that every rank joins the gathering or none */
    const char *dir = getenv("ZMPI_REPORT");
    want = dir && *dir;
    if (PMPI_Bcast(&want, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS || !want)
        return MPI_SUCCESS;
    zp_run run;
    memset(&run, 0, sizeof run);
    run.dir = dir;
    rc = gather_ranks(&run, rank, nranks);
    zp_rec *recs = NULL;
    int nrecs = 0;
    if (rc == MPI_SUCCESS)
        rc = gather_records(rank, nranks, &recs, &nrecs);
    if (rc == MPI_SUCCESS && rank == 0) {
        run_header(&run, nranks);
        rc = merge_records(recs ? recs : &(zp_rec){0}, recs ? nrecs : 0, &run);
    }
    free(recs);
    if (rc == MPI_SUCCESS && rank == 0) {
        zp_advise_sites(&run);
        int index = final ? 0 : zp_report_index() + 1;
        int k = 1;
        rc = write_one(dir, &run, index, "txt", verbose, &k);
        if (rc == MPI_SUCCESS)
            rc = write_one(dir, &run, index, "json", verbose, &k);
    }
    free_run(&run);
    if (rc != MPI_SUCCESS && rank == 0)
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, rc);
    return rc;
}
