/*
 * An MPI program for the profiler's byte accounting and the advisor
 * (check_advise.py reads the report it leaves under libzmpi_preload.so).
 * Every call moves smooth doubles (compressible), N per block, once each
 * at its own line, so that each site is one call:
 *   Bcast from rank 0; Scatter from rank 0; Allreduce; Allreduce in place;
 *   Alltoall; Alltoallv; Allgatherv in place; Gatherv to rank 0; Scatterv
 *   from rank 0; Reduce_scatter_block; Send + Recv of MPI_FLOAT; and with
 *   MPI-4 MPI_Send_c of doubles (the large-count binding mpi4py calls).
 *
 *   preload_advise N [ARG...]
 *
 * The extra arguments only appear in the report's command line. Exit 1 if a
 * call fails.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static double smooth(int i, int r)
{
    return sin(0.0005 * i) * 30.0 + cos(0.0007 * i) * 5.0 + r;
}

int main(int argc, char **argv)
{
    int rank, size, rc = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    size_t big = (size_t)n * (size_t)size;
    double *a = malloc(sizeof(double) * big), *b = malloc(sizeof(double) * big);
    int *cnt = malloc(sizeof(int) * (size_t)size), *dsp = malloc(sizeof(int) * (size_t)size);
    for (size_t i = 0; i < big; i++)
        a[i] = smooth((int)i, rank), b[i] = smooth((int)i, rank);
    for (int k = 0; k < size; k++)
        cnt[k] = n, dsp[k] = k * n;
    rc |= MPI_Bcast(a, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    rc |= MPI_Scatter(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    rc |= MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    rc |= MPI_Allreduce(MPI_IN_PLACE, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    rc |= MPI_Alltoall(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, MPI_COMM_WORLD);
    rc |= MPI_Alltoallv(a, cnt, dsp, MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE, MPI_COMM_WORLD);
    rc |= MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b, cnt, dsp, MPI_DOUBLE, MPI_COMM_WORLD);
    rc |= MPI_Gatherv(a, n, MPI_DOUBLE, b, cnt, dsp, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    rc |= MPI_Scatterv(a, cnt, dsp, MPI_DOUBLE, b, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    rc |= MPI_Reduce_scatter_block(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    float *f = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++)
        f[i] = (float)smooth(i, rank);
    if (rank == 0)
        rc |= MPI_Send(f, n, MPI_FLOAT, 1, 7, MPI_COMM_WORLD);
    else if (rank == 1)
        rc |= MPI_Recv(f, n, MPI_FLOAT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#if MPI_VERSION >= 4
    if (rank == 0)
        rc |= MPI_Send_c(a, (MPI_Count)n, MPI_DOUBLE, 1, 8, MPI_COMM_WORLD);
    else if (rank == 1)
        rc |= MPI_Recv_c(b, (MPI_Count)n, MPI_DOUBLE, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
#else
    if (rank == 0) /* check_advise.py then expects no MPI_Send_c site */
        printf("preload_advise: MPI %d.%d: no MPI_Send_c\n", MPI_VERSION, MPI_SUBVERSION);
#endif
    free(a);
    free(b);
    free(f);
    free(cnt);
    free(dsp);
    MPI_Finalize();
    return rc ? 1 : 0;
}
