/*
 * Internal interface of the MPI layer (libzmpi_mpi): per-communicator state,
 * the decision to compress, and block compression helpers shared by the
 * point-to-point calls and every collective algorithm.
 *
 * Every MPI call in the MPI layer goes to PMPI_*, so an interposition
 * library never sees zmpi's own traffic.
 */
#ifndef ZMPI_CORE_H
#define ZMPI_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "zmpi/zmpi.h"

/* Error plumbing, in MPICH's style: a function keeps its status in `int rc`
 * and leaves through the labels fn_exit (always) and fn_fail (on an error,
 * which cleans up and jumps back to fn_exit).
 *   ZMPI_CHECK(zmpi_send_block(c, ...));   // rc = the call's status; non-zero: goto fn_fail
 */
#define ZMPI_CHECK(expr)                                                                           \
    do {                                                                                           \
        if ((rc = (expr)) != MPI_SUCCESS)                                                          \
            goto fn_fail;                                                                          \
    } while (0)

/* Size classes of the measured decisions: floor(log2(bytes)). */
#define ZMPI_TUNE_CLASSES 48
/* The ways a collective call can run (measured per size class with the
 * model on): plain MPI, zmpi's default algorithm for its arguments, and that
 * algorithm's rival (coll/dispatch.c `rivals`: another compressed algorithm
 * for the same arguments, e.g. Bcast's pipelined tree against scatter +
 * allgather). */
enum { ZMPI_WAY_PLAIN = 0, ZMPI_WAY_DEFAULT = 1, ZMPI_WAY_RIVAL = 2, ZMPI_WAYS = 3 };
/* A compressed way replaces plain MPI only if it takes less than this
 * fraction of plain's measured time (zmpi_tune_pick). */
#define ZMPI_TUNE_MARGIN 0.95
/* zmpi_tune_pick: the default algorithm is to be measured once more first. */
#define ZMPI_TUNE_AGAIN (-1)

/* The way the measurements of one (collective, size class) choose once they
 * are all in (call.c `decide`): mp, mz, mr the times per byte of plain MPI,
 * the default algorithm and its rival (mr 0: none); again: the default has
 * been measured a second time. A function of the times alone, so that tests
 * give it made-up ones (tests/mpi/test_model.c). Returns ZMPI_WAY_* or
 * ZMPI_TUNE_AGAIN.
 *
 * The rival must win clearly: each way is measured on one call, and the
 * default was chosen from many measurements (SMPI's 10 GbE Scatter once took
 * binomial, 6.1 ms, over linear, 4.6 ms). One call is one sample: before the
 * default algorithm loses, to the rival (measured last, when every cache and
 * buffer was warm) or narrowly to plain MPI (within 1.5x: one disturbed
 * call, as SMPI's 10 GbE Alltoall once had, would keep plain for good), it
 * gets a second measurement (the faster of its two counts, zmpi_tune_keep),
 * once. Against plain it must win by ZMPI_TUNE_MARGIN: the faster of two
 * samples is biased low against plain's one, and a compressed call's time
 * varies more (its codec work, against bytes on a link): in two of four runs
 * SMPI's 10 GbE Allreduce took rhd over plain (30.9 ms) and then ran at 31.1
 * and at 49 ms. */
static inline int zmpi_tune_pick(double mp, double mz, double mr, int again)
{
    double best = mz < mp ? mz : mp;
    int rival_wins = mr > 0 && mr < 0.9 * best;
    int default_wins = mz < ZMPI_TUNE_MARGIN * mp;
    if ((rival_wins || (!default_wins && mz < 1.5 * mp)) && !again)
        return ZMPI_TUNE_AGAIN;
    if (rival_wins)
        return ZMPI_WAY_RIVAL;
    return default_wins ? ZMPI_WAY_DEFAULT : ZMPI_WAY_PLAIN;
}

/* A way's kept time per byte after a measurement of `per` (old 0: none yet):
 * a second measurement keeps the faster. */
static inline double zmpi_tune_keep(double old, double per)
{
    return old > 0 && old < per ? old : per;
}

/* Scratch buffers kept by a communicator between calls (zmpi_scratch_get):
 * a collective's multi-MiB working buffers would otherwise come from fresh
 * pages on every call (glibc serves them with mmap and unmaps them on free),
 * and touching fresh pages costs a page fault each — several ms per call at
 * 16 MiB. At most ZMPI_SCRATCH_SLOTS buffers, at most cfg.scratch_keep
 * bytes in all; requests beyond that are plain malloc/free. */
#define ZMPI_SCRATCH_SLOTS 16
#define ZMPI_SCRATCH_MIN ((size_t)65536) /* smaller requests: malloc (glibc's heap keeps them) */
typedef struct zmpi_scratch {
    pthread_mutex_t lock; /* point-to-point calls may run concurrently on one communicator */
    void *ptr[ZMPI_SCRATCH_SLOTS];
    size_t cap[ZMPI_SCRATCH_SLOTS];
    unsigned char busy[ZMPI_SCRATCH_SLOTS];
    size_t kept; /* sum of cap */
} zmpi_scratch;

/* ---- the process context and errors (proc.c) ---- */

/* What zmpi detects itself; each kind is an MPI error class of zmpi's. */
enum {
    ZMPI_EK_CONFIG = 0, /* malformed setting (environment or ZMPI_Comm_set_config) */
    ZMPI_EK_MISMATCH,   /* the ranks of a communicator have different settings */
    ZMPI_EK_TRUNCATE,   /* a message holds more elements than the receive buffer */
    ZMPI_EK_TYPE,       /* float message into a double receive, or the reverse */
    ZMPI_EK_STREAM,     /* a compressed message that cannot be decoded */
    ZMPI_EK_REQUEST,    /* a request or message handle zmpi does not know */
    ZMPI_EK_ARG,        /* other invalid argument */
    ZMPI_EK_COUNT
};
#define ZMPI_ERR_RING 8 /* codes per class whose messages are rewritten in turn */

/* A message taken out of MPI's queues by ZMPI_Probe / Iprobe / Mprobe
 * before its receive (its bytes are needed to report its element count). */
typedef struct zmpi_kept {
    struct zmpi_kept *next;
    int source, tag;
    MPI_Comm comm;       /* where it was sent */
    MPI_Message handle;  /* the user's handle after ZMPI_Mprobe (a live placeholder), else MPI_MESSAGE_NULL */
    MPI_Request ph_send; /* the placeholder's send, completed once the handle is received */
    MPI_Status status;   /* as MPI received it */
    size_t bytes;
    unsigned char *data;
} zmpi_kept;

typedef struct zmpi_proc {
    pthread_mutex_t mu;         /* guards ops and handed; never held across an MPI call */
    pthread_mutex_t err_mu;     /* guards the error classes and strings (held across MPI calls) */
    void *ops;                  /* pending point-to-point operations (p2p/requests.c) */
    void (*ops_free)(void *ops); /* frees them in MPI_Finalize */
    atomic_int ndetached;       /* of them, freed by ZMPI_Request_free and not yet complete */
    atomic_ullong next_posted;  /* numbers the operations in posting order */
    int err_tried, err_ok;      /* the classes below were attempted (at the first error) / exist */
    int err_class[ZMPI_EK_COUNT];
    int err_code[ZMPI_EK_COUNT][ZMPI_ERR_RING];
    unsigned err_next[ZMPI_EK_COUNT];
    MPI_Datatype bytes4, bytes8; /* 4 and 8 contiguous MPI_BYTEs: float/double receives */
    MPI_Comm self;              /* private duplicate of MPI_COMM_SELF: message-handle placeholders */
    struct zmpi_kept *handed;   /* kept messages handed out by ZMPI_Mprobe / Improbe */
    int dtype_key;              /* datatype keyval of the cached analyses (dtype.c) */
    /* once MPI_COMM_WORLD's nodes are learned (topo.c): a node key per rank
     * of MPI_COMM_WORLD (ranks with equal keys share a node), so that every
     * communicator's layout follows locally; NULL before */
    _Atomic(int *) world_key;
} zmpi_proc;

/* The process context (an attribute of MPI_COMM_SELF), or NULL if it could
 * not be created or MPI is finalized. */
zmpi_proc *zmpi_proc_get(void);
/* An MPI error code of class `kind` whose MPI_Error_string is "zmpi: "
 * followed by the formatted message. Does not raise it. */
int zmpi_err(int kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Raises rc (if not MPI_SUCCESS) through comm's error handler, as MPI does
 * for its own errors, and returns it. Use it once per error, on errors MPI
 * has not raised already (zmpi's own, and those of calls on the private
 * duplicate, whose handler is MPI_ERRORS_RETURN). */
int zmpi_raise(MPI_Comm comm, int rc);

/* ---- settings (config.c) ---- */

/* One row of the settings table: an environment variable. */
typedef struct zmpi_setting {
    const char *name; /* ZMPI_... */
    const char *def;  /* default, as text */
    const char *doc;  /* one line */
    int (*set)(const char *value, ZMPI_Config *cfg, char *msg, size_t cap); /* NULL: a tool's variable */
} zmpi_setting;
const zmpi_setting *zmpi_settings(size_t *n);
void zmpi_config_defaults(ZMPI_Config *cfg);
/* Fills *cfg from the environment: 0, or -1 with the first bad variable in
 * *bad and a message "NAME=value: reason" in msg. */
int zmpi_config_env(ZMPI_Config *cfg, const char **bad, char *msg, size_t cap);
/* 0 if cfg is valid, else -1 with the reason in msg. */
int zmpi_config_check(const ZMPI_Config *cfg, char *msg, size_t cap);

/* ---- nodes (topo.c) ---- */

#define ZMPI_NODE_RANKS_MAX (1 << 20) /* largest ZMPI_NODE_RANKS */

/* The wire's raw floor: a point-to-point message of at most this many
 * bytes always travels raw - never compressed, never framed - whatever
 * either side's settings, and every zmpi stream on the wire is longer (a
 * shorter one is padded with zeros to ZMPI_P2P_RAW_MAX + 1 bytes). So a
 * receive of at most this many bytes, which no longer message can match,
 * is MPI's own call with no check for a stream, and a message of at most
 * this many bytes that reaches a larger receive is raw data. */
#define ZMPI_P2P_RAW_MAX ((size_t)8192)

/* The node layout of a communicator: which ranks share a node. Nodes are
 * numbered 0..nnodes-1 in the order of their lowest rank. */
typedef struct zmpi_topo {
    int size, nnodes;
    int node, local_rank, local_size; /* this rank's */
    int max_local;                    /* ranks on the fullest node */
    int min_local;                    /* ranks on the emptiest node */
    int contiguous;                   /* each node's ranks are consecutive ranks */
    int emulated;                     /* ZMPI_NODE_RANKS (k consecutive ranks of MPI_COMM_WORLD) */
    int *node_of;                     /* [size] each rank's node */
    int *leader;                      /* [nnodes] each node's lowest rank */
} zmpi_topo;

struct zmpi_comm_state;
/* The layout of comm, learned on first use and kept in its state: with
 * ZMPI_NODE_RANKS locally, else collectively over comm (MPI_Comm_split_type;
 * only when `collective`, i.e. every rank of comm is in the same call).
 * NULL when not known yet (a non-collective first use), for an
 * intercommunicator, or when memory or MPI failed (*rc then says which). */
const zmpi_topo *zmpi_topo_get(struct zmpi_comm_state *s, MPI_Comm comm, int collective, int *rc);
/* Forgets the layout (the settings changed: learned again on next use). */
void zmpi_topo_drop(struct zmpi_comm_state *s);
/* Frees every layout of s (with the state). */
void zmpi_topo_free(struct zmpi_comm_state *s);
/* The communicators of the node-aware algorithms, split from comm (the
 * private duplicate of the layout's communicator) on first use and kept
 * with the layout: *node the ranks of this rank's node (in comm's order),
 * *cross the ranks of the same local rank on every node (ranked by node),
 * MPI_COMM_NULL on ranks whose local rank is min_local or more. Collective
 * over comm. MPI_SUCCESS or the error of the split. */
int zmpi_topo_comms(const zmpi_topo *t, MPI_Comm comm, MPI_Comm *node, MPI_Comm *cross);
/* 1 if layout t of a communicator of `size` ranks has more than one node
 * and more than one rank on some node: where the node-aware algorithms run
 * by default. */
static inline int zmpi_topo_multinode(const zmpi_topo *t, int size)
{
    return t && t->size == size && t->nnodes > 1 && t->max_local > 1;
}
/* 1 if collective coll has a node-aware algorithm (src/coll/<coll>/<coll>_node.c),
 * its default on several multi-rank nodes. */
static inline int zmpi_node_aware(ZMPI_Coll coll)
{
    return coll == ZMPI_COLL_ALLREDUCE || coll == ZMPI_COLL_BCAST || coll == ZMPI_COLL_REDUCE ||
           coll == ZMPI_COLL_SCATTER || coll == ZMPI_COLL_GATHER || coll == ZMPI_COLL_ALLGATHER ||
           coll == ZMPI_COLL_REDUCE_SCATTER;
}
/* 1 if ranks a and b of a known layout share a node. */
static inline int zmpi_topo_same(const zmpi_topo *t, int a, int b)
{
    return t && a >= 0 && b >= 0 && a < t->size && b < t->size && t->node_of[a] == t->node_of[b];
}

/* State attached to a communicator (MPI attribute). */
typedef struct zmpi_comm_state {
    ZMPI_Config cfg;
    MPI_Comm shadow;       /* private duplicate for the collectives' own traffic, made on first use */
    char bad[240];         /* why no zmpi call can run on comm ("" = none): a malformed
                              environment variable */
    char mismatch[240];    /* why no collective can run on comm ("" = none): the ranks'
                              settings differ, or one rank's are invalid */
    int agreed;            /* the ranks' settings were compared since the last change */
    int size, inter;       /* of the communicator (fixed for its life) */
    atomic_int sized;      /* size and inter are set (a state copied to a new communicator learns them
                              from it at its first lookup: zmpi_state) */
    /* Measured once per (collective, size class), with the model on: each
     * way's time per byte (ZMPI_WAY_*; slowest rank; 0 = not measured),
     * whether a compressed way ran once unmeasured, and the measurement in
     * progress (collectives on a communicator are ordered, so there is at
     * most one). */
    double tune_t[ZMPI_COLL_COUNT][ZMPI_TUNE_CLASSES][ZMPI_WAYS];
    unsigned char tune_warm[ZMPI_COLL_COUNT][ZMPI_TUNE_CLASSES][ZMPI_WAYS];
    unsigned char tune_again[ZMPI_COLL_COUNT][ZMPI_TUNE_CLASSES]; /* the default measured twice */
    int tune_pending, tune_coll, tune_cls, tune_way;
    double tune_t0, tune_bytes;
    zmpi_scratch scratch;
    pthread_mutex_t kept_lock;
    zmpi_kept *kept;       /* oldest first */
    atomic_int last_algo[ZMPI_COLL_COUNT]; /* ZMPI_Stats.last_algorithm */
    atomic_ullong calls, compressed, fallback_type, fallback_small, fallback_config, fallback_model, fallback_node,
        codec_errors, bytes_raw, bytes_sent;
    atomic_ullong ns_compress, ns_decompress; /* ZMPI_Stats.ns_compress / ns_decompress */
    atomic_ullong grid_sums;                  /* ZMPI_Stats.grid_sums */
    pthread_mutex_t chan_lock;      /* guards the list of inter-step channels (chan.c) */
    struct zmpi_chan *chans;
    atomic_size_t chan_bytes;       /* their history, both directions (ZMPI_Stats.channel_bytes) */
    atomic_size_t chan_send_bytes;  /* of which the sending side's (at most cfg.channel_mem) */
    _Atomic(zmpi_topo *) topo;      /* the node layout once learned (topo.c); NULL before */
    struct topo_box *topo_retired;  /* layouts the settings replaced, freed with the state */
    int topo_tried;                 /* the collective learning ran (once: its outcome is every rank's) */
    atomic_int topo_local_failed;   /* the layout cannot follow from MPI_COMM_WORLD's (a rank outside it) */
} zmpi_comm_state;

/* The state of comm, created from the environment on first use (or NULL if
 * memory or MPI failed). */
zmpi_comm_state *zmpi_state(MPI_Comm comm);
/* MPI_SUCCESS, or the error (not raised) that makes st unusable for any
 * call (a malformed environment variable). */
int zmpi_state_error(const zmpi_comm_state *st);
/* Collective over comm (an intracommunicator of more than one rank): unless
 * done since the last configuration change, compares every setting that
 * affects a collective's path across the ranks (one small allreduce), so
 * that ranks with different settings get an error instead of taking
 * different paths and hanging. Returns MPI_SUCCESS or the error (not
 * raised), on every rank. */
int zmpi_state_agree(zmpi_comm_state *st, MPI_Comm comm);

/* ---- inter-step channels (chan.c) ---- */

#define ZMPI_CHAN_SEND 0
#define ZMPI_CHAN_RECV 1
#define ZMPI_CHAN_TAG_ALLTOALL (-0x7A45) /* Alltoall(v)'s channels (user tags are >= 0) */

/* One direction of one channel of a communicator: its codec history. */
typedef struct zmpi_chan {
    struct zmpi_chan *next;
    int peer, tag, dir;
    pthread_mutex_t mu; /* held while a message of the channel is coded */
    zmpi_channel *ch;   /* the history, or NULL */
    uint64_t seq;       /* receiving: sequence number of the last message decoded */
    int have_seq;
    size_t mem;         /* bytes of history counted in the state */
} zmpi_chan;

/* The intra-step variant of an inter-step codec (xorlzc, trunc, dp2sp), or
 * the codec itself. */
zmpi_codec zmpi_codec_intra(zmpi_codec codec);
/* The channel (peer, tag, dir) of st, created on first use, locked; NULL
 * when memory is exhausted. Release with zmpi_chan_release. */
zmpi_chan *zmpi_chan_acquire(zmpi_comm_state *st, int peer, int tag, int dir);
/* The same, or NULL (nothing locked) when it does not exist. */
zmpi_chan *zmpi_chan_find(zmpi_comm_state *st, int peer, int tag, int dir);
void zmpi_chan_release(zmpi_chan *c);
/* Compresses a message of the locked sending channel c with ctx's
 * inter-step codec (its intra-step variant when the history does not fit
 * cfg.channel_mem). Returns the stream size or a negative zmpi_error (the
 * channel then restarts). */
ptrdiff_t zmpi_chan_compress(zmpi_comm_state *st, zmpi_chan *c, zmpi_ctx *ctx, const void *src, size_t count,
                             zmpi_dtype dt, void *dst, size_t cap);
/* The message of channel c travelled as something else than the stream the
 * channel coded (raw data, an intra-step or no stream): drop its history. */
void zmpi_chan_forget(zmpi_comm_state *st, zmpi_chan *c);
/* 1 if the inter-step stream `info` can be decoded on the receiving channel
 * c now (a reset, or the next in sequence). */
int zmpi_chan_in_step(const zmpi_chan *c, const zmpi_stream_info *info);
/* Decodes an inter-step stream on the locked receiving channel c. Returns
 * the bytes written or a negative zmpi_error (the history is then dropped). */
ptrdiff_t zmpi_chan_decompress(zmpi_comm_state *st, zmpi_chan *c, zmpi_ctx *ctx, const void *src, size_t len,
                               void *dst, size_t cap);
/* Frees every channel of st (the communicator's state is freed). */
void zmpi_chans_free(zmpi_comm_state *st);

/* Makes st's private duplicate of comm for the collectives' own traffic
 * unless it exists (collective over comm). MPI_SUCCESS or MPI_ERR_OTHER. */
int zmpi_state_shadow(zmpi_comm_state *st, MPI_Comm comm);

/* Basic float types: MPI_FLOAT, MPI_REAL, MPI_REAL4 (4 bytes) / MPI_DOUBLE,
 * MPI_DOUBLE_PRECISION, MPI_REAL8 (8 bytes) -> 1 and *dt; others -> 0. */
int zmpi_classify(MPI_Datatype type, zmpi_dtype *dt);

/* ---- derived datatypes made of one floating-point type (dtype.c) ---- */

/* One run of a datatype's type map: count consecutive elements starting
 * `disp` bytes from the buffer's address. */
typedef struct zmpi_dtrun {
    MPI_Aint disp;
    size_t count;
} zmpi_dtrun;

/* The analysis of a datatype, shared (reference counted) by the datatype's
 * cache attribute and the operations using it. It holds no MPI handles, so
 * releasing it makes no MPI call. */
typedef struct zmpi_dtinfo {
    atomic_int refs;
    int eligible;       /* built only of MPI_FLOAT, or only of MPI_DOUBLE, without overlaps */
    int packable;       /* built only of one of them (overlaps allowed: it can be sent, not received) */
    MPI_Datatype basic; /* MPI_FLOAT or MPI_DOUBLE (eligible only) */
    zmpi_dtype dt;
    size_t es;          /* element size */
    size_t n;           /* elements per instance */
    MPI_Aint extent;    /* bytes from one instance to the next */
    int dense;          /* one instance is n contiguous elements at displacement 0 and extent n*es:
                           count instances are count*n contiguous elements */
    size_t nruns;
    zmpi_dtrun *runs;   /* of one instance, in type-map order, adjacent runs merged */
} zmpi_dtinfo;

/* The analysis of a derived datatype (cached on the datatype): *out gets a
 * reference (release with zmpi_dtinfo_release) to an eligible analysis, or
 * NULL when type is named, not eligible, or could not be analysed. */
void zmpi_dtinfo_get(MPI_Datatype type, zmpi_dtinfo **out);
/* As zmpi_dtinfo_get, also for a packable type that overlaps (a send side). */
void zmpi_dtinfo_get_send(MPI_Datatype type, zmpi_dtinfo **out);
void zmpi_dtinfo_release(zmpi_dtinfo *d);
/* buf + off bytes, computed on the address: buf may be MPI_BOTTOM (a null
 * pointer in MPICH and Open MPI) with off an absolute address, and a
 * negative displacement may reach below buf. */
static inline void *zmpi_at(const void *buf, MPI_Aint off)
{
    return (void *)((uintptr_t)buf + (uintptr_t)off);
}
/* Copies `count` instances of d at buf into dst (count*n elements). */
void zmpi_dtinfo_pack(const zmpi_dtinfo *d, const void *buf, size_t count, void *dst);
/* Copies the first `elems` elements of src into the type map of instances
 * of d at buf (elements beyond them are not touched). */
void zmpi_dtinfo_unpack(const zmpi_dtinfo *d, const void *src, size_t elems, void *buf);
/* The datatype keyval of the cache (created with the process context). */
int zmpi_dtinfo_keyval(int *key);
/* Frees it (process context teardown). */
void zmpi_dtinfo_keyval_free(int *key);

/* One compressed call in progress. */
typedef struct zmpi_call {
    zmpi_comm_state *st;
    MPI_Comm comm;
    ZMPI_Coll coll;     /* ZMPI_COLL_COUNT for point-to-point */
    int rank, size;
    MPI_Datatype type;
    zmpi_dtype dt;
    size_t es;
    int algo;           /* algorithm id (> 0), chosen by the collective's dispatcher */
    ZMPI_Scope scope;
    zmpi_eb_mode mode;  /* of the user's bound */
    double eb;          /* the user's bound value */
    zmpi_ctx *ctx;      /* configured for the current per-compression bound */
    zmpi_ctx *raw;      /* the "stored" codec, for blocks that are not compressed */
    size_t min_bytes;
    int tune;           /* this collective call is being measured (zmpi_call_end completes it) */
    int rival;          /* run the rival of the default algorithm (ZMPI_WAY_RIVAL), if it has one */
    int chan;           /* ctx's codec is an inter-step one: code through the channels (chan.c) */
    int per_block;      /* a v-collective left to the model: its blocks decide one by one (zmpi_block_plain) */
    int err;            /* the error of zmpi_call_begin* returning ZMPI_CALL_ERR */
    double grid;        /* > 0: a SUM on grid codes (coll/common/gsum.h): blocks are int32 code
                           differences packed by zmpi_grid_pack, es is 4 */
    size_t grid_es;     /* the datatype's element size while grid > 0 */
} zmpi_call;

/* What zmpi_call_begin decides. */
enum { ZMPI_CALL_ERR = -1, ZMPI_CALL_PLAIN = 0, ZMPI_CALL_ON = 1 };

/* Why a call runs as plain MPI. */
enum { ZMPI_WHY_NONE = 0, ZMPI_WHY_TYPE, ZMPI_WHY_SMALL, ZMPI_WHY_CONFIG, ZMPI_WHY_MODEL, ZMPI_WHY_NODE };

/* The model (ZMPI_Model_estimate): 1 if compressing coll pays for `bytes`
 * (the call's own count in bytes, as zmpi_call_begin gets it). */
int zmpi_model(const ZMPI_Config *cfg, ZMPI_Coll coll, int nranks, size_t bytes, zmpi_dtype dt, double *t_plain,
               double *t_zmpi);
/* The same, and the codec the call uses: the configured one, or under
 * ZMPI_CODEC_AUTO fzl or fzr, whichever the model finds faster (t_zmpi is
 * that codec's time). */
int zmpi_model_pick(const ZMPI_Config *cfg, ZMPI_Coll coll, int nranks, size_t bytes, zmpi_dtype dt,
                    double *t_plain, double *t_zmpi, zmpi_codec *codec);

/* Decides whether collective coll runs compressed. op is MPI_OP_NULL for data
 * movement; bytes is the message size every rank knows (SIZE_MAX when the
 * ranks do not share one, e.g. for v-variants: the threshold then applies
 * per block). The decision depends only on what all ranks know, so they all
 * take the same path (the settings are compared across the ranks first, see
 * zmpi_state_agree). Returns ZMPI_CALL_ON and fills *c (release with
 * zmpi_call_end), ZMPI_CALL_PLAIN for the plain-MPI fallback (counted; also
 * when memory for the codec contexts is exhausted), or ZMPI_CALL_ERR with
 * c->err (not raised: the caller raises it on comm) when the configuration
 * is unusable or the ranks' settings disagree. `rivals`: the collective has
 * rival algorithms (ZMPI_WAY_RIVAL), which the measurements then try too;
 * c->rival says to run the rival of the default algorithm. */
int zmpi_call_begin(zmpi_call *c, MPI_Comm comm, ZMPI_Coll coll, MPI_Datatype type, MPI_Op op,
                    size_t bytes, int rivals);
/* The same for point-to-point (no algorithm choice, no agreement: each end
 * decides alone, the message describes itself), a message to rank `peer`
 * of comm (plain if it shares this rank's node: ZMPI_INTRA_NODE; plain,
 * with no codec context made, below ZMPI_MIN_BYTES unless the codec keeps
 * an inter-step channel, whose history such a message resets). */
int zmpi_call_begin_p2p(zmpi_call *c, MPI_Comm comm, MPI_Datatype type, size_t bytes, int peer);
void zmpi_call_end(zmpi_call *c);
/* Counts a point-to-point call that needs no codec (a receive, another
 * datatype) as zmpi_call_begin_p2p would; returns the settings' error (not
 * raised) or MPI_SUCCESS. */
int zmpi_p2p_count(MPI_Comm comm, MPI_Datatype type, size_t bytes);
/* The same for a receive: its call and why its own settings would not
 * compress; whether it moved compressed data is counted when the message
 * arrives (a zmpi stream decoded: compressed). */
int zmpi_p2p_count_recv(MPI_Comm comm, MPI_Datatype type);
/* Called by every algorithm's own code as it starts: records the algorithm
 * that really ran (ZMPI_Stats.last_algorithm), so that tests can check that
 * the algorithm a configuration names is the one that runs. */
void zmpi_call_ran(zmpi_call *c, int algo_id);
/* Ends a collective that ran as plain MPI after zmpi_call_begin returned 0:
 * completes a measurement in progress (one small allreduce on comm, taken
 * by every rank alike). Call it on every fallback path of a collective. */
void zmpi_call_plain_done(MPI_Comm comm);

/* Sets the bound of each compression of this call. In result scope the
 * user's bound is divided by `hops`, the largest number of compressions an
 * element passes on its way to the result (ABS: eb/hops; REL: turned into an
 * absolute bound rel*range/hops with range the value range of all ranks'
 * inputs, which costs one small allreduce: pass the local input). In
 * message scope the user's bound applies to every compression (REL: per
 * message). Collective when scope is result and the mode is REL. */
int zmpi_call_bound(zmpi_call *c, double hops, const void *local_in, size_t local_count);
/* The REL result-scope part of zmpi_call_bound, given the global range [lo, hi]. */
void zmpi_call_bound_range(zmpi_call *c, double hops, double lo, double hi);

/* Worst-case stream size of count elements. */
size_t zmpi_block_max(const zmpi_call *c, size_t count);
/* Compresses count elements into dst (capacity cap >= zmpi_block_max). Blocks
 * zmpi_block_plain picks are framed uncompressed; a codec failure falls
 * back to an uncompressed stream (counted). Returns the stream size, or -1
 * only if cap is too small. */
ptrdiff_t zmpi_block_compress(zmpi_call *c, const void *src, size_t count, void *dst, size_t cap);
/* 1 if a block of count elements goes uncompressed: below c->min_bytes (the
 * v-collectives' ZMPI_MIN_BYTES), or, in a v-collective left to the model
 * (c->per_block), where the point-to-point model says compressing a message
 * of that size does not pay on the configured network. Depends only on the
 * count and the settings, which both ends of a block share. */
int zmpi_block_plain(const zmpi_call *c, size_t count);
/* 1 if rank peer of a collective call's communicator shares this rank's node
 * and what stays on a node travels plain (ZMPI_INTRA_NODE=plain): a block
 * between the two goes raw. The layout is the one every rank of the call
 * learned alike, so both ends of a block agree. */
int zmpi_call_same_node(const zmpi_call *c, int peer);
/* Decompresses a stream that must hold exactly count elements of the call's
 * dtype. Returns MPI_SUCCESS or MPI_ERR_OTHER (corrupt or mismatched). */
int zmpi_block_decompress(zmpi_call *c, const void *src, size_t len, void *dst, size_t count);

/* inout[i] = op(in[i], inout[i]) for the call's type (PMPI_Reduce_local). */
int zmpi_reduce_local(const zmpi_call *c, const void *in, void *inout, size_t count, MPI_Op op);

/* Statistics helpers. */
void zmpi_stat_sent(zmpi_call *c, size_t raw, size_t sent);

/* Scratch memory: malloc that reports MPI_ERR_NO_MEM. */
/* Monotonic clock in nanoseconds (codec time in the statistics). */
uint64_t zmpi_clock_ns(void);
int zmpi_alloc(size_t n, void *out_ptr);
/* Scratch memory of a call, from its communicator's kept buffers when the
 * request is large (see zmpi_scratch): returns MPI_SUCCESS or
 * MPI_ERR_NO_MEM. Release with zmpi_scratch_put (NULL is fine), never free(). */
int zmpi_scratch_get(const zmpi_call *c, size_t n, void *out_ptr);
void zmpi_scratch_put(const zmpi_call *c, void *p);
/* Frees the kept buffers (none may be in use). */
void zmpi_scratch_release(zmpi_scratch *s);

#endif
