/*
 * A plain MPI program for the libzmpi_preload.so tests: it knows nothing of
 * zmpi and checks its own results.
 *
 *   preload_prog TOL [--expect-preload]
 *
 * TOL 0: every float result must equal the exact value; TOL > 0: within TOL
 * (absolute). MPI_INT results are always exact. --expect-preload: fails
 * unless ZMPI_Send is a symbol of the process (libzmpi_preload.so and the
 * zmpi libraries were loaded into it). Needs at least 2 ranks.
 *
 * The float data are multiples of 0.25 below 2^20, so that every sum the
 * program forms is exact in float whatever the order of the additions.
 *
 * Calls (each rank, n ranks), checked against the profile by
 * check_report.py: MPI_Init 1, MPI_Comm_rank 1, MPI_Comm_size 1, MPI_Send
 * (rank 0: 1, rank 1: 1), MPI_Recv (rank 0: 1, rank 1: 1), MPI_Isend 1,
 * MPI_Irecv 1, MPI_Waitall 1, MPI_Sendrecv_replace 1, MPI_Bcast 1, MPI_Allreduce 3, MPI_Probe (rank
 * 0: 1), MPI_Get_count (rank 0: 1), MPI_Pcontrol 2, MPI_Finalize 1; and one
 * MPI_Comm_rank between MPI_Pcontrol(0) and MPI_Pcontrol(1), not profiled.
 */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include <dlfcn.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 100000, M = 50000 };

static float value(int i, int r)
{
    return (float)((i % 4096) + 16 * r) * 0.25f;
}

static int check(const char *what, int rank, const float *got, int n, int r, double tol)
{
    for (int i = 0; i < n; i++) {
        double want = value(i, r), d = fabs((double)got[i] - want);
        if (tol == 0 ? got[i] != (float)want : !(d <= tol)) {
            fprintf(stderr, "preload_prog: rank %d: %s: element %d is %.9g, expected %.9g\n", rank, what, i,
                    (double)got[i], want);
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0, all = 0;
    double tol = argc > 1 ? atof(argv[1]) : 0.0;
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *c = malloc(N * sizeof *c);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!a || !b || !c || size < 2) {
        fprintf(stderr, "preload_prog: needs 2 or more ranks and memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* not profiled: between MPI_Pcontrol(0) and MPI_Pcontrol(1) */
    MPI_Pcontrol(0);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Pcontrol(1);
    if (argc > 2 && !strcmp(argv[2], "--expect-preload") && !dlsym(RTLD_DEFAULT, "ZMPI_Send")) {
        fprintf(stderr, "preload_prog: rank %d: libzmpi_preload.so is not loaded (LD_PRELOAD did not reach it)\n",
                rank);
        errors++;
    }

    /* Send / Recv: rank 0 to rank 1 */
    if (rank == 0) {
        for (int i = 0; i < N; i++)
            a[i] = value(i, 0);
        MPI_Send(a, N, MPI_FLOAT, 1, 1, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(b, N, MPI_FLOAT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        errors += check("Send/Recv", rank, b, N, 0, tol);
    }

    /* a ring of Isend / Irecv, completed by Waitall */
    MPI_Request req[2];
    for (int i = 0; i < N; i++)
        a[i] = value(i, rank);
    MPI_Irecv(b, N, MPI_FLOAT, (rank + size - 1) % size, 2, MPI_COMM_WORLD, &req[0]);
    MPI_Isend(a, N, MPI_FLOAT, (rank + 1) % size, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Status sts[2];
    MPI_Waitall(2, req, sts);
    errors += check("Isend/Irecv/Waitall", rank, b, N, (rank + size - 1) % size, tol);

    /* Sendrecv_replace around the ring: each rank gets its left neighbour's values */
    for (int i = 0; i < N; i++)
        b[i] = value(i, rank);
    MPI_Sendrecv_replace(b, N, MPI_FLOAT, (rank + 1) % size, 4, (rank + size - 1) % size, 4, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
    errors += check("Sendrecv_replace", rank, b, N, (rank + size - 1) % size, tol);

    /* Bcast from the last rank */
    for (int i = 0; i < N; i++)
        b[i] = rank == size - 1 ? value(i, size - 1) : -1.0f;
    MPI_Bcast(b, N, MPI_FLOAT, size - 1, MPI_COMM_WORLD);
    errors += check("Bcast", rank, b, N, size - 1, tol);

    /* Allreduce of floats: the sum of value(i, r) over the ranks is
     * size * (i % 4096) * 0.25 + 4 * size * (size - 1) / 2 */
    MPI_Allreduce(a, c, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) {
        double want = size * (double)(i % 4096) * 0.25 + 2.0 * size * (size - 1);
        double d = fabs((double)c[i] - want);
        if (tol == 0 ? c[i] != (float)want : !(d <= tol)) {
            fprintf(stderr, "preload_prog: rank %d: Allreduce: element %d is %.9g, expected %.9g\n", rank, i,
                    (double)c[i], want);
            errors++;
            break;
        }
    }

    /* Allreduce of MPI_INT: always exact */
    int *ia = (int *)a, *ib = (int *)b;
    for (int i = 0; i < N; i++)
        ia[i] = i * 7 + rank * 1000003;
    MPI_Allreduce(ia, ib, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) {
        long long want = (long long)size * i * 7 + 1000003LL * size * (size - 1) / 2;
        if (ib[i] != (int)want) {
            fprintf(stderr, "preload_prog: rank %d: Allreduce MPI_INT: element %d is %d, expected %lld\n", rank,
                    i, ib[i], want);
            errors++;
            break;
        }
    }

    /* Probe + Get_count: rank 1 sends M floats, rank 0 sizes its receive */
    if (rank == 1) {
        for (int i = 0; i < M; i++)
            a[i] = value(i, 1);
        MPI_Send(a, M, MPI_FLOAT, 0, 3, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Status st;
        int count = -1;
        MPI_Probe(1, 3, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_FLOAT, &count);
        if (count != M) {
            fprintf(stderr, "preload_prog: rank 0: Probe/Get_count: %d elements, expected %d\n", count, M);
            errors++;
        } else {
            MPI_Recv(b, count, MPI_FLOAT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            errors += check("Probe/Recv", rank, b, M, 1, tol);
        }
    }

    MPI_Allreduce(&errors, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("preload_prog: %d ranks, tolerance %g: %s (%d errors)\n", size, tol, all ? "FAILED" : "OK",
               all);
    free(a);
    free(b);
    free(c);
    MPI_Finalize();
    return all ? 1 : 0;
}
