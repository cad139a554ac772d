/*
 * zmpi/zmpi.h - compressed MPI communication.
 *
 * Every ZMPI_ call takes exactly the arguments of its MPI counterpart, so
 * adopting zmpi is a rename. Compression settings live in a configuration
 * attached to the communicator (ZMPI_Comm_set_config), with defaults from
 * environment variables ZMPI_EB, ZMPI_EB_MODE, ZMPI_CODEC, ... The list of
 * them, with defaults and meanings, is one table in the library: read it with
 * ZMPI_Setting_info, print it with `zmpi config` (values and origins) or
 * `zmpi config --markdown` (docs/configuration.md is that output).
 * A malformed value, or a ZMPI_ variable that is none of these (a typo), is
 * an error of every zmpi call on a communicator that takes its settings from
 * the environment, raised through its error handler (see ZMPI_Error_class)
 * with a message naming the variable: never a silent default.
 *
 * Which communicators have which settings: MPI_Comm_dup copies them; a
 * communicator made any other way (MPI_Comm_split, MPI_Cart_create,
 * MPI_Comm_create, ...) starts from the environment, since MPI does not tell
 * a library a communicator's parent - copy them with ZMPI_Comm_get_config
 * and ZMPI_Comm_set_config.
 *
 * Every call falls back to the plain MPI call, with exactly MPI's result, when
 * compression cannot apply or was not configured: datatypes other than
 * MPI_FLOAT and MPI_DOUBLE, derived or non-contiguous datatypes (except in
 * point-to-point calls and in Bcast, Scatter, Gather, Allgather and
 * Alltoall, which compress derived datatypes made only of MPI_FLOAT or only
 * of MPI_DOUBLE as their packed elements), operations
 * other than MPI_SUM / MPI_MIN / MPI_MAX, intercommunicators, messages below
 * the size threshold, and codec failures (counted in ZMPI_Comm_get_stats).
 *
 * Both ends of a MPI_FLOAT / MPI_DOUBLE message (or one of such a derived
 * datatype) use zmpi calls: a compressed
 * point-to-point message is a self-describing byte stream, which any zmpi
 * receiver decodes whatever its own settings (a plain MPI_Recv would get the
 * stream's bytes). Requests and probed messages: see the completion and probe
 * calls below. Internally zmpi calls only PMPI_ functions.
 *
 * Inter-step codecs (ZMPI_CODEC=xorlzc-inter, trunc-inter, dp2sp-inter)
 * code a message against the previous message of its channel: (comm, peer,
 * tag) in point-to-point, (comm, peer) in Alltoall(v) - give each recurring
 * exchange a communicator of its own (MPI_Comm_dup), so that consecutive
 * messages of a channel hold the same variables. Both ends keep that
 * previous message: the sender at most ZMPI_CHANNEL_MEM bytes per
 * communicator (beyond it the intra-step variant xorlzc / trunc / dp2sp
 * codes the message), the receiver what its senders keep; reported in
 * ZMPI_Stats.channel_bytes. The streams are numbered per channel and a
 * channel restarts whenever a message of it travels otherwise (raw, below
 * ZMPI_MIN_BYTES, another size), on both ends alike. Receives of a channel
 * are decoded in the order MPI matched their messages (a completion call
 * that finds a later one first completes the earlier receives of the
 * channel). A message that arrives out of step - its predecessor went to a
 * plain MPI receive or was lost to an error - is an error (class
 * MPI_ERR_OTHER), never a wrong result; several threads sending on one
 * channel must order their sends as they want them received. The other
 * collectives use the intra-step variant.
 */
#ifndef ZMPI_ZMPI_H
#define ZMPI_ZMPI_H

#include <mpi.h>
#include <stddef.h>

#include "zmpi/codec.h"
#include "zmpi/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ZMPI_Scope {
    ZMPI_SCOPE_RESULT = 0,  /* the bound holds for the collective's result */
    ZMPI_SCOPE_MESSAGE = 1  /* the bound holds for each compressed message */
} ZMPI_Scope;

typedef enum ZMPI_Coll {
    ZMPI_COLL_BCAST = 0,
    ZMPI_COLL_SCATTER,        /* also Scatterv */
    ZMPI_COLL_GATHER,         /* also Gatherv */
    ZMPI_COLL_ALLGATHER,      /* also Allgatherv */
    ZMPI_COLL_ALLTOALL,       /* also Alltoallv */
    ZMPI_COLL_REDUCE_SCATTER, /* also Reduce_scatter_block */
    ZMPI_COLL_ALLREDUCE,
    ZMPI_COLL_REDUCE,
    ZMPI_COLL_COUNT
} ZMPI_Coll;

#define ZMPI_ALGO_DEFAULT 0 /* let zmpi choose */
#define ZMPI_ALGO_MPI (-1)  /* always the plain MPI call */

typedef struct ZMPI_Config {
    zmpi_codec codec;      /* a codec of codec.h, or ZMPI_CODEC_AUTO */
    zmpi_eb_mode eb_mode;  /* ZMPI_EB_NONE: no bound (bounded codecs off) */
    double eb;
    ZMPI_Scope scope;
    int threads;
    size_t min_bytes;
    size_t chunk;          /* elements per pipelined chunk */
    int algorithm[ZMPI_COLL_COUNT]; /* ZMPI_ALGO_DEFAULT, ZMPI_ALGO_MPI or an id from ZMPI_Coll_algorithms */
    /* The network and codec model (ZMPI_Model_estimate): with net_bw > 0 it
     * estimates whether compression pays - the way a collective's first call
     * takes before the measurements (see decision), and point-to-point's
     * choice. With net_bw 0 (unknown, the default) the collectives measure
     * both ways, and every other call that can be compressed is. */
    double net_bw;         /* bytes/s of one link (ZMPI_NET_BW, e.g. 1Gbit, 10Gbit, 12.5GB) */
    double net_lat;        /* seconds per message (ZMPI_NET_LAT, e.g. 50us) */
    double comp_speed;     /* codec bytes/s, one thread; 0: built-in estimate (ZMPI_CODEC_SPEED=C[,D]) */
    double decomp_speed;
    double ratio;          /* expected compression ratio; 0: estimated from codec and bound (ZMPI_RATIO) */
    size_t scratch_keep;   /* bytes of working buffers kept between calls (ZMPI_SCRATCH) */
    /* Inter-step codecs (xorlzc-inter, trunc-inter, dp2sp-inter): the most
     * bytes of history the channels of the messages this rank sends on the
     * communicator keep (ZMPI_CHANNEL_MEM); a message whose history does not
     * fit is coded by the codec's intra-step variant instead. */
    size_t channel_mem;
    int trunc_bits;        /* bits trunc / trunc-inter drop (ZMPI_TRUNC_BITS); 0: 32 for doubles, 16 for floats */
    /* The nodes of the ranks (ZMPI_NODE_RANKS): 0, the MPI's own
     * (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED: ranks that share memory
     * share a node); k >= 1: emulated nodes of k consecutive ranks of
     * MPI_COMM_WORLD (1: every rank a node of its own), for trying node-aware
     * behaviour on one machine. */
    int node_ranks;
    /* Messages between ranks of one node (ZMPI_INTRA_NODE): 0, plain (the
     * default: shared memory moves data faster than any codec codes it) -
     * point-to-point messages to a rank of the same node, and the
     * collectives of a communicator whose ranks all share one node; 1,
     * compressed as between nodes. */
    int intra_node;
    /* How a collective chooses between compressed and plain MPI
     * (ZMPI_DECISION): 0, measured (the default) - the first calls of each
     * collective and size class run the compressed way and plain MPI (with
     * ZMPI_NET_BW, after the model's estimate), timed, and later calls take
     * the faster; 1, always - every call that can be compressed is, with
     * ZMPI_NET_BW as the model decides (no measuring). */
    int decision;
} ZMPI_Config;

/* Statistics of a communicator (counters since its creation). */
typedef struct ZMPI_Stats {
    unsigned long long calls;           /* ZMPI_ calls on this communicator */
    unsigned long long compressed;      /* calls that moved compressed data (a receive: one that got a compressed
                                           message) */
    unsigned long long fallback_type;   /* fell back: datatype / op / intercommunicator */
    unsigned long long fallback_small;  /* fell back: below ZMPI_MIN_BYTES */
    unsigned long long fallback_config; /* fell back: no bound configured, or ZMPI_ALGO_MPI */
    unsigned long long fallback_model;  /* fell back: the model says compression would not pay */
    unsigned long long codec_errors;    /* codec failures handled by sending uncompressed */
    unsigned long long bytes_raw;       /* uncompressed bytes of compressed messages sent */
    unsigned long long bytes_sent;      /* compressed bytes sent for them */
    unsigned long long scratch_bytes;   /* working buffers kept now (at most ZMPI_SCRATCH) */
    unsigned long long ns_compress;     /* nanoseconds this process spent compressing for comm */
    unsigned long long ns_decompress;   /* ... and decompressing what comm received */
    /* Per collective: the algorithm that ran its last call on this
     * communicator, as reported by the algorithm's own code (an id of
     * ZMPI_Coll_algorithms); ZMPI_ALGO_MPI if the last call ran as plain MPI;
     * ZMPI_ALGO_DEFAULT (0) if it was never called. */
    int last_algorithm[ZMPI_COLL_COUNT];
    unsigned long long channel_bytes;   /* history kept now by the inter-step channels of comm (both directions) */
    unsigned long long grid_sums;       /* SUM reductions added on grid codes (no decompression on the way) */
    int nodes;                          /* nodes the ranks span, once zmpi has learned it (ZMPI_Comm_nodes; the
                                           first compressed collective); 0 before */
    unsigned long long fallback_node;   /* fell back: between ranks of one node (ZMPI_INTRA_NODE=plain) */
} ZMPI_Stats;

/* Fills *cfg with the defaults from the environment. Returns MPI_SUCCESS, or
 * MPI_ERR_ARG if a variable is malformed (that setting keeps its built-in
 * default; *bad names the first bad variable if bad != NULL). */
ZMPI_API int ZMPI_Config_from_env(ZMPI_Config *cfg, const char **bad);
/* Checks every ZMPI_ variable of the environment, alone and together (a
 * fixed-precision codec with a bound, ...), as the calls would: MPI_SUCCESS,
 * or MPI_ERR_ARG with the first problem, naming the variables, in why (cap
 * bytes; may be NULL). Local; needs no MPI initialisation. */
ZMPI_API int ZMPI_Config_env_check(char *why, int cap);
/* The settings table: every ZMPI_ environment variable. For index 0..n-1
 * fills name, default_value and doc (any may be NULL) and returns n (the
 * number of settings); for other indexes returns n and fills nothing. */
ZMPI_API int ZMPI_Setting_info(int index, const char **name, const char **default_value, const char **doc);
/* Checks one setting's value as the environment parsing would: returns
 * MPI_SUCCESS, or MPI_ERR_ARG with the reason in why (cap bytes; may be
 * NULL) for a malformed value or a name that is not a zmpi setting. Local;
 * needs no MPI initialisation. */
ZMPI_API int ZMPI_Setting_check(const char *name, const char *value, char *why, int cap);
/* Reads a settings file (ZMPI_CONFIG=FILE of libzmpi_preload.so): one
 * NAME=VALUE per line; blank lines and lines starting with # are skipped;
 * spaces around NAME and VALUE are trimmed; every NAME must be a zmpi
 * setting other than ZMPI_CONFIG, with a valid value (ZMPI_Setting_check);
 * a line holds at most 4094 characters and no NUL byte. A name set on
 * several lines takes its last value. Calls each(name, value, arg) once
 * per name, with that last value, in the order of those last lines, when
 * the whole file is valid (each may be NULL: a check only). Returns
 * MPI_SUCCESS, MPI_ERR_FILE (unreadable) or MPI_ERR_ARG (a bad line), the
 * reason with the file and line in why (cap bytes; may be NULL), or each's
 * first non-zero result. Local; needs no MPI initialisation. */
ZMPI_API int ZMPI_Config_file_read(const char *path, int (*each)(const char *name, const char *value, void *arg),
                                   void *arg, char *why, int cap);
/* ZMPI_Config_file_read(path, NULL, NULL, why, cap). */
ZMPI_API int ZMPI_Config_file_check(const char *path, char *why, int cap);

/* Sets the communicator's configuration. Collective over comm, like
 * MPI_Comm_set_info: every rank calls it. The ranks may set different
 * settings for their point-to-point messages (a receiver decodes any zmpi
 * message whatever its own settings), but the collectives on comm then raise
 * an error on every rank (the settings that decide a collective's path are
 * compared across the ranks here, and at the first collective of a
 * communicator configured from the environment). An invalid configuration
 * (unknown codec, a bound that is not a finite number > 0, more threads than
 * cores, an unknown algorithm) is an error raised on comm (class
 * MPI_ERR_ARG); the rank keeps its old settings. Duplicates (MPI_Comm_dup)
 * inherit the configuration. ZMPI_Comm_get_config reads it (and raises the
 * error of a malformed environment variable). */
ZMPI_API int ZMPI_Comm_set_config(MPI_Comm comm, const ZMPI_Config *cfg);
/* Optional, collective over comm: does now the one-time set-up that comm's
 * first compressed collective would otherwise do - compare the ranks'
 * settings (an error on every rank if they differ), learn the node layout
 * (on MPI_COMM_WORLD: every communicator's, point-to-point calls included,
 * follows from it) and make zmpi's private
 * duplicate of comm for the collectives' own messages (MPI_Comm_dup; on a
 * real network about an allreduce's time, on SimGrid SMPI with a collective
 * selector some 80 ms at 64 ranks). Call it where comm is made, so that no
 * timed collective pays for it; ZMPI_Comm_set_config does it too when the
 * settings compress. Nothing to do (MPI_SUCCESS) for one rank, an
 * intercommunicator, or settings that do not compress. */
ZMPI_API int ZMPI_Comm_prepare(MPI_Comm comm);
/* The node layout zmpi uses for comm (an intracommunicator), learned once per
 * communicator - collectively over comm the first time unless
 * ZMPI_NODE_RANKS emulates the nodes (then local) - and kept with it:
 * *nnodes nodes, numbered in the order of their lowest rank; this rank's
 * *node, its *local_rank among that node's ranks (in rank order) and
 * their number *local_size. node_of (NULL, or room for the communicator's
 * size) receives every rank's node. Any output pointer may be NULL. */
ZMPI_API int ZMPI_Comm_nodes(MPI_Comm comm, int *nnodes, int *node, int *local_rank, int *local_size,
                             int *node_of);
ZMPI_API int ZMPI_Comm_get_config(MPI_Comm comm, ZMPI_Config *cfg);
/* 1 if calls under cfg compress floating-point data at all: a bound is
 * set, or the codec is a lossless one the MPI layer uses (zstd, xorlzc,
 * ...; not "stored"); 0 otherwise or for a NULL cfg. Local. */
ZMPI_API int ZMPI_Config_compresses(const ZMPI_Config *cfg);
ZMPI_API int ZMPI_Comm_get_stats(MPI_Comm comm, ZMPI_Stats *stats);

/* The algorithms of a collective: fills up to max entries of ids / names /
 * descriptions (any may be NULL) and returns how many exist. */
ZMPI_API int ZMPI_Coll_algorithms(ZMPI_Coll coll, int max, int *ids, const char **names, const char **descriptions);
/* Algorithm id from a name ("ring", "mpi", "cprp2p", ...), or -2 if unknown. */
ZMPI_API int ZMPI_Coll_algorithm_from_name(ZMPI_Coll coll, const char *name);
ZMPI_API const char *ZMPI_Coll_name(ZMPI_Coll coll);

/* The model behind the decision to compress a collective of comm (its
 * configuration; `count` elements of `datatype` as the call's own count
 * argument: the buffer for Bcast, Allreduce, Reduce; the block per rank for
 * Scatter, Gather, Allgather, Alltoall; the whole vector for
 * Reduce_scatter(_block); the message for ZMPI_COLL_COUNT = point-to-point).
 * Estimates the time of a bandwidth-optimal plain algorithm and of zmpi's
 * compressed one on a network of cfg.net_bw bytes/s and cfg.net_lat s per
 * message, from the codec's speed and an expected ratio. Returns 1 if
 * compression pays (t_zmpi < t_plain, or net_bw unknown), 0 if not;
 * t_plain / t_zmpi (either may be NULL) get the estimates in seconds (0
 * when net_bw is unknown). Local, not collective. */
ZMPI_API int ZMPI_Model_estimate(MPI_Comm comm, ZMPI_Coll coll, long long count, MPI_Datatype datatype, double *t_plain,
                                 double *t_zmpi);
/* The same model for a configuration of one's own instead of a
 * communicator's, at nranks ranks: what the profiler's advisor uses to
 * predict savings on other networks (cfg->net_bw, net_lat) from measured
 * ratios and codec speeds (cfg->ratio, comp_speed, decomp_speed). Local,
 * needs no MPI initialisation; returns as ZMPI_Model_estimate (0 for a
 * NULL cfg, nranks < 1 or a datatype zmpi does not compress). */
ZMPI_API int ZMPI_Model_predict(const ZMPI_Config *cfg, ZMPI_Coll coll, int nranks, long long count,
                                MPI_Datatype datatype, double *t_plain, double *t_zmpi);

/* ---- point-to-point ---- */
ZMPI_API int ZMPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
ZMPI_API int ZMPI_Recv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                       MPI_Status *status);
ZMPI_API int ZMPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                        MPI_Request *request);
/* Synchronous modes: the compressed stream (or the plain data) travels with
 * PMPI_Ssend / PMPI_Issend, so they complete once the receive has matched. */
ZMPI_API int ZMPI_Ssend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm);
ZMPI_API int ZMPI_Issend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                         MPI_Request *request);
ZMPI_API int ZMPI_Irecv(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                        MPI_Request *request);
ZMPI_API int ZMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                           MPI_Comm comm, MPI_Status *status);
/* MPI-4's nonblocking exchanges: the receive through zmpi's path (it
 * decodes what arrives), the send compressed as ZMPI_Isend's; one request
 * of zmpi's, complete when both are. The replace form sends a copy of buf
 * taken at the call. */
ZMPI_API int ZMPI_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag,
                            MPI_Comm comm, MPI_Request *request);
ZMPI_API int ZMPI_Isendrecv_replace(void *buf, int count, MPI_Datatype datatype, int dest, int sendtag, int source,
                                    int recvtag, MPI_Comm comm, MPI_Request *request);
/* Persistent point-to-point. The send calls (a datatype zmpi compresses;
 * others are MPI's own persistent sends) and ZMPI_Recv_init (any datatype)
 * return a persistent request of zmpi's; every ZMPI_Start / ZMPI_Startall
 * reads the send buffer as it is then and compresses it (an inter-step
 * codec codes each start against the previous one), or posts the receive,
 * which decodes what arrives (a message a zmpi probe kept first). Complete
 * the starts with the calls below; the request stays until
 * ZMPI_Request_free. A derived datatype is duplicated at init (it may be
 * freed afterwards). MPI's own MPI_Start never starts a zmpi request. */
ZMPI_API int ZMPI_Send_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                            MPI_Request *request);
ZMPI_API int ZMPI_Ssend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                             MPI_Request *request);
ZMPI_API int ZMPI_Rsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                             MPI_Request *request);
ZMPI_API int ZMPI_Bsend_init(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
                             MPI_Request *request);
ZMPI_API int ZMPI_Recv_init(void *buf, int count, MPI_Datatype datatype, int source, int tag, MPI_Comm comm,
                            MPI_Request *request);
ZMPI_API int ZMPI_Start(MPI_Request *request);
ZMPI_API int ZMPI_Startall(int count, MPI_Request requests[]);
/* Completion. A ZMPI_Isend, ZMPI_Irecv (of any datatype), ZMPI_Isendrecv
 * or a persistent start returns a request of zmpi's (a generalized request
 * that zmpi completes when the transfer is over and, for a receive, the
 * message is decoded; its status then counts the uncompressed data).
 * Complete it with these calls, which take any mix of zmpi and plain
 * requests and behave as their MPI namesakes (a persistent request becomes
 * inactive). ZMPI_Request_get_status drives the transfer and reports
 * without completing. Under MPICH, MPI's own completion calls (MPI_Wait,
 * MPI_Test, MPI_Waitall, ...) complete zmpi's nonpersistent requests too;
 * under other MPI libraries they never do (MPI_Test keeps returning false,
 * MPI_Wait blocks). ZMPI_Request_free'd requests are completed by later
 * zmpi calls. */
ZMPI_API int ZMPI_Wait(MPI_Request *request, MPI_Status *status);
ZMPI_API int ZMPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[]);
ZMPI_API int ZMPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status);
ZMPI_API int ZMPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
ZMPI_API int ZMPI_Test(MPI_Request *request, int *flag, MPI_Status *status);
ZMPI_API int ZMPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[]);
ZMPI_API int ZMPI_Testany(int count, MPI_Request requests[], int *index, int *flag, MPI_Status *status);
ZMPI_API int ZMPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[], MPI_Status statuses[]);
ZMPI_API int ZMPI_Request_free(MPI_Request *request);
ZMPI_API int ZMPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status);
ZMPI_API int ZMPI_Cancel(MPI_Request *request);

/* Probes. MPI_Probe reports a compressed message's size on the wire; these
 * report what it holds: MPI_Get_count / ZMPI_Get_count with MPI_FLOAT or
 * MPI_DOUBLE give its elements, with a derived type made of them its whole
 * instances or MPI_UNDEFINED (raw data: its bytes / the type's size). To
 * read the header they take the message out of MPI's queue and keep it on
 * the communicator: receive it with a zmpi receive (ZMPI_Recv, ZMPI_Irecv,
 * ZMPI_Sendrecv), which looks at kept messages first, in MPI's order - not
 * with MPI_Recv. A message handle from ZMPI_Mprobe / ZMPI_Improbe goes to
 * ZMPI_Mrecv / ZMPI_Imrecv only. */
ZMPI_API int ZMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status);
ZMPI_API int ZMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status);
ZMPI_API int ZMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status);
ZMPI_API int ZMPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message, MPI_Status *status);
ZMPI_API int ZMPI_Mrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Status *status);
ZMPI_API int ZMPI_Imrecv(void *buf, int count, MPI_Datatype datatype, MPI_Message *message, MPI_Request *request);
ZMPI_API int ZMPI_Get_count(const MPI_Status *status, MPI_Datatype datatype, int *count);

/* Errors. zmpi raises what it detects itself - a malformed setting, ranks
 * whose settings differ, a message with more elements than the receive
 * buffer, doubles received as floats, an undecodable message - through the
 * communicator's error handler, as MPI does (MPI_ERRORS_ARE_FATAL, the
 * default, stops the job with the message; under MPI_ERRORS_RETURN the
 * code is returned). The codes belong to error classes of zmpi's own, and
 * MPI_Error_string says precisely what went wrong; ZMPI_Error_class gives
 * the standard class nearest to the meaning (MPI_ERR_ARG for a setting,
 * MPI_ERR_TRUNCATE, MPI_ERR_TYPE, MPI_ERR_OTHER for disagreeing settings
 * and undecodable messages, MPI_ERR_REQUEST), and MPI's class for MPI's
 * own codes. */
ZMPI_API int ZMPI_Error_class(int errorcode, int *errorclass);
/* *flag = 1 if zmpi compresses messages of this datatype when a bound is
 * configured: MPI_FLOAT, MPI_DOUBLE, the Fortran reals (MPI_REAL,
 * MPI_REAL4, MPI_DOUBLE_PRECISION, MPI_REAL8), and derived datatypes built
 * only of one of them (point-to-point); else 0. Local. */
ZMPI_API int ZMPI_Type_compressible(MPI_Datatype datatype, int *flag);

/* ---- collectives ---- */
ZMPI_API int ZMPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
ZMPI_API int ZMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
ZMPI_API int ZMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                           MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           int root, MPI_Comm comm);
ZMPI_API int ZMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                         int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm);
ZMPI_API int ZMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                          MPI_Comm comm);
ZMPI_API int ZMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                            int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
ZMPI_API int ZMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                             const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm);
ZMPI_API int ZMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm);
ZMPI_API int ZMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[], const int rdispls[],
                            MPI_Datatype recvtype, MPI_Comm comm);
ZMPI_API int ZMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
ZMPI_API int ZMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);
ZMPI_API int ZMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm);
ZMPI_API int ZMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                         int root, MPI_Comm comm);

#ifdef __cplusplus
}
#endif
#endif /* ZMPI_ZMPI_H */
