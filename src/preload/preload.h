/*
 * preload/preload.h - what the hand-written wrappers (preload.c) use of the
 * profile core (profile.c) beyond profile.h.
 */
#ifndef ZMPI_PRELOAD_PRELOAD_H
#define ZMPI_PRELOAD_PRELOAD_H

/* MPI_Pcontrol: on = 0 stops recording calls, any other value resumes. */
void zp_set_profiling(int on);
/* The start of the application's time: the first call wins. */
void zp_mark_init(void);
/* At MPI_Finalize, before PMPI_Finalize; collective over MPI_COMM_WORLD.
 * If rank 0's environment has ZMPI_REPORT=DIR, sums the counters of every
 * rank to rank 0 (PMPI_ calls only), which writes
 * DIR/<exe>.<nranks>.<pid>.zmpi.json (creating DIR if it is missing).
 * Returns MPI_SUCCESS, an MPI error of the reductions, or MPI_ERR_IO (rank
 * 0, report not written: the message is on stderr and the error is raised
 * through MPI_COMM_WORLD's error handler). */
int zp_report(void);

#endif /* ZMPI_PRELOAD_PRELOAD_H */
