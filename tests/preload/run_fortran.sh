#!/bin/sh
# A Fortran program (preload_use_mpi, preload_mpif) under libzmpi_preload.so:
#
#   run_fortran.sh NRANKS PRELOAD_LIB PROG PYTHON MPIEXEC [MPIEXEC_FLAGS...]
#
# 1. no zmpi setting: exact results;
# 2. ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT: every element within 1e-3,
#    and the report shows messages compressed (MPICH's Fortran bindings call
#    the C MPI_ functions, which the preload defines).
set -eu
n=$1 lib=$2 prog=$3 python=$4
shift 4
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
"$@" -n "$n" env LD_PRELOAD="$lib" "$prog" 0
"$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT="$dir/report" "$prog" 1e-3
"$python" - "$dir/report" <<'PY'
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*.zmpi.json")
z = json.load(open(files[0]))["zmpi"] if len(files) == 1 else {}
print("run_fortran.sh: report:", z)
sys.exit(0 if z.get("compressed", 0) > 0 and z["bytes_sent"] < z["bytes_raw"] else 1)
PY
