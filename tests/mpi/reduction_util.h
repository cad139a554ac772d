/*
 * Shared checks of the compressed reduction tests (test_reduce_scatter.c,
 * test_allreduce.c, test_reduce.c).
 *
 * A lossy result is checked element by element against plain MPI's result
 * of the same collective on the same inputs, computed by MPI in double (for
 * float inputs the exact reduction up to a negligible rounding). The
 * documented guarantee is |got - ref| <= bound + rounding, where bound is
 * the compression bound of the scope (rt_bound) and rounding is the
 * order-dependent rounding of the reduction in the user's type, which
 * plain MPI has as well: (N+1) * unit roundoff * (sum_i |x_i| + bound) for
 * SUM (plus the same for the double reference), 0 for MIN/MAX.
 */
#ifndef ZMPI_TEST_REDUCTION_UTIL_H
#define ZMPI_TEST_REDUCTION_UTIL_H

#include <float.h>

#include "mpitest.h"

typedef enum rt_data { RT_FIELD = 0, RT_NOISE, RT_SPECIAL } rt_data;

typedef struct rt_case {
    MPI_Datatype type;
    zmpi_eb_mode mode;
    double eb;
    ZMPI_Scope scope;
    MPI_Op op;
} rt_case;

static inline const char *rt_op_name(MPI_Op op)
{
    return op == MPI_SUM ? "sum" : op == MPI_MIN ? "min" : op == MPI_MAX ? "max" : "op";
}

static inline size_t rt_es(MPI_Datatype type)
{
    return type == MPI_FLOAT ? sizeof(float) : sizeof(double);
}

static inline void rt_set(void *p, size_t i, MPI_Datatype type, double v)
{
    if (type == MPI_FLOAT)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

/* Input of `rank`: a real field (offset by the rank), white noise, or the
 * field with non-finite and odd values on rank 0 (NaN only for SUM: the NaN
 * of MIN/MAX depends on the order of operations, in MPI too). */
static inline void rt_fill(void *buf, size_t n, MPI_Datatype type, int rank, rt_data data, MPI_Op op)
{
    if (data == RT_NOISE) {
        uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(rank + 1);
        for (size_t i = 0; i < n; i++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            rt_set(buf, i, type, 100.0 * ((double)(s >> 11) / 9007199254740992.0 - 0.5));
        }
        return;
    }
    mt_fill_field(buf, n, type, (size_t)rank);
    if (data == RT_SPECIAL && rank == 0) {
        if (n > 3)
            rt_set(buf, 3, type, INFINITY);
        if (n > 5 && op == MPI_SUM)
            rt_set(buf, 5, type, NAN);
        if (n > 7)
            rt_set(buf, 7, type, -0.0);
        if (n > 9)
            rt_set(buf, 9, type, type == MPI_FLOAT ? FLT_MIN / 4 : DBL_MIN / 4);
    }
}

/* The reference of a reduction is computed by plain MPI in double (float
 * inputs: exact up to a negligible rounding; double inputs: MPI's own
 * result, whose order-dependent rounding is allowed for in rt_check). For
 * SUM the reference vector interleaves x_i and |x_i| (so one MPI call also
 * gives sum |x_i|, the scale of the rounding allowance): element i of a
 * collective is at 2i, counts double. rt_mult is that factor (2 for SUM, 1
 * for MIN/MAX). */
static inline int rt_mult(MPI_Op op)
{
    return op == MPI_SUM ? 2 : 1;
}

static inline size_t rt_wes(MPI_Datatype type)
{
    (void)type;
    return sizeof(double);
}

static inline MPI_Datatype rt_wtype(MPI_Datatype type)
{
    (void)type;
    return MPI_DOUBLE;
}

static inline void rt_wset(void *w, size_t i, MPI_Datatype type, long double v)
{
    (void)type;
    ((double *)w)[i] = (double)v;
}

static inline long double rt_wget(const void *w, size_t i, MPI_Datatype type)
{
    (void)type;
    return ((const double *)w)[i];
}

/* Fills the wide input (n elements, n * rt_mult(op) wide values). */
static inline void rt_widen(const void *in, size_t n, MPI_Datatype type, MPI_Op op, void *wide)
{
    int m = rt_mult(op);
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(in, i, type);
        rt_wset(wide, i * (size_t)m, type, v);
        if (m == 2)
            rt_wset(wide, i * 2 + 1, type, isfinite(v) ? fabs(v) : 0.0);
    }
}

/* The documented compression bound of a result. ring_steps: compressions
 * in the reduce-scatter ring (N-1); extra: further compressions of the
 * reduced block (1 for allgather/gather, N-1 for the per-hop allgather).
 * R: max - min of all ranks' inputs.
 *   result scope: eb (ABS) or eb * R (REL);
 *   message scope ABS: (ring_steps + extra) * eb;
 *   message scope REL: sum over the compressions of eb * (range of what is
 *   compressed); a partial of k ranks has range <= k*R (SUM) or R
 *   (MIN/MAX), plus twice the error accumulated so far. */
static inline double rt_bound(const rt_case *k, double R, int nranks, int ring_steps, int extra)
{
    if (k->scope == ZMPI_SCOPE_RESULT)
        return k->mode == ZMPI_EB_ABS ? k->eb : k->eb * R;
    if (k->mode == ZMPI_EB_ABS)
        return (ring_steps + extra) * k->eb;
    double e = 0;
    for (int s = 1; s <= ring_steps; s++)
        e += k->eb * ((k->op == MPI_SUM ? s : 1) * R + 2 * e);
    for (int s = 0; s < extra; s++)
        e += k->eb * ((k->op == MPI_SUM ? nranks : 1) * R + 2 * e);
    return e;
}

typedef struct rt_result {
    size_t bad;      /* elements outside the guarantee */
    double worst;    /* max |got - ref| over finite elements */
    double ratio;    /* worst / bound (0 if bound is 0) */
    long first_bad;  /* index of the first bad element, or -1 */
} rt_result;

/* Checks n elements of got against the reference (rt_widen layout,
 * reduced by plain MPI): |got - ref| <= bound + rounding allowance (SUM:
 * (N+1) * u * (sum |x_i| + bound) for our result in the user's type, plus
 * (N+1) * u_double * sum |x_i| for the reference; MIN/MAX: none);
 * non-finite references must be reproduced (NaN as a NaN). */
static inline rt_result rt_check(const rt_case *k, const void *got, const void *ref, size_t n, double bound,
                                 int nranks)
{
    rt_result res = {0, 0.0, 0.0, -1};
    int m = rt_mult(k->op);
    long double u = k->type == MPI_FLOAT ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
    long double b = (long double)bound * (1 + 1e-9L);
    for (size_t i = 0; i < n; i++) {
        long double g = mt_get(got, i, k->type), r = rt_wget(ref, i * (size_t)m, k->type);
        int ok;
        if (!isfinite(r)) {
            ok = isnan(r) ? isnan(g) : g == r;
        } else {
            long double s = m == 2 ? rt_wget(ref, i * 2 + 1, k->type) : 0;
            long double ud = DBL_EPSILON / 2;
            long double slack = m == 2 ? (nranks + 1) * (u * (s + bound) + ud * s) : 0;
            long double d = fabsl(g - r);
            ok = d <= b + slack;
            if ((double)d > res.worst)
                res.worst = (double)d;
        }
        if (!ok) {
            if (res.first_bad < 0)
                res.first_bad = (long)i;
            res.bad++;
        }
    }
    res.ratio = bound > 0 ? res.worst / bound : 0;
    return res;
}

/* 64-bit FNV-1a of a buffer (to compare results across ranks). */
static inline unsigned long long rt_hash(const void *p, size_t n)
{
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= ((const unsigned char *)p)[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* 1 if every rank passed the same hash. */
static inline int rt_same_everywhere(unsigned long long h, MPI_Comm comm)
{
    unsigned long long mm[2] = {h, ~h}, g[2];
    MPI_Allreduce(mm, g, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    return g[0] == h && ~g[1] == h ? 1 : 0;
}

/* 1 on every rank if the condition holds on every rank. */
static inline int rt_all(int cond, MPI_Comm comm)
{
    int g = 0;
    MPI_Allreduce(&cond, &g, 1, MPI_INT, MPI_LAND, comm);
    return g;
}

/* Sets a full configuration on comm (chunk and one collective's algorithm
 * too); returns ZMPI_Comm_set_config's code. */
static inline int rt_config(MPI_Comm comm, const rt_case *k, size_t min_bytes, size_t chunk, ZMPI_Coll coll,
                             int algo)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = ZMPI_CODEC_FZL;
    cfg.eb_mode = k->mode;
    cfg.eb = k->eb;
    cfg.scope = k->scope;
    cfg.min_bytes = min_bytes;
    cfg.chunk = chunk;
    cfg.algorithm[coll] = algo;
    return ZMPI_Comm_set_config(comm, &cfg);
}

#endif
