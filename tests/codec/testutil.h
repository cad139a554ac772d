/* Small helpers shared by the codec tests: checks, data generators, RNG. */
#ifndef ZMPI_TESTUTIL_H
#define ZMPI_TESTUTIL_H
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zmpi/codec.h"

typedef struct tstate {
    long checks, failures;
} tstate;

#define CHECK(ts, cond, ...)                                                   \
    do {                                                                       \
        (ts)->checks++;                                                        \
        if (!(cond)) {                                                         \
            if ((ts)->failures++ < 30) {                                       \
                fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
                fprintf(stderr, __VA_ARGS__);                                  \
                fprintf(stderr, "\n");                                         \
            }                                                                  \
        }                                                                      \
    } while (0)

/* splitmix64: deterministic, re-entrant */
static inline uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static inline double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }

enum { GEN_CONST, GEN_SMOOTH, GEN_NOISE, GEN_SPIKES, GEN_HUGE_RANGE, GEN_DENORMAL, GEN_ZEROS,
       GEN_NONFINITE, GEN_NEAR_LIMIT, GEN_STEPS, GEN_COUNT };
static const char *const gen_names[GEN_COUNT] = {"const", "smooth", "noise", "spikes", "huge-range",
                                                 "denormal", "signed-zeros", "nan-inf", "near-limit",
                                                 "steps"};

/* Fills x (as double values, later cast) with pattern g; eb is the absolute
 * bound the test will use (near-limit puts values where x/(2eb) is ~2^30). */
static inline void gen_fill(double *x, size_t n, int g, double eb, uint64_t seed)
{
    uint64_t s = seed * 7919 + (uint64_t)g;
    for (size_t i = 0; i < n; i++) {
        double t = (double)i;
        double v;
        switch (g) {
        case GEN_CONST: v = 273.15; break;
        case GEN_SMOOTH: v = 280.0 + 15.0 * sin(t * 0.003) + 3.0 * cos(t * 0.021); break;
        case GEN_NOISE: v = rng_unit(&s) * 2.0 - 1.0; break;
        case GEN_SPIKES: v = (rng_next(&s) % 97 == 0) ? 1e6 * (rng_unit(&s) - 0.5) : sin(t * 0.01); break;
        case GEN_HUGE_RANGE: v = ldexp(rng_unit(&s) - 0.5, (int)(rng_next(&s) % 200) - 100); break;
        case GEN_DENORMAL: v = (rng_unit(&s) - 0.5) * 1e-39 * (i % 3); break;
        case GEN_ZEROS: v = (i % 2) ? -0.0 : 0.0; break;
        case GEN_NONFINITE: {
            uint64_t k = rng_next(&s) % 8;
            v = k == 0 ? NAN : k == 1 ? INFINITY : k == 2 ? -INFINITY : sin(t * 0.05);
            break;
        }
        case GEN_NEAR_LIMIT: v = 2.0 * eb * (1073741824.0 + ((double)(rng_next(&s) % 64) - 32.0)); break;
        default: v = (double)((i / 37) % 5) * 10.0; break;
        }
        x[i] = v;
    }
}
#endif
