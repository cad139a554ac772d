/*
 * zmpi's errors under the default error handler (MPI_ERRORS_ARE_FATAL): the
 * job stops with zmpi's message instead of going on with a wrong buffer.
 *   fatal env        a zmpi call on a communicator whose environment has a
 *                    malformed setting (the launcher sets it)
 *   fatal truncate   a compressed message into too small a receive
 *   fatal mismatch   a collective on ranks with different settings
 * Every case must end the job with a non-zero status and the message; this
 * program prints "NOT STOPPED" if it gets past the error.
 */
#include "mpitest.h" /* mt_xmalloc only: this program keeps the default error handler */

int main(int argc, char **argv)
{
    int rank, size, n = 100000;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *what = argc > 1 ? argv[1] : "env";
    float *a = mt_xmalloc((size_t)n * 4);
    for (int i = 0; i < n; i++)
        a[i] = 1.0f + (float)(i % 7) * 1e-4f; /* compresses well: the stream fits the small receive */
    ZMPI_Config cfg;
    ZMPI_Config_from_env(&cfg, NULL);
    if (!strcmp(what, "env")) {
        ZMPI_Bcast(a, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    } else if (!strcmp(what, "truncate")) {
        cfg.eb_mode = ZMPI_EB_ABS;
        cfg.eb = 1e-3;
        cfg.min_bytes = 0;
        ZMPI_Comm_set_config(MPI_COMM_WORLD, &cfg);
        ZMPI_Sendrecv(a, n, MPI_FLOAT, (rank + 1) % size, 1, a, n / 10, MPI_FLOAT, (rank + size - 1) % size, 1,
                      MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        cfg.eb_mode = ZMPI_EB_ABS;
        cfg.eb = 1e-3;
        cfg.min_bytes = rank == 0 ? 0 : (size_t)1 << 30;
        ZMPI_Comm_set_config(MPI_COMM_WORLD, &cfg);
        ZMPI_Bcast(a, n, MPI_FLOAT, size - 1, MPI_COMM_WORLD);
    }
    printf("NOT STOPPED (%s)\n", what);
    free(a);
    MPI_Finalize();
    return 0;
}
