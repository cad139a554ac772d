/* Checks of the reduction tests (reduction.h). */
#include <float.h>

#include "reduction.h"

const char *rt_op_name(MPI_Op op)
{
    return op == MPI_SUM ? "sum" : op == MPI_MIN ? "min" : op == MPI_MAX ? "max" : "op";
}

size_t rt_es(MPI_Datatype type)
{
    return type == MPI_FLOAT ? sizeof(float) : sizeof(double);
}

void rt_set(void *p, size_t i, MPI_Datatype type, double v)
{
    if (type == MPI_FLOAT)
        ((float *)p)[i] = (float)v;
    else
        ((double *)p)[i] = v;
}

void rt_fill(void *buf, size_t n, MPI_Datatype type, int rank, rt_data data, MPI_Op op)
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

int rt_mult(MPI_Op op)
{
    return op == MPI_SUM ? 2 : 1;
}

size_t rt_wes(MPI_Datatype type)
{
    (void)type;
    return sizeof(double);
}

MPI_Datatype rt_wtype(MPI_Datatype type)
{
    (void)type;
    return MPI_DOUBLE;
}

void rt_wset(void *w, size_t i, MPI_Datatype type, long double v)
{
    (void)type;
    ((double *)w)[i] = (double)v;
}

long double rt_wget(const void *w, size_t i, MPI_Datatype type)
{
    (void)type;
    return ((const double *)w)[i];
}

void rt_widen(const void *in, size_t n, MPI_Datatype type, MPI_Op op, void *wide)
{
    int m = rt_mult(op);
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(in, i, type);
        rt_wset(wide, i * (size_t)m, type, v);
        if (m == 2)
            rt_wset(wide, i * 2 + 1, type, isfinite(v) ? fabs(v) : 0.0);
    }
}

double rt_bound(const rt_case *k, double R, int nranks, int ring_steps, int extra)
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

rt_result rt_check(const rt_case *k, const void *got, const void *ref, size_t n, double bound,
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

unsigned long long rt_hash(const void *p, size_t n)
{
    unsigned long long h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= ((const unsigned char *)p)[i];
        h *= 1099511628211ull;
    }
    return h;
}

int rt_same_everywhere(unsigned long long h, MPI_Comm comm)
{
    unsigned long long mm[2] = {h, ~h}, g[2];
    MPI_Allreduce(mm, g, 2, MPI_UNSIGNED_LONG_LONG, MPI_MIN, comm);
    return g[0] == h && ~g[1] == h ? 1 : 0;
}

int rt_config(MPI_Comm comm, const rt_case *k, size_t min_bytes, size_t chunk, ZMPI_Coll coll,
                             int algo)
{
    return rt_config_codec(comm, k, min_bytes, chunk, coll, algo, ZMPI_CODEC_FZL);
}

int rt_config_codec(MPI_Comm comm, const rt_case *k, size_t min_bytes, size_t chunk, ZMPI_Coll coll, int algo,
                    zmpi_codec codec)
{
    return rt_config_nodes(comm, k, min_bytes, chunk, coll, algo, codec, -1);
}

int rt_config_nodes(MPI_Comm comm, const rt_case *k, size_t min_bytes, size_t chunk, ZMPI_Coll coll, int algo,
                    zmpi_codec codec, int node_ranks)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    if (node_ranks >= 0)
        cfg.node_ranks = node_ranks;
    cfg.codec = codec;
    cfg.eb_mode = k->mode;
    cfg.eb = k->eb;
    cfg.scope = k->scope;
    cfg.min_bytes = min_bytes;
    cfg.chunk = chunk;
    cfg.algorithm[coll] = algo;
    return ZMPI_Comm_set_config(comm, &cfg);
}

const char *rt_type_name(MPI_Datatype type)
{
    return type == MPI_FLOAT ? "float" : "double";
}

const char *rt_mode_name(zmpi_eb_mode mode)
{
    return mode == ZMPI_EB_ABS ? "abs" : "rel";
}

const char *rt_scope_name(ZMPI_Scope scope)
{
    return scope == ZMPI_SCOPE_RESULT ? "result" : "message";
}

double rt_eb_for(zmpi_eb_mode mode)
{
    return mode == ZMPI_EB_ABS ? 1e-2 : 1e-4;
}

rt_case rt_matrix_case(int i)
{
    static const MPI_Op ops[3] = {MPI_SUM, MPI_MIN, MPI_MAX};
    zmpi_eb_mode mode = (i / 6) % 2 ? ZMPI_EB_REL : ZMPI_EB_ABS;
    rt_case k = {i / 12 ? MPI_DOUBLE : MPI_FLOAT, mode, rt_eb_for(mode),
                 (i / 3) % 2 ? ZMPI_SCOPE_MESSAGE : ZMPI_SCOPE_RESULT, ops[i % 3]};
    return k;
}

rt_case rt_sum_case(int i)
{
    return rt_matrix_case(3 * i);
}

rt_result rt_check_result_at(mt_state *t, const char *what, const rt_case *k, const void *got, const void *ref,
                             size_t n, double bound, const char *file, int line)
{
    rt_result res = rt_check(k, got, ref, n, bound, t->size);
    MT_CHECK_AT(t, file, line, res.bad == 0,
                "%s: %zu elements beyond bound %g (first %ld: got %.9g ref %.9Lg), worst %g", what, res.bad, bound,
                res.first_bad, res.first_bad >= 0 ? mt_get(got, (size_t)res.first_bad, k->type) : 0.0,
                res.first_bad >= 0 ? rt_wget(ref, (size_t)res.first_bad * (size_t)rt_mult(k->op), k->type) : 0.0L,
                res.worst);
    return res;
}

void rt_check_compressed_at(mt_state *t, const ZMPI_Stats *s0, const ZMPI_Stats *s1, const char *what,
                            const char *file, int line)
{
    if (t->size > 1)
        MT_CHECK_AT(t, file, line, s1->compressed == s0->compressed + 1, "%s: not run compressed", what);
    else
        MT_CHECK_AT(t, file, line, s1->fallback_small == s0->fallback_small + 1, "np=1 must fall back");
}

void rt_print_report(const char *label, double worst, double bound, unsigned long long raw, unsigned long long sent)
{
    printf("REPORT %s: max err / bound = %.3f (bound %.3g), ratio %.2f\n", label, worst, bound,
           sent ? (double)raw / (double)sent : 0.0);
}

void rt_fallback_inputs(size_t n, int rank, int **iv, float **fv, float **pv)
{
    *iv = mt_xmalloc(n * sizeof(int));
    *fv = mt_xmalloc(n * sizeof(float));
    *pv = mt_xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        (*iv)[i] = (int)((i * 2654435761u + (size_t)rank * 97u) % 100000u);
    mt_fill_field(*fv, n, MPI_FLOAT, (size_t)rank);
    for (size_t i = 0; i < n; i++)
        (*pv)[i] = 1.0f + 1e-3f * (*fv)[i];
}
