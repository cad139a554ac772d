/*
 * A plain MPI program for the libzmpi_preload.so tests of the calls MPI
 * itself completes: MPI_Sendrecv_replace of a derived datatype and
 * persistent receives.
 *
 *   preload_persist TOL
 *
 * TOL 0 (run without a zmpi bound): the column exchange is exact, and a
 * persistent receive of floats works. TOL > 0 (run with ZMPI_EB), or
 * ZMPI_CODEC set (lossless, TOL 0): the column
 * arrives within TOL, the elements between the columns are untouched, and
 * MPI_Recv_init of floats is refused with MPI_ERR_UNSUPPORTED_OPERATION (it
 * could not decode a compressed message), and so is MPI_Isendrecv of floats
 * (MPI-4); a persistent receive of MPI_INT
 * works either way. Needs at least 2 ranks.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { ROWS = 20000, COLS = 4 };

static float value(int row, int rank)
{
    return (float)((row % 4096) + 16 * rank) * 0.25f;
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0, all = 0;
    double tol = argc > 1 ? atof(argv[1]) : 0.0;
    /* floats go compressed with a bound (TOL > 0) or a lossless codec */
    int compressing = tol > 0 || getenv("ZMPI_CODEC") != NULL;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* column 1 of a ROWS x COLS array, replaced by the left neighbour's */
    float *a = malloc(sizeof(float) * ROWS * COLS);
    for (int i = 0; i < ROWS * COLS; i++)
        a[i] = i % COLS == 1 ? value(i / COLS, rank) : -1.0f - (float)i;
    MPI_Datatype col;
    MPI_Type_vector(ROWS, 1, COLS, MPI_FLOAT, &col);
    MPI_Type_commit(&col);
    MPI_Sendrecv_replace(a + 1, 1, col, right, 1, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < ROWS * COLS; i++) {
        double want = i % COLS == 1 ? value(i / COLS, left) : -1.0f - (float)i;
        if (i % COLS == 1 ? !(fabs(a[i] - want) <= tol) : a[i] != (float)want) {
            fprintf(stderr, "preload_persist: rank %d: element %d is %g, expected %g\n", rank, i, a[i], want);
            errors++;
            break;
        }
    }
    MPI_Type_free(&col);

    /* persistent receives: floats refused while compressing, integers always */
    float f[1000], sf[1000];
    int ints[1000], sint[1000], cls = 0;
    MPI_Request req;
    int rc = MPI_Recv_init(f, 1000, MPI_FLOAT, left, 2, MPI_COMM_WORLD, &req);
    MPI_Error_class(rc, &cls);
    if (compressing && cls != MPI_ERR_UNSUPPORTED_OPERATION) {
        fprintf(stderr, "preload_persist: rank %d: MPI_Recv_init of floats returned class %d\n", rank, cls);
        errors++;
    }
    if (!compressing) {
        for (int i = 0; i < 1000; i++)
            sf[i] = value(i, rank);
        MPI_Start(&req);
        MPI_Send(sf, 1000, MPI_FLOAT, right, 2, MPI_COMM_WORLD); /* small: below ZMPI_MIN_BYTES anyway */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Request_free(&req);
        for (int i = 0; i < 1000; i++)
            errors += f[i] != value(i, left);
    }
    for (int i = 0; i < 1000; i++)
        sint[i] = i + 1000 * rank;
    MPI_Recv_init(ints, 1000, MPI_INT, left, 3, MPI_COMM_WORLD, &req);
    MPI_Start(&req);
    MPI_Send(sint, 1000, MPI_INT, right, 3, MPI_COMM_WORLD);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Request_free(&req);
    for (int i = 0; i < 1000; i++)
        errors += ints[i] != i + 1000 * left;

#if MPI_VERSION >= 4
    /* MPI_Isendrecv: MPI's own receive; refused for floats while compressing */
    for (int i = 0; i < 1000; i++)
        sf[i] = value(i, rank);
    rc = MPI_Isendrecv(sf, 1000, MPI_FLOAT, right, 4, f, 1000, MPI_FLOAT, left, 4, MPI_COMM_WORLD, &req);
    MPI_Error_class(rc, &cls);
    if (compressing && cls != MPI_ERR_UNSUPPORTED_OPERATION) {
        fprintf(stderr, "preload_persist: rank %d: MPI_Isendrecv of floats returned class %d\n", rank, cls);
        errors++;
    }
    if (!compressing) {
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < 1000; i++)
            errors += f[i] != value(i, left);
    }
#endif

    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("preload_persist: %d ranks, tolerance %g: %s\n", size, tol, all ? "FAILED" : "OK");
    free(a);
    MPI_Finalize();
    return all ? 1 : 0;
}
