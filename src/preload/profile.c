/*
 * The profile core of libzmpi_preload.so: the process state, the call-site
 * table every wrapper updates (zp_begin / zp_end), and byte accounting.
 */
#define _POSIX_C_SOURCE 200809L

#include "preload/profile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <zmpi/codec.h>
#include <zmpi/zmpi.h>

#include "preload/preload.h"
#include "preload_gen.h"

extern char **environ;

/* One entry of ZMPI_INCLUDE_SITES / ZMPI_EXCLUDE_SITES: FILE:LINE, and
 * whether some call site matched it. */
typedef struct {
    char file[128];
    int line;
    atomic_int matched;
} zp_site_entry;

typedef struct {
    const char *name; /* the setting */
    zp_site_entry *e;
    int n;
} zp_site_list;

/* Sites the table holds; further ones are counted only per MPI function. */
#define ZP_MAXSITES 4096
#define ZP_ADDR_MASK ((UINT64_C(1) << 48) - 1)

/* One call site: its key is (call + 1) << 48 | address, 0 while free. The
 * minima are stored complemented (~value), so that 0 is "none yet" and the
 * minimum is a maximum. The sample sums are guarded by zp.sample_lock. */
typedef struct {
    _Atomic uint64_t key;
    atomic_int kind; /* 0 not known yet, 1 program address, 2 inside an MPI language binding */
    _Atomic unsigned long long count, ns, ns_max, ns_min_c, sends, bytes, bytes_max, bytes_min_c, wire, compressed,
        fb[ZP_NFB], ns_comp, ns_decomp, flt, elems, ns_sampling;
    atomic_int nranks, dtsize;
    atomic_int policy; /* ZMPI_INCLUDE_SITES / ZMPI_EXCLUDE_SITES: 0 not decided yet, 1 compress, 2 plain */
    atomic_uint nsamples; /* written under zp.sample_lock, read without it */
    double raw[ZP_NRUNG], comp[ZP_NRUNG], ns_c[ZP_NRUNG], ns_d[ZP_NRUNG], err[ZP_NRUNG];
} zp_slot;

/* The process state of the preload library. An interposer has exactly one
 * instance per process (the dynamic linker loads libzmpi_preload.so once and
 * its MPI_ symbols are the ones the whole program calls), so its state is
 * this one static struct; libzmpi and libzmpi_mpi keep no mutable globals. */
static struct {
    _Atomic unsigned long long calls[ZP_NCALLS];
    _Atomic unsigned long long ns[ZP_NCALLS];
    _Atomic unsigned long long bytes[ZP_NCALLS];
    zp_slot sites[ZP_MAXSITES];
    atomic_int off;          /* MPI_Pcontrol(0): calls are not recorded */
    atomic_int route;        /* the ZMPI_ paths run (compression configured on some rank) */
    int profile_only, samples;
    double budget; /* ZMPI_SAMPLE_BUDGET / 100: the share of the application's time sampling may take; 1: no limit */
    _Atomic unsigned long long sample_ns, sample_bytes; /* spent sampling so far, and the bytes sampled */
    unsigned char call_off[ZP_NCALLS]; /* ZMPI_CALLS / ZMPI_EXCLUDE_CALLS: sends that never compress */
    zp_site_list include_sites, exclude_sites;
    atomic_int unseen_warned; /* an MPI call came before MPI_Init was seen (said once) */
    ZMPI_Config cfg;
    pthread_mutex_t sample_lock;
    atomic_int reports;      /* reports written so far */
    _Atomic uint64_t t_init; /* zp_clock() when MPI_Init(_thread) returned; 0 before */
} zp = {.sample_lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t zp_clock(void)
{
#ifdef ZMPI_PRELOAD_WTIME /* built into a SimGrid SMPI program (bench/apps): the simulated clock */
    return (uint64_t)(PMPI_Wtime() * 1e9);
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

static void max_update(_Atomic unsigned long long *a, unsigned long long v)
{
    unsigned long long cur = atomic_load_explicit(a, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak_explicit(a, &cur, v, memory_order_relaxed, memory_order_relaxed))
        ;
}

static void add(_Atomic unsigned long long *a, unsigned long long v)
{
    atomic_fetch_add_explicit(a, v, memory_order_relaxed);
}

/* The slot of (call, addr), taken if new; NULL when the table is full. */
static zp_slot *slot_of(int call, void *addr)
{
    const uint64_t key = ((uint64_t)(call + 1) << 48) | ((uint64_t)(uintptr_t)addr & ZP_ADDR_MASK);
    const size_t h = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 52); /* 12 bits: ZP_MAXSITES */
    for (size_t i = 0; i < ZP_MAXSITES; i++) {
        zp_slot *s = &zp.sites[(h + i) & (ZP_MAXSITES - 1)];
        uint64_t k = atomic_load_explicit(&s->key, memory_order_acquire);
        if (k == 0 && atomic_compare_exchange_strong(&s->key, &k, key))
            return s;
        if (k == key)
            return s;
    }
    return NULL;
}

/* The site a call is counted at: its own, or for a call through an MPI
 * language binding the program's site above it. */
static zp_slot *site_of(int call, void *ra)
{
    zp_slot *s = slot_of(call, ra);
    if (!s)
        return NULL;
    int kind = atomic_load_explicit(&s->kind, memory_order_relaxed), binding = 0;
    void *caller = NULL;
    if (kind == 0 || kind == 2)
        caller = zp_caller(ra, &binding);
    if (kind == 0) {
        kind = binding ? 2 : 1;
        atomic_store_explicit(&s->kind, kind, memory_order_relaxed);
    }
    if (kind == 1)
        return s;
    zp_slot *up = slot_of(call, caller);
    if (up && atomic_load_explicit(&up->kind, memory_order_relaxed) == 0)
        atomic_store_explicit(&up->kind, 1, memory_order_relaxed);
    return up;
}

/* Parses a site list (FILE:LINE,...; checked at MPI_Init) into *l. */
static void site_list_parse(zp_site_list *l, const char *name)
{
    const char *v = getenv(name);
    memset(l, 0, sizeof *l);
    l->name = name;
    if (!v || !*v)
        return;
    int n = 1;
    for (const char *p = v; *p; p++)
        n += *p == ',';
    l->e = calloc((size_t)n, sizeof *l->e);
    for (const char *p = v; l->e && *p;) {
        size_t k = strcspn(p, ",");
        zp_site_entry *e = &l->e[l->n];
        snprintf(e->file, sizeof e->file, "%.*s", (int)(k < sizeof e->file ? k : sizeof e->file - 1), p);
        char *colon = strrchr(e->file, ':');
        if (colon) {
            *colon = '\0';
            e->line = atoi(colon + 1);
            l->n++;
        }
        p += k + (p[k] == ',');
    }
}

/* 1 if the path b ends with the path a at a component boundary ("f.c" and
 * "dir/f.c" end "/src/dir/f.c"; "r/f.c" does not). */
static int path_tail(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    return la <= lb && !strcmp(b + lb - la, a) && (la == lb || b[lb - la - 1] == '/');
}

/* 1 if a site entry's FILE names the source file `path` (as the debug
 * information has it, absolute or relative) or `base` (its base name):
 * either path ends with the other, "./" prefixes ignored. */
static int site_file_matches(const char *file, const char *path, const char *base)
{
    while (file[0] == '.' && file[1] == '/')
        file += 2;
    if (!*path)
        return !strcmp(file, base) || path_tail(base, file);
    while (path[0] == '.' && path[1] == '/')
        path += 2;
    return path_tail(file, path) || path_tail(path, file);
}

/* 1 if the list names the location; marks the entries that do. */
static int site_listed(zp_site_list *l, const zp_location *loc)
{
    int hit = 0;
    for (int i = 0; i < l->n; i++)
        if (l->e[i].line == loc->line && site_file_matches(l->e[i].file, loc->path, loc->file)) {
            atomic_store(&l->e[i].matched, 1);
            hit = 1;
        }
    return hit;
}

/* Whether a point-to-point send at this site compresses under the site
 * lists: decided at its first call (its location read from the debug
 * information once) and kept in the slot. */
static int site_compresses(zp_slot *s, void *addr)
{
    int p = atomic_load_explicit(&s->policy, memory_order_relaxed);
    if (p == 0) {
        zp_location loc;
        zp_locate(&addr, 1, &loc);
        int inc = !zp.include_sites.n || site_listed(&zp.include_sites, &loc);
        int exc = zp.exclude_sites.n && site_listed(&zp.exclude_sites, &loc);
        int on = inc && !exc;
        p = on ? 1 : 2;
        atomic_store_explicit(&s->policy, p, memory_order_relaxed);
    }
    return p == 1;
}

/* The point-to-point calls that send, which the site lists select. */
static int p2p_send(int call)
{
    switch (call) {
    case ZP_MPI_Send:
    case ZP_MPI_Ssend:
    case ZP_MPI_Isend:
    case ZP_MPI_Issend:
    case ZP_MPI_Sendrecv:
    case ZP_MPI_Sendrecv_replace:
#if MPI_VERSION >= 4
    case ZP_MPI_Send_c:
    case ZP_MPI_Ssend_c:
    case ZP_MPI_Isend_c:
    case ZP_MPI_Issend_c:
    case ZP_MPI_Sendrecv_c:
    case ZP_MPI_Sendrecv_replace_c:
#endif
        return 1;
    default: return 0;
    }
}

void zp_unseen_init(int call)
{
    int init = 0, first = 0;
    if (call == ZP_MPI_Init || call == ZP_MPI_Init_thread ||
        atomic_load_explicit(&zp.unseen_warned, memory_order_relaxed) || PMPI_Initialized(&init) != MPI_SUCCESS ||
        !init || !zp_has_settings() ||
        !atomic_compare_exchange_strong(&zp.unseen_warned, &first, 1))
        return;
    const char *r = zp_env_rank();
    if (!r || !strcmp(r, "0"))
        fprintf(stderr, "zmpi: libzmpi_preload.so did not see MPI_Init: this program's MPI calls do not all go "
                        "through the C MPI_ functions (Fortran mpi_f08 under MPICH, Fortran under Open MPI): "
                        "nothing is compressed and no report is written (docs/preload.md, \"Limits\")\n");
}

void zp_begin(zp_frame *f, int call, void *ra, MPI_Comm comm)
{
    f->call = call;
    f->ra = ra;
    f->comm = comm;
    f->slot = NULL;
    if (!atomic_load_explicit(&zp.t_init, memory_order_relaxed))
        zp_unseen_init(call);
    int routing = atomic_load_explicit(&zp.route, memory_order_relaxed);
    f->route = routing && !zp.call_off[call];
    if (f->route && (zp.include_sites.n || zp.exclude_sites.n) && p2p_send(call)) {
        zp_slot *s = site_of(call, ra);
        f->slot = s;
        f->route = s && site_compresses(s, (void *)(uintptr_t)(atomic_load(&s->key) & ZP_ADDR_MASK));
    }
    f->excluded = routing && !f->route;
    f->have_stats = f->route && comm != MPI_COMM_NULL && !atomic_load_explicit(&zp.off, memory_order_relaxed) &&
                    ZMPI_Comm_get_stats(comm, &f->before) == MPI_SUCCESS;
    f->t0 = zp_clock();
}

/* What zmpi did in the call: the differences of comm's statistics. */
static void add_zmpi(zp_slot *s, const zp_frame *f, unsigned long long bytes)
{
    ZMPI_Stats a;
    if (!f->have_stats || ZMPI_Comm_get_stats(f->comm, &a) != MPI_SUCCESS) {
        add(&s->wire, bytes);
        return;
    }
    const ZMPI_Stats *b = &f->before;
    unsigned long long raw = a.bytes_raw - b->bytes_raw, sent = a.bytes_sent - b->bytes_sent;
    add(&s->wire, bytes >= raw ? bytes - raw + sent : sent);
    add(&s->compressed, a.compressed != b->compressed); /* calls that moved compressed data */
    add(&s->fb[ZP_FB_TYPE], a.fallback_type - b->fallback_type);
    add(&s->fb[ZP_FB_SMALL], a.fallback_small - b->fallback_small);
    add(&s->fb[ZP_FB_CONFIG], a.fallback_config - b->fallback_config);
    add(&s->fb[ZP_FB_MODEL], a.fallback_model - b->fallback_model);
    add(&s->fb[ZP_FB_CODEC], a.codec_errors - b->codec_errors);
    add(&s->fb[ZP_FB_NODE], a.fallback_node - b->fallback_node);
    add(&s->ns_comp, a.ns_compress - b->ns_compress);
    add(&s->ns_decomp, a.ns_decompress - b->ns_decompress);
}

static void add_sample(zp_slot *s, const zp_sample *x)
{
    pthread_mutex_lock(&zp.sample_lock);
    atomic_fetch_add_explicit(&s->nsamples, 1, memory_order_relaxed);
    for (int r = 0; r < ZP_NRUNG; r++) {
        s->raw[r] += x->raw[r];
        s->comp[r] += x->comp[r];
        s->ns_c[r] += x->ns_c[r];
        s->ns_d[r] += x->ns_d[r];
        s->err[r] = x->err[r] > s->err[r] ? x->err[r] : s->err[r];
    }
    pthread_mutex_unlock(&zp.sample_lock);
    atomic_store_explicit(&s->dtsize, x->dtsize, memory_order_relaxed);
}

/* 1 if sampling `bytes` more (at most 1 MiB of them) keeps the time spent
 * sampling within the budget's share of the application's time so far and,
 * after a site's first sample, of the time the site's own calls took (so
 * that no burst of samples weighs on a few calls); the cost per byte is
 * what the samples so far took (3 ns before the first). */
static int within_budget(const zp_slot *s, unsigned long long bytes, unsigned taken)
{
    if (zp.budget >= 1)
        return 1;
    const double sampled = (double)atomic_load_explicit(&zp.sample_bytes, memory_order_relaxed);
    const double spent = (double)atomic_load_explicit(&zp.sample_ns, memory_order_relaxed);
    const double per_byte = sampled > 0 ? spent / sampled : 3.0;
    const double next = per_byte * (double)(bytes < (1u << 20) ? bytes : (1u << 20));
    const uint64_t t = atomic_load_explicit(&zp.t_init, memory_order_relaxed);
    if (!t || spent + next > zp.budget * (double)(zp_clock() - t))
        return 0;
    const double site_spent = (double)atomic_load_explicit(&s->ns_sampling, memory_order_relaxed);
    return taken == 0 || site_spent + next <= zp.budget * (double)atomic_load_explicit(&s->ns, memory_order_relaxed);
}

/* A sending call: its bytes, and its data when zmpi can compress it. */
static void add_send(zp_slot *s, const zp_frame *f, unsigned long long bytes, const void *buf, int count,
                     MPI_Datatype type)
{
    int flag = 0, n = 0;
    add(&s->sends, 1);
    add(&s->bytes, bytes);
    max_update(&s->bytes_max, bytes);
    max_update(&s->bytes_min_c, ~bytes);
    add(&s->elems, count > 0 ? (unsigned long long)count : 0);
    if (f->comm != MPI_COMM_NULL && PMPI_Comm_size(f->comm, &n) == MPI_SUCCESS)
        atomic_store_explicit(&s->nranks, n, memory_order_relaxed);
    if (!buf || buf == MPI_IN_PLACE || ZMPI_Type_compressible(type, &flag) != MPI_SUCCESS || !flag)
        return;
    unsigned long long nth = atomic_fetch_add_explicit(&s->flt, 1, memory_order_relaxed) + 1;
    unsigned taken = atomic_load_explicit(&s->nsamples, memory_order_relaxed); /* no lock on every send */
    zp_sample x;
    if (!zp_sample_due(nth, taken, zp.samples) || !within_budget(s, bytes, taken))
        return;
    const uint64_t t0 = zp_clock();
    int took = zp_sample_take(buf, count, type, f->comm, &x);
    const uint64_t dt = zp_clock() - t0;
    add(&zp.sample_ns, dt);
    add(&s->ns_sampling, dt);
    if (took) {
        add(&zp.sample_bytes, (unsigned long long)x.raw[0]);
        add_sample(s, &x);
    }
}

void zp_end(zp_frame *f, int rc, unsigned long long bytes, const void *buf, int count, MPI_Datatype datatype)
{
    const uint64_t ns = zp_clock() - f->t0;
    const int call = f->call;
    if (call < 0 || call >= ZP_NCALLS || atomic_load_explicit(&zp.off, memory_order_relaxed))
        return;
    if (rc != MPI_SUCCESS)
        bytes = 0;
    add(&zp.calls[call], 1);
    add(&zp.ns[call], ns);
    add(&zp.bytes[call], bytes);
    zp_slot *s = f->slot ? f->slot : site_of(call, f->ra);
    if (!s)
        return;
    add(&s->count, 1);
    add(&s->ns, ns);
    max_update(&s->ns_max, ns);
    max_update(&s->ns_min_c, ~(unsigned long long)ns);
    add_zmpi(s, f, bytes);
    if (bytes)
        add_send(s, f, bytes, buf, count, datatype);
}

/* ---- reading and resetting ---- */

static void read_slot(zp_slot *s, zp_measure *m)
{
    memset(m, 0, sizeof *m);
    m->count = atomic_load(&s->count);
    m->ns = atomic_load(&s->ns);
    m->ns_max = atomic_load(&s->ns_max);
    m->ns_min = ~atomic_load(&s->ns_min_c);
    m->sends = atomic_load(&s->sends);
    m->bytes = atomic_load(&s->bytes);
    m->bytes_max = atomic_load(&s->bytes_max);
    m->bytes_min = m->sends ? ~atomic_load(&s->bytes_min_c) : 0;
    m->wire = atomic_load(&s->wire);
    m->compressed = atomic_load(&s->compressed);
    for (int k = 0; k < ZP_NFB; k++)
        m->fb[k] = atomic_load(&s->fb[k]);
    m->ns_comp = atomic_load(&s->ns_comp);
    m->ns_decomp = atomic_load(&s->ns_decomp);
    m->flt = atomic_load(&s->flt);
    m->elems = atomic_load(&s->elems);
    m->nranks = atomic_load(&s->nranks);
    m->dtsize = atomic_load(&s->dtsize);
    if (!m->count)
        m->ns_min = 0;
    pthread_mutex_lock(&zp.sample_lock);
    m->nsamples = atomic_load_explicit(&s->nsamples, memory_order_relaxed);
    memcpy(m->raw, s->raw, sizeof m->raw);
    memcpy(m->comp, s->comp, sizeof m->comp);
    memcpy(m->ns_c, s->ns_c, sizeof m->ns_c);
    memcpy(m->ns_d, s->ns_d, sizeof m->ns_d);
    memcpy(m->err, s->err, sizeof m->err);
    pthread_mutex_unlock(&zp.sample_lock);
}

zp_local_site *zp_sites_snapshot(size_t *n)
{
    size_t k = 0;
    zp_local_site *out = malloc(sizeof *out * ZP_MAXSITES);
    for (size_t i = 0; out && i < ZP_MAXSITES; i++) {
        zp_slot *s = &zp.sites[i];
        uint64_t key = atomic_load(&s->key);
        if (!key || atomic_load(&s->kind) != 1 || !atomic_load(&s->count))
            continue;
        out[k].call = (int)(key >> 48) - 1;
        out[k].addr = (void *)(uintptr_t)(key & ZP_ADDR_MASK);
        read_slot(s, &out[k].m);
        k++;
    }
    *n = out ? k : 0;
    return out;
}

void zp_sites_reset(void)
{
    for (int i = 0; i < ZP_NCALLS; i++) {
        atomic_store(&zp.calls[i], 0);
        atomic_store(&zp.ns[i], 0);
        atomic_store(&zp.bytes[i], 0);
    }
    pthread_mutex_lock(&zp.sample_lock);
    for (size_t i = 0; i < ZP_MAXSITES; i++) {
        zp_slot *s = &zp.sites[i];
        _Atomic unsigned long long *c[] = {&s->count, &s->ns, &s->ns_max, &s->ns_min_c, &s->sends, &s->bytes,
                                           &s->bytes_max, &s->bytes_min_c, &s->wire, &s->compressed,
                                           &s->ns_comp, &s->ns_decomp, &s->flt, &s->elems, &s->ns_sampling};
        for (size_t j = 0; j < sizeof c / sizeof c[0]; j++)
            atomic_store(c[j], 0);
        for (int j = 0; j < ZP_NFB; j++)
            atomic_store(&s->fb[j], 0);
        atomic_store_explicit(&s->nsamples, 0, memory_order_relaxed);
        memset(s->raw, 0, sizeof s->raw);
        memset(s->comp, 0, sizeof s->comp);
        memset(s->ns_c, 0, sizeof s->ns_c);
        memset(s->ns_d, 0, sizeof s->ns_d);
        memset(s->err, 0, sizeof s->err);
    }
    pthread_mutex_unlock(&zp.sample_lock);
    atomic_store(&zp.t_init, zp_clock());
}

/* The per-MPI-function totals of this process (the report's "calls"). */
void zp_call_totals(unsigned long long *calls, unsigned long long *bytes, double *seconds)
{
    for (int i = 0; i < ZP_NCALLS; i++) {
        calls[i] = atomic_load(&zp.calls[i]);
        bytes[i] = atomic_load(&zp.bytes[i]);
        seconds[i] = (double)atomic_load(&zp.ns[i]) * 1e-9;
    }
}

/* ---- settings ---- */

void zp_set_profiling(int on)
{
    atomic_store(&zp.off, !on);
}

int zp_report_index(void)
{
    return atomic_fetch_add(&zp.reports, 1);
}

int zp_routing(void)
{
    return atomic_load_explicit(&zp.route, memory_order_relaxed);
}

void zp_comm_made(MPI_Comm comm)
{
    int inter = 1, size = 0;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    if (comm == MPI_COMM_NULL || !atomic_load_explicit(&zp.route, memory_order_relaxed) ||
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter || PMPI_Comm_size(comm, &size) != MPI_SUCCESS ||
        size < 2 || PMPI_Comm_get_errhandler(comm, &eh) != MPI_SUCCESS)
        return;
    /* the program's handler (inherited from the parent) must not see an
     * error of the set-up: the state keeps it for the first collective */
    if (PMPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN) == MPI_SUCCESS) {
        (void)ZMPI_Comm_prepare(comm);
        PMPI_Comm_set_errhandler(comm, eh);
    }
    PMPI_Errhandler_free(&eh);
}

int zp_profile_only(void)
{
    return zp.profile_only;
}

const ZMPI_Config *zp_config(void)
{
    return &zp.cfg;
}

double zp_app_time(void)
{
    uint64_t t = atomic_load(&zp.t_init);
    return t ? (double)(zp_clock() - t) * 1e-9 : 0.0;
}

/* A non-negative integer setting, or def when unset (check_settings has
 * rejected malformed values before). */
static int int_setting(const char *name, int def)
{
    const char *v = getenv(name);
    return v && *v ? atoi(v) : def;
}

/* Marks the calls of a list (ZMPI_CALLS / ZMPI_EXCLUDE_CALLS, names
 * checked at MPI_Init) in mark[]: MPI_Name and its large-count binding
 * MPI_Name_c. */
static void mark_calls(const char *list, unsigned char *mark)
{
    char name[136], name_c[140];
    for (const char *p = list; p && *p;) {
        size_t n = strcspn(p, ",");
        snprintf(name, sizeof name, "%s%.*s", strncmp(p, "MPI_", 4) ? "MPI_" : "", (int)(n < 127 ? n : 127), p);
        snprintf(name_c, sizeof name_c, "%s_c", name);
        for (int i = 0; i < ZP_NCALLS; i++)
            if (!strcmp(zp_call_names[i], name) || !strcmp(zp_call_names[i], name_c))
                mark[i] = 1;
        p += n + (p[n] == ',');
    }
}

/* The calls that never compress: not in ZMPI_CALLS (when set), or in
 * ZMPI_EXCLUDE_CALLS. Only sending calls are ever named (checked). */
static void call_policy(void)
{
    unsigned char listed[ZP_NCALLS] = {0}, excluded[ZP_NCALLS] = {0};
    const char *calls = getenv("ZMPI_CALLS");
    mark_calls(calls, listed);
    mark_calls(getenv("ZMPI_EXCLUDE_CALLS"), excluded);
    unsigned char sending[ZP_NCALLS] = {0};
    mark_calls("Send,Ssend,Isend,Issend,Sendrecv,Sendrecv_replace,Bcast,Scatter,Scatterv,Gather,Gatherv,Allgather,"
               "Allgatherv,Alltoall,Alltoallv,Reduce_scatter,Reduce_scatter_block,Allreduce,Reduce",
               sending);
    for (int i = 0; i < ZP_NCALLS; i++)
        zp.call_off[i] = sending[i] && ((calls && *calls && !listed[i]) || excluded[i]);
}

/* FNV-1a of the call policy, so that the ranks can compare theirs. */
static int policy_hash(void)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < ZP_NCALLS; i++)
        h = (h ^ zp.call_off[i]) * 16777619u;
    return (int)(h & 0x3fffffff);
}

/* Where zmpi compresses: MPI_COMM_WORLD's nodes learned once, here, so that
 * every communicator's layout (point-to-point calls included) follows from
 * it. Ranks that all share one node compress nothing between them: rank 0
 * says so, and how to try zmpi on one machine. Collective over
 * MPI_COMM_WORLD. */
static int learn_nodes(void)
{
    int nnodes = 0, rank = 0, size = 1;
    int rc = ZMPI_Comm_nodes(MPI_COMM_WORLD, &nnodes, NULL, NULL, NULL, NULL);
    if (rc != MPI_SUCCESS)
        return rc; /* raised on MPI_COMM_WORLD (different ZMPI_NODE_RANKS: the job stops, saying so) */
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && nnodes == 1 && size > 1 && !zp.cfg.intra_node)
        fprintf(stderr,
                "zmpi: the %d ranks share one node, where messages travel plain (shared memory is faster than "
                "any codec): nothing will be compressed. To try zmpi on one machine, make every rank a node of "
                "its own: ZMPI_NODE_RANKS=1 (zmpirun --node-ranks 1); docs/configuration.md, \"Nodes\"\n",
                size);
    return MPI_SUCCESS;
}

int zp_init(void)
{
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&zp.t_init, &zero, zp_clock());
    if (ZMPI_Config_from_env(&zp.cfg, NULL) != MPI_SUCCESS)
        memset(&zp.cfg, 0, sizeof zp.cfg);
    zp.profile_only = int_setting("ZMPI_PROFILE_ONLY", 0) != 0;
    zp.samples = int_setting("ZMPI_SAMPLES", 8);
    zp.budget = int_setting("ZMPI_SAMPLE_BUDGET", 1) / 100.0;
    site_list_parse(&zp.include_sites, "ZMPI_INCLUDE_SITES");
    site_list_parse(&zp.exclude_sites, "ZMPI_EXCLUDE_SITES");
    call_policy();
    int on = !zp.profile_only && ZMPI_Config_compresses(&zp.cfg);
    /* a receiver decodes what any rank compressed: if one rank compresses,
     * all take the ZMPI_ paths; and every rank must run a collective the
     * same way, so the call policies must agree */
    int mine[3] = {on, policy_hash(), -policy_hash()}, all[3] = {0, 0, 0};
    int rc = PMPI_Allreduce(mine, all, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS && all[1] != -all[2]) {
        int rank = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
        if (rank == 0)
            fprintf(stderr, "zmpi: ZMPI_CALLS / ZMPI_EXCLUDE_CALLS differ between the ranks: their collectives "
                            "would not match (libzmpi_preload.so stops the program in MPI_Init)\n");
        PMPI_Barrier(MPI_COMM_WORLD);
        rc = MPI_ERR_ARG;
        PMPI_Comm_call_errhandler(MPI_COMM_WORLD, rc);
    }
    atomic_store(&zp.route, rc == MPI_SUCCESS && all[0]);
    if (rc == MPI_SUCCESS && all[0])
        rc = learn_nodes();
    return rc;
}

/* ---- what the process was asked to do ---- */

int zp_has_settings(void)
{
    for (char **e = environ; e && *e; e++)
        if (!strncmp(*e, "ZMPI_", 5))
            return 1;
    return 0;
}

const char *zp_env_rank(void)
{
    static const char *const vars[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

int zp_init_seen(void)
{
    return atomic_load(&zp.t_init) != 0;
}

/* Prints the entries of the lists that matched no call site: agreed over
 * MPI_COMM_WORLD when every rank has as many entries (rank 0 says it),
 * else each rank for its own. */
static void sites_unmatched(zp_site_list *const *lists, int nl)
{
    int n = 0, rank = 0, mm[3], r[3];
    for (int k = 0; k < nl; k++)
        n += lists[k]->n;
    int *hit = calloc((size_t)(n ? n : 1), sizeof *hit), *all = calloc((size_t)(n ? n : 1), sizeof *all);
    mm[0] = n, mm[1] = -n, mm[2] = !hit || !all;
    if (PMPI_Allreduce(mm, r, 3, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS || r[0] == 0 || r[2]) {
        free(hit);
        free(all);
        return;
    }
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int same = r[0] == -r[1];
    for (int k = 0, i = 0; k < nl; k++)
        for (int j = 0; j < lists[k]->n; j++)
            hit[i++] = atomic_load(&lists[k]->e[j].matched);
    if (same && PMPI_Allreduce(hit, all, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        same = 0, memcpy(all, hit, (size_t)n * sizeof *hit);
    if (!same)
        memcpy(all, hit, (size_t)n * sizeof *hit);
    if (!same || rank == 0)
        for (int k = 0, i = 0; k < nl; k++)
            for (int j = 0; j < lists[k]->n; j++, i++)
                if (!all[i])
                    fprintf(stderr,
                            "zmpi: %s: %s:%d matched no call site of the run (a point-to-point send at FILE:LINE, "
                            "FILE a path or its end, as the report names sites)%s\n",
                            lists[k]->name, lists[k]->e[j].file, lists[k]->e[j].line, same ? "" : " (this rank)");
    free(hit);
    free(all);
}

void zp_finalize_checks(void)
{
    if (!atomic_load(&zp.route))
        return; /* the lists select only while the ZMPI_ paths run */
    zp_site_list *lists[2] = {&zp.include_sites, &zp.exclude_sites};
    sites_unmatched(lists, 2);
}

/* ---- bytes ---- */

unsigned long long zp_bytes(MPI_Count count, MPI_Datatype datatype)
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

unsigned long long zp_bytes_n(MPI_Count count, MPI_Datatype datatype, MPI_Comm comm)
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

/* This rank in an intracommunicator, -1 in an intercommunicator (or on error). */
static int intra_rank(MPI_Comm comm)
{
    int inter = 1, rank = -1;
    if (comm == MPI_COMM_NULL || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS)
        return -1;
    return rank;
}

unsigned long long zp_bytes_others(MPI_Count count, MPI_Datatype datatype, MPI_Comm comm)
{
    int n = group_size(comm) - (intra_rank(comm) >= 0);
    return zp_bytes(count, datatype) * (unsigned long long)(n > 0 ? n : 0);
}

unsigned long long zp_bytes_v_others(const int counts[], MPI_Datatype datatype, MPI_Comm comm)
{
    int me = intra_rank(comm);
    return zp_bytes_v(counts, datatype, comm) - (counts && me >= 0 ? zp_bytes(counts[me], datatype) : 0);
}

/* The first entry of counts[0 .. size of comm) above 0, and its index; 0 if none. */
static int first_block(const int counts[], MPI_Comm comm, int *at)
{
    int n = counts ? group_size(comm) : 0;
    for (int i = 0; i < n; i++)
        if (counts[i] > 0) {
            *at = i;
            return counts[i];
        }
    return 0;
}

int zp_vcount(const int counts[], MPI_Comm comm)
{
    int at = 0;
    return first_block(counts, comm, &at);
}

const void *zp_vbuf(const void *buf, const int counts[], const int displs[], MPI_Datatype datatype, MPI_Comm comm)
{
    int at = 0;
    MPI_Aint lb = 0, ext = 0;
    if (!buf || buf == MPI_IN_PLACE || !displs || !first_block(counts, comm, &at) ||
        PMPI_Type_get_extent(datatype, &lb, &ext) != MPI_SUCCESS)
        return NULL;
    return (const char *)buf + (MPI_Aint)displs[at] * ext;
}

unsigned long long zp_bytes_at_rank(const int counts[], MPI_Datatype datatype, MPI_Comm comm)
{
    int me = intra_rank(comm);
    return counts && me >= 0 ? zp_bytes(counts[me], datatype) : 0;
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
