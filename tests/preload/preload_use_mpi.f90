! An unmodified Fortran MPI program (`use mpi`) for the libzmpi_preload.so
! tests: a ring Sendrecv of reals, an in-place Allreduce (MPI_IN_PLACE), and
! a double precision Send / Recv with MPI_STATUS_IGNORE, every element
! checked against an absolute tolerance (argument 1: 0 = exact).
program preload_use_mpi
  use mpi
  implicit none
  include 'preload_fortran.inc'
end program
