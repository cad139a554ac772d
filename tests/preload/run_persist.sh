#!/bin/sh
# preload_persist (persistent point-to-point, MPI_Isendrecv(_replace),
# Sendrecv_replace of a column) plain and under libzmpi_preload.so:
#
#   run_persist.sh MODE NRANKS PRELOAD_LIB PROG PYTHON MPIEXEC [MPIEXEC_FLAGS...]
#
# MODE: plain (no preload, exact), exact (the preload, no setting), eb
# (ZMPI_EB=1e-3 ZMPI_EB_MODE=abs: within 1e-3), lossless (ZMPI_CODEC=zstd:
# exact), inter (ZMPI_CODEC=xorlzc-inter: each start coded against the
# previous one, exact). With a setting, the report must show that messages
# went compressed and smaller (the persistent sends are the bulk of them).
set -eu
mode=$1 n=$2 lib=$3 prog=$4 python=$5
shift 5
. "$(dirname "$0")/common.sh" # no ZMPI_ variable of the caller; $dir
case $mode in
    plain) "$@" -n "$n" "$prog" 0; exit 0 ;;
    exact) "$@" -n "$n" env LD_PRELOAD="$lib" "$prog" 0; exit 0 ;;
    eb) "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_EB=1e-3 ZMPI_EB_MODE=abs ZMPI_REPORT="$dir" "$prog" 1e-3 ;;
    lossless) "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_CODEC=zstd ZMPI_REPORT="$dir" "$prog" 0 ;;
    inter) "$@" -n "$n" env LD_PRELOAD="$lib" ZMPI_CODEC=xorlzc-inter ZMPI_REPORT="$dir" "$prog" 0 ;;
    *) echo "run_persist.sh: unknown mode $mode" >&2; exit 2 ;;
esac
"$python" - "$dir" <<'PY'
import glob, json, sys
files = glob.glob(sys.argv[1] + "/*.zmpi.json")
z = json.load(open(files[0]))["zmpi"] if len(files) == 1 else {}
print("run_persist.sh: report:", z)
sys.exit(0 if z.get("compressed", 0) > 0 and z["bytes_sent"] < z["bytes_raw"] else 1)
PY
