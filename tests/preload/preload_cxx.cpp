// A C++ MPI program under libzmpi_preload.so: a halo exchange of doubles
// from a class's member function (MPI's C bindings: C++ programs call
// them). Run with a bound and ZMPI_REPORT by run_cxx.sh: the values must
// arrive within TOL, and the report must name the call site's function
// demangled ("Halo::exchange(int, double)").
//
//   preload_cxx TOL
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

class Halo {
  public:
    Halo(int rank, int size) : rank_(rank), size_(size), send_(kN), recv_(kN) {}

    // Sends this rank's field to the right, receives the left one's;
    // returns the elements off by more than tol. (Not inlined: the report
    // names the function whose code the call is in.)
    __attribute__((noinline)) long exchange(int step, double tol)
    {
        for (int i = 0; i < kN; i++)
            send_[i] = value(rank_, step, i);
        int right = (rank_ + 1) % size_, left = (rank_ + size_ - 1) % size_;
        MPI_Sendrecv(send_.data(), kN, MPI_DOUBLE, right, step, recv_.data(), kN, MPI_DOUBLE, left, step,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        long bad = 0;
        for (int i = 0; i < kN; i++)
            bad += !(std::fabs(recv_[i] - value(left, step, i)) <= tol);
        return bad;
    }

  private:
    static constexpr int kN = 40000;
    static double value(int r, int step, int i) { return std::sin(0.001 * i + r + 0.1 * step) * 100.0; }
    int rank_, size_;
    std::vector<double> send_, recv_;
};

} // namespace

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double tol = argc > 1 ? std::atof(argv[1]) : 0.0;
    Halo halo(rank, size);
    long bad = 0, all = 0;
    for (int step = 0; step < 4; step++)
        bad += halo.exchange(step, tol);
    MPI_Allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("preload_cxx: %d ranks, tolerance %g: %s (%ld elements off)\n", size, tol, all ? "FAILED" : "OK",
                    all);
    MPI_Finalize();
    return all ? 1 : 0;
}
