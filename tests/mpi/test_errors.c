/*
 * Misuse that zmpi can detect is an error raised through the
 * communicator's error handler - never a silent wrong result or a hang:
 *   - malformed settings (environment) name the variable, on every call;
 *   - zmpi's own errors reach a user error handler exactly once;
 *   - ranks whose settings differ get an error from every collective (no
 *     hang), on every rank, from either root;
 *   - point-to-point works whatever the two ends' settings (a receiver
 *     without a bound decodes a compressed message, a compressing receiver
 *     takes raw data), and raw data that reads as a stream arrives intact;
 *   - truncation and float/double mismatches are reported precisely.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mpitest.h"

static mt_state T;

/* ---- a user error handler that records what it gets ---- */
static int eh_calls, eh_last;
static void record_eh(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    eh_calls++;
    eh_last = *code;
}

static int cls_of(int rc)
{
    int cls = -1;
    ZMPI_Error_class(rc, &cls);
    return cls;
}

static int says(int rc, const char *what)
{
    char s[MPI_MAX_ERROR_STRING];
    int l = 0;
    MPI_Error_string(rc, s, &l);
    return strstr(s, what) != NULL;
}

/* ---- 1. settings from the environment ---- */
static void env_parsing(void)
{
    static const struct {
        const char *name, *value, *bad;
    } cases[] = {
        {"ZMPI_EB_MODE", "absolute", "ZMPI_EB_MODE"}, {"ZMPI_EB", "-1", "ZMPI_EB"},
        {"ZMPI_EB", "nan", "ZMPI_EB"},                {"ZMPI_EB", "inf", "ZMPI_EB"},
        {"ZMPI_EB", "abc", "ZMPI_EB"},                {"ZMPI_EB", "0", "ZMPI_EB"},
        {"ZMPI_EB", "1e-3x", "ZMPI_EB"},              {"ZMPI_CODEC", "nonexistent", "ZMPI_CODEC"},
        {"ZMPI_ALLREDUCE_ALGORITHM", "bogus", "ZMPI_ALLREDUCE_ALGORITHM"},
        {"ZMPI_THREADS", "1000", "ZMPI_THREADS"},     {"ZMPI_THREADS", "-2", "ZMPI_THREADS"},
        {"ZMPI_EB_SCOPE", "everything", "ZMPI_EB_SCOPE"}, {"ZMPI_MIN_BYTES", "64k", "ZMPI_MIN_BYTES"},
        {"ZMPI_NET_BW", "fast", "ZMPI_NET_BW"},       {"ZMPI_EBMODE", "abs", "ZMPI_*"},
    };
    ZMPI_Config cfg;
    const char *bad = NULL;
    setenv("ZMPI_EB", "1e-3", 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *old = getenv(cases[i].name);
        char keep[64] = "";
        if (old)
            snprintf(keep, sizeof keep, "%s", old);
        setenv(cases[i].name, cases[i].value, 1);
        bad = NULL;
        int rc = ZMPI_Config_from_env(&cfg, &bad);
        MT_CHECK(&T, rc == MPI_ERR_ARG && bad && !strcmp(bad, cases[i].bad), "%s=%s: rc %d, bad %s",
                 cases[i].name, cases[i].value, rc, bad ? bad : "(none)");
        if (old)
            setenv(cases[i].name, keep, 1);
        else
            unsetenv(cases[i].name);
    }
    /* the valid spellings */
    setenv("ZMPI_EB_MODE", "abs", 1);
    int rc = ZMPI_Config_from_env(&cfg, &bad);
    MT_CHECK(&T, rc == MPI_SUCCESS && cfg.eb_mode == ZMPI_EB_ABS && cfg.eb == 1e-3, "ZMPI_EB_MODE=abs: rc %d mode %d",
             rc, (int)cfg.eb_mode);
    setenv("ZMPI_EB_MODE", "REL", 1);
    rc = ZMPI_Config_from_env(&cfg, &bad);
    MT_CHECK(&T, rc == MPI_SUCCESS && cfg.eb_mode == ZMPI_EB_REL, "ZMPI_EB_MODE=REL: rc %d", rc);
    unsetenv("ZMPI_EB_MODE");
    unsetenv("ZMPI_EB");
}

/* A malformed variable makes every zmpi call on a communicator that reads
 * the environment fail, through its error handler, naming the variable. */
static void env_reaches_calls(void)
{
    MPI_Comm c;
    MPI_Errhandler eh;
    float x[4] = {1, 2, 3, 4}, y[4];
    setenv("ZMPI_EB", "1e-3", 1);
    setenv("ZMPI_EB_MODE", "absolute", 1);
    MPI_Comm_split(MPI_COMM_WORLD, 0, T.rank, &c); /* a new communicator reads the environment */
    MPI_Comm_create_errhandler(record_eh, &eh);
    MPI_Comm_set_errhandler(c, eh);
    eh_calls = 0;
    int rc = ZMPI_Allreduce(x, y, 4, MPI_FLOAT, MPI_SUM, c);
    MT_CHECK(&T, rc != MPI_SUCCESS && cls_of(rc) == MPI_ERR_ARG && says(rc, "ZMPI_EB_MODE=absolute"),
             "Allreduce with ZMPI_EB_MODE=absolute: rc %d class %d", rc, cls_of(rc));
    MT_CHECK(&T, eh_calls == 1 && eh_last == rc, "error handler called %d times", eh_calls);
    eh_calls = 0;
    rc = ZMPI_Bcast(x, 4, MPI_FLOAT, 0, c);
    MT_CHECK(&T, rc != MPI_SUCCESS && eh_calls == 1, "Bcast: rc %d, handler %d", rc, eh_calls);
    eh_calls = 0;
    rc = ZMPI_Sendrecv(x, 4, MPI_FLOAT, T.rank, 5, y, 4, MPI_FLOAT, T.rank, 5, c, MPI_STATUS_IGNORE);
    MT_CHECK(&T, rc != MPI_SUCCESS && cls_of(rc) == MPI_ERR_ARG && eh_calls == 1, "Sendrecv: rc %d handler %d", rc,
             eh_calls);
    ZMPI_Config cfg;
    eh_calls = 0;
    rc = ZMPI_Comm_get_config(c, &cfg);
    MT_CHECK(&T, rc != MPI_SUCCESS && eh_calls == 1, "get_config: rc %d", rc);
    /* a valid configuration set on every rank makes the communicator usable */
    ZMPI_Config_from_env(&cfg, NULL); /* fails, but fills the defaults */
    cfg.eb_mode = ZMPI_EB_ABS;
    cfg.eb = 1e-3;
    rc = ZMPI_Comm_set_config(c, &cfg);
    MT_CHECK(&T, rc == MPI_SUCCESS, "set_config after a bad environment: %d", rc);
    rc = ZMPI_Allreduce(x, y, 4, MPI_FLOAT, MPI_SUM, c);
    MT_CHECK(&T, rc == MPI_SUCCESS && y[0] == (float)T.size, "Allreduce after set_config: rc %d", rc);
    unsetenv("ZMPI_EB_MODE");
    unsetenv("ZMPI_EB");
    MPI_Comm_free(&c);
    MPI_Errhandler_free(&eh);
}

/* ---- 4. ranks with different settings ---- */
static void base_cfg(ZMPI_Config *cfg)
{
    ZMPI_Config_from_env(cfg, NULL);
    cfg->eb_mode = ZMPI_EB_REL;
    cfg->eb = 1e-3;
    cfg->min_bytes = 0;
}

static void expect_mismatch(MPI_Comm c, const char *what, const char *field)
{
    int n = 50000;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4);
    mt_fill_field(a, (size_t)n, MPI_FLOAT, (size_t)T.rank * 7);
    for (int root = 0; root < T.size; root += T.size > 1 ? T.size - 1 : 1) {
        int rc = ZMPI_Bcast(a, n, MPI_FLOAT, root, c);
        MT_CHECK(&T, rc != MPI_SUCCESS && cls_of(rc) == MPI_ERR_OTHER && says(rc, field),
                 "%s: Bcast from %d returned %d (class %d)", what, root, rc, cls_of(rc));
    }
    int rc = ZMPI_Allreduce(a, b, n, MPI_FLOAT, MPI_SUM, c);
    MT_CHECK(&T, rc != MPI_SUCCESS && cls_of(rc) == MPI_ERR_OTHER, "%s: Allreduce returned %d", what, rc);
    rc = ZMPI_Allgather(a, 10, MPI_FLOAT, b, 10, MPI_FLOAT, c);
    MT_CHECK(&T, rc != MPI_SUCCESS, "%s: Allgather returned %d", what, rc);
    free(a);
    free(b);
}

static void disagreement(void)
{
    MPI_Comm c;
    ZMPI_Config cfg;
    if (T.size < 2)
        return;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    /* a different min_bytes on the last rank */
    base_cfg(&cfg);
    if (T.rank == T.size - 1)
        cfg.min_bytes = 1 << 30;
    MT_CHECK(&T, ZMPI_Comm_set_config(c, &cfg) == MPI_SUCCESS, "set_config with per-rank min_bytes");
    int prc = ZMPI_Comm_prepare(c); /* the set-up compares the settings too: an error on every rank */
    MT_CHECK(&T, prc != MPI_SUCCESS && cls_of(prc) == MPI_ERR_OTHER && says(prc, "ZMPI_MIN_BYTES"),
             "ZMPI_Comm_prepare with per-rank min_bytes returned %d", prc);
    expect_mismatch(c, "min_bytes", "ZMPI_MIN_BYTES");
    /* a bound on rank 0 only */
    base_cfg(&cfg);
    if (T.rank != 0)
        cfg.eb_mode = ZMPI_EB_NONE;
    ZMPI_Comm_set_config(c, &cfg);
    expect_mismatch(c, "bound on rank 0 only", "ZMPI_EB_MODE");
    /* an invalid configuration on rank 1: an error there, the collectives fail everywhere */
    base_cfg(&cfg);
    if (T.rank == 1)
        cfg.eb = -1;
    int rc = ZMPI_Comm_set_config(c, &cfg);
    MT_CHECK(&T, T.rank == 1 ? cls_of(rc) == MPI_ERR_ARG : rc == MPI_SUCCESS, "invalid on rank 1: rc %d", rc);
    expect_mismatch(c, "invalid on rank 1", T.rank == 1 ? "failed on this rank" : "rank 1");
    /* the same settings everywhere: collectives run again */
    base_cfg(&cfg);
    ZMPI_Comm_set_config(c, &cfg);
    float v = 1, s = 0;
    rc = ZMPI_Allreduce(&v, &s, 1, MPI_FLOAT, MPI_SUM, c);
    MT_CHECK(&T, rc == MPI_SUCCESS && s == (float)T.size, "agreeing again: rc %d sum %g", rc, (double)s);
    MT_CHECK(&T, ZMPI_Comm_prepare(c) == MPI_SUCCESS, "ZMPI_Comm_prepare with agreeing settings");
    MPI_Comm_free(&c);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = ZMPI_Comm_prepare(MPI_COMM_NULL);
    MT_CHECK(&T, rc != MPI_SUCCESS && cls_of(rc) == MPI_ERR_ARG, "ZMPI_Comm_prepare(MPI_COMM_NULL) returned %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    /* from the environment: a bound on rank 0 only */
    if (T.rank == 0)
        setenv("ZMPI_EB", "1e-3", 1);
    MPI_Comm_split(MPI_COMM_WORLD, 0, T.rank, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    prc = ZMPI_Comm_prepare(c);
    MT_CHECK(&T, prc != MPI_SUCCESS && says(prc, "ZMPI_EB"), "ZMPI_Comm_prepare, ZMPI_EB on rank 0 only: %d", prc);
    expect_mismatch(c, "ZMPI_EB on rank 0 only", "ZMPI_EB");
    unsetenv("ZMPI_EB");
    MPI_Comm_free(&c);
}

/* ---- 3. point-to-point whatever the ends' settings ---- */
static void check_bound(const float *got, const float *ref, int n, double eb_abs, const char *what)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)ref[i]);
        worst = d > worst ? d : worst;
    }
    MT_CHECK(&T, worst <= eb_abs, "%s: max error %g > bound %g", what, worst, eb_abs);
}

static void mixed_ends(void)
{
    MPI_Comm c;
    ZMPI_Config cfg;
    ZMPI_Stats s0, s1;
    int n = 100000, right = (T.rank + 1) % T.size, left = (T.rank + T.size - 1) % T.size, cnt = -1;
    float *a = malloc((size_t)n * 4), *b = malloc((size_t)n * 4), *ref = malloc((size_t)n * 4);
    MPI_Status st;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    mt_fill_field(a, (size_t)n, MPI_FLOAT, (size_t)T.rank * 101);
    mt_fill_field(ref, (size_t)n, MPI_FLOAT, (size_t)left * 101);
    /* even ranks compress (ABS 1e-3), odd ranks have no bound */
    base_cfg(&cfg);
    cfg.eb_mode = T.rank % 2 ? ZMPI_EB_NONE : ZMPI_EB_ABS;
    ZMPI_Comm_set_config(c, &cfg);
    ZMPI_Comm_get_stats(c, &s0);
    int rc = ZMPI_Sendrecv(a, n, MPI_FLOAT, right, 7, b, n, MPI_FLOAT, left, 7, c, &st);
    MPI_Get_count(&st, MPI_FLOAT, &cnt);
    ZMPI_Comm_get_stats(c, &s1);
    MT_CHECK(&T, rc == MPI_SUCCESS && cnt == n, "mixed ends: rc %d count %d", rc, cnt);
    check_bound(b, ref, n, left % 2 ? 0.0 : 1e-3, "mixed ends");
    if (T.rank % 2 == 0 && T.size > 1)
        MT_CHECK(&T, s1.bytes_sent > s0.bytes_sent && s1.bytes_sent - s0.bytes_sent < (unsigned long long)n * 4 / 2,
                 "the compressing end sent %llu bytes", s1.bytes_sent - s0.bytes_sent);
    /* too small a receive: a truncation error that says so (every sender
     * compresses here, smooth data, to a stream that fits the receive:
     * truncating a longer message is MPI's own business - MPICH raises it on
     * MPI_COMM_WORLD from the completion call - and Open MPI 4.1's
     * shared-memory single-copy path writes past the receive buffer when it
     * does; a block of the real field at some ranks' offsets compresses to
     * more than half its size at this bound) */
    cfg.eb_mode = ZMPI_EB_ABS;
    ZMPI_Comm_set_config(c, &cfg);
    for (int i = 0; i < n; i++)
        a[i] = sinf((float)i * 1e-3f) * 10.0f + (float)T.rank;
    if (T.size > 1) {
        rc = ZMPI_Sendrecv(a, n, MPI_FLOAT, right, 8, b, n / 2, MPI_FLOAT, left, 8, c, MPI_STATUS_IGNORE);
        MT_CHECK(&T, cls_of(rc) == MPI_ERR_TRUNCATE, "truncation: rc %d class %d", rc, cls_of(rc));
        /* doubles into floats */
        double *d = malloc((size_t)n * 8);
        for (int i = 0; i < n; i++)
            d[i] = a[i];
        rc = ZMPI_Sendrecv(d, n, MPI_DOUBLE, right, 9, b, n, MPI_FLOAT, left, 9, c, MPI_STATUS_IGNORE);
        MT_CHECK(&T, cls_of(rc) == MPI_ERR_TYPE && says(rc, "MPI_DOUBLE"), "doubles as floats: rc %d class %d", rc,
                 cls_of(rc));
        free(d);
    }
    /* raw data that reads as a zmpi stream of its own size arrives intact
     * (the sender frames it), at both ends' settings; sent uncompressed */
    cfg.min_bytes = (size_t)1 << 30;
    ZMPI_Comm_set_config(c, &cfg);
    zmpi_ctx *z = zmpi_ctx_create();
    zmpi_ctx_set_codec(z, ZMPI_CODEC_FZL);
    zmpi_ctx_set_bound(z, ZMPI_EB_ABS, 1e-2);
    zmpi_ctx_set_param(z, ZMPI_P_MESSAGE, 1); /* the bytes of a message, as they travel */
    unsigned char *fake = malloc((size_t)n * 4 + 1024);
    size_t len = 0;
    mt_fill_field(ref, (size_t)n, MPI_FLOAT, 0); /* the same on every rank */
    for (int m = 1000; m < 1100 && !len; m++) {
        ptrdiff_t l = zmpi_compress(z, ref, (size_t)m, ZMPI_FLOAT, fake, (size_t)n * 4 + 1024);
        if (l > 0 && l % 4 == 0)
            len = (size_t)l;
    }
    zmpi_ctx_free(z);
    MT_CHECK(&T, len > 0, "no stream of a multiple of 4 bytes found");
    if (len) {
        memset(b, 0, (size_t)n * 4);
        rc = ZMPI_Sendrecv(fake, (int)(len / 4), MPI_FLOAT, right, 10, b, n, MPI_FLOAT, left, 10, c, &st);
        MPI_Get_count(&st, MPI_FLOAT, &cnt);
        MT_CHECK(&T, rc == MPI_SUCCESS && cnt == (int)(len / 4) && !memcmp(b, fake, len),
                 "data that reads as a stream: rc %d count %d (sent %zu floats)", rc, cnt, len / 4);
        /* the same bytes in the type map of a strided type (every other
         * float): a raw derived message goes with the user's type, unless
         * its first element could start a stream - then framed as above */
        int nf = (int)(len / 4);
        float *spread = malloc((size_t)nf * 2 * sizeof(float));
        for (int i = 0; i < nf; i++) {
            memcpy(&spread[2 * i], fake + 4 * (size_t)i, 4);
            spread[2 * i + 1] = -1.0f;
        }
        MPI_Datatype every_other;
        MPI_Type_vector(nf, 1, 2, MPI_FLOAT, &every_other);
        MPI_Type_commit(&every_other);
        memset(b, 0, (size_t)n * 4);
        rc = ZMPI_Sendrecv(spread, 1, every_other, right, 11, b, n, MPI_FLOAT, left, 11, c, &st);
        MPI_Get_count(&st, MPI_FLOAT, &cnt);
        MT_CHECK(&T, rc == MPI_SUCCESS && cnt == nf && !memcmp(b, fake, len),
                 "a strided type whose elements read as a stream: rc %d count %d (sent %d floats)", rc, cnt, nf);
        MPI_Type_free(&every_other);
        free(spread);
    }
    free(fake);
    free(a);
    free(b);
    free(ref);
    MPI_Comm_free(&c);
}

/* ---- 9. which communicators inherit a configuration ---- */
static void inheritance(void)
{
    MPI_Comm d, s;
    ZMPI_Config cfg, env, got;
    base_cfg(&cfg);
    cfg.min_bytes = 12345;
    ZMPI_Comm_set_config(MPI_COMM_WORLD, &cfg);
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    MPI_Comm_split(MPI_COMM_WORLD, 0, T.rank, &s);
    ZMPI_Comm_get_config(d, &got);
    MT_CHECK(&T, got.min_bytes == 12345, "a duplicate inherits: min_bytes %zu", got.min_bytes);
    ZMPI_Config_from_env(&env, NULL);
    ZMPI_Comm_get_config(s, &got);
    MT_CHECK(&T, got.min_bytes == env.min_bytes, "a split communicator starts from the environment");
    MPI_Comm_free(&d);
    MPI_Comm_free(&s);
    ZMPI_Config_from_env(&env, NULL);
    ZMPI_Comm_set_config(MPI_COMM_WORLD, &env);
}

int main(int argc, char **argv)
{
    mt_init(&T, &argc, &argv, "test_errors");
    env_parsing();
    env_reaches_calls();
    disagreement();
    mixed_ends();
    inheritance();
    return mt_finish(&T);
}
