/*
 * The advisor of libzmpi_preload.so: samples of the data each call site
 * sends, compressed with zmpi's codecs on a ladder of settings, and the
 * time compression would save on three networks, from the same model that
 * decides "compress only when it pays" (ZMPI_Model_predict) fed with the
 * ratios and codec speeds measured on the samples.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <zmpi/codec.h>

#include "preload/preload.h"
#include "preload/profile.h"
#include "preload_gen.h"

/* At most this much of a message is sampled, and nothing under the minimum. */
#define ZP_SAMPLE_MAX (1u << 20)
#define ZP_SAMPLE_MIN 1024u

const zp_net zp_nets[ZP_NNET] = {
    {"1GbE", 125e6, 50e-6},
    {"10GbE", 1.25e9, 10e-6},
    {"100Gb", 12.5e9, 2e-6},
};

const char *const zp_fallback_names[ZP_NFB] = {"type", "small", "config", "model", "codec_error",
                                                      "same_node"};

int zp_sample_due(unsigned long long nth, unsigned taken, int max)
{
    return max > 0 && taken < (unsigned)max && nth > 0 && (nth & (nth - 1)) == 0;
}

void zp_rung_setting(int rung, zmpi_codec *codec, zmpi_eb_mode *mode, double *eb, char *name, size_t cap)
{
    const ZMPI_Config *cfg = zp_config();
    if (rung > 0) {
        *codec = ZMPI_CODEC_FZL;
        *mode = ZMPI_EB_REL;
        *eb = pow(10.0, -(double)(rung + 1));
        snprintf(name, cap, "fzl rel 1e-%d", rung + 1);
    } else if (cfg->eb_mode != ZMPI_EB_NONE) {
        *codec = cfg->codec == ZMPI_CODEC_AUTO ? ZMPI_CODEC_FZL : cfg->codec; /* auto: fzl unless the model picks */
        *mode = cfg->eb_mode;
        *eb = cfg->eb;
        snprintf(name, cap, "%s %s %g", zmpi_codec_name(*codec), *mode == ZMPI_EB_ABS ? "abs" : "rel", *eb);
    } else {
        *codec = ZMPI_Config_compresses(cfg) ? cfg->codec : ZMPI_CODEC_ZSTD; /* (no bound: a lossless codec) */
        *mode = ZMPI_EB_NONE;
        *eb = 0;
        snprintf(name, cap, "%s lossless", zmpi_codec_name(*codec));
    }
}

/* The named type a derived datatype is built of (zmpi compresses a derived
 * type only when all its parts are one floating-point type), or
 * MPI_DATATYPE_NULL. */
static MPI_Datatype base_type(MPI_Datatype t)
{
    for (int depth = 0; depth < 32; depth++) {
        int ni = 0, na = 0, nd = 0, comb = 0;
        if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
            return MPI_DATATYPE_NULL;
        if (comb == MPI_COMBINER_NAMED)
            return t;
        int *ints = malloc(sizeof(int) * (size_t)(ni + 1));
        MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na + 1));
        MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd + 1));
        MPI_Datatype next = MPI_DATATYPE_NULL;
        if (ints && aints && types && nd > 0 &&
            PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types) == MPI_SUCCESS) {
            next = types[0];
            for (int i = 1; i < nd; i++) {
                int ni2, na2, nd2, c2;
                if (PMPI_Type_get_envelope(types[i], &ni2, &na2, &nd2, &c2) == MPI_SUCCESS && c2 != MPI_COMBINER_NAMED)
                    PMPI_Type_free(&types[i]);
            }
        }
        free(ints);
        free(aints);
        free(types);
        if (depth > 0) { /* t came from get_contents: ours to free once read */
            int ni2, na2, nd2, c2;
            if (PMPI_Type_get_envelope(t, &ni2, &na2, &nd2, &c2) == MPI_SUCCESS && c2 != MPI_COMBINER_NAMED)
                PMPI_Type_free(&t);
        }
        if (next == MPI_DATATYPE_NULL)
            return next;
        t = next;
    }
    return MPI_DATATYPE_NULL;
}

static int dt_of(MPI_Datatype t, zmpi_dtype *dt)
{
    int size = 0;
    if (t == MPI_DATATYPE_NULL || PMPI_Type_size(t, &size) != MPI_SUCCESS)
        return 0;
    if (t == MPI_FLOAT || ((t == MPI_REAL || t == MPI_REAL4) && size == 4)) {
        *dt = ZMPI_FLOAT;
        return 1;
    }
    if (t == MPI_DOUBLE || ((t == MPI_DOUBLE_PRECISION || t == MPI_REAL8) && size == 8)) {
        *dt = ZMPI_DOUBLE;
        return 1;
    }
    return 0;
}

/* The sample's elements: buf itself for a named type, else packed into
 * *owned (at most ZP_SAMPLE_MAX bytes). */
static const void *sample_data(const void *buf, int count, MPI_Datatype type, MPI_Comm comm, zmpi_dtype *dt,
                               size_t *n, void **owned)
{
    int size = 0;
    *owned = NULL;
    if (dt_of(type, dt)) {
        size_t bytes = (size_t)count * zmpi_dtype_size(*dt);
        *n = (bytes < ZP_SAMPLE_MAX ? bytes : ZP_SAMPLE_MAX) / zmpi_dtype_size(*dt);
        return buf;
    }
    if (!dt_of(base_type(type), dt) || PMPI_Type_size(type, &size) != MPI_SUCCESS || size <= 0)
        return NULL;
    int inst = (int)(ZP_SAMPLE_MAX / (unsigned)size);
    inst = inst < 1 ? 1 : inst > count ? count : inst;
    int psize = 0, pos = 0;
    if (PMPI_Pack_size(inst, type, comm, &psize) != MPI_SUCCESS || psize <= 0 || !(*owned = malloc((size_t)psize)))
        return NULL;
    if (PMPI_Pack(buf, inst, type, *owned, psize, &pos, comm) != MPI_SUCCESS) {
        free(*owned);
        *owned = NULL;
        return NULL;
    }
    *n = (size_t)pos / zmpi_dtype_size(*dt);
    return *owned;
}

/* Compresses and decompresses n elements with one rung's setting. */
static void measure_rung(int rung, const void *x, size_t n, zmpi_dtype dt, void *stream, size_t cap, void *back,
                         zp_sample *s)
{
    zmpi_codec codec;
    zmpi_eb_mode mode;
    double eb;
    char name[64];
    zp_rung_setting(rung, &codec, &mode, &eb, name, sizeof name);
    zmpi_ctx *ctx = zmpi_ctx_create();
    s->raw[rung] = (double)(n * zmpi_dtype_size(dt));
    s->comp[rung] = s->raw[rung];
    s->err[rung] = INFINITY;
    /* one thread: the model's speeds are per thread, and an OpenMP team
     * would keep spinning on the cores the program's ranks run on */
    if (ctx)
        zmpi_ctx_set_param(ctx, ZMPI_P_THREADS, 1);
    if (!ctx || zmpi_ctx_set_codec(ctx, codec) != ZMPI_OK ||
        (mode != ZMPI_EB_NONE && zmpi_ctx_set_bound(ctx, mode, eb) != ZMPI_OK)) {
        zmpi_ctx_free(ctx);
        return;
    }
    uint64_t t0 = zp_clock();
    ptrdiff_t len = zmpi_compress(ctx, x, n, dt, stream, cap);
    uint64_t t1 = zp_clock();
    ptrdiff_t got = len > 0 ? zmpi_decompress(ctx, stream, (size_t)len, back, n * zmpi_dtype_size(dt)) : -1;
    uint64_t t2 = zp_clock();
    zmpi_ctx_free(ctx);
    zmpi_quality q;
    if (len <= 0 || got != (ptrdiff_t)(n * zmpi_dtype_size(dt)) ||
        zmpi_quality_compare(x, back, n, dt, &q) != ZMPI_OK || q.nonfinite_mismatch)
        return;
    s->comp[rung] = (double)len;
    s->ns_c[rung] = (double)(t1 - t0);
    s->ns_d[rung] = (double)(t2 - t1);
    if (mode == ZMPI_EB_NONE)
        s->err[rung] = memcmp(x, back, n * zmpi_dtype_size(dt)) ? INFINITY : 0.0;
    else {
        double allowed = mode == ZMPI_EB_ABS ? eb : eb * q.value_range;
        s->err[rung] = q.max_abs_err == 0 ? 0.0 : allowed > 0 ? q.max_abs_err / allowed : INFINITY;
    }
}

int zp_sample_take(const void *buf, int count, MPI_Datatype datatype, MPI_Comm comm, zp_sample *s)
{
    zmpi_dtype dt;
    size_t n = 0;
    void *owned = NULL;
    memset(s, 0, sizeof *s);
    if (count <= 0 || !buf)
        return 0;
    const void *x = sample_data(buf, count, datatype, comm, &dt, &n, &owned);
    size_t es = x ? zmpi_dtype_size(dt) : 0;
    if (!x || n * es < ZP_SAMPLE_MIN) {
        free(owned);
        return 0;
    }
    size_t cap = 0;
    zmpi_ctx *probe = zmpi_ctx_create();
    for (int r = 0; probe && r < ZP_NRUNG; r++) { /* the largest stream any rung may write */
        zmpi_codec codec;
        zmpi_eb_mode mode;
        double eb;
        char name[64];
        zp_rung_setting(r, &codec, &mode, &eb, name, sizeof name);
        zmpi_ctx_set_codec(probe, codec);
        size_t c = zmpi_max_compressed_size(probe, n, dt);
        cap = c > cap ? c : cap;
    }
    zmpi_ctx_free(probe);
    void *stream = cap ? malloc(cap) : NULL, *back = malloc(n * es);
    if (stream && back) {
        s->dtsize = (int)es;
        for (int r = 0; r < ZP_NRUNG; r++)
            measure_rung(r, x, n, dt, stream, cap, back, s);
    }
    free(stream);
    free(back);
    free(owned);
    return s->dtsize != 0;
}

/* ---- advice ---- */

/* What zmpi does with a call: the model's collective (ZMPI_COLL_COUNT for
 * point-to-point), and whether one rank (the root) sends the data of a
 * whole operation (1) or every rank its own share (0) - from the table
 * tools/preload/gen_wrappers.py writes for every call the preload routes to
 * zmpi (a routed call that sends data without a model stops the build). */
typedef struct {
    ZMPI_Coll coll;
    int root_sends;
} zp_route;

static int route_of(int call, zp_route *rt)
{
    if (call < 0 || call >= ZP_NCALLS || zp_call_model[call] < 0)
        return 0;
    rt->coll = (ZMPI_Coll)zp_call_model[call];
    rt->root_sends = zp_call_root_sends[call];
    return 1;
}

/* Seconds the site's calls would save per rank with compression at a
 * rung, on net: the model's plain time minus its compressed time per
 * operation, times the operations each rank takes part in. */
static double saving(const zp_gsite *g, const zp_route *rt, int rung, const zp_net *net, int world)
{
    const zp_measure *m = &g->all;
    ZMPI_Config cfg = *zp_config();
    cfg.net_bw = net->bw;
    cfg.net_lat = net->lat;
    cfg.threads = 1;
    if (m->nsamples && m->comp[rung] > 0 && m->ns_c[rung] > 0 && m->ns_d[rung] > 0) {
        cfg.ratio = m->raw[rung] / m->comp[rung];
        cfg.comp_speed = m->raw[rung] / (m->ns_c[rung] * 1e-9);
        cfg.decomp_speed = m->raw[rung] / (m->ns_d[rung] * 1e-9);
    }
    if (rung == 0 && m->compressed && m->wire < m->bytes) {
        /* the run compressed this site with this very setting: its ratio
         * and compression speed over every message, not the samples' */
        cfg.ratio = (double)m->bytes / (double)m->wire;
        if (m->ns_comp)
            cfg.comp_speed = (double)m->bytes / ((double)m->ns_comp * 1e-9);
    }
    if (cfg.ratio > 0 && cfg.ratio < 1)
        cfg.ratio = 1;
    double tp = 0, tz = 0;
    long long count = m->sends ? (long long)(m->elems / m->sends) : 0;
    int n = m->nranks > 0 ? m->nranks : 1;
    ZMPI_Model_predict(&cfg, rt->coll, n, count, m->dtsize == 4 ? MPI_FLOAT : MPI_DOUBLE, &tp, &tz);
    return (double)m->sends * (tp - tz) * (rt->root_sends ? n : 1) / (world > 0 ? world : 1);
}

static void advise_one(zp_gsite *g, int world)
{
    const zp_measure *m = &g->all;
    zp_route route;
    const zp_route *rt = route_of(g->call, &route) ? &route : NULL;
    g->advised = m->sends > 0;
    if (!g->advised)
        return;
    const ZMPI_Config *cfg = zp_config();
    g->verdict_network = cfg->net_bw > 0 ? "ZMPI_NET_BW" : zp_nets[1].name;
    if (!rt) {
        g->verdict = "pass-through";
        return;
    }
    if (!m->flt) {
        g->verdict = "not floating point";
        return;
    }
    if (!m->nsamples && !(m->compressed && m->wire < m->bytes)) {
        /* nothing measured (every sample skipped: ZMPI_SAMPLES=0, the time
         * budget, messages under 1 KiB) and nothing compressed by the run */
        g->verdict = "no samples";
        return;
    }
    for (int r = 0; r < ZP_NRUNG; r++) {
        g->rung_ratio[r] = m->nsamples && m->comp[r] > 0 ? m->raw[r] / m->comp[r] : 0;
        for (int k = 0; k < ZP_NNET; k++)
            g->rung_saving_s[r][k] = saving(g, rt, r, &zp_nets[k], world);
    }
    g->ratio = m->compressed && m->wire < m->bytes ? (double)m->bytes / (double)m->wire : g->rung_ratio[0];
    g->max_err_over_eb = m->nsamples ? m->err[0] : 0;
    memcpy(g->saving_s, g->rung_saving_s[0], sizeof g->saving_s);
    double ref = g->saving_s[1];
    if (cfg->net_bw > 0) { /* the user's own network decides */
        zp_net own = {"own", cfg->net_bw, cfg->net_lat};
        ref = saving(g, rt, 0, &own, world);
    }
    if ((double)m->bytes / (double)m->sends < (double)cfg->min_bytes)
        g->verdict = "too small";
    else
        g->verdict = ref > 0 ? "compress" : "not worth it";
}

void zp_advise_sites(zp_run *r)
{
    for (int i = 0; i < r->nsites; i++)
        advise_one(&r->sites[i], r->nranks);
}
