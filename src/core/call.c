/*
 * The decision to compress a call, the per-compression bound, and block
 * compression with fallbacks. Shared by point-to-point and collectives.
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"

uint64_t zmpi_clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int zmpi_alloc(size_t n, void *out_ptr)
{
    void *p = malloc(n ? n : 1);
    memcpy(out_ptr, &p, sizeof p);
    return p ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* 1 if type is a named Fortran real type of `size` bytes (MPI_REAL is 4
 * bytes with the usual compilers, but the standard leaves it open). */
static int fortran_real(MPI_Datatype type, MPI_Datatype a, MPI_Datatype b, int size)
{
    int s = 0;
    return type != MPI_DATATYPE_NULL && (type == a || type == b) && PMPI_Type_size(type, &s) == MPI_SUCCESS &&
           s == size;
}

int zmpi_classify(MPI_Datatype type, zmpi_dtype *dt)
{
    if (type == MPI_FLOAT || fortran_real(type, MPI_REAL, MPI_REAL4, 4)) {
        *dt = ZMPI_FLOAT;
        return 1;
    }
    if (type == MPI_DOUBLE || fortran_real(type, MPI_DOUBLE_PRECISION, MPI_REAL8, 8)) {
        *dt = ZMPI_DOUBLE;
        return 1;
    }
    return 0;
}

static int op_ok(MPI_Op op)
{
    return op == MPI_OP_NULL || op == MPI_SUM || op == MPI_MIN || op == MPI_MAX;
}

/* The codec a configuration names (auto: fzl, until the model picks per call). */
static zmpi_codec named_codec(const ZMPI_Config *cfg)
{
    return cfg->codec == ZMPI_CODEC_AUTO ? ZMPI_CODEC_FZL : cfg->codec;
}

/* Common checks; returns ZMPI_WHY_* (0 = compress). */
static int why_not(const zmpi_comm_state *st, MPI_Datatype type, MPI_Op op, zmpi_dtype *dt)
{
    if (st->inter)
        return ZMPI_WHY_TYPE;
    if (!zmpi_classify(type, dt) || !op_ok(op))
        return ZMPI_WHY_TYPE;
    const ZMPI_Config *cfg = &st->cfg;
    int kind = zmpi_codec_kind(named_codec(cfg));
    if (kind < 0)
        return ZMPI_WHY_CONFIG;
    if (kind == ZMPI_KIND_BOUNDED && cfg->eb_mode == ZMPI_EB_NONE)
        return ZMPI_WHY_CONFIG;
    if (cfg->codec == ZMPI_CODEC_STORED)
        return ZMPI_WHY_CONFIG;
    if ((cfg->codec == ZMPI_CODEC_DP2SP || cfg->codec == ZMPI_CODEC_DP2SP_INTER) && *dt != ZMPI_DOUBLE)
        return ZMPI_WHY_TYPE;
    return ZMPI_WHY_NONE;
}

static void count_why(zmpi_comm_state *st, int why)
{
    if (why == ZMPI_WHY_TYPE)
        atomic_fetch_add(&st->fallback_type, 1);
    else if (why == ZMPI_WHY_SMALL)
        atomic_fetch_add(&st->fallback_small, 1);
    else if (why == ZMPI_WHY_CONFIG)
        atomic_fetch_add(&st->fallback_config, 1);
    else if (why == ZMPI_WHY_MODEL)
        atomic_fetch_add(&st->fallback_model, 1);
    else if (why == ZMPI_WHY_NODE)
        atomic_fetch_add(&st->fallback_node, 1);
}

/* ---- the model: does compression pay? ----
 *
 * Per-rank time on the critical path of a bandwidth-optimal plain algorithm
 * against zmpi's, S the whole vector in bytes, B the link bandwidth, L the
 * latency per message, f = (N-1)/N, lg = ceil(log2 N), r the expected ratio,
 * Cc / Cd the codec's speeds (times the threads):
 *   coll            plain              zmpi (codec work + compressed bytes)
 *   Bcast           2fS/B + 2lg L      S/Cc + 2fS/(rB) + S/Cd + 2lg L   (scatter + allgather)
 *   Scatter         fS/B + lg L        S/Cc + fS/(rB) + S/(N Cd) + lg L
 *   Gather          fS/B + lg L        S/(N Cc) + fS/(rB) + S/Cd + lg L
 *   Allgather       fS/B + lg L        S/(N Cc) + fS/(rB) + S/Cd + lg L
 *   Alltoall        fS/B + (N-1)L      S/Cc + fS/(rB) + S/Cd + (N-1)L
 *   Reduce_scatter  fS/B + lg L        S/Cc + fS/(rB) + S/Cd + (N-1)L    (a ring)
 *   Allreduce       2fS/B + 2lg L      S/Cc + 2S/Cd + S/(N Cc) + 2fS/(rB) + 2lg L
 *   Reduce          2fS/B + 2lg L      as Allreduce
 *   point-to-point  S/B + L            S/Cc + S/(rB) + S/Cd + L
 * Compression pays when zmpi < plain. The plain side is the best a
 * plain MPI can do, so the decision errs towards not compressing; MPI
 * libraries often choose slower schedules (on 1 GbE the simulated MPICH
 * Allreduce of 16 MiB at 64 ranks takes 3 times 2fS/B).
 *
 * The expected ratio r: cfg.ratio if set, else for the bounded codecs
 * (fzl, linpred) under a REL bound from the bound per compression (divided
 * by N for the reductions in result scope, whose partial sums also take
 * log2 N bits more): about 2.0 + 2.3 log10(1e-2 / rel) bits per value (a
 * fit through the geometric means of the measured fzl ratios on the real
 * fields: 15.8, 8.3 and 4.8 at REL 1e-2, 1e-3, 1e-4), 3 under an ABS bound
 * (no range known), 1.6 for the lossless codecs, 2 for trunc and dp2sp. The
 * speeds: cfg.comp_speed / decomp_speed if set, else 3 / 3.5 GB/s (the
 * measured single-core fzl speeds on the real fields are 2.7-3.6 /
 * 2.8-6.2 GB/s). Users with other data or machines set ZMPI_RATIO and
 * ZMPI_CODEC_SPEED from `zmpi codec eval` on a sample of their messages.
 * Under ZMPI_CODEC_AUTO the model also times fzr (its own ratio fit,
 * 0.8 / 1.4 GB/s) and a call is coded by whichever of fzl and fzr is faster. */
static double model_ratio(const ZMPI_Config *cfg, zmpi_codec codec, ZMPI_Coll coll, int nranks, zmpi_dtype dt)
{
    int fzr = codec == ZMPI_CODEC_FZR;
    if (cfg->ratio > 0) /* the user's figure is the named codec's; fzr's ratio is ~1.4 fzl's */
        return fzr && cfg->codec == ZMPI_CODEC_AUTO ? 1.4 * cfg->ratio : cfg->ratio;
    int kind = zmpi_codec_kind(codec);
    if (kind != ZMPI_KIND_BOUNDED)
        return zmpi_codec_intra(codec) == ZMPI_CODEC_TRUNC || zmpi_codec_intra(codec) == ZMPI_CODEC_DP2SP ? 2.0 : 1.6;
    if (cfg->eb_mode != ZMPI_EB_REL)
        return fzr ? 4.2 : 3.0;
    double rel = cfg->eb, bits = 0;
    int red = coll == ZMPI_COLL_REDUCE_SCATTER || coll == ZMPI_COLL_ALLREDUCE || coll == ZMPI_COLL_REDUCE;
    if (red && cfg->scope == ZMPI_SCOPE_RESULT) {
        rel /= nranks;             /* the bound of each compression */
        bits = log2((double)nranks); /* partial sums span up to N times the range */
    }
    double d = log10(1e-2 / rel), b = 2.0 + 2.3 * d;
    if (fzr) {
        /* fzr (Huffman codes: at least a bit a value) through its measured
         * geometric means, 24.3, 12.5 and 6.2 at REL 1e-2, 1e-3 and 1e-4 */
        double h = d >= 0 ? 1.3 + 1.25 * d + 0.68 * d * (d - 1) : 1.3 + 0.65 * d;
        b = h < b - 1.0 ? h : b - 1.0;
        b = b < 1.05 ? 1.05 : b;
    }
    bits += b;
    if (bits < (fzr ? 1.05 : 1.5))
        bits = fzr ? 1.05 : 1.5;
    double r = 8.0 * (double)zmpi_dtype_size(dt) / bits;
    return r < 1 ? 1 : r > 30 ? 30 : r;
}

/* The codec's speeds per thread: the configured ones (those of the named
 * codec; fzr's scaled from them under auto), else the built-in estimates:
 * fzl 3 / 3.5 GB/s, fzr 0.8 / 1.4 GB/s (measured on the real fields). */
static void model_speeds(const ZMPI_Config *cfg, zmpi_codec codec, double *cc, double *cd)
{
    int fzr = codec == ZMPI_CODEC_FZR;
    double c0 = fzr ? 0.8e9 : 3.0e9, d0 = fzr ? 1.4e9 : 3.5e9;
    double sc = fzr && cfg->codec == ZMPI_CODEC_AUTO ? 0.8 / 3.0 : 1.0;
    double sd = fzr && cfg->codec == ZMPI_CODEC_AUTO ? 1.4 / 3.5 : 1.0;
    *cc = cfg->comp_speed > 0 ? cfg->comp_speed * sc : c0;
    *cd = cfg->decomp_speed > 0 ? cfg->decomp_speed * sd : d0;
}

/* The model's times with one codec; returns 1 if compressing pays. */
static int model_times(const ZMPI_Config *cfg, zmpi_codec codec, ZMPI_Coll coll, int nranks, size_t bytes,
                       zmpi_dtype dt, double *t_plain, double *t_zmpi)
{
    double tp = 0, tz = 0;
    int pays = 1;
    if (cfg->net_bw > 0 && nranks >= 1 && bytes != SIZE_MAX) {
        double N = nranks, B = cfg->net_bw, L = cfg->net_lat, f = (N - 1) / N, lg = 0;
        double th = cfg->threads > 1 ? 0.85 * cfg->threads : 1;
        double Cc, Cd;
        model_speeds(cfg, codec, &Cc, &Cd);
        Cc *= th;
        Cd *= th;
        double r = model_ratio(cfg, codec, coll, nranks, dt), S = (double)bytes;
        while ((1L << (int)lg) < nranks)
            lg++;
        switch (coll) {
        case ZMPI_COLL_BCAST:
            tp = 2 * f * S / B + 2 * lg * L;
            tz = S / Cc + 2 * f * S / (r * B) + S / Cd + 2 * lg * L;
            break;
        case ZMPI_COLL_SCATTER:
            S *= N;
            tp = f * S / B + lg * L;
            tz = S / Cc + f * S / (r * B) + S / (N * Cd) + lg * L;
            break;
        case ZMPI_COLL_GATHER:
        case ZMPI_COLL_ALLGATHER:
            S *= N;
            tp = f * S / B + lg * L;
            tz = S / (N * Cc) + f * S / (r * B) + S / Cd + lg * L;
            break;
        case ZMPI_COLL_ALLTOALL:
            S *= N;
            tp = f * S / B + (N - 1) * L;
            tz = S / Cc + f * S / (r * B) + S / Cd + (N - 1) * L;
            break;
        case ZMPI_COLL_REDUCE_SCATTER:
            tp = f * S / B + lg * L;
            tz = S / Cc + f * S / (r * B) + S / Cd + (N - 1) * L;
            break;
        case ZMPI_COLL_ALLREDUCE:
        case ZMPI_COLL_REDUCE:
            tp = 2 * f * S / B + 2 * lg * L;
            tz = S / Cc + 2 * S / Cd + S / (N * Cc) + 2 * f * S / (r * B) + 2 * lg * L;
            break;
        default: /* point-to-point */
            tp = S / B + L;
            tz = S / Cc + S / (r * B) + S / Cd + L;
            break;
        }
        pays = tz < tp;
    }
    if (t_plain)
        *t_plain = tp;
    if (t_zmpi)
        *t_zmpi = tz;
    return pays;
}

int zmpi_model_pick(const ZMPI_Config *cfg, ZMPI_Coll coll, int nranks, size_t bytes, zmpi_dtype dt,
                    double *t_plain, double *t_zmpi, zmpi_codec *codec)
{
    double tp = 0, tz = 0, tz2 = 0;
    zmpi_codec k = named_codec(cfg);
    int pays = model_times(cfg, k, coll, nranks, bytes, dt, &tp, &tz);
    if (cfg->codec == ZMPI_CODEC_AUTO && cfg->net_bw > 0 && bytes != SIZE_MAX && cfg->eb_mode != ZMPI_EB_NONE &&
        model_times(cfg, ZMPI_CODEC_FZR, coll, nranks, bytes, dt, NULL, &tz2) && tz2 < tz) {
        k = ZMPI_CODEC_FZR;
        tz = tz2;
        pays = 1;
    }
    if (t_plain)
        *t_plain = tp;
    if (t_zmpi)
        *t_zmpi = tz;
    if (codec)
        *codec = k;
    return pays;
}

int zmpi_model(const ZMPI_Config *cfg, ZMPI_Coll coll, int nranks, size_t bytes, zmpi_dtype dt, double *t_plain,
               double *t_zmpi)
{
    return zmpi_model_pick(cfg, coll, nranks, bytes, dt, t_plain, t_zmpi, NULL);
}

int ZMPI_Model_estimate(MPI_Comm comm, ZMPI_Coll coll, long long count, MPI_Datatype datatype, double *t_plain,
                        double *t_zmpi)
{
    zmpi_comm_state *st = zmpi_state(comm);
    zmpi_dtype dt = ZMPI_FLOAT;
    if (t_plain)
        *t_plain = 0;
    if (t_zmpi)
        *t_zmpi = 0;
    if (!st || count < 0 || (int)coll < 0 || (int)coll > ZMPI_COLL_COUNT || !zmpi_classify(datatype, &dt))
        return 0;
    return zmpi_model(&st->cfg, coll, st->size, (size_t)count * zmpi_dtype_size(dt), dt, t_plain, t_zmpi);
}

int ZMPI_Model_predict(const ZMPI_Config *cfg, ZMPI_Coll coll, int nranks, long long count, MPI_Datatype datatype,
                       double *t_plain, double *t_zmpi)
{
    zmpi_dtype dt = ZMPI_FLOAT;
    if (t_plain)
        *t_plain = 0;
    if (t_zmpi)
        *t_zmpi = 0;
    if (!cfg || nranks < 1 || count < 0 || (int)coll < 0 || (int)coll > ZMPI_COLL_COUNT ||
        !zmpi_classify(datatype, &dt))
        return 0;
    return zmpi_model(cfg, coll, nranks, (size_t)count * zmpi_dtype_size(dt), dt, t_plain, t_zmpi);
}

static int fill(zmpi_call *c, zmpi_comm_state *st, MPI_Comm comm, MPI_Datatype type, zmpi_dtype dt,
                size_t min_bytes)
{
    memset(c, 0, sizeof *c);
    c->st = st;
    c->comm = comm;
    c->type = type;
    c->dt = dt;
    c->es = zmpi_dtype_size(dt);
    c->scope = st->cfg.scope;
    c->mode = st->cfg.eb_mode;
    c->eb = st->cfg.eb;
    c->min_bytes = min_bytes;
    c->coll = ZMPI_COLL_COUNT;
    PMPI_Comm_rank(comm, &c->rank);
    PMPI_Comm_size(comm, &c->size);
    c->ctx = zmpi_ctx_create();
    c->raw = zmpi_ctx_create();
    if (!c->ctx || !c->raw) {
        zmpi_call_end(c);
        return MPI_ERR_NO_MEM;
    }
    zmpi_ctx_set_codec(c->ctx, named_codec(&st->cfg));
    zmpi_ctx_set_codec(c->raw, ZMPI_CODEC_STORED);
    zmpi_ctx_set_param(c->ctx, ZMPI_P_THREADS, st->cfg.threads);
    if (st->cfg.threads != 1) {
        /* pieces of cfg.chunk elements are single streams: give every thread a
         * segment of its own (same on all ranks, as the configuration is) */
        long long t = st->cfg.threads > 0 ? st->cfg.threads : zmpi_ctx_get_param(c->ctx, ZMPI_P_THREADS);
        size_t seg = st->cfg.chunk / (size_t)(t > 0 ? t : 1);
        zmpi_ctx_set_param(c->ctx, ZMPI_P_SEGMENT, (long long)(seg < 4096 ? 4096 : seg));
    }
    if (st->cfg.trunc_bits > 0)
        zmpi_ctx_set_param(c->ctx, ZMPI_P_TRUNC_BITS, st->cfg.trunc_bits);
    if (c->mode != ZMPI_EB_NONE)
        zmpi_ctx_set_bound(c->ctx, c->mode, c->eb);
    return MPI_SUCCESS;
}

/* The model's estimate of one call (zmpi_model_pick): whether compression
 * pays, the plain and compressed times, the codec it picks. */
typedef struct zmpi_plan_model {
    int pays;
    double tp, tz;
    zmpi_codec codec;
} zmpi_plan_model;

/* How to run the call: the measured ways of this (collective, size class),
 * once each has run. The first calls of a class run the way the model
 * prefers (without ZMPI_NET_BW, no model: the compressed way), then plain
 * MPI or the default algorithm, whichever has not run (unless the model
 * finds even the measured plain time unbeatable: then nothing compressed is
 * ever tried), then - where the collective has one - the default
 * algorithm's rival; each timed and the slowest rank's time agreed on by one
 * small allreduce, so the measurements, like the model, are the same on
 * every rank. A compressed way is measured on its second call (the first
 * pays one-time costs); the default algorithm is measured once more before
 * it loses to the rival or narrowly to plain, and must beat plain by 5 %.
 * ZMPI_DECISION=always, and the v-collectives (no size every rank shares):
 * the model alone (which without ZMPI_NET_BW always compresses). Returns
 * the way (ZMPI_WAY_*). */
static int decide(zmpi_comm_state *st, ZMPI_Coll coll, int size, size_t bytes, const zmpi_plan_model *model,
                  int rivals)
{
    int cls = 0, way, net = st->cfg.net_bw > 0;
    if (st->cfg.decision == 1 || bytes == SIZE_MAX || bytes == 0)
        return model->pays ? ZMPI_WAY_DEFAULT : ZMPI_WAY_PLAIN;
    while (cls < ZMPI_TUNE_CLASSES - 1 && (bytes >> (cls + 1)) > 0)
        cls++;
    const double *m = st->tune_t[coll][cls];
    double mp = m[ZMPI_WAY_PLAIN], mz = m[ZMPI_WAY_DEFAULT], mr = m[ZMPI_WAY_RIVAL];
    /* on several multi-rank nodes the default is a node-aware algorithm,
     * which the model (of flat algorithms, one link per rank) does not
     * describe: its measurement decides, never the model's estimate */
    int nodes = zmpi_node_aware(coll) && zmpi_topo_multinode(atomic_load(&st->topo), size);
    if (mp > 0 && mz > 0 && (mr > 0 || !rivals)) { /* all measured: no model needed (zmpi_tune_pick) */
        int pick = zmpi_tune_pick(mp, mz, mr, st->tune_again[coll][cls]);
        if (pick != ZMPI_TUNE_AGAIN)
            return pick;
        st->tune_again[coll][cls] = 1;
        way = ZMPI_WAY_DEFAULT;
    } else if (mp > 0 && mz > 0) {
        way = ZMPI_WAY_RIVAL; /* plain and the default measured: measure the rival */
    } else {
        /* no network told: no estimate, both ways are measured */
        int pays = !net || model->pays;
        if (mp > 0) {
            if (net && !nodes && !(model->tz < mp * (double)bytes))
                return ZMPI_WAY_PLAIN; /* plain stays, measured once: no more measuring */
            way = ZMPI_WAY_DEFAULT; /* the model says compression can beat it: measure */
        } else if (mz > 0) {
            way = ZMPI_WAY_PLAIN; /* compressed measured: measure plain */
        } else {
            way = pays || nodes ? ZMPI_WAY_DEFAULT : ZMPI_WAY_PLAIN; /* nothing measured: the model's choice first */
        }
    }
    if (way != ZMPI_WAY_PLAIN && !st->tune_warm[coll][cls][way]) {
        /* the first call of a compressed way pays one-time costs (fresh
         * memory for its buffers, first faults): run it unmeasured, measure
         * the next one. Every rank marks it alike. */
        st->tune_warm[coll][cls][way] = 1;
        return way;
    }
    st->tune_pending = 1;
    st->tune_coll = (int)coll;
    st->tune_cls = cls;
    st->tune_way = way;
    st->tune_bytes = (double)bytes;
    return way;
}

/* Starts the measurement: ranks leave the previous call at different times,
 * and a rank that enters early would count its wait for the others as the
 * call's time, so the two measured calls of a class start together. */
static void tune_start(zmpi_comm_state *st, MPI_Comm comm)
{
    PMPI_Barrier(comm);
    st->tune_t0 = PMPI_Wtime();
}

/* Completes the measurement in progress on st. */
static void tune_done(zmpi_comm_state *st, MPI_Comm comm)
{
    st->tune_pending = 0;
    double dt = PMPI_Wtime() - st->tune_t0;
    if (PMPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS || !(dt > 0))
        return;
    double *m = &st->tune_t[st->tune_coll][st->tune_cls][st->tune_way], per = dt / st->tune_bytes;
    *m = zmpi_tune_keep(*m, per);
}

void zmpi_call_plain_done(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL)
        return;
    zmpi_comm_state *st = zmpi_state(comm);
    if (st && st->tune_pending && st->tune_way == ZMPI_WAY_PLAIN)
        tune_done(st, comm);
}

/* The plan of one collective call on st, made once from the call, the
 * settings and the layout - all of them the same on every rank, so every
 * rank plans alike: why it runs plain MPI (ZMPI_WHY_*, 0: compressed), the
 * way (ZMPI_WAY_*: the default algorithm or its rival) and the codec. The
 * model runs at most once per call; the mechanism (zmpi_call_begin, the
 * collective's dispatcher) carries the plan out. */
typedef struct zmpi_plan {
    int why, way;
    zmpi_codec codec; /* under ZMPI_CODEC=auto the model's pick, else the configured codec */
} zmpi_plan;

static void plan_call(zmpi_comm_state *st, MPI_Comm comm, ZMPI_Coll coll, MPI_Datatype type, MPI_Op op,
                      size_t bytes, int rivals, zmpi_dtype *dt, zmpi_plan *p)
{
    int size = st->size;
    p->way = ZMPI_WAY_DEFAULT;
    p->codec = named_codec(&st->cfg);
    p->why = why_not(st, type, op, dt);
    if (!p->why && st->cfg.algorithm[coll] == ZMPI_ALGO_MPI)
        p->why = ZMPI_WHY_CONFIG;
    if (!p->why && (size < 2 || (bytes != SIZE_MAX && bytes < st->cfg.min_bytes)))
        p->why = ZMPI_WHY_SMALL;
    /* every rank on one node: shared memory moves the data faster than a
     * codec codes it (the layout was learned by zmpi_state_agree: the same
     * on every rank) */
    const zmpi_topo *t = atomic_load(&st->topo);
    if (!p->why && !st->cfg.intra_node && t && t->size == size && t->nnodes == 1)
        p->why = ZMPI_WHY_NODE;
    st->tune_pending = 0;
    if (p->why)
        return;
    /* the model once, where the plan uses it: its estimate for the decision
     * (zmpi's default algorithm; an algorithm chosen explicitly is not
     * decided), its codec under ZMPI_CODEC=auto */
    int decided = st->cfg.algorithm[coll] == ZMPI_ALGO_DEFAULT;
    if (!decided && st->cfg.codec != ZMPI_CODEC_AUTO)
        return;
    zmpi_plan_model m = {0};
    m.pays = zmpi_model_pick(&st->cfg, coll, size, bytes, *dt, &m.tp, &m.tz, &m.codec);
    if (st->cfg.codec == ZMPI_CODEC_AUTO)
        p->codec = m.codec;
    if (decided)
        p->way = decide(st, coll, size, bytes, &m, rivals);
    if (p->way == ZMPI_WAY_PLAIN) {
        p->why = ZMPI_WHY_MODEL;
        if (st->tune_pending) /* plain MPI measured: this call */
            tune_start(st, comm);
    }
}

int zmpi_call_begin(zmpi_call *c, MPI_Comm comm, ZMPI_Coll coll, MPI_Datatype type, MPI_Op op, size_t bytes,
                    int rivals)
{
    c->err = MPI_SUCCESS;
    zmpi_comm_state *st = zmpi_state(comm);
    if (!st)
        return ZMPI_CALL_PLAIN; /* no state: plain MPI is always correct */
    c->err = zmpi_state_error(st);
    if (c->err != MPI_SUCCESS)
        return ZMPI_CALL_ERR;
    /* data zmpi never compresses (the datatype, the op, an intercommunicator:
     * the same on every rank, as MPI requires) runs as plain MPI whatever the
     * settings, also where the ranks' settings differ (a bound on some ranks
     * of a coupled run) */
    zmpi_dtype dt;
    if (st->inter || !zmpi_classify(type, &dt) || !op_ok(op)) {
        st->tune_pending = 0;
        atomic_fetch_add(&st->calls, 1);
        atomic_store(&st->last_algo[coll], ZMPI_ALGO_MPI);
        count_why(st, ZMPI_WHY_TYPE);
        return ZMPI_CALL_PLAIN;
    }
    /* before anything that depends on the settings: ranks whose settings
     * differ would take different paths (and wait for each other forever) */
    c->err = zmpi_state_agree(st, comm);
    if (c->err != MPI_SUCCESS)
        return ZMPI_CALL_ERR;
    atomic_fetch_add(&st->calls, 1);
    atomic_store(&st->last_algo[coll], ZMPI_ALGO_MPI); /* until an algorithm reports that it ran */
    zmpi_plan p;
    plan_call(st, comm, coll, type, op, bytes, rivals, &dt, &p);
    if (p.why) {
        count_why(st, p.why);
        return 0;
    }
    /* The collectives' own messages travel on a private duplicate, so that no
     * user receive (MPI_ANY_TAG) pending on comm can match them. Every rank
     * reaches this point for the same call, so the collective dup is safe. */
    if (zmpi_state_shadow(st, comm) != MPI_SUCCESS) {
        count_why(st, ZMPI_WHY_CONFIG);
        return 0;
    }
    if (fill(c, st, st->shadow, type, dt, bytes == SIZE_MAX ? st->cfg.min_bytes : 0)) {
        count_why(st, ZMPI_WHY_CONFIG); /* out of memory: plain MPI is always correct */
        return 0;
    }
    c->coll = coll; /* c->algo: chosen by the collective's dispatcher (src/coll/dispatch.c) */
    zmpi_ctx_set_codec(c->ctx, p.codec);
    /* a v-collective's ranks share no size: the model cannot decide the call,
     * so (with zmpi's default algorithm) its blocks decide, each by its own
     * count, which both of its ends know */
    c->per_block = bytes == SIZE_MAX && st->cfg.algorithm[coll] == ZMPI_ALGO_DEFAULT;
    /* inter-step codecs keep channels in point-to-point and Alltoall(v) only;
     * the other collectives code each message with the intra-step variant */
    c->chan = zmpi_codec_needs_channel(st->cfg.codec) == 1 && coll == ZMPI_COLL_ALLTOALL;
    if (zmpi_codec_needs_channel(st->cfg.codec) == 1 && !c->chan)
        zmpi_ctx_set_codec(c->ctx, zmpi_codec_intra(st->cfg.codec));
    c->rival = p.way == ZMPI_WAY_RIVAL;
    c->tune = st->tune_pending && st->tune_way != ZMPI_WAY_PLAIN;
    if (c->tune)
        tune_start(st, comm); /* after the one-time set-up above */
    atomic_fetch_add(&st->compressed, 1);
    return 1;
}

/* The point-to-point decision and its statistics: ZMPI_WHY_* (0: compress). */
/* Why point-to-point data of type would go plain on st, whatever its size
 * (ZMPI_WHY_NONE: it compresses from ZMPI_MIN_BYTES). */
static int p2p_why(const zmpi_comm_state *st, MPI_Datatype type, zmpi_dtype *dt)
{
    int why = why_not(st, type, MPI_OP_NULL, dt);
    /* The model, independent of the size: sender and receiver must decide
     * alike, and a receiver knows only its capacity. Where compression does
     * not pay even for a large message (the link is faster than the codec),
     * no point-to-point message is compressed. */
    if (!why && !zmpi_model(&st->cfg, ZMPI_COLL_COUNT, 2, (size_t)1 << 30, *dt, NULL, NULL))
        why = ZMPI_WHY_MODEL;
    return why;
}

/* 1 if a message to `peer` of comm stays on this rank's node and so goes
 * plain (ZMPI_INTRA_NODE=plain) - known once comm's layout is: emulated
 * (ZMPI_NODE_RANKS), or following from MPI_COMM_WORLD's (learned in
 * MPI_Init by the transparent mode, by the first compressed collective on
 * MPI_COMM_WORLD, or by ZMPI_Comm_nodes / ZMPI_Comm_prepare on it). The
 * sender decides alone: the receiver takes a stream or raw bytes alike. */
static int p2p_same_node(zmpi_comm_state *st, MPI_Comm comm, int peer)
{
    int rc;
    if (st->cfg.intra_node || st->inter || peer < 0)
        return 0;
    const zmpi_topo *t = zmpi_topo_get(st, comm, 0, &rc);
    return t && peer < t->size && t->node_of[peer] == t->node;
}

static int p2p_decide(zmpi_comm_state *st, MPI_Datatype type, size_t bytes, int same_node, zmpi_dtype *dt)
{
    atomic_fetch_add(&st->calls, 1);
    int why = p2p_why(st, type, dt);
    if (!why && same_node)
        why = ZMPI_WHY_NODE;
    if (why)
        count_why(st, why);
    else if (bytes >= st->cfg.min_bytes && bytes > ZMPI_P2P_RAW_MAX)
        atomic_fetch_add(&st->compressed, 1);
    else
        atomic_fetch_add(&st->fallback_small, 1);
    return why;
}

int zmpi_p2p_count(MPI_Comm comm, MPI_Datatype type, size_t bytes)
{
    zmpi_dtype dt;
    zmpi_comm_state *st = zmpi_state(comm);
    if (!st)
        return MPI_SUCCESS;
    int rc = zmpi_state_error(st);
    if (rc == MPI_SUCCESS)
        p2p_decide(st, type, bytes, 0, &dt);
    return rc;
}

int zmpi_p2p_count_recv(MPI_Comm comm, MPI_Datatype type)
{
    zmpi_dtype dt;
    zmpi_comm_state *st = zmpi_state(comm);
    if (!st)
        return MPI_SUCCESS;
    int rc = zmpi_state_error(st);
    if (rc == MPI_SUCCESS) {
        atomic_fetch_add(&st->calls, 1);
        int why = p2p_why(st, type, &dt);
        if (why) /* whether it moves compressed data is counted when it arrives */
            count_why(st, why);
    }
    return rc;
}

int zmpi_call_begin_p2p(zmpi_call *c, MPI_Comm comm, MPI_Datatype type, size_t bytes, int peer)
{
    zmpi_dtype dt;
    c->err = MPI_SUCCESS;
    zmpi_comm_state *st = zmpi_state(comm);
    if (!st)
        return ZMPI_CALL_PLAIN;
    c->err = zmpi_state_error(st);
    if (c->err != MPI_SUCCESS)
        return ZMPI_CALL_ERR;
    if (p2p_decide(st, type, bytes, p2p_same_node(st, comm, peer), &dt))
        return ZMPI_CALL_PLAIN;
    if ((bytes < st->cfg.min_bytes || bytes <= ZMPI_P2P_RAW_MAX) && zmpi_codec_needs_channel(st->cfg.codec) != 1)
        return ZMPI_CALL_PLAIN; /* raw whatever the data (counted as small): no codec context to make */
    if (fill(c, st, comm, type, dt, st->cfg.min_bytes)) {
        count_why(st, ZMPI_WHY_CONFIG);
        return ZMPI_CALL_PLAIN;
    }
    c->chan = zmpi_codec_needs_channel(st->cfg.codec) == 1;
    if (st->cfg.codec == ZMPI_CODEC_AUTO) { /* the sender's choice by its size; the stream names it */
        zmpi_codec k;
        zmpi_model_pick(&st->cfg, ZMPI_COLL_COUNT, 2, bytes, dt, NULL, NULL, &k);
        zmpi_ctx_set_codec(c->ctx, k);
    }
    return ZMPI_CALL_ON;
}

void zmpi_call_ran(zmpi_call *c, int algo_id)
{
    if (c->coll >= 0 && c->coll < ZMPI_COLL_COUNT)
        atomic_store(&c->st->last_algo[c->coll], algo_id);
}

void zmpi_call_end(zmpi_call *c)
{
    if (c->tune) { /* a measured compressed collective; c->comm: the private duplicate */
        c->tune = 0;
        tune_done(c->st, c->comm);
    }
    zmpi_ctx_free(c->ctx);
    zmpi_ctx_free(c->raw);
    c->ctx = c->raw = NULL;
}

void zmpi_call_bound_range(zmpi_call *c, double hops, double lo, double hi)
{
    double range = hi - lo;
    if (hops < 1)
        hops = 1;
    if (!(range > 0)) {
        /* constant (or no finite) input: REL over a zero range is lossless */
        zmpi_ctx_set_bound(c->ctx, ZMPI_EB_REL, c->eb);
        return;
    }
    double e = c->eb * range / hops;
    if (!isfinite(e))
        e = DBL_MAX / hops;
    zmpi_ctx_set_bound(c->ctx, ZMPI_EB_ABS, e > 0 ? e : DBL_MIN);
}

int zmpi_call_bound(zmpi_call *c, double hops, const void *local_in, size_t local_count)
{
    if (c->mode == ZMPI_EB_NONE)
        return MPI_SUCCESS; /* lossless or fixed-precision codec */
    if (hops < 1)
        hops = 1;
    if (c->mode == ZMPI_EB_ABS) {
        double e = c->scope == ZMPI_SCOPE_RESULT ? c->eb / hops : c->eb;
        zmpi_ctx_set_bound(c->ctx, ZMPI_EB_ABS, e > 0 ? e : DBL_MIN);
        return MPI_SUCCESS;
    }
    if (c->scope == ZMPI_SCOPE_MESSAGE || hops <= 1) {
        /* per-message REL: each block's own range, never wider than the global one */
        zmpi_ctx_set_bound(c->ctx, ZMPI_EB_REL, c->eb);
        return MPI_SUCCESS;
    }
    double mm[2], g[2];
    zmpi_value_range(local_in, local_count, c->dt, &mm[0], &mm[1], NULL);
    mm[0] = -mm[0];
    int rc = PMPI_Allreduce(mm, g, 2, MPI_DOUBLE, MPI_MAX, c->comm);
    if (rc != MPI_SUCCESS)
        return rc;
    zmpi_call_bound_range(c, hops, -g[0], g[1]);
    return MPI_SUCCESS;
}

size_t zmpi_block_max(const zmpi_call *c, size_t count)
{
    if (c->grid > 0)
        return zmpi_grid_bound(count);
    return zmpi_max_compressed_size(c->ctx, count, c->dt);
}

void zmpi_stat_sent(zmpi_call *c, size_t raw, size_t sent)
{
    atomic_fetch_add(&c->st->bytes_raw, raw);
    atomic_fetch_add(&c->st->bytes_sent, sent);
}

/* 1 if a block of count elements goes plain; else 0 and, in *codec, the
 * codec it is coded by (under auto, a v-collective's block picks by its own
 * size). The model runs at most once per block. */
static int block_way(const zmpi_call *c, size_t count, zmpi_codec *codec)
{
    size_t bytes = count * c->es;
    *codec = zmpi_ctx_get_codec(c->ctx);
    if (bytes < c->min_bytes)
        return 1;
    if (!c->per_block)
        return 0;
    zmpi_codec k;
    if (!zmpi_model_pick(&c->st->cfg, ZMPI_COLL_COUNT, 2, bytes, c->dt, NULL, NULL, &k))
        return 1;
    if (c->st->cfg.codec == ZMPI_CODEC_AUTO)
        *codec = k;
    return 0;
}

int zmpi_call_same_node(const zmpi_call *c, int peer)
{
    const zmpi_topo *t = atomic_load(&c->st->topo);
    return !c->st->cfg.intra_node && t && t->size == c->size && zmpi_topo_same(t, peer, c->rank);
}

int zmpi_block_plain(const zmpi_call *c, size_t count)
{
    zmpi_codec k;
    return block_way(c, count, &k);
}

/* A block of grid code differences (c->grid > 0), packed. */
static ptrdiff_t grid_compress(zmpi_call *c, const void *src, size_t count, void *dst, size_t cap)
{
    const uint64_t t0 = zmpi_clock_ns();
    ptrdiff_t len = zmpi_grid_pack(src, count, dst, cap);
    atomic_fetch_add(&c->st->ns_compress, zmpi_clock_ns() - t0);
    if (len < 0)
        return -1; /* cap below zmpi_grid_bound: a bug */
    zmpi_stat_sent(c, count * c->grid_es, (size_t)len);
    return len;
}

ptrdiff_t zmpi_block_compress(zmpi_call *c, const void *src, size_t count, void *dst, size_t cap)
{
    if (c->grid > 0)
        return grid_compress(c, src, count, dst, cap);
    zmpi_codec k;
    zmpi_ctx *ctx = block_way(c, count, &k) ? c->raw : c->ctx;
    if (ctx == c->ctx)
        zmpi_ctx_set_codec(ctx, k);
    const uint64_t t0 = zmpi_clock_ns();
    ptrdiff_t len = zmpi_compress(ctx, src, count, c->dt, dst, cap);
    atomic_fetch_add(&c->st->ns_compress, zmpi_clock_ns() - t0);
    if (len < 0 && len != ZMPI_ERR_DST_TOO_SMALL && ctx != c->raw) {
        atomic_fetch_add(&c->st->codec_errors, 1);
        len = zmpi_compress(c->raw, src, count, c->dt, dst, cap);
    }
    if (len < 0)
        return -1;
    zmpi_stat_sent(c, count * c->es, (size_t)len);
    return len;
}

/* A block of grid code differences (c->grid > 0), unpacked. */
static int grid_decompress(zmpi_call *c, const void *src, size_t len, void *dst, size_t count)
{
    const uint64_t t0 = zmpi_clock_ns();
    int r = zmpi_grid_unpack(src, len, NULL, dst, count);
    atomic_fetch_add(&c->st->ns_decompress, zmpi_clock_ns() - t0);
    return r == ZMPI_OK ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int zmpi_block_decompress(zmpi_call *c, const void *src, size_t len, void *dst, size_t count)
{
    if (c->grid > 0)
        return grid_decompress(c, src, len, dst, count);
    zmpi_stream_info info;
    if (zmpi_stream_info_get(src, len, &info) != ZMPI_OK || info.count != count || info.dtype != c->dt)
        return MPI_ERR_OTHER;
    const uint64_t t0 = zmpi_clock_ns();
    ptrdiff_t r = zmpi_decompress(c->ctx, src, len, dst, count * c->es);
    atomic_fetch_add(&c->st->ns_decompress, zmpi_clock_ns() - t0);
    return r == (ptrdiff_t)(count * c->es) ? MPI_SUCCESS : MPI_ERR_OTHER;
}

int zmpi_reduce_local(const zmpi_call *c, const void *in, void *inout, size_t count, MPI_Op op)
{
    while (count > 0) {
        int n = count > (size_t)(1 << 30) ? (1 << 30) : (int)count;
        int rc = PMPI_Reduce_local(in, inout, n, c->type, op);
        if (rc != MPI_SUCCESS)
            return rc;
        in = (const char *)in + (size_t)n * c->es;
        inout = (char *)inout + (size_t)n * c->es;
        count -= (size_t)n;
    }
    return MPI_SUCCESS;
}
