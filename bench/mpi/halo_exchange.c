/*
 * zmpi-halo: the cost of one halo exchange of a small message (below
 * ZMPI_MIN_BYTES, so nothing is compressed) between two ranks - MPI_Irecv +
 * MPI_Isend + MPI_Waitall of a contiguous block of floats or of a strided
 * face (MPI_Type_vector of single floats) - as a plain MPI program makes it.
 * Run it plain and under libzmpi_preload.so (bench/preload/halo) to see
 * what zmpi's point-to-point path adds to a message it sends uncompressed.
 *
 *   zmpi-halo [--floats N] [--strided] [--iters N] [--reps N]
 *
 * Prints one CSV row on rank 0: layout,floats,bytes,us_per_exchange (the
 * best of --reps timings of --iters exchanges). Exactly two ranks.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int n = 1024, strided = 0, iters = 20000, reps = 5, rank = 0, size = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--floats") && i + 1 < argc)
            n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--strided"))
            strided = 1;
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc)
            iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            if (rank == 0)
                fprintf(stderr, "zmpi-halo: unknown argument %s\n", argv[i]);
            MPI_Finalize();
            return 2;
        }
    }
    if (size != 2 || n < 1 || iters < 1 || reps < 1) {
        if (rank == 0)
            fprintf(stderr, "zmpi-halo: needs exactly 2 ranks and positive --floats, --iters, --reps\n");
        MPI_Finalize();
        return 2;
    }
    float *a = malloc(sizeof(float) * 3 * (size_t)n), *b = malloc(sizeof(float) * 3 * (size_t)n);
    if (!a || !b) {
        fprintf(stderr, "zmpi-halo: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < 3 * n; i++)
        a[i] = (float)i * 0.5f;
    MPI_Datatype type = MPI_FLOAT;
    int count = n;
    if (strided) { /* a face: every third float */
        MPI_Type_vector(n, 1, 3, MPI_FLOAT, &type);
        MPI_Type_commit(&type);
        count = 1;
    }
    int peer = 1 - rank;
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int k = 0; k < iters; k++) {
            MPI_Request req[2];
            MPI_Status st[2];
            MPI_Irecv(b, count, type, peer, 5, MPI_COMM_WORLD, &req[0]);
            MPI_Isend(a, count, type, peer, 5, MPI_COMM_WORLD, &req[1]);
            MPI_Waitall(2, req, st);
        }
        double dt = (MPI_Wtime() - t0) / iters, worst = 0;
        MPI_Allreduce(&dt, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        best = worst < best ? worst : best;
    }
    for (int i = 0; i < n; i++) /* what arrived is the peer's data */
        if (b[strided ? 3 * i : i] != a[strided ? 3 * i : i]) {
            fprintf(stderr, "zmpi-halo: rank %d: element %d is %g, not %g\n", rank, i, b[strided ? 3 * i : i],
                    a[strided ? 3 * i : i]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    if (rank == 0)
        printf("%s,%d,%zu,%.4f\n", strided ? "strided" : "contiguous", n, sizeof(float) * (size_t)n, best * 1e6);
    if (strided)
        MPI_Type_free(&type);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
