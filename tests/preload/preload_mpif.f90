! The same program as preload_use_mpi.f90 with `include 'mpif.h'`.
program preload_mpif
  implicit none
  include 'mpif.h'
  include 'preload_fortran.inc'
end program
