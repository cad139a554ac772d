/*
 * Harness for the MPI tests: checks that count failures on every rank,
 * real-field test data, and element-wise bound checks against plain MPI.
 *
 *   int main(int argc, char **argv) {
 *       mt_state t; mt_init(&t, &argc, &argv, "test_bcast");
 *       ... MT_CHECK(&t, cond, "fmt", ...);
 *       return mt_finish(&t);      // prints "<name> np=N: X checks, Y failures" on rank 0
 *   }
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

#define MT_CHECK(t, cond, ...)                                                          \
    do {                                                                                \
        (t)->checks++;                                                                  \
        if (!(cond)) {                                                                  \
            if ((t)->failures++ < 20) {                                                 \
                fprintf(stderr, "FAIL [rank %d/%d] %s:%d: %s: ", (t)->rank, (t)->size,  \
                        __FILE__, __LINE__, #cond);                                     \
                fprintf(stderr, __VA_ARGS__);                                           \
                fprintf(stderr, "\n");                                                  \
            }                                                                           \
        }                                                                               \
    } while (0)

static inline void mt_init(mt_state *t, int *argc, char ***argv, const char *name)
{
    MPI_Init(argc, argv);
    t->name = name;
    t->checks = t->failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static inline int mt_finish(mt_state *t)
{
    long loc[2] = {t->checks, t->failures}, tot[2] = {0, 0};
    MPI_Reduce(loc, tot, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (t->rank == 0)
        printf("%s np=%d: %ld checks, %ld failures\n", t->name, t->size, tot[0], tot[1]);
    int bad = 0, any = 0;
    bad = t->failures > 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0;
}

/* Fills n elements (float or double) from a real field of the shared data
 * directory, tiled, starting at element `offset` (use the rank to make ranks
 * differ). Falls back to a smooth synthetic field if the data are missing. */
static inline void mt_fill_field(void *buf, size_t n, MPI_Datatype type, size_t offset)
{
    static const char *file = "pop_t_384x320.f32";
    const char *dir = getenv("ZMPI_DATA");
#ifdef ZMPI_TEST_DATA_DIR
    if (!dir)
        dir = ZMPI_TEST_DATA_DIR;
#endif
    float *src = NULL;
    size_t m = 0;
    if (dir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        FILE *f = fopen(path, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            long sz = ftell(f);
            fseek(f, 0, SEEK_SET);
            if (sz > 0) {
                src = malloc((size_t)sz);
                m = src ? fread(src, 4, (size_t)sz / 4, f) : 0;
            }
            fclose(f);
        }
    }
    for (size_t i = 0; i < n; i++) {
        size_t j = i + offset * 7919;
        double v = m ? (double)src[j % m] + 1e-3 * (double)((j / m) % 7)
                     : 280.0 + 10.0 * sin(0.001 * (double)j) + cos(0.013 * (double)j);
        if (type == MPI_FLOAT)
            ((float *)buf)[i] = (float)v;
        else
            ((double *)buf)[i] = v;
    }
    free(src);
}

static inline double mt_get(const void *p, size_t i, MPI_Datatype type)
{
    return type == MPI_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* Number of elements of got that differ from ref by more than eb (in long
 * double); non-finite reference values must be reproduced bit-exactly. With
 * eb == 0 the arrays must be byte-identical. *worst gets max |got - ref|. */
static inline size_t mt_violations(const void *got, const void *ref, size_t n, MPI_Datatype type,
                                   double eb, double *worst)
{
    size_t bad = 0;
    size_t es = type == MPI_FLOAT ? 4 : 8;
    double w = 0;
    for (size_t i = 0; i < n; i++) {
        double a = mt_get(got, i, type), b = mt_get(ref, i, type);
        if (eb == 0.0 || !isfinite(b)) {
            if (memcmp((const char *)got + i * es, (const char *)ref + i * es, es))
                bad++;
            continue;
        }
        long double d = fabsl((long double)a - (long double)b);
        if ((double)d > w || d != d)
            w = (double)d;
        if (!(d <= (long double)eb))
            bad++;
    }
    if (worst)
        *worst = w;
    return bad;
}

/* Finite max - min of a local array, reduced over comm. */
static inline double mt_global_range(const void *buf, size_t n, MPI_Datatype type, MPI_Comm comm)
{
    double mm[2] = {-INFINITY, -INFINITY}, g[2];
    for (size_t i = 0; i < n; i++) {
        double v = mt_get(buf, i, type);
        if (isfinite(v)) {
            mm[0] = fmax(mm[0], -v);
            mm[1] = fmax(mm[1], v);
        }
    }
    MPI_Allreduce(mm, g, 2, MPI_DOUBLE, MPI_MAX, comm);
    return g[1] + g[0];
}

/* Sets a configuration on comm. */
static inline void mt_config(MPI_Comm comm, zmpi_codec codec, zmpi_eb_mode mode, double eb,
                             ZMPI_Scope scope, size_t min_bytes)
{
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    cfg.codec = codec;
    cfg.eb_mode = mode;
    cfg.eb = eb;
    cfg.scope = scope;
    cfg.min_bytes = min_bytes;
    ZMPI_Comm_set_config(comm, &cfg);
}

#endif
