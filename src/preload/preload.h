/*
 * preload/preload.h - the parts of libzmpi_preload.so that share its
 * process state: the call sites (profile.c), their resolution to source
 * lines (site.c), the advisor's samples (advise.c) and the reports
 * (report.c, report_text.c).
 */
#ifndef ZMPI_PRELOAD_PRELOAD_H
#define ZMPI_PRELOAD_PRELOAD_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include <zmpi/zmpi.h>

/* The advisor's ladder: rung 0 is the run's own setting (its codec and
 * bound, or lossless zstd without a bound), rungs 1..5 fzl at REL 1e-2 ...
 * 1e-6. */
#define ZP_NRUNG 6
/* Why zmpi sent a call's data plain (ZMPI_Stats fallback counters). */
enum { ZP_FB_TYPE, ZP_FB_SMALL, ZP_FB_CONFIG, ZP_FB_MODEL, ZP_FB_CODEC, ZP_FB_NODE, ZP_NFB };
extern const char *const zp_fallback_names[ZP_NFB];
/* The networks of the advisor's predictions. */
#define ZP_NNET 3
typedef struct {
    const char *name;
    double bw, lat; /* bytes/s, seconds per message */
} zp_net;
extern const zp_net zp_nets[ZP_NNET];

/* What one rank measured at one call site (zp_site_read). */
typedef struct {
    unsigned long long count, ns, ns_max, ns_min; /* calls and their time */
    unsigned long long sends, bytes, bytes_max, bytes_min; /* calls that asked to send, and their bytes */
    unsigned long long wire;       /* bytes sent: compressed size of compressed ones, raw of the rest */
    unsigned long long compressed; /* calls whose data went compressed */
    unsigned long long fb[ZP_NFB];
    unsigned long long ns_comp, ns_decomp;
    unsigned long long flt;   /* calls whose data zmpi can compress (floating point) */
    unsigned long long elems; /* elements per destination, summed over the sending calls */
    int nranks;               /* the size of the last call's communicator */
    int dtsize;               /* 4 or 8: the floating-point type of sampled data; 0 if none */
    /* the advisor's samples, per rung: raw and compressed bytes, codec
     * nanoseconds, and the largest error over the rung's bound */
    unsigned nsamples;
    double raw[ZP_NRUNG], comp[ZP_NRUNG], ns_c[ZP_NRUNG], ns_d[ZP_NRUNG], err[ZP_NRUNG];
} zp_measure;

/* A site of this process: the MPI function and the program's address. */
typedef struct {
    int call;
    void *addr;
    zp_measure m;
} zp_local_site;

/* The sites this process recorded (program sites only, not the language
 * bindings'), copied out; *n their number. NULL with *n 0 if none or out of
 * memory. */
zp_local_site *zp_sites_snapshot(size_t *n);
/* The per-MPI-function totals of this process: arrays of ZP_NCALLS. */
void zp_call_totals(unsigned long long *calls, unsigned long long *bytes, double *seconds);
/* MPI_Pcontrol(2): forgets every site's counters. */
void zp_sites_reset(void);

/* MPI_Pcontrol: on = 0 stops recording calls, any other value resumes. */
void zp_set_profiling(int on);
/* MPI_Init(_thread), after PMPI_Init: marks the start of the application's
 * time, reads the settings of the profile (compression on or profile-only,
 * samples) and agrees across MPI_COMM_WORLD whether the ZMPI_ paths run.
 * Collective (one PMPI_Allreduce). */
int zp_init(void);
/* 1 if the ZMPI_ paths run (some rank compresses; not profile-only). */
int zp_routing(void);
/* 1 in profile-only mode (ZMPI_PROFILE_ONLY=1). */
int zp_profile_only(void);
/* seconds since zp_init (0 before) */
double zp_app_time(void);
/* 1 once zp_init ran (MPI_Init or MPI_Init_thread went through the preload). */
int zp_init_seen(void);
/* A call (an enum zp_call, or -1 at exit) while MPI_Init was not seen but
 * MPI is initialised: MPI was initialised by a binding that does not call
 * the C MPI_Init (Fortran mpi_f08 under MPICH, Fortran under Open MPI), so
 * nothing is compressed and no report is written. Said once on stderr, by
 * rank 0 (as the launcher tells), when the environment has a ZMPI_ setting. */
void zp_unseen_init(int call);
/* 1 if the environment has a ZMPI_ variable (the user asked zmpi for something). */
int zp_has_settings(void);
/* This process's rank as the launcher exports it (PMI_RANK, ...), or NULL. */
const char *zp_env_rank(void);
/* In MPI_Finalize, before the report (collective over MPI_COMM_WORLD):
 * says which entries of ZMPI_INCLUDE_SITES / ZMPI_EXCLUDE_SITES matched no
 * call site. */
void zp_finalize_checks(void);

/* One sampled message, measured by the advisor on every rung. */
typedef struct {
    int dtsize; /* 4 or 8 */
    double raw[ZP_NRUNG], comp[ZP_NRUNG], ns_c[ZP_NRUNG], ns_d[ZP_NRUNG], err[ZP_NRUNG];
} zp_sample;
/* 1 if the nth sending call of a site (1, 2, ...) is sampled: the 1st, 2nd,
 * 4th, 8th ... while fewer than ZMPI_SAMPLES (default 8) were taken. */
int zp_sample_due(unsigned long long nth, unsigned taken, int max);
/* Measures the data of one sending call (at most its first 1 MiB, packed
 * if the datatype is derived) on every rung: 1 and *s filled, or 0 if the
 * data is not floating point zmpi compresses, or under 1 KiB. */
int zp_sample_take(const void *buf, int count, MPI_Datatype datatype, MPI_Comm comm, zp_sample *s);
/* The settings of a rung (rung 0: the run's codec and bound, or lossless
 * zstd without a bound); its name for the report in name (cap bytes). */
void zp_rung_setting(int rung, zmpi_codec *codec, zmpi_eb_mode *mode, double *eb, char *name, size_t cap);
/* The settings the preload read at MPI_Init (its own environment). */
const ZMPI_Config *zp_config(void);

/* A call site's location: file (base name) and line of the source, or the
 * object's base name and the offset; the function. */
typedef struct {
    char file[96];
    int line;
    char func[96];
    char path[256]; /* the source file as the debug information names it ("" without it) */
} zp_location;
/* Resolves n program addresses with the debug information of their objects
 * (libdw); without it, the object's name and the offset. */
void zp_locate(void *const *addrs, size_t n, zp_location *locs);
/* The program address an MPI call came from: ra itself, or, when ra lies in
 * an MPI language binding (MPICH's Fortran library calls the C MPI_
 * functions), the first frame of the stack outside it. */
void *zp_caller(void *ra, int *binding);

/* The report: collective over MPI_COMM_WORLD. At MPI_Finalize (final = 1)
 * and MPI_Pcontrol(3 / 4); when rank 0's environment has ZMPI_REPORT=DIR,
 * rank 0 writes DIR/<exe>.<nranks>.<pid>.zmpi.txt (mpiP's sections, then
 * zmpi's) and .zmpi.json with the same data; a report made before the final
 * one is numbered: <exe>.<nranks>.<pid>.<k>.zmpi.txt. Returns MPI_SUCCESS,
 * an MPI error of the gathering, or MPI_ERR_IO (rank 0, report not written:
 * the message is on stderr and the error is raised through MPI_COMM_WORLD's
 * error handler). */
int zp_report(int final, int verbose);
/* 0 for the first report of the process, then 1, 2, ... */
int zp_report_index(void);

/* One site of the whole run, merged over the ranks by location (report.c). */
typedef struct {
    int id;
    int call;
    zp_location loc;
    zp_measure all;    /* summed over the ranks (max / min over them) */
    int first, nrank;  /* its per-rank rows: rows[first .. first + nrank) */
    double time_sq;    /* sum over ranks of (rank time)^2, for the COV */
    /* the advisor */
    int advised;           /* 0: no advice (the call sends nothing) */
    const char *verdict;   /* compress, not worth it, too small, not floating point, pass-through */
    const char *verdict_network; /* the network the verdict was decided on: "10GbE" or "ZMPI_NET_BW" */
    double ratio, max_err_over_eb, saving_s[ZP_NNET];
    double rung_ratio[ZP_NRUNG], rung_saving_s[ZP_NRUNG][ZP_NNET];
} zp_gsite;
typedef struct {
    int rank;
    int site; /* index into the sites */
    zp_measure m;
} zp_grow;
typedef struct {
    int nranks;
    char *command;
    const char *exe; /* base name, within command */
    int exe_len;
    double *app, *mpi; /* per rank, seconds */
    char *hosts;       /* per rank, MPI_MAX_PROCESSOR_NAME bytes each */
    unsigned long long *calls, *call_bytes; /* per MPI function, summed over the ranks */
    double *call_time;
    unsigned long long zs[4]; /* zmpi's MPI_COMM_WORLD statistics: calls, compressed, bytes raw, bytes sent */
    int nodes;                /* the nodes of MPI_COMM_WORLD's ranks as zmpi saw them (0: not learned) */
    const char *dir;
    zp_gsite *sites;
    int nsites;
    zp_grow *rows; /* per site and rank, site by site */
    int nrows;
    ZMPI_Config cfg; /* the collector's settings */
    int profile_only;
    int routing; /* the ZMPI_ paths ran (some rank compresses) */
    char start[32], stop[32];
    long pid;
} zp_run;
/* report_text.c: mpiP's sections and zmpi's, and the JSON. */
void zp_write_text(FILE *f, const zp_run *r, int verbose);
void zp_write_json(FILE *f, const zp_run *r);
/* advise.c: fills each site's advice from its measures. */
void zp_advise_sites(zp_run *r);

#endif /* ZMPI_PRELOAD_PRELOAD_H */
