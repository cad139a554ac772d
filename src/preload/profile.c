/*
 * The profile core of libzmpi_preload.so: counters, byte accounting and the
 * report that MPI_Finalize writes when ZMPI_REPORT=DIR is set.
 */
#define _POSIX_C_SOURCE 200809L

#include "preload/profile.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zmpi/zmpi.h>

#include "preload/preload.h"
#include "preload_gen.h"

/* The process state of the preload library. An interposer has exactly one
 * instance per process (the dynamic linker loads libzmpi_preload.so once and
 * its MPI_ symbols are the ones the whole program calls), so its state is
 * this one static struct; libzmpi and libzmpi_mpi keep no mutable globals. */
static struct {
    _Atomic unsigned long long calls[ZP_NCALLS];
    _Atomic unsigned long long ns[ZP_NCALLS];
    _Atomic unsigned long long bytes[ZP_NCALLS];
    atomic_int off;          /* MPI_Pcontrol(0): calls are not recorded */
    _Atomic uint64_t t_init; /* zp_clock() when MPI_Init(_thread) returned; 0 before */
} zp;

uint64_t zp_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void zp_record(int call, uint64_t ns, unsigned long long bytes)
{
    if (call < 0 || call >= ZP_NCALLS || atomic_load_explicit(&zp.off, memory_order_relaxed))
        return;
    atomic_fetch_add_explicit(&zp.calls[call], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&zp.ns[call], ns, memory_order_relaxed);
    if (bytes)
        atomic_fetch_add_explicit(&zp.bytes[call], bytes, memory_order_relaxed);
}

void zp_set_profiling(int on)
{
    atomic_store(&zp.off, !on);
}

void zp_mark_init(void)
{
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&zp.t_init, &zero, zp_clock());
}

unsigned long long zp_bytes(int count, MPI_Datatype datatype)
{
    MPI_Count size = 0;
    if (count <= 0 || datatype == MPI_DATATYPE_NULL || PMPI_Type_size_x(datatype, &size) != MPI_SUCCESS ||
        size <= 0)
        return 0;
    return (unsigned long long)count * (unsigned long long)size;
}

/* The size of comm, or of its remote group for an intercommunicator; 0 on error. */
static int group_size(MPI_Comm comm)
{
    int inter = 0, n = 0;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return 0;
    if ((inter ? PMPI_Comm_remote_size(comm, &n) : PMPI_Comm_size(comm, &n)) != MPI_SUCCESS)
        return 0;
    return n;
}

unsigned long long zp_bytes_n(int count, MPI_Datatype datatype, MPI_Comm comm)
{
    return zp_bytes(count, datatype) * (unsigned long long)group_size(comm);
}

unsigned long long zp_bytes_v(const int counts[], MPI_Datatype datatype, MPI_Comm comm)
{
    unsigned long long sum = 0;
    int n = counts ? group_size(comm) : 0;
    for (int i = 0; i < n; i++)
        sum += zp_bytes(counts[i], datatype);
    return sum;
}

int zp_is_root(int root, MPI_Comm comm)
{
    int inter = 0, rank = -1;
    if (root == MPI_ROOT)
        return 1;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return 0;
    return PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS && rank == root;
}

/* ---- the report ---- */

/* The command line from /proc/self/cmdline, arguments separated by spaces
 * (malloc'd; NULL if unreadable), and in *exe the start of the program's
 * base name within it (up to the first space). */
static char *command_line(size_t *exe_len, const char **exe)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    size_t cap = 4096, n = 0;
    char *s = f ? malloc(cap) : NULL;
    while (s) {
        n += fread(s + n, 1, cap - 1 - n, f);
        if (n < cap - 1)
            break;
        char *t = realloc(s, cap * 2);
        if (!t) {
            free(s);
            s = NULL;
            break;
        }
        s = t;
        cap *= 2;
    }
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
    *exe_len = (size_t)(s + first - base);
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\0')
            s[i] = ' ';
    return s;
}

static void json_string(FILE *f, const char *s, size_t len)
{
    fputc('"', f);
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* The zmpi statistics of MPI_COMM_WORLD that the report carries. */
enum { ZS_CALLS, ZS_COMPRESSED, ZS_BYTES_RAW, ZS_BYTES_SENT, ZS_N };
static const char *const zs_names[ZS_N] = {"calls", "compressed", "bytes_raw", "bytes_sent"};

/* What the ranks sum (and rank 0 writes): unsigned counters in u, seconds
 * in d, each one array for one reduction. */
enum { U_CALLS = 0, U_BYTES = ZP_NCALLS, U_ZS = 2 * ZP_NCALLS, U_N = 2 * ZP_NCALLS + ZS_N };
enum { D_TIME = 0, D_APP = ZP_NCALLS, D_MPI = ZP_NCALLS + 1, D_N = ZP_NCALLS + 2 };
typedef struct {
    unsigned long long u[U_N];
    double d[D_N];
    double app_max; /* the longest rank's application time */
} totals;

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

static int write_report(const char *dir, int nranks, const totals *t)
{
    const char *exe = "unknown";
    size_t exe_len = strlen(exe);
    char *cmd = command_line(&exe_len, &exe);
    int len = snprintf(NULL, 0, "%s/%.*s.%d.%ld.zmpi.json", dir, (int)exe_len, exe, nranks, (long)getpid());
    char *path = len > 0 ? malloc((size_t)len + 1) : NULL;
    FILE *f = NULL;
    int rc = MPI_SUCCESS;
    if (path) {
        snprintf(path, (size_t)len + 1, "%s/%.*s.%d.%ld.zmpi.json", dir, (int)exe_len, exe, nranks,
                 (long)getpid());
        if (make_dirs(dir) == 0)
            f = fopen(path, "w");
    }
    if (!f) {
        fprintf(stderr, "zmpi: ZMPI_REPORT=%s: cannot write %s: %s\n", dir, path ? path : "the report",
                path ? strerror(errno) : "out of memory");
        free(path);
        free(cmd);
        return MPI_ERR_IO;
    }
    fprintf(f, "{\"version\": 1, \"command\": ");
    json_string(f, cmd ? cmd : "", cmd ? strlen(cmd) : 0);
    fprintf(f, ", \"ranks\": %d, \"app_time_s\": %.9g, \"app_time_max_s\": %.9g, \"mpi_time_s\": %.9g,\n",
            nranks, t->d[D_APP], t->app_max, t->d[D_MPI]);
    fprintf(f, " \"zmpi\": {\"comm\": \"MPI_COMM_WORLD\"");
    for (int k = 0; k < ZS_N; k++)
        fprintf(f, ", \"%s\": %llu", zs_names[k], t->u[U_ZS + k]);
    fprintf(f, "},\n \"calls\": [");
    const char *sep = "";
    for (int i = 0; i < ZP_NCALLS; i++) {
        if (!t->u[U_CALLS + i])
            continue;
        fprintf(f, "%s\n  {\"call\": \"%s\", \"count\": %llu, \"time_s\": %.9g, \"bytes\": %llu}", sep,
                zp_call_names[i], t->u[U_CALLS + i], t->d[D_TIME + i], t->u[U_BYTES + i]);
        sep = ",";
    }
    fprintf(f, "\n ]}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "zmpi: ZMPI_REPORT=%s: cannot write %s: %s\n", dir, path, strerror(errno));
        rc = MPI_ERR_IO;
    }
    free(path);
    free(cmd);
    return rc;
}

int zp_report(void)
{
    const uint64_t t_end = zp_clock();
    int rank = 0, nranks = 1, want = 0, rc;
    if (PMPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS ||
        PMPI_Comm_size(MPI_COMM_WORLD, &nranks) != MPI_SUCCESS)
        return MPI_SUCCESS;
    /* rank 0's environment decides, so that every rank joins the reductions or none */
    const char *dir = getenv("ZMPI_REPORT");
    want = dir && *dir;
    if (PMPI_Bcast(&want, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS || !want)
        return MPI_SUCCESS;

    totals mine, sum;
    memset(&mine, 0, sizeof mine);
    memset(&sum, 0, sizeof sum);
    const uint64_t t_init = atomic_load(&zp.t_init);
    mine.d[D_APP] = t_init ? (double)(t_end - t_init) * 1e-9 : 0.0;
    for (int i = 0; i < ZP_NCALLS; i++) {
        mine.u[U_CALLS + i] = atomic_load(&zp.calls[i]);
        mine.u[U_BYTES + i] = atomic_load(&zp.bytes[i]);
        mine.d[D_TIME + i] = (double)atomic_load(&zp.ns[i]) * 1e-9;
        if (i != ZP_MPI_Init && i != ZP_MPI_Init_thread) /* before the application's time */
            mine.d[D_MPI] += mine.d[D_TIME + i];
    }
    ZMPI_Stats st;
    if (ZMPI_Comm_get_stats(MPI_COMM_WORLD, &st) == MPI_SUCCESS) {
        mine.u[U_ZS + ZS_CALLS] = st.calls;
        mine.u[U_ZS + ZS_COMPRESSED] = st.compressed;
        mine.u[U_ZS + ZS_BYTES_RAW] = st.bytes_raw;
        mine.u[U_ZS + ZS_BYTES_SENT] = st.bytes_sent;
    }
    rc = PMPI_Reduce(mine.u, sum.u, U_N, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(mine.d, sum.d, D_N, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = PMPI_Reduce(&mine.d[D_APP], &sum.app_max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS || rank != 0)
        return rc;
    rc = write_report(dir, nranks, &sum);
    if (rc != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, rc);
    return rc;
}
