! A Fortran program with the mpi_f08 bindings (MPICH): its MPI_Init does not
! go through the C MPI_Init, so libzmpi_preload.so cannot set itself up.
! Rank 0 sends 100000 doubles to rank 1, which checks them exactly (nothing
! may be compressed or changed). run_f08.sh checks that the preload says it
! saw no MPI_Init.
program preload_f08
  use mpi_f08
  implicit none
  integer, parameter :: n = 100000
  double precision, allocatable :: x(:)
  integer :: rank, nranks, i, bad
  allocate(x(n))
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  if (rank == 0) then
    do i = 1, n
      x(i) = mod(i, 4096) * 0.25d0
    end do
    call MPI_Send(x, n, MPI_DOUBLE_PRECISION, 1, 5, MPI_COMM_WORLD)
  else if (rank == 1) then
    call MPI_Recv(x, n, MPI_DOUBLE_PRECISION, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    bad = 0
    do i = 1, n
      if (abs(x(i) - mod(i, 4096) * 0.25d0) > 0d0) bad = bad + 1 ! exact: any change counts
    end do
    if (bad /= 0) then
      print '(a, i0, a)', 'preload_f08: ', bad, ' doubles changed'
      error stop 1
    end if
    print '(a)', 'preload_f08: exact'
  end if
  call MPI_Finalize()
end program preload_f08
