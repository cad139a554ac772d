/*
 * preload/profile.h - the profile of libzmpi_preload.so: per call site (the
 * MPI function and the program's address that called it), calls,
 * nanoseconds inside, bytes the calls asked to send, what zmpi did with them,
 * and samples of the data for the advisor.
 *
 * Every wrapper brackets its call with zp_begin / zp_end. The counters are
 * C11 atomics updated with relaxed order, so wrappers may run on any number
 * of threads at once (MPI_THREAD_MULTIPLE); the report reads them once every
 * other thread is out of MPI.
 */
#ifndef ZMPI_PRELOAD_PROFILE_H
#define ZMPI_PRELOAD_PROFILE_H

#include <limits.h>
#include <mpi.h>
#include <stdint.h>

#include <zmpi/zmpi.h>

/* The wrappers are the library's only exports (built with hidden visibility). */
#define ZP_EXPORT __attribute__((visibility("default")))

/* One wrapped call in progress. */
typedef struct {
    int call;       /* enum zp_call */
    void *ra;       /* the return address: where the program called */
    MPI_Comm comm;  /* the call's communicator, MPI_COMM_NULL if none */
    int route;      /* 1: the ZMPI_ implementation runs (compression is on) */
    int excluded;   /* 1: the ZMPI_ paths run, but ZMPI_CALLS / ZMPI_EXCLUDE_CALLS or the site lists
                       leave this call's data uncompressed (its receives still decode) */
    int have_stats; /* before holds comm's zmpi statistics before the call */
    void *slot;     /* the call site, when zp_begin looked it up */
    uint64_t t0;
    ZMPI_Stats before;
} zp_frame;

/* Starts a call: ra is __builtin_return_address(0) of the wrapper. Sets
 * f->route for the wrappers of calls zmpi implements. */
void zp_begin(zp_frame *f, int call, void *ra, MPI_Comm comm);
/* Ends it: rc the call's result, bytes what it asked to send (0 if
 * nothing), and the data it sent (buf, count elements of datatype per
 * destination; buf NULL if none or not sampled) for the advisor. */
void zp_end(zp_frame *f, int rc, unsigned long long bytes, const void *buf, int count, MPI_Datatype datatype);

/* A communicator the program has just made (the made= mark of
 * mpi_functions.txt): when the ZMPI_ paths run, zmpi's one-time set-up of it
 * (ZMPI_Comm_prepare: the ranks' settings compared, the node layout, the
 * private duplicate) is done now, as a program calling zmpi directly does,
 * instead of in the first compressed collective on it, which would then
 * carry the cost of a communicator creation. Collective over comm (every
 * rank of it has just made it; whether the ZMPI_ paths run is the same on
 * every rank). An error here is not raised: it is kept and raised by the
 * first collective, as without this set-up. MPI_COMM_NULL, one rank and an
 * intercommunicator: nothing to do. */
void zp_comm_made(MPI_Comm comm);

/* A large-count receive capacity as an int: at most INT_MAX. */
static inline int zp_clamp(MPI_Count count)
{
    return count > INT_MAX ? INT_MAX : count < INT_MIN ? INT_MIN : (int)count;
}
/* MPI_Sendrecv whose send the call or site policy leaves uncompressed: the
 * receive through zmpi, the send's data as bytes zmpi does not compress
 * (the excl= mark of mpi_functions.txt; preload.c). */
int zp_sendrecv_excluded(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag,
                         void *recvbuf, int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                         MPI_Status *status);
/* A large-count call zmpi cannot take (narrow=clamp): the message, the
 * error MPI_ERR_COUNT raised on comm; returns it (preload.c). */
int zp_count_error(MPI_Comm comm, const char *call);

/* Monotonic time in nanoseconds (clock_gettime(CLOCK_MONOTONIC)). */
uint64_t zp_clock(void);

/* count x PMPI_Type_size_x(datatype); 0 for a negative count, a null or
 * invalid datatype. (MPI_Count: an int count or a large-count binding's.) */
unsigned long long zp_bytes(MPI_Count count, MPI_Datatype datatype);
/* zp_bytes(count, datatype) x the size of comm (its remote group's for an
 * intercommunicator). */
unsigned long long zp_bytes_n(MPI_Count count, MPI_Datatype datatype, MPI_Comm comm);
/* The sum of zp_bytes(counts[i], datatype) over the size of comm (as
 * zp_bytes_n); 0 if counts is NULL. */
unsigned long long zp_bytes_v(const int counts[], MPI_Datatype datatype, MPI_Comm comm);
/* zp_bytes(count, datatype) x the other ranks of an intracommunicator
 * (its size - 1; an intercommunicator's remote size). */
unsigned long long zp_bytes_others(MPI_Count count, MPI_Datatype datatype, MPI_Comm comm);
/* zp_bytes_v without this rank's entry (an intracommunicator's). */
unsigned long long zp_bytes_v_others(const int counts[], MPI_Datatype datatype, MPI_Comm comm);
/* zp_bytes(counts[rank], datatype): this rank's entry (0 in an intercommunicator). */
unsigned long long zp_bytes_at_rank(const int counts[], MPI_Datatype datatype, MPI_Comm comm);
/* The advisor's sample of a v-collective: its first block with a positive
 * count - that count, and where the block starts (buf + displs[k] extents;
 * NULL if none). */
int zp_vcount(const int counts[], MPI_Comm comm);
const void *zp_vbuf(const void *buf, const int counts[], const int displs[], MPI_Datatype datatype, MPI_Comm comm);
/* 1 if this process is the root of a rooted collective on comm: root is
 * MPI_ROOT (intercommunicator), or root is its rank in an intracommunicator. */
int zp_is_root(int root, MPI_Comm comm);

#endif /* ZMPI_PRELOAD_PROFILE_H */
