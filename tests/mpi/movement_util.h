/*
 * Helpers shared by the tests of the data-movement collectives
 * (test_bcast, test_scatter, test_gather, test_allgather, test_alltoall).
 *
 * Every lossy result is compared element by element with plain MPI's result
 * and the documented bound: ABS eb; REL rel * (max - min) of the block that
 * was compressed (the origin's block). Statistics prove that the compressed
 * path ran, so a silent fallback cannot pass.
 */
#ifndef ZMPI_MOVEMENT_UTIL_H
#define ZMPI_MOVEMENT_UTIL_H

#include "mpitest.h"

static inline size_t mv_es(MPI_Datatype type)
{
    return type == MPI_FLOAT ? 4 : 8;
}

static inline const char *mv_tname(MPI_Datatype type)
{
    return type == MPI_FLOAT ? "float" : "double";
}

/* Configuration for one collective: codec fzl, the bound, scope, algorithm id
 * (or ZMPI_ALGO_DEFAULT / ZMPI_ALGO_MPI), size threshold and chunk. */
static inline int mv_config(MPI_Comm comm, ZMPI_Coll coll, int algo, zmpi_eb_mode mode, double eb,
                            ZMPI_Scope scope, size_t min_bytes, size_t chunk)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = mode;
    cfg.eb = mode == ZMPI_EB_NONE ? 0.0 : eb;
    cfg.scope = scope;
    cfg.min_bytes = min_bytes;
    cfg.chunk = chunk;
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        cfg.algorithm[k] = ZMPI_ALGO_DEFAULT;
    cfg.algorithm[coll] = algo;
    return ZMPI_Comm_set_config(comm, &cfg);
}

static inline ZMPI_Stats mv_stats(MPI_Comm comm)
{
    ZMPI_Stats s;
    memset(&s, 0, sizeof s);
    ZMPI_Comm_get_stats(comm, &s);
    return s;
}

/* Deterministic white noise in [-1, 1) (poorly compressible). */
static inline void mv_fill_noise(void *buf, size_t n, MPI_Datatype type, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 12345;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        double v = (double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
        if (type == MPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = v;
    }
}

/* Fills with a sentinel that no result should contain. */
static inline void mv_fill_garbage(void *buf, size_t n, MPI_Datatype type)
{
    for (size_t i = 0; i < n; i++) {
        if (type == MPI_FLOAT)
            ((float *)buf)[i] = -7.25e30f;
        else
            ((double *)buf)[i] = -7.25e300;
    }
}

/* Finite max - min of n elements (0 if none). */
static inline double mv_range(const void *buf, size_t n, MPI_Datatype type)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(buf, i, type);
        if (isfinite(v)) {
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    }
    return hi >= lo ? hi - lo : 0.0;
}

/* The bound of one compression of a block: ABS eb; REL rel * range of the
 * block (a constant block is stored exactly: bound 0 = byte-identical). */
static inline double mv_bound(zmpi_eb_mode mode, double eb, const void *block, size_t n, MPI_Datatype type)
{
    return mode == ZMPI_EB_ABS ? eb : eb * mv_range(block, n, type);
}

/* Checks got[0..n) against ref[0..n) with the bound; records the worst
 * error / bound in *ratio_worst (if the bound is > 0). */
static inline void mv_check(mt_state *t, const char *what, const void *got, const void *ref, size_t n,
                            MPI_Datatype type, double bound, double *ratio_worst)
{
    double worst = 0;
    size_t bad = mt_violations(got, ref, n, type, bound, &worst);
    MT_CHECK(t, bad == 0, "%s: %zu of %zu elements beyond %g (worst %g)", what, bad, n, bound, worst);
    if (ratio_worst && bound > 0 && worst / bound > *ratio_worst)
        *ratio_worst = worst / bound;
}

/* Byte-identical comparison. */
static inline void mv_same(mt_state *t, const char *what, const void *got, const void *ref, size_t bytes)
{
    MT_CHECK(t, bytes == 0 || memcmp(got, ref, bytes) == 0, "%s: not byte-identical", what);
}

/* One series of calls with the same settings, and what it observed. */
typedef struct mv_run {
    mt_state *t;
    MPI_Datatype type;
    zmpi_eb_mode mode;
    double eb;
    ZMPI_Scope scope;
    const char *aname; /* algorithm name */
    double worst;      /* max err / bound seen on this rank */
    double raw, sent;  /* bytes compressed on this rank (statistics) */
} mv_run;

static inline mv_run mv_run_make(mt_state *t, MPI_Datatype type, zmpi_eb_mode mode, double eb,
                                 ZMPI_Scope scope, const char *aname)
{
    mv_run r = {t, type, mode, eb, scope, aname, 0, 0, 0};
    return r;
}

static inline void mv_account(mv_run *r, const ZMPI_Stats *s0, const ZMPI_Stats *s1)
{
    r->raw += (double)(s1->bytes_raw - s0->bytes_raw);
    r->sent += (double)(s1->bytes_sent - s0->bytes_sent);
}

/* After a call of coll on MPI_COMM_WORLD in the series (its algorithm named
 * r->aname configured): ZMPI_Stats.last_algorithm names the algorithm that
 * must have run (ZMPI_ALGO_MPI at one rank, where every call runs plain). A
 * series named "default" runs the default choice: nothing to compare. */
#define mv_check_algo(r, coll, what) mv_check_algo_at(r, coll, what, __FILE__, __LINE__)
static inline void mv_check_algo_at(mv_run *r, ZMPI_Coll coll, const char *what, const char *file, int line)
{
    if (!strcmp(r->aname, "default"))
        return;
    int id = ZMPI_Coll_algorithm_from_name(coll, r->aname);
    MT_CHECK_AT(r->t, file, line, id > 0, "%s: unknown algorithm %s", what, r->aname);
    if (id > 0)
        mt_check_ran_at(r->t, MPI_COMM_WORLD, coll, r->t->size > 1 ? mt_algo_ran(coll, id, r->t->size) : ZMPI_ALGO_MPI,
                        what, file, line);
}

/* Prints (rank 0) the max err / bound over all ranks and the compression
 * ratio over all compressions of the series: "REPORT <coll> <algo> ...".
 * n: elements of the largest call of the series (0: several sizes). */
static inline void mv_report(const mv_run *r, const char *coll, size_t n)
{
    double w = 0, raw = 0, sent = 0;
    MPI_Reduce(&r->worst, &w, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&r->raw, &raw, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&r->sent, &sent, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (r->t->rank == 0 && r->t->size > 1)
        printf("REPORT %-9s %-9s %-6s %s=%g scope=%s np=%d n=%zu: max err/bound %.3f, ratio %.2f\n", coll,
               r->aname, mv_tname(r->type), r->mode == ZMPI_EB_ABS ? "abs" : "rel", r->eb,
               r->scope == ZMPI_SCOPE_MESSAGE ? "message" : "result", r->t->size, n, w,
               sent > 0 ? raw / sent : 0.0);
}

#endif
