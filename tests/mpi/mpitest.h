/*
 * Harness for the MPI tests (library zmpi_mpitest, mpitest.c): checks that
 * count failures on every rank, real-field test data, and element-wise bound
 * checks against plain MPI.
 *
 *   int main(int argc, char **argv) {
 *       mt_state t; mt_init(&t, &argc, &argv, "test_bcast");
 *       ... MT_CHECK(&t, cond, "fmt", ...);
 *       return mt_finish(&t);      // prints "<name> np=N: X checks, Y failures" on rank 0
 *   }
 * mt_finish fails (exit status 1 on every rank) if any check failed on any
 * rank, or if any rank ran no check at all.
 *
 * The helpers of the data-movement tests are in movement.h, those of the
 * reduction tests in reduction.h (the same library).
 */
#ifndef ZMPI_MPITEST_H
#define ZMPI_MPITEST_H

#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zmpi/zmpi.h"

typedef struct mt_state {
    const char *name;
    int rank, size;
    long checks, failures;
} mt_state;

#define MT_CHECK(t, cond, ...) MT_CHECK_AT(t, __FILE__, __LINE__, cond, __VA_ARGS__)
/* The same, reporting the given source location (for checks in helpers). */
#define MT_CHECK_AT(t, file, line, cond, ...)                                           \
    do {                                                                                \
        (t)->checks++;                                                                  \
        if (!(cond)) {                                                                  \
            if ((t)->failures++ < 20) {                                                 \
                fprintf(stderr, "FAIL [rank %d/%d] %s:%d: %s: ", (t)->rank, (t)->size,  \
                        file, line, #cond);                                             \
                fprintf(stderr, __VA_ARGS__);                                           \
                fprintf(stderr, "\n");                                                  \
            }                                                                           \
        }                                                                               \
    } while (0)

/* MPI_Init, then the state of MPI_COMM_WORLD (errors return). */
void mt_init(mt_state *t, int *argc, char ***argv, const char *name);
/* MPI_Init_thread with the required level; returns the level provided. */
int mt_init_thread(mt_state *t, int *argc, char ***argv, const char *name, int required);
/* Sums the checks and failures over all ranks, prints them (rank 0),
 * finalizes MPI; returns 1 on every rank if any rank failed or ran no check. */
int mt_finish(mt_state *t);

/* malloc that ends the job when memory is exhausted (tests only). */
void *mt_xmalloc(size_t n);
/* The statistics of comm (zeros if it has none). */
ZMPI_Stats mt_stats(MPI_Comm comm);
/* ceil(log2(n)): the rounds of a binomial tree of n ranks. */
int mt_ceil_log2(int n);

/* Checks that an MPI call returned MPI_SUCCESS, with MPI's error string of
 * the code when it did not. */
#define MT_CHECK_RC(t, rc, what) mt_check_rc_at((t), (rc), (what), __FILE__, __LINE__)
void mt_check_rc_at(mt_state *t, int rc, const char *what, const char *file, int line);

/* Fills n elements (float or double) from a real field of the shared data
 * directory, tiled, starting at element `offset` (use the rank to make ranks
 * differ). Falls back to a smooth synthetic field if the data are missing. */
void mt_fill_field(void *buf, size_t n, MPI_Datatype type, size_t offset);
/* Element i of a float or double array, as a double. */
double mt_get(const void *p, size_t i, MPI_Datatype type);
/* Number of elements of got that differ from ref by more than eb (in long
 * double); non-finite reference values must be reproduced bit-exactly. With
 * eb == 0 the arrays must be byte-identical. *worst gets max |got - ref|. */
size_t mt_violations(const void *got, const void *ref, size_t n, MPI_Datatype type, double eb, double *worst);
/* Finite max - min of a local array, reduced over comm. */
double mt_global_range(const void *buf, size_t n, MPI_Datatype type, MPI_Comm comm);

/* Sets a configuration on comm. */
void mt_config(MPI_Comm comm, zmpi_codec codec, zmpi_eb_mode mode, double eb, ZMPI_Scope scope,
               size_t min_bytes);
/* Tells comm's settings the network (bytes/s, seconds per message) that the
 * compress-or-not model decides for; returns ZMPI_Comm_set_config's code. */
int mt_set_network(MPI_Comm comm, double bw, double lat);

/* The algorithm that runs when `algo` (an id of ZMPI_Coll_algorithms) is
 * configured for coll on `size` ranks: the algorithm itself, except for the
 * documented fallbacks - Allgather `rdb` and Reduce_scatter `rhd` run the
 * ring when size is not a power of two. */
int mt_algo_ran(ZMPI_Coll coll, int algo, int size);

/* Checks that the last call of coll on comm ran algorithm `want`
 * (ZMPI_Stats.last_algorithm; ZMPI_ALGO_MPI: it ran as plain MPI). */
#define mt_check_ran(t, comm, coll, want, what) mt_check_ran_at(t, comm, coll, want, what, __FILE__, __LINE__)
void mt_check_ran_at(mt_state *t, MPI_Comm comm, ZMPI_Coll coll, int want, const char *what, const char *file,
                     int line);

/* After a call of coll with `algo` configured (an explicit id or
 * ZMPI_ALGO_MPI) that ran compressed if `compressed`, else as plain MPI:
 * the algorithm that must have run. */
#define mt_check_algo(t, comm, coll, algo, compressed, what)                                                       \
    mt_check_ran_at(t, comm, coll, (compressed) ? mt_algo_ran(coll, algo, (t)->size) : ZMPI_ALGO_MPI, what,        \
                    __FILE__, __LINE__)

/* Only coll's entry of last_algorithm changed between s0 and s1 (a
 * collective built from other collectives' pieces must not report theirs). */
#define mt_check_only(t, s0, s1, coll, what) mt_check_only_at(t, s0, s1, coll, what, __FILE__, __LINE__)
void mt_check_only_at(mt_state *t, const ZMPI_Stats *s0, const ZMPI_Stats *s1, ZMPI_Coll coll, const char *what,
                      const char *file, int line);

/* A call that must run as plain MPI (a fallback) between the statistics s0
 * and s1: it must not be counted as compressed, must be counted as a
 * fallback of each kind expected (type, below min_bytes, configuration), and
 * last_algorithm of coll on comm must be ZMPI_ALGO_MPI. */
#define mt_check_fallback(t, comm, coll, s0, s1, expect_type, expect_small, expect_config, what)                    \
    mt_check_fallback_at(t, comm, coll, s0, s1, expect_type, expect_small, expect_config, what, __FILE__, __LINE__)
void mt_check_fallback_at(mt_state *t, MPI_Comm comm, ZMPI_Coll coll, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                          int expect_type, int expect_small, int expect_config, const char *what, const char *file,
                          int line);

#endif
