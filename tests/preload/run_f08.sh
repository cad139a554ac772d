#!/bin/sh
# A `use mpi_f08` program (MPICH) under libzmpi_preload.so with a bound and a
# report asked for: its data arrive exactly (nothing is compressed: the
# preload never saw MPI_Init) and the preload says so on stderr instead of
# staying silent.
#
#   run_f08.sh PRELOAD_LIB PROG MPIEXEC [MPIEXEC_FLAGS...]
set -eu
lib=$1 prog=$2
shift 2
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
"$@" -n 2 env LD_PRELOAD="$lib" ZMPI_EB=1e-3 ZMPI_REPORT="$dir/report" "$prog" >"$dir/out" 2>&1 ||
    { cat "$dir/out"; echo "run_f08.sh: the program failed"; exit 1; }
cat "$dir/out"
grep -q 'preload_f08: exact' "$dir/out" || { echo "run_f08.sh: no exact result"; exit 1; }
n=$(grep -c 'did not see MPI_Init' "$dir/out" || true)
[ "$n" = 1 ] || { echo "run_f08.sh: the preload said $n times that it saw no MPI_Init (expected once)"; exit 1; }
echo "run_f08.sh: ok"
