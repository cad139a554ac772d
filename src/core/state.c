/*
 * Per-communicator configuration and statistics, kept as an MPI attribute.
 *
 * The attribute key is the only static of the MPI layer: it is created once
 * (pthread_once) and never changes afterwards. Duplicated communicators
 * inherit the configuration (fresh statistics); the state is freed with the
 * communicator.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "coll/registry.h"
#include "core.h"

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int state_key = MPI_KEYVAL_INVALID; /* written once under key_once */

static zmpi_comm_state *state_new(const ZMPI_Config *cfg, const char *env_error)
{
    zmpi_comm_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->env_error = env_error;
    s->shadow = MPI_COMM_NULL; /* never inherited: each communicator makes its own */
    if (pthread_mutex_init(&s->scratch.lock, NULL)) {
        free(s);
        return NULL;
    }
    return s;
}

static void state_free(zmpi_comm_state *s)
{
    zmpi_scratch_release(&s->scratch);
    pthread_mutex_destroy(&s->scratch.lock);
    free(s);
}

static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old; (void)key; (void)extra;
    const zmpi_comm_state *s = in;
    zmpi_comm_state *n = state_new(&s->cfg, s->env_error);
    if (!n) {
        *flag = 0;
        return MPI_ERR_NO_MEM;
    }
    n->size = s->size; /* a duplicate has the same group and kind */
    n->inter = s->inter;
    *(void **)out = n;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm; (void)key; (void)extra;
    zmpi_comm_state *s = val;
    if (s->shadow != MPI_COMM_NULL)
        PMPI_Comm_free(&s->shadow);
    state_free(s);
    return MPI_SUCCESS;
}

static void make_key(void)
{
    int k;
    if (PMPI_Comm_create_keyval(copy_fn, delete_fn, &k, NULL) == MPI_SUCCESS)
        state_key = k;
}

static int env_double(const char *name, double *out, const char **bad)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (*end || errno || !(d > 0) || !isfinite(d)) {
        if (bad && !*bad)
            *bad = name;
        return -1;
    }
    *out = d;
    return 1;
}

/* A positive number with an optional unit suffix: k/K, M, G, T (powers of
 * 1000) and then "bit"/"b"/"bps" (bits: / 8) or "B" (bytes) for rates; "ns",
 * "us", "ms", "s" for times (kind 't'). Returns 1 or 0 (malformed). */
static int parse_unit(const char *v, char kind, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (end == v || errno || !(d > 0) || !isfinite(d))
        return 0;
    if (kind == 't') {
        if (!strcmp(end, "ns"))
            d *= 1e-9;
        else if (!strcmp(end, "us"))
            d *= 1e-6;
        else if (!strcmp(end, "ms"))
            d *= 1e-3;
        else if (*end && strcmp(end, "s"))
            return 0;
    } else {
        const char *u = end;
        if (*u == 'k' || *u == 'K')
            d *= 1e3, u++;
        else if (*u == 'M')
            d *= 1e6, u++;
        else if (*u == 'G')
            d *= 1e9, u++;
        else if (*u == 'T')
            d *= 1e12, u++;
        if (!strcmp(u, "bit") || !strcmp(u, "b") || !strcmp(u, "bps"))
            d /= 8;
        else if (*u && strcmp(u, "B"))
            return 0;
    }
    *out = d;
    return 1;
}

/* env_double for values with units; returns 1, 0 (unset) or -1 (malformed). */
static int env_unit(const char *name, char kind, double *out, const char **bad)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    if (!parse_unit(v, kind, out)) {
        if (bad && !*bad)
            *bad = name;
        return -1;
    }
    return 1;
}

static int env_size(const char *name, size_t *out, const char **bad)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return 0;
    char *end;
    errno = 0;
    unsigned long long d = strtoull(v, &end, 10);
    if (*end || errno || v[0] == '-') {
        if (bad && !*bad)
            *bad = name;
        return -1;
    }
    *out = (size_t)d;
    return 1;
}

int ZMPI_Config_from_env(ZMPI_Config *cfg, const char **bad)
{
    const char *b = NULL;
    if (!cfg)
        return MPI_ERR_ARG;
    memset(cfg, 0, sizeof *cfg);
    cfg->codec = ZMPI_CODEC_FZL;
    cfg->eb_mode = ZMPI_EB_NONE;
    cfg->eb = 0.0;
    cfg->scope = ZMPI_SCOPE_RESULT;
    cfg->threads = 1;
    cfg->min_bytes = 65536;
    cfg->chunk = 65536;
    cfg->scratch_keep = (size_t)256 << 20;
    const char *v = getenv("ZMPI_CODEC");
    if (v && *v) {
        int c = zmpi_codec_from_name(v);
        if (c < 0)
            b = b ? b : "ZMPI_CODEC";
        else
            cfg->codec = (zmpi_codec)c;
    }
    double eb;
    if (env_double("ZMPI_EB", &eb, &b) == 1) {
        cfg->eb = eb;
        cfg->eb_mode = ZMPI_EB_REL;
        v = getenv("ZMPI_EB_MODE");
        if (v && *v) {
            if (!strcasecmp(v, "abs"))
                cfg->eb_mode = ZMPI_EB_ABS;
            else if (strcasecmp(v, "rel"))
                b = b ? b : "ZMPI_EB_MODE";
        }
    }
    v = getenv("ZMPI_EB_SCOPE");
    if (v && *v) {
        if (!strcasecmp(v, "message"))
            cfg->scope = ZMPI_SCOPE_MESSAGE;
        else if (strcasecmp(v, "result"))
            b = b ? b : "ZMPI_EB_SCOPE";
    }
    size_t sz;
    if (env_size("ZMPI_MIN_BYTES", &sz, &b) == 1)
        cfg->min_bytes = sz;
    if (env_size("ZMPI_CHUNK", &sz, &b) == 1) {
        if (sz < 64 || sz > (1u << 26))
            b = b ? b : "ZMPI_CHUNK";
        else
            cfg->chunk = sz;
    }
    if (env_size("ZMPI_THREADS", &sz, &b) == 1) {
        if (sz > 4096)
            b = b ? b : "ZMPI_THREADS";
        else
            cfg->threads = (int)sz;
    }
    double d;
    v = getenv("ZMPI_SCRATCH"); /* bytes, with the units of rates (256M, 1G); 0 = keep nothing */
    if (v && *v) {
        if (!strcmp(v, "0"))
            cfg->scratch_keep = 0;
        else if (parse_unit(v, 'r', &d) && d < 1e18)
            cfg->scratch_keep = (size_t)d;
        else
            b = b ? b : "ZMPI_SCRATCH";
    }
    if (env_unit("ZMPI_NET_BW", 'r', &d, &b) == 1)
        cfg->net_bw = d;
    if (env_unit("ZMPI_NET_LAT", 't', &d, &b) == 1)
        cfg->net_lat = d;
    if (env_double("ZMPI_RATIO", &d, &b) == 1)
        cfg->ratio = d;
    v = getenv("ZMPI_CODEC_SPEED");
    if (v && *v) { /* C[,D]: compression [and decompression] bytes/s of one thread */
        char tmp[64];
        const char *comma = strchr(v, ',');
        size_t l = comma ? (size_t)(comma - v) : strlen(v);
        double cs = 0, ds = 0;
        int ok = l < sizeof tmp;
        if (ok) {
            memcpy(tmp, v, l);
            tmp[l] = '\0';
            ok = parse_unit(tmp, 'r', &cs);
            ds = cs;
        }
        if (ok && comma)
            ok = parse_unit(comma + 1, 'r', &ds);
        if (ok) {
            cfg->comp_speed = cs;
            cfg->decomp_speed = ds;
        } else {
            b = b ? b : "ZMPI_CODEC_SPEED";
        }
    }
    for (int k = 0; k < ZMPI_COLL_COUNT; k++) {
        char name[64];
        const char *cn = ZMPI_Coll_name((ZMPI_Coll)k);
        size_t j = 0;
        j += (size_t)snprintf(name, sizeof name, "ZMPI_");
        for (const char *p = cn; *p && j < sizeof name - 12; p++)
            name[j++] = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        snprintf(name + j, sizeof name - j, "_ALGORITHM");
        v = getenv(name);
        if (v && *v) {
            int id = ZMPI_Coll_algorithm_from_name((ZMPI_Coll)k, v);
            if (id == -2)
                b = b ? b : "ZMPI_<COLL>_ALGORITHM";
            else
                cfg->algorithm[k] = id;
        }
    }
    if (bad)
        *bad = b;
    return b ? MPI_ERR_ARG : MPI_SUCCESS;
}

static int config_valid(const ZMPI_Config *cfg)
{
    if (!cfg || zmpi_codec_kind(cfg->codec) < 0)
        return 0;
    if (cfg->eb_mode != ZMPI_EB_NONE && cfg->eb_mode != ZMPI_EB_ABS && cfg->eb_mode != ZMPI_EB_REL)
        return 0;
    if (cfg->eb_mode != ZMPI_EB_NONE && (!(cfg->eb > 0) || !isfinite(cfg->eb)))
        return 0;
    if (cfg->scope != ZMPI_SCOPE_RESULT && cfg->scope != ZMPI_SCOPE_MESSAGE)
        return 0;
    if (cfg->threads < 0 || cfg->chunk < 64 || cfg->chunk > (1u << 26))
        return 0;
    if (!(cfg->net_bw >= 0) || !(cfg->net_lat >= 0) || !(cfg->comp_speed >= 0) || !(cfg->decomp_speed >= 0) ||
        !(cfg->ratio >= 0) || !isfinite(cfg->net_bw) || !isfinite(cfg->net_lat) || !isfinite(cfg->comp_speed) ||
        !isfinite(cfg->decomp_speed) || !isfinite(cfg->ratio))
        return 0;
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        if (cfg->algorithm[k] != ZMPI_ALGO_DEFAULT && cfg->algorithm[k] != ZMPI_ALGO_MPI &&
            !zmpi_coll_algo_get((ZMPI_Coll)k, cfg->algorithm[k]))
            return 0;
    return 1;
}

zmpi_comm_state *zmpi_state(MPI_Comm comm)
{
    pthread_once(&key_once, make_key);
    if (state_key == MPI_KEYVAL_INVALID || comm == MPI_COMM_NULL)
        return NULL;
    void *val = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, state_key, &val, &flag) != MPI_SUCCESS)
        return NULL;
    if (flag)
        return val;
    ZMPI_Config cfg;
    const char *bad = NULL;
    ZMPI_Config_from_env(&cfg, &bad);
    zmpi_comm_state *s = state_new(&cfg, bad);
    if (!s)
        return NULL;
    if (PMPI_Comm_size(comm, &s->size) != MPI_SUCCESS || PMPI_Comm_test_inter(comm, &s->inter) != MPI_SUCCESS ||
        PMPI_Comm_set_attr(comm, state_key, s) != MPI_SUCCESS) {
        state_free(s);
        return NULL;
    }
    return s;
}

int ZMPI_Comm_set_config(MPI_Comm comm, const ZMPI_Config *cfg)
{
    if (!config_valid(cfg))
        return MPI_ERR_ARG;
    zmpi_comm_state *s = zmpi_state(comm);
    if (!s)
        return MPI_ERR_COMM;
    s->cfg = *cfg;
    s->env_error = NULL;
    zmpi_scratch_release(&s->scratch); /* the limit may have changed; kept again on demand */
    memset(s->tune_plain, 0, sizeof s->tune_plain); /* measurements belonged to the old settings */
    memset(s->tune_z, 0, sizeof s->tune_z);
    memset(s->tune_zwarm, 0, sizeof s->tune_zwarm);
    s->tune_pending = 0;
    return MPI_SUCCESS;
}

int ZMPI_Comm_get_config(MPI_Comm comm, ZMPI_Config *cfg)
{
    if (!cfg)
        return MPI_ERR_ARG;
    zmpi_comm_state *s = zmpi_state(comm);
    if (!s)
        return MPI_ERR_COMM;
    *cfg = s->cfg;
    return MPI_SUCCESS;
}

int ZMPI_Comm_get_stats(MPI_Comm comm, ZMPI_Stats *out)
{
    if (!out)
        return MPI_ERR_ARG;
    zmpi_comm_state *s = zmpi_state(comm);
    if (!s)
        return MPI_ERR_COMM;
    out->calls = atomic_load(&s->calls);
    out->compressed = atomic_load(&s->compressed);
    out->fallback_type = atomic_load(&s->fallback_type);
    out->fallback_small = atomic_load(&s->fallback_small);
    out->fallback_config = atomic_load(&s->fallback_config);
    out->fallback_model = atomic_load(&s->fallback_model);
    out->codec_errors = atomic_load(&s->codec_errors);
    out->bytes_raw = atomic_load(&s->bytes_raw);
    out->bytes_sent = atomic_load(&s->bytes_sent);
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        out->last_algorithm[k] = atomic_load(&s->last_algo[k]);
    pthread_mutex_lock(&s->scratch.lock);
    out->scratch_bytes = s->scratch.kept;
    pthread_mutex_unlock(&s->scratch.lock);
    return MPI_SUCCESS;
}
