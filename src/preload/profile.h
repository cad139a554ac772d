/*
 * preload/profile.h - the profile of libzmpi_preload.so: per MPI function,
 * calls, nanoseconds inside and bytes the calls asked to send.
 *
 * The counters are C11 atomics updated with relaxed order, so wrappers may
 * run on any number of threads at once (MPI_THREAD_MULTIPLE); MPI_Finalize
 * reads them once every other thread is out of MPI.
 */
#ifndef ZMPI_PRELOAD_PROFILE_H
#define ZMPI_PRELOAD_PROFILE_H

#include <mpi.h>
#include <stdint.h>

/* The wrappers are the library's only exports (built with hidden visibility). */
#define ZP_EXPORT __attribute__((visibility("default")))

/* Monotonic time in nanoseconds (clock_gettime(CLOCK_MONOTONIC)). */
uint64_t zp_clock(void);

/* Adds one call of profiled function `call` (an enum zp_call), ns
 * nanoseconds inside it, and bytes asked to send. Does nothing while
 * profiling is off (MPI_Pcontrol(0)). */
void zp_record(int call, uint64_t ns, unsigned long long bytes);

/* count x PMPI_Type_size_x(datatype); 0 for a negative count, a null or
 * invalid datatype. */
unsigned long long zp_bytes(int count, MPI_Datatype datatype);
/* zp_bytes(count, datatype) x the size of comm (its remote group's for an
 * intercommunicator). */
unsigned long long zp_bytes_n(int count, MPI_Datatype datatype, MPI_Comm comm);
/* The sum of zp_bytes(counts[i], datatype) over the size of comm (as
 * zp_bytes_n); 0 if counts is NULL. */
unsigned long long zp_bytes_v(const int counts[], MPI_Datatype datatype, MPI_Comm comm);
/* 1 if this process is the root of a rooted collective on comm: root is
 * MPI_ROOT (intercommunicator), or root is its rank in an intracommunicator. */
int zp_is_root(int root, MPI_Comm comm);

#endif /* ZMPI_PRELOAD_PROFILE_H */
