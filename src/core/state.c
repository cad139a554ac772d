/*
 * Per-communicator configuration and statistics, kept as an MPI attribute.
 *
 * The attribute key is the only static of the MPI layer: it is created once
 * (pthread_once) and never changes afterwards. Duplicated communicators
 * inherit the configuration (fresh statistics); the state is freed with the
 * communicator.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core.h"

static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static int state_key = MPI_KEYVAL_INVALID; /* written once under key_once */

static zmpi_comm_state *state_new(const ZMPI_Config *cfg)
{
    zmpi_comm_state *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->cfg = *cfg;
    s->shadow = MPI_COMM_NULL; /* never inherited: each communicator makes its own */
    if (pthread_mutex_init(&s->scratch.lock, NULL)) {
        free(s);
        return NULL;
    }
    if (pthread_mutex_init(&s->kept_lock, NULL)) {
        pthread_mutex_destroy(&s->scratch.lock);
        free(s);
        return NULL;
    }
    if (pthread_mutex_init(&s->chan_lock, NULL)) {
        pthread_mutex_destroy(&s->kept_lock);
        pthread_mutex_destroy(&s->scratch.lock);
        free(s);
        return NULL;
    }
    return s;
}

static void state_free(zmpi_comm_state *s)
{
    zmpi_scratch_release(&s->scratch);
    pthread_mutex_destroy(&s->scratch.lock);
    while (s->kept) { /* probed, never received */
        zmpi_kept *k = s->kept;
        s->kept = k->next;
        free(k->data);
        free(k);
    }
    pthread_mutex_destroy(&s->kept_lock);
    zmpi_chans_free(s); /* a duplicate starts with channels of its own */
    zmpi_topo_free(s);  /* and learns its layout again */
    pthread_mutex_destroy(&s->chan_lock);
    free(s);
}

static int copy_fn(MPI_Comm old, int key, void *extra, void *in, void *out, int *flag)
{
    (void)old; (void)key; (void)extra;
    const zmpi_comm_state *s = in;
    zmpi_comm_state *n = state_new(&s->cfg);
    if (!n) {
        *flag = 0;
        return MPI_ERR_NO_MEM;
    }
    /* size and kind: learned from the new communicator at its first
     * lookup - MPI_Comm_dup gives the parent's, but Open MPI 4.1 runs this
     * callback for MPI_Comm_create_group too, whose group is a subset */
    memcpy(n->bad, s->bad, sizeof n->bad); /* the same settings: compared once is enough (a subset agrees too) */
    memcpy(n->mismatch, s->mismatch, sizeof n->mismatch);
    n->agreed = s->agreed;
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

/* s's size and kind, read from comm once: a new state before it is shared,
 * a state copy_fn made at its first lookup (another thread may look it up
 * at the same time). */
static int learn_shape(zmpi_comm_state *s, MPI_Comm comm)
{
    int size = 0, inter = 0;
    if (atomic_load_explicit(&s->sized, memory_order_acquire))
        return MPI_SUCCESS;
    if (PMPI_Comm_size(comm, &size) != MPI_SUCCESS || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS)
        return MPI_ERR_COMM;
    pthread_mutex_lock(&s->chan_lock);
    if (!atomic_load_explicit(&s->sized, memory_order_relaxed)) {
        s->size = size;
        s->inter = inter;
        atomic_store_explicit(&s->sized, 1, memory_order_release);
    }
    pthread_mutex_unlock(&s->chan_lock);
    return MPI_SUCCESS;
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
        return learn_shape(val, comm) == MPI_SUCCESS ? val : NULL;
    ZMPI_Config cfg;
    char msg[sizeof ((zmpi_comm_state *)0)->bad] = "";
    int env_bad = zmpi_config_env(&cfg, NULL, msg, sizeof msg);
    zmpi_comm_state *s = state_new(&cfg);
    if (!s)
        return NULL;
    if (env_bad) /* every zmpi call on comm reports it */
        snprintf(s->bad, sizeof s->bad, "%s", msg);
    if (learn_shape(s, comm) != MPI_SUCCESS || PMPI_Comm_set_attr(comm, state_key, s) != MPI_SUCCESS) {
        state_free(s);
        return NULL;
    }
    return s;
}

/* The settings that decide a collective's path, one 64-bit word each (the
 * model's five numbers hashed into one); slot BAD_SLOT carries rank + 1 of
 * a rank whose own settings are invalid. */
#define AGREE_FIELDS (ALGO_SLOT + ZMPI_COLL_COUNT)
#define BAD_SLOT 8
#define NODE_SLOT 9
#define INTRA_SLOT 10
#define DECISION_SLOT 11
#define ALGO_SLOT 12
static void fingerprint(const ZMPI_Config *c, uint64_t *v)
{
    const double d[] = {c->eb, c->net_bw, c->net_lat, c->comp_speed, c->decomp_speed, c->ratio};
    memset(v, 0, AGREE_FIELDS * sizeof *v);
    v[0] = (uint64_t)c->codec;
    v[1] = (uint64_t)c->eb_mode;
    v[2] = (uint64_t)c->scope;
    v[3] = (uint64_t)c->threads;
    v[4] = (uint64_t)c->min_bytes;
    v[5] = (uint64_t)c->chunk;
    memcpy(&v[6], &d[0], sizeof d[0]);
    uint64_t h = 1469598103934665603ull; /* FNV-1a over the bits of the model's numbers */
    const unsigned char *b = (const unsigned char *)&d[1];
    for (size_t i = 0; i < 5 * sizeof d[0]; i++)
        h = (h ^ b[i]) * 1099511628211ull;
    v[7] = h;
    v[NODE_SLOT] = (uint64_t)c->node_ranks;
    v[INTRA_SLOT] = (uint64_t)c->intra_node;
    v[DECISION_SLOT] = (uint64_t)c->decision;
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        v[ALGO_SLOT + k] = (uint64_t)(int64_t)c->algorithm[k];
}

static const char *field_name(int i)
{
    static const char *const names[] = {"ZMPI_CODEC",     "ZMPI_EB_MODE", "ZMPI_EB_SCOPE", "ZMPI_THREADS",
                                        "ZMPI_MIN_BYTES", "ZMPI_CHUNK",   "ZMPI_EB",
                                        "the model (ZMPI_NET_BW, ZMPI_NET_LAT, ZMPI_CODEC_SPEED, ZMPI_RATIO)"};
    return i < BAD_SLOT      ? names[i]
           : i == NODE_SLOT  ? "ZMPI_NODE_RANKS"
           : i == INTRA_SLOT ? "ZMPI_INTRA_NODE"
           : i == DECISION_SLOT ? "ZMPI_DECISION"
                             : "ZMPI_<COLL>_ALGORITHM";
}

/* Compares cfg across comm's ranks (local_bad: this rank's own settings are
 * invalid): one allreduce of the fields' maxima and of their complements'
 * maxima (= minima). Returns 0 if all agree, else -1 with *kind and msg;
 * the same outcome on every rank. */
static int compare(const ZMPI_Config *cfg, int local_bad, MPI_Comm comm, int *kind, char *msg, size_t cap)
{
    uint64_t v[2 * AGREE_FIELDS], g[2 * AGREE_FIELDS];
    int rank = 0, algo_said = 0;
    PMPI_Comm_rank(comm, &rank);
    fingerprint(cfg, v);
    for (int i = 0; i < AGREE_FIELDS; i++)
        v[AGREE_FIELDS + i] = ~v[i];
    if (local_bad) /* its fields say nothing */
        memset(v, 0, sizeof v);
    v[BAD_SLOT] = local_bad ? (uint64_t)rank + 1 : 0;
    v[AGREE_FIELDS + BAD_SLOT] = 0;
    int rc = PMPI_Allreduce(v, g, 2 * AGREE_FIELDS, MPI_UINT64_T, MPI_MAX, comm);
    if (rc != MPI_SUCCESS) {
        *kind = ZMPI_EK_MISMATCH;
        snprintf(msg, cap, "could not compare the ranks' settings (MPI error %d)", rc);
        return -1;
    }
    if (g[BAD_SLOT]) {
        *kind = local_bad ? ZMPI_EK_CONFIG : ZMPI_EK_MISMATCH;
        if (!local_bad)
            snprintf(msg, cap, "rank %llu of the communicator has an invalid setting (its error says which)",
                     (unsigned long long)(g[BAD_SLOT] - 1));
        return -1;
    }
    size_t used = 0;
    for (int i = 0; i < AGREE_FIELDS && used < cap; i++) {
        if (i == BAD_SLOT || g[i] == ~g[AGREE_FIELDS + i] || (i >= ALGO_SLOT && algo_said))
            continue;
        algo_said |= i >= ALGO_SLOT;
        used += (size_t)snprintf(msg + used, cap - used, "%s%s",
                                 used ? ", " : "the ranks have different settings: ", field_name(i));
    }
    if (!used)
        return 0;
    *kind = ZMPI_EK_MISMATCH;
    if (used < cap)
        snprintf(msg + used, cap - used, " (collectives need the same on every rank)");
    return -1;
}

int zmpi_state_error(const zmpi_comm_state *st)
{
    return st->bad[0] ? zmpi_err(ZMPI_EK_CONFIG, "%s", st->bad) : MPI_SUCCESS;
}

int zmpi_state_agree(zmpi_comm_state *st, MPI_Comm comm)
{
    char msg[sizeof st->mismatch] = "";
    int kind = ZMPI_EK_MISMATCH;
    if (!st->agreed && !st->inter && st->size > 1 && compare(&st->cfg, st->bad[0] != 0, comm, &kind, msg, sizeof msg))
        snprintf(st->mismatch, sizeof st->mismatch, "%s", msg);
    st->agreed = 1;
    if (st->bad[0])
        return zmpi_state_error(st);
    if (st->mismatch[0])
        return zmpi_err(ZMPI_EK_MISMATCH, "%s", st->mismatch);
    if (!st->topo_tried && !st->inter) { /* every rank is here, with the same ZMPI_NODE_RANKS: learn the nodes */
        int rc;
        st->topo_tried = 1;
        if (!st->cfg.node_ranks)
            zmpi_topo_drop(st); /* derived on this rank alone (a point-to-point call): learned with every rank */
        zmpi_topo_get(st, comm, 1, &rc); /* failed: nodes unknown, every pair treated as apart */
    }
    return MPI_SUCCESS;
}

int zmpi_state_shadow(zmpi_comm_state *st, MPI_Comm comm)
{
    if (st->shadow != MPI_COMM_NULL)
        return MPI_SUCCESS;
    if (PMPI_Comm_dup(comm, &st->shadow) != MPI_SUCCESS) {
        st->shadow = MPI_COMM_NULL;
        return MPI_ERR_OTHER;
    }
    /* errors of the internal traffic come back to the dispatcher, which
     * raises them on comm with the handler comm has at that time */
    PMPI_Comm_set_errhandler(st->shadow, MPI_ERRORS_RETURN);
    return MPI_SUCCESS;
}

/* The one-time set-up of a communicator whose collectives compress (the
 * ranks' settings compared, the private duplicate made), done now rather
 * than in its first compressed collective. Collective over comm. */
static int prepare(zmpi_comm_state *s, MPI_Comm comm)
{
    if (s->inter || s->size < 2)
        return MPI_SUCCESS;
    int rc = zmpi_state_agree(s, comm);
    if (rc == MPI_SUCCESS && ZMPI_Config_compresses(&s->cfg))
        rc = zmpi_state_shadow(s, comm);
    return rc;
}

int ZMPI_Comm_prepare(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "ZMPI_Comm_prepare on MPI_COMM_NULL"));
    zmpi_comm_state *s = zmpi_state(comm);
    if (!s)
        return zmpi_raise(comm, MPI_ERR_NO_MEM);
    return zmpi_raise(comm, prepare(s, comm));
}

/* Collective over comm, like MPI_Comm_set_info: every rank calls it. The
 * ranks may set different settings for their point-to-point messages (the
 * messages describe themselves); the collectives on comm then raise an
 * error on every rank instead of taking different paths. */
int ZMPI_Comm_set_config(MPI_Comm comm, const ZMPI_Config *cfg)
{
    char msg[sizeof ((zmpi_comm_state *)0)->mismatch] = "", why[sizeof msg] = "";
    int kind = ZMPI_EK_MISMATCH, local_bad = zmpi_config_check(cfg, why, sizeof why) != 0, differ = 0;
    if (comm == MPI_COMM_NULL)
        return zmpi_raise(MPI_COMM_WORLD, zmpi_err(ZMPI_EK_ARG, "ZMPI_Comm_set_config on MPI_COMM_NULL"));
    zmpi_comm_state *s = zmpi_state(comm);
    if (!s)
        return zmpi_raise(comm, MPI_ERR_NO_MEM);
    if (!s->inter && s->size > 1)
        differ = compare(local_bad ? &s->cfg : cfg, local_bad, comm, &kind, msg, sizeof msg) != 0;
    if (local_bad) { /* the old settings stay; the collectives fail here as on the other ranks */
        snprintf(s->mismatch, sizeof s->mismatch, "ZMPI_Comm_set_config failed on this rank (%s)", why);
        return zmpi_raise(comm, zmpi_err(ZMPI_EK_CONFIG, "ZMPI_Comm_set_config: %s", why));
    }
    if (cfg->node_ranks != s->cfg.node_ranks) { /* another layout: learned again */
        zmpi_topo_drop(s);
        s->topo_tried = 0;
    }
    s->cfg = *cfg;
    s->bad[0] = '\0';
    snprintf(s->mismatch, sizeof s->mismatch, "%s", differ ? msg : "");
    s->agreed = 1;
    zmpi_scratch_release(&s->scratch); /* the limit may have changed; kept again on demand */
    memset(s->tune_t, 0, sizeof s->tune_t); /* measurements belonged to the old settings */
    memset(s->tune_warm, 0, sizeof s->tune_warm);
    memset(s->tune_again, 0, sizeof s->tune_again);
    s->tune_pending = 0;
    if (!differ && !s->inter && s->size > 1 && ZMPI_Config_compresses(cfg))
        zmpi_state_shadow(s, comm); /* collective too: the first compressed collective need not make it */
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
    return zmpi_raise(comm, zmpi_state_error(s)); /* not the configuration the environment asked for */
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
    out->fallback_node = atomic_load(&s->fallback_node);
    out->codec_errors = atomic_load(&s->codec_errors);
    out->bytes_raw = atomic_load(&s->bytes_raw);
    out->bytes_sent = atomic_load(&s->bytes_sent);
    out->ns_compress = atomic_load(&s->ns_compress);
    out->ns_decompress = atomic_load(&s->ns_decompress);
    for (int k = 0; k < ZMPI_COLL_COUNT; k++)
        out->last_algorithm[k] = atomic_load(&s->last_algo[k]);
    out->channel_bytes = atomic_load(&s->chan_bytes);
    out->grid_sums = atomic_load(&s->grid_sums);
    const zmpi_topo *t = atomic_load(&s->topo);
    out->nodes = t ? t->nnodes : 0;
    pthread_mutex_lock(&s->scratch.lock);
    out->scratch_bytes = s->scratch.kept;
    pthread_mutex_unlock(&s->scratch.lock);
    return MPI_SUCCESS;
}
