/* The core of the MPI test harness (mpitest.h). */
#include "mpitest.h"

static void mt_setup(mt_state *t, const char *name)
{
    t->name = name;
    t->checks = t->failures = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &t->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t->size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

void mt_init(mt_state *t, int *argc, char ***argv, const char *name)
{
    MPI_Init(argc, argv);
    mt_setup(t, name);
}

int mt_init_thread(mt_state *t, int *argc, char ***argv, const char *name, int required)
{
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(argc, argv, required, &provided);
    mt_setup(t, name);
    return provided;
}

int mt_finish(mt_state *t)
{
    /* A rank that ran no check verified nothing: that is a failure, never a
     * pass (a test that has nothing to check at some rank count must not be
     * registered there). */
    if (t->checks == 0) {
        fprintf(stderr, "FAIL [rank %d/%d] %s: ran 0 checks\n", t->rank, t->size, t->name);
        t->failures++;
    }
    long loc[2] = {t->checks, t->failures}, tot[2] = {0, 0};
    MPI_Reduce(loc, tot, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (t->rank == 0)
        printf("%s np=%d: %ld checks, %ld failures\n", t->name, t->size, tot[0], tot[1]);
    int bad = t->failures > 0, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any ? 1 : 0; /* on every rank */
}

void *mt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory (%zu bytes)\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

ZMPI_Stats mt_stats(MPI_Comm comm)
{
    ZMPI_Stats s;
    memset(&s, 0, sizeof s);
    ZMPI_Comm_get_stats(comm, &s);
    return s;
}

int mt_ceil_log2(int n)
{
    int d = 0;
    while ((1 << d) < n)
        d++;
    return d;
}

void mt_fill_field(void *buf, size_t n, MPI_Datatype type, size_t offset)
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

double mt_get(const void *p, size_t i, MPI_Datatype type)
{
    return type == MPI_FLOAT ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

size_t mt_violations(const void *got, const void *ref, size_t n, MPI_Datatype type, double eb, double *worst)
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

double mt_global_range(const void *buf, size_t n, MPI_Datatype type, MPI_Comm comm)
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

void mt_config(MPI_Comm comm, zmpi_codec codec, zmpi_eb_mode mode, double eb, ZMPI_Scope scope, size_t min_bytes)
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

int mt_set_network(MPI_Comm comm, double bw, double lat)
{
    ZMPI_Config cfg;
    int rc = ZMPI_Comm_get_config(comm, &cfg);
    if (rc != MPI_SUCCESS)
        return rc;
    cfg.net_bw = bw;
    cfg.net_lat = lat;
    return ZMPI_Comm_set_config(comm, &cfg);
}

int mt_algo_ran(ZMPI_Coll coll, int algo, int size)
{
    int pow2 = size > 0 && (size & (size - 1)) == 0;
    if (!pow2 && ((coll == ZMPI_COLL_ALLGATHER && algo == ZMPI_Coll_algorithm_from_name(coll, "rdb")) ||
                  (coll == ZMPI_COLL_REDUCE_SCATTER && algo == ZMPI_Coll_algorithm_from_name(coll, "rhd"))))
        return ZMPI_Coll_algorithm_from_name(coll, "ring");
    return algo;
}

void mt_check_ran_at(mt_state *t, MPI_Comm comm, ZMPI_Coll coll, int want, const char *what, const char *file,
                     int line)
{
    ZMPI_Stats s = mt_stats(comm);
    MT_CHECK_AT(t, file, line, s.last_algorithm[coll] == want, "%s: %s ran algorithm %d, expected %d", what,
                ZMPI_Coll_name(coll), s.last_algorithm[coll], want);
}

void mt_check_only_at(mt_state *t, const ZMPI_Stats *s0, const ZMPI_Stats *s1, ZMPI_Coll coll, const char *what,
                      const char *file, int line)
{
    int other = 0;
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        other += k != (int)coll && s0->last_algorithm[k] != s1->last_algorithm[k];
    MT_CHECK_AT(t, file, line, other == 0, "%s: %d other collectives' last_algorithm changed", what, other);
}

void mt_check_fallback_at(mt_state *t, MPI_Comm comm, ZMPI_Coll coll, const ZMPI_Stats *s0, const ZMPI_Stats *s1,
                          int expect_type, int expect_small, int expect_config, const char *what, const char *file,
                          int line)
{
    MT_CHECK_AT(t, file, line, s1->compressed == s0->compressed, "%s: counted as compressed", what);
    mt_check_ran_at(t, comm, coll, ZMPI_ALGO_MPI, what, file, line);
    if (expect_type)
        MT_CHECK_AT(t, file, line, s1->fallback_type == s0->fallback_type + 1, "%s: not counted as type fallback",
                    what);
    if (expect_small)
        MT_CHECK_AT(t, file, line, s1->fallback_small == s0->fallback_small + 1, "%s: not counted as small", what);
    if (expect_config)
        MT_CHECK_AT(t, file, line, s1->fallback_config == s0->fallback_config + 1, "%s: not counted as config",
                    what);
}

void mt_check_rc_at(mt_state *t, int rc, const char *what, const char *file, int line)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    if (rc != MPI_SUCCESS)
        MPI_Error_string(rc, msg, &len);
    MT_CHECK_AT(t, file, line, rc == MPI_SUCCESS, "%s: %s", what, msg);
}
