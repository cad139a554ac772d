#!/bin/sh
# preload_cxx (a C++ program) under libzmpi_preload.so with ZMPI_EB=1e-3
# (absolute) and ZMPI_REPORT: values within 1e-3, the MPI_Sendrecv site
# compressed and named by its demangled function in both report files.
#
#   run_cxx.sh NRANKS PRELOAD_LIB PROG MPIEXEC [MPIEXEC_FLAGS...]
set -eu
n=$1 lib=$2 prog=$3
shift 3
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
"$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT="$dir" "$prog" 1e-3
grep -q '"call": "MPI_Sendrecv", "location": "preload_cxx.cpp:[0-9]*", "function": "[^"]*Halo::exchange(int, double)"' \
    "$dir"/*.zmpi.json || { grep '"MPI_Sendrecv"' "$dir"/*.zmpi.json; echo "run_cxx.sh: no demangled site"; exit 1; }
grep -q 'Halo::exchange(int, double) *Sendrecv' "$dir"/*.zmpi.txt || { echo "run_cxx.sh: not in the text report"; exit 1; }
grep -q '"compressed_calls": [1-9]' "$dir"/*.zmpi.json || { echo "run_cxx.sh: nothing compressed"; exit 1; }
echo "run_cxx.sh: ok"
