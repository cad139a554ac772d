/*
 * Shared checks of the compressed reduction tests (test_reduce_scatter.c,
 * test_allreduce.c, test_reduce.c, test_codecs.c, test_threads.c);
 * reduction.c of the library zmpi_mpitest.
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
#ifndef ZMPI_TEST_REDUCTION_H
#define ZMPI_TEST_REDUCTION_H

#include "mpitest.h"

typedef enum rt_data { RT_FIELD = 0, RT_NOISE, RT_SPECIAL } rt_data;

typedef struct rt_case {
    MPI_Datatype type;
    zmpi_eb_mode mode;
    double eb;
    ZMPI_Scope scope;
    MPI_Op op;
} rt_case;

const char *rt_op_name(MPI_Op op);
/* "float" / "double", "abs" / "rel", "result" / "message" */
const char *rt_type_name(MPI_Datatype type);
const char *rt_mode_name(zmpi_eb_mode mode);
const char *rt_scope_name(ZMPI_Scope scope);
size_t rt_es(MPI_Datatype type);
void rt_set(void *p, size_t i, MPI_Datatype type, double v);

/* The bound of the lossy cases: ABS 1e-2, REL 1e-4. */
double rt_eb_for(zmpi_eb_mode mode);
/* Case i (0 <= i < RT_MATRIX) of every (type, mode, scope, op): float and
 * double, ABS and REL (rt_eb_for), result and message scope, SUM / MIN / MAX,
 * in that order of nesting (the op varies fastest). */
#define RT_MATRIX 24
rt_case rt_matrix_case(int i);
/* The SUM cases of the matrix: i = 4 * type + 2 * mode + scope (0 <= i <
 * RT_SUM_CASES; 0: float ABS result, 7: double REL message). */
#define RT_SUM_CASES 8
rt_case rt_sum_case(int i);

/* Input of `rank`: a real field (offset by the rank), white noise, or the
 * field with non-finite and odd values on rank 0 (NaN only for SUM: the NaN
 * of MIN/MAX depends on the order of operations, in MPI too). */
void rt_fill(void *buf, size_t n, MPI_Datatype type, int rank, rt_data data, MPI_Op op);

/* The reference of a reduction is computed by plain MPI in double (float
 * inputs: exact up to a negligible rounding; double inputs: MPI's own
 * result, whose order-dependent rounding is allowed for in rt_check). For
 * SUM the reference vector interleaves x_i and |x_i| (so one MPI call also
 * gives sum |x_i|, the scale of the rounding allowance): element i of a
 * collective is at 2i, counts double. rt_mult is that factor (2 for SUM, 1
 * for MIN/MAX). */
int rt_mult(MPI_Op op);
size_t rt_wes(MPI_Datatype type);
MPI_Datatype rt_wtype(MPI_Datatype type);
void rt_wset(void *w, size_t i, MPI_Datatype type, long double v);
long double rt_wget(const void *w, size_t i, MPI_Datatype type);
/* Fills the wide input (n elements, n * rt_mult(op) wide values). */
void rt_widen(const void *in, size_t n, MPI_Datatype type, MPI_Op op, void *wide);

/* The documented compression bound of a result. ring_steps: compressions
 * in the reduce-scatter ring (N-1); extra: further compressions of the
 * reduced block (1 for allgather/gather, N-1 for the per-hop allgather).
 * R: max - min of all ranks' inputs.
 *   result scope: eb (ABS) or eb * R (REL);
 *   message scope ABS: (ring_steps + extra) * eb;
 *   message scope REL: sum over the compressions of eb * (range of what is
 *   compressed); a partial of k ranks has range <= k*R (SUM) or R
 *   (MIN/MAX), plus twice the error accumulated so far. */
double rt_bound(const rt_case *k, double R, int nranks, int ring_steps, int extra);

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
rt_result rt_check(const rt_case *k, const void *got, const void *ref, size_t n, double bound, int nranks);
/* rt_check as one check of t, described by `what` (with the first element
 * beyond the guarantee); returns the result. */
#define rt_check_result(t, what, k, got, ref, n, bound) \
    rt_check_result_at(t, what, k, got, ref, n, bound, __FILE__, __LINE__)
rt_result rt_check_result_at(mt_state *t, const char *what, const rt_case *k, const void *got, const void *ref,
                             size_t n, double bound, const char *file, int line);
/* A lossy call between the statistics s0 and s1 ran compressed (from 2
 * ranks; on one rank it must fall back as too small). */
#define rt_check_compressed(t, s0, s1, what) rt_check_compressed_at(t, s0, s1, what, __FILE__, __LINE__)
void rt_check_compressed_at(mt_state *t, const ZMPI_Stats *s0, const ZMPI_Stats *s1, const char *what,
                            const char *file, int line);
/* Prints "REPORT <label>: max err / bound = ..., ratio ..." (raw and sent:
 * bytes compressed and sent). */
void rt_print_report(const char *label, double worst, double bound, unsigned long long raw,
                     unsigned long long sent);

/* The inputs of the fallback tests, n elements each: integers, a real field
 * (float) and values near 1 (for MPI_PROD); free them. */
void rt_fallback_inputs(size_t n, int rank, int **iv, float **fv, float **pv);

/* 64-bit FNV-1a of a buffer (to compare results across ranks). */
unsigned long long rt_hash(const void *p, size_t n);
/* 1 if every rank passed the same hash. */
int rt_same_everywhere(unsigned long long h, MPI_Comm comm);

/* Sets a full configuration on comm (chunk and one collective's algorithm
 * too); returns ZMPI_Comm_set_config's code. */
int rt_config(MPI_Comm comm, const rt_case *k, size_t min_bytes, size_t chunk, ZMPI_Coll coll, int algo);
/* The same with another codec (ZMPI_CODEC_AUTO: SUMs on grid codes). */
int rt_config_codec(MPI_Comm comm, const rt_case *k, size_t min_bytes, size_t chunk, ZMPI_Coll coll, int algo,
                    zmpi_codec codec);

/* The same with ZMPI_NODE_RANKS = node_ranks (< 0: the environment's). */
int rt_config_nodes(MPI_Comm comm, const rt_case *k, size_t min_bytes, size_t chunk, ZMPI_Coll coll, int algo,
                    zmpi_codec codec, int node_ranks);

#endif
